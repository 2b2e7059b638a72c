"""Issue #29, Build 5: chezmoi's inspection verbs — ``cat`` (one file as taosync would
leave it), ``where`` (which fleet.yaml and state directory are in effect, and why) and
``help CMD`` — each through a real ``python -m taosync`` in a sandbox home."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY, snapshot

USER_TOKEN = "sk-proj-Wq4Er7Ty1Ui8Op5As2Df9Gh6Jk3Lz0Xc"


def taosync(*args: str, cwd: Path = ROOT, env: dict | None = None):
    return subprocess.run([sys.executable, "-m", "taosync", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {}),
                                                         "PYTHONPATH": str(ROOT)})


@pytest.fixture
def seeded(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"OPENAI_API_KEY": USER_TOKEN,
                                            "MY_OWN_VAR": "mine"}}, indent=2) + "\n")
    return settings


# --------------------------------------------------------------------------- cat


def test_cat_prints_the_file_as_apply_would_leave_it_and_writes_nothing(home, fleet_file,
                                                                      seeded):
    before = snapshot(home)
    r = taosync("--home", str(home), "-c", str(fleet_file), "cat", "~/.claude/settings.json")
    assert r.returncode == 0, r.stderr
    assert '"MY_OWN_VAR": "mine"' in r.stdout  # the user's keys kept
    assert "ANTHROPIC_BASE_URL" in r.stdout  # the plan's edits made
    assert '"OPENAI_API_KEY": "(sensitive value)"' in r.stdout
    assert USER_TOKEN not in r.stdout + r.stderr and TEST_KEY not in r.stdout + r.stderr
    assert snapshot(home) == before


def test_cat_equals_the_file_apply_then_writes(home, fleet_file, seeded):
    revealed = taosync("--home", str(home), "-c", str(fleet_file), "cat", "--reveal",
                       str(seeded))
    assert revealed.returncode == 0, revealed.stderr
    assert USER_TOKEN in revealed.stdout and TEST_KEY in revealed.stdout
    applied = taosync("--home", str(home), "-c", str(fleet_file), "apply", "--no-verify")
    assert applied.returncode == 0, applied.stderr
    assert seeded.read_text() == revealed.stdout


def test_cat_a_relative_path_and_json(home, fleet_file, seeded):
    r = taosync("--home", str(home), "-c", str(fleet_file), "cat", "--json",
                ".claude/settings.json", cwd=home)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["ok"] is True and data["client"] == "claude-code"
    assert data["path"] == str(seeded) and data["display"] == "~/.claude/settings.json"
    assert "ANTHROPIC_BASE_URL" in data["text"] and USER_TOKEN not in r.stdout
    assert TEST_KEY not in r.stdout


def test_cat_a_file_taosync_does_not_manage_is_bad_input(home, fleet_file):
    (home / "notes.txt").write_text("mine\n")
    r = taosync("--home", str(home), "-c", str(fleet_file), "cat", "~/notes.txt")
    assert r.returncode == 2
    assert "not a file taosync manages" in r.stderr
    assert f"taosync --home {home} -c {fleet_file} managed" in " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr and r.stdout == ""


# --------------------------------------------------------------------------- where


def test_where_names_the_fleet_its_includes_the_state_and_why(home, fleet_file, tmp_path):
    base = tmp_path / "team" / "base.yaml"
    base.parent.mkdir()
    base.write_text(fleet_file.read_text())
    fleet_file.write_text("include: [team/base.yaml]\nversion: 1\n")
    r = taosync("--home", str(home), "-c", str(fleet_file), "where")
    assert r.returncode == 0, r.stderr
    assert str(fleet_file) in r.stdout and "-c/--config was given" in r.stdout
    assert f"includes  {base}" in r.stdout
    assert "~/.local/state/taosync" in r.stdout and "$XDG_STATE_HOME is unset" in r.stdout
    assert "(--home)" in r.stdout
    data = json.loads(taosync("--home", str(home), "-c", str(fleet_file), "where",
                              "--json").stdout)
    assert data["config"] == {**data["config"], "path": str(fleet_file), "exists": True}
    assert data["includes"] == [str(base)]
    assert data["state"]["path"] == str(home / ".local/state/taosync")
    assert data["home"] == {"path": str(home), "reason": "--home"}


def test_where_follows_taosync_config_then_the_current_directory(home, fleet_file, tmp_path):
    r = taosync("--home", str(home), "where", "--json", cwd=tmp_path,
                env={"TAOSYNC_CONFIG": str(fleet_file)})
    data = json.loads(r.stdout)
    assert data["config"]["path"] == str(fleet_file)
    assert data["config"]["reason"] == "$TAOSYNC_CONFIG is set"
    r = taosync("--home", str(home), "where", cwd=tmp_path)  # tmp_path/fleet.yaml
    assert r.returncode == 0 and "./fleet.yaml exists in the current directory" in r.stdout


def test_where_without_a_fleet_says_where_it_looked_and_needs_no_key(home, tmp_path):
    state = home / "state"
    env = {"XDG_STATE_HOME": str(state), "TAOTOKEN_API_KEY": ""}
    r = taosync("--home", str(home), "where", cwd=home, env=env)
    assert r.returncode == 0, r.stderr
    assert "~/.config/taosync/fleet.yaml  (not found)" in r.stdout
    assert "$TAOSYNC_CONFIG: unset" in r.stdout and re.search(r"`taosync --home \S+ init` writes a starter", r.stdout)
    assert "~/state/taosync" in r.stdout and "$XDG_STATE_HOME is set" in r.stdout
    data = json.loads(taosync("--home", str(home), "where", "--json", cwd=home, env=env).stdout)
    assert data["ok"] is True and data["config"]["exists"] is False
    assert [p["source"] for p in data["config"]["searched"]][:3] == [
        "-c", "$TAOSYNC_CONFIG", "./fleet.yaml"]
    assert not (home / ".local").exists() and not state.exists()  # nothing written


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize("name", ["apply", "cat", "where", "help", "diff"])
def test_help_cmd_is_cmd_help(name):
    via_help = taosync("help", name)
    assert via_help.returncode == 0, via_help.stderr
    assert via_help.stdout == taosync(name, "--help").stdout
    assert "Exit codes:" in via_help.stdout


def test_help_alone_is_the_command_list():
    r = taosync("help")
    assert r.returncode == 0 and r.stdout == taosync("--help").stdout
    for name in ("cat", "where", "help"):
        assert f"\n  {name} " in r.stdout


def test_help_of_an_unknown_command_is_bad_input_with_did_you_mean():
    r = taosync("help", "aply")
    assert r.returncode == 2 and r.stdout == ""
    assert "no such command 'aply'; did you mean 'apply'?" in r.stderr
    assert "Traceback" not in r.stderr
    data = json.loads(taosync("help", "wher", "--json").stdout)
    assert data["exit_code"] == 2 and "did you mean 'where'?" in data["error"]


def test_completion_offers_the_new_verbs_and_help_completes_command_names():
    env = {"_TAOSYNC_COMPLETE": "bash_complete", "COMP_WORDS": "taosync wh", "COMP_CWORD": "1"}
    r = taosync(env=env)
    assert "plain,where" in r.stdout.splitlines()
    env.update(COMP_WORDS="taosync help ca", COMP_CWORD="2")
    assert "plain,cat" in taosync(env=env).stdout.splitlines()


def test_cat_reveal_of_every_managed_file_is_what_apply_writes(home, fleet_file, seeded):
    """The invariant of cat: for each file of the render, before the apply, its output is
    byte for byte the file the apply then leaves (a file the apply removes: none) — but
    for a volatile key's value (Cline's ``updatedAt``: the time of the render), which is
    compared as a timestamp."""
    base = ("--home", str(home), "-c", str(fleet_file))
    managed = json.loads(taosync(*base, "managed", "--json").stdout)
    paths = [f["path"] for files in managed["clients"].values() for f in files]
    assert len(paths) > 10
    before = {}
    for path in paths:
        r = taosync(*base, "cat", "--reveal", "--json", path)
        assert r.returncode == 0, (path, r.stderr)
        before[path] = json.loads(r.stdout)["text"]
    assert taosync(*base, "apply", "--no-verify").returncode == 0
    volatile = {f["path"] for files in managed["clients"].values() for f in files
                if any(k["role"] == "volatile" for k in f["keys"])}
    assert volatile  # the example fleet has one (Cline): the exception is exercised

    def stamped(text):
        return re.sub(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"', '"TIME"', text)

    for path, text in before.items():
        p = Path(path)
        after = p.read_text() if p.exists() else None
        if path in volatile:
            after, text = stamped(after), stamped(text)
            assert '"TIME"' in text, path
        assert after == text, path
