"""One home, one state (issue #23, Build 2; engine/owner.py).

The state keys client files by absolute path. Two homes sharing one state directory
(``XDG_STATE_HOME`` exported, ``HOME`` switched) used to plan each other's files as "no
longer managed" and give them back; a ``CLAUDE_CONFIG_DIR`` set for one run gave back
the default location's files the same way. Now the state records the home and the
location variables it was made for; another home is refused (exit 2, nothing written),
no run touches a file outside its home and locations, and files where a client kept its
files before a location variable moved them are left alone, kept, and named.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (EXAMPLE_FLEET, ROOT, TEST_KEY, client_location_vars, every_client_fleet,
                      snapshot)

#: a closed port: nothing here may reach a real gateway
LOCAL_GATEWAY = "http://127.0.0.1:9/api"


@pytest.fixture
def fleet(tmp_path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(EXAMPLE_FLEET.read_text().replace("https://taotoken.net/api", LOCAL_GATEWAY))
    return path


def environment(home: Path, state: Path, **more: str) -> dict:
    """A shell exporting XDG_STATE_HOME, with HOME switched to ``home``."""
    env = {k: v for k, v in os.environ.items()
           if k not in (*client_location_vars(), "XDG_CONFIG_HOME", "TAOSYNC_CONFIG",
                        "CODEX_API_KEY", "NO_COLOR", "FORCE_COLOR")}
    env.update(HOME=str(home), XDG_STATE_HOME=str(state), TAOTOKEN_API_KEY=TEST_KEY,
               PYTHONPATH=str(ROOT), **more)
    return env


def taosync(env: dict, fleet: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """A real ``python -m taosync`` process (the fast path included)."""
    return subprocess.run([sys.executable, "-m", "taosync", "-c", str(fleet), *args],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def two_homes(tmp_path, fleet):
    """Home A applied with the shared state directory; home B empty."""
    a, b, state = tmp_path / "a", tmp_path / "b", tmp_path / "shared-state"
    for d in (a, b, state):
        d.mkdir()
    env_a = environment(a, state)
    first = taosync(env_a, fleet, "apply", "--no-verify", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = taosync(env_a, fleet, "apply", "--no-verify", cwd=tmp_path)  # certifies
    assert again.returncode == 0 and "nothing to do" in again.stdout
    return a, b, state, env_a, environment(b, state)


REFUSED = [("apply",), ("apply", "--no-verify"), ("plan",), ("plan", "--check"), ("status",),
           ("destroy", "--yes"), ("rollback",), ("rollback", "--redo"), ("forget", "codex"),
           ("adopt", "--yes"), ("watch",), ("verify",), ("log",)]


@pytest.mark.parametrize("args", REFUSED, ids=" ".join)
def test_a_second_home_sharing_xdg_state_home_is_refused_and_touches_nothing(
        two_homes, fleet, tmp_path, args):
    a, b, state, _env_a, env_b = two_homes
    files_a, kept_state, fleet_text = snapshot(a), snapshot(state), fleet.read_text()
    assert len(files_a) >= 20  # the example fleet's client files
    r = taosync(env_b, fleet, *args, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        f"error: {state / 'taosync' / 'state.json'}: this state belongs to home {a}; this "
        f"run's home is {b}: set XDG_STATE_HOME to a state directory of this home (or "
        f"unset it), or run with HOME={a}; nothing was changed"]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert snapshot(a) == files_a  # byte for byte: nothing given back, nothing reverted
    assert snapshot(state) == kept_state  # not even a lock, a journal or a history line
    assert snapshot(b) == {} and fleet.read_text() == fleet_text


def test_the_no_op_fast_path_never_answers_for_another_home(two_homes, fleet, tmp_path,
                                                            monkeypatch):
    """The certificate of home A says "nothing to do"; a run under home B (same state
    directory) must not replay it, and the full path refuses (real processes)."""
    from taosync.fastpath import answer

    a, b, state, env_a, env_b = two_homes
    monkeypatch.chdir(tmp_path)
    assert answer(["-c", str(fleet), "apply"], env_a) == 0  # A's no-op is certified
    for argv in (["apply"], ["plan", "--check"], ["status"], ["-q", "apply"]):
        assert answer(["-c", str(fleet), *argv], env_b) is None
    files_a = snapshot(a)
    r = taosync(env_b, fleet, "apply", cwd=tmp_path)
    assert r.returncode == 2 and "nothing to do" not in r.stdout
    assert f"this state belongs to home {a}; this run's home is {b}" in r.stderr
    assert snapshot(a) == files_a and snapshot(b) == {}
    r = taosync(env_a, fleet, "apply", cwd=tmp_path)  # A itself still gets its answer
    assert r.returncode == 0 and "nothing to do" in r.stdout


def test_the_state_records_its_home_and_the_location_variables_in_force(tmp_path, fleet):
    home, state = tmp_path / "h", tmp_path / "st"
    home.mkdir()
    env = environment(home, state, CODEX_HOME=str(home / "codex-elsewhere"))
    assert taosync(env, fleet, "apply", "--no-verify", cwd=tmp_path).returncode == 0
    data = json.loads((state / "taosync" / "state.json").read_text())
    assert data["home"] == str(home)
    assert data["locations"] == {"CODEX_HOME": str(home / "codex-elsewhere")}
    assert (home / "codex-elsewhere" / "config.toml").exists()


# -- in-process: sandboxed homes (--home) whose state directories hold one state --------


def run(home: Path, fleet: Path, capsys, *args: str):
    from conftest import Run
    from taosync.cli import run as cli_run

    rc = cli_run(["--home", str(home), "-c", str(fleet), *args])
    out = capsys.readouterr()
    return Run(rc, out.out, out.err)


def state_file(home: Path) -> Path:
    return home / ".local" / "state" / "taosync" / "state.json"


@pytest.fixture
def homes(tmp_path, fleet, monkeypatch, capsys):
    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    for var in (*client_location_vars(), "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                "TAOSYNC_CONFIG", "CODEX_API_KEY", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    assert run(a, fleet, capsys, "apply", "--no-verify").rc == 0
    return a, b


def test_a_state_moved_to_another_home_is_refused_naming_both_and_the_fix(homes, fleet,
                                                                           capsys):
    a, b = homes
    shutil.copytree(a / ".local", b / ".local")
    before_a, before_b = snapshot(a), snapshot(b)
    r = run(b, fleet, capsys, "apply", "--no-verify")
    assert r.rc == 2
    assert (f"this state belongs to home {a}; this run's home is {b}: set XDG_STATE_HOME "
            f"to a state directory of this home (or unset it), or pass --home {a}") in r.err
    assert snapshot(a) == before_a and snapshot(b) == before_b


def _unrecorded(home: Path) -> dict:
    """Make home's state.json look as taosync wrote it before it recorded its home."""
    data = json.loads(state_file(home).read_text())
    data.pop("home"), data.pop("locations")
    state_file(home).write_text(json.dumps(data))
    return data


