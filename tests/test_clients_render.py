"""Client renderers: exact patches and probes for each client, from the example fleet."""

from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from taosync.clients import claude_code, cline, codex, continue_
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.engine.patch import Patch
from taosync.clients.registry import all as all_clients
from taosync.fleet.model import Fleet
from taosync.fleet.secrets import Secret
from taosync.formats.base import Match

ROOT = "https://taotoken.net/api"
V1 = ROOT + "/v1"
SONNET, MINI, R1, LLAMA = ("claude-sonnet-4-20250514", "gpt-4o-mini", "nvidia/deepseek-r1",
                           "intel/llama-7b")
KEY = Secret("sk-test-0123456789abcdef")
RAW = KEY.reveal()
EXAMPLE = YAML(typ="safe").load((Path(__file__).parents[1] / "fleet.yaml").read_text())
ROUTER_ENV = {"TAOTOKEN_BASE_URL": ROOT, "TAOTOKEN_API_KEY": RAW, "TAOTOKEN_MODEL": SONNET}
ROUTER_ARGS = ["-y", "@taotoken/mcp-router"]


def fleet(**changes) -> Fleet:
    """The example fleet with top-level keys replaced; ``clients__codex=…`` sets one client."""
    data = copy.deepcopy(EXAMPLE)
    for name, value in changes.items():
        if name.startswith("gateway__"):
            data["gateway"][name[9:]] = value
        elif name.startswith("clients__"):
            data["clients"][name[9:].replace("_", "-")] = value
        else:
            data[name] = value
    return Fleet.model_validate(data)


@pytest.fixture
def clients_env(tmp_path):
    return ClientEnv(home=tmp_path, environ={}, platform="linux")


def by_path(patches: list[Patch]) -> dict[Path, Patch]:
    paths = [p.path for p in patches]
    assert len(paths) == len(set(paths)), "one patch per file"
    return {p.path: p for p in patches}


def test_registry_and_interface():
    mods = all_clients()
    assert set(mods) == {"claude-code", "codex", "cline", "continue"}
    for mod in mods.values():
        assert mod.TARGETS and all(isinstance(t, str) for t in mod.TARGETS)
        assert re.search(r"\d+\.\d+\.\d+", mod.__doc__), "docstring names the client version"


def test_renderers_do_no_io_and_leave_home_empty(clients_env, tmp_path):
    for mod in all_clients().values():
        mod.render(fleet(), KEY, clients_env)
        mod.probes(fleet(), KEY, clients_env)
    assert list(tmp_path.iterdir()) == []
    assert clients_env.warnings == []


# -- Claude Code ---------------------------------------------------------------------


def test_claude_inline(clients_env, tmp_path):
    patches = by_path(claude_code.render(fleet(), KEY, clients_env))
    settings = patches[tmp_path / ".claude" / "settings.json"]
    assert settings.format == "json" and settings.client == "claude-code"
    assert settings.values == {
        ("env", "ANTHROPIC_BASE_URL"): ROOT,
        ("env", "ANTHROPIC_MODEL"): SONNET,
        ("env", "ANTHROPIC_DEFAULT_SONNET_MODEL"): SONNET,
        ("env", "ANTHROPIC_DEFAULT_HAIKU_MODEL"): MINI,
        ("env", "ANTHROPIC_DEFAULT_OPUS_MODEL"): R1,
        ("env", "ANTHROPIC_AUTH_TOKEN"): KEY,
    }
    assert isinstance(settings.values[("env", "ANTHROPIC_AUTH_TOKEN")], Secret)
    state = patches[tmp_path / ".claude.json"]
    assert state.format == "json" and state.secret  # the router's env holds the key
    assert state.values == {("mcpServers", "taotoken-router"): {
        "type": "stdio", "command": "npx", "args": ROUTER_ARGS, "env": ROUTER_ENV}}
    assert len(patches) == 2 and clients_env.warnings == []


def test_claude_slots_unset_and_sonnet_override(clients_env):
    values = claude_code.render(fleet(clients__claude_code={"sonnet": "fast"}), KEY,
                                clients_env)[0].values
    assert values[("env", "ANTHROPIC_MODEL")] == SONNET  # default_route
    assert values[("env", "ANTHROPIC_DEFAULT_SONNET_MODEL")] == MINI
    assert ("env", "ANTHROPIC_DEFAULT_HAIKU_MODEL") not in values
    assert ("env", "ANTHROPIC_DEFAULT_OPUS_MODEL") not in values


