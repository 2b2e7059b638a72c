"""JSONC (JSON with ``//`` and ``/* */`` comments and trailing commas), edited as text.

opencode and Kilo read their config with a JSONC parser, so a user's comments there are
legitimate and must survive an edit. This reuses the strict JSON editor
(:mod:`taosync.formats.json_`) on a *shadow* of the text: the same text with every
comment and trailing comma blanked to spaces (newlines kept), so every offset is the same
in both. The JSON editor walks and splices the shadow; each splice is mirrored into the
real text (``JsoncDocument._spliced``), and ``dump`` hands back the real text, comments
and trailing commas included. Inserted text never holds a comment, so the two stay
aligned.

A comment after an object's last member (``"theme": "x", // mine``) belongs to that
member: a member added after it goes on the next line, the comment staying where it was
(the comma it follows is a separator again), and removing that member again leaves the
comment and its comma as they were (Zed's settings.json is full of such comments).

Every comment is the user's (taosync writes none), so none is lost with what taosync
takes out or writes anew: a member or element removed leaves the comments that were in
its text where it was, each on a line of its own; a value rewritten whole puts its
comments above its member; an empty container's comments open its body when a member
comes in. The shadow holds them as spaces (``_splice_raw``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from taosync.formats.base import FormatError, KeyPath, same_value
from taosync.formats.json_ import (_INDENT, JsonDocument, JsonEditor, _items, _line_col, _Node,
                                   _splice)

__all__ = ["EDITOR", "JsoncDocument", "JsoncEditor", "blank"]

_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|/\*', re.S)
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=[ \t\r\n]*[}\]])', re.S)
#: what may follow a member on its line for its comment to stay there: its comma, a comment
_COMMENTED = re.compile(r"[ \t]*(,)[ \t]*(?://[^\r\n]*|/\*[^\r\n]*?\*/)[ \t]*")
#: a last member's trailing comma, wherever it is before the container closes
_TRAILING_COMMA = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)*,", re.S)


def _spaces(text: str) -> str:
    """``text`` with every character but line breaks turned into a space."""
    return re.sub(r"[^\r\n]", " ", text)


def blank(text: str) -> str:
    """The shadow of a JSONC text: comments and trailing commas become spaces, so the
    result is strict JSON at the same offsets. FormatError for an unclosed comment."""
    def comment(m: re.Match) -> str:
        token = m.group(0)
        if token.startswith('"'):
            return token
        if token == "/*":
            line, col = _line_col(text, m.start())
            raise FormatError("invalid JSONC: a /* comment is never closed", line, col)
        return _spaces(token)

    shadow = _COMMENT_OR_STRING.sub(comment, text)
    return _TRAILING_COMMA_OR_STRING.sub(
        lambda m: m.group(0) if m.group(0).startswith('"') else " ", shadow)


@dataclass
class JsoncDocument(JsonDocument):
    """``text`` is the shadow the JSON editor works on; ``raw`` the file's real text."""

    raw: str = ""

    def _spliced(self, a: int, b: int, new: str) -> None:
        self.raw = self.raw[:a] + new + self.raw[b:]


def _commented(doc: JsoncDocument, end: int) -> tuple[int, int] | None:
    """(its comma's offset, its line's end) when the member ending at ``end`` is followed
    on its line by its comma and a comment, and by nothing else; else None."""
    e = doc.raw.find("\n", end)
    if e == -1:
        return None
    e -= doc.raw[e - 1] == "\r"
    m = _COMMENTED.fullmatch(doc.raw, end, e)
    return (m.start(1), e) if m else None


def _comments(raw: str, a: int, b: int) -> list[str]:
    """The comments in ``raw[a:b]``, a span that starts and ends between tokens."""
    return [m.group(0) for m in _COMMENT_OR_STRING.finditer(raw, a, b)
            if m.group(0)[0] == "/"]


def _splice_raw(doc: JsoncDocument, a: int, b: int, raw_new: str) -> None:
    """Replace ``raw[a:b]`` with ``raw_new``, which may hold comments: the shadow gets
    it blanked, so the two stay aligned."""
    raw = doc.raw
    _splice(doc, a, b, _spaces(raw_new))
    doc.raw = raw[:a] + raw_new + raw[b:]


def _kept(raw: str, a: int, b: int, comments: list[str], indent: str,
          newline: str) -> tuple[str, int]:
    """What replaces ``raw[a:b]`` — a removed member or element with its separator —
    when the user's ``comments`` sit in it, and the end of the span it replaces: those
    comments, each on a line of its own at the member's ``indent`` (side by side in a
    one-line span, where all are ``/* */``), what followed on the same line moved to
    the next (a ``//`` comment would swallow it), at its own line's indent."""
    if "\n" not in raw[a:b]:
        lead = "" if raw[a - 1] in " \t{[" else " "
        return lead + " ".join(comments) + ("" if raw[b] in " \t}]," else " "), b
    line = raw.rfind("\n", 0, a) + 1
    lead = "" if not raw[line:a].strip() else newline + indent
    eol = raw.find("\n", b)
    if not raw[b:eol if eol != -1 else len(raw)].strip(" \t\r"):
        return lead + (newline + indent).join(comments), b
    line = raw.rfind("\n", 0, b) + 1
    own_indent = raw[line:_past_indent(raw, line)]
    # what followed goes on the next line, at its line's indent (the spaces before it go)
    return lead + (newline + indent).join(comments) + newline + own_indent, _past_indent(raw, b)


