"""The apps that take no custom gateway, only MCP servers from a file: Cursor, Windsurf,
VS Code, Claude Desktop and Zed (``declare.McpOnly``). They cannot run here, so each
shape is checked against what the app's docs (the module's ``SOURCES``) say it reads:
the file written for a stdio and a remote server, secrets inline and by reference, a
user's own file (other servers, other settings, comments) kept byte for byte, the path on
each OS, destroy, import, a gateway slot refused, and verify having nothing to probe.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

import helpers
from conftest import ROOT, TEST_KEY
from taosync.clients import registry
from taosync.clients.base import ClientEnv
from taosync.formats.registry import editor_for

CONTRACT = Path(__file__).parents[1] / "fixtures" / "fleet" / "contract.yaml"
ENV_TOKEN = "envtok-MCPAPP-env-0123456789abcdef"
HEADER_TOKEN = "hdrtok-MCPAPP-header-0123456789abcd"
APPS = ("cursor", "windsurf", "vscode", "claude-desktop", "zed")

LOCAL = {"command": "npx", "args": ["-y", "@contract/mcp-local"]}
REMOTE_URL = "https://mcp.contract.example/mcp"

#: app → (its file under a Linux home, the servers' container, a stdio entry's fixed
#: fields, a remote entry's fixed fields and url field; None: the file takes no remote)
SHAPES = {
    "cursor": (".cursor/mcp.json", "mcpServers", {}, ({}, "url")),
    "windsurf": (".codeium/windsurf/mcp_config.json", "mcpServers", {}, ({}, "serverUrl")),
    "vscode": (".config/Code/User/mcp.json", "servers", {"type": "stdio"},
               ({"type": "http"}, "url")),
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers", {}, None),
    "zed": (".config/zed/settings.json", "context_servers", {}, ({}, "url")),
}
#: the apps that expand ``${env:NAME}`` themselves (their docs say so)
BY_REFERENCE = {"cursor", "windsurf", "vscode"}


@pytest.fixture
def tokens(monkeypatch):
    monkeypatch.setenv("CONTRACT_ENV_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("CONTRACT_HEADER_TOKEN", HEADER_TOKEN)


def write_fleet(fleet_file: Path, clients: dict, secrets: str = "inline") -> dict:
    data = YAML(typ="safe").load(CONTRACT.read_text())
    data["clients"], data["secrets"] = clients, secrets
    with fleet_file.open("w") as fh:
        YAML().dump(data, fh)
    return data


def parsed(path: Path) -> dict:
    editor = editor_for("jsonc")
    return editor.get(editor.parse(path.read_text()), ())


def warnings_of(app: str, err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"warning: {app}: ")]


# -- the file written, per shape ----------------------------------------------------------


@pytest.mark.parametrize("app", APPS)
def test_stdio_and_remote_servers_inline(app, taosync, home, fleet_file, tokens):
    write_fleet(fleet_file, {app: {}})
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert ENV_TOKEN not in r.both and HEADER_TOKEN not in r.both
    rel, container, stdio, remote = SHAPES[app]
    path = home / rel
    servers = parsed(path)[container]
    assert servers["local"] == {**stdio, **LOCAL, "env": {"CONTRACT_ENV_TOKEN": ENV_TOKEN,
                                                          "LOG_LEVEL": "debug"}}
    if remote is None:  # Claude Desktop: remote servers go through its Connectors UI
        assert "remote" not in servers
        assert any("MCP server 'remote' is remote (http)" in w and "Connectors" in w
                   and "left it out" in w for w in warnings_of(app, r.err)), r.err
    else:
        fixed, url_field = remote
        assert servers["remote"] == {**fixed, url_field: REMOTE_URL, "headers": {
            "Authorization": f"Bearer {HEADER_TOKEN}", "X-Team": "platform"}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds a secret
    assert TEST_KEY not in path.read_text()  # no gateway key: the app takes none


@pytest.mark.parametrize("app", APPS)
def test_secrets_by_reference(app, taosync, home, fleet_file, tokens):
    write_fleet(fleet_file, {app: {}}, secrets="reference")
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    rel, container, _, remote = SHAPES[app]
    path = home / rel
    servers, text = parsed(path)[container], path.read_text()
    warned = warnings_of(app, r.err)
    if app in BY_REFERENCE:  # the app expands ${env:NAME} itself: nothing secret on disk
        assert servers["local"]["env"]["CONTRACT_ENV_TOKEN"] == "${env:CONTRACT_ENV_TOKEN}"
        assert servers["remote"]["headers"]["Authorization"] == \
            "Bearer ${env:CONTRACT_HEADER_TOKEN}"
        assert ENV_TOKEN not in text and HEADER_TOKEN not in text
        assert not [w for w in warned if "secrets: reference" in w], warned
    else:  # it expands nothing: inline, each secret named in a warning, the file 0600
        assert servers["local"]["env"]["CONTRACT_ENV_TOKEN"] == ENV_TOKEN
        assert any("MCP secret CONTRACT_ENV_TOKEN of server 'local'" in w for w in warned)
        if remote is not None:
            assert any("MCP secret Authorization of server 'remote'" in w for w in warned)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("app", APPS)
def test_cwd_is_left_out_with_a_warning(app, taosync, home, fleet_file, tokens):
    """None of the five documents a working-directory field for a server."""
    data = write_fleet(fleet_file, {app: {}})
    data["mcp_servers"]["local"]["cwd"] = "/srv/mcp"
    with fleet_file.open("w") as fh:
        YAML().dump(data, fh)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    rel, container, _, _ = SHAPES[app]
    assert "cwd" not in parsed(home / rel)[container]["local"]
    assert any("sets cwd" in w and "left it out" in w for w in warnings_of(app, r.err))


# -- the user's own file, byte for byte ---------------------------------------------------

#: app → a user's own file: other servers, other settings, and comments (and trailing
#: commas, in Zed's settings) where the app's syntax has them
USER_FILES = {
    "cursor": '{\n  "mcpServers": {\n    "mine": {"command": "my-server", "args": []}\n  },'
              '\n  "someOtherKey": 1\n}\n',
    "windsurf": '{\n  "mcpServers": {\n    "mine": {"serverUrl": "https://mine.example/mcp"}'
                '\n  }\n}\n',
    "vscode": '// my MCP servers\n{\n  "inputs": [\n    {"type": "promptString", "id": "tok",'
              ' "password": true}\n  ],\n  "servers": {\n    // mine, by input\n    "mine": '
              '{"type": "stdio", "command": "my-server", "env": {"T": "${input:tok}"}}\n'
              '  }\n}\n',
    "claude-desktop": '{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": {\n    "mine":'
                      ' {"command": "my-server", "args": ["--x"]}\n  }\n}\n',
    "zed": '// Zed settings\n{\n  "theme": "One Dark", // my theme\n  "context_servers": {\n'
           '    "mine": {"command": "my-server", "args": []}, // my own server\n  },\n'
           '  "vim_mode": true,\n}\n',
}


@pytest.mark.parametrize("app", APPS)
def test_the_users_file_is_kept_and_destroy_gives_it_back(app, taosync, home, fleet_file,
                                                         tokens):
    rel, container, _, _ = SHAPES[app]
    path = helpers.write(home / rel, USER_FILES[app])
    write_fleet(fleet_file, {app: {}})
    assert taosync("apply", "--no-verify").rc == 0
    doc = parsed(path)
    assert "mine" in doc[container] and "local" in doc[container]
    text = path.read_text()
    lines = iter(text.splitlines())  # every line of the user's, in order, its comment on it
    missing = [line for line in USER_FILES[app].splitlines()
               if not any(line.strip().rstrip(",") in got for got in lines)]
    assert not missing, (missing, text)
    again = taosync("apply", "--no-verify")
    assert again.rc == 0 and path.read_text() == text, "a second apply changed the file"

    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert path.read_text() == USER_FILES[app], "destroy did not give the file back"


@pytest.mark.parametrize("app", APPS)
def test_destroy_removes_a_file_taosync_created(app, taosync, home, fleet_file, tokens):
    write_fleet(fleet_file, {app: {}})
    assert taosync("apply", "--no-verify").rc == 0
    assert (home / SHAPES[app][0]).is_file()
    assert taosync("destroy", "--yes").rc == 0
    assert not (home / SHAPES[app][0]).exists()


# -- where the file is, on each OS --------------------------------------------------------

#: app → {(platform, environment): path relative to the home, or to "APPDATA"/"XDG"}
PATHS = {
    "cursor": {"linux": ".cursor/mcp.json", "darwin": ".cursor/mcp.json",
               "win32": ".cursor/mcp.json"},
    "windsurf": {p: ".codeium/windsurf/mcp_config.json" for p in ("linux", "darwin", "win32")},
    "vscode": {"linux": ".config/Code/User/mcp.json", "xdg": "XDG/Code/User/mcp.json",
               "darwin": "Library/Application Support/Code/User/mcp.json",
               "win32": "APPDATA/Code/User/mcp.json"},
    "claude-desktop": {"linux": ".config/Claude/claude_desktop_config.json",
                       "xdg": "XDG/Claude/claude_desktop_config.json",
                       "darwin": "Library/Application Support/Claude/claude_desktop_config.json",
                       "win32": "APPDATA/Claude/claude_desktop_config.json"},
    "zed": {"linux": ".config/zed/settings.json", "xdg": "XDG/zed/settings.json",
            "darwin": ".config/zed/settings.json", "win32": "APPDATA/Zed/settings.json"},
}


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("where", ["linux", "xdg", "darwin", "win32"])
def test_the_file_on_each_os(app, where, tmp_path):
    appdata, xdg = tmp_path / "Roaming", tmp_path / "xdg"
    environ = {"win32": {"APPDATA": str(appdata)}, "xdg": {"XDG_CONFIG_HOME": str(xdg)}}
    env = ClientEnv(home=tmp_path, environ=environ.get(where, {}),
                    platform="linux" if where == "xdg" else where)
    expected = PATHS[app].get(where, PATHS[app]["linux"])
    base = {"APPDATA": appdata, "XDG": xdg}.get(expected.split("/")[0])
    want = base / expected.split("/", 1)[1] if base else tmp_path / expected
    client = registry.get(app)
    (patch,) = client.render(helpers.fleet(), helpers.KEY, env)
    assert patch.path == want
    assert client.locations(env) == ([want.parent], [])


# -- a gateway slot is refused, located ---------------------------------------------------


@pytest.mark.parametrize("app", APPS)
def test_a_gateway_slot_is_a_located_error(app, home, fleet_file, tokens):
    write_fleet(fleet_file, {app: {"model": "main"}})
    line = next(i for i, text in enumerate(fleet_file.read_text().splitlines(), 1)
                if "model: main" in text)
    r = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                        str(fleet_file), "apply", "--no-verify"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert f"{fleet_file}:{line}:" in r.stderr and f"clients.{app}.model" in r.stderr
    assert "takes no custom gateway, only MCP servers from its files" in r.stderr
    assert not (home / SHAPES[app][0]).exists(), "bad input wrote a file"


# -- verify: nothing to probe, the entries still compared ----------------------------------


def test_verify_has_nothing_to_probe_and_never_claims_a_pass(taosync, home, fleet_file,
                                                             tokens):
    write_fleet(fleet_file, {app: {} for app in APPS})
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("verify", "--stub", "--json")
    assert r.rc == 0, r.both
    report = json.loads(r.out)
    assert report["results"] == [] and report["passed"] == 0
    assert [u["client"] for u in report["unprobed"]] == list(APPS)
    assert all("nothing to probe" in u["message"] for u in report["unprobed"])
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.both
    assert "nothing to probe: Cursor takes no custom gateway" in r.out
    assert "pass" not in r.out and "nothing to verify" not in r.out


def test_verify_probes_the_gateway_client_beside_an_mcp_app(taosync, home, fleet_file,
                                                            tokens):
    write_fleet(fleet_file, {"aider": {}, "cursor": {}})
    assert taosync("apply", "--no-verify").rc == 0
    report = json.loads(taosync("verify", "--stub", "--json").out)
    assert {c for r in report["results"] for c in r["clients"]} == {"aider"}
    assert [u["client"] for u in report["unprobed"]] == ["cursor"]


def test_verify_compares_the_mcp_entries_with_the_fleet(taosync, home, fleet_file, tokens):
    write_fleet(fleet_file, {"cursor": {}})
    assert taosync("apply", "--no-verify").rc == 0
    path = home / SHAPES["cursor"][0]
    helpers.edit_json(path, lambda d: d["mcpServers"]["local"].update(command="other"))
    report = json.loads(taosync("verify", "--stub", "--json").out)
    assert [d["client"] for d in report["drift"]] == ["cursor"]
    assert "mcpServers.local" in report["drift"][0]["message"]
    path.unlink()
    r = taosync("verify", "--stub")
    assert r.rc == 1 and "~/.cursor/mcp.json does not exist" in r.err, r.both


def test_an_app_with_no_server_to_write_needs_no_file(taosync, home, fleet_file, tokens):
    data = write_fleet(fleet_file, {"zed": {}})
    data["mcp_servers"] = {"remote": data["mcp_servers"]["remote"]}
    data["clients"] = {"claude-desktop": {}}  # its file takes no remote server
    with fleet_file.open("w") as fh:
        YAML().dump(data, fh)
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.both
    assert not (home / SHAPES["claude-desktop"][0]).exists()


# -- import --------------------------------------------------------------------------------


def test_import_of_an_app_alone_says_it_needs_a_gateway_client(taosync, home, fleet_file,
                                                               tokens):
    write_fleet(fleet_file, {"cursor": {}})
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("import", "--from", "cursor")
    assert r.rc == 1
    assert "cursor takes only MCP servers: import them with a gateway client" in r.both


def test_import_reads_references_back_as_reference_mode(taosync, home, fleet_file, tokens):
    write_fleet(fleet_file, {"aider": {}, "vscode": {}}, secrets="reference")
    assert taosync("apply", "--no-verify").rc == 0
    _, got = helpers.imported(taosync, "--from", "aider", "--from", "vscode")
    fleet = got["fleet"]
    assert fleet["clients"]["vscode"] == {"secrets": "reference"}
    assert fleet["mcp_servers"]["local"]["env"]["CONTRACT_ENV_TOKEN"] == \
        "${env:CONTRACT_ENV_TOKEN}"
    assert fleet["mcp_servers"]["remote"]["headers"]["Authorization"] == \
        "Bearer ${env:CONTRACT_HEADER_TOKEN}"


def test_each_module_cites_its_sources():
    for app in APPS:
        module = registry.get(app)
        assert module.INSTALL is None and module.GATEWAY is False and module.BINARY == ""
        assert module.SOURCES and all(url.startswith("https://") and what
                                      for url, what in module.SOURCES)
        assert all(url in (module.__doc__ or "") or ":data:`SOURCES`" in module.__doc__
                   for url, _ in module.SOURCES)


def test_no_client_file_is_left_readable_by_others(taosync, home, fleet_file, tokens):
    write_fleet(fleet_file, {app: {} for app in APPS})
    assert taosync("apply", "--no-verify").rc == 0
    for dirpath, _, files in os.walk(home):
        for name in files:
            path = Path(dirpath, name)
            text = path.read_bytes()
            if ENV_TOKEN.encode() in text or HEADER_TOKEN.encode() in text:
                assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_an_app_given_no_server_is_told_so(home, fleet_file, tokens):
    """An info line (with -v, as for a client with no MCP), through a real process: the
    no-op path prints the same line the full one did."""
    data = write_fleet(fleet_file, {"cursor": {}, "zed": {"mcp": False}})
    del data["mcp_servers"]
    with fleet_file.open("w") as fh:
        YAML().dump(data, fh)
    for _ in range(2):  # the full path, then the no-op answer
        r = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                            str(fleet_file), "apply", "--no-verify", "-v"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert ("info: cursor, zed take only MCP servers and get none (no mcp_servers, or "
                "mcp: false); nothing is written for them") in r.stdout + r.stderr
    assert not (home / ".cursor").exists()
