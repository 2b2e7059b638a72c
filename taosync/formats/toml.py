"""TOML (Codex's ``config.toml``) edited through tomlkit, which keeps every byte it
does not touch: comments, inline comments, blank lines, key order, quoting,
``[projects."/abs/path"]`` headers.

Placement rules on top of tomlkit (which on its own would put a new key after a comment
that introduces the next table, or a new table before the blank line and comments that
introduce the following one):

* a new key/value goes right after the last key/value of its table (for the root: before
  the first table, so it stays in the root, where TOML needs it), with its siblings'
  indentation; in a table that has none yet, after the leading comment block;
* a dict set at a table position becomes a real ``[a.b]`` table (its dict values become
  sub-tables, its scalars and lists stay key/values), appended after the tables already
  there, as ``codex mcp add`` writes it; parents created on the way render no header of
  their own (``[model_providers.x]`` without ``[model_providers]``);
* the blank lines and comments that closed the table rendered just before a new table
  move below it (they introduce what follows), and come back when it is deleted, so
  set-then-delete restores the original bytes;
* anything inside an existing inline table (``env = { A = "1" }``) or array stays
  inline; an inline table whose keys change is re-rendered from its own entries with its
  own padding (``{ a = 1, b = 2 }``), tomlkit's spacing quirks aside;
* a replaced string keeps its literal (``'...'``) or multi-line style when it can;
* a deleted key, table or ``[[…]]`` element leaves the comments on its lines and inside
  it (every comment is the user's: taosync writes none), each on a line of its own
  where it was (``_comments_within``).

Tables split by an ``[[…]]`` list are valid TOML that tomlkit cannot edit in place. A
list split in one table (``[[models]]``, ``[other]``, ``[[models]]``), or the tables of one
header split by a list (``[a.x]``, ``[[b]]``, ``[a.y]``), it reorders on parse, so any edit
would move the user's tables and comments: the first edit is refused, naming the table
that would move (``_edit_checked``). A list whose parts sit in several tables it walks as
a merged copy, so an element added to or deleted from it would never reach the text: that
is refused, naming the list's lines (``_merged``). Reading such a file is fine.

Setting a dict over an existing table or inline table updates it key by key. TOML has no
null: setting ``None`` is a FormatError. A header-less parent (``[a.b]`` without ``[a]``)
that a delete leaves empty vanishes from the text, since it only existed through its
children (in memory it reads as ``{}`` until the document is parsed again); a part of an
out-of-order table (``[a]`` after ``[a.x]``, ``[b]``) that it leaves without keys goes as a
deleted table does (``_put_back``). Every edited document is checked with
``tomllib`` before it is handed back; a parse is checked with both tomlkit and tomllib.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Sequence

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.exceptions import ParseError
from tomlkit.items import (AoT, Array, Comment, InlineTable, Item, Null, SingleKey, String, StringType,
                           Table, Trivia, Whitespace)

from taosync.formats.base import MISSING, FormatEditor, FormatError, KeyPath, Match, NamedIndex, build_value, element_value, keypath_str, same_value, update_mapping, with_match_field
from taosync.formats.toml_writer import check as _check, is_array_of_tables

__all__ = ["EDITOR", "TomlDocument", "TomlEditor"]

_AT = re.compile(r"\s+at line \d+ col \d+\s*$")
_TOMLLIB_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_MAPS = (Container, Table, InlineTable, OutOfOrderTableProxy)


@dataclass
class TomlDocument:
    doc: tomlkit.TOMLDocument
    original: str
    crlf: bool = False
    edited: bool = field(default=False, repr=False)
    #: ids of the tables this session created (their spacing is undone exactly on delete)
    created: set[int] = field(default_factory=set, repr=False)
    #: where ``[[…]]`` and array elements are by name (so a Match does not walk the list)
    matches: NamedIndex = field(default_factory=lambda: NamedIndex(_match_value), repr=False)
    #: per body list, the runs of ``Null`` entries deletes left (see :func:`_live`)
    skips: dict[int, tuple[list, dict[int, int], dict[int, int]]] = field(default_factory=dict, repr=False)
    #: whether tomlkit was seen to write the parsed text back byte for byte (on first edit)
    checked: bool = field(default=False, repr=False)


@dataclass
class _Step:
    """A node on a walk: the item, and whether it lives inside an inline table/array."""

    node: Any
    inline: bool


#: lookup keys made already: tomlkit makes a SingleKey for every ``in``/``[]`` with a
#: string, checking each character against a string it builds per character; these are
#: only ever looked up with, never stored in a document (where tomlkit may change a key)
_LOOKUP: dict[str, SingleKey] = {}


def _key(name: str) -> SingleKey:
    key = _LOOKUP.get(name)
    if key is None:
        key = SingleKey(name)
        if len(_LOOKUP) < 1 << 16:
            _LOOKUP[name] = key
    return key


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


def _match_value(element: Any, field: str) -> str | None:
    """What a Match on ``field`` compares with in a list ``element`` (None: never equal)."""
    if not isinstance(element, (Table, InlineTable)):
        return None
    value = _plain(element.get(field))
    return value if isinstance(value, str) else None


def _inline(value: Any) -> Item:
    """A plain value as an inline item (inline tables, arrays, scalars)."""
    if isinstance(value, dict):
        s = _render_inline([(tomlkit.key(str(k)).as_string(), " = ", _inline(v).as_string()) for k, v in value.items()], True, ", ")
        return _parse_inline(s)
    if isinstance(value, (list, tuple)):
        arr = tomlkit.array()
        for v in value:
            arr.append(_inline(v))
        return arr
    return tomlkit.item(value)


def _render_inline(entries: list[tuple[str, str, str]], pad: bool, sep: str) -> str:
    if not entries:
        return "{}"
    p = " " if pad else ""
    return "{" + p + sep.join(k + s + v for k, s, v in entries) + p + "}"


def _parse_inline(text: str) -> InlineTable:
    return tomlkit.parse(f"x = {text}\n")["x"]


def _to_table(value: dict) -> Table:
    """A dict as a ``[table]``: scalars and lists first, dicts as sub-tables, lists made
    through a Match as ``[[arrays of tables]]``."""
    t = tomlkit.table()
    for k, v in value.items():
        if not isinstance(v, dict) and not is_array_of_tables(v):
            t.append(str(k), _inline(v))
    for k, v in value.items():
        if isinstance(v, dict):
            t.append(str(k), _to_table(v))
        elif is_array_of_tables(v):
            t.append(str(k), _to_aot(v))
    return t


def _to_aot(value: list) -> AoT:
    aot = tomlkit.aot()
    for v in value:
        aot.append(_to_table(v))
    return aot


def _styled(old: Any, value: Any) -> Item:
    """``value`` as an item, in ``old``'s string style when it can hold it."""
    if isinstance(old, String) and isinstance(value, str):
        literal = old.type in (StringType.SLL, StringType.MLL)
        multiline = old.type in (StringType.MLB, StringType.MLL)
        if literal and ("'" in value or any(ord(c) < 32 and c != "\t" for c in value)):
            literal = False
        if multiline and "\n" not in value:
            multiline = False
        if literal or multiline:
            try:
                return tomlkit.string(value, literal=literal, multiline=multiline)
            except Exception:  # pragma: no cover - fall back to a basic string
                pass
    return _inline(value)


