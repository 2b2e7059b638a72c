"""``KEY=VALUE`` files (Continue's ``~/.continue/.env``), edited line by line.

The document is the list of the file's records (a line, or the lines of one multi-line
quoted value) with their own line endings, so comments, blank lines, ``export ``
prefixes, spacing around ``=``, inline comments and the quoting of every other line stay
byte for byte. Key paths have exactly one segment: the variable name.

Reading follows the npm ``dotenv`` parser (Continue is a Node program): an unquoted value
runs up to a ``#`` or the end of the line and is trimmed; single-quoted and
backtick-quoted values are literal; ``"double"`` values decode ``\\n``, ``\\r``, ``\\t``,
``\\"`` and ``\\\\``; quoted values may span lines. When a key appears more than once
the last one counts (get/set act on it); delete removes every occurrence. Names
may use ``[A-Za-z0-9_.-]`` (as npm dotenv); new names must not start with a digit.

Writing: a value made only of ``[A-Za-z0-9_./:@+=,%~-]`` is written bare; otherwise it
is double-quoted when it holds none of ``" \\ $`` or a line break (both npm dotenv and
python-dotenv then read it literally), else single-quoted when it holds no ``'`` or line
break, else double-quoted with escapes. A replaced value keeps its line's quotes when
they can hold it. A new key is appended at the end; a missing final newline stays
missing. Line endings follow the file (LF or CRLF).

The ``literal`` dialect (format ``keyvalue``: shell-gpt's ``.sgptrc``) reads as
shell-gpt does: a value is the rest of its line after the first ``=``, trailing space
trimmed, quotes and ``#`` included; a value is written as is (a line break refused).

A byte-order mark at the start is kept and read past in a ``.env`` (npm dotenv 18 and
python-dotenv 1.2 read past it too), and refused with its own message in the literal
dialect (shell-gpt 1.5.1's ``line.strip()`` keeps it: its first key would be lost).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from taosync.formats.base import MISSING, FormatEditor, FormatError, KeyPath

__all__ = ["EDITOR", "LITERAL_EDITOR", "DotenvDocument", "DotenvEditor"]

_ASSIGN = re.compile(r"[ \t]*(?:export[ \t]+)?([A-Za-z0-9_.-]+)[ \t]*=[ \t]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_SAFE = re.compile(r"[A-Za-z0-9_./:@+=,%~-]*\Z")
_TAIL = re.compile(r"[ \t]*(?:#.*)?\Z", re.S)
_DQ_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


@dataclass
class _Record:
    text: str  # without its line ending (may hold line breaks inside a quoted value)
    ending: str  # "\n", "\r\n" or "" (last line without newline)
    key: str | None = None  # None: blank line or comment
    vstart: int = 0  # the value's raw span in text
    vend: int = 0

    @property
    def raw(self) -> str:
        return self.text[self.vstart:self.vend]


@dataclass
class DotenvDocument:
    records: list[_Record] = field(default_factory=list)
    newline: str = "\n"
    bom: str = ""  # a byte-order mark before the first record, kept as it was


def _unquote(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'`":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return re.sub(r"\\(.)", lambda m: _DQ_ESCAPES.get(m.group(1), m.group(0)), raw[1:-1], flags=re.S)
    return raw


def _quote(value: str, old_raw: str | None = None) -> str:
    plain_dq = not any(c in value for c in '"\\$\n\r')
    plain_sq = not any(c in value for c in "'\n\r")
    if old_raw:
        if old_raw[0] == '"' and plain_dq:
            return f'"{value}"'
        if old_raw[0] == "'" and plain_sq:
            return f"'{value}'"
    if _SAFE.match(value):
        return value
    if plain_dq:
        return f'"{value}"'
    if plain_sq:
        return f"'{value}'"
    return f'"{_escaped(value)}"'


def _escaped(value: str) -> str:
    """``value`` inside double quotes: backslash, quote and line breaks escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def spellings(value: str) -> set[str]:
    """How ``value`` appears in a ``.env`` file besides raw (for the redactor)."""
    return {_escaped(value)}


def _text_value(value: Any, path: KeyPath) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise FormatError(f"{path[0]}: a .env value must be a string or number, not {type(value).__name__}")


def _line_col(text: str, pos: int) -> tuple[int, int]:
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


