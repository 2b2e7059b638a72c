"""A file that is one value: its whole text (``llm``'s ``default_model.txt``).

The document holds the file's text as is. Its one key path is ``("text",)``: the
content without its final line break, MISSING when the file is empty. Setting it
writes the value and one line break, keeping a CRLF the file had; a value with a
line break inside is refused (such a file holds one line). Deleting it empties the
file. An unedited document dumps to exactly the text parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taosync.formats.base import MISSING, FormatEditor, FormatError, KeyPath

__all__ = ["EDITOR", "KEY", "TextDocument", "TextEditor"]

#: the one key path segment: the whole content
KEY = "text"


@dataclass
class TextDocument:
    text: str


def _value(text: str) -> str:
    for end in ("\r\n", "\n"):
        if text.endswith(end):
            return text[: -len(end)]
    return text


class TextEditor(FormatEditor):
    """Edits a one-value text file (see the module docstring)."""

    def parse(self, text: str) -> TextDocument:
        return TextDocument(text)

    def dump(self, doc: TextDocument) -> str:
        return doc.text

    @staticmethod
    def _check(path: KeyPath) -> None:
        if tuple(path) != (KEY,):
            raise FormatError(f"a text file has one key path, ({KEY!r},), not {tuple(path)!r}")

    def get(self, doc: TextDocument, path: KeyPath) -> Any:
        if tuple(path) == ():
            return {KEY: _value(doc.text)} if doc.text else {}
        if tuple(path) != (KEY,) or not doc.text:
            return MISSING
        return _value(doc.text)

    def set(self, doc: TextDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        self._check(path)
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            raise FormatError("a text file holds one line of text")
        if doc.text and _value(doc.text) == value:
            return []
        doc.text = value + ("\r\n" if doc.text.endswith("\r\n") else "\n")
        return []

    def delete(self, doc: TextDocument, path: KeyPath) -> bool:
        self._check(path)
        if not doc.text:
            return False
        doc.text = ""
        return True


EDITOR = TextEditor()
