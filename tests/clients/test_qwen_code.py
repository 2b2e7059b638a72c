"""qwen-code: exact patches and probes, import, the contract, and the real binary."""

from __future__ import annotations

import json

import pytest

from conftest import TEST_KEY
from contract import check_contract
from helpers import (
    KEY, KEY_ONE, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, fleet, imported, round_trip, write)
from real import binary, run_real_client
from taosync.clients import qwen_code
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.base import Match
from taosync.formats.jsonc import blank
from taosync.fleet.secrets import Secret

ROUTER = ("mcpServers", "taotoken-router")


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "qwen-code", {"model": "balanced"},
                   reference_off_disk=True)


# -- render and probes

def test_qwen_inline(clients_env, tmp_path):
    (settings,) = qwen_code.render(fleet(), KEY, clients_env)
    assert settings.path == tmp_path / ".qwen" / "settings.json"
    assert settings.format == "jsonc" and settings.secret  # Qwen allows comments
    assert settings.values == {
        ("security", "auth", "selectedType"): "openai",
        ("security", "auth", "baseUrl"): V1,
        ("security", "auth", "apiKey"): KEY,
        ("model", "name"): SONNET,
        ROUTER: {"command": "npx", "args": ROUTER_ARGS, "env": ROUTER_ENV},
    }
    assert clients_env.warnings == []


def test_qwen_reference_names_the_variable_in_a_provider_entry(clients_env):
    f = fleet(secrets="reference", mcp_servers={}, gateway__headers={"X-Team": "core"},
              clients__qwen_code={"model": "fast"})
    (settings,) = qwen_code.render(f, KEY, clients_env)
    entry = ("modelProviders", "openai", Match("id", "gpt-4o-mini"))
    assert settings.values == {
        ("security", "auth", "selectedType"): "openai",
        ("model", "name"): "gpt-4o-mini",
        entry + ("envKey",): "TAOTOKEN_API_KEY",
        entry + ("baseUrl",): V1,
        entry + ("generationConfig", "customHeaders"): {"X-Team": Secret("core")},
    }
    assert not settings.secret and clients_env.warnings == []


def test_qwen_reference_with_a_file_key_falls_back_inline_and_says_so(clients_env):
    f = fleet(secrets="reference", mcp_servers={}, gateway__key="${file:~/k}",
              gateway__headers={"X-Team": "core"})
    (settings,) = qwen_code.render(f, KEY, clients_env)
    assert settings.values[("security", "auth", "apiKey")] == KEY and settings.secret
    assert settings.values[("model", "generationConfig", "customHeaders")] == {"X-Team": Secret("core")}
    assert any("envKey" in w and "inline" in w for w in clients_env.warnings)


def test_qwen_mcp_shapes(clients_env):
    f = fleet(mcp_servers={
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "cwd": "/srv"},
    })
    values = qwen_code.render(f, KEY, clients_env)[0].values
    assert {k: v for k, v in values.items() if k[0] == "mcpServers"} == {
        ("mcpServers", "remote"): {"httpUrl": "https://mcp.example/mcp", "headers": {"A": "b"}},
        ("mcpServers", "old"): {"url": "https://mcp.example/sse"},
        ("mcpServers", "local"): {"command": "srv", "cwd": "/srv"},
    }


def test_qwen_mcp_env_secret_stays_a_reference(taosync, home, fleet_file, monkeypatch):
    """With secrets: reference an ``${env:NAME}`` MCP value is written as ``${NAME}``, which
    Qwen expands from its environment: the token stays off disk."""
    from contract import write_fleet

    monkeypatch.setenv("MY_TOKEN", "tok-SECRET-0123456789")
    write_fleet(fleet_file, "qwen-code", {"model": "balanced"}, secrets="reference")
    text = fleet_file.read_text().replace(
        "mcp_servers:", "mcp_servers:\n  gh: {command: gh-mcp, env: {TOKEN: '${env:MY_TOKEN}'}}", 1)
    fleet_file.write_text(text)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    raw = (home / ".qwen/settings.json").read_text()
    assert json.loads(raw)["mcpServers"]["gh"] == {"command": "gh-mcp",
                                                   "env": {"TOKEN": "${MY_TOKEN}"}}
    assert "tok-SECRET" not in raw


