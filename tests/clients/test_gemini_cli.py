"""gemini-cli: exact patches and probes, the gemini_base_url check, import, the contract, the
on-disk probe against the stand-in, and the real binary."""

from __future__ import annotations

import json

import pytest

from conftest import TEST_KEY
from contract import write_fleet
from contract import check_contract
from helpers import (
    KEY, KEY_ONE, MINI, ROOT, ROUTER_ARGS, ROUTER_ENV, by_path, fleet, imported, round_trip,
    write)
from real import binary, run_real_client
from taosync.clients import gemini_cli
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.jsonc import blank
from taosync.fleet.secrets import Secret

GEMINI_ROOT = ROOT  # the example fleet's gemini_base_url: the root (Gemini's paths are /v1beta/…)
GEMINI_URL = GEMINI_ROOT + "/v1beta/models/gpt-4o-mini:streamGenerateContent?alt=sse"


def test_contract(taosync, home, fleet_file):
    # alone, its Gemini root is what import proposes as the gateway
    check_contract(taosync, home, fleet_file, "gemini-cli", {"model": "fast"},
                   reference_off_disk=False, gateway=GEMINI_ROOT)


# -- render and probes

def test_gemini_inline(clients_env, tmp_path):
    patches = by_path(gemini_cli.render(fleet(), KEY, clients_env))
    settings = patches[tmp_path / ".gemini" / "settings.json"]
    assert settings.format == "jsonc" and settings.secret  # comments allowed; the MCP server holds the key
    assert settings.values == {
        ("security", "auth", "selectedType"): "gemini-api-key",
        ("model", "name"): MINI,
        ("mcpServers", "taotoken-router"): {"command": "npx", "args": ROUTER_ARGS,
                                           "env": ROUTER_ENV},
    }
    dotenv = patches[tmp_path / ".gemini" / ".env"]
    assert dotenv.format == "dotenv" and dotenv.secret
    assert dotenv.values == {("GOOGLE_GEMINI_BASE_URL",): GEMINI_ROOT,
                             ("GEMINI_API_KEY",): KEY}
    assert clients_env.warnings == []


def test_gemini_reference_leaves_its_own_variable_to_the_environment(clients_env):
    f = fleet(secrets="reference", mcp_servers={}, gateway__key="${env:GEMINI_API_KEY}",
              gateway__headers={"X-Team": "core", "X-Env": "dev"})
    settings, dotenv = gemini_cli.render(f, KEY, clients_env)
    assert not settings.secret
    assert dotenv.values == {("GOOGLE_GEMINI_BASE_URL",): GEMINI_ROOT,
                             ("GEMINI_CLI_CUSTOM_HEADERS",): Secret("X-Team: core, X-Env: dev")}
    assert clients_env.warnings == []


def test_gemini_reference_with_another_variable_writes_the_key_and_says_why(clients_env):
    f = fleet(secrets="reference", mcp_servers={})
    _, dotenv = gemini_cli.render(f, KEY, clients_env)
    assert dotenv.values[("GEMINI_API_KEY",)] == KEY and dotenv.secret
    assert any("only from $GEMINI_API_KEY" in w for w in clients_env.warnings)


def test_gemini_mcp_shapes_and_names_without_underscores(clients_env):
    f = fleet(mcp_servers={
        "remote_one": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "remote-one": {"url": "https://mcp.example/other"},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "args": ["-v"], "cwd": "/srv"},
    })
    values = gemini_cli.render(f, KEY, clients_env)[0].values
    assert {k: v for k, v in values.items() if k[0] == "mcpServers"} == {
        ("mcpServers", "remote-one"): {"httpUrl": "https://mcp.example/mcp",
                                       "headers": {"A": "b"}},
        ("mcpServers", "old"): {"url": "https://mcp.example/sse"},
        ("mcpServers", "local"): {"command": "srv", "args": ["-v"], "cwd": "/srv"},
    }
    assert any("'remote_one' is written as 'remote-one'" in w for w in clients_env.warnings)
    assert any("skipped 'remote-one'" in w for w in clients_env.warnings)


def test_gemini_env_lists_the_key_before_the_headers(clients_env):
    """A new .env keeps the order Gemini's owned keys always had: URL, key, headers."""
    _, dotenv = gemini_cli.render(fleet(gateway__headers={"X-Team": "core"}), KEY, clients_env)
    assert list(dotenv.values) == [("GOOGLE_GEMINI_BASE_URL",), ("GEMINI_API_KEY",),
                                   ("GEMINI_CLI_CUSTOM_HEADERS",)]


