"""YAML (Continue's ``config.yaml``) edited through ruamel.yaml's round-trip mode.

Edits happen on ruamel's round-trip tree (``typ="rt"``, ``preserve_quotes``, a width so
large that long strings never wrap, and the file's own indentation: mapping indent,
sequence indent and dash offset, e.g. Continue's ``models:\\n  - name: x\\n    provider:
openai`` is mapping 2, sequence 4, offset 2). ``Match`` segments pick list items (the
first mapping whose ``field`` equals the value).

What ruamel cannot promise, and what is done about it
------------------------------------------------------
ruamel re-emits the whole document, and its output is not always the input: it may
normalise spacing after ``:`` or inside flow collections, re-indent lines that did not
follow the detected indentation, drop an anchor nobody references, drop a ``---``
marker, and move a comment to the end of the entry it is attached to. So ``dump`` never
hands back ruamel's text as is:

* an unedited document dumps to exactly the text parsed;
* an edited one is the parsed text with only the lines of the edit replaced: the edit is
  the line diff between ruamel's dump of the tree before the first edit and its dump
  now (``formats/line_merge.py``), and each changed hunk is applied to the original text where ruamel's "before"
  lines match it. Every line outside the hunks keeps its bytes (comments, quoting,
  spacing, anchors, blank lines, CRLF, a missing final newline). Lines inside a hunk,
  and any neighbouring lines ruamel had re-formatted, come out in ruamel's formatting.
  The result is parsed again and must hold exactly the edited data; if it does not,
  ruamel's own dump is used instead (correct data, less faithful bytes).

Comments in ruamel belong to the entry before them. So that a comment introducing the
next section stays there: when an entry is appended after an entry whose trailing
comment block includes lines less indented than the new entry, those lines move below
the new entry; when an entry is deleted, the blank lines and comments after it that are
not indented deeper than it stay in place (they belong to what follows), and the
comments on its own lines and inside its value stay too, each on a line of its own at
its indentation (every comment is the user's: taosync writes none).

Errors carry 1-based line/column; duplicate keys are errors; the top level is a mapping
or a list of mappings (``llm``'s ``extra-openai-models.yaml``), addressed by a ``Match``
first segment; an empty or comment-only file is an empty mapping until a ``Match`` makes
it a list, written as ``- key: value`` at column 0. An aliased node is shared:
editing it through one path changes it everywhere it is used. A key inherited through a
merge key (``<<: *base``) can be read and overridden but not deleted.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.compat import ordereddict
from ruamel.yaml.error import CommentMark, MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)
from ruamel.yaml.tokens import CommentToken

from taosync.formats.base import MISSING, FormatEditor, FormatError, KeyPath, Match, NamedIndex, build_value, element_value, keypath_str, same_value, update_mapping, with_match_field
from taosync.formats.line_merge import merge, split_lines
from taosync.formats.yaml_writer import YAML11_BOOL as _YAML11_BOOL

__all__ = ["EDITOR", "YamlDocument", "YamlEditor"]

_KEY_ONLY = re.compile(r"^(?P<ind>[ \t]*)(?P<dash>(?:-[ \t]+)*)(?P<key>[^\s#:-][^#]*?|\"[^\"]*\"|'[^']*'):[ \t]*(?:#.*)?$")
_ITEM = re.compile(r"^(?P<ind> *)-(?P<gap> +)\S")


@dataclass
class YamlDocument:
    data: CommentedMap | CommentedSeq
    original: str
    yaml: YAML = field(repr=False)
    newline: str = "\n"
    #: (mapping, sequence, offset) indentation, as detected
    indent: tuple[int, int, int] = (2, 4, 2)
    #: the file had no mapping at all (empty, blank or comments only)
    bare: bool = False
    edited: bool = field(default=False, repr=False)
    #: ruamel's dump of the tree before the first edit
    before: str | None = field(default=None, repr=False)
    #: block collections an edit emptied (so written ``{}``/``[]``): block again once
    #: they get an entry back (the document holds them, so their ids stay theirs)
    emptied: dict[int, tuple[Any, Any]] = field(default_factory=dict, repr=False)
    #: where list elements are by name (so a Match does not walk the list)
    matches: NamedIndex = field(default_factory=lambda: NamedIndex(_match_value), repr=False)


def _make_yaml(mapping: int = 2, sequence: int = 4, offset: int = 2) -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 30
    y.allow_duplicate_keys = False
    y.indent(mapping=mapping, sequence=sequence, offset=offset)
    return y


def _top_list_indent(text: str, indent: tuple[int, int, int]) -> tuple[int, int, int]:
    """A top-level list's dashes stand at their own column (usually 0), whatever the
    nested lists do: the offset and sequence indent come from its first item."""
    for line in text.split("\n"):
        item = _ITEM.match(line.rstrip("\r"))
        if item:
            offset = len(item.group("ind"))
            return indent[0], offset + 1 + len(item.group("gap")), offset
        if line.strip() and not line.lstrip().startswith("#"):
            break
    return indent


def _detect_indent(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as the file uses them; Continue's style by default."""
    mapping = sequence = offset = None
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    for a, b in zip(lines, lines[1:]):
        m = _KEY_ONLY.match(a)
        if not m:
            continue
        col = len(m.group("ind")) + len(m.group("dash"))
        b_ind = len(b) - len(b.lstrip(" "))
        item = _ITEM.match(b)
        if item and b_ind >= col and sequence is None:
            offset = b_ind - col
            sequence = offset + 1 + len(item.group("gap"))
        elif not item and b_ind > col and mapping is None:
            mapping = b_ind - col
        if mapping is not None and sequence is not None:
            break
    mapping = mapping or 2
    if sequence is None:
        sequence, offset = mapping + 2, mapping
    if sequence < (offset or 0) + 2:
        sequence = (offset or 0) + 2
    return mapping, sequence, offset or 0


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, ScalarBoolean):
        return bool(x)
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, str):
        return str(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    return x


def _to_node(value: Any, old: Any = None) -> Any:
    """A plain value as a round-trip node; a string keeps ``old``'s quoting style."""
    if isinstance(value, dict):
        cm = CommentedMap()
        for k, v in value.items():
            cm[k] = _to_node(v)
        if isinstance(old, CommentedMap) and old.fa.flow_style():
            cm.fa.set_flow_style()
        return cm
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq(_to_node(v) for v in value)
        if isinstance(old, CommentedSeq) and old.fa.flow_style():
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, str) and not isinstance(value, (DoubleQuotedScalarString, SingleQuotedScalarString)):
        if isinstance(old, (DoubleQuotedScalarString, SingleQuotedScalarString)):
            return type(old)(value)
        if isinstance(old, LiteralScalarString) and "\n" in value:
            return LiteralScalarString(value)
        if _YAML11_BOOL.match(value):
            return SingleQuotedScalarString(value)
        return str(value)
    return value


