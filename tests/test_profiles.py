"""Profiles (docs/profiles.md): ``profiles: {NAME: overlay}`` rendered under ``--profile
NAME`` (or ``$TAOSYNC_PROFILE``) into the profile's own root through each client's
isolation variable, with its own state — so apply, plan, status, verify, log, rollback and
destroy work per profile and never touch the user scope's files or state, nor the other
way round. ``taosync env --profile``/``--aliases`` and ``taosync exec`` put a shell or one
command inside one. The real clients prove it in tests/clients/test_real_profiles.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY, every_client_fleet

#: where a profile's root and state sit under a sandbox home (no XDG variables set)
ROOTS = ".local/share/taosync/profiles"
STATES = ".local/state/taosync/profiles"


def _fleet(path: Path, profiles: dict, base: Path = EXAMPLE_FLEET, **top) -> Path:
    yaml = YAML()  # keeps the order written (profiles work, then home)
    data = yaml.load(base.read_text())
    data["gateway"]["base_url"] = "http://127.0.0.1:9"
    data.pop("gateway_extra", None)
    data.update(profiles=profiles, **top)
    with path.open("w") as fh:
        yaml.dump(data, fh)
    return path


@pytest.fixture
def fleet_file(tmp_path) -> Path:
    """The suite's example fleet with profile ``work`` (route balanced on r1, codex left
    out) and profile ``home`` (no changes)."""
    return _fleet(tmp_path / "fleet.yaml", {
        "work": {"routes": {"balanced": "nvidia/deepseek-r1"},
                 "clients": {"codex": {"enabled": False}}},
        "home": {},
    })


def _files(home: Path, under: str | None = None) -> dict[str, bytes]:
    """Every file under ``home`` (or only under ``home/under``), the profiles' roots and
    states left out of the user scope's."""
    base = home / under if under else home
    skip = () if under else (home / ROOTS, home / STATES)
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and not any(p.is_relative_to(s) for s in skip)}


# -- the overlay and the root ----------------------------------------------------------------

def test_a_profile_renders_its_overlay_into_its_own_root(taosync, home):
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    user = _files(home)
    r = taosync("--profile", "work", "apply", "--no-verify")
    assert r.rc == 0, r.both
    assert _files(home) == user  # not one byte of the user scope changed
    root = home / ROOTS / "work"
    claude = (root / ".claude/settings.json").read_text()
    assert '"ANTHROPIC_MODEL": "nvidia/deepseek-r1"' in claude  # the overlay's route
    assert "claude-sonnet-4-20250514" in (home / ".claude/settings.json").read_text()
    assert not (root / ".codex").exists()  # enabled: false in the profile
    assert (home / ".codex/config.toml").exists()
    # its own state, beside the user's
    assert (home / STATES / "work" / "state.json").exists()
    assert (root / ".aider.conf.yml").exists()  # aider: the root is its home
    assert (root / ".config/opencode/opencode.json").exists()  # XDG_CONFIG_HOME


