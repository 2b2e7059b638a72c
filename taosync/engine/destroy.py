"""Destroy: give back everything taosync owns, in every client's files.

Each owned file is put back one of two ways:

* **byte for byte** when the history proves nobody but taosync touched it since taosync
  first wrote it: the record where taosync took the file over (it owned nothing there
  before) still has its backup, every later backup of the file is exactly what taosync
  had left, and the file holds what taosync last wrote. The backup goes back as it was
  (or the file goes, when it did not exist), with its old mode;
* otherwise **key by key**, through the plan's release machinery (engine/plan.py
  ``plan_file`` with nothing desired): each owned key gets the user's earlier value
  back or is deleted, containers and skeleton taosync added go, a file taosync created
  goes once empty, and a key the user edited since taosync wrote it stays the user's.

Directories taosync created (``State.made_dirs``) are removed afterwards while empty.

A client set ``managed: false`` is hands off: its files are not touched, whatever the
state or the history holds for them (``Teardown.skipped`` names them), and the state
forgets any owned keys it still had there.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Final

from taosync.engine.plan import Plan, plan_file, released_file
from taosync.engine.rollback import file_clients, skip_file
from taosync.engine.state import ApplyRecord, State, StateStore, sha256_bytes


@dataclass
class Teardown:
    plan: Plan
    exact: list[str] = field(default_factory=list)  # paths put back byte for byte
    #: unmanaged client → its files, known from the state or the history, left alone
    skipped: dict[str, list[str]] = field(default_factory=dict)


def plan_destroy(store: StateStore, state: State, hmac_key: bytes,
                 unmanaged: AbstractSet[str] = frozenset(), bounds=None) -> Teardown:
    """Every owned file planned back to what it was before taosync (see module doc),
    but those of ``unmanaged`` clients and those outside the home and locations of
    ``bounds`` (engine/owner.py: named in ``plan.held``, kept in the state)."""
    teardown = Teardown(Plan())
    for record in state.applies:  # files forgotten already: named, never read
        for entry in record.files:
            hands_off = file_clients(entry, None) & set(unmanaged)
            if hands_off and entry["path"] not in state.files:
                skip_file(teardown.skipped, hands_off, entry["path"])
    older_priors(store, state, hmac_key)
    for path_text, previous in sorted(state.files.items()):
        if bounds is not None and not bounds.in_scope(path_text):
            from taosync.engine.owner import OUTSIDE

            teardown.plan.held[path_text] = (OUTSIDE, list(previous.clients))
            continue
        hands_off = set(previous.clients) & set(unmanaged)
        if hands_off:
            skip_file(teardown.skipped, hands_off, path_text)
            teardown.plan.files.append(released_file(previous))
            continue
        fp = plan_file(None, previous, Path(path_text), None, hmac_key,
                       priors=state.priors)
        origin = _first_write(state, path_text)
        pristine = _pristine(store, state, path_text, fp.old_text)
        if pristine is not _UNPROVEN:
            fp.new_text = pristine  # its changes stay the keys given back
            teardown.exact.append(path_text)
        if origin is not None and origin[1].get("mode") is not None:
            fp.mode = origin[1]["mode"]  # the user's own mode bits (a key made it 0600)
        fp.new_state = None
        teardown.plan.files.append(fp)
    return teardown


def older_priors(store: StateStore, state: State, hmac_key: bytes) -> None:
    """A state written before priors.json marked a key taken over from the user's own
    secret (their key, an MCP token) ``release: delete``, as if they had had none. The
    backup of the record where taosync took the key over still holds their value: give
    that back instead (``restore-secret``), or keep the key when it was the very value.
    Keys whose takeover is no longer in the history stay as they are recorded."""
    from dataclasses import replace

    from taosync.engine.plan import parse_target
    from taosync.engine.state import RESTORE_SECRET
    from taosync.errors import BadInput
    from taosync.fleet.secrets import value_hash
    from taosync.formats.base import MISSING, keypath_parse
    from taosync.formats.registry import editor_for

    for path_text, fs in state.files.items():
        for kp_text, owned in list(fs.owned.items()):
            if not owned.secret or owned.volatile or owned.release != "delete":
                continue
            taken = _taken_over(state, path_text, kp_text)
            text = _UNPROVEN if taken is None else _backup(store, *taken)
            if text is _UNPROVEN or text is None:
                continue
            try:
                editor = editor_for(fs.format)
                value = editor.get(parse_target(editor, Path(path_text), text),
                                   keypath_parse(kp_text))
            except BadInput:
                continue
            if value is MISSING:
                continue  # the user had none: delete is right
            digest = value_hash(hmac_key, value)
            if digest == owned.hash:
                fs.owned[kp_text] = replace(owned, release="keep")
            else:
                state.priors.add(digest, value)
                fs.owned[kp_text] = replace(owned, release=RESTORE_SECRET, prior=digest)


def _taken_over(state: State, path_text: str, kp_text: str) -> tuple[ApplyRecord, dict] | None:
    """The newest record whose state before did not own ``kp_text`` in ``path_text``:
    where taosync took that key over (its backup is the file just before)."""
    for record in reversed(state.applies):
        for entry in record.files:
            if entry["path"] == path_text and kp_text not in (
                    (entry.get("before") or {}).get("owned") or {}):
                return record, entry
    return None


def _first_write(state: State, path_text: str) -> tuple[ApplyRecord, dict] | None:
    """The last record where taosync took ``path_text`` over (it owned nothing there)."""
    found = None
    for record in state.applies:
        for entry in record.files:
            if entry["path"] == path_text and entry.get("before") is None:
                found = (record, entry)
    return found


def _pristine(store: StateStore, state: State, path_text: str,
              now: str | None) -> str | None | _Unproven:
    """The file's text before taosync took it over (None: it did not exist), when the
    history proves no one else changed it since; ``_UNPROVEN`` when it cannot."""
    origin = _first_write(state, path_text)
    last = state.files.get(path_text)
    if origin is None or now is None or last is None or not last.holds(now):
        return _UNPROVEN
    record, entry = origin
    later = [(r, e) for r in state.applies if r.id > record.id
             for e in r.files if e["path"] == path_text]
    for r, e in later:  # each later backup must be what taosync had left then
        before = e.get("before") or {}
        text = _backup(store, r, e)
        if text is _UNPROVEN or text is None or sha256_bytes(text.encode()) != before.get("sha256"):
            return _UNPROVEN
    return _backup(store, record, entry)


class _Unproven(enum.Enum):
    """No proof the backup is the user's untouched file: release key by key instead."""

    UNPROVEN = "unproven"