def test_qwen_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"QWEN_HOME": str(tmp_path / "q")}, sandboxed=True)
    assert qwen_code.render(fleet(), KEY, env)[0].path == tmp_path / "q" / "settings.json"


def test_qwen_probes(clients_env):
    assert qwen_code.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("qwen-code", "balanced", SONNET, "openai-chat", V1, V1 + "/chat/completions",
                  "bearer")]


# -- Qwen's own key, on disk and in import

def test_qwen_version_key_is_never_owned(taosync, home, fleet_file):
    """Qwen adds ``$version`` to settings.json on its first run: no drift, kept on apply."""
    from contract import write_fleet

    write_fleet(fleet_file, "qwen-code", {"model": "balanced"})
    assert taosync("apply", "--no-verify").rc == 0
    path = home / ".qwen" / "settings.json"
    data = json.loads(path.read_text())
    data["$version"] = 4
    path.write_text(json.dumps(data, indent=2))
    assert taosync("plan", "--check").rc == 0
    assert taosync("apply", "--no-verify").rc == 0
    assert json.loads(path.read_text())["$version"] == 4


def test_qwen_keeps_the_users_comments(taosync, home, fleet_file):
    """settings.json is JSON with comments for Qwen: a user's notes survive every apply."""
    from contract import write_fleet

    write_fleet(fleet_file, "qwen-code", {"model": "balanced"})
    path = home / ".qwen" / "settings.json"
    write(path, '{\n  // my theme, chosen with care\n  "ui": {"theme": "GitHub"},\n'
                '  /* tools I trust */\n  "tools": {"sandbox": false}\n}\n')
    assert taosync("apply", "--no-verify").rc == 0
    text = path.read_text()
    assert "// my theme, chosen with care" in text and "/* tools I trust */" in text
    data = json.loads(blank(text))
    assert data["ui"] == {"theme": "GitHub"} and data["model"]["name"]
    assert data["security"]["auth"]["selectedType"] == "openai"
    assert taosync("plan", "--check").rc == 0


def test_qwen_import_reads_a_provider_entry(run, home, tmp_path, monkeypatch):
    write(home / ".qwen/settings.json", """{
  // Qwen strips comments before parsing: import reads past them
  "$version": 4,
  "security": {"auth": {"selectedType": "openai"}},
  "model": {"name": "gw-big"},
  "modelProviders": {"openai": [
    {"id": "other", "envKey": "OTHER_KEY", "baseUrl": "https://elsewhere.example/v1"},
    {"id": "gw-big", "envKey": "GW_KEY", "baseUrl": "https://gw.example.com/api/v1"}
  ]}
}
""")
    monkeypatch.setenv("GW_KEY", KEY_ONE)
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    proposal = data["fleet"]
    assert proposal["gateway"] == {"base_url": "https://gw.example.com/api",
                                   "key": "${env:GW_KEY}"}
    assert proposal["clients"]["qwen-code"]["secrets"] == "reference"
    assert "gw-big" in proposal["models"]


def test_qwen_import_inline_key_is_never_printed(run, home):
    write(home / ".qwen/settings.json", json.dumps({"security": {"auth": {
        "selectedType": "openai", "baseUrl": "https://gw.example.com/api/v1",
        "apiKey": KEY_ONE}}, "model": {"name": "gw-big"}}))
    r, data = imported(run)
    assert r.rc == 0 and "qwen-code" in data["fleet"]["clients"]


# -- the real client

QWEN = binary("TAOSYNC_TEST_QWEN_BIN", "qwen")


@pytest.mark.skipif(QWEN is None, reason="qwen (@qwen-code/qwen-code 0.24.4) is not installed; "
                    "set TAOSYNC_TEST_QWEN_BIN")