def test_an_old_state_adopts_the_current_home_at_the_next_write(homes, fleet, capsys):
    a, _b = homes
    _unrecorded(a)
    files = snapshot(a)
    r = run(a, fleet, capsys, "plan", "--check")
    assert r.rc == 0 and "nothing to do" in r.out  # no refusal; plan writes nothing
    assert snapshot(a) == files
    r = run(a, fleet, capsys, "apply", "--no-verify")
    assert r.rc == 0 and "nothing to do" in r.out
    data = json.loads(state_file(a).read_text())
    assert data["home"] == str(a) and data["locations"] == {}
    assert run(a, fleet, capsys, "status").rc == 0


def test_an_old_state_of_another_home_only_is_refused(homes, fleet, capsys):
    a, b = homes
    _unrecorded(a)
    shutil.copytree(a / ".local", b / ".local")
    before_a, before_b = snapshot(a), snapshot(b)
    r = run(b, fleet, capsys, "apply", "--no-verify")
    assert r.rc == 2
    assert (f"this state holds no file in this run's home {b} (it holds {a}/") in r.err
    assert "was written before taosync recorded its home" in r.err
    assert snapshot(a) == before_a and snapshot(b) == before_b


def test_files_of_another_home_in_an_old_state_are_never_touched(homes, fleet, capsys):
    """The engine's own guard, whatever the header says: an (old) state holding home A's
    files besides home B's never plans, writes or deletes A's — apply, plan, rollback
    and destroy leave them alone, keep them in the state and name them."""
    a, b = homes
    assert run(b, fleet, capsys, "apply", "--no-verify").rc == 0
    mixed, of_a = _unrecorded(b), json.loads(state_file(a).read_text())
    mixed["files"].update(of_a["files"])
    mixed["applies"][0]["files"] += of_a["applies"][0]["files"]  # rollback would restore them
    state_file(b).write_text(json.dumps(mixed))
    files_a = snapshot(a)
    foreign = sorted(p for p in mixed["files"] if p.startswith(str(a) + "/"))
    for args in (("plan",), ("apply", "--no-verify"), ("apply", "--release-moved", "--no-verify"),
                 ("rollback",), ("destroy", "--yes")):
        r = run(b, fleet, capsys, *args)
        assert r.rc == 0, (args, r.err)
        assert f"left {foreign[0]}, " in r.err and "outside this home" in r.err, args
        assert snapshot(a) == files_a, args
        kept = json.loads(state_file(b).read_text())["files"]
        assert set(foreign) <= set(kept), args
    assert json.loads(state_file(b).read_text())["home"] == str(b)


