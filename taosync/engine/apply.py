"""Apply: write a plan as one transaction — all files or none.

Under an exclusive lock: recover from a previous apply that died mid-way (its journal
says which files to put back), re-plan against what is on disk now, back up every file
about to change, write a journal, write each file atomically (temp file in the same
directory, fsync, rename — through symlinks to the real file), save the state, drop the
journal. A failing write puts back the files already written, so every file is its old
or its new content. Writes go through a :class:`Writer` so ``--dry-run`` and tests use
the very same path (chezmoi's System idea).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from taosync.engine.plan import FilePlan, Plan
from taosync.engine.recovery import _restore, recover  # noqa: F401 (recover: callers import it here)
from taosync.engine.state import (KEEP_APPLIES, ApplyRecord, State, StateStore, atomic_write, fsync_dir,
                                  make_private_dir, write_private)
from taosync.errors import WriteFailed

LOCK_TIMEOUT = 60.0


class LockBusy(WriteFailed):
    """Another taosync holds the lock (distinct from an I/O error: worth retrying)."""


class Writer(Protocol):
    def write(self, path: Path, data: bytes, mode: int) -> None: ...
    def remove(self, path: Path) -> None: ...


class RealWriter:
    """Atomic writes: temp file beside the target, fsync, chmod, rename, fsync dir."""

    def write(self, path: Path, data: bytes, mode: int) -> None:
        if not path.parent.exists():
            path.parent.mkdir(parents=True, mode=0o700)
        atomic_write(path, data, mode)

    def remove(self, path: Path) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        fsync_dir(path.parent)


@contextmanager
def locked(store: StateStore, timeout: float = LOCK_TIMEOUT):
    """An exclusive lock on the state directory, so two applies never interleave."""
    try:
        store.ensure()
        fd = os.open(store.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise WriteFailed(f"cannot create the state directory {store.root}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                _lock(fd)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockBusy(f"another taosync holds {store.lock_path} "
                                      f"(waited {timeout:g} s); nothing was written") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _lock(fd: int) -> None:
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            raise BlockingIOError from None


def file_mode(fp: FilePlan) -> int:
    """Keep the file's mode; 0600 for a new file, and for any file holding the key."""
    if fp.secret:
        return 0o600
    return fp.mode if fp.mode is not None else 0o644


@dataclass
class Result:
    apply_id: int | None
    written: list[FilePlan]


def execute(plan: Plan, state: State, store: StateStore, writer: Writer,
            kind: str = "apply", inputs: dict | None = None) -> Result:
    """Write every changed file of ``plan`` (already computed under the lock)."""
    changed = plan.changed
    new_files = dict(state.files)
    for fp in plan.files:
        if fp.new_state is None:
            new_files.pop(str(fp.path), None)
        else:
            new_files[str(fp.path)] = fp.new_state
    if not changed:
        if new_files != state.files or (inputs and inputs != state.inputs):
            state.files = new_files
            state.inputs = inputs or state.inputs
            store.save(state)
        return Result(None, [])

    apply_id = state.next_apply_id()
    backup_dir = store.backup_dir(apply_id)
    record = ApplyRecord(apply_id, datetime.now(timezone.utc).isoformat(timespec="seconds"), kind)
    journal_files = []
    make_private_dir(backup_dir)  # and backups/ itself: 0700 whatever the umask
    for n, fp in enumerate(changed):
        backup_name = None
        if fp.old_text is not None:
            backup_name = f"{n:03d}-{fp.path.name}"
            write_private(backup_dir / backup_name, fp.old_text.encode("utf-8"))
        prev = state.files.get(str(fp.path))
        record.files.append({
            "path": str(fp.path), "backup": backup_name, "mode": fp.mode,
            "before": _as_json(prev), "action": fp.action,
        })
        journal_files.append({"path": str(fp.path), "real_path": str(fp.real_path),
                              "backup": backup_name, "mode": fp.mode or 0o600})
    write_private(store.journal_path, json.dumps(
        {"apply_id": apply_id, "backup_dir": os.path.relpath(backup_dir, store.root),
         "files": journal_files}).encode("utf-8"))
    done: list[FilePlan] = []
    try:
        for fp in changed:
            _write_one(writer, fp)
            done.append(fp)
    except OSError as exc:
        failed = changed[len(done)]
        undo_errors = _undo(writer, done, journal_files, backup_dir)
        if not undo_errors:
            os.unlink(store.journal_path)
        raise WriteFailed(
            f"{failed.path}: cannot write ({exc.strerror or exc}); "
            + ("every file was put back as it was" if not undo_errors else
               "could not put back " + ", ".join(undo_errors) + " — run taosync apply again"),
        ) from None

    state.files = new_files
    state.applies.append(record)
    pruned = state.applies[:-KEEP_APPLIES]
    state.applies = state.applies[-KEEP_APPLIES:]
    if inputs:
        state.inputs = inputs
    store.save(state)
    os.unlink(store.journal_path)
    for old in pruned:  # after the save: a crash here only leaves an unused backup
        import shutil  # only when an old apply is pruned

        shutil.rmtree(store.backup_dir(old.id), ignore_errors=True)
    return Result(apply_id, changed)


def _write_one(writer: Writer, fp: FilePlan) -> None:
    if fp.new_text is None:
        writer.remove(fp.real_path)
    else:
        writer.write(fp.real_path, fp.new_text.encode("utf-8"), file_mode(fp))


def _undo(writer: Writer, done: list[FilePlan], journal_files, backup_dir: Path) -> list[str]:
    errors = []
    by_path = {j["path"]: j for j in journal_files}
    for fp in reversed(done):
        try:
            _restore(writer, fp.real_path, by_path[str(fp.path)], backup_dir)
        except OSError:
            errors.append(str(fp.path))
    return errors


def _as_json(fs) -> dict | None:
    return None if fs is None else asdict(fs)

