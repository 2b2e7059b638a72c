"""The formats taosync edits: format name → editor module, imported only when a file of
that format is planned (tomlkit and ruamel are slow imports). The one place that knows
every format; :mod:`taosync.formats.base` (the contract) imports none of them.
"""

from __future__ import annotations

from taosync.formats.base import FormatEditor

#: format name → the module whose ``EDITOR`` edits it (round trip, keeps every byte)
EDITORS = {
    "json": "taosync.formats.json_",
    "jsonc": "taosync.formats.jsonc",
    "toml": "taosync.formats.toml",
    "yaml": "taosync.formats.yaml",
    "dotenv": "taosync.formats.dotenv",
    "text": "taosync.formats.text",
    "keyvalue": "taosync.formats.keyvalue",
}
#: format name → the module that writes a new file of it from plain data
WRITERS = {
    "json": "taosync.formats.json_writer",
    "jsonc": "taosync.formats.json_writer",
    "toml": "taosync.formats.toml_writer",
    "yaml": "taosync.formats.yaml_writer",
}
#: format name → the module whose ``spellings(value)`` says how a string value appears in
#: a file of it besides raw (its escapes), so the redactor finds a secret however a file
#: spells it; standard library only (the redactor loads them all). A format whose strings
#: are raw (text, keyvalue) or another's (jsonc: JSON's) needs no line.
SPELLINGS = {
    "json": "taosync.formats.json_",
    "toml": "taosync.formats.toml_writer",
    "yaml": "taosync.formats.yaml_writer",
    "dotenv": "taosync.formats.dotenv",
}


def editor_for(fmt: str, *, new: bool = False) -> FormatEditor:
    """The editor for a format name, imported only when needed.
    ``new``: for a file that does not exist yet, which formats with a writer build as
    plain data (``formats/new_file.py``), falling back on the round-trip editor for data
    the writer does not know how to write."""
    if new and fmt in WRITERS:
        from taosync.formats.new_file import NewFileEditor

        writer = _load(WRITERS[fmt])
        return NewFileEditor(fmt, writer, full_editor=lambda: editor_for(fmt))
    module = EDITORS.get(fmt)
    if module is None:
        raise ValueError(f"unknown format {fmt!r}")
    return _load(module).EDITOR


def spellings(value: str) -> set[str]:
    """Every way ``value`` appears in a file of some format: raw, and each format's escapes."""
    forms = {value}
    for module in SPELLINGS.values():
        forms |= _load(module).spellings(value)
    return forms


def _load(module: str):
    """Import ``module`` through the import statement's machinery (``__import__``), not
    ``importlib.import_module``, so ``python -X importtime`` still reports it."""
    return __import__(module, fromlist=["_"])
