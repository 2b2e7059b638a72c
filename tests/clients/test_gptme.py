"""gptme: exact patches and probes, import, and the contract every client keeps."""

from __future__ import annotations

import pytest

from conftest import TEST_KEY
from contract import write_fleet
from real import binary
from real_client import can_isolate, run_real_client
from helpers import KEY, MINI, RAW, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, by_path, fleet, write
from contract import check_contract
from taosync.clients import gptme
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.base import Match

P = ("providers", Match("name", "taotoken"))
MCP = ("mcp", "servers", Match("name", "taotoken-router"))


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "gptme", {"model": "fast"},
                   reference_off_disk=True)


def test_gptme_inline_key_goes_to_the_local_file(clients_env, tmp_path):
    patches = by_path(gptme.render(fleet(), KEY, clients_env))
    home = tmp_path / ".config" / "gptme"
    config = patches[home / "config.toml"]
    assert config.format == "toml"
    assert config.values == {
        ("env", "MODEL"): f"taotoken/{SONNET}",
        P + ("base_url",): V1, P + ("api_key_env",): "TAOTOKEN_API_KEY",
        ("mcp", "enabled"): True, ("mcp", "auto_start"): True,
        MCP + ("command",): "npx", MCP + ("args",): ROUTER_ARGS, MCP + ("env",): ROUTER_ENV,
    }
    assert config.secret  # the MCP server's env holds the key
    local = patches[home / "config.local.toml"]
    assert local.format == "toml" and local.secret
    assert local.values == {("env", "TAOTOKEN_API_KEY"): KEY}
    assert clients_env.warnings == []


def test_gptme_reference_writes_no_key(clients_env, tmp_path):
    f = fleet(secrets="reference", gateway__key="${env:GW_KEY}", mcp_servers={},
              clients__gptme={"model": "nvidia/deepseek-r1"})
    (config,) = gptme.render(f, KEY, clients_env)
    assert config.values == {("env", "MODEL"): "taotoken/nvidia/deepseek-r1",
                             P + ("base_url",): V1, P + ("api_key_env",): "GW_KEY"}
    assert not config.secret and clients_env.warnings == []


def test_gptme_reference_without_env_falls_back_inline_and_headers_warn(clients_env):
    f = fleet(secrets="reference", gateway__key="${file:~/k}", mcp_servers={},
              gateway__headers={"X-Team": "core"})
    config, local = gptme.render(f, KEY, clients_env)
    assert local.values == {("env", "TAOTOKEN_API_KEY"): KEY}
    assert len(clients_env.warnings) == 2
    assert any("inline" in w and "config.local.toml" in w for w in clients_env.warnings)
    assert any("X-Team" in w for w in clients_env.warnings)
    assert not any(RAW in w for w in clients_env.warnings)


def test_gptme_http_mcp(clients_env):
    f = fleet(mcp_servers={"remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}}})
    values = gptme.render(f, KEY, clients_env)[0].values
    r = ("mcp", "servers", Match("name", "remote"))
    assert values[r + ("url",)] == "https://mcp.example/mcp"
    assert values[r + ("headers",)] == {"A": "b"}


def test_gptme_follows_xdg_config_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "x")},
                    sandboxed=True)
    assert {p.path.parent for p in gptme.render(fleet(), KEY, env)} == {tmp_path / "x" / "gptme"}


def test_gptme_probes(clients_env):
    assert gptme.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("gptme", "balanced", SONNET, "openai-chat", V1, V1 + "/chat/completions",
                  "bearer", headers=(("User-Agent", "OpenAI/Python 2.54.0"),
                                     ("X-Stainless-Lang", "python")))]