def test_gemini_import_takes_http_url_over_url(clients_env, tmp_path):
    """An entry with both httpUrl and url is streamable HTTP, as Gemini CLI reads it."""
    write(tmp_path / ".gemini/settings.json", json.dumps({"mcpServers": {"both": {
        "httpUrl": "https://mcp.example/mcp", "url": "https://mcp.example/sse"}}}))
    obs = gemini_cli.observe(clients_env)
    assert obs.mcp_servers["both"].value == {"url": "https://mcp.example/mcp"}


def test_gemini_cli_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"GEMINI_CLI_HOME": str(tmp_path / "g")},
                    sandboxed=True)
    assert [p.path for p in gemini_cli.render(fleet(), KEY, env)] == [
        tmp_path / "g" / ".gemini" / "settings.json", tmp_path / "g" / ".gemini" / ".env"]


def test_gemini_probes(clients_env):
    assert gemini_cli.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("gemini-cli", "fast", MINI, "gemini", GEMINI_ROOT, GEMINI_URL,
                  "x-goog-api-key")]


# -- the fleet check

def test_enabling_gemini_without_its_root_is_a_located_error(taosync, fleet_file, home):
    text = fleet_file.read_text()
    fleet_file.write_text("\n".join(line for line in text.splitlines()
                                    if "gemini_base_url" not in line) + "\n")
    r = taosync("validate")
    assert r.rc == 2 and "Traceback" not in r.both
    line = next(i for i, l in enumerate(fleet_file.read_text().splitlines(), 1)
                if l.strip().startswith("gemini-cli:"))
    assert f"fleet.yaml:{line}:" in r.err
    assert "needs gateway.gemini_base_url" in r.err and "only Gemini's protocol" in r.err
    assert taosync("apply", "--no-verify").rc == 2 and not (home / ".gemini").exists()
    fleet_file.write_text(fleet_file.read_text().replace("gemini-cli: {model: fast}",
                                                         "gemini-cli: {enabled: false}"))
    assert taosync("validate").rc == 0


# -- on disk: the user's trust setting, other lines, and what verify probes

def test_gemini_keeps_folder_trust_and_the_users_env_lines(taosync, home, fleet_file):
    write_fleet(fleet_file, "gemini-cli", {"model": "fast"})
    write(home / ".gemini/settings.json", "// Gemini strips comments: they are the user's\n"
          + json.dumps({"security": {"folderTrust": {"enabled": True}},
                        "ui": {"theme": "Dracula"}}))
    write(home / ".gemini/.env", "# mine\nGOOGLE_CLOUD_PROJECT=p1\n")
    assert taosync("apply", "--no-verify").rc == 0
    text = (home / ".gemini/settings.json").read_text()
    assert text.startswith("// Gemini strips comments: they are the user's\n")
    settings = json.loads(blank(text))
    assert settings["security"] == {"folderTrust": {"enabled": True},
                                    "auth": {"selectedType": "gemini-api-key"}}
    dotenv = (home / ".gemini/.env").read_text()
    assert dotenv.startswith("# mine\nGOOGLE_CLOUD_PROJECT=p1\n")
    assert f"GEMINI_API_KEY={TEST_KEY}" in dotenv
    assert f"GOOGLE_GEMINI_BASE_URL={GEMINI_ROOT}" in dotenv
    assert (home / ".gemini/.env").stat().st_mode & 0o077 == 0


def test_verify_probes_what_the_files_say(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=["gpt-4o-mini"]) as stub:
        write_fleet(fleet_file, "gemini-cli", {"model": "fast"})
        fleet_file.write_text(fleet_file.read_text().replace(
            GEMINI_ROOT, stub.root))
        assert taosync("apply", "--no-verify").rc == 0
        ok = taosync("verify", "--only", "gemini-cli")
        assert ok.rc == 0, ok.both
        (request,) = stub.posts(":streamGenerateContent")
        assert request.path == "/v1beta/models/gpt-4o-mini:streamGenerateContent"
        assert request.query == "alt=sse" and request.auth == "ok"
        # the typical mistake, made by hand in .env: …/v1 doubles into /v1/v1beta
        env_file = home / ".gemini/.env"
        env_file.write_text(env_file.read_text().replace(stub.root, stub.root + "/v1"))
        bad = taosync("verify", "--only", "gemini-cli")
    assert bad.rc == 1
    assert "~/.gemini/.env GOOGLE_GEMINI_BASE_URL" in bad.out
    assert "/v1 is doubled" in bad.out


