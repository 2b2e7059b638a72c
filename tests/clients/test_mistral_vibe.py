"""mistral-vibe: exact patches and probes, import, and the contract every client keeps."""

from __future__ import annotations

import pytest

from conftest import TEST_KEY
from contract import write_fleet
from real import binary
from real_client import can_isolate, run_real_client
from helpers import KEY, LLAMA, MINI, R1, RAW, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, by_path, fleet
from contract import check_contract
from taosync.clients import mistral_vibe
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.base import Match
from taosync.fleet.secrets import Secret

P = ("providers", Match("name", "taotoken"))
MCP = ("mcp_servers", Match("name", "taotoken-router"))


def M(model):
    return ("models", Match("alias", model))


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "mistral-vibe", {"model": "deep"},
                   reference_off_disk=True)


def test_vibe_inline_registers_the_catalogue(clients_env, tmp_path):
    patches = by_path(mistral_vibe.render(fleet(), KEY, clients_env))
    home = tmp_path / ".vibe"
    config = patches[home / "config.toml"]
    assert config.format == "toml"
    values = dict(config.values)
    assert values.pop(("active_model",)) == SONNET  # the alias of the balanced route
    assert {k: values.pop(k) for k in list(values) if k[:2] == P[:2]} == {
        P + ("api_base",): V1, P + ("api_style",): "openai",
        P + ("api_key_env_var",): "TAOTOKEN_API_KEY"}
    models = {k: values.pop(k) for k in list(values) if k[0] == "models"}
    assert models == {m: v for model in (MINI, SONNET, R1, LLAMA)
                      for m, v in ((M(model) + ("name",), model),
                                   (M(model) + ("provider",), "taotoken"))}
    assert values == {MCP + ("transport",): "stdio", MCP + ("command",): "npx",
                      MCP + ("args",): ROUTER_ARGS, MCP + ("env",): ROUTER_ENV}
    # the MCP server holds the key, so config.toml is written 0600 too
    assert config.secret
    dotenv = patches[home / ".env"]
    assert dotenv.format == "dotenv" and dotenv.secret
    assert dotenv.values == {("TAOTOKEN_API_KEY",): KEY}
    assert clients_env.warnings == []


def test_vibe_reference_names_the_variable_only(clients_env, tmp_path):
    f = fleet(secrets="reference", gateway__key="${env:GW_KEY}", mcp_servers={},
              gateway__headers={"X-Team": "core"},
              models={MINI: {"context_window": 128000}}, routes={"fast": MINI},
              default_route="fast", clients__mistral_vibe={"model": "fast"})
    (config,) = mistral_vibe.render(f, KEY, clients_env)
    assert config.values == {
        ("active_model",): MINI,
        P + ("api_base",): V1, P + ("api_style",): "openai",
        P + ("api_key_env_var",): "GW_KEY", P + ("extra_headers",): {"X-Team": Secret("core")},
        M(MINI) + ("name",): MINI, M(MINI) + ("provider",): "taotoken",
        M(MINI) + ("max_context_length",): 128000,
    }
    assert not config.secret and clients_env.warnings == []


def test_vibe_reference_names_the_gateway_key_an_mcp_server_puts_on_disk(clients_env, tmp_path):
    """The key is kept off disk by reference, but the router's env takes ${gateway.key}:
    config.toml then holds it (0600), and a warning says so (the rule every client keeps)."""
    f = fleet(secrets="reference", gateway__key="${env:GW_KEY}")
    (config,) = mistral_vibe.render(f, KEY, clients_env)
    assert config.secret and config.values[MCP + ("env",)]["TAOTOKEN_API_KEY"] == RAW
    assert clients_env.warnings == [
        "mistral-vibe: an MCP server uses ${gateway.key}, so the key will be written into the "
        "MCP settings (mode 0600) even with secrets: reference"]


def test_vibe_reference_without_env_falls_back_inline(clients_env):
    f = fleet(secrets="reference", gateway__key="${cmd:pass show tao}", mcp_servers={})
    config, dotenv = mistral_vibe.render(f, KEY, clients_env)
    assert config.values[P + ("api_key_env_var",)] == "TAOTOKEN_API_KEY"
    assert dotenv.values == {("TAOTOKEN_API_KEY",): KEY}
    (warning,) = clients_env.warnings
    assert "inline" in warning and ".env" in warning and RAW not in warning


def test_vibe_slot_outside_the_catalogue_is_registered_too(clients_env):
    f = fleet(clients__mistral_vibe={"model": "other/model"}, mcp_servers={})
    values = mistral_vibe.render(f, KEY, clients_env)[0].values
    assert values[("active_model",)] == "other/model"
    assert values[M("other/model") + ("name",)] == "other/model"