def test_gptme_import_reads_models_default_over_model(run, home):
    write(home / ".config/gptme/config.toml", f"""[env]
MODEL = "gw/{SONNET}"

[models]
default = "gw/{MINI}"

[[providers]]
name = "gw"
base_url = "https://gw.example.com/api/v1"
api_key_env = "GW_KEY"
""")
    write(home / ".config/gptme/config.local.toml", '[env]\nGW_KEY = "sk-fixture-local-0123456789"\n')
    from helpers import imported

    r, data = imported(run, "--from", "gptme")
    assert r.rc == 0, r.err
    assert "sk-fixture-local" not in r.out + r.err
    assert data["fleet"]["gateway"]["base_url"] == "https://gw.example.com/api"
    assert data["fleet"]["clients"]["gptme"]["model"] in (MINI, "gpt-4o-mini") or \
        data["fleet"]["routes"][data["fleet"]["clients"]["gptme"]["model"]] == MINI
    assert any("[models] default" in f["message"] for f in data["findings"])


# -- the real client (gptme 0.35.1 from PyPI), when installed ------------------------------

GPTME_BIN = binary("TAOSYNC_TEST_GPTME_BIN", "gptme")


@pytest.mark.skipif(not GPTME_BIN or not can_isolate(),
                    reason="gptme (TAOSYNC_TEST_GPTME_BIN) or a loopback-only namespace "
                           "(unshare -n) is not available here")
@pytest.mark.parametrize("secrets", ["inline", "reference"])
def test_real_gptme_reaches_the_stand_in(tmp_path, secrets):
    """Inline: the key from config.local.toml's [env], the slot's model. Reference: the key
    from the environment only, and another catalogue model picked with ``-m``."""
    home = tmp_path / "home"
    home.mkdir()
    fleet_file = tmp_path / "fleet.yaml"
    write_fleet(fleet_file, "gptme", {"model": "deep", "mcp": False}, secrets=secrets)
    argv = [GPTME_BIN, "--non-interactive", "Reply with OK."]
    env: dict = {}
    model = "nvidia/deepseek-r1"
    if secrets == "reference":
        argv[1:1] = ["-m", f"taotoken/{MINI}"]
        env, model = {"TAOTOKEN_API_KEY": TEST_KEY}, MINI
    seen = run_real_client(fleet_file, home, TEST_KEY, argv, env=env)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    chats = [r for r in seen["requests"] if r["method"] == "POST"]
    assert chats, seen["requests"]
    assert {(r["path"], r["auth"], r["model"], r["status"]) for r in chats} == {
        ("/v1/chat/completions", "ok", model, 200)}
    assert {r["headers"]["user-agent"] for r in chats} == {
        gptme.CLIENT_HEADERS["User-Agent"]}
    assert f"{model} answered through the taosync stand-in" in seen["out"]
    config = home / ".config" / "gptme"
    assert TEST_KEY not in (config / "config.toml").read_text()
    if secrets == "inline":  # gptme reads the key by name from config.local.toml (0600)
        assert (config / "config.local.toml").stat().st_mode & 0o077 == 0
    else:
        assert not (config / "config.local.toml").exists()


def test_gptme_on_disk_reads_the_key_by_name(taosync, home, fleet_file):
    """verify probes what gptme resolves: MODEL's provider entry and the key that
    api_key_env names, from config.local.toml's [env]; with the name unset anywhere, it
    says so."""
    from taosync.fleet.load import load_fleet

    write_fleet(fleet_file, "gptme", {"model": "fast"})
    assert taosync("apply", "--no-verify").rc == 0
    loaded = load_fleet(fleet_file, home=home)
    env = ClientEnv(home=home, environ={}, sandboxed=True)
    disk = gptme.on_disk(loaded.fleet, loaded.key, env)
    assert disk.problems == [] and disk.drift == []
    (probe,) = disk.probes
    assert (probe.model, probe.url) == (MINI, V1 + "/chat/completions")
    assert probe.secret.reveal() == TEST_KEY
    assert probe.origins[1].where == "~/.config/gptme/config.local.toml env.TAOTOKEN_API_KEY"
    (home / ".config/gptme/config.local.toml").unlink()
    disk = gptme.on_disk(loaded.fleet, loaded.key, env)
    assert disk.probes == []
    assert any("TAOTOKEN_API_KEY is set neither" in p for p in disk.problems), disk.problems
