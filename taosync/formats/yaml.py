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
its indentation (every comment is the user's: taosync writes none). ruamel writes a flow
collection on one line, without the comments the file has inside it (it drops a flow
mapping's as it reads it): when an edit in it, or next to it, makes ruamel write it
anew, they go below it, each on a line of its own at its entry's indentation.

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
from bisect import bisect_right
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
    #: how many times each anchored node is used (its anchor, aliases, merge keys)
    uses: dict[int, int] = field(default_factory=dict, repr=False)
    #: the file's flow collections with comments in them (ruamel writes a flow collection
    #: on one line, without them): (node, holder, key, column of the holder's entries,
    #: [(line, comment)]), listed before the first edit
    flows: list[tuple] = field(default_factory=list, repr=False)
    _line_starts: list[int] | None = field(default=None, repr=False)

    def flow_text_comments(self, node: Any) -> list[tuple[int, str]] | None:
        """The comments, with their 0-based line, that the parsed text has inside flow
        collection ``node`` (ruamel keeps a flow sequence's, drops a flow mapping's);
        None for a node the file did not write."""
        line, col = getattr(node.lc, "line", None), getattr(node.lc, "col", None)
        if line is None or col is None or id(node) in self.emptied:  # emptied: was block
            return None
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.original)]
        if line >= len(self._line_starts):
            return None
        found = _flow_text_comments(self.original, self._line_starts[line] + col)
        return None if found is None else [(bisect_right(self._line_starts, at) - 1, text) for at, text in found]

    def flow_comments(self, node: Any) -> list[str] | None:
        """:meth:`flow_text_comments` without the lines."""
        found = self.flow_text_comments(node)
        return None if found is None else [text for _line, text in found]


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


def _slot(container: Any, key: Any) -> tuple[dict, Any, int]:
    """The comment slot of entry ``key`` itself (after its line, or its scalar value)."""
    return container.ca.items, key, 2 if isinstance(container, CommentedMap) else 0


def _entry_slot(container: Any, key: Any, uses: dict[int, int] | None = None) -> tuple[dict, Any, int]:
    """The slot of the comment after entry ``key``; not in a value used elsewhere too
    (``uses``: an alias's lines are not those after its anchored node's last line)."""
    value = container[key]
    if _is_block(value) and (uses or {}).get(id(value), 0) < 2:
        return _last_slot(value, uses)
    return _slot(container, key)


def _last_slot(container: Any, uses: dict[int, int] | None = None) -> tuple[dict, Any, int]:
    key = _own_keys(container)[-1] if isinstance(container, CommentedMap) else len(container) - 1
    return _entry_slot(container, key, uses)


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


#: a comment's text, without its line end (a CRLF file's comment tokens keep the ``\r``)
_COMMENT = re.compile(r"#[^\r\n]*")


def _token_lines(tokens: list | None) -> str:
    """Comment tokens as the lines they were (a parsed one's indentation is its column)."""
    return "".join((" " * (tok.column or 0) if tok.value.startswith("#") else "") + tok.value
                   for tok in tokens or [] if isinstance(tok, CommentToken))


def _append_lines(slot: tuple[dict, Any, int], text: str) -> None:
    """Append whole lines ``text`` to the lines after the entry of ``slot``."""
    if text:
        own, rest = _split_comment(_get_comment(slot))
        _set_comment(slot, (own or "\n") + "".join(rest) + text)


def _merge_sources(node: Any) -> Any:
    """The mappings ``node`` merges in (``<<: *base``), as ruamel keeps them."""
    for merged in getattr(node, "merge", None) or []:
        yield merged[1] if isinstance(merged, tuple) else merged


def _anchored(node: Any) -> bool:
    anchor = getattr(node, "anchor", None)
    return bool(getattr(anchor, "value", None))