class DotenvEditor(FormatEditor):
    """Format-preserving ``.env`` editor (see the module docstring); ``literal``: values
    are taken and written verbatim, no quoting and no inline comments."""

    def __init__(self, literal: bool = False):
        self.literal = literal

    def _decode(self, raw: str) -> str:
        return raw if self.literal else _unquote(raw)

    def _encode(self, text: str, old_raw: str | None = None) -> str:
        if not self.literal:
            return _quote(text, old_raw)
        if "\n" in text or "\r" in text:
            raise FormatError("a value of this file cannot hold a line break")
        return text

    def parse(self, text: str) -> DotenvDocument:
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        if bom and self.literal:  # shell-gpt reads "\ufeffKEY": its first key is lost
            raise FormatError("the file starts with a byte-order mark (U+FEFF), which "
                              "shell-gpt reads as part of the first key; save the file as "
                              "UTF-8 without a BOM", 1, 1)
        text = text[len(bom):]  # npm dotenv 18 and python-dotenv 1.2 read past it
        nl = text.find("\n")
        doc = DotenvDocument(newline="\r\n" if nl > 0 and text[nl - 1] == "\r" else "\n",
                             bom=bom)
        pos, n = 0, len(text)
        while pos < n:
            rec, pos = (self._literal_record if self.literal else self._record)(text, pos)
            doc.records.append(rec)
        return doc

    @staticmethod
    def _literal_record(text: str, pos: int) -> tuple[_Record, int]:
        """One line; its value is the rest of it after ``=``, as it is."""
        eol = text.find("\n", pos)
        line_end = len(text) if eol == -1 else eol
        body, ending = _split_ending(text, pos, line_end)
        if not body.strip() or body.startswith("#"):
            return _Record(body, ending), _next(text, line_end)
        m = _ASSIGN.match(body)
        if not m:
            line_no, col = _line_col(text, pos)
            raise FormatError("expected KEY=VALUE, a comment or a blank line", line_no, col)
        vend = max(m.end(), len(body.rstrip(" \t")))
        return _Record(body, ending, m.group(1), m.end(), vend), _next(text, line_end)

    @staticmethod
    def _record(text: str, pos: int) -> tuple[_Record, int]:
        eol = text.find("\n", pos)
        line_end = len(text) if eol == -1 else eol
        line = text[pos:line_end]
        if not line.strip() or line.lstrip().startswith("#"):
            return _Record(*_split_ending(text, pos, line_end)), _next(text, line_end)
        m = _ASSIGN.match(line)
        if not m:
            line_no, col = _line_col(text, pos)
            raise FormatError("expected KEY=VALUE, a comment or a blank line", line_no, col)
        vstart = m.end()
        first = line[vstart:vstart + 1]
        if first and first in "'\"`":
            close = _closing(text, pos + vstart)
            if close == -1:
                line_no, col = _line_col(text, pos + vstart)
                raise FormatError(f"unterminated {first}quoted{first} value", line_no, col)
            vend = close + 1 - pos
            eol = text.find("\n", close)
            line_end = len(text) if eol == -1 else eol
            body, ending = _split_ending(text, pos, line_end)
            if not _TAIL.match(body, vend):
                line_no, col = _line_col(text, pos + vend)
                raise FormatError("unexpected text after the quoted value", line_no, col)
        else:
            body, ending = _split_ending(text, pos, line_end)
            hash_at = body.find("#", vstart)
            value_end = len(body) if hash_at == -1 else hash_at
            vend = len(body[:value_end].rstrip(" \t"))
            vend = max(vend, vstart)
        return _Record(body, ending, m.group(1), vstart, vend), _next(text, line_end)

    def dump(self, doc: DotenvDocument) -> str:
        return doc.bom + "".join(r.text + r.ending for r in doc.records)

    @staticmethod
    def _key(path: KeyPath) -> str:
        path = tuple(path)
        if len(path) != 1 or not isinstance(path[0], str):
            raise FormatError(f"a .env key path has exactly one name, got {path!r}")
        return path[0]

    def get(self, doc: DotenvDocument, path: KeyPath) -> Any:
        if tuple(path) == ():  # the whole file, as the other editors give it
            return {rec.key: self._decode(rec.raw) for rec in doc.records if rec.key is not None}
        key = self._key(path)
        for rec in reversed(doc.records):
            if rec.key == key:
                return self._decode(rec.raw)
        return MISSING

    def set(self, doc: DotenvDocument, path: KeyPath, value: Any) -> list[KeyPath]:
        key = self._key(path)
        if not _KEY.match(key):
            raise FormatError(f"{key!r} is not a valid .env variable name")
        text = _text_value(value, (key,))
        for rec in reversed(doc.records):
            if rec.key == key:
                if self._decode(rec.raw) != text:
                    new = self._encode(text, rec.raw)
                    rec.text = rec.text[: rec.vstart] + new + rec.text[rec.vend:]
                    rec.vend = rec.vstart + len(new)
                return []
        line = f"{key}="
        new_rec = _Record(line + self._encode(text), doc.newline, key, len(line), 0)
        new_rec.vend = len(new_rec.text)
        if doc.records and not doc.records[-1].ending:
            doc.records[-1].ending = doc.newline
            new_rec.ending = ""
        doc.records.append(new_rec)
        return []

    def delete(self, doc: DotenvDocument, path: KeyPath) -> bool:
        key = self._key(path)
        had_final_newline = not doc.records or bool(doc.records[-1].ending)
        kept = [r for r in doc.records if r.key != key]
        if len(kept) == len(doc.records):
            return False
        if kept and not had_final_newline:
            kept[-1].ending = ""
        doc.records = kept
        return True


def _split_ending(text: str, pos: int, line_end: int) -> tuple[str, str]:
    body = text[pos:line_end]
    if line_end == len(text):
        return body, ""
    if body.endswith("\r"):
        return body[:-1], "\r\n"
    return body, "\n"


def _next(text: str, line_end: int) -> int:
    return line_end + 1 if line_end < len(text) else line_end


def _closing(text: str, open_at: int) -> int:
    """Index of the quote closing the one at ``open_at`` (double quotes honour ``\\``)."""
    q = text[open_at]
    i = open_at + 1
    while True:
        j = text.find(q, i)
        if j == -1:
            return -1
        if q == '"':
            k = j
            while k > open_at + 1 and text[k - 1] == "\\":
                k -= 1
            if (j - k) % 2:
                i = j + 1
                continue
        return j


EDITOR = DotenvEditor()
LITERAL_EDITOR = DotenvEditor(literal=True)
