"""Client renderers: exact patches and probes for each client, from the example fleet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from taosync.clients import claude_code, cline, codex, continue_
from taosync.clients.base import ClientEnv
from taosync.clients.registry import all as all_clients
from taosync.schema_build import Fleet
from taosync.formats.base import Match
from clients.helpers import KEY, RAW, ROOT, SONNET, V1, by_path, fleet



def test_registry_and_interface():
    from taosync.clients import registry

    mods = all_clients()
    assert list(mods) == list(registry.CLIENTS)  # the shipped list, in its order
    assert all(mod.ID == client_id for client_id, mod in mods.items())
    for mod in mods.values():
        assert mod.TARGETS and all(isinstance(t, str) for t in mod.TARGETS)
        if mod.INSTALL:  # proven by its binary
            assert re.search(r"\d+\.\d+\.\d+", mod.__doc__), "docstring names the client version"
        else:  # an app that cannot run here: written from the docs it cites
            assert mod.SOURCES and "docs" in mod.__doc__, mod.ID


def test_renderers_do_no_io_and_leave_home_empty(clients_env, tmp_path):
    for mod in all_clients().values():
        mod.render(fleet(), KEY, clients_env)
        mod.probes(fleet(), KEY, clients_env)
    assert list(tmp_path.iterdir()) == []
    assert clients_env.warnings == []


# -- Claude Code ---------------------------------------------------------------------


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


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_dot_dirs_same_on_every_platform(tmp_path, platform):
    env = ClientEnv(home=tmp_path, environ={}, platform=platform)
    f = fleet(clients__cline={"editors": []})
    expected = {  # per client (these clients; one added later has tests of its own)
        "claude-code": {".claude/settings.json", ".claude.json"},
        "codex": {".codex/config.toml", ".codex/auth.json", ".codex/deep.config.toml",
                  ".codex/batch.config.toml"},
        "cline": {".cline/data/settings/providers.json",
                  ".cline/data/settings/cline_mcp_settings.json",
                  ".cline/data/globalState.json", ".cline/data/secrets.json"},
        "continue": {".continue/config.yaml"},
        "mistral-vibe": {".vibe/config.toml", ".vibe/.env"},
        # gptme follows platformdirs' config directory, not a dot dir
        "gptme": {f"{APP_DATA[platform]}/gptme/config.toml",
                  f"{APP_DATA[platform]}/gptme/config.local.toml"},
        "aider": {".aider.conf.yml"},
        "shell-gpt": {".config/shell_gpt/.sgptrc"},
        # llm's directory is the platform's app-data one, not a dot dir
        "llm": {f"{LLM_DIRS[platform]}/io.datasette.llm/{name}"
                for name in ("extra-openai-models.yaml", "keys.json", "default_model.txt")},
        "qwen-code": {".qwen/settings.json"},
        "gemini-cli": {".gemini/settings.json", ".gemini/.env"},
        "opencode": {".config/opencode/opencode.json"},  # xdg-basedir everywhere
        "kilo": {".config/kilo/kilo.json"},
    }
    mods = all_clients()
    paths = {client_id: {p.path.relative_to(tmp_path).as_posix()
                         for p in mods[client_id].render(f, KEY, env)}
             for client_id in expected}
    assert paths == expected


APP_DATA = {"linux": ".config", "darwin": "Library/Application Support",
            "win32": "AppData/Local/gptme"}


LLM_DIRS = {"linux": ".config", "darwin": "Library/Application Support",
            "win32": "AppData/Roaming"}


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
    """TARGETS is each client's own list of files; the "Files taosync owns" page
    (docs/clients.md) must name every one of them."""
    section = (Path(__file__).resolve().parent.parent / "docs" / "clients.md").read_text()
    assert section.startswith("# Files taosync owns\n")
    for name, mod in all_clients().items():
        for target in mod.TARGETS:
            path = target.split(" (")[0].split(":")[0].split(" + ")[0].strip()
            leaf = re.sub(r"<[^>]+>", "", path).rsplit("/", 1)[-1]
            assert leaf and leaf in section, f"{name}: {path} missing from docs/clients.md"


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


def test_readme_files_table_is_generated_from_the_client_modules():
    """The "Files taosync owns" table (docs/clients.md) is each client module's
    OWNED_FILES, in registry order: regenerate with ``python -m taosync.dev regenerate``."""
    from taosync.clients import readme

    page = readme.holding("files-owned")
    assert page == readme.DOCS / "clients.md"
    assert readme.current(page.read_text(encoding="utf-8")) == readme.table(), \
        "the files table drifted: run `python -m taosync.dev regenerate`"
    for mod in all_clients().values():
        assert mod.OWNED_FILES and mod.OWNED_FILES[0][0], f"{mod.ID}: first row names it"


def test_every_client_declares_the_contract():
    """What each client module declares (clients/base.py), and nothing outside
    ``taosync/clients`` spells a client id."""
    import subprocess

    for client_id, mod in all_clients().items():
        assert mod.ID == client_id
        assert mod.TITLE and mod.SUMMARY and "\n" not in mod.SUMMARY
        assert all(var.isupper() for var in mod.LOCATION_VARS)
        assert all(callable(getattr(mod, fn)) for fn in ("render", "probes", "on_disk",
                                                        "observe", "locations"))
        assert {o.name for o in mod.OPTIONS}.isdisjoint({"enabled", "secrets", "mcp",
                                                         "gateway"})
    root = Path(__file__).resolve().parent.parent / "taosync"
    ids = "|".join(re.escape(i) for i in all_clients())
    found = subprocess.run(["grep", "-rnE", f"[\"']({ids})[\"']", str(root), "--include=*.py"],
                           capture_output=True, text=True).stdout.splitlines()
    outside = [line for line in found if not line.startswith(str(root / "clients") + "/")]
    assert outside == []