def _past_indent(text: str, pos: int) -> int:
    """Where the spaces and tabs from ``pos`` end."""
    m = _INDENT.match(text, pos)
    return m.end() if m else pos


def _put_before(doc: JsoncDocument, at: int, comments: list[str]) -> None:
    """Put ``comments`` just before the token at ``at``: on lines of their own when it
    starts its line, else side by side before it."""
    line = doc.raw.rfind("\n", 0, at) + 1
    indent = doc.raw[line:at]
    if indent.strip():
        _splice_raw(doc, at, at, " ".join(comments) + " ")
    else:
        _splice_raw(doc, line, line, "".join(indent + c + doc.newline for c in comments))


def _own(doc: JsonDocument) -> JsoncDocument:
    """``doc`` as the JSONC document this editor parsed (it keeps the comments)."""
    if not isinstance(doc, JsoncDocument):
        raise TypeError("a JSONC edit needs the document JsoncEditor.parse made")
    return doc


class JsoncEditor(JsonEditor):
    """Format-preserving JSONC editor: comments and trailing commas are kept."""

    def parse(self, text: str) -> JsoncDocument:
        shadow = super().parse(blank(text))
        return JsoncDocument(shadow.text, shadow.newline, shadow.unit, raw=text)

    def set(self, doc: JsonDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        doc = _own(doc)
        if self._root(doc) is not None:
            return super().set(doc, path, value)
        # a file of only comments (or nothing): the JSON editor writes the whole text
        kept = doc.raw.rstrip(" \t\r\n")
        made = super().set(doc, path, value)
        doc.raw = (kept + doc.newline if kept else "") + doc.text
        doc.text = blank(doc.raw)
        return made

    def _insert(self, doc: JsonDocument, node: _Node, parent: _Node | None, key: str | None,
                value: Any) -> None:
        doc = _own(doc)
        items = _items(doc, node)
        found = None
        if items and doc.text[node.start] == "{" and self._multiline(doc.text, node):
            found = _commented(doc, items[-1].end)
        if found is None:
            comments = [] if items else _comments(doc.raw, node.start + 1, node.end - 1)
            super()._insert(doc, node, parent, key, value)
            if comments:  # an empty container's own comments: they open its body
                at = node.start + 1
                at = _past_indent(doc.raw, at + len(doc.newline)) \
                    if doc.raw.startswith(doc.newline, at) else at
                _put_before(doc, at, comments)
            return None
        # after the last member's comment, on a line of its own; that member's comma,
        # blanked in the shadow as trailing, separates again
        comma, eol = found
        last = items[-1]
        indent = self._indent_at(doc.text, last.key_start)
        member = (json.dumps(key, ensure_ascii=False) + doc.text[last.key_end:last.start]
                  + self._render(doc, value, indent, inline=False))
        doc.text = doc.text[:comma] + "," + doc.text[comma + 1:]
        _splice(doc, eol, eol, doc.newline + indent + member, restructured=node.start)

    def _replace(self, doc: JsonDocument, path: KeyPath, nodes: list[_Node], value: Any) -> None:
        doc = _own(doc)
        node = nodes[-1]
        comments = _comments(doc.raw, node.start, node.end)
        old = node.value(doc.text) if comments else None
        if not comments or same_value(old, value) or (isinstance(old, dict)
                                                      and isinstance(value, dict)):
            return super()._replace(doc, path, nodes, value)  # (a mapping: key by key)
        # the value is written anew: the user's comments in it go before its member
        items = _items(doc, nodes[-2])
        at = items[items.at(node.start)].key_start
        super()._replace(doc, path, nodes, value)
        _put_before(doc, at, comments)
        return None

    def _remove(self, doc: JsonDocument, container: _Node, node: _Node) -> None:
        """Take the member or element out with its separator (the inverse of an insert:
        a trailing comma after the last one stays, now the one's before it); the user's
        comments in that text stay."""
        doc = _own(doc)
        items = _items(doc, container)
        i = items.at(node.start)
        if 0 < i == len(items) - 1:
            found = _commented(doc, items[i - 1].end)
            end = items[i].end
            comma = _TRAILING_COMMA.match(doc.raw, end)
            end = comma.end() if comma else end
            if found and not doc.raw[found[1]:items[i].key_start].strip() \
                    and not _comments(doc.raw, items[i].end, end):
                # the last member after a commented one: its lines go, with its trailing
                # comma; the comment stays, and the comma before it is trailing again
                comma_at, eol = found
                doc.text = doc.text[:comma_at] + " " + doc.text[comma_at + 1:]
                return _splice(doc, eol, end, "", restructured=container.start)
        a, b = self._cut(doc, container, node)
        comments = _comments(doc.raw, a, b)
        if not comments:
            return _splice(doc, a, b, "")
        indent = self._indent_at(doc.raw, node.start)
        kept, b = _kept(doc.raw, a, b, comments, indent, doc.newline)
        return _splice_raw(doc, a, b, kept)

    def dump(self, doc: JsonDocument) -> str:
        doc = _own(doc)
        super().dump(doc)  # the shadow is still JSON
        if doc._edited and blank(doc.raw) != doc.text:  # pragma: no cover - a bug here
            raise FormatError("internal error: the JSONC edit lost its alignment")
        return doc.raw


EDITOR = JsoncEditor()
