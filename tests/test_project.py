"""Project scope (issue #26, Build 3; docs/project.md): ``--project`` renders a project
overlay into the clients' project files, with its own state, and never touches the user
scope. Runs go through a real ``python -m taosync`` subprocess (the no-op fast path must
never answer a project run from the user scope's certificate). The real clients reading
these files: tests/clients/test_real_project.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, snapshot

KEY_A = "sk-test-userAAAA-0123456789abcdef"
KEY_B = "sk-test-projBBBB-fedcba9876543210"
USER_FLEET = """\
version: 1
gateway:
  base_url: http://127.0.0.1:9001
  key: ${env:A_KEY}
  gemini_base_url: http://127.0.0.1:9001
  headers: {X-Org: "${env:A_ORG}"}
models: {gw-a: {}}
routes: {main: gw-a}
default_route: main
clients:
  claude-code: {model: main}
  codex: {model: main}
  opencode: {model: main}
  kilo: {model: main}
  qwen-code: {model: main}
  gemini-cli: {model: main}
  aider: {model: main}
  gptme: {model: main}
  mistral-vibe: {model: main}
  cline: {model: main}
  llm: {model: main}
"""
OVERLAY = """\
version: 1
gateway:
  base_url: http://127.0.0.1:9002
  key: ${env:B_KEY}
  gemini_base_url: http://127.0.0.1:9002