def _keep_anchors(node: Any) -> None:
    """ruamel drops an anchor no alias uses; keep every anchor the file has."""
    anchor = getattr(node, "anchor", None)
    if anchor is not None and getattr(anchor, "value", None):
        anchor.always_dump = True
    if isinstance(node, dict):
        for v in node.values():
            _keep_anchors(v)
    elif isinstance(node, list):
        for v in node:
            _keep_anchors(v)


def _is_block(node: Any) -> bool:
    return isinstance(node, (CommentedMap, CommentedSeq)) and len(node) > 0 and not node.fa.flow_style()


def _match_value(element: Any, field: str) -> str | None:
    """What a Match on ``field`` compares with in ``element`` (through a merge key too)."""
    if not isinstance(element, dict):
        return None
    value = _plain(element.get(field))
    return value if isinstance(value, str) else None


def _own_keys(m: CommentedMap) -> list[Any]:
    ok = getattr(m, "_ok", None)
    return [k for k in m if ok is None or k in ok]


def _is_own(m: CommentedMap, key: Any) -> bool:
    """Whether ``key`` is ``m``'s own (as :func:`_own_keys` lists), not only merged in."""
    ok = getattr(m, "_ok", None)
    return ok is None or key in ok


# -- comment slots ---------------------------------------------------------------------
# A "slot" is where the comment after an entry lives: (ca.items, key, index); the index
# is 2 for a mapping entry, 0 for a sequence entry. For an entry whose value is a block
# collection, it is the slot of that collection's last entry, recursively.