def test_vibe_http_mcp(clients_env):
    f = fleet(mcp_servers={"remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
                           "old": {"url": "https://mcp.example/sse", "transport": "sse"}})
    values = mistral_vibe.render(f, KEY, clients_env)[0].values
    r, o = ("mcp_servers", Match("name", "remote")), ("mcp_servers", Match("name", "old"))
    assert {k: v for k, v in values.items() if k[0] == "mcp_servers"} == {
        r + ("transport",): "streamable-http", r + ("url",): "https://mcp.example/mcp",
        r + ("headers",): {"A": "b"},
        o + ("transport",): "streamable-http", o + ("url",): "https://mcp.example/sse"}
    (warning,) = clients_env.warnings
    assert "'old'" in warning and "sse" in warning


def test_vibe_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"VIBE_HOME": str(tmp_path / "v")}, sandboxed=True)
    assert {p.path.parent for p in mistral_vibe.render(fleet(), KEY, env)} == {tmp_path / "v"}
    outside = ClientEnv(home=tmp_path / "h", environ={"VIBE_HOME": "/etc/vibe"}, sandboxed=True)
    assert {p.path.parent for p in mistral_vibe.render(fleet(), KEY, outside)} == {
        tmp_path / "h" / ".vibe"}
    assert any("VIBE_HOME" in w for w in outside.warnings)


def test_vibe_probes(clients_env):
    assert mistral_vibe.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("mistral-vibe", "balanced", SONNET, "openai-chat", V1,
                  V1 + "/chat/completions", "bearer",
                  headers=(("User-Agent", "python-httpx/0.28.1"),))]
    f = fleet(gateway__headers={"X-Team": "core"})
    assert mistral_vibe.probes(f, KEY, clients_env)[0].headers == (
        ("X-Team", Secret("core")), ("User-Agent", "python-httpx/0.28.1"))


# -- the real client (mistral-vibe 3.0.3 from PyPI, Python 3.12), when installed -----------

VIBE_BIN = binary("TAOSYNC_TEST_VIBE_BIN", "vibe")


@pytest.mark.skipif(not VIBE_BIN or not can_isolate(),
                    reason="vibe (TAOSYNC_TEST_VIBE_BIN) or a loopback-only namespace "
                           "(unshare -n) is not available here")
@pytest.mark.parametrize("secrets", ["inline", "reference"])
def test_real_vibe_reaches_the_stand_in(tmp_path, secrets):
    """Inline: the key from .env, the slot's model. Reference: the key from the environment
    only, and another catalogue model picked by Vibe's own switch (VIBE_ACTIVE_MODEL)."""
    home = tmp_path / "home"
    home.mkdir()
    fleet_file = tmp_path / "fleet.yaml"
    write_fleet(fleet_file, "mistral-vibe", {"model": "deep", "mcp": False}, secrets=secrets)
    env = {"TAOTOKEN_API_KEY": TEST_KEY, "VIBE_ACTIVE_MODEL": LLAMA} \
        if secrets == "reference" else {}
    model = LLAMA if secrets == "reference" else R1
    seen = run_real_client(fleet_file, home, TEST_KEY, [VIBE_BIN, "-p", "Reply with OK."],
                           env=env)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    assert [(r["method"], r["path"], r["auth"], r["model"], r["status"])
            for r in seen["requests"]] == [
        ("POST", "/v1/chat/completions", "ok", model, 200)]
    assert seen["requests"][0]["headers"]["user-agent"] == \
        mistral_vibe.CLIENT_HEADERS["User-Agent"]
    assert f"{model} answered through the taosync stand-in" in seen["out"]
    vibe = home / ".vibe"
    assert TEST_KEY not in (vibe / "config.toml").read_text()
    if secrets == "inline":  # the key is in .env (0600) only
        assert TEST_KEY in (vibe / ".env").read_text()
        assert (vibe / ".env").stat().st_mode & 0o077 == 0
    else:
        assert not (vibe / ".env").exists()


def test_vibe_on_disk_follows_the_alias_and_flags_a_missing_one(taosync, home, fleet_file):
    """verify probes what Vibe resolves: active_model → the [[models]] alias → its name and
    provider; an active_model no alias matches (Vibe then silently uses Mistral) fails."""
    from taosync.fleet.load import load_fleet

    write_fleet(fleet_file, "mistral-vibe", {"model": "deep"})
    assert taosync("apply", "--no-verify").rc == 0
    loaded = load_fleet(fleet_file, home=home)
    env = ClientEnv(home=home, environ={"TAOTOKEN_API_KEY": TEST_KEY}, sandboxed=True)
    disk = mistral_vibe.on_disk(loaded.fleet, loaded.key, env)
    assert disk.problems == [] and disk.drift == []
    (probe,) = disk.probes
    assert (probe.model, probe.url) == (R1, V1 + "/chat/completions")
    assert probe.secret.reveal() == TEST_KEY
    config = home / ".vibe" / "config.toml"
    config.write_text(config.read_text().replace(f'active_model = "{R1}"',
                                                 'active_model = "devstral"'))
    disk = mistral_vibe.on_disk(loaded.fleet, loaded.key, env)
    assert disk.probes == []
    assert any("active_model" in d for d in disk.drift)
    assert any("'devstral'" in p and "Mistral" in p for p in disk.problems), disk.problems