def _settle_comments(node: Any, uses: dict[int, int], aliased: set[tuple[int, Any]]) -> None:
    """Put the lines ruamel parks in a block collection's ``ca.end`` (those after its last
    entry when that ends in a flow collection: ``roles: [chat]``) into that entry's slot,
    where it keeps them after a scalar: a delete, an append or ``lead`` finds them there
    (a section comment after such a list went with the list). Children first: their lines
    come before their parent's. Counts in ``uses`` where each anchored node is used (its
    anchor, its aliases, merge keys naming it), and notes in ``aliased`` the (container
    id, key) of each alias: the lines after one stay where ruamel put them (its slot
    would be in the anchored node, written elsewhere)."""
    if not isinstance(node, (CommentedMap, CommentedSeq)):
        return
    if _anchored(node):
        uses[id(node)] = uses.get(id(node), 0) + 1
        if uses[id(node)] > 1:
            return  # an alias: the anchored node is settled where it was first met
    for source in _merge_sources(node):
        if _anchored(source):
            uses[id(source)] = uses.get(id(source), 0) + 1
    keys = _own_keys(node) if isinstance(node, CommentedMap) else list(range(len(node)))
    for k in keys:
        if id(node[k]) in uses:  # met before: an alias
            aliased.add((id(node), k))
        _settle_comments(node[k], uses, aliased)
    if not node.ca.end or not _is_block(node):
        return
    container, key = node, keys[-1]  # the entry the lines follow (as _last_slot finds it)
    while (id(container), key) not in aliased:
        value = container[key]
        if not _is_block(value):
            _append_lines(_slot(container, key), _token_lines(node.ca.end))
            node.ca.end.clear()  # in place: each dump of ruamel's appends this list to ca.comment
            return
        container, key = value, _own_keys(value)[-1] if isinstance(value, CommentedMap) else len(value) - 1


def _outer_flows(node: Any, seen: set[int]) -> Any:
    """(holder, key, collection) for each flow collection in a block one, once each."""
    if not isinstance(node, (CommentedMap, CommentedSeq)) or node.fa.flow_style() or id(node) in seen:
        return
    seen.add(id(node))
    for k in _own_keys(node) if isinstance(node, CommentedMap) else range(len(node)):
        value = node[k]
        if isinstance(value, (CommentedMap, CommentedSeq)) and value.fa.flow_style():
            if id(value) not in seen:
                seen.add(id(value))
                yield node, k, value
        else:
            yield from _outer_flows(value, seen)


def _drop_uses(value: Any, uses: dict[int, int]) -> None:
    """``value`` leaves the document: one use less of each anchored node in it (those
    still used elsewhere are not looked into: what they hold stays too)."""
    if not isinstance(value, (CommentedMap, CommentedSeq)):
        return
    if id(value) in uses:
        uses[id(value)] -= 1
        if uses[id(value)] > 0:
            return
    for source in _merge_sources(value):
        if id(source) in uses:
            uses[id(source)] -= 1
    for k in _own_keys(value) if isinstance(value, CommentedMap) else range(len(value)):
        _drop_uses(value[k], uses)


def _comments_in(container: Any, key: Any, but: list,
                 in_flow: Any = lambda node: None, uses: dict[int, int] | None = None) -> list[str]:
    """The comments (``# …``, in order) attached to entry ``key`` of ``container`` and
    to everything in its value, but the tokens ``but`` (its slot's, split apart by the
    caller: its last lines may belong to what follows). A flow collection's come from
    ``in_flow`` (the file's text: ruamel drops a flow mapping's) unless that gives None.
    An anchored node used elsewhere too (``uses``) keeps its own: ruamel writes them
    where it is written (at its anchor, or at an alias if the anchor goes)."""
    seen = {id(tok) for tok in but}
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
        if not isinstance(value, (CommentedMap, CommentedSeq)) or (uses or {}).get(id(value), 0) > 1:
            return
        if value.fa.flow_style():
            found = in_flow(value)
            if found is not None:
                out.extend(found)
                return
        take(value.ca.comment)
        keys = _own_keys(value) if isinstance(value, CommentedMap) else range(len(value))
        for k in keys:
            take(value.ca.items.get(k))
            walk(value[k])

    take(container.ca.items.get(key))
    walk(container[key])
    return out


#: up to a flow collection's bracket: its anchor, its tag
_TO_BRACKET = re.compile(r"(?:[ \t]*[&!][^\s\[\]{},]*)*[ \t]*(?=[\[{])")
#: in flow context: a bracket, a comment (after a space), a quoted string, a lone quote
_FLOW_TOKEN = re.compile(r"""[\[\]{}]|(?<=\s)#[^\r\n]*|'(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|['"]""", re.S)


def _opens_scalar(text: str, at: int) -> bool:
    """Whether a quote at ``at`` (in flow context) starts a quoted scalar, not one inside
    a plain scalar (``[don't]``): it follows a flow indicator, a line break, a tag or an
    anchor."""
    j = at - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    if j < 0 or text[j] in "[{,:?\r\n":
        return True
    k = j
    while k >= 0 and text[k] not in " \t\r\n[{,":
        k -= 1
    return k < j and text[k + 1] in "!&" and j < at - 1


def _in_spans(spans: list[tuple[int, int]], line: int) -> bool:
    """Whether ``line`` is in one of the ordered, disjoint ranges ``spans``."""
    i = bisect_right(spans, (line, float("inf"))) - 1
    return i >= 0 and spans[i][0] <= line < spans[i][1]


