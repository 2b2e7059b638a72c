"""apply / plan / status / rollback on real files in a sandbox home."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import TEST_KEY, snapshot

ROOT_URL = "https://taotoken.net/api"
V1_URL = ROOT_URL + "/v1"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def load_yaml(path: Path):
    return YAML(typ="safe").load(path.read_text())


def all_text(home: Path) -> str:
    """Every byte taosync could have left anywhere under home, as text."""
    chunks = []
    for dirpath, _dirs, files in os.walk(home):
        for name in files:
            chunks.append(Path(dirpath, name).read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


# ---------------------------------------------------------------------------- shapes

def test_apply_example_into_empty_home_writes_every_client(taosync, home):
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert "applied #1" in r.out

    settings = json.loads((home / ".claude/settings.json").read_text())
    assert settings == {"env": {
        "ANTHROPIC_BASE_URL": ROOT_URL,
        "ANTHROPIC_MODEL": "claude-sonnet-4-20250514",
        "ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-20250514",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "gpt-4o-mini",
        "ANTHROPIC_DEFAULT_OPUS_MODEL": "nvidia/deepseek-r1",
        "ANTHROPIC_AUTH_TOKEN": TEST_KEY,
    }}
    claude_state = json.loads((home / ".claude.json").read_text())
    router = claude_state["mcpServers"]["taotoken-router"]
    assert router["type"] == "stdio" and router["command"] == "npx"
    assert router["env"]["TAOTOKEN_MODEL"] == "claude-sonnet-4-20250514"
    assert router["env"]["TAOTOKEN_BASE_URL"] == ROOT_URL

    config = tomllib.loads((home / ".codex/config.toml").read_text())
    assert config["model"] == "gpt-4o-mini"
    provider_id = config["model_provider"]
    assert provider_id != "openai"
    provider = config["model_providers"][provider_id]
    assert provider["base_url"] == V1_URL and provider["wire_api"] == "responses"
    assert provider["requires_openai_auth"] is True
    assert config["mcp_servers"]["taotoken-router"]["command"] == "npx"
    auth = json.loads((home / ".codex/auth.json").read_text())
    assert auth == {"auth_mode": "apikey", "OPENAI_API_KEY": TEST_KEY}
    deep = tomllib.loads((home / ".codex/deep.config.toml").read_text())
    assert deep == {"model": "nvidia/deepseek-r1", "model_provider": provider_id}
    batch = tomllib.loads((home / ".codex/batch.config.toml").read_text())
    assert batch["model"] == "intel/llama-7b"

    providers = json.loads((home / ".cline/data/settings/providers.json").read_text())
    assert providers["version"] == 1 and providers["modes"] == {}
    assert providers["lastUsedProvider"] == "openai-compatible"
    entry = providers["providers"]["openai-compatible"]
    assert entry["settings"] == {"provider": "openai-compatible", "apiKey": TEST_KEY,
                                 "model": "claude-sonnet-4-20250514", "baseUrl": V1_URL}
    assert entry["tokenSource"] == "manual" and entry["updatedAt"].endswith("Z")
    mcp = json.loads((home / ".cline/data/settings/cline_mcp_settings.json").read_text())
    assert mcp["mcpServers"]["taotoken-router"]["transport"]["type"] == "stdio"
    state = json.loads((home / ".cline/data/globalState.json").read_text())
    assert state["openAiBaseUrl"] == V1_URL and state["actModeApiProvider"] == "openai"
    assert json.loads((home / ".cline/data/secrets.json").read_text()) == {"openAiApiKey": TEST_KEY}

    cont = load_yaml(home / ".continue/config.yaml")
    assert cont["schema"] == "v1" and cont["name"] and cont["version"]
    models = {m["name"]: m for m in cont["models"]}
    assert models["claude-sonnet-4-20250514"]["roles"] == ["chat", "edit"]
    assert models["gpt-4o-mini"]["roles"] == ["autocomplete"]
    for m in models.values():
        assert m["provider"] == "openai" and m["apiBase"] == V1_URL and m["apiKey"] == TEST_KEY
    assert cont["mcpServers"][0]["name"] == "taotoken-router"


def test_files_holding_the_key_are_0600_and_key_never_printed(taosync, home):
    r = taosync("apply", "--no-verify", "-v")
    assert r.rc == 0, r.both
    for rel in (".claude/settings.json", ".codex/auth.json", ".cline/data/secrets.json",
                ".cline/data/settings/providers.json", ".continue/config.yaml"):
        assert mode(home / rel) == 0o600, rel
    state_dir = home / ".local/state/taosync"
    assert TEST_KEY not in (state_dir / "state.json").read_text()
    assert mode(state_dir / "state.json") == 0o600
    plan = taosync("plan", "--json")
    for run in (r, plan, taosync("status", "--json"), taosync("plan")):
        assert TEST_KEY not in run.both


def test_plan_shows_redacted_diff_and_check_exit_code(taosync, home):
    r = taosync("plan")
    assert r.rc == 0
    assert "create" in r.out and "~/.claude/settings.json" in r.out
    assert "sk-…cdef" in r.out and TEST_KEY not in r.both
    assert taosync("plan", "--check").rc == 1
    assert snapshot(home) == {}, "plan wrote something"
    taosync("apply", "--no-verify")
    assert taosync("plan", "--check").rc == 0
    assert taosync("diff", "--check").rc == 0


def test_second_apply_writes_nothing_and_says_so(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in home.rglob("*") if p.is_file()}
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "nothing to do" in r.out
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in home.rglob("*") if p.is_file()}
    assert before == after


def test_dry_run_writes_nothing(taosync, home):
    r = taosync("apply", "--dry-run")
    assert r.rc == 0 and "dry run" in r.out
    assert snapshot(home) == {}


def test_only_one_client(taosync, home):
    r = taosync("apply", "--no-verify", "--only", "codex")
    assert r.rc == 0, r.both
    assert (home / ".codex/config.toml").exists()
    assert not (home / ".claude").exists()
    bad = taosync("apply", "--only", "codx")
    assert bad.rc == 2 and "did you mean codex" in bad.err


# ---------------------------------------------------------------------- preservation

CLAUDE_SETTINGS = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)"]
  },
  "env": {
    "DISABLE_TELEMETRY": "1",
    "ANTHROPIC_BASE_URL": "https://old.example/api/v1"
  },
  "hooks": {
    "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier -w"}]}]
  },
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
  "enabledPlugins": {"formatter@tools": true}
}
"""

