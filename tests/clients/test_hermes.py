"""Hermes Agent: the contract, config.yaml and .env as written, the protocol flavours,
failover into ``fallback_providers``, verify's view of ``.env``, and the real binary."""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from conftest import TEST_KEY
from contract import check_contract, write_fleet
from helpers import KEY, MINI, RAW, ROOT, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, by_path, fleet, \
    write
from real import binary, echo_mcp_server, mcp_env_seen
from real_client import can_isolate, run_real_client
from taosync.clients import hermes
from taosync.clients.base import ClientEnv

P = ("providers", "taotoken")
MCP = ("mcp_servers", "taotoken-router")
#: a route with candidates: SONNET preferred, then MINI, then R1
CHAINED = {"balanced": {"candidates": [SONNET, MINI, "nvidia/deepseek-r1"],
                        "policy": "failover"}, "fast": MINI}


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "hermes", {"model": "fast"},
                   reference_off_disk=True)


def test_inline_key_goes_to_dotenv_and_config_yaml_names_it(clients_env, tmp_path):
    patches = by_path(hermes.render(fleet(), KEY, clients_env))
    config = patches[tmp_path / ".hermes" / "config.yaml"]
    assert config.format == "yaml"
    assert config.values == {
        ("model", "provider"): "taotoken", ("model", "default"): SONNET,
        P + ("base_url",): V1, P + ("api_mode",): "chat_completions",
        P + ("key_env",): "TAOTOKEN_API_KEY",
        MCP + ("command",): "npx", MCP + ("args",): ROUTER_ARGS, MCP + ("env",): ROUTER_ENV,
    }
    assert config.secret  # the MCP server's env holds the key
    dotenv = patches[tmp_path / ".hermes" / ".env"]
    assert dotenv.format == "dotenv" and dotenv.secret
    assert dotenv.values == {("TAOTOKEN_API_KEY",): KEY}
    assert clients_env.warnings == []