def _entry_slot(container: Any, key: Any) -> tuple[dict, Any, int]:
    value = container[key]
    if _is_block(value):
        return _last_slot(value)
    return container.ca.items, key, 2 if isinstance(container, CommentedMap) else 0


def _last_slot(container: Any) -> tuple[dict, Any, int]:
    key = _own_keys(container)[-1] if isinstance(container, CommentedMap) else len(container) - 1
    return _entry_slot(container, key)


def _get_comment(slot: tuple[dict, Any, int]) -> str:
    items, key, idx = slot
    entry = items.get(key)
    tok = entry[idx] if entry and len(entry) > idx else None
    return tok.value if isinstance(tok, CommentToken) else ""


def _set_comment(slot: tuple[dict, Any, int], value: str) -> None:
    items, key, idx = slot
    entry = items.get(key)
    if value in ("", "\n"):
        if entry and len(entry) > idx:
            entry[idx] = None
        return
    if entry is None:
        entry = items[key] = [None, None, None, None]
    tok = entry[idx]
    if isinstance(tok, CommentToken):
        tok.value = value
    else:
        entry[idx] = CommentToken(value, CommentMark(0))


def _slot_token(slot: tuple[dict, Any, int]) -> CommentToken | None:
    items, key, idx = slot
    entry = items.get(key)
    tok = entry[idx] if entry and len(entry) > idx else None
    return tok if isinstance(tok, CommentToken) else None


_COMMENT = re.compile(r"#[^\n]*")


def _comments_in(container: Any, key: Any, but: CommentToken | None) -> list[str]:
    """The comments (``# …``, in order) attached to entry ``key`` of ``container`` and
    to everything in its value, but the token ``but`` (its slot's, split apart by the
    caller: its last lines may belong to what follows)."""
    seen = {id(but)}
    out: list[str] = []

    def take(attached: Any) -> None:
        if isinstance(attached, CommentToken):
            if id(attached) not in seen:
                seen.add(id(attached))
                out.extend(_COMMENT.findall(attached.value))
        elif isinstance(attached, list):
            for each in attached:
                take(each)

    def walk(value: Any) -> None:
        if isinstance(value, (CommentedMap, CommentedSeq)):
            take(value.ca.comment)
            keys = _own_keys(value) if isinstance(value, CommentedMap) else range(len(value))
            for k in keys:
                take(value.ca.items.get(k))
                walk(value[k])

    take(container.ca.items.get(key))
    walk(container[key])
    return out


def _split_comment(value: str) -> tuple[str, list[str]]:
    """A post-entry comment: (the end of the entry's own line, the following lines)."""
    nl = value.find("\n")
    if nl == -1:
        return value, []
    return value[: nl + 1], split_lines(value[nl + 1:])


def _trailing(lines: list[str], limit: int, inclusive: bool) -> int:
    """Start of the longest run at the end of ``lines`` made of blank lines and
    comments indented less than ``limit`` (or equal too, when ``inclusive``)."""
    i = len(lines)
    while i > 0:
        line = lines[i - 1]
        if line.strip():
            ind = len(line) - len(line.lstrip(" "))
            if ind > limit or (ind == limit and not inclusive):
                break
        i -= 1
    return i


def _col(node: Any) -> int | None:
    lc = getattr(node, "lc", None)
    return getattr(lc, "col", None) if lc is not None else None


def _take_comment_above(seq: CommentedSeq, holder: Any, key: Any) -> list | None:
    """Remove and return the comment lines above a list's first element: ruamel keeps
    them on the key holding the list (and the list's own record), or on the element."""
    above = None
    entry = holder.ca.items.get(key) if isinstance(holder, CommentedMap) else None
    if entry and len(entry) > 3 and entry[3]:
        above, entry[3] = entry[3], None
    if seq.ca.comment and len(seq.ca.comment) > 1 and seq.ca.comment[1]:
        above = above or seq.ca.comment[1]
        seq.ca.comment[1] = None
    entry = seq.ca.items.get(0)
    if entry and len(entry) > 1 and entry[1]:
        above = (above or []) + entry[1]
        entry[1] = None
    return above