models: {gw-b: {}}
routes: {main: gw-b}
"""
#: the project files holding the key inline (inline mode): git must ignore them
IGNORED = [".claude/settings.local.json", "opencode.json", "kilo.json", ".qwen/settings.json",
           ".aider.conf.yml", ".gemini/.env"]


class World:
    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.home.mkdir()
        self.fleet = tmp / "fleet.yaml"
        self.fleet.write_text(USER_FLEET)
        self.repo = tmp / "repo"
        (self.repo / "sub").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)
        self.overlay = self.repo / "taosync.yaml"
        self.overlay.write_text(OVERLAY)
        self.ignore(*IGNORED)

    def ignore(self, *paths: str) -> None:
        exclude = self.repo / ".git" / "info" / "exclude"
        exclude.write_text("".join(f"{p}\n" for p in paths))

    def run(self, *args: str, cwd: Path | None = None, stdin: str | None = None):
        env = {k: v for k, v in os.environ.items()
               if not k.endswith("_API_KEY") and not k.startswith(("XDG_", "TAOSYNC_"))}
        env.update(A_KEY=KEY_A, B_KEY=KEY_B, A_ORG="org-secret-header-value",
                   PYTHONPATH=str(ROOT), HOME=str(self.home))
        for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "QWEN_HOME", "GEMINI_CLI_HOME",
                    "VIBE_HOME", "CLINE_DIR", "CONTINUE_GLOBAL_DIR", "LLM_USER_PATH"):
            env.pop(var, None)
        done = subprocess.run([sys.executable, "-m", "taosync", "--home", str(self.home),
                               "-c", str(self.fleet), *args], cwd=cwd or self.repo,
                              capture_output=True, text=True, timeout=120, env=env,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
        return done

    def user_side(self) -> dict[str, str]:
        """Every file of the home (client files and the user scope's state), less the
        project's own state directory."""
        return {p: h for p, h in snapshot(self.home).items()
                if "/taosync/projects/" not in "/" + p}

    def repo_files(self) -> set[str]:
        return {p for p in snapshot(self.repo) if not p.startswith(".git/")}


@pytest.fixture
def world(tmp_path) -> World:
    w = World(tmp_path)
    first = w.run("apply", "--no-verify", cwd=w.home)
    assert first.returncode == 0, first.stderr
    return w


def test_apply_project_writes_the_project_files_and_leaves_the_user_scope(world):
    before = world.user_side()
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 0, done.stderr
    repo = world.repo
    claude = json.loads((repo / ".claude/settings.local.json").read_text())["env"]
    assert claude["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9002"
    assert claude["ANTHROPIC_MODEL"] == "gw-b"
    assert claude["ANTHROPIC_AUTH_TOKEN"] == KEY_B
    opencode = json.loads((repo / "opencode.json").read_text())
    provider = next(iter(opencode["provider"].values()))
    assert provider["options"]["baseURL"] == "http://127.0.0.1:9002/v1"
    assert provider["options"]["apiKey"] == KEY_B
    # the user's gateway is replaced whole: its secret header never goes to the project's
    assert "org-secret-header-value" not in "".join(
        p.read_text() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert (repo / "kilo.json").exists() and (repo / ".aider.conf.yml").exists()
    qwen = json.loads((repo / ".qwen/settings.json").read_text())
    assert qwen["security"]["auth"]["baseUrl"] == "http://127.0.0.1:9002/v1"
    assert "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9002" in (repo / ".gemini/.env").read_text()
    # model only: Codex and gptme keep the user's endpoint and key
    assert tomllib.loads((repo / ".codex/config.toml").read_text()) == {"model": "gw-b"}
    gptme = tomllib.loads((repo / "gptme.toml").read_text())
    assert gptme == {"env": {"MODEL": gptme["env"]["MODEL"]}} and \
        gptme["env"]["MODEL"].endswith("/gw-b")
    vibe = tomllib.loads((repo / ".vibe/config.toml").read_text())
    assert vibe["active_model"] == "gw-b"
    assert vibe["providers"][0]["api_key_env_var"] == "B_KEY"
    for name in IGNORED:
        assert (repo / name).stat().st_mode & 0o777 == 0o600, name
    # the user scope is as it was: client files and its state, byte for byte
    assert world.user_side() == before
    assert KEY_B not in done.stdout + done.stderr and KEY_A not in done.stdout + done.stderr
    said = done.stderr
    assert "cline, llm have no project scope" in said and "--profile" in said
    assert "codex, gptme take only the model" in said
    assert "gemini-cli ignores these project files until the folder is trusted" in said
    assert f"--project {world.repo} apply --trust" in said
    # the project's own state
    states = list((world.home / ".local/state/taosync/projects").iterdir())
    assert len(states) == 1 and len(states[0].name) == 16


def test_default_project_is_the_git_root_and_status_plan_destroy_act_on_it(world):
    done = world.run("apply", "--project", "--no-verify", cwd=world.repo / "sub")
    assert done.returncode == 0, done.stderr
    assert (world.repo / "opencode.json").exists()
    assert not (world.repo / "sub" / "opencode.json").exists()
    before = world.user_side()
    status = world.run("status", "--project")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "10 files match" in status.stdout
    # a hand edit in a project file is the project's drift, not the user's
    path = world.repo / "opencode.json"
    path.write_text(path.read_text().replace('"taotoken/gw-b"', '"taotoken/mine"', 1))
    drift = world.run("status", "--project")
    assert drift.returncode == 1 and "opencode.json" in drift.stdout + drift.stderr
    user = world.run("status", cwd=world.home)
    assert user.returncode == 0, user.stdout + user.stderr
    plan = world.run("plan", "--project")
    assert "opencode.json" in plan.stdout
    assert world.run("apply", "--project", "--yes", "--no-verify").returncode == 0
    gone = world.run("destroy", "--project", "--yes")
    assert gone.returncode == 0, gone.stderr
    assert world.repo_files() == {"taosync.yaml"}
    assert world.user_side() == before


def test_a_project_run_is_never_answered_from_the_user_certificate(world):
    """The user apply certified its no-op answers; a project run must still render (the
    fast path knows no --project: it hands such a command line to the full path)."""
    from taosync import fastpath

    again = world.run("apply", cwd=world.home)  # the certificate's own answer
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert fastpath._parse(["apply"])  # the user form is one it may answer
    with pytest.raises(fastpath._Unsure):
        fastpath._parse(["apply", "--project"])
    with pytest.raises(fastpath._Unsure):
        fastpath._parse(["--project", ".", "status"])
    status = world.run("status", "--project")
    assert status.returncode == 1 and "opencode.json" in status.stdout + status.stderr
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 0 and "opencode.json" in done.stdout
    assert (world.repo / "opencode.json").exists()
    # and the project apply left the user's certificate answering as before
    user = world.run("apply", cwd=world.home)
    assert user.returncode == 0 and "nothing to do" in user.stdout


def test_a_secret_in_a_file_git_does_not_ignore_is_refused(world):
    world.ignore(*[p for p in IGNORED if p != "opencode.json"])
    before, repo_before = world.user_side(), snapshot(world.repo)
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr
    assert f"{world.overlay}:4:8: opencode: opencode.json would hold a secret inline" in said
    assert ".git/info/exclude" in said and "secrets: reference" in said
    assert "Traceback" not in said and KEY_B not in said
    assert snapshot(world.repo) == repo_before and world.user_side() == before
    assert not (world.home / ".local/state/taosync/projects").exists()


def test_outside_git_a_secret_goes_into_a_private_file(world, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "taosync.yaml").write_text(OVERLAY)
    done = world.run("apply", "--project", str(plain), "--no-verify", cwd=plain)
    assert done.returncode == 0, done.stderr
    assert (plain / "opencode.json").stat().st_mode & 0o777 == 0o600


def test_reference_mode_needs_no_ignored_file_for_opencode(world):
    world.fleet.write_text(USER_FLEET + "secrets: reference\n")
    world.ignore(".claude/settings.local.json", ".gemini/.env")
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 0, done.stderr
    text = (world.repo / "opencode.json").read_text()
    assert KEY_B not in text and "B_KEY" in text


@pytest.mark.parametrize("overlay, where, words", [
    (OVERLAY.replace("${env:B_KEY}", "sk-literal-key-in-the-repo"), "4:8",
     "never holds a key inline"),
    (OVERLAY + "secrets: inline\n", "8:1", "`secrets` belongs in your own fleet.yaml"),
    (OVERLAY + "mcp_servers:\n  x: {command: sh, env: {T: '${cmd:touch ran}'}}\n",
     "9:", "may not run a command on your machine"),
    (OVERLAY.replace("routes: {main: gw-b}", "routes: {main: 42}"), "7:", "routes.main"),
    ("version: 1\ngateway: work\n", "2:10", "'work' is not one of your gateways"),
])
def test_a_bad_overlay_is_a_located_error_and_nothing_is_written(world, overlay, where, words):
    world.overlay.write_text(overlay)
    before, repo_before = world.user_side(), snapshot(world.repo)
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{world.overlay}:{where}" in done.stderr and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "sk-literal-key-in-the-repo" not in done.stderr
    assert "cannot resolve" not in done.stderr  # a refused overlay resolves nothing
    assert snapshot(world.repo) == repo_before and world.user_side() == before


def test_no_overlay_is_bad_input(world):
    world.overlay.unlink()
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 2 and "no project overlay" in done.stderr
    assert world.repo_files() == set()


def test_a_projects_entry_in_the_users_fleet(world):
    world.overlay.unlink()
    world.fleet.write_text(USER_FLEET + f"projects:\n  {world.repo}:\n"
                           "    gateway: {base_url: 'http://127.0.0.1:9003', key: '${env:B_KEY}', "
                           "gemini_base_url: 'http://127.0.0.1:9003'}\n"
                           "    routes: {main: gw-a}\n")
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 0, done.stderr
    claude = json.loads((world.repo / ".claude/settings.local.json").read_text())["env"]
    assert claude["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9003"
    # the user scope reads its fleet with the projects: entry and stays as it was
    user = world.run("status", cwd=world.home)
    assert user.returncode == 0, user.stdout + user.stderr
    # a problem in the entry is located in fleet.yaml, under projects:
    world.fleet.write_text(world.fleet.read_text().replace("'${env:B_KEY}'", "'sk-inline-1234'"))
    bad = world.run("apply", "--project", "--no-verify")
    assert bad.returncode == 2 and f"{world.fleet}:" in bad.stderr
    assert "never holds a key inline" in bad.stderr and "sk-inline-1234" not in bad.stderr


def test_trust_is_shown_asked_written_and_destroyed(world):
    codex = world.home / ".codex/config.toml"
    codex_before = codex.read_text()
    asked = world.run("apply", "--project", "--trust", "--no-verify")
    assert asked.returncode == 1, asked.stdout + asked.stderr
    assert "codex: " in asked.stderr and 'projects."' in asked.stderr and "--yes" in asked.stderr
    assert world.repo_files() == {"taosync.yaml"} and codex.read_text() == codex_before
    done = world.run("apply", "--project", "--trust", "--yes", "--no-verify")
    assert done.returncode == 0, done.stderr
    assert done.stderr.index("trust entries apply --trust writes") < len(done.stderr)
    trusted = tomllib.loads(codex.read_text())["projects"][str(world.repo)]
    assert trusted == {"trust_level": "trusted"}
    gemini = json.loads((world.home / ".gemini/trustedFolders.json").read_text())
    assert gemini == {str(world.repo): "TRUST_FOLDER"}
    assert "mistral-vibe reads its project file only in a trusted folder" in done.stderr
    # a later project apply keeps them (no --trust needed), the user's status is clean
    again = world.run("apply", "--project", "--no-verify")
    assert again.returncode == 0 and "nothing to do" in again.stdout
    user = world.run("status", cwd=world.home)
    assert user.returncode == 0, user.stdout + user.stderr
    gone = world.run("destroy", "--project", "--yes")
    assert gone.returncode == 0, gone.stderr
    assert codex.read_text() == codex_before
    assert not (world.home / ".gemini/trustedFolders.json").exists()
    assert world.repo_files() == {"taosync.yaml"}


def test_trust_without_project_is_bad_input(world):
    done = world.run("apply", "--trust", "--no-verify", cwd=world.home)
    assert done.returncode == 2 and "--trust goes with --project" in done.stderr


def test_vibe_is_left_out_when_the_projects_key_is_not_an_env_reference(world, tmp_path):
    keyfile = tmp_path / "b.key"
    keyfile.write_text(KEY_B)
    world.overlay.write_text(OVERLAY.replace("${env:B_KEY}", f"${{file:{keyfile}}}"))
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 0, done.stderr
    assert not (world.repo / ".vibe/config.toml").exists()
    assert "mistral-vibe: nothing written" in done.stderr


def test_rollback_and_log_of_a_project(world):
    assert world.run("apply", "--project", "--no-verify").returncode == 0
    world.overlay.write_text(OVERLAY.replace("9002", "9004"))
    assert world.run("apply", "--project", "--no-verify").returncode == 0
    assert "9004" in (world.repo / "opencode.json").read_text()
    log = world.run("log", "--project")
    assert log.returncode == 0 and "#2" in log.stdout
    back = world.run("rollback", "--project", "--yes")
    assert back.returncode == 0, back.stderr
    assert "9002" in (world.repo / "opencode.json").read_text()
    user_log = world.run("log", cwd=world.home)
    assert "#2" not in user_log.stdout


def test_verify_project_probes_the_projects_gateway(world):
    """verify --project --stub: the project's render (as --desired), the clients that take
    a project's gateway only."""
    assert world.run("apply", "--project", "--no-verify").returncode == 0
    done = world.run("verify", "--project", "--stub", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    clients = {c for r in report["results"] for c in r["clients"]}
    assert clients == {"claude-code", "opencode", "kilo", "qwen-code", "gemini-cli", "aider",
                       "mistral-vibe"}
    assert {r["model"] for r in report["results"]} == {"gw-b"}


@pytest.mark.parametrize("argv", [["adopt", "--project"], ["--project", ".", "forget", "aider"],
                                  ["validate", "--project"]])
def test_project_goes_only_with_the_commands_of_a_scope(world, argv):
    before, files = world.user_side(), world.repo_files()
    done = world.run(*argv)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--project does not go with" in done.stderr and "Traceback" not in done.stderr
    assert world.user_side() == before and world.repo_files() == files


def test_the_users_purge_leaves_the_projects_state(world):
    assert world.run("apply", "--project", "--no-verify").returncode == 0
    states = world.home / ".local/state/taosync/projects"
    kept = snapshot(states)
    gone = world.run("destroy", "--yes", "--purge", cwd=world.home)
    assert gone.returncode == 0, gone.stderr
    assert snapshot(states) == kept
    assert not (world.home / ".local/state/taosync/state.json").exists()
    assert not (world.home / ".codex/config.toml").exists()
    back = world.run("destroy", "--project", "--yes")
    assert back.returncode == 0, back.stderr
    assert world.repo_files() == {"taosync.yaml"}


def test_qwen_is_said_to_need_its_mcp_approval(world):
    world.fleet.write_text(USER_FLEET + "mcp_servers: {echo: {command: echo}}\n")
    world.ignore(*IGNORED, ".mcp.json", ".codex/config.toml", ".gemini/settings.json")
    done = world.run("apply", "--project", "--no-verify")
    assert done.returncode == 0, done.stderr
    assert "qwen mcp approve --all" in done.stderr
    assert json.loads((world.repo / ".mcp.json").read_text())["mcpServers"]["echo"]
