"""The editor for a file taosync is about to create: plain data, then the format's writer.

A file that does not exist has no bytes to keep, so there is nothing for a round-trip
editor to do; building plain dicts and lists and writing them out at the end spares a
cold run the import and the work of tomlkit. It keeps the :class:`FormatEditor` protocol's
promises on plain data (the ones ``tests/plain_model.py`` states for every editor), so
the planner cannot tell the difference — except in time.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

from taosync.formats.base import (JSON_SCALARS, MISSING, FormatEditor, FormatError, KeyPath,
                                  Match, MatchIndex, NamedList, build_value, element_value,
                                  keypath_str, update_mapping, with_match_field)


class NewDocument:
    """The plain mapping a new file will hold (or a list, when the first key path starts
    with a :class:`Match`), and where its list elements are by name."""

    __slots__ = ("data", "matches", "list_field")

    def __init__(self) -> None:
        self.data: dict | list = {}
        self.matches = MatchIndex(_name_of)
        #: the field naming the elements of a top-level list
        self.list_field: str | None = None


class NewFileEditor(FormatEditor):
    """Edits a :class:`NewDocument` of format ``fmt``; ``writer`` has ``check(value,
    path)`` (refuse what the format cannot hold) and ``write(data) -> str | None`` (None:
    data it does not know how to write, which ``full_editor()`` — the format's round-trip
    editor, given by the registry so this module imports no other format — then writes)."""

    def __init__(self, fmt: str, writer: ModuleType, *,
                 full_editor: Callable[[], FormatEditor] | None = None):
        self.format = fmt
        self.writer = writer
        self.full_editor = full_editor

    def parse(self, text: str) -> NewDocument:
        if text.strip():
            raise ValueError("NewFileEditor only starts files that do not exist yet")
        return NewDocument()

    def dump(self, doc: NewDocument) -> str:
        text = self.writer.write(doc.data)
        if text is None:
            if self.full_editor is None:
                raise FormatError(f"the {self.format} writer cannot write this data and no "
                                  "editor was given to fall back on")
            editor = self.full_editor()
            edited = editor.parse("")
            field = doc.list_field
            if isinstance(doc.data, list) and field is not None:  # a list has its field
                for element in doc.data:
                    editor.set(edited, (Match(field, element[field]),), element)
            for key, value in doc.data.items() if isinstance(doc.data, dict) else ():
                editor.set(edited, (key,), value)
            text = editor.dump(edited)
        return text

    def get(self, doc: NewDocument, path: KeyPath) -> Any:
        node = self._node(doc, path)
        return node if node is MISSING else _copy(node)

    def has(self, doc: NewDocument, path: KeyPath) -> bool:
        return self._node(doc, path) is not MISSING

    def _node(self, doc: NewDocument, path: KeyPath) -> Any:
        """The node itself at ``path`` (MISSING when there is none): never handed out."""
        node = doc.data
        for seg in path:
            node = _child(doc, node, seg)
            if node is MISSING:
                return MISSING
        return node

    def set(self, doc: NewDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        path = tuple(path)
        if not path:
            raise ValueError("cannot set the whole document")
        value = with_match_field(path, value)
        self.writer.check(value, path)
        try:
            return self._set(doc, path, value)
        finally:
            doc.matches.edited(path)

    def _set(self, doc: NewDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        if doc.data == {} and isinstance(path[0], Match):
            doc.data, doc.list_field = [], path[0].field  # a top-level list
        node: Any = doc.data
        for i, seg in enumerate(path[:-1]):
            child = _child(doc, node, seg, where=path[:i])
            if child is MISSING:
                _add(doc, node, seg, path[i + 1:], value)
                return [path[:j] for j in range(i + 1, len(path))]
            node = child
        last = path[-1]
        current = _child(doc, node, last, where=path[:-1])
        if current is MISSING:
            _add(doc, node, last, (), value)
        elif isinstance(current, dict) and isinstance(value, dict):
            update_mapping(self, doc, path, list(current), value)
        elif isinstance(last, Match):
            node[doc.matches.find(node, last)] = _copy(value)
            doc.matches.forget()  # the element may hold other names now
        else:
            node[last] = _copy(value)
        return []

    def delete(self, doc: NewDocument, path: KeyPath) -> bool:
        path = tuple(path)
        if not path:
            raise ValueError("cannot delete the whole document")
        parent: Any = doc.data  # JSON-like nodes: a dict or a list, found by the path
        node: Any = doc.data
        for seg in path:
            parent, node = node, _child(doc, node, seg)
            if node is MISSING:
                return False
        last = path[-1]
        if isinstance(last, Match):
            del parent[doc.matches.find(parent, last)]
            doc.matches.forget()  # the elements after it moved
        else:
            del parent[last]
            doc.matches.edited(path)
        return True


def _child(doc: NewDocument, node: Any, seg: Any, where: KeyPath | None = None) -> Any:
    """``node``'s child at ``seg``, MISSING when absent. With ``where`` (setting), a
    parent of the wrong kind is a FormatError; without (reading), it is just absent."""
    if type(node) is dict and type(seg) is str:  # most steps: asked first
        return node.get(seg, MISSING)
    if isinstance(seg, Match):
        if not isinstance(node, list):
            if where is None:
                return MISSING
            raise FormatError(f"{keypath_str(where) or 'the top level'} is not a list")
        at = doc.matches.find(node, seg)
        return MISSING if at is None else node[at]
    if not isinstance(node, dict):
        if where is None:
            return MISSING
        raise FormatError(f"{keypath_str(where) or 'the top level'} is not a mapping")
    return node.get(seg, MISSING)


def _name_of(element: Any, field: str) -> str | None:
    """What a Match on ``field`` compares with in ``element``."""
    name = element.get(field) if isinstance(element, dict) else None
    return name if isinstance(name, str) else None


def _add(doc: NewDocument, node: Any, seg: Any, rest: KeyPath, value: Any) -> None:
    """Create ``seg`` in ``node`` holding ``value`` at ``rest`` below it."""
    if isinstance(seg, Match):
        node.append(_copy(element_value(seg, rest, value)))
        doc.matches.appended(node)
    else:
        node[seg] = _copy(build_value(rest, value))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: v if type(v) in JSON_SCALARS else _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = [v if type(v) in JSON_SCALARS else _copy(v) for v in value]
        return NamedList(out) if isinstance(value, NamedList) else out
    return value

