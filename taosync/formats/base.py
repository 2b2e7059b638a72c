"""What every format editor offers, and the key paths they understand.

A key path is a tuple of segments. A ``str`` segment names a key in a mapping (a JSON
object, a TOML table, a YAML mapping, a dotenv file). A :class:`Match` segment names
the element of a list whose mapping has ``field == value`` (Continue's ``models`` and
``mcpServers`` lists are keyed by ``name``); setting through a Match that finds no
element appends ``{field: value}`` to the list first.

Every editor changes only what it is asked to: key order, indentation, comments, blank
lines and the trailing newline of everything else stay byte for byte.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Union


@dataclass(frozen=True)
class Match:
    """The list element whose ``field`` equals ``value``."""

    field: str
    value: str

    def __str__(self) -> str:
        value = self.value
        if type(value) is str and ("]" in value or value.startswith('"')):
            value = _quote(value)  # read back whole: a model id may hold a ``]``
        return f"[{self.field}={value}]"


Segment = Union[str, Match]

#: the types of a JSON scalar: a value of one is copied, walked or written as it is
JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


class NamedList(list):
    """A list created through a :class:`Match` segment: its elements are found by name
    (TOML writes one as an array of tables, ``[[name]]``, where a table may stand)."""
KeyPath = tuple[Segment, ...]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class FormatError(Exception):
    """A target file that does not parse (or cannot take an edit). Line/column are 1-based."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def located(self, path: str) -> str:
        where = path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


class FormatEditor(Protocol):
    """One per format module (``json_``, ``toml``, ``yaml``, ``dotenv``): its ``EDITOR``.

    An editor subclasses this class, so a method it has nothing to say for (:meth:`lead`)
    keeps the default here and no caller asks ``hasattr``."""

    def parse(self, text: str) -> Any:
        """Text → document. Empty or whitespace-only text is an empty document.
        Raises FormatError (with line/column) when the text is not valid."""

    def get(self, doc: Any, path: KeyPath) -> Any:
        """Plain Python value (dict/list/str/int/float/bool/None) at path, or MISSING."""

    def set(self, doc: Any, path: KeyPath, value: Any) -> list[KeyPath]:
        """Set path to a plain value, creating parents; returns the parent paths it
        created (so they can be pruned when the key is deleted later). Raises
        FormatError when a parent exists but is not a mapping/list."""

    def delete(self, doc: Any, path: KeyPath) -> bool:
        """Remove path if present (an emptied Match element is left for the caller)."""

    def dump(self, doc: Any) -> str:
        """Document → text; an unedited document dumps to exactly the text parsed."""

    def has(self, doc: Any, path: KeyPath) -> bool:
        """A value is at ``path``: :meth:`get` without making the plain copy of it (a
        container near the top holds the whole catalogue). Default: by :meth:`get`."""
        return self.get(doc, path) is not MISSING

    def lead(self, doc: Any, paths: list[KeyPath]) -> list[tuple[KeyPath, list, list]]:
        """Move the list elements ``paths`` name (a list's path + a Match) ahead of the
        others in their lists, for a client that takes the first (Continue's ``models``,
        YAML); per list reordered: (its path, names before, names after). Default: none."""
        return []


