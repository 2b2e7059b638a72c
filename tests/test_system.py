"""engine/system.py: one System for every file operation.

The read-only commands are run on an ErrorOnWriteSystem (installed with
``system.using``, the hook every file operation consults) AND compared with a snapshot
of the whole sandbox (home and state dir) before and after: the first catches a write
through the System, the second one that goes around it.

What a read-only command may still write, by decision:
- recovery of an interrupted apply (a journal left behind) puts the disk back on any
  command and says so; it runs on the real disk whatever System is installed (no
  journal here, so nothing to recover);
- ``verify`` appends its results to history.jsonl (``stats`` reads them): that append
  goes through the System and is the one write allowed, by path; the snapshot leaves
  history.jsonl out and the test checks it grew.

``apply --dry-run`` installs its own DryRunSystem over the ErrorOnWriteSystem (it runs
the real commit path, whose writes that System records); the snapshot proves none of
them reached the disk, and the pipeline-level test below checks what it recorded.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import TEST_KEY, snapshot

from taosync.engine import system
from taosync.engine.system import DryRunSystem, ErrorOnWriteSystem, RealSystem, using
from taosync.stub import Stub

EXAMPLE_ROOT = "https://taotoken.net/api"
MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]


def state_dir(home: Path) -> Path:
    return home / ".local/state/taosync"


def sandbox(tmp_path: Path, *leave_out: Path) -> dict[str, str]:
    """Every file under the test's tmp dir (home, state dir, fleet.yaml) but ``leave_out``."""
    skip = {str(p.relative_to(tmp_path)) for p in leave_out}
    return {k: v for k, v in snapshot(tmp_path).items() if k not in skip}


def drifted_and_pending(taosync, home: Path, fleet_file: Path) -> None:
    """An applied home with a hand edit (drift) and an edited fleet (pending changes)."""
    assert taosync("apply", "--no-verify").rc == 0
    codex = home / ".codex/config.toml"
    codex.write_text(codex.read_text().replace('model = "gpt-4o-mini"', 'model = "hand-edit"'))
    fleet_file.write_text(fleet_file.read_text().replace("max_tokens: 16", "max_tokens: 17"))


READ_ONLY = [("plan",), ("plan", "--json"), ("status",), ("status", "--json"),
             ("route",), ("route", "fast"), ("import", "--json"), ("validate",),
             ("apply", "--dry-run"), ("apply", "--dry-run", "--json"),
             ("apply", "--dry-run", "--no-key")]


@pytest.mark.parametrize("applied", [False, True], ids=["first-run", "applied"])
def test_read_only_commands_write_nothing(taosync, home, fleet_file, tmp_path, applied):
    if applied:
        drifted_and_pending(taosync, home, fleet_file)
    before = sandbox(tmp_path)
    for args in READ_ONLY:
        with using(ErrorOnWriteSystem()):
            r = taosync(*args)
        assert r.rc in (0, 1), (args, r.both)  # status exits 1 on drift or pending changes
        assert "Traceback" not in r.both and "read-only run" not in r.both, (args, r.both)
        assert sandbox(tmp_path) == before, args
    if not applied:
        assert not state_dir(home).exists()  # not even the state dir, lock or hmac.key


def test_verify_writes_only_its_history(taosync, home, fleet_file, tmp_path):
    history = state_dir(home) / "history.jsonl"
    with Stub(key=TEST_KEY, models=MODELS) as stub:
        assert stub.root.startswith("http://127.0.0.1:")
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, stub.root))
        assert taosync("apply", "--no-verify").rc == 0
        before = sandbox(tmp_path, history)
        lines = history.read_text().count("\n") if history.exists() else 0
        with using(ErrorOnWriteSystem(allow=(history,))):
            r = taosync("verify")
    assert "Traceback" not in r.both and "read-only run" not in r.both, r.both
    assert "backends pass" in r.out, r.both
    assert sandbox(tmp_path, history) == before
    assert history.read_text().count("\n") > lines  # the one write it may do


