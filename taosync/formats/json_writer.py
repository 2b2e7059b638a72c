"""Writes a new JSON (or JSONC) file from plain data, with the text the JSON editor gives.

A file that does not exist yet is built as plain data (:mod:`taosync.formats.new_file`)
and written once here: the JSON editor would splice each owned key into the growing
text, a copy of the whole file per key — quadratic in the catalogue for opencode's and
Kilo's model lists. Set key by key on an empty document, the editor's text is exactly
``json.dumps(data, indent=2, ensure_ascii=False)`` and a newline (every container it
builds spans lines, an emptied one reads ``{}``), so that is what this writes;
``tests/test_formats_new_file.py`` holds the two to the same bytes. Stdlib only.
"""

from __future__ import annotations

import json
from typing import Any

from taosync.formats.base import FormatError, KeyPath, Match

#: the JSON editor's indent unit for a file it starts (formats/json_.py)
_UNIT = "  "


#: ``json.dumps(value, allow_nan=False)`` makes this encoder anew on every call
_CHECKER = json.JSONEncoder(allow_nan=False)


def check(value: Any, where: KeyPath) -> None:
    """Refuse what the JSON editor refuses on an empty file, in its order: a value JSON
    cannot hold (the exception ``json.dumps`` raises), then a top-level list."""
    if type(value) is not str:  # a string always fits (most values)
        _CHECKER.encode(value)
    if where and isinstance(where[0], Match):
        raise FormatError("the top level must be an object, not a list")


def write(data: dict | list) -> str | None:
    """The text of a new JSON document holding the mapping ``data``; None for no data (the
    editor then writes an empty file, as it does when nothing was set)."""
    if not isinstance(data, dict) or not data:
        return None
    try:
        return _text(data, "") + "\n"
    except _Unusual:
        return json.dumps(data, indent=_UNIT, ensure_ascii=False, allow_nan=False) + "\n"


class _Unusual(Exception):
    """A value :func:`_text` leaves to ``json.dumps`` (a key that is not a string, a type
    JSON converts or refuses)."""


def _text(value: Any, indent: str) -> str:
    """``json.dumps(value, indent=_UNIT, ensure_ascii=False, allow_nan=False)`` at
    ``indent``: the same text, each string spelled by json's C function, where json's
    indented encoder runs in Python, a generator per container (``tests/test_formats_new_file.py``
    holds the two equal)."""
    kind = type(value)
    if kind is str:
        return _spell(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = indent + _UNIT
        parts = []
        for k, v in value.items():
            if type(k) is not str:
                raise _Unusual
            parts.append(inner + _spell(k) + ": " + _text(v, inner))
        return "{\n" + ",\n".join(parts) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = indent + _UNIT
        return "[\n" + ",\n".join(inner + _text(v, inner) for v in value) + "\n" + indent + "]"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if kind is int:
        return int.__repr__(value)
    if kind is float and value - value == 0:  # finite (NaN and infinities: json's error)
        return float.__repr__(value)
    raise _Unusual  # another type: json's to convert or refuse


_spell = json.encoder.encode_basestring  # the C one