class MatchIndex:
    """Where the elements of lists are by name: per list a :class:`Match` looked into
    and per field, the index of the first element holding each value, so a lookup does
    not walk the list (Continue's ``models``/``mcpServers`` get one lookup per key).

    The editor owns the lists and reports edits: :meth:`appended` after an element is
    added (kept up), :meth:`edited` after any set or delete (forgotten when the path
    names a field some Match looks at: the edit may change what a name finds, also in
    another list through an alias or a merge key), :meth:`forget` when elements move.
    A list replaced whole is harmless: its entry keeps the old list, never looked up.
    """

    __slots__ = ("lists", "name_of")

    def __init__(self, name_of: Callable[[Any, str], str | None]):
        #: id(list) -> (the list, {field: {value: index of the first element}})
        self.lists: dict[int, tuple[list, dict[str, dict[str, int]]]] = {}
        #: an element's value of a field as a Match compares it (None: never equal)
        self.name_of = name_of

    def positions(self, items: list, field: str) -> dict[str, int]:
        hit = self.lists.get(id(items))
        if hit is None or hit[0] is not items:
            hit = self.lists[id(items)] = (items, {})
        found = hit[1].get(field)
        if found is None:
            found = hit[1][field] = {}
            for i, element in enumerate(items):
                name = self.name_of(element, field)
                if name is not None:
                    found.setdefault(name, i)
        return found

    def find(self, items: list, seg: Match) -> int | None:
        """The index of the element ``seg`` names, None when there is none."""
        return self.positions(items, seg.field).get(seg.value)

    def appended(self, items: list) -> None:
        hit = self.lists.get(id(items))
        if hit is not None and hit[0] is items:
            for field, found in hit[1].items():
                name = self.name_of(items[-1], field)
                if name is not None:
                    found.setdefault(name, len(items) - 1)  # found if the first of its name

    def edited(self, path: KeyPath) -> None:
        if self.lists and any(isinstance(seg, str) and seg in fields
                              for _, fields in self.lists.values() for seg in path):
            self.forget()

    def forget(self) -> None:
        self.lists.clear()


class NamedIndex(MatchIndex):
    """The name index of :class:`MatchIndex`, kept up when an element is removed
    instead of rebuilt (a destroy removes the elements one by one, each found by name
    first: a rebuild per removal made that quadratic; TOML's ``[[…]]``, YAML's lists).

    The index holds *stamps*: an element's position when its list was indexed, or, for
    one appended since, its position then plus the elements removed before; the
    position now is the stamp less the removed stamps below it (``gone``, ascending).
    Removing the first element of a name some other element also holds forgets the
    list (the next one of that name is not known without a walk)."""

    __slots__ = ("gone", "twice")

    def __init__(self, name_of: Callable[[Any, str], str | None]):
        super().__init__(name_of)
        #: id(list) -> the stamps of the elements removed since it was indexed, ascending
        self.gone: dict[int, list[int]] = {}
        #: (id(list), field) -> the names more than one element held when indexed or appended
        self.twice: dict[tuple[int, str], set[str]] = {}

    def positions(self, items: list, field: str) -> dict[str, int]:
        """``{name: stamp}`` of the first element of each name (see the class)."""
        hit = self.lists.get(id(items))
        if hit is None or hit[0] is not items or (field not in hit[1] and self.gone.get(id(items))):
            hit = self.lists[id(items)] = (items, {})
            self.gone[id(items)] = []
        found = hit[1].get(field)
        if found is None:
            found = hit[1][field] = {}
            twice = self.twice[id(items), field] = set()
            for i, element in enumerate(items):
                name = self.name_of(element, field)
                if name is not None:
                    if name in found:
                        twice.add(name)
                    else:
                        found[name] = i
        return found

    def find(self, items: list, seg: Match) -> int | None:
        stamp = self.positions(items, seg.field).get(seg.value)
        if stamp is None:
            return None
        gone = self.gone.get(id(items))
        return stamp - bisect_left(gone, stamp) if gone else stamp

    def appended(self, items: list) -> None:
        hit = self.lists.get(id(items))
        if hit is not None and hit[0] is items:
            stamp = len(items) - 1 + len(self.gone.get(id(items), ()))
            for field, found in hit[1].items():
                name = self.name_of(items[-1], field)
                if name is not None:
                    if name in found:
                        self.twice[id(items), field].add(name)
                    else:
                        found[name] = stamp

    def removed(self, items: list, idx: int, element: Any) -> None:
        """``element``, at ``idx`` in ``items``, was just removed from it."""
        hit = self.lists.get(id(items))
        if hit is None or hit[0] is not items:
            return
        gone = self.gone.setdefault(id(items), [])
        lo, hi = idx, idx + len(gone)  # its stamp: the least s with s - (gone <= s) == idx
        while lo < hi:
            mid = (lo + hi) // 2
            if mid - bisect_right(gone, mid) >= idx:
                hi = mid
            else:
                lo = mid + 1
        for field, found in hit[1].items():
            name = self.name_of(element, field)
            if name is not None and found.get(name) == lo:
                if name in self.twice[id(items), field]:
                    del self.lists[id(items)]  # another element of that name: index anew
                    return
                del found[name]
        insort(gone, lo)

    def forget(self) -> None:
        super().forget()
        self.gone.clear()
        self.twice.clear()