def test_error_on_write_system_stops_an_apply_before_anything_is_written(taosync, home,
                                                                        tmp_path):
    before = sandbox(tmp_path)
    with using(ErrorOnWriteSystem()):
        r = taosync("apply", "--no-verify")
    # a write on a read-only run is a bug: the CLI's internal error (70), not a traceback
    assert r.rc == 70 and "internal error: WrittenOnReadOnly" in r.err, r.both
    assert sandbox(tmp_path) == before


def test_dry_run_system_runs_the_whole_commit_path_and_only_records_it(home, fleet_file,
                                                                      tmp_path):
    """prepare → plan → commit on a DryRunSystem: the lock, backups, journal, every target
    and the state are recorded, in the order a real apply does them; nothing on disk."""
    from taosync import pipeline
    from taosync.settings import Settings

    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text('model = "mine"\n')
    before = sandbox(tmp_path)
    ctx = pipeline.prepare(Settings(config=fleet_file, home=home))
    the_plan, state = pipeline.plan_apply(ctx)
    with using(DryRunSystem()) as dry:
        the_plan, result = pipeline.commit(ctx, the_plan, state)
    assert sandbox(tmp_path) == before
    assert result.written and result.apply_id == 1
    written = [p for what, p in dry.would if what == "write"]
    root = state_dir(home)
    targets = {fp.real_path for fp in the_plan.changed}
    assert targets and targets <= set(written)
    assert root / "journal.json" in written and root / "state.json" in written
    assert root / "backups/1/000-config.toml" in written or any(
        p.parent == root / "backups/1" for p in written)
    order = [written.index(root / "journal.json"), min(written.index(t) for t in targets),
             written.index(root / "state.json")]
    assert order == sorted(order)  # journal before any target, state after every one
    assert ("remove", root / "journal.json") not in dry.would  # never was on disk


def test_real_system_write_atomic_sets_the_mode_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        RealSystem().write_atomic(tmp_path / "a", b"x", 0o644)
        RealSystem().make_dirs(tmp_path / "d/e", 0o755)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "d/e").stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_guard_is_checked_last_before_the_write(tmp_path):
    target = tmp_path / "t"
    target.write_text("old")
    checked = []
    real = RealSystem()
    real.guard(target, lambda: checked.append(target.read_text()))
    real.write(target, b"new", 0o600)
    real.write(target, b"newer", 0o600)  # checked once, then dropped
    assert checked == ["old"] and target.read_text() == "newer"

    def refuse():
        raise system.LockBusy("moved")

    for s in (RealSystem(), DryRunSystem()):
        s.guard(target, refuse)
        with pytest.raises(system.LockBusy):
            s.write(target, b"never", 0o600)
    assert target.read_text() == "newer"


def test_a_write_that_fails_leaves_no_guard_behind(tmp_path):
    """A guard is taken when its write starts: a later unguarded write (putting a file
    back) is never refused by a stale one."""
    (tmp_path / "file").write_text("")
    target = tmp_path / "file/under/it"
    real = RealSystem()
    real.guard(target, lambda: None)
    with pytest.raises(OSError):
        real.write(target, b"x", 0o600)  # its directory cannot be made
    assert real.guarded == {}


def test_init_writes_0644_with_the_shared_atomic_write_whatever_the_umask(taosync, tmp_path):
    target = tmp_path / "new/dir/fleet.yaml"
    old = os.umask(0o077)
    try:
        r = taosync("init", str(target))
    finally:
        os.umask(old)
    assert r.rc == 0, r.both
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["fleet.yaml"]  # no temp left


def test_using_restores_the_system_before(tmp_path):
    outer = DryRunSystem()
    with using(outer):
        with using(ErrorOnWriteSystem()):
            pass
        assert system.current() is outer
    assert isinstance(system.current(), RealSystem)
