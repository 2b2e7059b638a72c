"""The editor for a file taosync is about to create: plain data, then the format's writer.

A file that does not exist has no bytes to keep, so there is nothing for a round-trip
editor to do; building plain dicts and lists and writing them out at the end spares a
cold run the import and the work of tomlkit. It keeps the :class:`Editor` protocol's
promises on plain data (the ones ``tests/plain_model.py`` states for every editor), so
the planner cannot tell the difference — except in time.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from taosync.formats.base import (MISSING, FormatError, KeyPath, Match, build_value, editor_for,
                                  element_value, keypath_str, update_mapping,
                                  with_match_field)


class NewDocument:
    """The plain mapping a new file will hold, and where its list elements are by name.

    ``positions`` maps ``id(list)`` to the list and, per field a :class:`Match` looked
    at and per value of it, the index of the first element holding it, so a lookup does
    not walk the list (Continue's ``mcpServers`` gets one per server). Appends extend
    it; anything that could move an element or change a matched field clears it.
    """

    __slots__ = ("data", "positions")

    def __init__(self) -> None:
        self.data: dict = {}
        self.positions: dict[int, tuple[list, dict[str, dict[str, int]]]] = {}


class NewFileEditor:
    """Edits a :class:`NewDocument` of format ``fmt``; ``writer`` has ``check(value,
    path)`` (refuse what the format cannot hold) and ``write(data) -> str | None`` (None:
    data it does not know how to write, which the format's editor then writes)."""

    def __init__(self, fmt: str, writer: ModuleType):
        self.format = fmt
        self.writer = writer

    def parse(self, text: str) -> NewDocument:
        if text.strip():
            raise ValueError("NewFileEditor only starts files that do not exist yet")
        return NewDocument()

    def dump(self, doc: NewDocument) -> str:
        text = self.writer.write(doc.data)
        if text is None:
            editor = editor_for(self.format)
            edited = editor.parse("")
            for key, value in doc.data.items():
                editor.set(edited, (key,), value)
            text = editor.dump(edited)
        return text

    def get(self, doc: NewDocument, path: KeyPath) -> Any:
        node = doc.data
        for seg in path:
            node = _child(doc, node, seg)
            if node is MISSING:
                return MISSING
        return _copy(node)

    def set(self, doc: NewDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        path = tuple(path)
        if not path:
            raise ValueError("cannot set the whole document")
        value = with_match_field(path, value)
        self.writer.check(value, path)
        node: Any = doc.data
        for i, seg in enumerate(path[:-1]):
            child = _child(doc, node, seg, where=path[:i])
            if child is MISSING:
                _add(doc, node, seg, path[i + 1:], value)
                return [path[:j] for j in range(i + 1, len(path))]
            node = child
        last = path[-1]
        current = _child(doc, node, last, where=path[:-1])
        if isinstance(current, dict) and isinstance(value, dict):
            update_mapping(self, doc, path, list(current), value)
            return []
        if isinstance(last, Match) and current is not MISSING:  # where, before forgetting
            at = _positions(doc, node, last.field)[last.value]
        if current is not MISSING or not isinstance(last, Match):  # (_add keeps up)
            _forget_if_renamed(doc, path, current, value)
        if current is MISSING:
            _add(doc, node, last, (), value)
        elif isinstance(last, Match):
            node[at] = _copy(value)
        else:
            node[last] = _copy(value)
        return []

    def delete(self, doc: NewDocument, path: KeyPath) -> bool:
        path = tuple(path)
        if not path:
            raise ValueError("cannot delete the whole document")
        parent = node = doc.data
        for seg in path:
            parent, node = node, _child(doc, node, seg)
            if node is MISSING:
                return False
        last = path[-1]
        if isinstance(last, Match):
            del parent[_positions(doc, parent, last.field)[last.value]]
            doc.positions.clear()  # the elements after it moved
        else:
            _forget_if_renamed(doc, path, node, MISSING)
            del parent[last]
        return True


def _child(doc: NewDocument, node: Any, seg: Any, where: KeyPath | None = None) -> Any:
    """``node``'s child at ``seg``, MISSING when absent. With ``where`` (setting), a
    parent of the wrong kind is a FormatError; without (reading), it is just absent."""
    if isinstance(seg, Match):
        if not isinstance(node, list):
            if where is None:
                return MISSING
            raise FormatError(f"{keypath_str(where) or 'the top level'} is not a list")
        at = _positions(doc, node, seg.field).get(seg.value)
        return MISSING if at is None else node[at]
    if not isinstance(node, dict):
        if where is None:
            return MISSING
        raise FormatError(f"{keypath_str(where) or 'the top level'} is not a mapping")
    return node.get(seg, MISSING)


def _positions(doc: NewDocument, items: list, field: str) -> dict[str, int]:
    """Where the first element of ``items`` with each value of ``field`` is."""
    hit = doc.positions.get(id(items))
    if hit is None or hit[0] is not items:
        hit = doc.positions[id(items)] = (items, {})
    found = hit[1].get(field)
    if found is None:
        found = hit[1][field] = {}
        for i, el in enumerate(items):
            if isinstance(el, dict) and isinstance(el.get(field), str):
                found.setdefault(el[field], i)
    return found


def _forget_if_renamed(doc: NewDocument, path: KeyPath, old: Any, new: Any) -> None:
    """Forget every position when the edit at ``path`` (``old`` → ``new``) may change
    what a Match finds: a field some Match looks at, set or deleted on a list element
    (``models[name=x].name``), or a whole element replaced by one with other values of
    those fields. (Replacing a whole list is harmless: its entry keeps the old list,
    which is never looked up again.)"""
    if isinstance(path[-1], Match):
        fields = {f for _, by_field in doc.positions.values() for f in by_field}
        renamed = any(old.get(f, MISSING) != new.get(f, MISSING) for f in fields)
    elif len(path) > 1 and isinstance(path[-2], Match) and old != new:
        renamed = any(path[-1] in by_field for _, by_field in doc.positions.values())
    else:
        renamed = False
    if renamed:
        doc.positions.clear()


def _add(doc: NewDocument, node: Any, seg: Any, rest: KeyPath, value: Any) -> None:
    """Create ``seg`` in ``node`` holding ``value`` at ``rest`` below it."""
    if isinstance(seg, Match):
        element = _copy(element_value(seg, rest, value))
        hit = doc.positions.get(id(node))
        if hit is not None and hit[0] is node:
            for field, found in hit[1].items():
                name = element.get(field)  # not always seg.value: ("name",) may be set
                if isinstance(name, str):
                    found.setdefault(name, len(node))  # found only if the first of its name
        node.append(element)
    else:
        node[seg] = _copy(build_value(rest, value))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value
