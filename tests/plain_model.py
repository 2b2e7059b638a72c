"""What every format editor promises, played out on a plain dict.

The property tests of each format apply the same random set/delete operations to the
editor and to a plain model, then compare; this module is that model, shared.
"""

from __future__ import annotations

import copy

import pytest

from taosync.formats.base import FormatError


def model_set(model: dict, path: tuple, value) -> list[tuple]:
    """Set ``path``, creating parent mappings (dict-over-dict updates in place); return
    the parent paths created, as ``Editor.set`` does. A non-mapping parent is an error."""
    created = []
    cur = model
    for i, key in enumerate(path[:-1]):
        if key not in cur:
            cur[key] = {}
            created.append(path[: i + 1])
        cur = cur[key]
        if not isinstance(cur, dict):
            raise FormatError("not a mapping")
    last = path[-1]
    if isinstance(cur.get(last), dict) and isinstance(value, dict):
        for k, v in value.items():
            model_set(cur[last], (k,), v)
        for k in [k for k in cur[last] if k not in value]:
            del cur[last][k]
    else:
        cur[last] = copy.deepcopy(value)
    return created


def model_delete(model: dict, path: tuple) -> bool:
    """Remove ``path`` if present; parents are never pruned."""
    cur = model
    for key in path[:-1]:
        if not isinstance(cur, dict) or key not in cur:
            return False
        cur = cur[key]
    if isinstance(cur, dict) and path[-1] in cur:
        del cur[path[-1]]
        return True
    return False


def play(editor, doc, model: dict, kind: str, path: tuple, value):
    """One random ``set``/``delete`` on the model and through the editor. The editor must
    refuse (FormatError) exactly the sets the model refuses, and answer a delete as the
    model does. Returns None for a refused set, else (parent paths the model created,
    parent paths the editor reported) — both empty for a delete."""
    if kind == "delete":
        assert editor.delete(doc, path) == model_delete(model, path)
        return [], []
    try:
        expected = model_set(model, path, value)
    except FormatError:
        with pytest.raises(FormatError):
            editor.set(doc, path, value)
        return None
    return expected, editor.set(doc, path, value)


def play_both(editor, doc, ref, kind: str, path: tuple, value) -> bool:
    """One ``set``/``delete`` through the editor on ``doc`` and on a reference document
    ``ref`` of the same text: both refuse (FormatError) or both answer alike. False for a
    refused set (nothing changed to compare)."""
    if kind == "delete":
        assert editor.delete(doc, path) == editor.delete(ref, path)
        return True
    try:
        expected = editor.set(ref, path, value)
    except FormatError:
        with pytest.raises(FormatError):
            editor.set(doc, path, value)
        return False
    assert editor.set(doc, path, value) == expected
    return True
