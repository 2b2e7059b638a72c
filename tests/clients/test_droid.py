"""Factory Droid: the shared contract, its settings.json entries, settings.local.json,
and the real ``droid exec`` against the stand-in."""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, TEST_KEY
from contract import check_contract
from helpers import KEY, MINI, R1, RAW, ROOT, SONNET, V1, by_path, fleet, imported, write
from real import binary, echo_mcp_server, mcp_env_seen
from real_client import can_isolate, run_real_client
from taosync.clients import droid
from taosync.clients.base import ClientEnv
from taosync.formats.base import Match


def entry(model: str) -> tuple:
    return ("customModels", Match("displayName", f"taotoken/{model}"))


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "droid", {"model": "balanced"},
                   reference_off_disk=True)


def test_every_catalogue_model_is_a_custom_model_and_the_slots_name_them(clients_env):
    settings, mcp = droid.render(fleet(clients__droid={"spec_model": "deep"}), KEY,
                                 clients_env)
    home = clients_env.home / ".factory"
    assert (settings.path, mcp.path) == (home / "settings.json", home / "mcp.json")
    assert settings.values[("sessionDefaultSettings", "model")] == \
        f"custom:taotoken/{SONNET}-0"
    assert settings.values[("sessionDefaultSettings", "specModeModel")] == \
        f"custom:taotoken/{R1}-0"
    for model in (MINI, SONNET, R1, "intel/llama-7b"):
        assert {k[-1]: v for k, v in settings.values.items() if k[:2] == entry(model)} == {
            "model": model, "baseUrl": V1, "apiKey": KEY,
            "provider": "generic-chat-completion-api"}
    assert settings.secret and clients_env.warnings == []
    assert mcp.values[("mcpServers", "taotoken-router")]["type"] == "stdio"


def test_the_id_rule_trims_and_joins_whitespace():
    assert droid.model_id(" taotoken/My  Model\tX ") == "custom:taotoken/My-Model-X-0"


@pytest.mark.parametrize("protocol,provider,url,path,auth", [
    ("openai-responses", "openai", V1, "/responses", "bearer"),
    ("anthropic-messages", "anthropic", ROOT, "/v1/messages", "x-api-key"),
])
def test_the_protocol_picks_provider_url_and_probe(clients_env, protocol, provider, url, path,
                                                   auth):
    f = fleet(clients__droid={"protocol": protocol, "model": MINI},
              gateway__headers={"X-Team": "core"},
              models={MINI: {"context_window": 128000}}, routes={"fast": MINI},
              default_route="fast", mcp_servers={})
    settings = droid.render(f, KEY, clients_env)[0]
    written = {k[-1]: v for k, v in settings.values.items() if k[:2] == entry(MINI)}
    assert {k: v.reveal() for k, v in written.pop("extraHeaders").items()} == {"X-Team": "core"}
    assert written == {"model": MINI, "baseUrl": url, "apiKey": KEY, "provider": provider,
                       "maxContextLimit": 128000}
    (probe,) = droid.probes(f, KEY, clients_env)
    assert (probe.protocol, probe.url, probe.auth) == (protocol, url + path, auth)
    assert {k: getattr(v, "reveal", lambda: v)() for k, v in probe.headers} == {
        "X-Team": "core", **droid.CLIENT_HEADERS}


def test_reference_writes_the_variable_and_says_to_export_it_once(clients_env):
    f = fleet(secrets="reference", gateway__key="${env:GW_KEY}",
              mcp_servers={"remote": {"url": "https://mcp.example/mcp",
                                      "headers": {"Authorization": "Bearer ${env:MCP_TOKEN}"}}})
    f.attach_mcp_secrets({"Bearer ${env:MCP_TOKEN}": _mcp_secret("MCP_TOKEN", "Bearer ")})
    settings, mcp = droid.render(f, KEY, clients_env)
    assert {v for k, v in settings.values.items() if k[-1] == "apiKey"} == {"${GW_KEY}"}
    assert not settings.secret
    assert mcp.values[("mcpServers", "remote")] == {
        "type": "http", "url": "https://mcp.example/mcp",
        "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}
    assert clients_env.warnings == [
        "droid: Factory Droid expands ${NAME} from its own environment only (no env file; "
        "unset, it sends the literal text): export GW_KEY, MCP_TOKEN where droid runs"]


def _mcp_secret(name: str, prefix: str):
    from taosync.fleet.logic import McpSecret
    from taosync.fleet.secrets import Reference, Secret

    return McpSecret(f"{prefix}${{env:{name}}}", prefix, Reference("env", name), "",
                     Secret("tok-0123456789abcdef"))


@pytest.mark.parametrize("key", ["${file:~/gw.key}", "${cmd:pass show gw}"])
def test_reference_droid_cannot_follow_goes_inline_with_a_warning(clients_env, key):
    f = fleet(secrets="reference", gateway__key=key, mcp_servers={})
    (settings,) = droid.render(f, KEY, clients_env)
    assert {v for k, v in settings.values.items() if k[-1] == "apiKey"} == {KEY}
    assert settings.secret
    (warning,) = clients_env.warnings
    assert "needs gateway.key = ${env:NAME}" in warning and "inline" in warning
    assert RAW not in warning


def test_factory_home_override_replaces_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"FACTORY_HOME_OVERRIDE": str(tmp_path / "o")},
                    sandboxed=True)
    assert {p.path.parent for p in droid.render(fleet(), KEY, env)} == {
        tmp_path / "o" / ".factory"}