def test_reference_names_the_variable_and_mcp_secrets_as_hermes_expands_them(
        taosync, home, fleet_file, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", "gh-secret-1")
    monkeypatch.setenv("WEB_TOKEN", "web-secret-2")
    write_fleet(fleet_file, "hermes", {}, secrets="reference")
    data = YAML(typ="safe").load(fleet_file.read_text())
    data["mcp_servers"] = {
        "gh": {"command": "gh-mcp", "env": {"TOKEN": "${env:GH_TOKEN}"}},
        "web": {"url": "https://mcp.example/sse", "transport": "sse",
                "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}}}
    YAML(typ="safe").dump(data, fleet_file)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "warning" not in r.err, r.both
    doc = YAML(typ="safe").load((home / ".hermes/config.yaml").read_text())
    assert doc["providers"]["taotoken"]["key_env"] == "TAOTOKEN_API_KEY"
    assert doc["mcp_servers"] == {
        "gh": {"command": "gh-mcp", "args": [], "env": {"TOKEN": "${GH_TOKEN}"}},
        "web": {"transport": "sse", "url": "https://mcp.example/sse",
                "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}}
    assert not (home / ".hermes/.env").exists()


def test_a_file_reference_is_kept_in_dotenv_with_a_warning(clients_env):
    f = fleet(secrets="reference", gateway__key="${file:~/k}", mcp_servers={})
    config, dotenv = hermes.render(f, KEY, clients_env)
    assert config.values[P + ("key_env",)] == "TAOTOKEN_API_KEY" and not config.secret
    assert dotenv.values == {("TAOTOKEN_API_KEY",): KEY} and dotenv.secret
    (warning,) = clients_env.warnings
    assert "${env:NAME}" in warning and ".hermes/.env" in warning and RAW not in warning


@pytest.mark.parametrize("protocol, mode, url, probe_url, auth", [
    ("openai-chat", "chat_completions", V1, V1 + "/chat/completions", "bearer"),
    ("openai-responses", "codex_responses", V1, V1 + "/responses", "bearer"),
    ("anthropic-messages", "anthropic_messages", ROOT, ROOT + "/v1/messages", "x-api-key"),
])
def test_the_protocol_option_picks_api_mode_url_and_probe(clients_env, protocol, mode, url,
                                                          probe_url, auth):
    f = fleet(mcp_servers={}, clients__hermes={"model": "fast", "protocol": protocol})
    config = hermes.render(f, KEY, clients_env)[0]
    assert (config.values[P + ("api_mode",)], config.values[P + ("base_url",)]) == (mode, url)
    (probe,) = hermes.probes(f, KEY, clients_env)
    assert (probe.protocol, probe.url, probe.auth, probe.model) == (protocol, probe_url, auth,
                                                                    MINI)


def test_headers_go_to_the_provider_entry_except_in_anthropic_mode(clients_env):
    f = fleet(mcp_servers={}, gateway__headers={"X-Team": "core"})
    config = hermes.render(f, KEY, clients_env)[0]
    assert {k: v.reveal() for k, v in config.values[P + ("extra_headers",)].items()} == {
        "X-Team": "core"}
    assert clients_env.warnings == []
    (probe,) = hermes.probes(f, KEY, clients_env)
    assert "X-Team" in dict(probe.headers)
    f = fleet(mcp_servers={}, gateway__headers={"X-Team": "core"},
              clients__hermes={"protocol": "anthropic-messages"})
    config = hermes.render(f, KEY, clients_env)[0]
    assert P + ("extra_headers",) not in config.values
    assert any("anthropic-messages" in w and "X-Team" in w for w in clients_env.warnings)
    (probe,) = hermes.probes(f, KEY, clients_env)
    assert "X-Team" not in dict(probe.headers)


# -- failover inside the request: fallback_providers ----------------------------------------


def chain_of(config) -> list[dict]:
    return config.values.get(("fallback_providers",), [])


def test_a_route_with_candidates_becomes_fallback_providers(clients_env):
    f = fleet(mcp_servers={}, routes=CHAINED, secrets="reference",
              gateway__key="${env:GW_KEY}")
    (config,) = hermes.render(f, KEY, clients_env)
    assert config.values[("model", "default")] == SONNET
    assert chain_of(config) == [
        {"provider": "custom", "model": m, "base_url": V1, "key_env": "GW_KEY"}
        for m in (MINI, "nvidia/deepseek-r1")]
    assert clients_env.warnings == []


def test_fallbacks_speak_chat_completions_at_v1_whatever_the_primary(clients_env):
    f = fleet(mcp_servers={}, routes=CHAINED, clients__hermes={"protocol": "anthropic-messages"})
    config = hermes.render(f, KEY, clients_env)[0]
    assert config.values[P + ("base_url",)] == ROOT
    assert {e["base_url"] for e in chain_of(config)} == {V1}
    assert {e["key_env"] for e in chain_of(config)} == {"TAOTOKEN_API_KEY"}


def test_no_chain_for_a_plain_route_a_model_id_or_failover_false(clients_env):
    for f in (fleet(mcp_servers={}),
              fleet(mcp_servers={}, routes=CHAINED, clients__hermes={"model": SONNET}),
              fleet(mcp_servers={}, routes=CHAINED, clients__hermes={"failover": False})):
        assert ("fallback_providers",) not in hermes.render(f, KEY, clients_env)[0].values


def test_headers_with_a_chain_say_the_fallbacks_do_not_send_them(clients_env):
    f = fleet(mcp_servers={}, routes=CHAINED, gateway__headers={"X-Team": "core"})
    hermes.render(f, KEY, clients_env)
    (warning,) = clients_env.warnings
    assert "fallback_providers" in warning and "X-Team" in warning


def test_taosync_owns_the_whole_list_and_gives_the_users_back(taosync, home, fleet_file):
    """While a chain is written the user's own fallback_providers are replaced (their
    own go in fallback_model, which Hermes appends and taosync never touches); with
    ``failover: false`` their list comes back as it was."""
    config = write(home / ".hermes/config.yaml", "# mine\nfallback_model:\n"
                   "  provider: openrouter\n  model: my/own\nfallback_providers:\n"
                   "- provider: nous\n  model: hermes-4\n")
    write_fleet(fleet_file, "hermes", {"model": "balanced"})
    data = YAML(typ="safe").load(fleet_file.read_text())
    data["routes"] = CHAINED
    YAML(typ="safe").dump(data, fleet_file)
    assert taosync("apply", "--no-verify").rc == 0
    doc = YAML(typ="safe").load(config.read_text())
    assert [e["model"] for e in doc["fallback_providers"]] == [MINI, "nvidia/deepseek-r1"]
    assert doc["fallback_model"] == {"provider": "openrouter", "model": "my/own"}
    assert "# mine" in config.read_text()
    data["clients"]["hermes"]["failover"] = False
    YAML(typ="safe").dump(data, fleet_file)
    assert taosync("apply", "--no-verify").rc == 0
    doc = YAML(typ="safe").load(config.read_text())
    assert doc["fallback_providers"] == [{"provider": "nous", "model": "hermes-4"}]


# -- where, import, verify -----------------------------------------------------------------


def test_hermes_home_moves_both_files(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"HERMES_HOME": str(tmp_path / "h")},
                    sandboxed=True)
    assert {p.path.parent for p in hermes.render(fleet(), KEY, env)} == {tmp_path / "h"}
    win = ClientEnv(home=tmp_path, environ={}, platform="win32", sandboxed=True)
    assert {p.path.parent for p in hermes.render(fleet(), KEY, win)} == {
        tmp_path / "AppData" / "Local" / "hermes"}


def test_import_follows_model_provider_to_its_entry(run, home):
    write(home / ".hermes/config.yaml", f"""model:
  provider: gw
  default: {SONNET}
providers:
  gw:
    base_url: https://gw.example.com/api
    api_mode: anthropic_messages
    key_env: GW_KEY
""")
    write(home / ".hermes/.env", "GW_KEY=sk-fixture-dotenv-0123456789\n")
    from helpers import imported

    r, data = imported(run, "--from", "hermes")
    assert r.rc == 0, r.err
    assert "sk-fixture-dotenv" not in r.out + r.err
    assert data["fleet"]["gateway"]["base_url"] == "https://gw.example.com/api"
    entry = data["fleet"]["clients"]["hermes"]
    assert entry["protocol"] == "anthropic-messages"


def test_import_names_a_string_model_as_not_the_gateway(run, home):
    write(home / ".hermes/config.yaml", "model: anthropic/claude-opus-4\n")
    from helpers import imported

    r, data = imported(run, "--from", "hermes")
    assert r.rc == 1 and data["fleet"] is None
    (conflict,) = [f for f in data["findings"] if f["topic"] == "provider"]
    assert "model 'anthropic/claude-opus-4' (no model.provider entry)" in conflict["message"]


def test_verify_takes_dotenv_over_the_environment_and_names_a_stale_line(taosync, home,
                                                                        fleet_file):
    """Hermes loads ~/.hermes/.env with override: its line is the key Hermes sends. Under
    secrets: reference a line for the referenced variable is named (never its value)."""
    from taosync.fleet.load import load_fleet

    write_fleet(fleet_file, "hermes", {"model": "fast"}, secrets="reference")
    assert taosync("apply", "--no-verify").rc == 0
    loaded = load_fleet(fleet_file, home=home)
    env = ClientEnv(home=home, environ={"TAOTOKEN_API_KEY": TEST_KEY}, sandboxed=True)
    disk = hermes.on_disk(loaded.fleet, loaded.key, env)
    assert disk.problems == [] and disk.drift == []
    (probe,) = disk.probes
    assert probe.secret.reveal() == TEST_KEY
    stale = "sk-stale-rotated-away-0123456789"
    write(home / ".hermes/.env", f"TAOTOKEN_API_KEY={stale}\n")
    disk = hermes.on_disk(loaded.fleet, loaded.key, env)
    (probe,) = disk.probes
    assert probe.secret.reveal() == stale
    assert probe.origins[1].where == "~/.hermes/.env TAOTOKEN_API_KEY"
    (line,) = disk.drift
    assert "~/.hermes/.env sets TAOTOKEN_API_KEY" in line and stale not in line


def test_verify_names_an_active_profile_that_hides_the_files(taosync, home, fleet_file):
    """``hermes profile use work`` writes ~/.hermes/active_profile; Hermes then reads
    ~/.hermes/profiles/work/config.yaml (seen with hermes -z, 0.19.0), so verify fails
    naming it, and import notes it."""
    from taosync.fleet.load import load_fleet

    write_fleet(fleet_file, "hermes", {"model": "fast"})
    assert taosync("apply", "--no-verify").rc == 0
    loaded = load_fleet(fleet_file, home=home)
    env = ClientEnv(home=home, environ={}, sandboxed=True)
    write(home / ".hermes/active_profile", "default\n")
    assert hermes.on_disk(loaded.fleet, loaded.key, env).problems == []
    write(home / ".hermes/active_profile", "work\n")
    disk = hermes.on_disk(loaded.fleet, loaded.key, env)
    assert disk.problems == [
        "~/.hermes/active_profile selects profile 'work': Hermes reads "
        "~/.hermes/profiles/work/config.yaml, not the files taosync writes (`hermes profile "
        "use default` returns to them)"]
    assert any("selects profile 'work'" in n for n in hermes.observe(env).notes)


@pytest.mark.parametrize("protocol", ["openai-chat", "openai-responses", "anthropic-messages"])
def test_verify_cli_fails_on_a_stale_dotenv_line_without_printing_it(taosync, home,
                                                                    fleet_file, protocol):
    """verify probes each protocol as Hermes sends it (and passes), then fails on the
    stale line, naming it and printing neither key."""
    from taosync.stub import Stub

    stale = "sk-stale-rotated-away-0123456789"
    with Stub(key=TEST_KEY, models=[SONNET, MINI, "nvidia/deepseek-r1",
                                    "intel/llama-7b"]) as stub:
        write_fleet(fleet_file, "hermes", {"model": "fast", "mcp": False,
                                           "protocol": protocol}, secrets="reference")
        data = YAML(typ="safe").load(fleet_file.read_text())
        data["gateway"]["base_url"] = stub.root
        YAML(typ="safe").dump(data, fleet_file)
        assert taosync("apply", "--no-verify").rc == 0
        assert taosync("verify", "--only", "hermes").rc == 0
        assert [(r.path, r.auth) for r in stub.posts()] == [
            ({"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses",
              "anthropic-messages": "/v1/messages"}[protocol], "ok")]
        write(home / ".hermes/.env", f"TAOTOKEN_API_KEY={stale}\n")
        r = taosync("verify", "--only", "hermes", "--json")
    assert r.rc == 1, r.both
    assert stale not in r.out + r.err and TEST_KEY not in r.out + r.err
    report = json.loads(r.out)
    assert any(".hermes/.env sets TAOTOKEN_API_KEY" in d["message"] for d in report["drift"])


# -- the real client (hermes-agent 0.19.0 from PyPI), when installed -------------------------

HERMES_BIN = binary("TAOSYNC_TEST_HERMES_BIN", "hermes")
real = pytest.mark.skipif(not HERMES_BIN or not can_isolate(),
                          reason="hermes (TAOSYNC_TEST_HERMES_BIN) or a loopback-only "
                                 "namespace (unshare -n) is not available here")
#: Hermes answers in 10–45 s here (it probes for local servers first, retries 5xx)
SLOW = 300


def chats(seen: dict) -> list[tuple[str, str, str | None, int]]:
    return [(r["path"], r["auth"], r["model"], r["status"]) for r in seen["requests"]
            if r["method"] == "POST" and r["path"].startswith("/v1/")]


@real
@pytest.mark.parametrize("protocol, path", [("openai-chat", "/v1/chat/completions"),
                                            ("openai-responses", "/v1/responses"),
                                            ("anthropic-messages", "/v1/messages")])
def test_real_hermes_inline_each_protocol(tmp_path, protocol, path):
    """Inline: the key from ~/.hermes/.env (0600) by key_env, config.yaml without it."""
    home = tmp_path / "home"
    home.mkdir()
    fleet_file = tmp_path / "fleet.yaml"
    write_fleet(fleet_file, "hermes", {"model": "fast", "mcp": False, "protocol": protocol})
    seen = run_real_client(fleet_file, home, TEST_KEY, [HERMES_BIN, "-z", "Reply with OK."],
                           timeout=SLOW)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    assert chats(seen) == [(path, "ok", MINI, 200)], seen["requests"]
    assert f"{MINI} answered through the taosync stand-in" in seen["out"], seen
    assert TEST_KEY not in (home / ".hermes/config.yaml").read_text()
    assert (home / ".hermes/.env").stat().st_mode & 0o077 == 0


@real
def test_real_hermes_by_reference_with_an_mcp_secret(tmp_path, monkeypatch):
    """Reference: the key from the environment alone (no .env), and an MCP server's
    ${env:NAME} secret expanded by Hermes itself from ${NAME}."""
    home = tmp_path / "home"
    home.mkdir()
    fleet_file = tmp_path / "fleet.yaml"
    out = tmp_path / "mcp-env.json"
    monkeypatch.setenv("MCP_TOKEN", "mcp-tok-42")  # for apply, which resolves it
    write_fleet(fleet_file, "hermes", {"model": "fast"}, secrets="reference")
    data = YAML(typ="safe").load(fleet_file.read_text())
    data["mcp_servers"] = {"echo": echo_mcp_server(out, {"ECHO_TOKEN": "${env:MCP_TOKEN}"})}
    YAML(typ="safe").dump(data, fleet_file)
    seen = run_real_client(fleet_file, home, TEST_KEY, [HERMES_BIN, "-z", "Reply with OK."],
                           env={"TAOTOKEN_API_KEY": TEST_KEY, "MCP_TOKEN": "mcp-tok-42"},
                           timeout=SLOW)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    assert chats(seen) == [("/v1/chat/completions", "ok", MINI, 200)], seen["requests"]
    assert not (home / ".hermes/.env").exists()
    text = (home / ".hermes/config.yaml").read_text()
    assert TEST_KEY not in text and "mcp-tok-42" not in text and "${MCP_TOKEN}" in text
    assert (mcp_env_seen(out) or {}).get("ECHO_TOKEN") == "mcp-tok-42"


@real
@pytest.mark.parametrize("fault", ["rate_limited", "status=503"])
def test_real_hermes_fails_over_inside_one_run(tmp_path, fault):
    """The route's preferred model fails (429: Hermes falls back at once; 503: after
    its retries) and the same one-shot is answered by the next candidate, from
    fallback_providers."""
    home = tmp_path / "home"
    home.mkdir()
    fleet_file = tmp_path / "fleet.yaml"
    write_fleet(fleet_file, "hermes", {"model": "balanced", "mcp": False})
    data = YAML(typ="safe").load(fleet_file.read_text())
    data["routes"] = CHAINED
    YAML(typ="safe").dump(data, fleet_file)
    seen = run_real_client(fleet_file, home, TEST_KEY, [HERMES_BIN, "-z", "Reply with OK."],
                           faults=(f"{fault}@{SONNET}",), timeout=SLOW)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    asked = chats(seen)
    assert {a[2] for a in asked} == {SONNET, MINI}, asked
    assert all(a[3] != 200 for a in asked if a[2] == SONNET)
    assert asked[-1] == ("/v1/chat/completions", "ok", MINI, 200), asked
    assert f"{MINI} answered through the taosync stand-in" in seen["out"], seen