@pytest.mark.parametrize("secrets", ["inline", "reference"])
def test_real_qwen_code_answers_through_the_stand_in(taosync, home, fleet_file, secrets):
    # the user's own privacy setting: no usage statistics, so no lookup beyond the stand-in;
    # and a comment of theirs, which Qwen reads past and taosync keeps
    write(home / ".qwen/settings.json", '// mine\n{"privacy": {"usageStatisticsEnabled": false}}')
    done, seen = run_real_client(taosync, fleet_file, home, QWEN, ["Reply with OK"],
                                 "qwen-code", {"model": "main"}, secrets=secrets,
                                 env={"TAOTOKEN_API_KEY": TEST_KEY} if secrets == "reference"
                                 else None, headers={"X-Team": "core"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gw-main answered through the taosync stand-in" in done.stdout
    chats = [r for r in seen if r.path == "/api/v1/chat/completions"]
    assert chats and all(r.auth == "ok" and r.body["model"] == "gw-main" for r in chats)
    assert all(r.headers.get("x-team") == "core" for r in chats)  # generationConfig.customHeaders
    text = (home / ".qwen/settings.json").read_text()
    assert "// mine" in text
    settings = json.loads(blank(text))
    assert (TEST_KEY in json.dumps(settings)) == (secrets == "inline")
    assert settings["$version"] == 4  # Qwen's own key, written by Qwen, left alone
    assert settings["privacy"] == {"usageStatisticsEnabled": False}


@pytest.mark.skipif(QWEN is None, reason="qwen (@qwen-code/qwen-code 0.24.4) is not installed; "
                    "set TAOSYNC_TEST_QWEN_BIN")
@pytest.mark.parametrize("where", ["environment", "qwen-dotenv", "nowhere"])
def test_real_qwen_hands_an_mcp_server_its_secret_by_reference(taosync, home, fleet_file,
                                                               tmp_path, monkeypatch, where):
    """secrets: reference with an ``${env:MCP_TOKEN}`` MCP secret is written ``${MCP_TOKEN}``:
    the MCP server Qwen starts gets the token's value when Qwen has the variable (its
    environment, or ``~/.qwen/.env``), and no file taosync wrote holds it. Qwen hands on
    the text ``${MCP_TOKEN}`` only when the variable is set nowhere it looks (README)."""
    from real import echo_mcp_server, mcp_env_seen, stand_in

    token = "tok-MCP-SECRET-0123456789"
    monkeypatch.setenv("MCP_TOKEN", token)  # taosync resolves it at apply
    out = tmp_path / "mcp-env.json"
    write(home / ".qwen/settings.json", '{"privacy": {"usageStatisticsEnabled": false}}')
    env = {"TAOTOKEN_API_KEY": TEST_KEY}
    if where == "environment":
        env["MCP_TOKEN"] = token
    elif where == "qwen-dotenv":
        write(home / ".qwen/.env", f"MCP_TOKEN={token}\n")
    with stand_in(taosync, fleet_file, home, models=["gw-main"]) as s:
        s.apply("qwen-code", {"model": "gw-main"}, secrets="reference",
                models={"gw-main": {}}, routes={}, default_route=None,
                mcp_servers={"echo": echo_mcp_server(
                    out, {"TOKEN": "${env:MCP_TOKEN}", "AUTH": "Bearer ${env:MCP_TOKEN}"})})
        done = s.run([QWEN, "Reply with OK"], env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gw-main answered through the taosync stand-in" in done.stdout
    seen = mcp_env_seen(out)
    assert seen is not None, done.stdout + done.stderr
    value = token if where != "nowhere" else "${MCP_TOKEN}"
    assert (seen["TOKEN"], seen["AUTH"]) == (value, f"Bearer {value}")
    assert token not in (home / ".qwen/settings.json").read_text()
    assert token not in done.stdout + done.stderr