def test_plan_json_names_the_files_it_leaves_alone(homes, fleet, capsys, monkeypatch):
    a, _b = homes
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(a / ".claude-work"))
    r = run(a, fleet, capsys, "--json", "plan")
    held = json.loads(r.out)["held"]
    assert [(h["display"], h["why"], h["clients"]) for h in held] == [
        ("~/.claude.json", "moved", ["claude-code"]),
        ("~/.claude/settings.json", "moved", ["claude-code"])]


# -- a location variable switched for one run ------------------------------------------


def test_claude_config_dir_set_for_one_run_keeps_the_default_locations_files(
        homes, fleet, capsys, monkeypatch):
    a, _b = homes
    default = {p: (a / p).read_bytes() for p in (".claude.json", ".claude/settings.json")}
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(a / ".claude-work"))  # a second account
    r = run(a, fleet, capsys, "apply", "--no-verify")
    assert r.rc == 0, r.err
    assert {p: (a / p).read_bytes() for p in default} == default  # not given back
    assert (a / ".claude-work" / "settings.json").exists()
    assert ("warning: left ~/.claude.json, ~/.claude/settings.json as they are (still "
            "owned): not where claude-code keeps its files now — a location variable moved "
            "them; CLAUDE_CONFIG_DIR was unset, now ~/.claude-work: run with the earlier "
            f"location to manage them, or taosync --home {a} -c {fleet} apply --release-moved "
            "to give them back") in r.err
    owned = json.loads(state_file(a).read_text())["files"]
    assert {str(a / p) for p in default} <= set(owned)  # still owned: still given back later

    # a run back at the default location finds them as taosync left them, and keeps the
    # other account's files in turn
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    r = run(a, fleet, capsys, "apply", "--no-verify")
    assert r.rc == 0 and "nothing to do" in r.out
    assert "left ~/.claude-work/.claude.json, ~/.claude-work/settings.json" in r.err
    assert (a / ".claude-work" / "settings.json").exists()

    # and --release-moved gives back what the user no longer wants
    r = run(a, fleet, capsys, "apply", "--release-moved", "--no-verify")
    assert r.rc == 0
    assert not (a / ".claude-work" / "settings.json").exists()
    assert {p: (a / p).read_bytes() for p in default} == default
    assert "left" not in run(a, fleet, capsys, "plan").err


def test_destroy_under_a_switched_variable_leaves_files_outside_the_home(
        homes, fleet, capsys, monkeypatch, tmp_path):
    """A location outside the home is in force only while its variable says so: destroy
    without it leaves those files alone (named)."""
    a, _b = homes
    outside = tmp_path / "codex-shared"
    # without --home a location variable may point outside the home
    env = environment(a, a / ".local" / "state", CODEX_HOME=str(outside))
    r = taosync(env, fleet, "apply", "--no-verify", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    codex = snapshot(outside)
    assert codex
    r = taosync(environment(a, a / ".local" / "state"), fleet, "destroy", "--yes",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"left {outside}/" in r.stderr and "outside this home" in r.stderr
    assert snapshot(outside) == codex
    assert not (a / ".claude" / "settings.json").exists()  # the home's own went back


# -- what the no-op path relies on ------------------------------------------------------


def test_the_location_variables_are_every_one_a_client_reads():
    from taosync.engine.owner import LOCATION_VARS

    assert set(client_location_vars()) | {"XDG_CONFIG_HOME"} <= set(LOCATION_VARS)


@pytest.mark.parametrize("moved", [False, True], ids=["default", "every variable set"])
def test_every_target_lies_where_its_client_says_its_files_are(tmp_path, moved):
    """The guard gives a file back only where its client's files live (locations());
    a target outside them would never be given back."""
    from taosync.clients.base import ClientEnv
    from taosync.clients.registry import all as all_clients
    from taosync.fleet.load import load_fleet
    from taosync.pipeline import bounds as bounds_of

    environ = {"HOME": str(tmp_path), "TAOTOKEN_API_KEY": TEST_KEY}
    if moved:
        environ.update({var: str(tmp_path / "moved" / var) for var in client_location_vars()})
        environ.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"),
                       CLINE_MCP_SETTINGS_PATH=str(tmp_path / "cline-mcp.json"))
    env = ClientEnv(home=tmp_path, environ=environ, platform="linux")
    loaded = load_fleet(every_client_fleet(tmp_path), home=tmp_path, environ=environ)
    bounds = bounds_of(env)
    seen = 0
    for name, module in all_clients().items():
        for patch in module.render(loaded.fleet, loaded.key, env):
            assert bounds.held(str(patch.path), [name]) is None, (name, patch.path)
            seen += 1
    assert seen >= 20