_UNPROVEN: Final = _Unproven.UNPROVEN


def _backup(store: StateStore, record: ApplyRecord, entry: dict) -> str | None | _Unproven:
    """The text of ``entry``'s backup (None: the file did not exist), or _UNPROVEN."""
    if entry.get("backup") is None:
        return None
    try:
        return store.system.read_bytes(store.backup_dir(record.id) / entry["backup"]).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return _UNPROVEN


def holds_or_in(path: Path | str, root: Path) -> bool:
    """``path`` is ``root``, inside it, or one of its parents (kept while root is)."""
    path = Path(path)
    return path == root or root in path.parents or path in root.parents


def remove_made_dirs(state: State, keep_under: Path | None = None) -> list[Path]:
    """Remove the directories taosync created, innermost first, while they are empty
    (a directory holding anything else is the user's now); returns those removed.
    Directories under ``keep_under`` (taosync's state, kept without --purge) stay."""
    import os

    removed: list[Path] = []
    for text in sorted(state.made_dirs, key=lambda d: -len(Path(d).parts)):
        path = Path(text)
        if keep_under is not None and holds_or_in(path, keep_under):
            continue
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue  # not empty (or not ours to remove): left as it is
        removed.append(path)
    state.made_dirs = [d for d in state.made_dirs if Path(d) not in removed]
    return removed
