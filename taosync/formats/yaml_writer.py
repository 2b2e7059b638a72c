"""A new YAML file (Continue's ``config.yaml``) written from plain data, without ruamel's
emitter.

ruamel's pure-Python emitter takes longer to write a new ``config.yaml`` than all the rest
of planning it. For a file that does not exist yet this module writes the text the YAML
editor would (``tests/test_formats_new_file.py`` holds the two together): ruamel's
round-trip layout with Continue's indentation (mapping 2, sequence 4, dash offset 2)::

    models:
      - name: gpt-4o-mini
        roles:
          - chat

and each string in the style ruamel's emitter chooses for it (plain, ``'single'`` or
``"double"`` quoted; the scalar analysis below is ruamel's, narrowed to block context), a
YAML 1.1 boolean word (``no``, ``on``) as a value quoted as the editor quotes it.

What it does not know — floats, nulls, a list directly in a list, an empty collection in
a list, NEL/LS/PS or BOM characters, long keys — it does not guess: :func:`write` returns
None and the caller writes the file through the editor.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from taosync.formats.base import KeyPath, escaped

#: plain words a YAML 1.1 reader takes for booleans: written quoted, to be safe
YAML11_BOOL = re.compile(r"(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)\Z")

_MAPPING, _SEQUENCE, _OFFSET = 2, 4, 2
_MAX_KEY = 100  # ruamel writes a key of 128+ characters as "? key"; stay well clear
_UNSURE_CHARS = frozenset("\x85\u2028\u2029\ufeff")
_SPACE = "\0 \t\r\n\x85\u2028\u2029"
_BREAK = "\n\x85\u2028\u2029"
_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\x09": "t", "\x0a": "n", "\x0b": "v",
            "\x0c": "f", "\x0d": "r", "\x1b": "e", '"': '"', "\\": "\\"}


class _Unsure(Exception):
    """Outside what this writer knows: let the editor write the file."""


def check(value: Any, where: KeyPath) -> None:
    """YAML holds every plain value."""


def write(data: dict | list) -> str | None:
    """The text of a new YAML document holding ``data`` (a mapping, or a list of
    mappings with its dashes at column 0), or None (see the module doc)."""
    out: list[str] = []
    try:
        if isinstance(data, list):
            _sequence(data, 0, out)
        else:
            _mapping(data, 0, "", out)
    except _Unsure:
        return None
    return "".join(out)


def _mapping(mapping: dict, indent: int, first_prefix: str, out: list[str]) -> None:
    for i, (key, value) in enumerate(mapping.items()):
        if not isinstance(key, str) or len(key) >= _MAX_KEY:
            raise _Unsure
        prefix = first_prefix if i == 0 and first_prefix else " " * indent
        head = prefix + _string(key, is_key=True) + ":"
        if isinstance(value, dict) and value:
            out.append(head + "\n")
            _mapping(value, indent + _MAPPING, "", out)
        elif isinstance(value, (list, tuple)) and value:
            out.append(head + "\n")
            _sequence(value, indent + _OFFSET, out)
        else:
            out.append(head + " " + _scalar(value) + "\n")


def _sequence(items: list | tuple, dash: int, out: list[str]) -> None:
    prefix = " " * dash + "-" + " " * (_SEQUENCE - _OFFSET - 1)
    for item in items:
        if isinstance(item, dict) and item:
            _mapping(item, dash + _SEQUENCE - _OFFSET, prefix, out)
        elif isinstance(item, (dict, list, tuple)):
            raise _Unsure
        else:
            out.append(prefix + _scalar(item) + "\n")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value, is_key=False)
    if isinstance(value, dict) and not value:
        return "{}"
    if isinstance(value, (list, tuple)) and not value:
        return "[]"
    raise _Unsure  # floats, None: ruamel has its own spellings


def _string(text: str, *, is_key: bool) -> str:
    if _UNSURE_CHARS.intersection(text):
        raise _Unsure
    plain, single, multiline = _analyse(text)
    if is_key and multiline:
        raise _Unsure  # ruamel writes it as a complex key ("? ...")
    if not is_key and YAML11_BOOL.match(text):
        return _single(text) if single else _double(text)
    if plain and _reads_as_str(text):  # ("" reads as null: it is quoted)
        return text
    if "'" in text or "\n" in text:
        return _double(text)
    return _single(text) if single else _double(text)


def _reads_as_str(text: str) -> bool:
    """Would a plain ``text`` read back as this string (not a number, bool, null, date)?"""
    answer = _READS_AS_STR.get(text)
    if answer is None:
        resolve, scalar = _resolver()
        answer = resolve(scalar, text, (True, False)) == "tag:yaml.org,2002:str"
        if len(_READS_AS_STR) < 1 << 16:  # each text's answer once (a long watch: bounded)
            _READS_AS_STR[text] = answer
    return answer


_READS_AS_STR: dict[str, bool] = {}


@cache
def _resolver():
    """ruamel's YAML 1.2 resolver (ruamel is loaded anyway: fleet.yaml is read with it)."""
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver().resolve, ScalarNode