def test_every_isolatable_client_writes_only_under_the_root(tmp_path, home, taosync):
    """With every registered client enabled, a profile writes nothing outside its root
    (and its state), and leaves out, saying so, the apps no variable isolates."""
    from taosync.clients.registry import all as all_clients

    fleet = every_client_fleet(tmp_path)
    fleet = _fleet(fleet, {"p": {}}, base=fleet)
    r = taosync("--profile", "p", "apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    outside = [f for f in _files(home) if not f.startswith(".local/state/taosync")]
    assert outside == []
    written = _files(home, f"{ROOTS}/p")
    assert written
    left_out = sorted(c for c, m in all_clients().items() if not m.ISOLATION)
    if left_out:
        assert f"leaves out {', '.join(c for c in all_clients() if c in left_out)}" in " ".join(r.err.split()), r.err


def test_isolation_is_declared_as_data_for_the_clients_of_section_18():
    """clients.md §18.0 item 8: the variable each client is isolated by."""
    from taosync.clients.registry import all as all_clients

    want = {"claude-code": {"CLAUDE_CONFIG_DIR"}, "codex": {"CODEX_HOME"},
            "cline": {"CLINE_DIR"}, "continue": {"CONTINUE_GLOBAL_DIR"},
            "qwen-code": {"QWEN_HOME"}, "gemini-cli": {"GEMINI_CLI_HOME"},
            "mistral-vibe": {"VIBE_HOME"}, "llm": {"LLM_USER_PATH"},
            "opencode": {"XDG_CONFIG_HOME"}, "kilo": {"XDG_CONFIG_HOME"},
            "hermes": {"HERMES_HOME"}, "droid": {"FACTORY_HOME_OVERRIDE"},
            "pi": {"PI_CODING_AGENT_DIR"}, "aider": {"HOME"}, "shell-gpt": {"HOME"},
            "gptme": {"HOME"}}
    registry = all_clients()
    assert {c: set(registry[c].ISOLATION) for c in want} == want
    for cid, module in registry.items():  # a moved directory is one the client reads
        for var in module.ISOLATION:
            assert var == "HOME" or var in module.LOCATION_VARS, (cid, var)


# -- bad input -------------------------------------------------------------------------------

def test_an_unknown_profile_is_bad_input_listing_the_profiles(taosync, home, fleet_file):
    r = taosync("--profile", "nope", "apply", "--no-verify")
    assert r.rc == 2
    said = " ".join(r.err.split())
    assert "no profile 'nope'" in said and "its profiles: work, home" in said, said
    assert f"{fleet_file.name}:" in r.err  # located in fleet.yaml (its profiles: line)
    assert "Traceback" not in r.err
    assert list(home.rglob("*")) == []  # nothing written, not even state


def test_a_profile_on_a_gateway_the_fleet_lacks_is_located(taosync, home, tmp_path):
    fleet = _fleet(tmp_path / "f.yaml", {"work": {"gateway": "corp"}})
    r = taosync("--profile", "work", "plan", config=fleet)
    assert r.rc == 2
    line = next(i for i, text in enumerate(fleet.read_text().splitlines(), 1)
                if "gateway: corp" in text)
    assert f"f.yaml:{line}:" in r.err and "gateway 'corp'" in r.err
    assert "its gateways: default" in r.err


def test_a_name_that_is_no_directory_name_is_bad_input(taosync, home, monkeypatch):
    r = taosync("--profile", "../x", "status")
    assert r.rc == 2 and "no profile name" in r.err
    monkeypatch.setenv("TAOSYNC_PROFILE", "a/b")
    r = taosync("status")
    assert r.rc == 2 and "$TAOSYNC_PROFILE" in r.err
    assert list(home.rglob("*")) == []


def test_a_profile_name_is_checked_by_the_schema(taosync, home, tmp_path):
    fleet = _fleet(tmp_path / "f.yaml", {"no good": {}})
    r = taosync("validate", config=fleet)
    assert r.rc == 2 and "profiles" in r.err, r.err


# -- every command per profile ------------------------------------------------------------

def test_status_plan_log_rollback_destroy_work_per_profile(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    user = _files(home)
    assert taosync("--profile", "work", "apply", "--no-verify").rc == 0
    assert taosync("--profile", "home", "apply", "--no-verify").rc == 0
    r = taosync("--profile", "work", "status")
    assert r.rc == 0 and "nothing to do" in r.out, r.both
    r = taosync("status")  # the user scope lists the profiles
    assert r.rc == 0 and "profiles: work (applied), home (applied)" in r.out, r.both
    # drift in a profile's file is that profile's, not the user's
    claude = home / ROOTS / "work/.claude/settings.json"
    claude.write_text(claude.read_text().replace("nvidia/deepseek-r1", "hand-edited"))
    r = taosync("--profile", "work", "status")
    assert r.rc == 1 and "drift" in r.out and "profiles/work/.claude" in r.out, r.both
    assert taosync("status").rc == 0
    assert taosync("--profile", "home", "status").rc == 0
    r = taosync("--profile", "work", "plan")
    assert "profiles/work/.claude/settings.json" in r.out
    r = taosync("--profile", "work", "log")
    assert r.rc == 0 and "#1" in r.out, r.both
    assert taosync("--profile", "work", "apply", "--no-verify", "--yes").rc == 0
    r = taosync("--profile", "work", "rollback", "--yes")
    assert r.rc == 0, r.both
    assert "hand-edited" in claude.read_text()  # back to before the second apply
    r = taosync("--profile", "work", "destroy", "--yes")
    assert r.rc == 0, r.both
    left = claude.read_text() if claude.exists() else ""
    assert "ANTHROPIC_BASE_URL" not in left and TEST_KEY not in left  # given back
    assert "hand-edited" in left  # what the user edited by hand is theirs: kept
    assert _files(home) == user  # through all of it, the user scope's files and state
    assert (home / ROOTS / "home/.claude/settings.json").exists()  # and the other profile
    r = taosync("--json", "status")
    import json

    assert json.loads(r.out)["profiles"] == {"work": {"applied": True},
                                              "home": {"applied": True}}


def test_apply_names_the_profiles_never_applied(taosync, home):
    r = taosync("apply", "--no-verify")
    assert r.rc == 0
    assert "profiles: work (never applied: " in r.out and "apply --profile work" in r.out
    r = taosync("status")
    assert "home (never applied" in r.out


def test_the_user_scope_never_touches_a_profile(taosync, home):
    assert taosync("--profile", "work", "apply", "--no-verify").rc == 0
    mine = _files(home, f"{ROOTS}/work") | _files(home, f"{STATES}/work")
    assert taosync("apply", "--no-verify").rc == 0
    assert taosync("destroy", "--yes").rc == 0
    assert _files(home, f"{ROOTS}/work") | _files(home, f"{STATES}/work") == mine


def test_verify_probes_the_profiles_gateway(taosync, home, tmp_path):
    """verify --profile probes the profile's gateway with the profile's key."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, prefix="/api") as user_gw, \
            Stub(key="sk-test-OTHER-0123456789", prefix="/api") as work_gw:
        yaml = YAML(typ="safe")
        data = yaml.load(EXAMPLE_FLEET.read_text())
        data["gateway"] = {"base_url": user_gw.root, "key": "${env:TAOTOKEN_API_KEY}"}
        data["gateways"] = {"corp": {"base_url": work_gw.root, "key": "sk-test-OTHER-0123456789"}}
        data["clients"] = {"claude-code": {"model": "balanced"}}
        data["mcp_servers"] = {}
        data["profiles"] = {"work": {"gateway": "corp"}}
        fleet = tmp_path / "g.yaml"
        with fleet.open("w") as fh:
            yaml.dump(data, fh)
        assert taosync("--profile", "work", "apply", "--no-verify", config=fleet).rc == 0
        r = taosync("--profile", "work", "verify", config=fleet)
        assert r.rc == 0, r.both
        assert work_gw.requests and not user_gw.requests
        assert all(q.auth == "ok" for q in work_gw.requests)


# -- the fast path never crosses scopes (real processes) -------------------------------------

def _cli(home: Path, fleet: Path, *args: str, env: dict | None = None):
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], env=full, capture_output=True, text=True,
                          timeout=120)


def test_the_no_op_certificate_never_answers_across_scopes(home, fleet_file):
    """The user scope's certified no-op answer is never replayed for a profile (by
    --profile or $TAOSYNC_PROFILE), nor a profile's for the user scope: the user scope
    writes 14 files, profile work 12 (codex left out), and each run names its own."""
    from taosync.engine import certificate

    r = _cli(home, fleet_file, "apply", "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (home / ".local/state/taosync" / certificate.FILE).exists()
    user = _cli(home, fleet_file, "status")
    assert user.returncode == 0 and "nothing to do" in user.stdout
    for how in (["--profile", "work"], []):
        env = {} if how else {"TAOSYNC_PROFILE": "work"}
        r = _cli(home, fleet_file, *how, "status", env=env)
        assert r.returncode == 1, r.stdout + r.stderr  # never applied: not the user's "nothing to do"
        assert "never applied here" in r.stdout and "profiles/work" in r.stdout
    r = _cli(home, fleet_file, "--profile", "work", "apply", "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    work = _cli(home, fleet_file, "status", env={"TAOSYNC_PROFILE": "work"})
    assert work.returncode == 0 and "nothing to do" in work.stdout, work.stdout + work.stderr
    assert work.stdout.split("nothing to do")[1] != user.stdout.split("nothing to do")[1]
    again = _cli(home, fleet_file, "status")  # the user's answer is still the user's
    assert again.returncode == 0
    assert again.stdout.splitlines()[0] == user.stdout.splitlines()[0]
    # the user scope's answer names whether each profile is applied, so the certificate
    # made before work was applied no longer holds (status said "never applied") ...
    timed = _cli(home, fleet_file, "status", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert re.search(r"\| +click$", timed.stderr, re.M), "the fast path answered a stale answer"
    assert "profiles: work (applied), home (never applied" in timed.stdout, timed.stdout
    # ... and a fleet that declares profiles keeps its fast path: after the next (no-op)
    # apply, replayed (click never imported), naming the profiles as the full path does
    assert _cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    timed = _cli(home, fleet_file, "status", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert not re.search(r"\| +click$", timed.stderr, re.M), "not the fast path"
    assert "profiles: work (applied), home (never applied" in timed.stdout, timed.stdout
    r = _cli(home, fleet_file, "apply", env={"TAOSYNC_PROFILE": "home"})
    assert "profiles/home" in r.stdout, r.stdout + r.stderr  # not the user's no-op


# -- env and exec ------------------------------------------------------------------------------

def test_env_profile_exports_the_isolation_variables(taosync, home):
    r = taosync("--profile", "work", "env")
    assert r.rc == 0, r.both
    root = home / ROOTS / "work"
    assert f"export CLAUDE_CONFIG_DIR='{root / '.claude'}'" in r.out
    assert f"export CODEX_HOME='{root / '.codex'}'" in r.out
    assert f"export XDG_CONFIG_HOME='{root / '.config'}'" in r.out
    assert "export TAOSYNC_PROFILE='work'" in r.out
    assert "TAOTOKEN_MODEL_BALANCED='nvidia/deepseek-r1'" in r.out  # the profile's routes
    assert "export HOME=" not in r.out  # a shell keeps its home
    assert "aider" in r.err and "taosync exec work" in r.err
    r = taosync("--profile", "work", "env", "--shell", "fish")
    assert f"set -gx CLAUDE_CONFIG_DIR '{root / '.claude'}'" in r.out
    r = taosync("--profile", "work", "--json", "env")
    import json

    assert json.loads(r.out)["CLAUDE_CONFIG_DIR"] == str(root / ".claude")
    r = taosync("--profile", "nope", "env")
    assert r.rc == 2 and "work, home" in r.err


def test_env_aliases_run_each_client_of_each_profile(taosync, home, tmp_path):
    r = taosync("env", "--aliases")
    assert r.rc == 0, r.both
    lines = r.out.splitlines()
    assert any(line.startswith("alias claude-work=") for line in lines)
    assert any(line.startswith("alias claude-home=") for line in lines)
    assert not any(line.startswith("alias codex-work=") for line in lines)  # left out
    assert any(line.startswith("alias codex-home=") for line in lines)
    # the alias runs the client with the profile's variables: a stand-in "claude" says so
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "aider"):
        (bin_dir / name).write_text('#!/bin/sh\necho "$CLAUDE_CONFIG_DIR|$HOME|$TAOSYNC_PROFILE"\n')
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home)}
    script = r.out + "\nclaude-work\naider-home\n"
    done = subprocess.run(["bash", "-O", "expand_aliases", "-c", script], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == f"{home / ROOTS / 'work/.claude'}|{home}|work"
    assert second.split("|")[1:] == [str(home / ROOTS / "home"), "home"]
    r = taosync("env", "--aliases", "--shell", "fish")
    assert "function claude-work; env CLAUDE_CONFIG_DIR=" in r.out
    r = taosync("env", "--aliases", "--shell", "powershell")
    assert "function claude-work {" in r.out and "finally" in r.out
    r = taosync("--json", "env", "--aliases")
    import json

    assert any(a.startswith("alias claude-work=") for a in json.loads(r.out)["aliases"])


def test_exec_runs_a_command_inside_the_profile(home, fleet_file):
    r = _cli(home, fleet_file, "exec", "work", "--", "sh", "-c",
             'echo "$CLAUDE_CONFIG_DIR|$CODEX_HOME|$HOME|$TAOSYNC_PROFILE"; exit 7')
    assert r.returncode == 7  # the command's own exit code
    root = home / ROOTS / "work"
    assert r.stdout.strip() == f"{root / '.claude'}|{root / '.codex'}|{os.environ['HOME']}|work"
    assert "never applied" in r.stderr
    # a client that needs a home of its own gets the root as HOME
    bin_dir = home.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "aider").write_text('#!/bin/sh\necho "$HOME"\n')
    (bin_dir / "aider").chmod(0o755)
    r = _cli(home, fleet_file, "exec", "work", "--", "aider",
             env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert r.returncode == 0 and r.stdout.strip() == str(root), r.stderr
    # a location variable of the caller's shell never leads a client out of the profile
    r = _cli(home, fleet_file, "exec", "work", "--", "sh", "-c", 'echo "${CLINE_DATA_DIR-unset}"',
             env={"CLINE_DATA_DIR": "/elsewhere"})
    assert r.stdout.strip() == "unset"
    r = _cli(home, fleet_file, "exec", "nope", "--", "true")
    assert r.returncode == 2 and "work, home" in " ".join(r.stderr.split())
    r = _cli(home, fleet_file, "exec", "work", "--", "no-such-program-here")
    assert r.returncode == 2 and "command not found" in r.stderr
    assert "Traceback" not in r.stderr


def test_inside_exec_taosync_acts_on_the_profile(home, fleet_file):
    """TAOSYNC_PROFILE set by exec: a taosync run inside acts on the profile."""
    assert _cli(home, fleet_file, "--profile", "work", "apply", "--no-verify").returncode == 0
    inner = " ".join(shlex.quote(w) for w in [sys.executable, "-m", "taosync", "--home",
                                              str(home), "-c", str(fleet_file), "where",
                                              "--json"])
    r = _cli(home, fleet_file, "exec", "work", "--", "sh", "-c", inner)
    assert r.returncode == 0, r.stderr
    assert "profiles/work" in r.stdout


def test_the_help_examples_of_exec_run(home, fleet_file, tmp_path):
    """exec's --help examples (docs test: PROVEN_ELSEWHERE), each as written in a world
    with profiles work and home, the clients stand-ins that exit 0."""
    from test_docs import examples

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex", "aider"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / "taosync").write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m taosync --home "{home}" '
        f'-c "{fleet_file}" "$@"\n')
    (bin_dir / "taosync").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    found = examples("exec")
    assert len(found) >= 3
    for line in found:
        r = subprocess.run(["sh", "-c", line], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, (line, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
    found = [e for e in examples("env") if "--profile" in e]
    assert found
    for line in found:
        r = subprocess.run(["sh", "-c", line], env=env, capture_output=True, text=True,
                           timeout=120, cwd=tmp_path)
        assert r.returncode == 0, (line, r.stdout, r.stderr)


def test_validate_checks_every_profile_merged_located_in_the_profile(taosync, home, tmp_path):
    fleet = _fleet(tmp_path / "f.yaml", {"work": {"routes": {"fast": "no-such-model"}}})
    r = taosync("validate", "--no-key", config=fleet)
    assert r.rc == 2, r.both
    line = next(i for i, text in enumerate(fleet.read_text().splitlines(), 1)
                if "no-such-model" in text)
    said = " ".join(r.err.split())
    assert "with profile 'work'" in said
    assert f"f.yaml:{line}:" in said and "profiles.work.routes.fast" in said, said
    r = taosync("--profile", "work", "plan", "--no-key", config=fleet)
    assert r.rc == 2 and f"f.yaml:{line}:" in " ".join(r.err.split())
    assert list(home.rglob("*")) == []


def test_destroy_gives_a_profile_back_after_it_left_the_fleet(taosync, home, tmp_path, fleet_file):
    """destroy --profile reads the profile's state, not fleet.yaml: a profile removed from
    the fleet is still given back; the user scope is left alone."""
    assert taosync("apply", "--no-verify").rc == 0
    user = _files(home)
    assert taosync("--profile", "home", "apply", "--no-verify").rc == 0
    assert (home / ROOTS / "home/.claude/settings.json").exists()
    gone = _fleet(tmp_path / "gone.yaml", {"work": {}})
    r = taosync("--profile", "home", "destroy", "--yes", config=gone)
    assert r.rc == 0, r.both
    assert not (home / ROOTS / "home/.claude/settings.json").exists()
    assert _files(home) == user
