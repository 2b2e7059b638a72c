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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from taosync.formats.base import FormatError, KeyPath
from taosync.formats.json_ import JsonDocument, JsonEditor, _items, _line_col, _Node, _splice

__all__ = ["EDITOR", "JsoncDocument", "JsoncEditor", "blank"]

_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|/\*', re.S)
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=[ \t\r\n]*[}\]])', re.S)
#: what may follow a member on its line for its comment to stay there: its comma, a comment
_COMMENTED = re.compile(r"[ \t]*(,)[ \t]*(?://[^\r\n]*|/\*[^\r\n]*?\*/)[ \t]*")
_COMMA_AFTER = re.compile(r"[ \t]*,")


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
            return super()._insert(doc, node, parent, key, value)
        # after the last member's comment, on a line of its own; that member's comma,
        # blanked in the shadow as trailing, separates again
        comma, eol = found
        last = items[-1]
        indent = self._indent_at(doc.text, last.key_start)
        member = (json.dumps(key, ensure_ascii=False) + doc.text[last.key_end:last.start]
                  + self._render(doc, value, indent, inline=False))
        doc.text = doc.text[:comma] + "," + doc.text[comma + 1:]
        _splice(doc, eol, eol, doc.newline + indent + member, restructured=node.start)

    def _remove(self, doc: JsonDocument, container: _Node, node: _Node) -> None:
        doc = _own(doc)
        items = _items(doc, container)
        i = items.at(node.start)
        found = _commented(doc, items[i - 1].end) if 0 < i == len(items) - 1 else None
        if found is None or doc.text[found[1]:items[i].key_start].strip():
            return super()._remove(doc, container, node)
        # the last member after a commented one: its lines go (its own trailing comma too);
        # the comment stays, and the comma before it is trailing again
        comma, eol = found
        end = items[i].end
        after = _COMMA_AFTER.match(doc.raw, end)
        end = after.end() if after else end
        doc.text = doc.text[:comma] + " " + doc.text[comma + 1:]
        _splice(doc, eol, end, "", restructured=container.start)

    def dump(self, doc: JsonDocument) -> str:
        doc = _own(doc)
        super().dump(doc)  # the shadow is still JSON
        if doc._edited and blank(doc.raw) != doc.text:  # pragma: no cover - a bug here
            raise FormatError("internal error: the JSONC edit lost its alignment")
        return doc.raw


EDITOR = JsoncEditor()