# -- import

def test_gemini_round_trip(run, home, tmp_path, monkeypatch):
    write(home / ".gemini/settings.json", "/* the user's note */\n" + json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": "gw-flash"},
        "mcpServers": {"files": {"command": "fs-mcp", "args": ["/srv"]},
                       "docs": {"httpUrl": "https://mcp.example/mcp"}}}))
    write(home / ".gemini/.env", f"GEMINI_API_KEY={KEY_ONE}\n"
                                 "GOOGLE_GEMINI_BASE_URL=https://gw.example.com/api\n"
                                 "GOOGLE_CLOUD_PROJECT=p1\n")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    proposal = data["fleet"]
    assert proposal["gateway"]["base_url"] == "https://gw.example.com/api"
    assert proposal["gateway"]["gemini_base_url"] == "https://gw.example.com/api"
    assert "gw-flash" in proposal["models"]
    assert set(proposal["mcp_servers"]) == {"files", "docs"}


def test_gemini_with_a_google_login_is_not_a_gateway_client(run, home):
    write(home / ".gemini/settings.json", json.dumps({
        "security": {"auth": {"selectedType": "oauth-personal"}}, "model": {"name": "x"}}))
    r, data = imported(run)
    assert any("oauth-personal" in f["message"] for f in data["findings"])


# -- the real client

GEMINI = binary("TAOSYNC_TEST_GEMINI_BIN", "gemini")


@pytest.mark.skipif(GEMINI is None, reason="gemini (@google/gemini-cli 0.61.0) is not "
                    "installed; set TAOSYNC_TEST_GEMINI_BIN")
def test_real_gemini_cli_answers_through_the_stand_in(taosync, home, fleet_file):
    """In a folder the user trusts (``--skip-trust`` stands for that here) Gemini CLI reads
    ~/.gemini/.env: only taosync's two files, no key or URL in the environment. The user's
    own privacy setting (no usage statistics: no lookup beyond the stand-in) is kept."""
    write(home / ".gemini/settings.json",  # with a comment of the user's: Gemini reads past it
          '// mine\n{"privacy": {"usageStatisticsEnabled": false}}')
    done, seen = run_real_client(taosync, fleet_file, home, GEMINI,
                                 ["--skip-trust", "-p", "Reply with OK"], "gemini-cli",
                                 {"model": "fast"}, headers={"X-Team": "core", "X-Env": "dev"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gw-fast answered through the taosync stand-in" in done.stdout
    calls = [r for r in seen if r.method == "POST"]
    assert calls and all(r.auth == "ok" for r in calls)
    # gateway.headers, through GEMINI_CLI_CUSTOM_HEADERS in .env
    assert all((r.headers.get("x-team"), r.headers.get("x-env")) == ("core", "dev")
               for r in calls)
    assert "/api/v1beta/models/gw-fast:streamGenerateContent" in [r.path for r in calls]
    text = (home / ".gemini/settings.json").read_text()
    assert text.startswith("// mine\n")
    settings = json.loads(blank(text))
    assert "folderTrust" not in settings.get("security", {})
    assert settings["privacy"] == {"usageStatisticsEnabled": False}


def test_env_gives_the_exports_a_headless_gemini_needs(taosync):
    """Outside a trusted folder Gemini CLI ignores ~/.gemini/.env's URL: ``taosync env``
    exports its own variables instead (the key only with --with-key)."""
    plain = taosync("env").out
    assert f"export GOOGLE_GEMINI_BASE_URL='{GEMINI_ROOT}'" in plain
    assert "GEMINI_API_KEY" not in plain
    assert f"export GEMINI_API_KEY='{TEST_KEY}'" in taosync("env", "--with-key").out


def test_a_gemini_root_ending_in_v1_is_warned_about(taosync, fleet_file, run, home):
    fleet_file.write_text(fleet_file.read_text().replace(
        "gemini_base_url: https://taotoken.net/api",
        "gemini_base_url: https://taotoken.net/api/v1"))
    r = taosync("validate")
    assert r.rc == 0 and "gateway.gemini_base_url: warning:" in r.err
    assert "(…/v1/v1beta/…)" in r.err
    write(home / ".gemini/settings.json", json.dumps({"model": {"name": "m"}}))
    write(home / ".gemini/.env", f"GEMINI_API_KEY={KEY_ONE}\n"
                                 "GOOGLE_GEMINI_BASE_URL=https://gw.example.com/v1\n")
    _, data = imported(run)
    assert any("ends in /v1" in f["message"] for f in data["findings"])
