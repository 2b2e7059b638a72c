"""Strict JSON, edited as text so that everything not edited stays byte for byte.

Claude Code reads ``settings.json`` with ``JSON.parse``: a ``//`` comment or a trailing
comma makes it ignore the whole file. So parsing is strict (no JSONC), and every error
is reported with a 1-based line and column.

How it works: the document is the text itself. Each operation walks the key path with a
small concrete-syntax scanner that finds the span (start/end offsets) of each member and
value, using the stdlib's C scanner (``json.decoder.scanstring`` and the decoder's
``scan_once``) to step over values, so a walk costs one C-speed pass over the ancestors
of the target (a 1 MB ``~/.claude.json`` takes milliseconds). Edits are splices:

* replacing a value rewrites only that value's span;
* a new member is appended to the end of its object (a new element to the end of its
  array) with the indentation of its siblings, or the parent's indentation plus the
  file's indent unit (detected, default two spaces) when the container was empty; a
  one-line container gets ``, "k": v`` inline;
* deleting a member removes it with its comma and its own line;
* new nested values are rendered by ``json.dumps(indent=<unit>, ensure_ascii=False)``
  and re-indented to where they land; line endings follow the file (LF or CRLF).

Setting a dict over an existing object updates it key by key (unchanged members keep
their bytes); lists and scalars are replaced whole. Setting an equal value is a no-op.

Duplicate keys: as with ``JSON.parse``, the last occurrence is the one that counts, so
get/set act on the last one; delete removes every occurrence. A ``Match`` segment picks
the first array element that is an object whose ``field`` equals the value.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # typeshed omits it
from itertools import chain
from typing import Any, Iterator

from taosync.formats.base import (MISSING, FormatEditor, FormatError, KeyPath, Match, build_value, element_value,
                                  keypath_str, same_value, update_mapping,
                                  with_match_field)

__all__ = ["EDITOR", "JsonDocument", "JsonEditor"]

_WS = re.compile(r"[ \t\n\r]*")
_INDENT = re.compile(r"[ \t]*")
_FIRST_INDENTED = re.compile(r"\n([ \t]+)\S")
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?(?:NaN|Infinity))')


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder()
_scan = _DECODER.scan_once  # type: ignore[attr-defined]  # set in __init__; not in typeshed


@dataclass
class _Item:
    """One member of an object (``key`` set) or element of an array (``key`` None):
    offsets into the text; ``key_start == start`` for an element. Handed out by
    :class:`_Items` for the text as it is: a splice leaves it behind."""

    __slots__ = ("key", "key_start", "key_end", "start", "end")
    key: str | None
    key_start: int
    key_end: int
    start: int  # value start
    end: int  # value end (exclusive)


@dataclass
class _Node:
    """A value reached by a walk: its span (and the item that holds it, if any)."""

    start: int
    end: int

    def value(self, text: str) -> Any:
        return _scan(text, self.start)[0]


def _reframe(offsets: list[int], lo: int, hi: int, by: int) -> None:
    """Add ``by`` to ``offsets[lo:hi]`` in one C-level pass (no Python line per item)."""
    if lo < hi and by:
        offsets[lo:hi] = map(by.__add__, offsets[lo:hi])


class _Box:
    """A cached container's items, one list per field, each offset relative to the
    container: the items before ``split`` to its start, the others to its end. A splice
    inside item ``i`` moves the split to just after ``i`` (the items it crosses change
    frame, in C-level passes) and changes ``i``'s end: the items before it do not move,
    those after it move with the container's end, unchanged. A run of deletes first to
    last (or last to first) moves the split by one item each time.

    ``serial`` numbers the items in order (ascending, never reused), so the key index
    (``by_key``: each key's occurrences, built on first use) survives the items removed
    before them: an item's position is a ``bisect`` of its serial."""

    __slots__ = ("keys", "key_start", "key_end", "start", "end", "split", "serial", "next",
                 "by_key", "names", "stale")

    def __init__(self, items: list[_Item], origin: int) -> None:
        self.keys = [it.key for it in items]
        self.key_start = [it.key_start - origin for it in items]
        self.key_end = [it.key_end - origin for it in items]
        self.start = [it.start - origin for it in items]
        self.end = [it.end - origin for it in items]
        self.split = len(items)  # all relative to the start
        self.serial = list(range(len(items)))
        self.next = len(items)
        self.by_key: dict[str | None, list[int]] | None = None
        #: a list's elements by name, per field a Match looked into (:func:`_named`):
        #: field → (string value → serials of the objects holding it, ascending;
        #: serial → the value indexed for it)
        self.names: dict[str, tuple[dict[str, list[int]], dict[int, str]]] = {}
        #: serials of elements added, removed or edited since they were named
        self.stale: set[int] = set()

    def index(self) -> dict[str | None, list[int]]:
        """Each key's serials, in order (the last one is what ``JSON.parse`` keeps)."""
        if self.by_key is None:
            self.by_key = {}
            for key, serial in zip(self.keys, self.serial):
                self.by_key.setdefault(key, []).append(serial)
        return self.by_key

    def move_split(self, to: int, length: int) -> None:
        """Put the split at ``to``, ``length`` being the container's: the items it
        crosses go over to the other frame."""
        s = self.split
        lo, hi, by = (s, to, length) if to > s else (to, s, -length)
        for offsets in (self.key_start, self.key_end, self.start, self.end):
            _reframe(offsets, lo, hi, by)
        self.split = to

    def shift(self, cs: int, ce: int, a: int, b: int, d: int) -> int | None:
        """Make room for a splice of ``[a, b)`` by ``d`` characters inside this
        container, spanning ``[cs, ce)`` before it: the item holding the splice grows.
        Its (absolute) start; None when the splice is between items. _Cut when it cuts
        an item."""
        s, end = self.split, self.end
        # the first item ending after a: in the first frame, else in the second (each sorted)
        i = bisect_right(end, a - cs, 0, s)
        if i == s:
            i = bisect_right(end, a - ce, s)
        o = cs if i < s else ce
        if i < len(end) and o + self.key_start[i] < b:  # it holds the splice
            inner = o + self.start[i]
            if not (inner <= a and b <= o + end[i]):  # pragma: no cover - a bug elsewhere
                raise _Cut
            if i + 1 != s:
                self.move_split(i + 1, ce - cs)
            end[i] += d  # in the first frame now
            if self.names:  # an edit inside an element may change its name
                self.stale.add(self.serial[i])
            return inner
        if i != s:
            self.move_split(i, ce - cs)
        return None


class _Cut(Exception):
    """A splice cuts a cached container or item: the cache starts over."""


class _Items:
    """The items of the cached container spanning ``[start, end)``, as absolute
    :class:`_Item`\\ s: a view of its :class:`_Box`, good until the next splice."""

    __slots__ = ("box", "cs", "ce")

    def __init__(self, box: _Box, start: int, end: int) -> None:
        self.box, self.cs, self.ce = box, start, end

    def __len__(self) -> int:
        return len(self.box.keys)

    def __getitem__(self, i: int) -> _Item:
        box = self.box
        if i < 0:
            i += len(box.keys)
        o = self.cs if i < box.split else self.ce
        return _Item(box.keys[i], o + box.key_start[i], o + box.key_end[i], o + box.start[i],
                     o + box.end[i])

    def __iter__(self) -> Iterator[_Item]:
        return (self[i] for i in range(len(self)))

    def spans(self) -> Iterator[tuple[int, int]]:
        """Each item's value span, in order."""
        box, s = self.box, self.box.split
        cs, ce = self.cs, self.ce
        return chain(zip(map(cs.__add__, box.start[:s]), map(cs.__add__, box.end[:s])),
                     zip(map(ce.__add__, box.start[s:]), map(ce.__add__, box.end[s:])))

    def at(self, start: int) -> int:
        """The position of the item whose value starts at ``start``."""
        box = self.box
        s = box.split
        i = bisect_left(box.start, start - self.cs, 0, s)  # each frame is sorted
        return i if i < s else bisect_left(box.start, start - self.ce, s)

    def append(self, item: _Item) -> None:
        box, o = self.box, self.ce  # a new last item: relative to the end
        box.keys.append(item.key)
        box.key_start.append(item.key_start - o)
        box.key_end.append(item.key_end - o)
        box.start.append(item.start - o)
        box.end.append(item.end - o)
        box.serial.append(box.next)
        if box.by_key is not None:
            box.by_key.setdefault(item.key, []).append(box.next)
        if box.names:
            box.stale.add(box.next)
        box.next += 1

    def pop(self, i: int) -> None:
        box = self.box
        key, serial = box.keys[i], box.serial[i]
        for field_ in (box.keys, box.key_start, box.key_end, box.start, box.end, box.serial):
            del field_[i]
        if i < box.split:
            box.split -= 1
        if box.by_key is not None:
            same = box.by_key[key]
            same.remove(serial)
            if not same:
                del box.by_key[key]
        if box.names:
            box.stale.add(serial)


@dataclass
class JsonDocument:
    """The text of a JSON file; edits splice it in place.

    The layout cache holds, for each container a walk went through, its end and its
    items (a :class:`_Box`), in three lists in the order of the containers' starts
    (``_starts``, ``_ends``, ``_boxes``); a splice shifts the offsets it moves instead
    of rescanning, and an added or removed member updates its container's items in
    place, so a run of edits on a large file costs one scan of each container on the
    paths it touches. The containers before ``_split`` are at their offsets, the others
    at their offsets less the text's length: a splice moves the split to itself and
    changes the ends of the containers enclosing it (``_splice``), no other; the
    containers after it move with the text's end, unchanged. So adding or deleting N
    members one by one is linear in N. :func:`decoded_layout` gives the cache as
    absolute offsets.
    """

    text: str
    newline: str = "\n"
    unit: str = "  "
    _edited: bool = field(default=False, repr=False)
    #: the cached containers' starts, ascending; their ends and items, in the same order
    _starts: list[int] = field(default_factory=list, repr=False)
    _ends: list[int] = field(default_factory=list, repr=False)
    _boxes: list[_Box] = field(default_factory=list, repr=False)
    _split: int = field(default=0, repr=False)

    def _forget_layout(self) -> None:
        self._starts.clear()
        self._ends.clear()
        self._boxes.clear()
        self._split = 0

    def _spliced(self, a: int, b: int, new: str) -> None:
        """Hook after each splice of ``text`` (JSONC mirrors it in its text with
        comments, formats/jsonc.py)."""


def _find(doc: JsonDocument, pos: int, length: int) -> int:
    """Where the cached container starting at ``pos`` is, or would go, in the layout
    lists (``length``: the text's, which the containers after the split are relative to)."""
    starts, s = doc._starts, doc._split
    k = bisect_left(starts, pos, 0, s)
    return k if k < s else bisect_left(starts, pos - length, s)


def _span(doc: JsonDocument, k: int) -> tuple[int, int]:
    """The absolute span of the ``k``-th cached container."""
    o = 0 if k < doc._split else len(doc.text)
    return doc._starts[k] + o, doc._ends[k] + o


def _cached(doc: JsonDocument, start: int) -> _Items | None:
    """The items cached for the container at ``start`` as they are, None if none."""
    k = _find(doc, start, len(doc.text))
    if k == len(doc._starts) or _span(doc, k)[0] != start:
        return None
    return _Items(doc._boxes[k], *_span(doc, k))


_Decoded = tuple[int, list[_Item], dict[str | None, list[_Item]] | None]


def decoded_layout(doc: JsonDocument) -> dict[int, _Decoded]:
    """The layout cache in absolute offsets (for tests): per container start, its end,
    its items, and its key index (each key's items in order; None while not built)."""
    out: dict[int, _Decoded] = {}
    for k, box in enumerate(doc._boxes):
        start, end = _span(doc, k)
        items = _Items(box, start, end)
        index = None
        if box.by_key is not None:
            index = {key: [items[bisect_left(box.serial, s)] for s in serials]
                     for key, serials in box.by_key.items()}
        out[start] = (end, list(items), index)
    return out


def _ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _scan_items(text: str, start: int) -> list[_Item]:
    """Members of the (valid) object, or elements of the array, at ``start``."""
    close = "}" if text[start] == "{" else "]"
    i = _ws(text, start + 1)
    out: list[_Item] = []
    if text[i] == close:
        return out
    while True:
        if close == "}":
            key, j = scanstring(text, i + 1)
            vs = _ws(text, _ws(text, j) + 1)
        else:
            key, j, vs = None, i, i
        ve = _scan(text, vs)[1]
        out.append(_Item(key, i, j, vs, ve))
        k = _ws(text, ve)
        if text[k] == close:
            return out
        i = _ws(text, k + 1)


def _named(text: str, node: _Node, box: _Box, field: str) -> dict[str, list[int]]:
    """The objects of the list ``node`` (its items ``box``) by their string ``field``:
    value → serials, ascending. Each element is decoded once, when the field is first
    asked for, and again only after it changed (``box.stale``): a Match walked the list
    decoding every element before the one it names, quadratic in a run of edits."""
    if box.stale:
        stale = sorted(box.stale)
        box.stale.clear()
        for named, of in box.names.values():
            for serial in stale:
                old = of.pop(serial, None)
                if old is not None:
                    named[old].remove(serial)
                    if not named[old]:
                        del named[old]
        for serial in stale:
            element = _element(text, node, box, serial)
            if element is None:
                continue
            for f, (named, of) in box.names.items():
                _name(named, of, element.get(f), serial)
    entry = box.names.get(field)
    if entry is None:
        entry = box.names[field] = ({}, {})
        for serial in box.serial:
            element = _element(text, node, box, serial)
            if element is not None:
                _name(*entry, element.get(field), serial)
    return entry[0]


def _element(text: str, node: _Node, box: _Box, serial: int) -> dict | None:
    """The decoded object that is item ``serial`` of the list ``node`` (None: another
    value, or no such item any more)."""
    i = bisect_left(box.serial, serial)
    if i == len(box.serial) or box.serial[i] != serial:
        return None
    start = (node.start if i < box.split else node.end) + box.start[i]
    return _scan(text, start)[0] if text[start] == "{" else None


def _name(named: dict[str, list[int]], of: dict[int, str], value: Any, serial: int) -> None:
    if type(value) is str:
        insort(named.setdefault(value, []), serial)
        of[serial] = value


def _items(doc: JsonDocument, node: _Node) -> _Items:
    """The items of the container ``node``."""
    return _Items(_box(doc, node), node.start, node.end)


def _box(doc: JsonDocument, node: _Node) -> _Box:
    """The cached items of the container ``node`` (scanned on first use, or when the
    cached entry is stale: another end)."""
    starts, s, pos = doc._starts, doc._split, node.start
    k, o = bisect_left(starts, pos, 0, s), 0  # _find, inline: walks come here often
    if k == s:
        o = len(doc.text)
        k = bisect_left(starts, pos - o, s)
    cached = k < len(starts) and starts[k] + o == pos
    if cached and doc._ends[k] + o == node.end:
        return doc._boxes[k]
    box = _Box(_scan_items(doc.text, node.start), node.start)
    if cached:
        doc._ends[k], doc._boxes[k] = node.end - o, box
    else:
        if k <= s:  # in the first frame: at its offsets
            o = 0
            doc._split += 1
        starts.insert(k, node.start - o)
        doc._ends.insert(k, node.end - o)
        doc._boxes.insert(k, box)
    return box


def _splice(doc: JsonDocument, a: int, b: int, new: str, restructured: int | None = None) -> None:
    """Replace ``text[a:b]`` with ``new`` and bring the layout cache up to date. The
    container starting at ``restructured`` gained or lost items: its entry is dropped.

    The split of the cached containers moves to the splice (those it crosses change
    frame, in C-level passes), and those that enclose it, found from the root down
    through the item holding it (a container is cached only once a walk went through
    its parent), change their ends and move their items after it (:meth:`_Box.shift`).
    The containers inside the replaced text are forgotten; those after it are relative
    to the text's end: they move with it. So a run of N edits, first to last or last to
    first, is linear in N (every cached container or item after the splice shifted, one
    by one, made deletes quadratic); in random order the frame changes cost C-level
    passes, no Python lines."""
    length = len(doc.text)
    doc.text = doc.text[:a] + new + doc.text[b:]
    doc._spliced(a, b, new)
    doc._edited = True
    d = len(new) - (b - a)
    starts, ends, boxes = doc._starts, doc._ends, doc._boxes
    if restructured is not None:
        k = _find(doc, restructured, length)
        if k < len(starts) and starts[k] + (0 if k < doc._split else length) == restructured:
            _drop(doc, k, k + 1)
    # the split goes to the splice: the containers before it at their offsets
    t, s = _find(doc, a, length), doc._split
    if t != s:
        lo, hi, by = (s, t, length) if t > s else (t, s, -length)
        _reframe(starts, lo, hi, by)
        _reframe(ends, lo, hi, by)
        doc._split = t
    # the enclosing containers: from the root down, each changing its end and items
    k = 0
    try:
        while k < t:
            start, end = starts[k], ends[k]
            if end <= a:  # the splice is outside every cached container
                break
            if not b < end:  # pragma: no cover - a bug elsewhere
                raise _Cut
            inner = boxes[k].shift(start, end, a, b, d)
            ends[k] = end + d
            if inner is None:
                break
            k = bisect_left(starts, inner, 0, t)
            if k == t or starts[k] != inner:  # not cached
                break
    except _Cut:  # pragma: no cover
        doc._forget_layout()
        return
    # the containers inside the replaced text are forgotten
    if a < b:
        _drop(doc, t, bisect_left(starts, b - length, t))


def _drop(doc: JsonDocument, lo: int, hi: int) -> None:
    """Forget the ``lo``-th to ``hi``-th cached containers."""
    if hi > lo:
        del doc._starts[lo:hi], doc._ends[lo:hi], doc._boxes[lo:hi]
        doc._split -= max(0, min(hi, doc._split) - lo)


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


class JsonEditor(FormatEditor):
    """Format-preserving strict JSON editor (see the module docstring)."""

    # -- parse / dump -------------------------------------------------------------------

    def parse(self, text: str) -> JsonDocument:
        nl = text.find("\n")
        newline = "\r\n" if nl > 0 and text[nl - 1] == "\r" else "\n"
        doc = JsonDocument(text, newline)
        if not text.strip(" \t\r\n"):
            return doc
        try:
            json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise self._explain(text, exc) from None
        except ValueError as exc:  # NaN / Infinity, refused by _reject_constant
            pos = next((m.start(1) for m in _CONSTANT.finditer(text) if m.group(1)), None)
            line, col = _line_col(text, pos) if pos is not None else (None, None)
            raise FormatError(f"invalid JSON: {exc}", line, col) from None
        start = _ws(text, 0)
        if text[start] != "{":
            line, col = _line_col(text, start)
            raise FormatError("the top level must be a JSON object", line, col)
        doc.unit = self._detect_unit(text, start)
        return doc

    @staticmethod
    def _explain(text: str, exc: json.JSONDecodeError) -> FormatError:
        pos = exc.pos
        msg = exc.msg
        if text.startswith("\ufeff"):
            return FormatError("a byte order mark (BOM) is not allowed in JSON", 1, 1)
        if text.startswith(("//", "/*"), pos):
            msg = "comments are not allowed in strict JSON; remove the comment"
        elif pos < len(text) and text[pos] in "}]":
            prev = len(text[:pos].rstrip(" \t\r\n")) - 1
            if prev >= 0 and text[prev] == ",":
                pos = prev
                msg = "trailing comma is not allowed in strict JSON; remove it"
        else:
            from taosync.formats import syntax_words

            msg, pos = syntax_words.json(text, msg, pos)
        line, col = _line_col(text, pos)
        return FormatError(f"invalid JSON: {msg}", line, col)

    @staticmethod
    def _detect_unit(text: str, root: int) -> str:
        members = _scan_items(text, root)
        if members:
            first = members[0].key_start
            ls = text.rfind("\n", root, first)
            if ls != -1:
                indent = text[ls + 1:first]
                if indent and not indent.strip(" \t"):
                    return indent
        m = _FIRST_INDENTED.search(text)
        return m.group(1) if m else "  "

    def dump(self, doc: JsonDocument) -> str:
        if doc._edited:  # a last guard: never hand back text that is not JSON
            try:
                json.loads(doc.text)
            except ValueError as exc:  # pragma: no cover - would be a bug here
                raise FormatError(f"internal error: the edit produced invalid JSON ({exc})") from None
        return doc.text

    # -- walking --------------------------------------------------------------------------

    @staticmethod
    def _root(doc: JsonDocument) -> _Node | None:
        text = doc.text
        start = _ws(text, 0)
        if start >= len(text):
            return None
        end = len(text)  # not text.rstrip(): that copies the whole text on every walk
        while text[end - 1] in " \t\r\n":
            end -= 1
        return _Node(start, end)

    def _child(self, doc: JsonDocument, node: _Node, seg: Any, where: KeyPath) -> _Node | None:
        """The child of ``node`` named by ``seg``, None when absent. FormatError when
        ``node`` is not the container ``seg`` needs."""
        text = doc.text
        if isinstance(seg, Match):
            if text[node.start] != "[":
                raise self._not(doc, node, where, "a list")
            if type(seg.value) is not str:  # (names are strings: found by a walk)
                for start, end in _items(doc, node).spans():
                    if text[start] == "{" and _scan(text, start)[0].get(seg.field) == seg.value:
                        return _Node(start, end)
                return None
            box = _box(doc, node)
            serials = _named(text, node, box, seg.field).get(seg.value)
            if not serials:
                return None
            i = bisect_left(box.serial, serials[0])  # the first so named
            o = node.start if i < box.split else node.end
            return _Node(o + box.start[i], o + box.end[i])
        if text[node.start] != "{":
            raise self._not(doc, node, where, "an object")
        # the last member so named (the one JSON.parse keeps), by the box's key index
        box = _box(doc, node)
        serials = box.index().get(seg)
        if not serials:
            return None
        i = bisect_left(box.serial, serials[-1])
        o = node.start if i < box.split else node.end
        return _Node(o + box.start[i], o + box.end[i])

    @staticmethod
    def _not(doc: JsonDocument, node: _Node, where: KeyPath, what: str) -> FormatError:
        line, col = _line_col(doc.text, node.start)
        name = keypath_str(where) if where else "the top level"
        return FormatError(f"{name} is not {what}", line, col)

    def _walk(self, doc: JsonDocument, path: KeyPath) -> list[_Node]:
        """Nodes from the root along ``path`` as far as they exist."""
        root = self._root(doc)
        if root is None:
            return []
        nodes = [root]
        for i, seg in enumerate(path):
            child = self._child(doc, nodes[-1], seg, path[:i])
            if child is None:
                break
            nodes.append(child)
        return nodes

    # -- the protocol ---------------------------------------------------------------------

    def get(self, doc: JsonDocument, path: KeyPath) -> Any:
        path = tuple(path)
        try:
            nodes = self._walk(doc, path)
        except FormatError:
            return MISSING
        if len(nodes) != len(path) + 1:
            return MISSING
        return nodes[-1].value(doc.text)

    def has(self, doc: JsonDocument, path: KeyPath) -> bool:
        path = tuple(path)
        try:
            return len(self._walk(doc, path)) == len(path) + 1
        except FormatError:
            return False

    def set(self, doc: JsonDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        path = tuple(path)
        if not path:
            raise ValueError("cannot set the whole document")
        value = with_match_field(path, value)
        json.dumps(value, allow_nan=False)  # fail early on values JSON cannot hold
        nodes = self._walk(doc, path)
        if not nodes:  # empty file
            if isinstance(path[0], Match):
                raise FormatError("the top level must be an object, not a list")
            doc.text = self._render(doc, build_value(path, value), "", inline=False) + doc.newline
            doc._forget_layout()
            doc._edited = True
            return [path[:i] for i in range(1, len(path))]
        if len(nodes) == len(path) + 1:
            self._replace(doc, path, nodes, value)
            return []
        i = len(nodes) - 1  # path[i] is missing from nodes[-1]
        seg = path[i]
        if isinstance(seg, Match):
            item_value: Any = element_value(seg, path[i + 1:], value)
            key = None
        else:
            item_value = build_value(path[i + 1:], value)
            key = seg
        parent = nodes[-2] if len(nodes) > 1 else None
        self._insert(doc, nodes[-1], parent, key, item_value)
        return [path[:j] for j in range(i + 1, len(path))]

    def delete(self, doc: JsonDocument, path: KeyPath) -> bool:
        path = tuple(path)
        if not path:
            raise ValueError("cannot delete the whole document")
        removed = False
        while True:
            try:
                nodes = self._walk(doc, path)
            except FormatError:
                return removed
            if len(nodes) != len(path) + 1:
                return removed
            self._remove(doc, nodes[-2], nodes[-1])
            removed = True
            # another member so named? The object's key index says, without a walk
            # (its entry is gone when the removal restructured it: walk again)
            kept = None if isinstance(path[-1], Match) else _cached(doc, nodes[-2].start)
            if kept is not None and path[-1] not in kept.box.index():
                return True

    # -- edits ----------------------------------------------------------------------------

    def _replace(self, doc: JsonDocument, path: KeyPath, nodes: list[_Node], value: Any) -> None:
        node = nodes[-1]
        text = doc.text
        old = node.value(text)
        if same_value(old, value):
            return
        if isinstance(value, dict) and isinstance(old, dict):
            update_mapping(self, doc, path, list(old), value)
            return
        inline = not self._multiline(text, nodes[-2])
        rendered = self._render(doc, value, self._indent_at(text, node.start), inline)
        if text[node.start:node.end] != rendered:
            _splice(doc, node.start, node.end, rendered)

    def _insert(self, doc: JsonDocument, node: _Node, parent: _Node | None, key: str | None, value: Any) -> None:
        text = doc.text
        is_obj = text[node.start] == "{"
        items = _items(doc, node)
        key_text = json.dumps(key, ensure_ascii=False) if is_obj else ""
        if items:
            last = items[-1]
            if len(items) >= 2:
                sep: str | None = text[items[-2].end:last.key_start]
                if "\n" in sep:  # type: ignore[operator]
                    sep = None
            else:
                sep = None if "\n" in text[node.start:items[0].key_start] else ", "
            if sep is None:
                indent = self._indent_at(text, last.key_start)
                sep = "," + doc.newline + indent
                rendered = self._render(doc, value, indent, inline=False)
            else:
                rendered = self._render(doc, value, "", inline=True)
            kv = key_text + text[last.key_end:last.start] if is_obj else ""
            _splice(doc, last.end, last.end, sep + kv + rendered)
            # the container still encloses the splice, so its entry was kept: add the item
            key_start = last.end + len(sep)
            start = key_start + len(kv)
            item = _Item(key, key_start, key_start + len(key_text), start, start + len(rendered))
            kept = _cached(doc, node.start)
            if kept is not None:
                kept.append(item)
            return
        close = "}" if is_obj else "]"
        kv = key_text + ": " if is_obj else ""
        if parent is not None and not self._multiline(text, parent):
            new = text[node.start] + kv + self._render(doc, value, "", inline=True) + close
        else:
            outer = self._indent_at(text, node.start)
            inner = outer + doc.unit
            body = kv + self._render(doc, value, inner, inline=False)
            new = text[node.start] + doc.newline + inner + body + doc.newline + outer + close
        _splice(doc, node.start, node.end, new, restructured=node.start)

    def _remove(self, doc: JsonDocument, container: _Node, node: _Node) -> None:
        a, b = self._cut(doc, container, node)
        _splice(doc, a, b, "")

    @staticmethod
    def _cut(doc: JsonDocument, container: _Node, node: _Node) -> tuple[int, int]:
        """The span removing ``node`` from ``container`` takes out (with its separator),
        the item already gone from the container's cached items: the container encloses
        the removed text, so its entry is kept without the item."""
        items = _items(doc, container)
        idx = items.at(node.start)
        if len(items) == 1:
            a, b = container.start + 1, container.end - 1
        elif idx < len(items) - 1:
            a, b = items[idx].key_start, items[idx + 1].key_start
        else:
            a, b = items[idx - 1].end, items[idx].end
        items.pop(idx)
        return a, b

    # -- rendering helpers ----------------------------------------------------------------

    def _render(self, doc: JsonDocument, value: Any, indent: str, inline: bool) -> str:
        if inline:
            return json.dumps(value, ensure_ascii=False, allow_nan=False)
        out = json.dumps(value, indent=doc.unit, ensure_ascii=False, allow_nan=False)
        if "\n" in out:
            out = out.replace("\n", doc.newline + indent)
        return out

    @staticmethod
    def _indent_at(text: str, pos: int) -> str:
        ls = text.rfind("\n", 0, pos) + 1
        return _INDENT.match(text, ls).group(0)  # type: ignore[union-attr]

    @staticmethod
    def _multiline(text: str, node: _Node) -> bool:
        return text.find("\n", node.start, node.end) != -1


EDITOR = JsonEditor()


def spellings(value: str) -> set[str]:
    """How ``value`` appears in a JSON file besides raw (for the redactor): escaped as
    JSON writes it (ASCII only or not), and as a JSON string inside a JSON string."""
    inner = json.dumps(value, ensure_ascii=False)[1:-1]
    return {json.dumps(value)[1:-1], inner, json.dumps(inner, ensure_ascii=False)[1:-1]}
