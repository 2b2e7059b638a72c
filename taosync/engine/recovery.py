"""Recovery: put back the files of an apply that died before it finished.

An apply writes ``journal.json`` (which files it is about to write, and where their
backups are) before it touches a client file, and drops it after the state is saved.
A journal left behind means the apply was cut short: every file it names is put back
from its backup, under the lock, before any command reads or writes client files.

The journal is read as untrusted input: it may only name files that are client targets
taosync manages under this home (a file in the state, or a path inside a client's own
locations), to be put back only from backups inside the state directory. Anything else
is refused with a warning and left untouched, and the journal is moved aside to
``journal.json.rejected`` so it never blocks the next run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from taosync.engine import state as state_module
from taosync.engine.state import BACKUPS_DIR, State, StateStore, locked
from taosync.engine.system import current
from taosync.hints import again
from taosync.errors import WriteFailed
from taosync.privilege import owner_rights

if TYPE_CHECKING:
    from taosync.engine.system import System

#: (directories, single files) the clients may write under this home: the only places
#: recovery may put a file back (the engine knows no client; the pipeline says where)
Locations = tuple[list[Path], set[str]]

REJECTED_SUFFIX = ".rejected"


def recover_locked(store: StateStore, locations: Locations, *,
                   on_refuse: Callable[[str], None] | None = None) -> list[str]:
    """Before a command reads or writes client files: when a journal is left, take the
    lock and put back the interrupted apply. Returns the paths put back. Costs one
    ``stat`` when there is no journal (the no-op fast path)."""
    if not store.system.exists(store.journal_path):
        return []

    try:
        with locked(store, state_module.LOCK_TIMEOUT):  # read now: tests shorten it
            return recover(store, store.load(), store.system, locations, on_refuse=on_refuse)
    except WriteFailed as exc:
        raise WriteFailed(f"an earlier apply was interrupted and cannot be put back now "
                          f"({exc.message}); run `{again('apply')}` or `{again('rollback')}` "
                          "to recover it") from None


def recover(store: StateStore, state: State, writer: "System", locations: Locations | None = None,
            *, on_refuse: Callable[[str], None] | None = None) -> list[str]:
    """Put back the files of an apply that died before it finished; returns their paths.

    Call under the lock. The state is saved before the journal is dropped, so a journal
    whose apply is already in the state means that apply finished: only the journal is
    stale. Without ``locations`` only files already in the state may be put back.
    """
    from taosync.bounded import FileTooLarge, NotRegularFile

    try:
        raw = store.system.read_bytes(store.journal_path)
    except FileNotFoundError:
        return []
    except (NotRegularFile, FileTooLarge) as exc:  # no journal taosync wrote: set aside
        _refuse(on_refuse, f"{store.journal_path} is not a journal taosync wrote "
                           f"({exc.strerror}); nothing was put back")
        _set_aside(store)
        return []
    except OSError as exc:
        raise WriteFailed(f"cannot read {store.journal_path}: {exc.strerror or exc}") from None
    try:
        journal = json.loads(raw.decode("utf-8"))
        apply_id, backup_dir, entries = _journal_parts(journal)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        _refuse(on_refuse, f"{store.journal_path} is not a journal taosync wrote ({exc}); "
                           "nothing was put back")
        _set_aside(store)
        return []
    if state.applies and state.applies[-1].id == apply_id:
        store.system.remove(store.journal_path)
        return []
    backups = _inside(store.root / backup_dir, store.root / BACKUPS_DIR)
    allowed = _Targets(state.files, locations)
    restored, refused = [], 0
    for entry in entries:
        problem = _entry_problem(entry, backups, allowed)
        if problem:
            refused += 1
            _refuse(on_refuse, f"{store.journal_path}: refused to put back "
                               f"{entry.get('path')!r}: {problem}; left untouched")
            continue
        target = Path(entry["real_path"])
        with owner_rights():  # root on a user's home: listed as its owner
            stale_files = list(target.parent.glob(f".{target.name}.taosync-*.tmp"))
        for stale in stale_files:
            writer.remove(stale)  # a write the kill cut short
        restore_entry(writer, target, entry, backups)
        restored.append(entry["path"])
    if refused:
        _set_aside(store)
    else:
        store.system.remove(store.journal_path)
    return restored


def restore_entry(writer: "System", target: Path, entry: dict,
                  backup_dir: Path | None) -> None:
    """Put ``target`` back as the apply found it (a journal entry): its backup, or no file
    (``backup_dir`` is None only where no entry has a backup)."""
    if entry["backup"] is None:
        writer.remove(target)
    elif backup_dir is None:
        raise ValueError(f"{target}: a backup without its directory")
    else:
        writer.write(target, writer.read_bytes(backup_dir / entry["backup"]), entry["mode"])


def _journal_parts(journal) -> tuple[int, str, list[dict]]:
    """(apply id, backup dir relative to the state dir, file entries); raises on any
    other shape."""
    apply_id, backup_dir, entries = journal["apply_id"], journal["backup_dir"], journal["files"]
    if not isinstance(apply_id, int) or not isinstance(backup_dir, str) \
            or not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise TypeError("wrong types")
    return apply_id, backup_dir, entries


def _inside(path: Path, root: Path) -> Path | None:
    """``path`` with symlinks resolved when it lies inside ``root``, else None."""
    system = current()
    real, real_root = system.realpath(path), system.realpath(root)
    return real if real == real_root or real.is_relative_to(real_root) else None


class _Targets:
    """The client files taosync may put back under this home: those in the state, and
    any path inside a client's own locations (a first apply has no state yet)."""

    def __init__(self, files: Iterable[str], locations: Locations | None) -> None:
        self.files = set(files)
        self.dirs, self.loose = locations if locations is not None else ([], set())

    def __contains__(self, path: str) -> bool:
        if path in self.files or path in self.loose:
            return True
        return any(Path(path).is_relative_to(d) for d in self.dirs)


def _entry_problem(entry: dict, backups: Path | None, allowed: _Targets) -> str | None:
    """Why a journal entry must not be acted on, or None when it is safe."""
    path, real, backup, mode = (entry.get(k) for k in ("path", "real_path", "backup", "mode"))
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.normpath(path) != path:
        return "not an absolute, normalised path"
    if path not in allowed:
        return "not a client file taosync manages under this home"
    if real != str(current().realpath(Path(path))):
        return f"its real path {real!r} is not where {path} leads"
    if not isinstance(mode, int) or isinstance(mode, bool) or not 0 <= mode <= 0o7777:
        return f"mode {mode!r} is not a file mode"
    if backup is None:
        return None
    if backups is None:
        return "its backup directory is outside the state directory's backups"
    if not isinstance(backup, str) or Path(backup).name != backup or backup in (".", ".."):
        return f"backup {backup!r} is not a file name"
    with owner_rights():
        missing = not (backups / backup).is_file()
    if _inside(backups / backup, backups) is None or missing:
        return f"backup {backup!r} is missing or leads outside the state directory"
    return None


def _refuse(on_refuse: Callable[[str], None] | None, message: str) -> None:
    if on_refuse is not None:
        on_refuse(message)


def _set_aside(store: StateStore) -> None:
    """Move a journal that cannot be trusted out of the way, keeping it for a look."""
    store.system.rename(store.journal_path, store.journal_path.with_name(
        store.journal_path.name + REJECTED_SUFFIX))
