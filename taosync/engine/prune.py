"""Prune: drop the backups that hold secrets no longer in use (``taosync prune``).

Every record keeps whole files as they were before it (engine/state.py), so after a key
rotation the old key sits in the backups of the 20 steps of the window. A backup is
judged by the secrets in it — the values at every key taosync owned there as a secret,
read from the backup itself — against the secrets in use now (on disk at the keys
taosync owns as secrets, and the fleet's key):

* ``prune`` drops the backups holding a secret taosync wrote and no longer uses;
* ``prune --secrets`` drops every old secret: your own earlier values too (those
  ``priors.json`` keeps for destroy, which then leaves such keys as they are), and any
  backup holding one of the old secrets anywhere in its bytes.

A dropped backup is marked ``pruned`` in its record (the hashes stay, the values go):
``log`` shows the record as not restorable, and a rollback that needs it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from taosync.engine.state import ApplyRecord, State, StateStore

#: an owned secret shorter than this is not looked for (it would match anything)
MIN_SECRET = 8


@dataclass
class Prune:
    """What a prune drops: backups by (record, entry), and whether priors.json goes."""

    backups: list[tuple[ApplyRecord, dict]] = field(default_factory=list)
    priors: int = 0  # earlier values of yours dropped from priors.json (--secrets)

    @property
    def records(self) -> list[int]:
        return sorted({r.id for r, _ in self.backups})


def plan_prune(store: StateStore, state: State, key=None, every: bool = False) -> Prune:
    """The backups holding an old secret (``every``: the user's own earlier ones too)."""
    in_use = _in_use(state, key)
    theirs = set() if every else _leaves_of(state.priors.saved().values())
    olds: set[str] = set()
    held: list[tuple[ApplyRecord, dict, bytes]] = []
    again: set[int] = set()  # id() of entries marked before whose backup is still there
    for record in state.applies:
        for entry in record.files:
            if entry.get("backup") is None:
                continue
            try:
                data = store.system.read_bytes(store.backup_dir(record.id) / entry["backup"])
            except OSError:
                continue  # gone (pruned before)
            if entry.get("pruned"):  # marked, but its deletion did not happen
                held.append((record, entry, b""))
                again.add(id(entry))
                continue
            found = _secrets_in(data, _secret_keys(state, entry)) - in_use - theirs
            olds |= found
            held.append((record, entry, data))
    out = Prune()
    if every:  # an old secret anywhere in a backup, whatever key it sits at
        olds |= _leaves_of(state.priors.saved().values()) - in_use
        out.priors = len(state.priors.saved())
    needles = [s.encode("utf-8") for s in olds if len(s) >= MIN_SECRET]
    for record, entry, data in held:
        if id(entry) in again or any(n in data for n in needles):
            out.backups.append((record, entry))
    return out


def mark(state: State, prune: Prune) -> None:
    """Mark the entries whose backups go, and forget the priors that go; the caller
    saves the state (under the lock), then :func:`delete` removes the files — so a
    crash in between leaves a marked backup the next prune deletes, never an unmarked
    entry without its backup."""
    for _record, entry in prune.backups:
        entry["pruned"] = True
    if prune.priors:
        state.priors._saved, state.priors.new = {}, {}


def delete(store: StateStore, prune: Prune) -> None:
    """Remove the backups (and with ``priors``, priors.json) the saved state marks."""
    for record, entry in prune.backups:
        store.system.remove(store.backup_dir(record.id) / entry["backup"])
    if prune.priors:
        store.system.remove(store.priors_path)


def not_restorable(record: ApplyRecord) -> list[str]:
    """The files of ``record`` whose backups ``taosync prune`` dropped."""
    return [e["path"] for e in record.files if e.get("pruned")]


def _in_use(state: State, key) -> set[str]:
    """The secrets in use now: at each owned secret key, on disk; and the fleet's key."""
    from taosync.engine.plan import read_target
    from taosync.errors import BadInput

    now: set[str] = {key.reveal()} if key is not None else set()
    for path_text, fs in state.files.items():
        keys = [k for k, o in fs.owned.items() if o.secret]
        if not keys:
            continue
        try:
            _real, text, _mode = read_target(Path(path_text))
        except BadInput:
            continue
        if text is not None:
            now |= _secrets_in(text.encode("utf-8"), [(fs.format, k) for k in keys])
    return now


def _secret_keys(state: State, entry: dict) -> list[tuple[str, str]]:
    """(format, key path) of every key taosync owned as a secret in this file, in the
    entry's state before and in any record's or the state now."""
    path = entry["path"]
    states = [state.files[path].to_json()] if path in state.files else []
    states += [e["before"] for r in state.applies for e in r.files
               if e["path"] == path and e.get("before")]
    return sorted({(s["format"], k) for s in states
                   for k, o in (s.get("owned") or {}).items() if o.get("secret")})


def _secrets_in(data: bytes, keys: list[tuple[str, str]]) -> set[str]:
    """The secret strings of a file's bytes at ``keys``: each whole string value, and in
    a mapping (an MCP server's env) the strings under secret-looking names."""
    from taosync.formats.base import MISSING, FormatError, keypath_parse
    from taosync.formats.registry import editor_for

    out: set[str] = set()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return out
    for fmt in {f for f, _ in keys}:
        try:
            editor = editor_for(fmt)
            doc = editor.parse(text)
        except (FormatError, KeyError, ValueError):
            continue
        for f, k in keys:
            if f == fmt:
                value = editor.get(doc, keypath_parse(k))
                if value is not MISSING:
                    out |= _leaves(value, "")
    return out


def _leaves(value, name: str) -> set[str]:
    from taosync.fleet.looks_secret import secret_name

    if isinstance(value, str):
        named = name == "" or secret_name(name)
        return {value} if named and len(value) >= MIN_SECRET else set()
    if isinstance(value, dict):
        return {s for k, v in value.items() for s in _leaves(v, str(k))}
    return set()


def _leaves_of(values) -> set[str]:
    return {s for v in values for s in _leaves(v, "")}