def _container(owner: Any) -> Container | None:
    if isinstance(owner, Container):
        return owner
    if isinstance(owner, (Table, InlineTable)):
        return owner.value
    return None


def _body_insert(cont: Container, idx: int, entries: Sequence[tuple[Any, Item]]) -> None:
    """Insert key-less entries (whitespace/comments) at ``idx``, keeping tomlkit's key
    index map right."""
    n = len(entries)
    if not n:
        return
    for k, v in list(cont._map.items()):
        if isinstance(v, tuple):
            cont._map[k] = tuple(i + n if i >= idx else i for i in v)
        elif v >= idx:
            cont._map[k] = v + n
    cont._body[idx:idx] = entries


def _comments_within(item: Any) -> list[tuple[None, Comment]]:
    """The comments in ``item`` — a key's value, a table or an array of tables taosync
    deletes — as comment lines: its own end-of-line comment, its body's comment lines
    and its keys', its arrays' (every comment is the user's: taosync writes none). A
    table's closing run is not among them: it was cut off before (``_take_tail``)."""
    found: list[str] = []

    def walk(it: Any) -> None:
        if isinstance(it, (Whitespace, Null, Comment)):
            return
        trivia = getattr(it, "trivia", None)
        own = trivia.comment.strip() if trivia is not None and trivia.comment else ""
        if own and not isinstance(it, Array):  # a table's header comes before its body
            found.append(own)
        if isinstance(it, AoT):
            for table in it:
                walk(table)
        elif isinstance(it, OutOfOrderTableProxy):
            for table in it._tables:
                walk(table)
        elif isinstance(it, (Table, InlineTable)):
            for _key, value in it.value.body:
                if isinstance(value, Comment):
                    found.append(value.as_string().strip())
                else:
                    walk(value)
        elif isinstance(it, Array):
            for group in it._value:  # (indent, value, comma, comment) groups
                for part in group:
                    if isinstance(part, Comment):
                        found.append(part.as_string().strip())
                    elif isinstance(part, Item):
                        walk(part)
            if own:  # after the closing bracket
                found.append(own)

    walk(item)
    return [(None, Comment(Trivia(comment_ws="", comment=c, trail="\n"))) for c in found if c]


def _where(owner: Any, item: Any, key: str) -> tuple[Container, int] | None:
    """Where ``item``, ``owner``'s entry ``key``, is in its body — its first part's
    place, for an out-of-order table; in the part holding it, for an out-of-order
    ``owner``. A walk, made only when comments are to be kept."""
    first = item._tables[0] if isinstance(item, OutOfOrderTableProxy) else item
    parts = owner._tables if isinstance(owner, OutOfOrderTableProxy) else [owner]
    for part in parts:
        cont = _container(part)
        for i, (_key, value) in enumerate(cont.body if cont is not None else ()):
            # (by name too: an out-of-order table hands out its own copy of a scalar)
            if value is first or (_key is not None and _key.key == key and value == first):
                assert cont is not None
                return cont, i
    return None


def _last_body(table: Table) -> Container:
    """The container whose end is rendered last within ``table``."""
    cont = table.value
    for _k, v in reversed(cont.body):
        if isinstance(v, Null):
            continue
        if isinstance(v, Table):
            return _last_body(v)
        if isinstance(v, AoT) and len(v):
            return _last_body(v[-1])
        break
    return cont


def _take_tail(cont: Container) -> list[tuple[Any, Item]]:
    """Remove and return the trailing run of whitespace/comment entries of ``cont``."""
    body = cont.body
    j = len(body)
    while j > 0 and body[j - 1][0] is None and isinstance(body[j - 1][1], (Whitespace, Comment, Null)):
        j -= 1
    tail = [e for e in body[j:] if not isinstance(e[1], Null)]
    if tail:
        del body[j:]
    return tail


def _flatten(cont: Container, out: list | None = None) -> list[tuple[Any, int, Any, Any]]:
    """Every body entry in rendering order: (holder, index, key, item), the holder being
    the Container (or the AoT) whose body holds the entry."""
    if out is None:
        out = []
    for i, (k, v) in enumerate(cont.body):
        out.append((cont, i, k, v))
        if isinstance(v, Table):
            _flatten(v.value, out)
        elif isinstance(v, AoT):
            for j, t in enumerate(v.body):
                out.append((v, j, k, t))
                _flatten(t.value, out)
    return out


