"""cline: exact patches and probes, import, the contract every client keeps, and the real
``cline`` CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import (
    KEY, KEY_ONE, R1, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, by_path, fleet, populate,
    round_trip)
from real import binary, run_real_client
from contract import check_contract
from taosync.clients import cline
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "cline", {"model": "balanced"},
                   reference_off_disk=False)


# -- render and probes

P = ("providers", "openai-compatible")
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_cline_inline(clients_env, tmp_path):
    patches = by_path(cline.render(fleet(), KEY, clients_env))
    data = tmp_path / ".cline" / "data"
    providers = patches[data / "settings" / "providers.json"]
    assert providers.format == "json" and providers.secret
    assert providers.skeleton == {("version",): 1, ("modes",): {}}
    assert providers.values == {
        ("lastUsedProvider",): "openai-compatible",
        P + ("settings", "provider"): "openai-compatible",
        P + ("settings", "apiKey"): KEY,
        P + ("settings", "model"): SONNET,
        P + ("settings", "baseUrl"): V1,
        P + ("tokenSource",): "manual",
    }
    assert list(providers.volatile) == [P + ("updatedAt",)]
    assert ISO_MS.match(providers.volatile[P + ("updatedAt",)])
    mcp = patches[data / "settings" / "cline_mcp_settings.json"]
    assert mcp.secret and mcp.values == {("mcpServers", "taotoken-router"): {"transport": {
        "type": "stdio", "command": "npx", "args": ROUTER_ARGS, "env": ROUTER_ENV}}}
    assert patches[data / "globalState.json"].values == {
        ("planModeApiProvider",): "openai", ("actModeApiProvider",): "openai",
        ("openAiBaseUrl",): V1,
        ("planModeOpenAiModelId",): SONNET, ("actModeOpenAiModelId",): SONNET,
    }
    secrets = patches[data / "secrets.json"]
    assert secrets.secret and secrets.values == {("openAiApiKey",): KEY}
    assert len(patches) == 4  # no editor installed under this home
    assert clients_env.warnings == []


def test_cline_headers_legacy_off_and_reference_fallback(clients_env, tmp_path):
    f = fleet(gateway__headers={"X-Team": "core"}, secrets="reference",
              clients__cline={"legacy": False, "mcp": False, "model": "deep"})
    (providers,) = cline.render(f, KEY, clients_env)
    assert providers.values[P + ("settings", "headers")] == {"X-Team": Secret("core")}
    assert providers.values[P + ("settings", "apiKey")] == KEY
    assert providers.values[P + ("settings", "model")] == R1
    (warning,) = clients_env.warnings
    assert "reference" in warning and "inline" in warning
    f = fleet(gateway__headers={"X-Team": "core"})
    state = by_path(cline.render(f, KEY, clients_env))[
        tmp_path / ".cline" / "data" / "globalState.json"]
    assert state.values[("openAiHeaders",)] == {"X-Team": Secret("core")}


def test_cline_mcp_remote_shapes(clients_env, tmp_path):
    (tmp_path / ".config" / "Code" / "User" / "globalStorage").mkdir(parents=True)
    f = fleet(mcp_servers={
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "cwd": "/srv", "env": {"K": "v"}},
    })
    patches = by_path(cline.render(f, KEY, clients_env))
    nested = patches[tmp_path / ".cline" / "data" / "settings" / "cline_mcp_settings.json"]
    assert nested.values == {
        ("mcpServers", "remote"): {"transport": {"type": "streamableHttp",
                                                 "url": "https://mcp.example/mcp",
                                                 "headers": {"A": "b"}}},
        ("mcpServers", "old"): {"transport": {"type": "sse", "url": "https://mcp.example/sse"}},
        ("mcpServers", "local"): {"transport": {"type": "stdio", "command": "srv", "args": [],
                                                "env": {"K": "v"}, "cwd": "/srv"}},
    }
    assert not nested.secret
    flat = patches[tmp_path / ".config" / "Code" / "User" / "globalStorage"
                   / "saoudrizwan.claude-dev" / "settings" / "cline_mcp_settings.json"]
    assert flat.format == "json"
    assert flat.values == {name: entry["transport"] for name, entry in nested.values.items()}


def test_cline_dirs(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CLINE_DIR": str(tmp_path / "cl")}, sandboxed=True)
    assert cline.render(fleet(), KEY, env)[0].path == \
        tmp_path / "cl" / "data" / "settings" / "providers.json"
    env = ClientEnv(home=tmp_path, sandboxed=True, environ={
        "CLINE_DIR": str(tmp_path / "cl"), "CLINE_DATA_DIR": str(tmp_path / "d"),
        "CLINE_MCP_SETTINGS_PATH": str(tmp_path / "mcp.json")})
    assert [p.path for p in cline.render(fleet(), KEY, env)] == [
        tmp_path / "d" / "settings" / "providers.json", tmp_path / "mcp.json",
        tmp_path / "d" / "globalState.json", tmp_path / "d" / "secrets.json"]
    assert env.warnings == []
    outside = ClientEnv(home=tmp_path / "h", sandboxed=True, environ={
        "CLINE_DIR": "/opt/cline", "CLINE_DATA_DIR": "/opt/data"})
    assert cline.render(fleet(), KEY, outside)[0].path == \
        tmp_path / "h" / ".cline" / "data" / "settings" / "providers.json"
    assert len(outside.warnings) == 2
    assert all("outside" in w for w in outside.warnings)


GS = ("User", "globalStorage")
FILE = ("saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")


@pytest.mark.parametrize("platform, app_data, environ", [
    ("linux", (".config",), {}),
    ("linux", ("xdg",), {"XDG_CONFIG_HOME": "{home}/xdg"}),
    ("darwin", ("Library", "Application Support"), {}),
    ("win32", ("AppData", "Roaming"), {}),
    ("win32", ("Roam",), {"APPDATA": "{home}/Roam"}),
])
def test_cline_editor_paths(tmp_path, platform, app_data, environ):
    environ = {k: v.format(home=tmp_path) for k, v in environ.items()}
    env = ClientEnv(home=tmp_path, environ=environ, platform=platform)
    f = fleet(clients__cline={"editors": ["code", "cursor", "code"], "legacy": False})
    paths = [p.path for p in cline.render(f, KEY, env)[2:]]
    base = tmp_path.joinpath(*app_data)
    assert paths == [base / "Code" / Path(*GS) / Path(*FILE),
                     base / "Cursor" / Path(*GS) / Path(*FILE)]


def test_cline_editor_auto_detects_installed(tmp_path):
    env = ClientEnv(home=tmp_path, environ={}, platform="darwin")
    support = tmp_path / "Library" / "Application Support"
    for app in ("Code - Insiders", "VSCodium", "Windsurf"):
        (support / app / "User" / "globalStorage").mkdir(parents=True)
    (support / "Cursor" / "User").mkdir(parents=True)  # no globalStorage: not counted
    paths = [p.path for p in cline.render(fleet(clients__cline={"legacy": False}), KEY, env)]
    assert paths[2:] == [support / app / Path(*GS) / Path(*FILE)
                         for app in ("Code - Insiders", "VSCodium", "Windsurf")]
    # no MCP → no editor files
    f = fleet(clients__cline={"legacy": False, "mcp": False})
    assert len(cline.render(f, KEY, env)) == 1


def test_cline_probes(clients_env):
    assert cline.probes(fleet(), KEY, clients_env) == [ProbeSpec(
        "cline", "balanced", SONNET, "openai-chat", V1, V1 + "/chat/completions", "bearer")]


# -- Continue ------------------------------------------------------------------------


# -- import

def test_cline_round_trip_both_stores(run, home, tmp_path, monkeypatch):
    populate(home, "cline")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["clients"] == {"cline": {"model": "main"}}
    assert fleet["routes"] == {"main": "claude-sonnet-4-20250514"}
    # both MCP files are read: the shared one (nested) and VS Code's legacy one (flat)
    assert set(fleet["mcp_servers"]) == {"docs", "search"}
    assert fleet["mcp_servers"]["search"] == {"url": "https://mcp.example.com/mcp",
                                              "headers": {"X-Client": "me"}}
    # the inactive anthropic provider is neither imported nor a conflict
    assert data["exit_code"] == 0
    assert not any(c["kind"] == "conflict" for c in data["findings"])


# -- the real client

CLINE = binary("TAOSYNC_TEST_CLINE_BIN", "cline")


@pytest.mark.skipif(CLINE is None, reason="cline (cline 3.0.65) is not installed; set "
                    "TAOSYNC_TEST_CLINE_BIN")
def test_real_cline_answers_through_the_stand_in(taosync, home, fleet_file):
    """``cline "prompt"`` with only taosync's ~/.cline files: providers.json's
    openai-compatible entry, Chat Completions under the root's /v1, the fleet's key."""
    done, seen = run_real_client(taosync, fleet_file, home, CLINE, ["Reply with OK."],
                                 "cline", {"model": "main"}, headers={"X-Team": "core"})
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert "gw-main answered through the taosync stand-in" in done.stdout
    chats = [r for r in seen if r.method == "POST"]
    assert chats and all(r.path == "/api/v1/chat/completions" and r.auth == "ok"
                         and r.body["model"] == "gw-main" for r in chats)
    assert all(r.headers.get("x-team") == "core" for r in chats)