def _single(text: str) -> str:
    return "'" + text + "'"  # never holds a quote: those are double quoted (above)


def _double(text: str) -> str:
    out = []
    for c in text:
        if _printable(c) and c not in '"\\':
            out.append(c)
        elif c in _ESCAPES:
            out.append("\\" + _ESCAPES[c])
        elif c <= "\xff":
            out.append(f"\\x{ord(c):02X}")
        elif c <= "\uffff":
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(f"\\U{ord(c):08X}")
    return '"' + "".join(out) + '"'


def _printable(c: str) -> bool:
    return ("\x20" <= c <= "\x7e" or "\xa0" <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd"
            or "\U00010000" <= c <= "\U0010ffff")


#: a name, URL or path of the safest characters: no space, break, quote, indicator
#: first, ``#`` or special character (``:`` and ``@`` only after the first)
_SIMPLE = re.compile(r"[A-Za-z0-9_./+=~-][A-Za-z0-9_./+=~@:-]*\Z")


def _analyse(text: str) -> tuple[bool, bool, bool]:
    """(plain allowed, single quotes allowed, multi-line): ruamel's ``analyze_scalar``
    for block context, YAML 1.2."""
    if not text:
        return True, True, False
    if _SIMPLE.match(text):  # what the loop below finds for these, without the loop
        return (not (text == "-" or text.endswith(":") or text.startswith(("---", "..."))),
                True, False)
    return _analyse_chars(text)


def _analyse_chars(text: str) -> tuple[bool, bool, bool]:
    """:func:`_analyse`, character by character."""
    indicators = text.startswith(("---", "..."))
    line_breaks = special = False
    leading_space = leading_break = trailing_space = trailing_break = False
    break_space = space_break = False
    preceded_by_space = True
    followed_by_space = len(text) == 1 or text[1] in _SPACE
    previous_space = previous_break = False
    last = len(text) - 1
    for index, ch in enumerate(text):
        if index == 0:
            if ch in "#,[]{}&*!|>'\"%@`":
                indicators = True
            if ch in "?:" and followed_by_space:
                indicators = True
            if ch == "-" and followed_by_space:
                indicators = True
        elif (ch == ":" and followed_by_space) or (ch == "#" and preceded_by_space):
            indicators = True
        if ch in _BREAK:
            line_breaks = True
        if not (ch == "\n" or "\x20" <= ch <= "\x7e"):
            if not (_printable(ch) and ch != "\ufeff"):
                special = True
        if ch == " ":
            leading_space |= index == 0
            trailing_space |= index == last
            break_space |= previous_break
            previous_space, previous_break = True, False
        elif ch in _BREAK:
            leading_break |= index == 0
            trailing_break |= index == last
            space_break |= previous_space
            previous_space, previous_break = False, True
        else:
            previous_space = previous_break = False
        preceded_by_space = ch in _SPACE
        followed_by_space = index + 2 > last or text[index + 2] in _SPACE
    plain = not (leading_space or leading_break or trailing_space or trailing_break
                 or break_space or special or space_break or line_breaks or indicators)
    single = not (break_space or special or space_break)
    return plain, single, line_breaks


#: the escapes of a double-quoted scalar as ruamel (the YAML editor) writes them
_EMITTED = {"\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
            "\f": "\\f", "\r": "\\r", "\x1b": "\\e", '"': '\\"', "\\": "\\\\",
            "\x85": "\\N", "\xa0": "\\_"}


def spellings(value: str) -> set[str]:
    """How ``value`` appears in a YAML file besides raw (for the redactor): double quoted
    as ruamel escapes it, and single quoted (``''`` for ``'``)."""
    return {escaped(value, _EMITTED, "\\x{:02X}"), value.replace("'", "''")}