def _previous(flat: list, item: Any) -> tuple[int, int] | None:
    """Position of ``item`` in ``flat`` and of the entry rendered just before it."""
    pos = next((i for i, e in enumerate(flat) if e[3] is item), None)
    if pos is None:
        return None
    k = pos - 1
    while k >= 0 and isinstance(flat[k][3], (Null, AoT)):  # an AoT renders only its tables
        k -= 1
    return pos, k


#: where an entry is: (the Container or AoT whose body holds it, its index there) for it
#: and for each entry above it, from the document's top level down
Chain = list[tuple[Any, int]]
#: where text rendered before a deleted table ends: (container, index to insert at, the
#: entry that ends it or None, and that entry's chain when it was found from one)
Anchor = tuple[Container, int, Any, "Chain | None"]


def _item_at(holder: Any, i: int) -> Any:
    return holder.body[i] if isinstance(holder, AoT) else holder.body[i][1]


def _index_in(owner: Any, key: str, item: Any) -> tuple[Container, int] | None:
    """Where ``owner``'s entry ``key`` (which is ``item``) is in its body, through
    tomlkit's key map (None for an out-of-order table: its parts are in several places)."""
    cont = _container(owner)
    if cont is None:
        return None
    idx = cont._map.get(_key(key))
    if type(idx) is not int or cont.body[idx][1] is not item:
        return None
    return cont, idx


def _dotted(owner: Any, key: Any, node: Any) -> bool:
    """Whether ``node``, ``owner``'s entry ``key``, is a table made by dotted keys
    (``d.e = 1``): no ``[d.…]`` header may open it again (TOML: "Cannot overwrite a
    value"), so a table or list of tables set in it is written inline (``d.x = {…}``)."""
    if not isinstance(node, Table) or not isinstance(key, str):
        return False
    where = _index_in(owner, key, node)
    entry_key = where[0].body[where[1]][0] if where is not None else None
    return entry_key is not None and entry_key.is_dotted()


def _before(chain: Chain) -> Chain | None:
    """The entry :func:`_flatten` lists just before ``chain``'s (None: it is the first),
    found without flattening: the last entry of the previous sibling's subtree, or the
    parent."""
    holder, i = chain[-1]
    if i == 0:
        return chain[:-1] or None
    out = chain[:-1] + [(holder, i - 1)]
    while True:
        item = _item_at(*out[-1])
        if isinstance(item, Table) and item.value.body:
            out.append((item.value, len(item.value.body) - 1))
        elif isinstance(item, AoT) and item.body:
            out.append((item, len(item.body) - 1))
        else:
            return out


def _rendered_before(chain: Chain) -> Chain | None:
    """What :func:`_previous` finds: the entry before ``chain``'s that renders text."""
    prev = _before(chain)
    while prev is not None and isinstance(_item_at(*prev[-1]), (Null, AoT)):
        prev = _before(prev)
    return prev


def _live(tdoc: TomlDocument, body: list, i: int, step: int) -> int:
    """The index of the entry of ``body`` nearest ``i``, past it in the direction
    ``step`` (-1: before, +1: after), that is not a ``Null`` (-1 or ``len(body)``: none).

    A delete leaves a ``Null`` where its entry was (tomlkit never reuses or compacts the
    slot), so deleting many tables one after the other would walk back over the ones
    deleted before, each time: the runs crossed are remembered per body (each index to
    the far end of a run of ``Null``, compressed as they are followed), and forgotten when
    entries are inserted or taken off the end (:func:`_forget_skips`), on every set, and
    when closing comments fill the start of a run (:meth:`TomlEditor._put_tail`: a step
    remembered across the run would cross them)."""
    memo = tdoc.skips.get(id(body))
    if memo is None or memo[0] is not body:
        memo = tdoc.skips[id(body)] = (body, {}, {})
    jump = memo[1] if step < 0 else memo[2]
    n = len(body)
    crossed = []
    j = i + step
    while 0 <= j < n and isinstance(body[j][1], Null):
        crossed.append(j)
        j = jump.get(j, j + step)
    for k in crossed:
        jump[k] = j
    return j


def _forget_skips(tdoc: TomlDocument, body: list) -> None:
    """``body``'s indices moved (an insert, a cut at the end): its runs are unknown."""
    tdoc.skips.pop(id(body), None)


def _before_live(tdoc: TomlDocument, chain: Chain) -> Chain | None:
    """:func:`_before`, stepping over ``Null`` entries (which render nothing) through
    :func:`_live`: the entry before ``chain``'s in rendering order that is not one."""
    holder, i = chain[-1]
    j = i - 1 if isinstance(holder, AoT) else _live(tdoc, holder.body, i, -1)
    if j < 0:
        return chain[:-1] or None
    out = chain[:-1] + [(holder, j)]
    while True:
        item = _item_at(*out[-1])
        if isinstance(item, Table):
            body = item.value.body
            k = _live(tdoc, body, len(body), -1)
            if k < 0:
                return out
            out.append((item.value, k))
        elif isinstance(item, AoT) and item.body:
            out.append((item, len(item.body) - 1))
        else:
            return out


def _after_live(tdoc: TomlDocument, chain: Chain) -> Chain | None:
    """The entry after ``chain``'s in rendering order (what :func:`_flatten` lists next)
    that is not a ``Null``; None at the end of the document."""
    item = _item_at(*chain[-1])
    if isinstance(item, Table):
        k = _live(tdoc, item.value.body, -1, 1)
        if k < len(item.value.body):
            return chain + [(item.value, k)]
    elif isinstance(item, AoT) and item.body:
        return chain + [(item, 0)]
    out = list(chain)
    while out:
        holder, i = out.pop()
        j = i + 1 if isinstance(holder, AoT) else _live(tdoc, holder.body, i, 1)
        if j < len(holder.body):
            return out + [(holder, j)]
    return None


