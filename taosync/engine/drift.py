"""Drift: an owned key whose value on disk is not what taosync last wrote."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taosync.engine.plan import parse_target, read_target
from taosync.engine.state import State, StateStore
from taosync.fleet.secrets import value_hash
from taosync.errors import BadInput
from taosync.formats.base import MISSING, keypath_parse
from taosync.formats.registry import editor_for


@dataclass
class Drift:
    path: str
    key: str
    kind: str  # changed | removed | moved | file-missing | unreadable
    old: Any = None  # what taosync wrote (None when it held the key)
    new: Any = None  # what is there now
    secret: bool = False


def find_drift(state: State, hmac_key: bytes, only: set[str] | None = None) -> list[Drift]:
    out: list[Drift] = []
    for path_text, fs in state.files.items():
        if only is not None and not set(fs.clients) & only:
            continue
        path = Path(path_text)
        try:
            _, text, _ = read_target(path)
            if text is None:
                out.append(Drift(path_text, "", "file-missing"))
                continue
            if fs.holds(text):
                continue  # as taosync left it: nothing to parse (or import)
            editor = editor_for(fs.format)
            doc = parse_target(editor, path, text)
        except BadInput as exc:
            out.append(Drift(path_text, "", "unreadable", new=exc.message))
            continue
        for key_text, owned in fs.owned.items():
            if owned.volatile:
                continue
            current = editor.get(doc, keypath_parse(key_text))
            if current is MISSING:
                out.append(Drift(path_text, key_text, "removed", owned.value, None, owned.secret))
            elif value_hash(hmac_key, current) != owned.hash:
                out.append(Drift(path_text, key_text, "changed", owned.value, current, owned.secret))
        for list_text, first, names in _out_of_lead(editor, doc, fs.lead):
            out.append(Drift(path_text, list_text, "moved", first, names))
    return out


def overwritten(store: StateStore, state: State, plan: Any, only: set[str] | None
                ) -> list[tuple[Drift, Any]]:
    """(Drift, the planned KeyChange) for each owned key the user edited since the last
    apply that ``plan`` sets again (apply asks before overwriting them)."""
    planned = {(str(fp.path), c.path): c for fp in plan.changed for c in fp.changes}
    if not planned:
        return []
    return [(d, planned[d.path, d.key])
            for d in find_drift(state, store.hmac_key(create=False), only)
            if d.kind in ("changed", "removed", "moved") and (d.path, d.key) in planned]


def replaced_existing(state: State, plan: Any) -> list[tuple[Any, Any]]:
    """(FilePlan, KeyChange) for each value ``plan`` replaces that the user had before
    taosync owned its key: a key set where the file holds another value and the state
    owns nothing yet (a first apply on a real home, a key the fleet starts to own). A
    client's own stamp (a volatile key) is no value of the user's; a hand edit of an
    owned key is drift (:func:`overwritten`)."""
    out = []
    for fp in plan.changed:
        before = state.files.get(str(fp.path))
        owned_now = fp.new_state.owned if fp.new_state is not None else {}
        for c in fp.changes:
            if c.kind != "set" or c.old is MISSING:
                continue
            if before is not None and c.path in before.owned:
                continue
            if c.path not in owned_now or owned_now[c.path].volatile:
                continue  # a skeleton key, a client's stamp
            out.append((fp, c))
    return out


def _out_of_lead(editor, doc, lead: list[str]) -> list[tuple[str, list, list]]:
    """The lists that no longer start with the elements taosync keeps first there
    (``FileState.lead``): (list path, those elements' names, the names in the list now)."""
    from taosync.formats.base import keypath_str

    lists: dict[tuple, list] = {}
    for kp_text in lead:
        kp = keypath_parse(kp_text)
        lists.setdefault(kp[:-1], []).append(kp[-1])
    out = []
    for list_path, segs in lists.items():
        items = editor.get(doc, list_path)
        if not isinstance(items, list):
            continue
        names = [e.get(segs[0].field) if isinstance(e, dict) else None for e in items]
        first = [seg.value for seg in segs if seg.value in names]
        if names[:len(first)] != first:
            out.append((keypath_str(list_path), first, names))
    return out
