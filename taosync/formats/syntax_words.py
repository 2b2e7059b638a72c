"""TOML and JSON parser errors in a client file, in the user's words with the fix.

tomlkit says "Unexpected character: 'g'" for ``model = gpt-4`` and json says
"Expecting ',' delimiter" on the line *after* the missing comma. Taosync refuses to edit
a file it cannot parse (exit 2, nothing written), so the message is the user's only
guide to mending a file they may never have opened: it says what is wrong, where, and
the line to write instead. What is not recognised keeps the parser's words.
"""

from __future__ import annotations

import re

from taosync.formats.yaml_words import open_quote as _open_quote

_BARE_KEY = r"[A-Za-z0-9_.\"' -]+?"


def _line(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def toml(text: str, message: str, line: int, col: int) -> tuple[str, int, int]:
    """(message, line, column) for tomlkit's or tomllib's ``message`` at
    ``line``:``col`` (1-based)."""
    words, line, col = _toml(text, message, line, col)
    return f"invalid TOML: {words}", line, col


def _toml(text: str, message: str, line: int, col: int) -> tuple[str, int, int]:
    here = _line(text, line)
    body = here.split("#", 1)[0].strip() if '"' not in here else here.strip()
    dup = re.match(r'Key "(.+)" already exists', message)
    if dup is not None:
        name = dup.group(1)
        first = next((i + 1 for i, s in enumerate(text.splitlines()[:line - 1])
                      if re.match(rf"\s*(\[\s*)?{re.escape(name)}\s*(=|\])", s)), None)
        where = f" (first at line {first})" if first else ""
        return (f"'{name}' is set twice{where}; TOML allows a key or table once: "
                "remove one", line, col)
    quote = _open_quote(here)
    if quote is not None and "control characters" in message.lower():
        return (f"the string opened with {here[quote]} at column {quote + 1} is never "
                f"closed; add the closing {here[quote]} on this line", line, quote + 1)
    if body.startswith("[") and "]" not in body:
        return (f"the table header {body} is not closed; write {body}]", line,
                len(here.rstrip()) + 1)
    if "Invalid initial character for a key part" in message and re.search(r",\s*}", here):
        comma = here.rfind(",", 0, here.rfind("}"))
        return ("a trailing comma is not allowed in an inline table { … }; remove it",
                line, comma + 1)
    m = re.match(rf"\s*({_BARE_KEY})\s*:\s*(.+)$", body)
    if m is not None and "=" not in body:
        return (f"TOML sets a key with '=', not ':'; write {m.group(1).strip()} = "
                f"{m.group(2).strip()}", line, col)
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s+(\S.*)$", body)
    if m is not None and "=" not in body and not body.startswith("["):
        return (f"missing '=' after '{m.group(1)}'; write {m.group(1)} = {m.group(2)}",
                line, len(here) - len(here.lstrip()) + len(m.group(1)) + 1)
    m = re.match(rf"\s*({_BARE_KEY})\s*=\s*([A-Za-z][^\"'\[{{]*?)\s*$", body)
    if m is not None and m.group(2) not in ("true", "false", "inf", "nan"):
        return (f"a text value is quoted in TOML; write {m.group(1).strip()} = "
                f"\"{m.group(2)}\"", line, col)
    return message, line, col


def json(text: str, message: str, pos: int) -> tuple[str, int]:
    """(message, position) for json's ``message`` at offset ``pos``."""
    if message.startswith("Expecting ',' delimiter"):
        if not text[pos:].strip():
            return ("the file ends before every { and [ is closed; add the missing '}' or "
                    "']' at the end", len(text.rstrip()))
        before = len(text[:pos].rstrip())
        return ("missing ',' after this value (JSON separates entries with commas); "
                "add one here", before)
    if message.startswith("Expecting property name enclosed in double quotes"):
        ch = text[pos:pos + 1]
        if ch == "'":
            return "JSON strings take double quotes (\"…\"), not single ones", pos
        word = re.match(r"[A-Za-z_$][\w$-]*", text[pos:])
        if word is not None:
            return (f"a key is a string in double quotes in JSON; write \"{word.group()}\"",
                    pos)
    if message.startswith("Invalid control character"):
        start = text.rfind('"', 0, pos)
        return ("the string is not closed on its line; add the closing \"",
                start if start >= 0 else pos)
    if message.startswith("Expecting value") and text[pos:pos + 1] == "'":
        return "JSON strings take double quotes (\"…\"), not single ones", pos
    return message, pos