#: a line that may be a table header: ``[a."b"]``, ``[[a.b]]  # comment``; in a CRLF
#: file too (``$`` stops before the ``\n`` only)
_HEADER = re.compile(r"^[ \t]*(\[\[?[^\n]*?\]\]?)[ \t]*(?:#[^\n]*)?\r?$", re.M)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _headers(text: str) -> list[tuple[int, bool, tuple[str, ...]]]:
    """Each table header of ``text``: its line, whether it opens a ``[[…]]`` element,
    its key path (spelled as TOML reads it: quotes and spaces do not matter)."""
    found: list[tuple[int, bool, tuple[str, ...]]] = []
    line, at = 1, 0
    for m in _HEADER.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        try:
            data: Any = tomllib.loads(m.group(1) + "\n")
        except tomllib.TOMLDecodeError:
            continue  # a line of a multi-line array or string, not a header
        key: list[str] = []
        while isinstance(data, dict) and len(data) == 1:
            name, data = next(iter(data.items()))
            key.append(name)
        found.append((line, m.group(1).startswith("[["), tuple(key)))
    return found


def _split_list(text: str, key: tuple[str, ...] | None = None) -> tuple[str, int, int] | None:
    """The first ``[[…]]`` list of ``text`` (or the one at ``key``) whose tables another
    table splits: its header, the line of its first element and of the one resuming it."""
    first: dict[tuple[str, ...], int] = {}
    last: tuple[str, ...] = ()
    for line, element, path in _headers(text):
        if element:
            if path in first and last[:len(path)] != path and key in (None, path):
                return _spelled(True, path), first[path], line
            first.setdefault(path, line)
        last = path
    return None


def _merged(holder: Any, node: Any) -> bool:
    """Whether ``node`` is tomlkit's merged copy of a ``[[…]]`` list whose parts sit in
    several tables: nothing done to that copy reaches the text."""
    return (isinstance(node, AoT) and isinstance(holder, OutOfOrderTableProxy)
            and not any(v is node for part in holder._tables for _k, v in part.value.body))


def _list_key(path: KeyPath) -> tuple[str, ...] | None:
    """``path`` as the key of a ``[[…]]`` header, when it can be one (no list step)."""
    key = tuple(seg for seg in path if isinstance(seg, str))
    return key if len(key) == len(path) else None


def _merged_error(tdoc: TomlDocument, path: KeyPath) -> FormatError:
    """The error for adding or removing an element of the merged list at ``path``: its
    split named (that list's, else the first one found) with the lines to put together."""
    key = _list_key(path)
    split = _split_list(tdoc.original, key) or (_split_list(tdoc.original) if key else None)
    if split is None:
        return FormatError(f"{keypath_str(path)}: taosync's TOML library cannot add or remove "
                           "an element of this list in place")
    header, start, again = split
    return FormatError(f"the {header} tables are split by other tables (lines {start} and "
                       f"{again}): taosync's TOML library cannot add or remove one of them in "
                       f"place — put the {header} tables together and run again", again, 1)


def _edit_checked(tdoc: TomlDocument) -> None:
    """Before the first edit of a parsed file: that tomlkit writes it back byte for byte.
    It does not when a ``[[…]]`` list is split by other tables in one table, or an
    ``[[…]]`` list splits the tables under one header (``[a.x]``, ``[[b]]``, ``[a.y]``):
    it moved the later part up on parse, so any edit would move the user's tables and
    the comments between them. The error names the first table that would move."""
    if tdoc.checked:
        return
    out = tdoc.doc.as_string() if tdoc.original else ""
    if tdoc.crlf:
        out = re.sub(r"(?<!\r)\n", "\r\n", out)
    if out != tdoc.original:
        raise _moved_error(tdoc.original, out)
    _drop_copied_comments(tdoc.doc)
    tdoc.checked = True


def _drop_copied_comments(cont: Container) -> None:
    """tomlkit gives a super table that has no header line (``[t]`` of ``[t.x]  # c``
    without ``[t]``, ``[p.t]`` of ``[p.t.x]``) the header comment of the child it was
    made for. It renders nowhere, but a delete would keep it as well as the child's, and
    a key set in the super table would show it again on the ``[t]`` line tomlkit then
    writes: it is dropped before the first edit (the text stays the same)."""
    for _k, item in cont.body:
        if isinstance(item, Table):
            if item.trivia.comment and not _renders_header(item):
                item.trivia.comment = item.trivia.comment_ws = ""
            _drop_copied_comments(item.value)
        elif isinstance(item, AoT):
            for table in item.body:
                _drop_copied_comments(table.value)


def _renders_header(table: Table) -> bool:
    """Whether tomlkit writes the header line of ``table`` (one opened by a header, not
    a dotted key): a super table's only once it holds something other than tables (as
    tomlkit's ``_emits_header`` decides)."""
    return not table.is_super_table() or table.is_aot_element() or any(
        not isinstance(v, (Table, AoT, Whitespace, Null)) or (k is not None and k.is_dotted())
        for k, v in table.value.body)


def _moved_error(text: str, rendered: str) -> FormatError:
    """Name the first table tomlkit's rendering of ``text`` moves, and where to."""
    before, after = _headers(text), _headers(rendered)
    shape = [(element, path) for _line, element, path in before]
    for i, (_line, element, path) in enumerate(after):
        if i < len(shape) and shape[i] == (element, path):
            continue
        line = next((ln for ln, *rest in before[i + 1:] if tuple(rest) == (element, path)), None)
        if line is None:
            break
        to = f"after {_spelled(*shape[i - 1])} (line {before[i - 1][0]})" if i else "to the top"
        return FormatError(
            f"taosync's TOML library would move {_spelled(element, path)} up {to} on any "
            "edit, past the tables and comments between them — put those tables together "
            "and run again", line, 1)
    return FormatError("taosync's TOML library cannot write this file back as it is, so an "
                       "edit would change text that is yours — please report it")


def _spelled(element: bool, path: tuple[str, ...]) -> str:
    """A table header as TOML spells it: ``[a."b c"]``, ``[[models]]``."""
    name = ".".join(k if _BARE_KEY.fullmatch(k) else json.dumps(k) for k in path)
    return f"[[{name}]]" if element else f"[{name}]"


