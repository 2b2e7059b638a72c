"""State safety: recovery from an interrupted apply, a journal that cannot be trusted,
the state directory's permissions, an empty HOME, and a state.json of the wrong shape."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET, snapshot
from test_apply_crash import ORIGINALS, apply_cmd, env, seed

STATE = ".local/state/taosync"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- 1. a SIGKILL during the first apply -------------------------------------------------

#: run an apply in a real second process that SIGKILLs itself right after writing its
#: first client file: the journal is on disk, one file is new, the others are old, and
#: (a first apply) there is no state.json yet
KILL_AFTER_FIRST_WRITE = textwrap.dedent("""
    import os, signal, sys
    import taosync.engine.apply as apply

    write_one = apply._write_one

    def write_then_die(writer, fp):
        write_one(writer, fp)
        os.kill(os.getpid(), signal.SIGKILL)

    apply._write_one = write_then_die
    from taosync.cli import run
    sys.exit(run(sys.argv[1:]))
""")


def crash_first_apply(home: Path) -> Path:
    """Seed the home, kill its first apply mid-way; returns the file it had written."""
    seed(home)
    argv = apply_cmd(home)[3:]  # the CLI arguments after "python -m taosync"
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_WRITE, *argv], env=env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    state_dir = home / STATE
    assert (state_dir / "journal.json").exists() and not (state_dir / "state.json").exists()
    written = [rel for rel, text in ORIGINALS.items() if (home / rel).read_text() != text]
    assert len(written) == 1, written
    return home / written[0]


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(EXAMPLE_FLEET), *args]
    return subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [("rollback",), ("apply", "--no-verify"), ("verify", "--stub")])
def test_the_next_command_recovers_an_apply_killed_mid_way_and_says_so(tmp_path, args):
    home = tmp_path / "home"
    written = crash_first_apply(home)
    r = run_cli(home, *args)
    assert "Traceback" not in r.stderr
    shown = "~/" + str(written.relative_to(home))
    assert f"recovered from an interrupted apply: restored {shown}" in r.stderr
    assert not (home / STATE / "journal.json").exists()
    if args[0] == "apply":
        assert r.returncode == 0, r.stderr
        assert all((home / rel).read_text() != text for rel, text in ORIGINALS.items())
        assert run_cli(home, "status").returncode == 0
        return
    # every file is back as the interrupted apply found it
    assert {rel: (home / rel).read_text() for rel in ORIGINALS} == ORIGINALS
    if args[0] == "rollback":
        assert r.returncode == 0, r.stderr
        assert "rolled back the interrupted apply" in r.stdout
        assert "nothing to roll back" not in r.stdout + r.stderr


@pytest.mark.parametrize("args", [("status",), ("plan",), ("plan", "--check"),
                                  ("apply", "--dry-run"), ("plan", "--no-key")])
def test_a_read_only_command_reports_an_apply_killed_mid_way_and_touches_nothing(tmp_path,
                                                                                 args):
    """plan, status and a dry run never write (README): they used to put the interrupted
    apply's files back — a write — and now say that one was interrupted and which
    command recovers it, reading the files as they are."""
    home = tmp_path / "home"
    crash_first_apply(home)
    before = snapshot(home)
    r = run_cli(home, *args)
    assert "Traceback" not in r.stderr
    assert "an apply was interrupted" in r.stderr and "journal.json" in r.stderr
    assert f"`taosync --home {home} -c {EXAMPLE_FLEET} apply` puts them back" in r.stderr
    assert "recovered" not in r.stderr
    assert snapshot(home) == before  # the journal too: the next apply recovers it
    assert (home / STATE / "journal.json").exists()


def test_watch_recovers_an_apply_killed_mid_way_before_its_first_apply(tmp_path):
    import threading
    import time

    home = tmp_path / "home"
    written = crash_first_apply(home)
    cmd = [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(EXAMPLE_FLEET),
           "watch", "--no-verify"]
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines: list[str] = []
    readers = [threading.Thread(target=lambda f=f: lines.extend(f), daemon=True)
               for f in (proc.stdout, proc.stderr)]
    for t in readers:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while not any("applied" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for t in readers:
        t.join(timeout=5)
    text = "".join(lines)
    shown = "~/" + str(written.relative_to(home))
    assert f"recovered from an interrupted apply: restored {shown}" in text, text
    assert "Traceback" not in text
    assert not (home / STATE / "journal.json").exists()
    assert run_cli(home, "status").returncode == 0  # and then applied in full


def test_a_read_only_command_never_waits_for_the_lock_over_a_journal(tmp_path, monkeypatch,
                                                                      capsys):
    """It used to take the lock to recover (and refuse, exit 3, when another taosync
    held it); it now only reads, so it answers at once and says what recovers it."""
    import fcntl

    import taosync.engine.state as state_mod
    from taosync.cli import run

    home = tmp_path / "home"
    crash_first_apply(home)
    before = snapshot(home)
    monkeypatch.setattr(state_mod, "LOCK_TIMEOUT", 0.2)
    monkeypatch.setenv("TAOTOKEN_API_KEY", env()["TAOTOKEN_API_KEY"])
    fd = os.open(home / STATE / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another taosync holds it
        rc = run(["--home", str(home), "-c", str(EXAMPLE_FLEET), "status"])
    finally:
        os.close(fd)
    err = capsys.readouterr().err
    assert rc == 1  # never applied here: everything pending
    again = f"taosync --home {home} -c {EXAMPLE_FLEET}"  # the hints keep --home and -c
    assert "interrupted" in err and f"{again} apply" in err and f"{again} rollback" in err
    assert "Traceback" not in err
    assert snapshot(home) == before  # nothing recovered, nothing reported as in sync


def test_no_op_fast_path_does_not_say_nothing_to_do_over_a_journal(tmp_path):
    home = tmp_path / "home"
    seed(home)
    assert run_cli(home, "apply", "--no-verify").returncode == 0
    applied = {rel: (home / rel).read_text() for rel in ORIGINALS}
    # a second apply that dies after its first write leaves a journal over a warm cache
    (home / ".codex/config.toml").write_text(ORIGINALS[".codex/config.toml"].replace("o3", "o4"))
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_WRITE,
                           *apply_cmd(home)[3:], "--yes"], env=env(), capture_output=True,
                          timeout=60)  # --yes: over the hand edit (taosync/confirm.py)
    assert proc.returncode == -signal.SIGKILL
    assert (home / STATE / "journal.json").exists()
    r = run_cli(home, "apply", "--no-verify", "--yes")
    assert r.returncode == 0, r.stderr
    assert "recovered from an interrupted apply" in r.stderr
    assert {rel: (home / rel).read_text() for rel in ORIGINALS} == applied


# -- 2. a journal that taosync did not write -----------------------------------------------

def plant(home: Path, entries: list[dict], backup_dir: str = "backups/1") -> Path:
    state_dir = home / STATE
    (state_dir / "backups" / "1").mkdir(parents=True)
    (state_dir / "backups" / "1" / "000-x").write_text("export EVIL=1\n")
    journal = state_dir / "journal.json"
    journal.write_text(json.dumps({"apply_id": 1, "backup_dir": backup_dir, "files": entries}))
    return journal


def entry(path: Path, backup: str | None = "000-x", real: Path | None = None) -> dict:
    return {"path": str(path), "real_path": str(real or path), "backup": backup, "mode": 0o644}


@pytest.mark.parametrize("case", ["bashrc", "dotdot-path", "real-path-elsewhere",
                                  "backup-dir-outside", "backup-name-escapes",
                                  "backup-symlink-outside", "removes-bashrc"])
def test_a_planted_journal_touches_nothing_outside_the_client_files(taosync, home, tmp_path,
                                                                    case):
    bashrc = home / ".bashrc"
    bashrc.write_text("# mine\n")
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text(ORIGINALS[".codex/config.toml"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "000-x").write_text("model = 'evil'\n")
    backup_dir = "backups/1"
    planted = {
        "bashrc": [entry(bashrc)],
        "removes-bashrc": [entry(bashrc, backup=None)],
        "dotdot-path": [entry(Path(f"{home}/.codex/../.bashrc"))],
        "real-path-elsewhere": [entry(codex, real=bashrc)],
        "backup-dir-outside": [entry(codex)],
        "backup-name-escapes": [entry(codex, backup=f"../../../../{outside.name}/000-x")],
        "backup-symlink-outside": [entry(codex, backup="001-link")],
    }[case]
    if case == "backup-dir-outside":
        backup_dir = os.path.relpath(outside, home / STATE)
    journal = plant(home, planted, backup_dir)
    if case == "backup-name-escapes":  # make the escape resolve to a real file
        (tmp_path / "home" / outside.name).mkdir()
        (tmp_path / "home" / outside.name / "000-x").write_text("model = 'evil'\n")
    if case == "backup-symlink-outside":
        (journal.parent / "backups/1/001-link").symlink_to(outside / "000-x")
    r = taosync("rollback")  # a command that recovers (status only reports now)
    assert "Traceback" not in r.err
    assert "refused to put back" in r.err and "left untouched" in r.err
    assert bashrc.read_text() == "# mine\n"
    assert codex.read_text() == ORIGINALS[".codex/config.toml"]
    # set aside, so it never blocks again
    assert not journal.exists() and journal.with_name("journal.json.rejected").exists()
    again = taosync("rollback")
    assert "refused" not in again.err and "recovered" not in again.err


def test_a_journal_that_is_not_one_is_set_aside(taosync, home):
    (home / STATE).mkdir(parents=True)
    journal = home / STATE / "journal.json"
    for text in ("{not json", "[]", '{"apply_id": "1", "backup_dir": "b", "files": []}',
                 '{"apply_id": 1, "backup_dir": "b", "files": ["x"]}'):
        journal.write_text(text)
        r = taosync("apply", "--no-verify")  # recovers (plan only reports now)
        assert r.rc == 0, r.err
        assert "is not a journal taosync wrote" in r.err
        assert not journal.exists()
        assert (home / STATE / "journal.json.rejected").read_text() == text


def test_a_genuine_journal_entry_is_restored_beside_a_refused_one(taosync, home):
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text("half-applied = true\n")
    bashrc = home / ".bashrc"
    bashrc.write_text("# mine\n")
    plant(home, [entry(codex), entry(bashrc)])
    r = taosync("rollback")  # recovers (status only reports now)
    assert codex.read_text() == "export EVIL=1\n"  # the backup named, inside backups/
    assert bashrc.read_text() == "# mine\n"
    assert "restored ~/.codex/config.toml" in r.err and "'" + str(bashrc) + "'" in r.err


# -- 3. the state directory is private whatever the umask -----------------------------------

@pytest.fixture
def umask_zero():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_state_dirs_are_0700_under_umask_0(taosync, home, umask_zero):
    assert taosync("apply", "--no-verify").rc == 0
    for rel in (".local", ".local/state", STATE, f"{STATE}/backups", f"{STATE}/backups/1"):
        assert mode(home / rel) == 0o700, rel
    for p in (home / STATE).iterdir():
        if p.is_file():
            assert mode(p) == 0o600, p


def test_verify_before_the_first_apply_creates_a_private_state_dir(taosync, home, umask_zero):
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.err
    for rel in (".local", ".local/state", STATE):
        assert mode(home / rel) == 0o700, rel
    assert mode(home / STATE / "history.jsonl") == 0o600


def test_an_existing_state_dir_is_tightened_when_opened_for_writing(taosync, home, umask_zero):
    (home / STATE).mkdir(parents=True, mode=0o777)
    os.chmod(home / STATE, 0o777)
    assert taosync("apply", "--no-verify").rc == 0
    assert mode(home / STATE) == 0o700
    os.chmod(home / STATE, 0o755)
    assert taosync("verify", "--stub").rc == 0
    assert mode(home / STATE) == 0o700


# -- 4. an empty or unset HOME ------------------------------------------------------------

@pytest.mark.parametrize("home_value", [None, ""])
@pytest.mark.parametrize("args", [("apply", "--no-verify"), ("plan",), ("status",),
                                  ("rollback",), ("verify", "--stub")])
def test_an_empty_or_unset_home_is_bad_input(tmp_path, home_value, args):
    e = env()
    e.pop("HOME", None)
    if home_value is not None:
        e["HOME"] = home_value
    # every location pointed into the sandbox: should the check ever regress, the run
    # writes there (and fails below) rather than at / or in the real home
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLINE_DIR", "CONTINUE_GLOBAL_DIR",
                "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        e[var] = str(tmp_path / "sandbox" / var)
    root_before = sorted(os.listdir("/"))
    before = snapshot(tmp_path)
    r = subprocess.run([sys.executable, "-m", "taosync", "-c", str(EXAMPLE_FLEET), *args],
                       env=e, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().endswith("HOME is empty or unset: pass --home DIR")
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir("/")) == root_before and snapshot(tmp_path) == before


# -- 5. a state.json of the wrong shape ---------------------------------------------------

BROKEN_SHAPES = {
    "a list": [],
    "a string": "state",
    "files a string": {"version": 1, "files": "x"},
    "files a list": {"version": 1, "files": []},
    "a file entry a list": {"files": {"/x": []}},
    "an owned key missing hash": {"files": {"/x": {
        "path": "/x", "format": "json", "clients": ["codex"], "sha256": "0",
        "owned": {"a": {"value": 1}}}}},
    "an owned key a string": {"files": {"/x": {
        "path": "/x", "format": "json", "clients": ["codex"], "sha256": "0", "owned": {"a": "h"}}}},
    "a file entry missing sha256": {"files": {"/x": {
        "path": "/x", "format": "json", "clients": []}}},
    "clients a string": {"files": {"/x": {
        "path": "/x", "format": "json", "clients": "codex", "sha256": "0"}}},
    "applies a dict": {"applies": {}},
    "an apply id a string": {"applies": [{"id": "1", "time": "t", "kind": "apply"}]},
    "an apply file entry a string": {"applies": [{"id": 1, "time": "t", "kind": "apply",
                                                  "files": ["x"]}]},
    "an apply 'before' of the wrong shape": {"applies": [{
        "id": 1, "time": "t", "kind": "apply",
        "files": [{"path": "/x", "backup": None, "mode": None, "before": {"path": 1}}]}]},
    "inputs a list": {"inputs": []},
    "version a string": {"version": "1"},
}


def write_state(home: Path, data) -> Path:
    path = home / STATE / "state.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("shape", list(BROKEN_SHAPES))
def test_a_state_json_of_the_wrong_shape_is_reported_not_a_traceback(taosync, home, shape):
    seed(home)
    state = write_state(home, BROKEN_SHAPES[shape])
    before = snapshot(home)
    for args in (("plan",), ("status",), ("apply", "--no-verify"), ("rollback",)):
        r = taosync(*args)
        assert r.rc == 2, (args, r.out, r.err)
        assert f"{state} is damaged: " in r.err and "move it away" in r.err, r.err
        assert len(r.err.strip().splitlines()) == 1, r.err
    assert snapshot(home) == before


def _nodes(value, path=()):
    """Every (path, value) in a JSON document, the root included."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, path + (i,))


def _replace(doc, path, new):
    doc = copy.deepcopy(doc)
    if not path:
        return new
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return doc


def test_any_node_of_a_real_state_given_the_wrong_type_never_gives_a_traceback(
        taosync, home, fleet_file):
    """Property: take a real state (two applies, a rollback), give one node at a time a
    value of another type; plan and status either work or say the state is damaged."""
    seed(home)
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: claude-sonnet-4-20250514"))
    taosync("apply", "--no-verify")
    assert taosync("rollback").rc == 0
    state_path = home / STATE / "state.json"
    real = json.loads(state_path.read_text())
    nodes = list(_nodes(real))
    rng = random.Random(11)
    others = [None, 7, "x", [], {}, True, [1], {"k": "v"}]
    for path, value in rng.sample(nodes, min(60, len(nodes))):
        wrong = rng.choice([o for o in others if type(o) is not type(value)])
        state_path.write_text(json.dumps(_replace(real, path, wrong)))
        for args in (("plan",), ("status",)):
            r = taosync(*args)
            assert "Traceback" not in r.err
            if r.rc == 2:
                assert "state.json is damaged: " in r.err, (path, wrong, r.err)
            else:
                assert r.rc in (0, 1), (path, wrong, r.rc, r.err)