def test_claude_headers(clients_env):
    f = fleet(gateway__headers={"X-Team": "core", "X-Trace": "1"})
    values = claude_code.render(f, KEY, clients_env)[0].values
    assert values[("env", "ANTHROPIC_CUSTOM_HEADERS")] == "X-Team: core\nX-Trace: 1"
    (probe, *_) = claude_code.probes(f, KEY, clients_env)
    assert probe.headers == (("X-Team", "core"), ("X-Trace", "1"))


@pytest.mark.parametrize("ref, helper", [
    ("${env:TAOTOKEN_API_KEY}", "printenv TAOTOKEN_API_KEY"),
    ("${cmd:pass show 'tao token'}", "pass show 'tao token'"),
    ("${shell:pass show tao | head -1}", "pass show tao | head -1"),
])
def test_claude_reference_helper(clients_env, ref, helper):
    f = fleet(gateway__key=ref, secrets="reference")
    settings, _ = claude_code.render(f, KEY, clients_env)
    assert settings.values[("apiKeyHelper",)] == helper
    assert ("env", "ANTHROPIC_AUTH_TOKEN") not in settings.values
    assert not any(isinstance(v, Secret) for v in settings.values.values())
    assert {p.auth for p in claude_code.probes(f, KEY, clients_env)} == {"both"}


def test_claude_reference_file_helper_expands_home(clients_env, tmp_path):
    f = fleet(gateway__key="${file:~/my keys/tao}", secrets="reference")
    settings, _ = claude_code.render(f, KEY, clients_env)
    expected = "cat " + shlex.quote(str(tmp_path / "my keys" / "tao"))
    assert settings.values[("apiKeyHelper",)] == expected


def test_claude_reference_per_client_and_literal_fallback(clients_env):
    f = fleet(clients__claude_code={"secrets": "reference", "mcp": False})  # fleet: inline
    assert claude_code.render(f, KEY, clients_env)[0].values[("apiKeyHelper",)] == \
        "printenv TAOTOKEN_API_KEY"
    f = fleet(gateway__key="sk-literal-0123456789abcdef", secrets="reference")
    settings, _ = claude_code.render(f, KEY, clients_env)
    assert settings.values[("env", "ANTHROPIC_AUTH_TOKEN")] == KEY
    assert ("apiKeyHelper",) not in settings.values
    (warning,) = clients_env.warnings
    assert "literal" in warning and "inline" in warning and "sk-literal" not in warning
    assert {p.auth for p in claude_code.probes(f, KEY, clients_env)} == {"bearer"}


def test_claude_reference_warns_when_mcp_holds_key(clients_env):
    f = fleet(secrets="reference")
    claude_code.render(f, KEY, clients_env)
    assert any("gateway.key" in w and ".claude.json" in w for w in clients_env.warnings)


def test_claude_mcp_http_sse_and_cwd(clients_env):
    f = fleet(mcp_servers={
        "remote": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer t"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "cwd": "/srv"},
    })
    _, state = claude_code.render(f, KEY, clients_env)
    assert state.values == {
        ("mcpServers", "remote"): {"type": "http", "url": "https://mcp.example/mcp",
                                   "headers": {"Authorization": "Bearer t"}},
        ("mcpServers", "old"): {"type": "sse", "url": "https://mcp.example/sse"},
        ("mcpServers", "local"): {"type": "stdio", "command": "srv", "args": [], "env": {}},
    }
    assert not state.secret
    (warning,) = clients_env.warnings
    assert "'local'" in warning and "cwd" in warning


def test_claude_no_mcp_patch_when_disabled_or_empty(clients_env):
    assert len(claude_code.render(fleet(clients__claude_code={"mcp": False}), KEY,
                                  clients_env)) == 1
    assert len(claude_code.render(fleet(mcp_servers={}), KEY, clients_env)) == 1


def test_claude_config_dir(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")},
                    sandboxed=True)
    paths = [p.path for p in claude_code.render(fleet(), KEY, env)]
    assert paths == [tmp_path / "cc" / "settings.json", tmp_path / "cc" / ".claude.json"]
    assert env.warnings == []