class TomlEditor(FormatEditor):
    """Format-preserving TOML editor (see the module docstring)."""

    # -- parse / dump -------------------------------------------------------------------

    def parse(self, text: str) -> TomlDocument:
        if text.startswith("\ufeff"):  # tomlkit would say "Empty key", tomllib "Invalid statement"
            raise FormatError("a byte order mark (BOM) is not allowed in TOML", 1, 1)
        try:
            doc = tomlkit.parse(text)
        except ParseError as exc:
            msg, line, col = _AT.sub("", str(exc)), exc.line, exc.col + 1
            if "\\x00" in msg:  # tomlkit's way of saying "end of file", placed at 1:1
                msg = "unexpected end of file"
                line, col = text.count("\n") + 1, len(text) - (text.rfind("\n") + 1) + 1
            from taosync.formats import syntax_words

            raise FormatError(*syntax_words.toml(text, msg, line, col)) from None
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = _TOMLLIB_AT.search(str(exc))
            msg = _TOMLLIB_AT.sub("", str(exc))
            if m is None:
                raise FormatError(f"invalid TOML: {msg}") from None
            from taosync.formats import syntax_words

            raise FormatError(*syntax_words.toml(text, msg, *map(int, m.groups()))) from None
        crlf = "\r\n" in text and "\n" not in text.replace("\r\n", "")
        return TomlDocument(doc, text, crlf)

    def dump(self, tdoc: TomlDocument) -> str:
        if not tdoc.edited:
            return tdoc.original
        out = tdoc.doc.as_string()
        if tdoc.crlf:
            out = re.sub(r"(?<!\r)\n", "\r\n", out)
        try:
            tomllib.loads(out)
        except tomllib.TOMLDecodeError as exc:  # pragma: no cover - would be a bug here
            raise FormatError(f"internal error: the edit produced invalid TOML ({exc})") from None
        return out

    # -- walking --------------------------------------------------------------------------

    def _child(self, tdoc: TomlDocument, step: _Step, seg: Any, where: KeyPath) -> _Step | None:
        node = step.node
        if isinstance(seg, Match):
            if not isinstance(node, (AoT, Array)):
                raise FormatError(f"{keypath_str(where) or 'the top level'} is not a list")
            at = tdoc.matches.find(node, seg)
            return None if at is None else _Step(node[at], step.inline or isinstance(node, Array))
        if not isinstance(node, _MAPS):
            raise FormatError(f"{keypath_str(where) or 'the top level'} is not a table")
        key = _key(seg)
        if key not in node:
            return None
        child = node[key]
        return _Step(child, step.inline or isinstance(node, (InlineTable, Array)))

    def _walk(self, tdoc: TomlDocument, path: KeyPath) -> list[_Step]:
        steps = [_Step(tdoc.doc, False)]
        for i, seg in enumerate(path):
            child = self._child(tdoc, steps[-1], seg, path[:i])
            if child is None:
                break
            steps.append(child)
        return steps

    # -- the protocol ---------------------------------------------------------------------

    def get(self, tdoc: TomlDocument, path: KeyPath) -> Any:
        path = tuple(path)
        try:
            steps = self._walk(tdoc, path)
        except FormatError:
            return MISSING
        if len(steps) != len(path) + 1:
            return MISSING
        return _plain(steps[-1].node)

    def set(self, tdoc: TomlDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        path = tuple(path)
        if not path:
            raise ValueError("cannot set the whole document")
        value = with_match_field(path, value)
        _check(value, path)
        _edit_checked(tdoc)
        try:
            return self._set(tdoc, path, value)
        finally:
            tdoc.matches.edited(path)
            tdoc.skips.clear()  # a set may insert anywhere (tomlkit's own inserts too)

    def _set(self, tdoc: TomlDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        steps = self._walk(tdoc, path)
        if len(steps) == len(path) + 1:
            self._replace(tdoc, path, steps, value)
            return []
        i = len(steps) - 1
        step, seg, rest = steps[-1], path[i], path[i + 1:]
        node = step.node
        if isinstance(seg, Match):
            if not isinstance(node, (AoT, Array)):
                raise FormatError(f"{keypath_str(path[:i]) or 'the top level'} is not a list")
            elem = element_value(seg, rest, value)
            if i and _merged(steps[-2].node, node):
                raise _merged_error(tdoc, path[:i])
            if isinstance(node, AoT):
                table = _to_table(elem)
                node.append(table)
                self._after_new_table(tdoc, table, self._chain(tdoc, path, steps, [
                    (node, len(node.body) - 1) if node.body[-1] is table else None]))
            else:
                node.append(_inline(elem))
            tdoc.matches.appended(node)
        else:
            if not isinstance(node, _MAPS):
                raise FormatError(f"{keypath_str(path[:i]) or 'the top level'} is not a table")
            new = build_value(rest, value)
            if step.inline or isinstance(node, InlineTable) or (i and _dotted(steps[i - 1].node, path[i - 1], node)):
                pad = self._style_of(node)
                node[seg] = _inline(new)
                self._restyle(tdoc, path, steps, len(steps) - 1, pad)
            elif isinstance(new, dict):
                table = _to_table(new)
                node[seg] = table
                self._after_new_table(tdoc, table, self._chain(tdoc, path, steps, [_index_in(node, seg, table)]))
            elif is_array_of_tables(new):
                aot = _to_aot(new)
                node[seg] = aot
                self._after_new_table(tdoc, aot[0], self._chain(tdoc, path, steps, [_index_in(node, seg, aot), (aot, 0)]))
            else:
                self._insert_kv(node, seg, _inline(new))
        tdoc.edited = True
        return [path[:j] for j in range(i + 1, len(path))]

    def delete(self, tdoc: TomlDocument, path: KeyPath) -> bool:
        path = tuple(path)
        if not path:
            raise ValueError("cannot delete the whole document")
        try:
            steps = self._walk(tdoc, path)
        except FormatError:
            return False
        if len(steps) != len(path) + 1:
            return False
        _edit_checked(tdoc)
        parent, node, seg = steps[-2], steps[-1].node, path[-1]
        if isinstance(seg, Match) and len(steps) >= 3 and _merged(steps[-3].node, parent.node):
            raise _merged_error(tdoc, path[:-1])
        if _merged(parent.node, node):
            raise _merged_error(tdoc, path)
        parts = self._parts_emptied(tdoc, path, steps)
        if isinstance(seg, Match):
            idx = tdoc.matches.find(parent.node, seg)
            assert idx is not None and parent.node[idx] is node
            if isinstance(parent.node, AoT):
                self._delete_aot_element(tdoc, parent.node, idx, self._chain(tdoc, path, steps, []))
                tdoc.matches.removed(parent.node, idx, node)
            else:
                del parent.node[idx]
                tdoc.matches.forget()  # the elements after it moved up
        elif isinstance(node, (Table, AoT)) and not parent.inline:
            chain = self._chain(tdoc, path, steps, [])
            if chain is not None and isinstance(node, AoT):
                chain.append((node, 0))
            self._delete_table(tdoc, parent.node, seg, node, chain)
        else:
            pad = self._style_of(parent.node) if isinstance(parent.node, InlineTable) else None
            own = [] if parent.inline or pad is not None else _comments_within(node)
            place = _where(parent.node, node, seg) if own else None
            del parent.node[seg]  # leaves a Null where it was: no index moves
            if place is not None and isinstance(place[0].body[place[1]][1], Null):
                cont, at = place  # the comments (the user's) take its place
                _forget_skips(tdoc, cont.body)
                cont.body[at] = own[0]
                _body_insert(cont, at + 1, own[1:])
            if pad is not None:
                self._restyle(tdoc, path, steps, len(steps) - 2, pad)
                tdoc.skips.clear()
        # a part tomlkit removed, header and all, goes as a deleted table does: its
        # comments (its header's, its body's, the deleted key's put there) stay
        for part, anchor, linear, shown in reversed(parts):  # (the last first: no anchor moves)
            if not shown or not any(t is part for t in parent.node._tables):
                self._put_back(tdoc, anchor, part, part, part, linear)
        tdoc.matches.edited(path)
        tdoc.edited = True
        return True

    # -- replacing ------------------------------------------------------------------------

    def _replace(self, tdoc: TomlDocument, path: KeyPath, steps: list[_Step], value: Any) -> None:
        old = steps[-1].node
        if same_value(_plain(old), value):
            return
        if isinstance(value, dict) and isinstance(old, _MAPS):
            update_mapping(self, tdoc, path, list(old), value)
            if not value and isinstance(old, Table) and old.is_super_table():
                old._is_super_table = False  # an empty table set on purpose keeps its [header]
            return
        parent, seg = steps[-2], path[-1]
        if _merged(parent.node, old):
            raise _merged_error(tdoc, path)
        tdoc.edited = True
        if isinstance(seg, Match):  # a whole element replaced by a non-dict: refused earlier
            raise FormatError(f"{keypath_str(path)} must be a table")
        if parent.inline or isinstance(parent.node, InlineTable):
            parent.node[seg] = _styled(old, value)
            return
        if isinstance(old, AoT) and isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            self._delete_table(tdoc, parent.node, seg, old)
            aot = _to_aot(list(value))
            parent.node[seg] = aot
            self._after_new_table(tdoc, aot[0], self._chain(tdoc, path, steps[:-1], [_index_in(parent.node, seg, aot), (aot, 0)]))
            return
        if isinstance(old, (Table, AoT)) or isinstance(value, dict):
            # a table becomes a key/value or the other way round: it must move
            self.delete(tdoc, path)
            self.set(tdoc, path, value)
            return
        parent.node[seg] = _styled(old, value)

    # -- inserting ------------------------------------------------------------------------

    def _insert_kv(self, owner: Any, key: str, item: Item) -> None:
        cont = _container(owner)
        if cont is None or (isinstance(owner, Table) and owner.is_super_table()):
            owner[key] = item  # tomlkit knows dotted keys and header-less tables
            return
        body = cont.body
        first_table = next(
            (i for i, (k, v) in enumerate(body) if isinstance(v, (Table, AoT)) and not (k is not None and k.is_dotted())),
            len(body),
        )
        kvs = [i for i in range(first_table) if body[i][0] is not None]
        blank_after = False
        if kvs:
            idx = kvs[-1] + 1
            prev = body[kvs[-1]][1]
            item.trivia.indent = prev.trivia.indent
            if prev.trivia.trail.count("\n") >= 2 and not prev.trivia.trail.strip():
                # the blank line a first key got (below) stays below the last one
                item.trivia.trail, prev.trivia.trail = prev.trivia.trail, "\n"
        elif first_table == len(body):
            idx = len(body)
        else:
            j = first_table
            while j > 0 and isinstance(body[j - 1][1], (Whitespace, Comment, Null)):
                j -= 1
            blanks = [i for i in range(j, first_table) if isinstance(body[i][1], Whitespace)]
            idx = blanks[-1] + 1 if blanks else j
            blank_after = True
        indent = item.trivia.indent
        if idx >= len(body):
            owner.append(key, item)
            item.trivia.indent = indent  # Table.append would indent it once more
            return
        if blank_after:  # a blank line between it and the comment/table that follows
            item.trivia.trail = "\n\n"
        cont._insert_at(idx, key, item)
        if owner is not cont:
            dict.__setitem__(owner, key, item)

    @staticmethod
    def _chain(tdoc: TomlDocument, path: KeyPath, steps: list[_Step], tail: list[Any]) -> Chain | None:
        """The chain of an entry just added below ``steps[-1]`` (``tail``: where it is,
        from there down), found through the key maps and the name index: no walk of a
        body. None where that cannot say (an out-of-order table, an inline value)."""
        chain: Chain = []
        for j in range(1, len(steps)):
            parent, seg, child = steps[j - 1].node, path[j - 1], steps[j]
            if child.inline:
                return None
            if isinstance(seg, Match):
                if not isinstance(parent, AoT):
                    return None
                at = tdoc.matches.find(parent, seg)
                if at is None or parent.body[at] is not child.node:
                    return None
                chain.append((parent, at))
            else:
                where = _index_in(parent, seg, child.node)
                if where is None:
                    return None
                chain.append(where)
        if any(t is None for t in tail):
            return None
        return chain + tail

    def _after_new_table(self, tdoc: TomlDocument, table: Table, chain: Chain | None = None) -> None:
        """Move the whitespace/comments that closed the previously rendered table below
        the new one, and give the new header a blank line before it. With the new
        table's ``chain``, what rendered before it is found from there (linear work in
        a session adding many tables); without, by flattening the document."""
        tdoc.created.add(id(table))
        if chain is not None:
            prev = _rendered_before(chain)
            if prev is not None:
                holder, i = prev[-1]
                if not isinstance(holder, AoT):
                    key, item = holder.body[i]
                    if key is None and isinstance(item, (Whitespace, Comment)) and holder is not chain[-1][0] \
                            and all(isinstance(e[1], (Whitespace, Comment, Null)) for e in holder.body[i + 1:]):
                        _last_body(table).body.extend(_take_tail(holder))
                        prev = _rendered_before(chain)
            if prev is not None and "\n" not in table.trivia.indent and not isinstance(_item_at(*prev[-1]), Whitespace):
                table.trivia.indent = "\n" + table.trivia.indent
            return
        flat = _flatten(tdoc.doc)
        where = _previous(flat, table)
        if where is None:  # pragma: no cover - defensive
            return
        pos, k = where
        if k >= 0 and flat[k][2] is None and isinstance(flat[k][3], (Whitespace, Comment)):
            holder = flat[k][0]
            rest = holder.body[flat[k][1] + 1:]
            if holder is not flat[pos][0] and all(isinstance(e[1], (Whitespace, Comment, Null)) for e in rest):
                _last_body(table).body.extend(_take_tail(holder))
                flat = _flatten(tdoc.doc)
                pos, k = _previous(flat, table)  # type: ignore[misc]
        if k >= 0 and "\n" not in table.trivia.indent and not isinstance(flat[k][3], Whitespace):
            table.trivia.indent = "\n" + table.trivia.indent

    # -- deleting -------------------------------------------------------------------------

    def _delete_table(self, tdoc: TomlDocument, owner: Any, key: str, node: Any, chain: Chain | None = None) -> None:
        """Delete a table (or array of tables), keeping the comments and blank lines
        that closed it where they were rendered. ``chain``: where its first table is
        (see :meth:`_anchor`)."""
        first = node if isinstance(node, Table) else (node[0] if isinstance(node, AoT) and len(node) else None)
        if first is None:
            del owner[key]
            return
        anchor = self._anchor(tdoc, first, chain)
        del owner[key]
        self._put_back(tdoc, anchor, node, node if isinstance(node, Table) else node[-1], first,
                       chain is not None)

    def _delete_aot_element(self, tdoc: TomlDocument, aot: AoT, idx: int, chain: Chain | None = None) -> None:
        element = aot[idx]
        anchor = self._anchor(tdoc, element, chain)
        del aot[idx]
        self._put_back(tdoc, anchor, element, element, element, chain is not None)

    def _put_back(self, tdoc: TomlDocument, anchor: Anchor, gone: Any, last: Table, first: Table,
                  linear: bool) -> None:
        """What a table, ``[[…]]`` list or part that went (``gone``) leaves at ``anchor``:
        the user's comments in it and the closing run of its ``last`` table. ``first``:
        the table whose spacing this session made, if it did (undone exactly)."""
        tail = self._cut_tail(tdoc, _last_body(last))
        self._put_tail(tdoc, anchor, _comments_within(gone) + tail, id(first) not in tdoc.created,
                       linear)

    def _parts_emptied(self, tdoc: TomlDocument, path: KeyPath, steps: list[_Step]) -> list[tuple[Table, Anchor, bool, bool]]:
        """The parts of the out-of-order table ``steps[-2]`` holding nothing but the key
        deleted, which tomlkit removes header and all (while another part is left):
        each with where the text before it ends, found before anything moves, whether
        that was from its chain, and whether it renders a header (one that does not
        would render one for the comments left in it: it goes, kept or not)."""
        proxy, seg = steps[-2].node, path[-1]
        if not isinstance(proxy, OutOfOrderTableProxy) or isinstance(seg, Match):
            return []
        found = []
        for part in proxy._tables:
            if len(part) == 1 and seg in part:
                chain = self._part_chain(tdoc, path, steps, part)
                found.append((part, self._anchor(tdoc, part, chain), chain is not None, _renders_header(part)))
        return found

    def _part_chain(self, tdoc: TomlDocument, path: KeyPath, steps: list[_Step], part: Table) -> Chain | None:
        """The chain of ``part`` of the out-of-order table ``steps[-2]``: its holder's,
        and its place among the holder's entries of that key (tomlkit's key map)."""
        holder, key = steps[-2].node._container, path[-2]
        at = holder._map.get(_key(key)) if isinstance(key, str) else None
        at = next((i for i in at if holder.body[i][1] is part), None) if isinstance(at, tuple) else None
        return self._chain(tdoc, path, steps[:-2], [None if at is None else (holder, at)])

    @staticmethod
    def _cut_tail(tdoc: TomlDocument, cont: Container) -> list[tuple[Any, Item]]:
        _forget_skips(tdoc, cont.body)
        return _take_tail(cont)

    @staticmethod
    def _anchor(tdoc: TomlDocument, item: Any, chain: Chain | None = None) -> Anchor:
        """Where text rendered right before ``item`` ends: (container, index to insert
        at, the whitespace/comment/value entry that ends it, or None; and its chain).
        With ``item``'s ``chain`` it is found by stepping back from there over what
        renders nothing (:func:`_before_live`: linear work in a session deleting many
        tables); without, by flattening the document."""
        if chain is not None:
            prev = _before_live(tdoc, chain)
            while prev is not None:
                holder, i = prev[-1]
                it = _item_at(holder, i)
                if isinstance(it, Table) and not (it.is_super_table() and not isinstance(holder, AoT)):
                    return it.value, 0, None, None
                if isinstance(it, (Table, AoT)):  # renders nothing of its own here
                    prev = _before_live(tdoc, prev)
                    continue
                return holder, i + 1, it, prev
            return tdoc.doc, 0, Whitespace(""), None
        flat = _flatten(tdoc.doc)
        where = _previous(flat, item)
        k = where[1] if where else -1
        while k >= 0:
            holder, i, _key, it = flat[k]
            if isinstance(it, Table) and not (it.is_super_table() and not isinstance(holder, AoT)):
                return it.value, 0, None, None
            if isinstance(it, (Table, AoT, Null)):  # renders nothing of its own here
                k -= 1
                continue
            return holder, i + 1, it, None
        return tdoc.doc, 0, Whitespace(""), None  # the top of the file: no blank line to keep there

    @staticmethod
    def _put_tail(tdoc: TomlDocument, anchor: Anchor, tail: list[tuple[Any, Item]], tidy: bool,
                  linear: bool = False) -> None:
        """Put a deleted table's closing whitespace/comments where it was rendered, without
        doubling the blank line before it, detaching a comment from what follows, or
        leaving a blank line at the end of the file (whether anything follows: from the
        anchor's chain when it has one, else by flattening the document).

        ``linear`` (the table was found from its chain): the comments go into ``Null``
        slots right after the anchor when there are enough, else they are inserted with
        as many spare ``Null`` slots after them as the body has keys (each insert
        renumbers those keys in tomlkit's map): deleting many tables that each end in a
        comment of their own from one body (top-level tables, say) does not renumber
        its keys on each delete. ``Null`` renders nothing: the text is an insert's."""
        cont, idx, prev, chain = anchor
        prev_blank = isinstance(prev, Whitespace)
        if tail and prev_blank and isinstance(tail[0][1], Whitespace):
            tail = tail[1:]
        if isinstance(prev, Comment) and all(isinstance(e[1], Whitespace) for e in tail):
            tail = []
        if tail:
            body = cont.body
            if linear:
                t = len(tail)
                if idx + t <= len(body) and all(isinstance(body[idx + k][1], Null) for k in range(t)):
                    body[idx:idx + t] = tail
                    _forget_skips(tdoc, body)  # steps remembered across the run cross the tail
                    return
                tail = tail + [(None, Null()) for _ in range(len(cont._map))]
            _forget_skips(tdoc, body)
            _body_insert(cont, idx, tail)
            return
        if not tidy or not prev_blank or idx == 0:
            return
        if chain is not None:
            if prev.as_string().strip():
                return
            after = _after_live(tdoc, chain)
            while after is not None:
                it = _item_at(*after[-1])
                if not ((isinstance(it, Table) and it.is_super_table()) or (isinstance(it, AoT) and not len(it))):
                    return  # something still follows: the blank line separates it
                after = _after_live(tdoc, after)
            cont.body[idx - 1] = (None, Null())
            return
        flat = _flatten(tdoc.doc)
        at = next((i for i, e in enumerate(flat) if e[0] is cont and e[1] == idx - 1), None)
        if at is None or not isinstance(flat[at][3], Whitespace) or flat[at][3].as_string().strip():
            return
        for _holder, _i, _k, it in flat[at + 1:]:
            if isinstance(it, Null) or (isinstance(it, Table) and it.is_super_table()) or (isinstance(it, AoT) and not len(it)):
                continue
            return  # something still follows: the blank line separates it
        cont.body[idx - 1] = (None, Null())

    # -- inline tables ----------------------------------------------------------------------

    @staticmethod
    def _style_of(node: Any) -> tuple[bool, str, str, AbstractSet[str]] | None:
        if not isinstance(node, InlineTable):
            return None
        s = node.as_string()
        n = sum(1 for k, v in node.value.body if k is not None and not isinstance(v, Null))
        sep = "," if n >= 2 and ", " not in s else ", "
        first = next((k for k, v in node.value.body if k is not None and not isinstance(v, Null)), None)
        kv = " = " if first is None else first.as_string()[len(first.as_string().rstrip()):] + first.sep
        return (s == "{}" or s.startswith("{ "), sep, kv, {k.key for k, _ in node.value.body if k is not None})

    def _restyle(self, tdoc: TomlDocument, path: KeyPath, steps: list[_Step], at: int, style: tuple[bool, str, str, AbstractSet[str]] | None) -> None:
        """Re-render the inline table ``steps[at]`` (whose keys changed) from its entries."""
        node = steps[at].node
        if not isinstance(node, InlineTable) or style is None or at == 0:
            return
        entries = []
        for k, v in node.value.body:
            if k is None or isinstance(v, Null):
                continue
            if isinstance(v, Table):  # a dotted key inside an inline table: leave it to tomlkit
                return
            entries.append((k.as_string(), k.sep if k.key in style[3] else style[2], v.as_string()))
        new = _parse_inline(_render_inline(entries, style[0], style[1]))
        holder, seg = steps[at - 1].node, path[at - 1]
        if isinstance(seg, Match):
            pos = tdoc.matches.find(holder, seg)
            if pos is None or holder[pos] is not node:  # its name was the key deleted
                pos = next(i for i, el in enumerate(holder) if el is node)
            holder[pos] = new
        else:
            holder[seg] = new
        steps[at] = _Step(new, steps[at].inline)


EDITOR = TomlEditor()
