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


def check(value: Any, where: KeyPath) -> None:
    """Refuse what the JSON editor refuses on an empty file, in its order: a value JSON
    cannot hold (the exception ``json.dumps`` raises), then a top-level list."""
    json.dumps(value, allow_nan=False)
    if where and isinstance(where[0], Match):
        raise FormatError("the top level must be an object, not a list")


def write(data: dict | list) -> str | None:
    """The text of a new JSON document holding the mapping ``data``; None for no data (the
    editor then writes an empty file, as it does when nothing was set)."""
    if not isinstance(data, dict) or not data:
        return None
    return json.dumps(data, indent=_UNIT, ensure_ascii=False, allow_nan=False) + "\n"