def test_claude_config_dir_outside_sandbox_ignored(tmp_path):
    home = tmp_path / "home"
    env = ClientEnv(home=home, environ={"CLAUDE_CONFIG_DIR": str(tmp_path / "real")},
                    sandboxed=True)
    paths = [p.path for p in claude_code.render(fleet(), KEY, env)]
    assert paths == [home / ".claude" / "settings.json", home / ".claude.json"]
    (warning,) = env.warnings
    assert "CLAUDE_CONFIG_DIR" in warning and "outside" in warning


def test_claude_probes(clients_env):
    probes = claude_code.probes(fleet(), KEY, clients_env)
    assert probes == [
        ProbeSpec("claude-code", route, model, "anthropic-messages", ROOT,
                  ROOT + "/v1/messages?beta=true", "bearer")
        for route, model in (("balanced", SONNET), ("fast", MINI), ("deep", R1))
    ]
    # model ids in slots (not routes) → route None; one probe per distinct model
    f = fleet(clients__claude_code={"model": SONNET, "sonnet": SONNET, "haiku": "balanced"})
    assert [(p.route, p.model) for p in claude_code.probes(f, KEY, clients_env)] == [
        (None, SONNET)]


# -- /v1 rule and overrides ----------------------------------------------------------


def test_url_rule_and_overrides(clients_env):
    base = fleet()
    assert claude_code.render(base, KEY, clients_env)[0].values[
        ("env", "ANTHROPIC_BASE_URL")] == ROOT
    assert codex.render(base, KEY, clients_env)[0].values[
        ("model_providers", "taotoken", "base_url")] == V1
    assert cline.render(base, KEY, clients_env)[0].values[
        ("providers", "openai-compatible", "settings", "baseUrl")] == V1
    assert continue_.render(base, KEY, clients_env)[0].values[
        ("models", Match("name", SONNET), "apiBase")] == V1

    f = fleet(gateway__anthropic_base_url="https://a.example/anthropic",
              gateway__openai_base_url="https://o.example/openai")
    assert claude_code.render(f, KEY, clients_env)[0].values[
        ("env", "ANTHROPIC_BASE_URL")] == "https://a.example/anthropic"
    assert claude_code.probes(f, KEY, clients_env)[0].url == \
        "https://a.example/anthropic/v1/messages?beta=true"
    assert codex.render(f, KEY, clients_env)[0].values[
        ("model_providers", "taotoken", "base_url")] == "https://o.example/openai"
    assert codex.probes(f, KEY, clients_env)[0].url == "https://o.example/openai/responses"
    assert cline.probes(f, KEY, clients_env)[0].url == \
        "https://o.example/openai/chat/completions"
    assert continue_.probes(f, KEY, clients_env)[0].base_url == "https://o.example/openai"


# -- Codex ---------------------------------------------------------------------------


PROV = ("model_providers", "taotoken")


def test_codex_inline(clients_env, tmp_path):
    patches = by_path(codex.render(fleet(), KEY, clients_env))
    home = tmp_path / ".codex"
    config = patches[home / "config.toml"]
    assert config.format == "toml" and config.secret
    assert config.values == {
        ("model",): MINI,
        ("model_provider",): "taotoken",
        PROV + ("base_url",): V1,
        PROV + ("wire_api",): "responses",
        PROV + ("requires_openai_auth",): True,
        ("mcp_servers", "taotoken-router"): {"command": "npx", "args": ROUTER_ARGS,
                                             "env": ROUTER_ENV},
    }
    # the provider's display name is only filled in when missing: the user may rename it
    assert config.skeleton == {PROV + ("name",): "taosync gateway"}
    auth = patches[home / "auth.json"]
    assert auth.format == "json" and auth.secret
    assert auth.values == {("auth_mode",): "apikey", ("OPENAI_API_KEY",): KEY}
    assert patches[home / "deep.config.toml"].values == {
        ("model",): R1, ("model_provider",): "taotoken"}
    assert patches[home / "batch.config.toml"].values == {
        ("model",): LLAMA, ("model_provider",): "taotoken"}
    assert len(patches) == 4 and clients_env.warnings == []


