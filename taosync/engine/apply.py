"""Apply: write a plan as one transaction — all files or none.

Under an exclusive lock: recover from a previous apply that died mid-way (its journal
says which files to put back), re-plan against what is on disk now, back up every file
about to change, write a journal, write each file atomically (temp file in the same
directory, fsync, rename — through symlinks to the real file), save the state, drop the
journal. A failing write puts back the files already written, so every file is its old
or its new content. Every write goes through the System in effect (engine/system.py),
so ``--dry-run`` runs this very path on a DryRunSystem (chezmoi's System idea).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from taosync.bounded import read_regular_stat
from taosync.engine.plan import FilePlan, Plan
from taosync.engine.recovery import restore_entry
from taosync.hints import again
from taosync.engine.state import (ApplyRecord, State, StateStore, missing_dirs, prune_history,
                                  sha256_bytes, write_private)
from taosync.engine.system import RealSystem, System
from taosync.errors import WriteFailed

#: what a target was when the plan's text was checked: (size, mtime_ns, sha256), or
#: None when it did not exist ("!" and the error's name in place of the size: unreadable)
Fingerprint = tuple[int | str, int, str] | None

#: the old name of the target writer: the System itself writes targets now
RealWriter = RealSystem


class TargetMoved(WriteFailed):
    """Another program changed a target after taosync read it; every file was put back,
    so the caller may plan again from what is on disk now."""

    def __init__(self, path: Path, outcome: str = "no client file was changed"):
        super().__init__(f"{path} was changed by another program while taosync was "
                         f"writing it; {outcome}")
        self.path = path
        self.outcome = outcome


def fingerprint(path: Path) -> tuple[Fingerprint, bytes | None]:
    """What ``path`` is now: its fingerprint and bytes (None, None when absent), read
    with the home owner's rights when root acts for one (taosync/privilege.py)."""
    from taosync.privilege import owner_rights

    try:
        with owner_rights():
            st, data = read_regular_stat(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # a FIFO or a device put in its place: not what was planned
        return ("!" + type(exc).__name__, 0, ""), None
    return (st.st_size, st.st_mtime_ns, sha256_bytes(data)), data


def check_unchanged(path: Path, seen: Fingerprint) -> None:
    """Raise :class:`TargetMoved` when ``path`` is no longer as ``seen``."""
    if fingerprint(path)[0] != seen:
        raise TargetMoved(path)


def file_mode(fp: FilePlan) -> int:
    """The mode to write: the user's own bits for an existing file, minus group and
    other access when it holds the key; 0600 (key) or 0644 for a new file. Never adds
    a bit the user removed (a read-only file stays read-only)."""
    if fp.mode is None:
        return 0o600 if fp.secret else 0o644
    return fp.mode & ~0o077 if fp.secret else fp.mode


@dataclass
class Result:
    apply_id: int | None
    written: list[FilePlan]
    kind: str = "apply"  # the record's kind (engine/state.py KINDS)


def execute(plan: Plan, state: State, store: StateStore, writer: System | None = None,
            kind: str = "apply", inputs: dict | None = None, *, force: bool = False,
            undoes: list[int] | None = None, changes: list[str] | None = None,
            message: str | None = None, fleet: dict[str, str] | None = None) -> Result:
    """Write every changed file of ``plan`` (already computed under the lock).

    All or nothing: backups and journal first (failing there, no client file is
    touched), then the files, then the state; any failure puts back the files already
    written and drops the journal, and ``state`` is left as it was. ``force`` writes
    targets the user made read-only (an apply refuses them otherwise; a rollback puts
    back what was there, read-only or not). ``kind`` and ``undoes`` are recorded for
    ``taosync log`` and rollback's cursor (engine/state.py KINDS), with an apply's
    ``changes`` (the fleet keys it changed) and ``message`` (``apply -m``); ``fleet`` is
    the fleet snapshot the state keeps from this record on (engine/fleet_changes.py; None:
    the one it has). Targets go through ``writer`` (default: the
    store's System), everything else through the store's System.
    """
    writer = store.system if writer is None else writer
    changed = plan.changed
    new_files = dict(state.files)
    for fp in plan.files:
        if fp.new_state is None:
            new_files.pop(str(fp.path), None)
        else:
            new_files[str(fp.path)] = fp.new_state
    if not changed:
        unrecorded = store.owner is not None and state.home is None  # engine/owner.py
        if new_files != state.files or (inputs and inputs != state.inputs) or unrecorded:
            saved = replace(state, files=new_files, inputs=inputs or state.inputs)
            _save(store, saved, "no client file was changed")
            state.home, state.locations = saved.home, saved.locations
            state.files = new_files
            state.inputs = inputs or state.inputs
        return Result(None, [])

    seen = {fp.real_path: _as_planned(fp, refuse_read_only=kind in ("apply", "reassert", "route")
                                      and not force)
            for fp in changed}
    apply_id = state.next_apply_id()
    backup_dir = store.backup_dir(apply_id)
    record = ApplyRecord(apply_id, datetime.now(timezone.utc).isoformat(timespec="seconds"), kind,
                         undoes=list(undoes or []), changes=changes, message=message)
    journal_files = []
    try:
        store.system.make_private_dir(backup_dir)  # and backups/ itself: 0700 whatever the umask
        for n, fp in enumerate(changed):
            backup_name = None
            if fp.old_text is not None:
                backup_name = f"{n:03d}-{fp.path.name}"
                write_private(backup_dir / backup_name, fp.old_text.encode("utf-8"))
            prev = state.files.get(str(fp.path))
            record.files.append({
                "path": str(fp.path), "backup": backup_name, "mode": fp.mode,
                "before": _as_json(prev), "action": fp.action, "clients": list(fp.clients),
                # what this record leaves there (None: removed), so a later step can
                # tell hand edits made since (engine/rollback.py edited_since_written)
                "after": None if fp.new_text is None
                else sha256_bytes(fp.new_text.encode("utf-8")),
            })
            journal_files.append({"path": str(fp.path), "real_path": str(fp.real_path),
                                  "backup": backup_name,
                                  "mode": 0o600 if fp.mode is None else fp.mode})
        write_private(store.journal_path, json.dumps(
            {"apply_id": apply_id, "backup_dir": os.path.relpath(backup_dir, store.root),
             "files": journal_files}).encode("utf-8"))
    except OSError as exc:
        _discard(store, backup_dir)
        raise WriteFailed(f"cannot write taosync's backups in {store.root} "
                          f"({exc.strerror or exc}); no client file was changed") from None

    kept, dropped = prune_history(state.applies + [record])
    new_state = replace(state, files=new_files, applies=kept,
                        inputs=inputs or state.inputs, made_dirs=list(state.made_dirs),
                        fleet=state.fleet if fleet is None else fleet)
    for fp in changed:  # the directories the writes below create: destroy takes them back
        if fp.new_text is not None:
            new_state.remember_dirs(missing_dirs(fp.real_path.parent))
    done: list[FilePlan] = []
    try:
        for fp in changed:
            writer.guard(fp.real_path, _unchanged_since(fp.real_path, seen[fp.real_path]))
            _write_one(writer, fp)
            done.append(fp)
        store.save(new_state)
    except (OSError, TargetMoved) as exc:
        undo_errors = _undo(writer, done, journal_files, backup_dir)
        if not undo_errors:
            _discard(store, backup_dir)
        outcome = ("every file was put back as it was" if not undo_errors else
                   "could not put back " + ", ".join(undo_errors) + f" — run {again('apply')} again")
        if isinstance(exc, TargetMoved):
            raise TargetMoved(exc.path, outcome) from None
        if len(done) < len(changed):
            what = f"{changed[len(done)].path}: cannot write"
        else:
            what = f"cannot save taosync's state {store.state_path}"
        raise WriteFailed(f"{what} ({exc.strerror or exc}); {outcome}") from None

    state.files, state.applies, state.inputs = new_state.files, new_state.applies, new_state.inputs
    state.made_dirs, state.fleet = new_state.made_dirs, new_state.fleet
    state.home, state.locations = new_state.home, new_state.locations
    try:
        store.system.remove(store.journal_path)
    except OSError:
        pass  # the state names this apply: the next run drops the journal as stale
    for old in dropped:  # after the save: a crash here only leaves an unused backup
        store.system.remove_tree(store.backup_dir(old.id))
    return Result(apply_id, changed, kind)


def _unchanged_since(path: Path, seen: Fingerprint):
    """The guard of one target write: :class:`TargetMoved` unless ``path`` is as ``seen``."""
    return lambda: check_unchanged(path, seen)


def _as_planned(fp: FilePlan, *, refuse_read_only: bool) -> Fingerprint:
    """The target's fingerprint now, checked to hold the text the plan was made from
    (:class:`TargetMoved` if not) and, for an apply, not made read-only by the user."""
    seen, data = fingerprint(fp.real_path)
    expected = None if fp.old_text is None else fp.old_text.encode("utf-8")
    if data != expected:
        raise TargetMoved(fp.real_path)
    if (refuse_read_only and fp.mode is not None and not fp.mode & 0o200
            and fp.action != "chmod"):  # only taking bits away: read-only stays read-only
        raise WriteFailed(f"{fp.path} is read-only (mode {fp.mode:04o}), so taosync left it "
                          f"alone and changed nothing; make it writable, or run {again('apply --force')} "
                          "to write it (it stays read-only)")
    return seen


def _save(store: StateStore, state: State, outcome: str) -> None:
    try:
        store.save(state)
    except OSError as exc:
        raise WriteFailed(f"cannot save taosync's state {store.state_path} "
                          f"({exc.strerror or exc}); {outcome}") from None


def _discard(store: StateStore, backup_dir: Path) -> None:
    """Drop an apply that did not happen: its journal and backups (best effort)."""
    try:
        store.system.remove(store.journal_path)
    except OSError:
        pass
    store.system.remove_tree(backup_dir)


def _write_one(writer: System, fp: FilePlan) -> None:
    if fp.new_text is None:
        writer.remove(fp.real_path)
    else:
        writer.write(fp.real_path, fp.new_text.encode("utf-8"), file_mode(fp))


def _undo(writer: System, done: list[FilePlan], journal_files, backup_dir: Path) -> list[str]:
    errors = []
    by_path = {j["path"]: j for j in journal_files}
    for fp in reversed(done):
        try:
            restore_entry(writer, fp.real_path, by_path[str(fp.path)], backup_dir)
        except OSError:
            errors.append(str(fp.path))
    return errors


def _as_json(fs) -> dict | None:
    return None if fs is None else asdict(fs)