def test_users_models_and_keys_stay_byte_for_byte(taosync, home, fleet_file):
    """Only the taotoken/ entries and the session defaults are taosync's: the user's own
    custom model and settings keep their bytes, in apply and on removal."""
    from contract import write_fleet

    mine = ('    {\n      "model": "my-local",\n      "displayName": "Mine",\n'
            '      "baseUrl": "http://localhost:11434/v1",\n      "apiKey": "x",\n'
            '      "provider": "generic-chat-completion-api"\n    }')
    text = f'{{\n  "customModels": [\n{mine}\n  ],\n  "autonomyMode": "auto-low"\n}}\n'
    settings = write(home / ".factory/settings.json", text)
    write_fleet(fleet_file, "droid", {"model": "fast", "mcp": False})
    assert taosync("apply", "--no-verify").rc == 0
    data = json.loads(settings.read_text())
    assert mine in settings.read_text() and data["autonomyMode"] == "auto-low"
    assert [m["displayName"] for m in data["customModels"]][0] == "Mine"
    assert data["sessionDefaultSettings"] == {"model": f"custom:taotoken/{MINI}-0"}
    write_fleet(fleet_file, "droid", {"model": "fast", "enabled": False})
    assert taosync("apply", "--no-verify").rc == 0
    assert settings.read_text() == text


def applied(taosync, home, fleet_file, secrets: str):
    """Apply a fleet with droid on ``fast`` (no MCP); then verify's reading of its files
    in an environment of the caller's."""
    from contract import write_fleet
    from taosync.fleet.load import load_fleet

    write_fleet(fleet_file, "droid", {"model": "fast", "mcp": False}, secrets=secrets)
    assert taosync("apply", "--no-verify").rc == 0
    loaded = load_fleet(fleet_file, home=home)
    return lambda environ: droid.on_disk(loaded.fleet, loaded.key,
                                         ClientEnv(home=home, environ=environ, sandboxed=True))


def test_settings_local_json_that_beats_taosync_is_drift(taosync, home, fleet_file):
    """droid merges settings.local.json over settings.json: a model chosen there (or a
    customModels list, which replaces taosync's) is what droid uses, so verify probes
    that and reports it."""
    on_disk = applied(taosync, home, fleet_file, "inline")
    disk = on_disk({})
    assert disk.problems == [] and disk.drift == []
    (probe,) = disk.probes
    assert (probe.model, probe.url, probe.secret.reveal()) == (
        MINI, V1 + "/chat/completions", TEST_KEY)
    assert probe.origins[2].where == \
        '~/.factory/settings.json customModels[displayName=taotoken/gpt-4o-mini].model'

    write(home / ".factory/settings.local.json",
          json.dumps({"model": f"custom:taotoken/{SONNET}-0"}))
    disk = on_disk({})
    assert [p.model for p in disk.probes] == [SONNET]
    assert disk.drift == ["~/.factory/settings.local.json: model beats "
                          "sessionDefaultSettings.model in ~/.factory/settings.json"]

    write(home / ".factory/settings.local.json", json.dumps({"customModels": []}))
    disk = on_disk({})
    assert disk.probes == []
    assert any("customModels replaces the list" in d for d in disk.drift), disk.drift
    assert any("not a customModels entry" in p for p in disk.problems), disk.problems


def test_verify_names_an_unexported_variable(taosync, home, fleet_file):
    on_disk = applied(taosync, home, fleet_file, "reference")
    disk = on_disk({})
    assert disk.probes == []
    (problem,) = disk.problems
    assert "literal ${TAOTOKEN_API_KEY}: export TAOTOKEN_API_KEY" in problem
    disk = on_disk({"TAOTOKEN_API_KEY": TEST_KEY})
    assert disk.problems == [] and [p.secret.reveal() for p in disk.probes] == [TEST_KEY]


def test_import_follows_droids_own_model_naming(run, home):
    """A hand-written file: the legacy top-level model, an index id, an anthropic entry
    with its key by reference."""
    write(home / ".factory/settings.json", json.dumps({
        "customModels": [
            {"model": "other", "displayName": "GW Main", "baseUrl": "http://x/v1",
             "apiKey": "k", "provider": "openai"},
            {"model": SONNET, "displayName": "GW Main", "baseUrl": "https://gw.example/api",
             "apiKey": "${GW_KEY}", "provider": "anthropic"}],
        "model": "custom:GW-Main-1"}))
    r, data = imported(run, "--from", "droid")
    assert r.rc == 0, r.err
    proposal = data["fleet"]
    assert proposal["gateway"]["base_url"] == "https://gw.example/api"
    assert proposal["gateway"]["key"] == "${env:GW_KEY}"
    assert proposal["clients"]["droid"]["protocol"] == "anthropic-messages"
    assert proposal["clients"]["droid"]["secrets"] == "reference"