def test_codex_reference_env_key(clients_env, tmp_path):
    f = fleet(secrets="reference", clients__codex={"model": "fast", "provider_id": "gw",
                                                   "mcp": False})
    patches = codex.render(f, KEY, clients_env)
    assert [p.path for p in patches] == [tmp_path / ".codex" / "config.toml"]
    assert patches[0].values == {
        ("model",): MINI, ("model_provider",): "gw",
        ("model_providers", "gw", "base_url"): V1,
        ("model_providers", "gw", "wire_api"): "responses",
        ("model_providers", "gw", "env_key"): "TAOTOKEN_API_KEY",
    }
    assert not patches[0].secret and clients_env.warnings == []


@pytest.mark.parametrize("ref", ["${file:~/k}", "${cmd:pass show tao}", "${shell:echo k}",
                                 "sk-literal-0123456789abcdef"])
def test_codex_reference_fallback_inline(clients_env, ref):
    f = fleet(gateway__key=ref, secrets="reference")
    patches = codex.render(f, KEY, clients_env)
    assert patches[0].values[PROV + ("requires_openai_auth",)] is True
    assert PROV + ("env_key",) not in patches[0].values
    assert patches[1].values[("OPENAI_API_KEY",)] == KEY
    (warning,) = clients_env.warnings
    assert "inline" in warning and "auth.json" in warning and "sk-literal" not in warning


def test_codex_warns_about_codex_api_key(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CODEX_API_KEY": "x"})
    codex.render(fleet(), KEY, env)
    assert any("CODEX_API_KEY" in w for w in env.warnings)


def test_codex_headers_and_mcp_shapes(clients_env):
    f = fleet(gateway__headers={"X-Team": "core"}, mcp_servers={
        "local": {"command": "srv", "cwd": "/srv"},
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
    })
    values = codex.render(f, KEY, clients_env)[0].values
    assert values[PROV + ("http_headers",)] == {"X-Team": "core"}
    assert values[("mcp_servers", "local")] == {"command": "srv", "cwd": "/srv"}
    assert values[("mcp_servers", "remote")] == {"url": "https://mcp.example/mcp",
                                                 "http_headers": {"A": "b"}}
    assert values[("mcp_servers", "old")] == {"url": "https://mcp.example/sse"}
    (warning,) = clients_env.warnings
    assert "'old'" in warning and "sse" in warning
    assert codex.probes(f, KEY, clients_env)[0].headers == (("X-Team", "core"),)


def test_codex_profile_names_sanitized(clients_env, tmp_path):
    f = fleet(clients__codex={"profiles": ["deep", R1, "nvidia.deepseek-r1", "deep"]})
    patches = codex.render(f, KEY, clients_env)
    profiles = [p for p in patches if p.path.name.endswith(".config.toml")
                and p.path.name != "config.toml"]
    assert [p.path for p in profiles] == [tmp_path / ".codex" / "deep.config.toml",
                                          tmp_path / ".codex" / "nvidia-deepseek-r1.config.toml"]
    assert profiles[1].values[("model",)] == R1
    assert any("codex -p nvidia-deepseek-r1" in w for w in clients_env.warnings)
    assert any("'nvidia.deepseek-r1'" in w and "skipped" in w for w in clients_env.warnings)


def test_codex_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CODEX_HOME": str(tmp_path / "cx")}, sandboxed=True)
    assert {p.path.parent for p in codex.render(fleet(), KEY, env)} == {tmp_path / "cx"}
    outside = ClientEnv(home=tmp_path / "h", environ={"CODEX_HOME": "/etc/codex"},
                        sandboxed=True)
    assert {p.path.parent for p in codex.render(fleet(), KEY, outside)} == {
        tmp_path / "h" / ".codex"}
    assert any("CODEX_HOME" in w for w in outside.warnings)


def test_codex_probes(clients_env):
    assert codex.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("codex", route, model, "openai-responses", V1, V1 + "/responses", "bearer")
        for route, model in (("fast", MINI), ("deep", R1), ("batch", LLAMA))
    ]
    f = fleet(clients__codex={"model": MINI, "profiles": ["fast", LLAMA]})
    assert [(p.route, p.model) for p in codex.probes(f, KEY, clients_env)] == [
        (None, MINI), (None, LLAMA)]