#: spellings already made, both ways: the planner spells every owned key of every file on
#: each run (a certified apply runs eleven times), each a few microseconds, per model
_SPELLED: dict[KeyPath, str] = {}
_PARSED: dict[str, KeyPath] = {}
_REMEMBERED = 1 << 16  # paths remembered, at most (a long-running watch)


def keypath_str(path: KeyPath) -> str:
    """A stable, readable spelling of a key path, used in state, plans and messages."""
    if type(path) is not tuple:
        return _spell(path)
    answer = _SPELLED.get(path)  # _remembered, inline: asked for every owned key of each run
    if answer is None:
        answer = _remembered(_SPELLED, path, _spell)
        if len(_PARSED) < _REMEMBERED and _round_trips(path):
            _PARSED[answer] = path  # read back from state.json by the same run (certified)
    return answer


def _round_trips(path: KeyPath) -> bool:
    """``keypath_parse(keypath_str(path)) == path`` is sure: each segment a string, or a
    Match of a string whose field holds none of the characters that close or split one
    (fields are the clients' own names; a value is quoted where it must be)."""
    for seg in path:
        if type(seg) is not str and not (isinstance(seg, Match) and type(seg.value) is str
                                         and _SPLITS.search(seg.field) is None):
            return False
    return True


_SPLITS = re.compile(r"[\[\]=]")


def _spell(path: KeyPath) -> str:
    out = []
    for seg in path:
        if isinstance(seg, Match):
            out.append(str(seg))
        else:
            out.append(("." if out else "") + (seg if _plain(seg) else _quote(seg)))
    return "".join(out)


def _plain(seg: str) -> bool:
    """Written bare: letters, digits (``\\w`` is ``str.isalnum`` or ``_``), ``_`` and ``-``."""
    return _PLAIN_SEGMENT.fullmatch(seg) is not None


_PLAIN_SEGMENT = re.compile(r"[\w-]+")


def _quote(seg: str) -> str:
    return '"' + seg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def keypath_parse(text: str) -> KeyPath:
    """Inverse of :func:`keypath_str`."""
    answer = _PARSED.get(text)
    return answer if answer is not None else _remembered(_PARSED, text, _parse)


def _remembered(answers: dict, question: Any, work: Callable[[Any], Any]) -> Any:
    """``work(question)``, answered from ``answers`` when asked before (at most
    ``_REMEMBERED`` answers are kept)."""
    answer = answers.get(question)
    if answer is None:
        answer = work(question)
        if len(answers) < _REMEMBERED:
            answers[question] = answer
    return answer


#: one segment of a key path's text (or a dot): [field="quoted value"], [field=value],
#: "quoted", plain. A value is quoted when it holds a ``]`` or starts with ``"``; state
#: written before that is read as it was, but for a value both starting and ending in ``"``.
_SEGMENT = re.compile(r'\.|\[([^\]=]*)=(?:"((?:[^"\\]|\\.)*)"(?=\])|([^\]]*))\]'
                      r'|"((?:[^"\\]|\\.)*)"|([^.\["][^.\[]*)', re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)


def _parse(text: str) -> KeyPath:
    if '"' not in text and "[" not in text:  # most paths: plain names between dots
        return tuple(filter(None, text.split(".")))
    out: list[Segment] = []
    at = 0
    for m in _SEGMENT.finditer(text):
        if m.start() != at:
            break
        at = m.end()
        field, quoted_value, value, quoted, plain = m.groups()
        if quoted_value is not None:
            out.append(Match(field, _ESCAPE.sub(r"\1", quoted_value)))
        elif value is not None:
            out.append(Match(field, value))
        elif quoted is not None:
            out.append(_ESCAPE.sub(r"\1", quoted))
        elif plain is not None:
            out.append(plain)
    if at == len(text):
        return tuple(out)
    return _parse_chars(text)  # not well formed: fails as it always did