def _flow_text_comments(text: str, at: int) -> list[tuple[int, str]] | None:
    """The comments inside the flow collection written at ``at`` in ``text`` (past its
    anchor or tag), in order, each with its offset; None when no flow collection starts
    there."""
    m = _TO_BRACKET.match(text, at)
    if m is None:
        return None
    depth = 0
    out: list[tuple[int, str]] = []
    pos = m.end()
    while tok := _FLOW_TOKEN.search(text, pos):
        t, pos = tok.group(), tok.end()
        if t in "[{":
            depth += 1
        elif t in "]}":
            depth -= 1
            if not depth:
                return out
        elif t[0] == "#":
            out.append((tok.start(), t))
        elif not _opens_scalar(text, tok.start()):
            pos = tok.start() + 1  # a quote in a plain scalar: text
    return None


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
    """The column ruamel recorded for a node; for a block mapping, its first key's (the
    mapping's own is that of its anchor or tag when it has one: ``a: &x``)."""
    lc = getattr(node, "lc", None)
    if lc is None:
        return None
    if isinstance(node, CommentedMap) and len(node) and not node.fa.flow_style():
        pos = (lc.data or {}).get(next(iter(node)))
        if pos:
            return pos[1]
    return getattr(lc, "col", None)


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
        """ruamel's dump, its lines ending in ``\n`` only: a comment token of a CRLF file
        keeps its ``\r``, which would come out as ``\r\r\n`` (ruamel writes any ``\r`` of
        a value escaped, so only comments have one)."""
        buf = io.StringIO()
        ydoc.yaml.dump(ydoc.data, buf)
        return buf.getvalue().replace("\r\n", "\n")

    def _touch(self, ydoc: YamlDocument) -> None:
        if ydoc.before is None and not ydoc.bare:
            _settle_comments(ydoc.data, ydoc.uses, set())
            for holder, key, node in _outer_flows(ydoc.data, set()):
                if found := ydoc.flow_text_comments(node):
                    ydoc.flows.append((node, holder, key, _col(holder) or 0, found))
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
        replaced: list[tuple[int, int]] = []
        merged = merge(ydoc.original, ydoc.before or "", after, ydoc.newline, replaced)
        if merged is not None and self._holds(ydoc, merged):
            return self._flow_comments_kept(ydoc, merged, replaced)
        lost = self._flow_comments_lost(ydoc, None)  # ruamel's text has none of them
        if lost:
            again = self._dump_with_flow_comments(ydoc, lost)
            if self._holds(ydoc, again):
                after = again
        if not self._holds(ydoc, after):  # pragma: no cover - a ruamel failure
            raise FormatError("internal error: the edited YAML does not read back as edited")
        return after.replace("\n", ydoc.newline)

    def _flow_comments_kept(self, ydoc: YamlDocument, merged: str, replaced: list[tuple[int, int]]) -> str:
        """``merged``, or, if it replaced lines of a flow collection that had comments
        (an edit in it, or next to it, made ruamel write it anew: on one line, without
        them), the merge again with those comments below the collection, each on a line
        of its own at its entry's indentation; kept only if none of those lines of the
        file is left in it (a comment twice is worse than one moved)."""
        lost = self._flow_comments_lost(ydoc, replaced)
        # ruamel writes a flow list's comments itself: only what it left out goes back
        missing = {text: ydoc.original.count(text) - merged.count(text)
                   for *_where, found in lost for _line, text in found}
        kept_lost = []
        for holder, key, col, found in lost:
            found = [(line, text) for line, text in found if missing[text] > 0]
            for _line, text in found:
                missing[text] -= 1
            if found:
                kept_lost.append((holder, key, col, found))
        lost = kept_lost
        if not lost:
            return merged
        after = self._dump_with_flow_comments(ydoc, lost)
        again_replaced: list[tuple[int, int]] = []
        again = merge(ydoc.original, ydoc.before or "", after, ydoc.newline, again_replaced)
        lines = [line for *_where, found in lost for line, _text in found]
        if again is not None and all(_in_spans(again_replaced, line) for line in lines) \
                and self._holds(ydoc, again):
            return again
        return merged

    @staticmethod
    def _flow_comments_lost(ydoc: YamlDocument, replaced: list[tuple[int, int]] | None) -> list[tuple]:
        """(holder, key, column, [(line, comment)]) for each flow collection still in
        place whose comments are on lines of the file ``replaced`` (all when None)."""
        lost = []
        where: dict[int, dict[int, int]] = {}  # a list's elements' positions, by id
        for node, holder, seg, col, found in ydoc.flows:
            if isinstance(holder, CommentedMap):
                key = seg if seg in holder and holder[seg] is node else None
            else:
                if id(holder) not in where:
                    where[id(holder)] = {id(el): i for i, el in enumerate(holder)}
                key = where[id(holder)].get(id(node))
            gone = [(line, text) for line, text in found if replaced is None or _in_spans(replaced, line)]
            if key is not None and gone:  # (not in place: deleted, its comments were kept)
                lost.append((holder, key, col, gone))
        return lost

    def _dump_with_flow_comments(self, ydoc: YamlDocument, lost: list[tuple]) -> str:
        """ruamel's dump with each lost comment below its flow collection's line; the
        slots are put back after (an edit undone leaves the file's lines, so they are
        put for one dump only)."""
        undo = []
        for holder, key, col, gone in lost:
            slot = _slot(holder, key)
            old = _get_comment(slot)
            own, rest = _split_comment(old)
            lines = "".join(" " * col + text + "\n" for _line, text in gone)
            _set_comment(slot, (own or "\n") + lines + "".join(rest))
            undo.append((slot, old))
        try:
            return self._dump_tree(ydoc)
        finally:
            for slot, old in reversed(undo):
                _set_comment(slot, old)

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
        # a list element's first key: ruamel garbles a comment between its dash and its
        # next key (and reads one there as the element's), so it goes above the dash
        element = len(nodes) >= 3 and isinstance(nodes[-3], CommentedSeq) and isinstance(parent, CommentedMap)
        leftover = self._remove(ydoc, parent, key, self._columns(ydoc, nodes[:-1])[-1], above_first=not element)
        if isinstance(seg, Match):
            ydoc.matches.removed(parent, key, nodes[-1])  # type: ignore[arg-type]
        else:
            ydoc.matches.edited(path)
        if not len(parent) and len(nodes) >= 3:
            self._emptied(ydoc, nodes[-3], path[-2], parent, leftover)
        elif element and leftover:
            seq = nodes[-3]
            at = next(i for i, el in enumerate(seq) if el is parent)
            entry = seq.ca.items.setdefault(at, [None, None, None, None])
            entry[1] = [*(entry[1] or []), CommentToken(leftover, CommentMark(0))]
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
            _append_lines(_slot(holder, key), text)

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
                self._remove(ydoc, seq, at, col, moving=True)
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
        _drop_uses(old, ydoc.uses)
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
            # (after what the entry's own slot has: its end-of-line comment…)
            _append_lines(_entry_slot(parent, seg), "".join(rest))
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
                slot = _slot(holder, hkey)
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
            _append_lines(_entry_slot(container, key_new), moved)

    def _remove(self, ydoc: YamlDocument, container: Any, key: Any, col: int, moving: bool = False,
                above_first: bool = True) -> str:
        """Delete an entry, keeping the blank lines and comments after it that are not
        indented deeper than it (they belong to what follows), and, unless it is
        ``moving`` elsewhere with them, the comments on its lines and in its value. Returns
        what could not be placed because the container is now empty (or, if not
        ``above_first``, because the entry was the first)."""
        kept = ""
        if _is_block(container):
            slot = _entry_slot(container, key, ydoc.uses)
            own, rest = _split_comment(_get_comment(slot))
            cut = _trailing(rest, col, inclusive=True)
            kept = "".join(rest[cut:])
            # the lines above it that ruamel keeps on it (after a flow value) stay as they are
            entry = container.ca.items.get(key)
            above = entry[1] if entry and len(entry) > 1 and isinstance(entry[1], list) else []
            if not moving:  # the user's comments in what goes (taosync writes none) stay
                gone = _comments_in(container, key, [_slot_token(slot), *above], ydoc.flow_comments, ydoc.uses) + \
                    _COMMENT.findall(own + "".join(rest[:cut]))
                kept = "".join(" " * col + c + "\n" for c in gone) + kept
            kept = _token_lines(above) + kept
        if not moving:
            _drop_uses(container[key], ydoc.uses)
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
            for source in _merge_sources(container):
                if isinstance(source, dict) and key in source:
                    # an override removed: the merged-in value shows through again
                    ordereddict.__setitem__(container, key, source[key])
                    break
        if not kept:
            return ""
        if prev is not MISSING:
            _append_lines(_entry_slot(container, prev), kept)
        elif above_first and (remaining := (_own_keys(container) if isinstance(container, CommentedMap) else list(range(len(container))))):
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