# -- Cline ---------------------------------------------------------------------------


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
    assert providers.values[P + ("settings", "headers")] == {"X-Team": "core"}
    assert providers.values[P + ("settings", "apiKey")] == KEY
    assert providers.values[P + ("settings", "model")] == R1
    (warning,) = clients_env.warnings
    assert "reference" in warning and "inline" in warning
    f = fleet(gateway__headers={"X-Team": "core"})
    state = by_path(cline.render(f, KEY, clients_env))[
        tmp_path / ".cline" / "data" / "globalState.json"]
    assert state.values[("openAiHeaders",)] == {"X-Team": "core"}


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


def E(model):
    return ("models", Match("name", model))


M = ("mcpServers", Match("name", "taotoken-router"))


def test_continue_inline(clients_env, tmp_path):
    (config,) = continue_.render(fleet(), KEY, clients_env)
    assert config.path == tmp_path / ".continue" / "config.yaml"
    assert config.format == "yaml" and config.secret
    assert config.skeleton == {("name",): "Local Config", ("version",): "1.0.0",
                               ("schema",): "v1"}
    assert config.values == {
        E(SONNET) + ("provider",): "openai", E(SONNET) + ("model",): SONNET,
        E(SONNET) + ("apiBase",): V1, E(SONNET) + ("apiKey",): KEY,
        E(SONNET) + ("roles",): ["chat", "edit"],
        E(MINI) + ("provider",): "openai", E(MINI) + ("model",): MINI,
        E(MINI) + ("apiBase",): V1, E(MINI) + ("apiKey",): KEY,
        E(MINI) + ("roles",): ["autocomplete"],
        M + ("command",): "npx", M + ("args",): ROUTER_ARGS, M + ("env",): ROUTER_ENV,
    }
    assert clients_env.warnings == []


def test_continue_default_roles_reference_headers(clients_env, tmp_path):
    f = fleet(secrets="reference", gateway__headers={"X-Team": "core"}, mcp_servers={},
              clients__continue={"secret_name": "TAO_KEY"})
    config, dotenv = continue_.render(f, KEY, clients_env)
    assert config.values == {
        E(SONNET) + ("provider",): "openai", E(SONNET) + ("model",): SONNET,
        E(SONNET) + ("apiBase",): V1, E(SONNET) + ("apiKey",): "${{ secrets.TAO_KEY }}",
        E(SONNET) + ("roles",): ["chat", "edit", "apply", "summarize"],
        E(SONNET) + ("requestOptions", "headers"): {"X-Team": "core"},
    }
    assert not config.secret
    assert dotenv.path == tmp_path / ".continue" / ".env"
    assert dotenv.format == "dotenv" and dotenv.values == {("TAO_KEY",): KEY}


def test_continue_roles_in_canonical_order(clients_env):
    f = fleet(clients__continue={"roles": {"summarize": "fast", "apply": "fast",
                                           "chat": "fast", "embed": "batch"}})
    values = continue_.render(f, KEY, clients_env)[0].values
    assert values[E(MINI) + ("roles",)] == ["chat", "apply", "summarize"]
    assert values[E(LLAMA) + ("roles",)] == ["embed"]
    assert [(p.route, p.model) for p in continue_.probes(f, KEY, clients_env)] == [
        ("fast", MINI), ("batch", LLAMA)]


def test_continue_mcp_shapes(clients_env):
    f = fleet(mcp_servers={
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "cwd": "/srv"},
    })
    values = continue_.render(f, KEY, clients_env)[0].values
    mcp = {k: v for k, v in values.items() if k[0] == "mcpServers"}

    def m(name):
        return ("mcpServers", Match("name", name))

    assert mcp == {
        m("remote") + ("url",): "https://mcp.example/mcp",
        m("remote") + ("type",): "streamable-http",
        m("remote") + ("requestOptions", "headers"): {"A": "b"},
        m("old") + ("url",): "https://mcp.example/sse", m("old") + ("type",): "sse",
        m("local") + ("command",): "srv", m("local") + ("args",): [],
        m("local") + ("cwd",): "/srv",
    }