def test_import_names_a_factory_model(run, home):
    write(home / ".factory/settings.json", json.dumps({"model": "claude-opus-5"}))
    r, data = imported(run, "--from", "droid")
    assert "droid" not in ((data["fleet"] or {}).get("clients") or {})
    assert any("Factory model" in f["message"] for f in data["findings"]), data["findings"]


# -- the real client (droid 0.215.0 from npm), when installed ------------------------------

DROID = binary("TAOSYNC_TEST_DROID_BIN", "droid")
#: a 308 MB Bun binary: its first start may be slow on a loaded machine
TIMEOUT = 300


def _fleet(path, entry: dict, secrets: str, mcp_servers: dict | None = None) -> None:
    yaml = YAML(typ="safe")
    data = yaml.load(EXAMPLE_FLEET.read_text())
    data.update(clients={"droid": entry}, secrets=secrets, mcp_servers=mcp_servers or {})
    with path.open("w") as fh:
        yaml.dump(data, fh)


@pytest.mark.skipif(not DROID or not can_isolate(),
                    reason="droid (TAOSYNC_TEST_DROID_BIN) or a loopback-only namespace "
                           "(unshare -n) is not available here")
@pytest.mark.parametrize("secrets,protocol,path", [
    ("inline", "openai-chat", "/v1/chat/completions"),
    ("reference", "openai-chat", "/v1/chat/completions"),
    ("reference", "anthropic-messages", "/v1/messages"),
    ("inline", "openai-responses", "/v1/responses"),
])
def test_real_droid_exec_answers_through_the_stand_in(tmp_path, secrets, protocol, path):
    """``droid exec`` with only taosync's files: the slot's model on the protocol's path,
    with the key inline or ``${TAOTOKEN_API_KEY}`` exported in droid's environment; by
    reference an MCP server gets its secret from droid's environment too."""
    home = tmp_path / "home"
    home.mkdir()
    fleet_file = tmp_path / "fleet.yaml"
    out = tmp_path / "mcp-env.json"
    token = "tok-MCP-SECRET-0123456789"
    env = {"TAOTOKEN_API_KEY": TEST_KEY, "MCP_TOKEN": token} if secrets == "reference" else {}
    mcp = {"echo": echo_mcp_server(out, {"TOKEN": "${env:MCP_TOKEN}"})} \
        if secrets == "reference" else {}
    _fleet(fleet_file, {"model": "deep", "protocol": protocol}, secrets, mcp)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCP_TOKEN", token)  # taosync resolves it at apply
        seen = run_real_client(fleet_file, home, TEST_KEY, [DROID, "exec", "Reply with OK."],
                               env=env, timeout=TIMEOUT)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    posts = [r for r in seen["requests"] if r["method"] == "POST"]
    assert {(r["path"], r["auth"], r["model"], r["status"]) for r in posts} == {
        (path, "ok", R1, 200)}, seen
    assert {r["headers"]["user-agent"] for r in posts} == {droid.CLIENT_HEADERS["User-Agent"]}
    assert f"{R1} answered through the taosync stand-in" in seen["out"]
    settings = (home / ".factory" / "settings.json").read_text()
    assert (TEST_KEY in settings) == (secrets == "inline")
    if secrets == "reference":
        assert json.loads((home / ".factory" / "mcp.json").read_text())["mcpServers"]["echo"][
            "env"] == {"TOKEN": "${MCP_TOKEN}"}
        assert mcp_env_seen(out)["TOKEN"] == token


@pytest.mark.skipif(not DROID or not can_isolate(),
                    reason="droid (TAOSYNC_TEST_DROID_BIN) or a loopback-only namespace "
                           "(unshare -n) is not available here")
def test_real_droid_takes_the_model_settings_local_json_names(tmp_path):
    """The user's settings.local.json beats taosync's settings.json: droid asks for the
    model named there, and verify's reading of the files probes that same model and
    reports the override as drift."""
    from taosync.fleet.load import load_fleet

    home = tmp_path / "home"
    fleet_file = tmp_path / "fleet.yaml"
    write(home / ".factory/settings.local.json",
          json.dumps({"model": f"custom:taotoken/{MINI}-0"}))
    _fleet(fleet_file, {"model": "deep"}, "inline")
    seen = run_real_client(fleet_file, home, TEST_KEY, [DROID, "exec", "Reply with OK."],
                           timeout=TIMEOUT)
    assert seen["apply"] == "ok" and seen["rc"] == 0, seen
    assert {r["model"] for r in seen["requests"] if r["method"] == "POST"} == {MINI}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAOTOKEN_API_KEY", TEST_KEY)
        loaded = load_fleet(fleet_file, home=home)
    disk = droid.on_disk(loaded.fleet, loaded.key, ClientEnv(home=home, environ={},
                                                             sandboxed=True))
    assert [p.model for p in disk.probes] == [MINI]
    assert any("settings.local.json: model beats" in d for d in disk.drift), disk.drift
