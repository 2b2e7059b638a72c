"""JSONC (JSON with ``//`` and ``/* */`` comments and trailing commas), edited as text.

opencode and Kilo read their config with a JSONC parser, so a user's comments there are
legitimate and must survive an edit. This reuses the strict JSON editor
(:mod:`taosync.formats.json_`) on a *shadow* of the text: the same text with every
comment and trailing comma blanked to spaces (newlines kept), so every offset is the same
in both. The JSON editor walks and splices the shadow; each splice is mirrored into the
real text (``JsoncDocument._spliced``), and ``dump`` hands back the real text, comments
and trailing commas included. Inserted text never holds a comment, so the two stay
aligned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from taosync.formats.base import FormatError, KeyPath
from taosync.formats.json_ import JsonDocument, JsonEditor, _line_col

__all__ = ["EDITOR", "JsoncDocument", "JsoncEditor", "blank"]

_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|/\*', re.S)
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=[ \t\r\n]*[}\]])', re.S)


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

    def dump(self, doc: JsonDocument) -> str:
        doc = _own(doc)
        super().dump(doc)  # the shadow is still JSON
        if doc._edited and blank(doc.raw) != doc.text:  # pragma: no cover - a bug here
            raise FormatError("internal error: the JSONC edit lost its alignment")
        return doc.raw


EDITOR = JsoncEditor()