def test_continue_global_dir(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CONTINUE_GLOBAL_DIR": str(tmp_path / "c")},
                    sandboxed=True)
    f = fleet(secrets="reference")
    assert [p.path for p in continue_.render(f, KEY, env)] == [
        tmp_path / "c" / "config.yaml", tmp_path / "c" / ".env"]
    outside = ClientEnv(home=tmp_path / "h", environ={"CONTINUE_GLOBAL_DIR": "/srv/c"},
                        sandboxed=True)
    assert continue_.render(fleet(), KEY, outside)[0].path == \
        tmp_path / "h" / ".continue" / "config.yaml"
    assert any("CONTINUE_GLOBAL_DIR" in w for w in outside.warnings)


def test_continue_probes(clients_env):
    assert continue_.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("continue", route, model, "openai-chat", V1, V1 + "/chat/completions",
                  "bearer")
        for route, model in (("balanced", SONNET), ("fast", MINI))
    ]


# -- platforms -----------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_dot_dirs_same_on_every_platform(tmp_path, platform):
    env = ClientEnv(home=tmp_path, environ={}, platform=platform)
    f = fleet(clients__cline={"editors": []})
    paths = {p.path.relative_to(tmp_path).as_posix()
             for mod in all_clients().values() for p in mod.render(f, KEY, env)}
    assert paths == {
        ".claude/settings.json", ".claude.json",
        ".codex/config.toml", ".codex/auth.json", ".codex/deep.config.toml",
        ".codex/batch.config.toml",
        ".cline/data/settings/providers.json", ".cline/data/settings/cline_mcp_settings.json",
        ".cline/data/globalState.json", ".cline/data/secrets.json",
        ".continue/config.yaml",
    }


def test_no_key_in_warnings(tmp_path):
    env = ClientEnv(home=tmp_path / "h", sandboxed=True, environ={
        "CODEX_HOME": "/x", "CODEX_API_KEY": "y"})
    f = fleet(secrets="reference", gateway__key="sk-literal-0123456789abcdef",
              mcp_servers={"s": {"command": "x", "cwd": "/"}, "t": {"url": "http://h",
                                                                    "transport": "sse"}})
    for mod in all_clients().values():
        mod.render(f, KEY, env)
    assert env.warnings
    assert not any(RAW in w or "sk-literal" in w for w in env.warnings)


def test_readme_names_every_file_a_client_may_write():
    """TARGETS is each client's own list of files; README's "Files taosync owns" must
    name every one of them."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## Files taosync owns"):readme.index("## Commands")]
    for name, mod in all_clients().items():
        for target in mod.TARGETS:
            path = target.split(" (")[0].split(":")[0].split(" + ")[0].strip()
            leaf = re.sub(r"<[^>]+>", "", path).rsplit("/", 1)[-1]
            assert leaf and leaf in section, f"{name}: {path} missing from README"


def test_context_window_reaches_every_client_that_takes_one(clients_env, tmp_path):
    f = fleet()
    data = f.model_dump(by_alias=True)
    data["models"]["gpt-4o-mini"]["context_window"] = 128000
    data["models"]["nvidia/deepseek-r1"]["context_window"] = 64000
    f = Fleet.model_validate(data)
    by = by_path(codex.render(f, KEY, clients_env))
    assert by[tmp_path / ".codex/config.toml"].values[("model_context_window",)] == 128000
    assert by[tmp_path / ".codex/deep.config.toml"].values[("model_context_window",)] == 64000
    assert ("model_context_window",) not in by[tmp_path / ".codex/batch.config.toml"].values
    window = ("providers", "openai-compatible", "settings", "contextWindow")
    assert window not in cline.render(f, KEY, clients_env)[0].values
    data["models"]["claude-sonnet-4-20250514"]["context_window"] = 200000
    assert cline.render(Fleet.model_validate(data), KEY, clients_env)[0].values[window] == 200000
    cont = continue_.render(f, KEY, clients_env)[0]
    mini = ("models", Match("name", "gpt-4o-mini"))
    assert cont.values[mini + ("defaultCompletionOptions", "contextLength")] == 128000
    sonnet = ("models", Match("name", "claude-sonnet-4-20250514"))
    assert sonnet + ("defaultCompletionOptions", "contextLength") not in cont.values