class YamlEditor(FormatEditor):
    """Format-preserving YAML editor (see the module docstring)."""

    # -- parse / dump -------------------------------------------------------------------

    def parse(self, text: str) -> YamlDocument:
        nl = text.find("\n")
        newline = "\r\n" if nl > 0 and text[nl - 1] == "\r" else "\n"
        indent = _detect_indent(text)
        y = _make_yaml(*indent)
        try:
            data = y.load(text)
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
            if "duplicate key" in what:
                what = exc.problem or what
            else:  # in the user's words, at the line they got wrong (as for fleet.yaml)
                from taosync.formats.yaml_words import explain

                line, col, words = explain(text, exc)
                raise FormatError(f"invalid YAML: {words.removeprefix('YAML syntax error: ')}",
                                  line, col) from None
            raise FormatError(
                f"invalid YAML: {what or exc}",
                mark.line + 1 if mark else None,
                mark.column + 1 if mark else None,
            ) from None
        except YAMLError as exc:
            raise FormatError(f"invalid YAML: {exc}") from None
        if data is None:
            return YamlDocument(CommentedMap(), text, y, newline, indent, bare=True)
        if isinstance(data, CommentedSeq):
            for i, element in enumerate(data):
                if not isinstance(element, CommentedMap):  # at the element's dash
                    raise FormatError("the top level must be a mapping or a list of mappings",
                                      data.lc.item(i)[0] + 1, (data.lc.col or 0) + 1)
            indent = _top_list_indent(text, indent)
            y = _make_yaml(*indent)
        elif not isinstance(data, CommentedMap):
            lc = getattr(data, "lc", None)
            line, col = (lc.line + 1, lc.col + 1) if lc is not None and lc.line is not None else (1, 1)
            raise FormatError("the top level must be a mapping or a list of mappings", line, col)
        _keep_anchors(data)
        return YamlDocument(data, text, y, newline, indent)

    def _dump_tree(self, ydoc: YamlDocument) -> str:
        buf = io.StringIO()
        ydoc.yaml.dump(ydoc.data, buf)
        return buf.getvalue()

    def _touch(self, ydoc: YamlDocument) -> None:
        if ydoc.before is None and not ydoc.bare:
            ydoc.before = self._dump_tree(ydoc)
        ydoc.edited = True

    def dump(self, ydoc: YamlDocument) -> str:
        if not ydoc.edited:
            return ydoc.original
        after = self._dump_tree(ydoc)
        if ydoc.bare:
            if not ydoc.data:
                return ydoc.original
            head = ydoc.original if ydoc.original.strip() else ""
            if head and not head.endswith("\n"):
                head += ydoc.newline
            return head + after.replace("\n", ydoc.newline)
        merged = merge(ydoc.original, ydoc.before or "", after, ydoc.newline)
        if merged is not None and self._holds(ydoc, merged):
            return merged
        if not self._holds(ydoc, after):  # pragma: no cover - a ruamel failure
            raise FormatError("internal error: the edited YAML does not read back as edited")
        return after.replace("\n", ydoc.newline)

    def _holds(self, ydoc: YamlDocument, text: str) -> bool:
        try:
            again = _make_yaml().load(text)
        except YAMLError:
            return False
        return same_value(_plain(again), _plain(ydoc.data))

    # -- walking --------------------------------------------------------------------------

    def _child(self, ydoc: YamlDocument, node: Any, seg: Any, where: KeyPath) -> Any:
        if isinstance(seg, Match):
            if not isinstance(node, CommentedSeq):
                raise self._not(node, where, "a list")
            at = ydoc.matches.find(node, seg)
            return MISSING if at is None else node[at]
        if not isinstance(node, dict):
            raise self._not(node, where, "a mapping")
        return node[seg] if seg in node else MISSING

    @staticmethod
    def _not(node: Any, where: KeyPath, what: str) -> FormatError:
        return FormatError(f"{keypath_str(where) or 'the top level'} is not {what}")

    @staticmethod
    def _columns(ydoc: YamlDocument, nodes: list[Any]) -> list[int]:
        """The column of each node on a walk (a mapping's keys, a sequence's dashes):
        ruamel's own record for parsed nodes, derived from the indentation for new ones."""
        mapping, sequence, offset = ydoc.indent
        cols: list[int] = []
        for i, node in enumerate(nodes):
            col = _col(node)
            if col is None:
                if i == 0:
                    col = 0
                elif isinstance(nodes[i - 1], CommentedSeq):
                    col = cols[-1] + sequence - offset
                else:
                    col = cols[-1] + (offset if isinstance(node, CommentedSeq) else mapping)
            cols.append(col)
        return cols

    def _walk(self, ydoc: YamlDocument, path: KeyPath) -> list[Any]:
        nodes = [ydoc.data]
        for i, seg in enumerate(path):
            child = self._child(ydoc, nodes[-1], seg, path[:i])
            if child is MISSING:
                break
            nodes.append(child)
        return nodes

    # -- the protocol ---------------------------------------------------------------------

    def get(self, ydoc: YamlDocument, path: KeyPath) -> Any:
        path = tuple(path)
        try:
            nodes = self._walk(ydoc, path)
        except FormatError:
            return MISSING
        if len(nodes) != len(path) + 1:
            return MISSING
        return _plain(nodes[-1])

    def has(self, ydoc: YamlDocument, path: KeyPath) -> bool:
        path = tuple(path)
        try:
            return len(self._walk(ydoc, path)) == len(path) + 1
        except FormatError:
            return False

    def set(self, ydoc: YamlDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        path = tuple(path)
        if not path:
            raise ValueError("cannot set the whole document")
        value = with_match_field(path, value)
        try:
            return self._set(ydoc, path, value)
        finally:
            ydoc.matches.edited(path)

    def _set(self, ydoc: YamlDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        if ydoc.bare and not len(ydoc.data) and isinstance(path[0], Match):
            # an empty file whose first edit names a list element: a top-level list
            ydoc.indent = (ydoc.indent[0], 2, 0)
            ydoc.yaml = _make_yaml(*ydoc.indent)
            ydoc.data = CommentedSeq()
        nodes = self._walk(ydoc, path)
        if len(nodes) == len(path) + 1:
            self._replace(ydoc, path, nodes, value)
            return []
        i = len(nodes) - 1
        node, seg, rest = nodes[-1], path[i], path[i + 1:]
        if isinstance(seg, Match):
            if not isinstance(node, CommentedSeq):
                raise self._not(node, path[:i], "a list")
            new = _to_node(element_value(seg, rest, value))
            self._touch(ydoc)
            self._append(ydoc, node, None, new, self._columns(ydoc, nodes)[-1])
            ydoc.matches.appended(node)
        else:
            if not isinstance(node, CommentedMap):
                raise self._not(node, path[:i], "a mapping")
            self._touch(ydoc)
            self._append(ydoc, node, seg, _to_node(build_value(rest, value)), self._columns(ydoc, nodes)[-1])
        return [path[:j] for j in range(i + 1, len(path))]

    def delete(self, ydoc: YamlDocument, path: KeyPath) -> bool:
        path = tuple(path)
        if not path:
            raise ValueError("cannot delete the whole document")
        try:
            nodes = self._walk(ydoc, path)
        except FormatError:
            return False
        if len(nodes) != len(path) + 1:
            return False
        parent, seg = nodes[-2], path[-1]
        key: int | str | None
        if isinstance(seg, Match):
            key = ydoc.matches.find(parent, seg)
        else:
            if not _is_own(parent, seg):
                return False  # inherited through a merge key: nothing of its own to delete
            key = seg
        self._touch(ydoc)
        leftover = self._remove(parent, key, self._columns(ydoc, nodes[:-1])[-1])
        if isinstance(seg, Match):
            ydoc.matches.removed(parent, key, nodes[-1])  # type: ignore[arg-type]
        else:
            ydoc.matches.edited(path)
        if not len(parent) and len(nodes) >= 3:
            self._emptied(ydoc, nodes[-3], path[-2], parent, leftover)
        elif leftover.strip():  # the document itself emptied: its comments stand above
            above = parent.ca.comment[1] if parent.ca.comment and len(parent.ca.comment) > 1 \
                else None
            parent.ca.comment = [None, [*(above or []), CommentToken(leftover, CommentMark(0))]]
        return True

    @staticmethod
    def _emptied(ydoc: YamlDocument, holder: Any, seg: Any, container: Any, leftover: str = "") -> None:
        """A collection just lost its last entry (or is being replaced by a value of
        another shape): the comments that stood before its first entry go after its
        key's line (ruamel would otherwise emit them before a ``{}``, which does not
        parse)."""
        pre = container.ca.comment[1] if container.ca.comment and len(container.ca.comment) > 1 else None
        container.ca.comment = None
        if isinstance(seg, Match):
            key = next((i for i, el in enumerate(holder) if el is container), None)
        else:
            key = seg
        if not len(container) and not container.fa.flow_style():
            container.fa.set_flow_style()  # written {} / [] right after the key
            ydoc.emptied[id(container)] = (holder, key)
        entry = holder.ca.items.get(key) if key is not None else None
        if entry and len(entry) > 3:
            entry[3] = None
        text = "".join(t.value for t in pre or [] if isinstance(t, CommentToken))
        text = (text if text.strip() else "") + leftover
        if text and key is not None:
            slot = (holder.ca.items, key, 2 if isinstance(holder, CommentedMap) else 0)
            own, rest = _split_comment(_get_comment(slot))
            _set_comment(slot, (own or "\n") + "".join(rest) + text)

    def lead(self, ydoc: YamlDocument, paths: list[KeyPath]) -> list[tuple[KeyPath, list, list]]:
        """Move the list elements ``paths`` name (each a list's path + a Match) ahead of
        every other element of their list, in the order given; the others keep their
        order, and a comment above the list's first element stays above it. For a
        client that takes the first element with a role (Continue's ``models``). Returns,
        per list reordered: (its path, its elements' names before, after)."""
        lists: dict[KeyPath, list[Match]] = {}
        for path in paths:
            seg = path[-1]
            if not isinstance(seg, Match):
                raise ValueError(f"{keypath_str(path)}: not a list element to lead with")
            lists.setdefault(tuple(path[:-1]), []).append(seg)
        moved = []
        for list_path, segs in lists.items():
            try:
                nodes = self._walk(ydoc, list_path)
            except FormatError:
                continue
            seq = nodes[-1]
            if len(nodes) != len(list_path) + 1 or not isinstance(seq, CommentedSeq):
                continue
            wanted: list[Any] = []
            for seg in segs:
                at = ydoc.matches.find(seq, seg)
                if at is not None and not any(seq[at] is w for w in wanted):
                    wanted.append(seq[at])
            if all(seq[i] is w for i, w in enumerate(wanted)):
                continue
            name = segs[0].field
            before = [_match_value(el, name) for el in seq]
            self._touch(ydoc)
            col = self._columns(ydoc, nodes)[-1]
            first, above = seq[0], _take_comment_above(seq, nodes[-2], list_path[-1])
            for element in reversed(wanted):
                at = next(i for i, el in enumerate(seq) if el is element)
                # the lines after it that belong to what follows stay there (_remove)
                slot = _entry_slot(seq, at) if _is_block(element) else None
                own, rest = _split_comment(_get_comment(slot)) if slot else ("", [])
                self._remove(seq, at, col)
                if slot:
                    _set_comment(slot, own + "".join(rest[:_trailing(rest, col, True)]))
                seq.insert(0, element)
                entry = seq.ca.items.get(0)
                if entry and len(entry) > 1 and entry[1]:
                    entry[1] = None  # a comment _remove placed: it stays with what followed
            if above:  # the comment above the first element stays above it
                at = next(i for i, el in enumerate(seq) if el is first)
                entry = seq.ca.items.setdefault(at, [None, None, None, None])
                entry[1] = above
            ydoc.matches.forget()
            moved.append((list_path, before, [_match_value(el, name) for el in seq]))
        return moved

    # -- edits ----------------------------------------------------------------------------

    def _replace(self, ydoc: YamlDocument, path: KeyPath, nodes: list[Any], value: Any) -> None:
        old = nodes[-1]
        if same_value(_plain(old), value):
            return
        if isinstance(value, dict) and isinstance(old, CommentedMap):
            update_mapping(self, ydoc, path, _own_keys(old), value)
            return
        parent, seg = nodes[-2], path[-1]
        if isinstance(seg, Match):
            raise FormatError(f"{keypath_str(path)} must be a mapping")
        self._touch(ydoc)
        new = _to_node(value, old)
        if isinstance(old, (CommentedMap, CommentedSeq)) and old.ca.comment:
            if type(old) is type(new) and _is_block(old) and _is_block(new):
                new.ca.comment = old.ca.comment  # the comments above its first entry
            else:
                self._emptied(ydoc, parent, seg, old)
        if _is_block(old) and not _is_block(new):
            # the lines after the old block's last line now follow this entry's line
            _own, rest = _split_comment(_get_comment(_entry_slot(parent, seg)))
            parent[seg] = new
            if rest:
                _set_comment(_entry_slot(parent, seg), "\n" + "".join(rest))
        elif not _is_block(old) and _is_block(new):
            tail = _get_comment(_entry_slot(parent, seg))
            _set_comment(_entry_slot(parent, seg), "")
            parent[seg] = new
            _set_comment(_entry_slot(parent, seg), tail)
        else:
            parent[seg] = new

    def _append(self, ydoc: YamlDocument, container: Any, key: Any, new: Any, col: int) -> None:
        """Append ``new`` (under ``key`` for a mapping) after the container's last entry
        (the container's entries are at column ``col``), moving the comments that
        introduce what follows below it."""
        moved = revived = ""
        if not len(container) and id(container) in ydoc.emptied:
            container.fa.set_block_style()  # it was a block collection before it emptied
            holder, hkey = ydoc.emptied.pop(id(container))
            if hkey is not None:  # the lines after "key: {}" go after the new entry
                slot = (holder.ca.items, hkey, 2 if isinstance(holder, CommentedMap) else 0)
                revived = _get_comment(slot)
                _set_comment(slot, "")
        if _is_block(container):
            slot = _last_slot(container)
            own, rest = _split_comment(_get_comment(slot))
            cut = _trailing(rest, col, inclusive=False)
            if cut < len(rest):
                moved = "".join(rest[cut:])
                _set_comment(slot, own + "".join(rest[:cut]) if own or rest[:cut] else "")
        if isinstance(container, CommentedMap):
            container[key] = new
            key_new = key
        else:
            container.append(new)
            key_new = len(container) - 1
        if revived and not _get_comment(_entry_slot(container, key_new)):
            _set_comment(_entry_slot(container, key_new), revived)
        elif moved:
            slot = _entry_slot(container, key_new)
            own, rest = _split_comment(_get_comment(slot))
            _set_comment(slot, (own or "\n") + "".join(rest) + moved)

    def _remove(self, container: Any, key: Any, col: int) -> str:
        """Delete an entry, keeping the blank lines and comments after it that are not
        indented deeper than it (they belong to what follows). Returns what could not be
        placed because the container is now empty."""
        kept = ""
        if _is_block(container):
            slot = _entry_slot(container, key)
            own, rest = _split_comment(_get_comment(slot))
            cut = _trailing(rest, col, inclusive=True)
            kept = "".join(rest[cut:])
            # the user's comments in what goes (taosync writes none) stay where it was
            gone = _comments_in(container, key, _slot_token(slot)) + \
                _COMMENT.findall(own + "".join(rest[:cut]))
            kept = "".join(" " * col + c + "\n" for c in gone) + kept
        prev = MISSING  # the entry before it, looked up only for comments to hand on (a walk)
        if kept and isinstance(container, CommentedMap):
            keys = _own_keys(container)
            pos = keys.index(key)
            prev = keys[pos - 1] if pos > 0 else MISSING
        elif kept and key > 0:
            prev = key - 1
        if isinstance(container, CommentedMap):
            container.ca.items.pop(key, None)
        del container[key]  # (a sequence shifts its own comments)
        if isinstance(container, CommentedMap):
            for merged in getattr(container, "merge", None) or []:
                source = merged[1] if isinstance(merged, tuple) else merged
                if isinstance(source, dict) and key in source:
                    # an override removed: the merged-in value shows through again
                    ordereddict.__setitem__(container, key, source[key])
                    break
        if not kept:
            return ""
        if prev is not MISSING:
            slot = _entry_slot(container, prev)
            own, rest = _split_comment(_get_comment(slot))
            _set_comment(slot, (own or "\n") + "".join(rest) + kept)
        elif remaining := (_own_keys(container) if isinstance(container, CommentedMap) else list(range(len(container)))):
            # the first entry went: what followed it now stands before the new first one
            entry = container.ca.items.setdefault(remaining[0], [None, None, None, None])
            before = entry[1] or []
            text = kept if before else kept.lstrip("\n")
            if text:
                entry[1] = [CommentToken(text, CommentMark(0)), *before]
        else:
            return kept
        return ""


EDITOR = YamlEditor()