def _parse_chars(text: str) -> KeyPath:
    """:func:`_parse`, character by character."""
    out: list[Segment] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ".":
            i += 1
            continue
        if c == "[":
            end = text.index("]", i)
            field, value = text[i + 1:end].split("=", 1)
            start = i + 1 + len(field) + 1
            quoted = _read_quoted(text, start) if text.startswith('"', start) else None
            if quoted is not None and text.startswith("]", quoted[1]):
                value, end = quoted[0], quoted[1]
            out.append(Match(field, value))
            i = end + 1
        elif c == '"':
            read = _read_quoted(text, i)
            if read is None:
                raise IndexError(f"unclosed quote in {text!r}")  # as the loop here always failed
            out.append(read[0])
            i = read[1]
        else:
            j = i
            while j < n and text[j] not in ".[":
                j += 1
            out.append(text[i:j])
            i = j
    return tuple(out)


def escaped(text: str, table: dict[str, str], control: str) -> str:
    """``text`` with each character of ``table`` replaced by its escape and any other
    control character (C0, DEL) spelled by ``control``, a format taking its code point
    (TOML's ``\\u{:04x}``, YAML's ``\\x{:02X}``): one loop for every writer's strings."""
    if text.isprintable() and table.keys().isdisjoint(text):
        return text  # most strings: nothing to escape (a control character is unprintable)
    return "".join(table[c] if c in table else
                   control.format(ord(c)) if c < " " or c == "\x7f" else c for c in text)


def same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values, telling bool from int and int from float."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and a == b
    return isinstance(a, int) and isinstance(b, int) and a == b


def update_mapping(editor: "FormatEditor", doc: Any, path: KeyPath, old_keys, value: dict) -> None:
    """Set a dict over an existing mapping key by key: every key of ``value`` is set,
    every other key of ``old_keys`` deleted (the rest of the mapping keeps its bytes)."""
    for k, v in value.items():
        editor.set(doc, path + (k,), v)
    for k in old_keys:
        if k not in value:
            editor.delete(doc, path + (k,))


def element_value(seg: Match, rest: KeyPath, value: Any) -> dict:
    """The new list element that ``seg`` + ``rest`` = ``value`` creates."""
    if rest:
        inner = build_value(rest, value)
        if not isinstance(inner, dict):
            raise FormatError(f"cannot put a list directly inside list element {seg}")
        return {seg.field: seg.value, **inner}
    if not isinstance(value, dict):
        raise FormatError(f"list element {seg} must be a mapping, got {type(value).__name__}")
    return {seg.field: seg.value, **value}


def build_value(rest: KeyPath, value: Any) -> Any:
    """The plain value that, put where ``rest`` starts, holds ``value`` at ``rest``."""
    if not rest:
        return value
    seg = rest[0]
    if isinstance(seg, Match):
        return NamedList([element_value(seg, rest[1:], value)])
    return {seg: build_value(rest[1:], value)}


def with_match_field(path: KeyPath, value: Any) -> Any:
    """Setting a whole Match element: it must be a mapping, and still match."""
    last = path[-1]
    if not isinstance(last, Match):
        return value
    if not isinstance(value, dict):
        raise FormatError(f"list element {last} must be a mapping, got {type(value).__name__}")
    if last.field not in value:
        return {last.field: last.value, **value}
    return value


def _read_quoted(text: str, at: int) -> tuple[str, int] | None:
    """The string quoted at ``text[at]`` and the index after its closing quote; None
    when it is not closed."""
    j, buf, n = at + 1, [], len(text)
    while j < n and text[j] != '"':
        if text[j] == "\\":
            j += 1
            if j == n:
                return None
        buf.append(text[j])
        j += 1
    return ("".join(buf), j + 1) if j < n else None