CODEX_CONFIG = """# my codex config
model = "o3"   # was using o3
approval_policy = "on-request"

[projects."/home/me/work"]
trust_level = "trusted"

# another provider I keep around
[model_providers.ollama]
name = "Ollama"
base_url = "http://localhost:11434/v1"

[mcp_servers.docs]
command = "npx"
args = ["-y", "some-mcp"]
env = { K = "v" }

[tui]
notifications = true
"""

CONTINUE_CONFIG = """name: My Config
version: 0.0.1
schema: v1
models:
  # my local model
  - name: Local Llama
    provider: ollama
    model: llama3.1:8b
    roles:
      - chat
context:
  - provider: code
"""

CLAUDE_JSON = """{
  "numStartups": 42,
  "userID": "abc",
  "mcpServers": {
    "mine": {"type": "stdio", "command": "my-server", "args": [], "env": {}}
  },
  "projects": {"/home/me/work": {"allowedTools": []}}
}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def removed_and_added(old: str, new: str) -> tuple[list[str], list[str]]:
    import difflib

    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def test_user_files_kept_byte_for_byte_outside_owned_keys(taosync, home):
    settings = write(home / ".claude/settings.json", CLAUDE_SETTINGS)
    claude_json = write(home / ".claude.json", CLAUDE_JSON)
    codex = write(home / ".codex/config.toml", CODEX_CONFIG)
    cont = write(home / ".continue/config.yaml", CONTINUE_CONFIG)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both

    new = settings.read_text()
    removed, added = removed_and_added(CLAUDE_SETTINGS, new)
    # only the owned base URL line changed, plus one comma where members were appended
    assert removed == ['    "ANTHROPIC_BASE_URL": "https://old.example/api/v1"']
    assert '    "ANTHROPIC_BASE_URL": "https://taotoken.net/api",' in added
    assert all("ANTHROPIC" in line for line in added)
    data = json.loads(new)
    assert data["env"]["DISABLE_TELEMETRY"] == "1"
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "Edit"

    removed, added = removed_and_added(CLAUDE_JSON, claude_json.read_text())
    assert removed in ([], ['    "mine": {"type": "stdio", "command": "my-server", "args": [], "env": {}}'])
    assert json.loads(claude_json.read_text())["mcpServers"]["mine"]["command"] == "my-server"

    text = codex.read_text()
    removed, added = removed_and_added(CODEX_CONFIG, text)
    assert removed == ['model = "o3"   # was using o3']
    assert 'model = "gpt-4o-mini"   # was using o3' in added
    parsed = tomllib.loads(text)
    assert parsed["projects"]["/home/me/work"]["trust_level"] == "trusted"
    assert parsed["model_providers"]["ollama"]["base_url"] == "http://localhost:11434/v1"
    assert parsed["mcp_servers"]["docs"]["env"] == {"K": "v"}
    assert parsed["tui"]["notifications"] is True
    assert text.startswith("# my codex config\n")

    text = cont.read_text()
    removed, _ = removed_and_added(CONTINUE_CONFIG, text)
    assert removed == []
    assert "# my local model" in text
    # the user's entry as it was, now after taosync's: Continue uses the first model with
    # the chat role, and the fleet gives chat to taosync's entry
    models = load_yaml(cont)["models"]
    assert models[-1] == {"name": "Local Llama", "provider": "ollama",
                          "model": "llama3.1:8b", "roles": ["chat"]}
    assert "chat" in models[0]["roles"] and models[0]["provider"] == "openai"
    assert "  # my local model\n  - name: Local Llama\n" in text  # its comment moved along


def test_symlinked_target_is_written_through_the_link(taosync, home, tmp_path):
    real = write(tmp_path / "dotfiles/claude-settings.json", CLAUDE_SETTINGS)
    link = home / ".claude/settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert taosync("apply", "--no-verify").rc == 0
    assert link.is_symlink()
    assert json.loads(real.read_text())["env"]["ANTHROPIC_BASE_URL"] == ROOT_URL


def test_existing_mode_kept_when_the_file_holds_no_key(taosync, home, fleet_file):
    text = fleet_file.read_text().replace("      TAOTOKEN_API_KEY: ${gateway.key}\n", "")
    fleet_file.write_text(text)
    cfg = write(home / ".codex/config.toml", CODEX_CONFIG)
    os.chmod(cfg, 0o640)
    assert taosync("apply", "--no-verify").rc == 0
    assert mode(cfg) == 0o640
    assert mode(home / ".codex/auth.json") == 0o600


# ----------------------------------------------------------------------- idempotence

def test_edit_fleet_moves_only_the_edited_keys(taosync, home, fleet_file):
    write(home / ".codex/config.toml", CODEX_CONFIG)
    assert taosync("apply", "--no-verify").rc == 0
    before = {p: p.read_text() for p in home.rglob("*") if p.is_file() and "state" not in str(p)}
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: claude-sonnet-4-20250514"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    codex_before = before[home / ".codex/config.toml"]
    removed, added = removed_and_added(codex_before, (home / ".codex/config.toml").read_text())
    assert removed == ['model = "gpt-4o-mini"   # was using o3']
    assert added == ['model = "claude-sonnet-4-20250514"   # was using o3']
    # a file whose owned values did not move is untouched
    assert (home / ".codex/deep.config.toml").read_text() == before[home / ".codex/deep.config.toml"]


def test_removing_a_client_removes_its_keys_and_keeps_the_rest(taosync, home, fleet_file):
    settings = write(home / ".claude/settings.json", CLAUDE_SETTINGS)
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace(
        "  claude-code: {model: balanced, haiku: fast, opus: deep}\n", ""))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    data = json.loads(settings.read_text())
    assert "ANTHROPIC_AUTH_TOKEN" not in data["env"]
    assert "ANTHROPIC_MODEL" not in data["env"]
    assert data["env"]["DISABLE_TELEMETRY"] == "1"
    # ANTHROPIC_BASE_URL was the user's before taosync took it over: it is given back
    assert data["env"]["ANTHROPIC_BASE_URL"] == "https://old.example/api/v1"
    assert settings.read_text() == CLAUDE_SETTINGS  # byte for byte as before taosync
    assert data["permissions"]["deny"] == ["Read(./.env)"]
    # the state file taosync created only for MCP is removed entirely
    assert not (home / ".claude.json").exists()


def test_disabling_a_client_with_enabled_false(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace(
        "cline: {model: balanced}", "cline: {model: balanced, enabled: false}"))
    assert taosync("apply", "--no-verify").rc == 0
    assert not (home / ".cline/data/settings/providers.json").exists()
    assert not (home / ".cline/data/secrets.json").exists()


# ------------------------------------------------------------------- status/rollback

def test_status_reports_drift_and_apply_reasserts(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    assert taosync("status").rc == 0
    settings = home / ".claude/settings.json"
    data = json.loads(settings.read_text())
    data["env"]["ANTHROPIC_MODEL"] = "hand-edited"
    data["env"]["ANTHROPIC_AUTH_TOKEN"] = "sk-other-0000000000000000"
    settings.write_text(json.dumps(data, indent=2))
    r = taosync("status")
    assert r.rc == 1
    assert "ANTHROPIC_MODEL" in r.out and "hand-edited" in r.out
    assert "sk-other-0000000000000000" not in r.out and TEST_KEY not in r.out
    js = json.loads(taosync("status", "--json").out)
    assert {d["key"] for d in js["drift"]} == {"env.ANTHROPIC_MODEL", "env.ANTHROPIC_AUTH_TOKEN"}
    # a script without --yes does not overwrite hand edits (taosync/confirm.py)
    r = taosync("apply", "--no-verify")
    assert r.rc == 1 and "--yes" in r.err and "hand-edited" in settings.read_text(), r.both
    assert taosync("apply", "--no-verify", "--yes").rc == 0
    assert json.loads(settings.read_text())["env"]["ANTHROPIC_MODEL"] == "claude-sonnet-4-20250514"
    assert taosync("status").rc == 0


def test_status_reports_pending_changes(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("deep: nvidia/deepseek-r1", "deep: gpt-4o-mini"))
    r = taosync("status")
    assert r.rc == 1 and "pending" in r.out


def test_rollback_restores_previous_contents(taosync, home, fleet_file):
    codex = write(home / ".codex/config.toml", CODEX_CONFIG)
    assert taosync("apply", "--no-verify").rc == 0
    first = codex.read_text()
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: intel/llama-7b"))
    assert taosync("apply", "--no-verify").rc == 0
    assert codex.read_text() != first
    r = taosync("rollback")
    assert r.rc == 0, r.both
    assert codex.read_text() == first
    r = taosync("rollback", "--to", "1")
    assert r.rc == 0, r.both
    assert codex.read_text() == CODEX_CONFIG
    assert not (home / ".claude/settings.json").exists()
    assert taosync("rollback", "--to", "99").rc == 2


# --------------------------------------------------------------------------- faults

@pytest.mark.parametrize("rel,text,where", [
    (".claude/settings.json", '{\n  "env": {,\n}\n', ".claude/settings.json:2:"),
    (".codex/config.toml", 'model = "x"\n[broken\n', ".codex/config.toml:2"),
    (".continue/config.yaml", "models:\n  - name: a\n   bad: [\n", ".continue/config.yaml:"),
])
def test_unparsable_target_stops_everything(taosync, home, rel, text, where):
    write(home / rel, text)
    before = snapshot(home)
    r = taosync("apply", "--no-verify")
    assert r.rc == 2
    assert where in r.err and "changed nothing" in r.err
    assert "Traceback" not in r.both
    assert snapshot(home) == before


def test_target_is_a_directory(taosync, home):
    (home / ".codex/config.toml").mkdir(parents=True)
    before = snapshot(home)
    r = taosync("apply", "--no-verify")
    assert r.rc == 2 and "is a directory" in r.err
    assert snapshot(home) == before


def test_read_only_directory_exits_3_and_writes_nothing(tmp_path):
    """A client directory the user cannot write: exit 3, every file as it was.

    Root ignores directory permissions, so as root the run drops to `nobody` (setpriv),
    from a copy of taosync and its dependencies that `nobody` can read: the checkout and
    its venv may live where only root can go (root's home is 0700)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    from conftest import EXAMPLE_FLEET

    base = Path(tempfile.mkdtemp(prefix="taosync-ro-"))
    try:
        home = base / "home"
        write(home / ".claude/settings.json", CLAUDE_SETTINGS)
        codex = home / ".codex"
        codex.mkdir(parents=True)
        fleet = base / "fleet.yaml"
        shutil.copyfile(EXAMPLE_FLEET, fleet)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODEX", "CLAUDE"))}
        env.update(TAOTOKEN_API_KEY=TEST_KEY, HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
        python = sys.executable
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.fail("running as root without setpriv: cannot drop privileges")
            drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            os.chmod(base, 0o755)
            env.update(PYTHONPATH=str(_copy_taosync_with_its_dependencies(base / "lib")),
                       PYTHONNOUSERSITE="1")
            python = _python_that_can_run(drop, env)
            for dirpath, dirs, files in os.walk(home):
                for name in dirs + files:
                    os.chown(os.path.join(dirpath, name), 65534, 65534)
            os.chown(home, 65534, 65534)
            os.chown(fleet, 65534, 65534)
        else:
            drop = []
        argv = [*drop, python, "-m", "taosync", "--home", str(home), "-c", str(fleet),
                "apply", "--no-verify"]
        os.chmod(codex, 0o555)
        before = snapshot(home)
        r = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=base, timeout=120)
        assert r.returncode == 3, r.stdout + r.stderr
        assert ".codex" in r.stderr and "put back" in r.stderr
        assert "Traceback" not in r.stderr and TEST_KEY not in r.stdout + r.stderr
        after = {k: v for k, v in snapshot(home).items() if not k.startswith(".local/state")}
        assert after == before
    finally:
        os.chmod(base / "home/.codex", 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _copy_taosync_with_its_dependencies(lib: Path) -> Path:
    """A world-readable copy of the ``taosync`` package and of every installed
    distribution it requires (transitively, extras aside), laid out as site-packages."""
    import importlib.metadata as metadata
    import re
    import shutil

    import taosync

    shutil.copytree(Path(taosync.__file__).parent, lib / "taosync",
                    ignore=shutil.ignore_patterns("__pycache__"))
    seen: set[str] = set()
    wanted = list(metadata.distribution("taosync").requires or [])
    while wanted:
        requirement = wanted.pop()
        if "extra ==" in requirement:
            continue
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # its environment marker left it out (e.g. a backport for older Pythons)
        wanted.extend(dist.requires or [])
        for file in dist.files or []:
            if file.parts[0] == ".." or "__pycache__" in file.parts:
                continue  # scripts in bin/, compiled caches
            source = Path(dist.locate_file(file))
            if source.is_file():
                (lib / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, lib / file)
    for dirpath, dirs, files in os.walk(lib):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return lib


def _python_that_can_run(drop: list[str], env: dict) -> str:
    """An interpreter of this Python version that the dropped user can start with its
    standard library: the venv's base interpreter, else a system one."""
    import subprocess
    import sys

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
                  os.path.realpath(sys.executable), f"/usr/bin/python{version}",
                  f"/usr/local/bin/python{version}"]
    probe = "import sys, json, click, ruamel.yaml, tomlkit; print('%d.%d' % sys.version_info[:2])"
    for python in dict.fromkeys(candidates):
        try:
            r = subprocess.run([*drop, python, "-c", probe], env=env, capture_output=True,
                               text=True, timeout=60)
        except OSError:
            continue
        if r.returncode == 0 and r.stdout.strip() == version:
            return python
    pytest.fail(f"no Python {version} that uid 65534 can run among {candidates}")


def test_write_failing_half_way_puts_every_file_back(taosync, home, fleet_file):
    """Inject a failure on the third file written: all files end as they were."""
    from taosync.settings import Settings
    from taosync.engine.apply import RealWriter, execute
    from taosync import pipeline
    from taosync.errors import WriteFailed

    write(home / ".claude/settings.json", CLAUDE_SETTINGS)
    write(home / ".codex/config.toml", CODEX_CONFIG)
    before = snapshot(home)

    class FailThird(RealWriter):
        calls = 0

        def write(self, path, data, mode):
            FailThird.calls += 1
            if FailThird.calls == 3:
                raise OSError(28, "No space left on device")
            super().write(path, data, mode)

    settings = Settings(config=fleet_file, home=home)
    ctx = pipeline.prepare(settings)
    state = ctx.store.load()
    plan = pipeline.make_plan(ctx, state, for_write=True)
    with pytest.raises(WriteFailed) as err:
        execute(plan, state, ctx.store, FailThird())
    assert "No space left" in err.value.message and "put back" in err.value.message
    after = {k: v for k, v in snapshot(home).items() if not k.startswith(".local/state")}
    assert after == before


def test_target_under_a_file_is_reported_before_anything_is_written(taosync, home):
    (home / ".cline").write_text("not a directory")
    before = snapshot(home)
    r = taosync("apply", "--no-verify")
    assert r.rc == 2, r.both
    assert ".cline" in r.err
    assert "Traceback" not in r.both
    assert snapshot(home) == before


def test_apply_history_is_pruned_with_its_backups(taosync, home, fleet_file):
    from taosync.engine.state import KEEP_APPLIES

    original = fleet_file.read_text()
    for i in range(KEEP_APPLIES + 3):
        fleet_file.write_text(original.replace("max_tokens: 16", f"max_tokens: {16 + i}")
                              .replace("fast: gpt-4o-mini", "fast: gpt-4o-mini" if i % 2
                                       else "fast: intel/llama-7b"))
        assert taosync("apply", "--no-verify").rc == 0
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert len(state["applies"]) == KEEP_APPLIES
    backups = sorted(int(p.name) for p in (home / ".local/state/taosync/backups").iterdir())
    assert backups == [a["id"] for a in state["applies"]]
    r = taosync("rollback", "--to", "1")
    assert r.rc == 2 and "no apply number 1" in r.err


def test_a_held_lock_is_reported_as_busy(home):
    from taosync.engine.state import locked
    from taosync.engine.system import LockBusy
    from taosync.engine.state import StateStore

    store = StateStore(home / "state")
    with locked(store):
        with pytest.raises(LockBusy) as err:
            with locked(store, timeout=0.1):
                pass
    assert err.value.exit_code == 3 and "another taosync" in err.value.message


def test_warnings_are_printed_once_each_with_their_location(taosync, home, fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace(
        "base_url: https://taotoken.net/api ", "base_url: https://taotoken.net/api/v1 "))
    for _ in range(2):  # the second run comes from the render cache
        r = taosync("apply", "--no-verify")
        assert r.rc == 0, r.both
        lines = [line for line in r.err.splitlines() if "normalised" in line]
        assert len(lines) == 1
        assert lines[0].startswith(f"{fleet_file}:") and ": warning: normalised" in lines[0]
        assert lines[0].count("warning:") == 1


def test_a_key_that_becomes_skeleton_is_left_in_place(taosync, home):
    """Owned before (an older taosync), only filled in when missing now: kept as it is."""
    from taosync.engine.state import StateStore

    assert taosync("apply", "--no-verify").rc == 0
    cfg = home / ".codex/config.toml"
    store = StateStore(home / ".local/state/taosync")
    state = store.load()
    fs = state.files[str(cfg)]
    name_key = "model_providers.taotoken.name"
    assert name_key in fs.skeleton and name_key not in fs.owned
    # simulate the older state, where the provider's name was owned
    from taosync.engine.state import OwnedKey
    from taosync.fleet.secrets import value_hash

    fs.owned[name_key] = OwnedKey(value_hash(store.hmac_key(), "taosync gateway"), "taosync gateway")
    fs.skeleton.remove(name_key)
    state.inputs = {}
    store.save(state)
    r = taosync("plan", "--check")
    assert r.rc == 0, r.out
    assert 'name = "taosync gateway"' in cfg.read_text()


def test_rollback_warns_about_edits_made_after_the_apply_and_can_be_undone(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    cfg = home / ".codex/config.toml"
    edited = cfg.read_text() + "\n[tui]\nnotifications = true\n"
    cfg.write_text(edited)
    r = taosync("rollback")  # the confirm rule: a script needs --yes to replace edits
    assert r.rc == 1 and "--yes" in r.err and cfg.read_text() == edited, r.both
    r = taosync("rollback", "--yes")
    assert r.rc == 0, r.both
    assert "~/.codex/config.toml was edited after taosync wrote it" in r.err
    assert not cfg.exists()  # apply #1 created it
    r = taosync("rollback")  # undo the rollback: the user's edit comes back
    assert r.rc == 0, r.both
    assert cfg.read_text() == edited


def test_nothing_to_roll_back_writes_nothing(taosync, home):
    r = taosync("rollback")
    assert r.rc == 2 and "nothing to do: taosync has not applied anything" in r.err
    assert snapshot(home) == {}


def test_released_keys_go_back_to_the_users_values(taosync, home, fleet_file):
    codex = write(home / ".codex/config.toml", CODEX_CONFIG)
    settings = home / ".claude/settings.json"
    write(settings, '{\n  "env": {\n    "ANTHROPIC_AUTH_TOKEN": "%s"\n  }\n}\n' % TEST_KEY)
    assert taosync("apply", "--no-verify").rc == 0
    assert TEST_KEY not in (home / ".local/state/taosync/state.json").read_text()
    fleet_file.write_text(fleet_file.read_text()
                          .replace("  codex: {model: fast, profiles: [deep, batch]}\n", "")
                          .replace("  claude-code: {model: balanced, haiku: fast, opus: deep}\n", ""))
    assert taosync("apply", "--no-verify").rc == 0
    assert codex.read_text() == CODEX_CONFIG  # model = "o3" is back, comment and all
    # the same key the user had before taosync is kept (never stored, never deleted)
    assert json.loads(settings.read_text()) == {"env": {"ANTHROPIC_AUTH_TOKEN": TEST_KEY}}


def test_a_key_edited_after_apply_is_left_to_the_user_on_release(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace('model = "gpt-4o-mini"', 'model = "my-own"'))
    fleet_file.write_text(fleet_file.read_text().replace(
        "  codex: {model: fast, profiles: [deep, batch]}\n", ""))
    assert taosync("apply", "--no-verify").rc == 0
    assert tomllib.loads(cfg.read_text()) == {"model": "my-own"}


def test_drift_then_rollback_twice_is_not_called_in_sync(taosync, home):
    """A rollback of a rollback puts a hand edit back: status and plan --check must see it
    (the restored bytes are not what taosync last wrote, so nothing may trust them unread)."""
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude/settings.json"
    data = json.loads(settings.read_text())
    data["env"]["ANTHROPIC_BASE_URL"] = V1_URL + "/v1"  # a hand-broken owned key
    settings.write_text(json.dumps(data, indent=2))
    assert taosync("rollback", "--yes").rc == 0
    assert taosync("rollback").rc == 0
    assert json.loads(settings.read_text())["env"]["ANTHROPIC_BASE_URL"] == V1_URL + "/v1"
    r = taosync("status")
    assert r.rc == 1, r.both
    assert "env.ANTHROPIC_BASE_URL" in r.out
    assert taosync("plan", "--check").rc == 1
    r = taosync("apply", "--no-verify", "--yes")
    assert r.rc == 0, r.both
    assert json.loads(settings.read_text())["env"]["ANTHROPIC_BASE_URL"] == ROOT_URL
    assert taosync("status").rc == 0
