"""A new TOML file written from plain data, without importing tomlkit.

Files taosync creates (a first ``config.toml``, a ``<route>.config.toml`` profile) have
nothing to preserve, so they do not need the round-trip editor — and tomlkit is the
slowest import of a cold ``taosync plan``. The layout is the one the editor gives the
same keys set on an empty document (``tests/test_formats_writers.py`` holds the two
together), which is how ``codex mcp add`` writes too:

* the root's scalars and arrays first, then its tables;
* in a table: scalars and arrays, then its sub-tables as ``[a.b]`` headers, each after a
  blank line; a table holding only tables gets no header of its own;
* a list created through a Match segment (Vibe's ``[[models]]``) is an array of tables,
  ``[[a.b]]`` (with the tables, in order), as the editor writes one; every other array,
  and everything inside one, is inline: ``["-y", "pkg"]``, ``[{ a = 1 }, []]``.

TOML has no null: a ``None`` anywhere is a FormatError, as in the editor.
"""

from __future__ import annotations

import math
import re
from typing import Any

from taosync.formats.base import (JSON_SCALARS, FormatError, KeyPath, NamedList, escaped,
                                  keypath_str)

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")  # written bare; any other key is quoted
_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r",
            '"': '\\"', "\\": "\\\\"}


def check(value: Any, where: KeyPath) -> None:
    """Refuse what TOML cannot hold (null), naming where it is."""
    if type(value) in _LEAVES or not _holds_null(value):  # most values: one look
        return
    _check(value, where)


def _holds_null(value: Any) -> bool:
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        return value is None
    return any(v is None or type(v) not in _LEAVES and _holds_null(v) for v in value)


_LEAVES = JSON_SCALARS - {type(None)}  # TOML has no null


def _check(value: Any, where: KeyPath) -> None:
    """:func:`check`'s walk to the null, naming the key path it is at."""
    if value is None:
        raise FormatError(f"{keypath_str(where)}: TOML has no null value")
    if isinstance(value, dict):
        for k, v in value.items():
            _check(v, where + (str(k),))
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check(v, where)


def write(data: dict) -> str:
    """The text of a new TOML document holding ``data`` (a plain mapping)."""
    check(data, ())
    out: list[str] = []
    _table(data, (), out)
    return "".join(out)


def is_array_of_tables(value: Any) -> bool:
    """A list created through a Match (its elements found by name), outside any inline
    value, is written ``[[a.b]]``, as the editor does; any other list stays inline."""
    return (isinstance(value, NamedList) and bool(value)
            and all(isinstance(v, dict) and v for v in value))


def _table(table: dict, path: tuple[str, ...], out: list[str], element: bool = False) -> None:
    scalars = [(k, v) for k, v in table.items()
               if not isinstance(v, dict) and not is_array_of_tables(v)]
    tables = [(k, v) for k, v in table.items()
              if isinstance(v, dict) or is_array_of_tables(v)]
    if element or (path and (scalars or not tables)):
        if out and not out[-1].startswith("[["):  # tomlkit: no blank line right after [[a]]
            out.append("\n")
        name = ".".join(_key(k) for k in path)
        out.append(f"[[{name}]]\n" if element else f"[{name}]\n")
    for k, v in scalars:
        out.append(f"{_key(k)} = {_value(v)}\n")
    for k, v in tables:
        for sub in (v if isinstance(v, list) else [v]):
            _table(sub, path + (str(k),), out, element=isinstance(v, list))


def _key(key: Any) -> str:
    key = str(key)
    if _BARE_KEY.fullmatch(key):
        return key
    return _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise FormatError(f"TOML cannot hold a {type(value).__name__}")


def _string(text: str) -> str:
    """A basic string: quotes, backslashes and control characters escaped."""
    return '"' + escaped(text, _ESCAPES, "\\u{:04x}") + '"'


def spellings(value: str) -> set[str]:
    """How ``value`` appears in a TOML file besides raw (for the redactor): a basic
    string's escapes, as this writer and tomlkit write them."""
    return {_string(value)[1:-1]}
