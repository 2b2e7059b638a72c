"""The JSON schema of fleet.yaml: generated from the pydantic model, committed, shipped.

Two committed copies hold the same bytes:

* ``schemas/fleet.schema.json`` at the repository root — what editors read (the
  ``# yaml-language-server: $schema=./schemas/fleet.schema.json`` line of the example);
* ``taosync/schemas/fleet.schema.json`` inside the package — what ``taosync validate``
  checks against and ``taosync schema`` prints, so neither needs pydantic.

``tests/test_schema.py`` fails when either drifts from :func:`generate`. Regenerate both
with ``python -m taosync.fleet.schema --write`` (or print it: ``python -m taosync.fleet.schema``).

Only :func:`generate` imports pydantic; reading the committed schema is standard library.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

DRAFT = "https://json-schema.org/draft/2020-12/schema"
PACKAGED = Path(__file__).resolve().parent.parent / "schemas" / "fleet.schema.json"
#: the editor copy; exists only in a source checkout
REPO_COPY = Path(__file__).resolve().parent.parent.parent / "schemas" / "fleet.schema.json"

#: keys first in this order in every schema object, the rest after in model order
_ORDER = ("$schema", "$id", "$ref", "title", "description", "type", "const", "enum",
          "pattern", "minLength", "minProperties", "minimum", "exclusiveMinimum", "maximum",
          "default", "properties", "required", "additionalProperties", "propertyNames",
          "items", "anyOf")


def text() -> str:
    """The committed schema, exactly as shipped in the package."""
    return PACKAGED.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def load() -> dict:
    """The committed schema as a dict (no pydantic); read once per process, never mutated."""
    return json.loads(text())


@functools.lru_cache(maxsize=1)
def client_entries() -> dict[str, dict]:
    """Client id → the schema of its ``clients:`` entry, in registry order (no pydantic,
    no client import: the schema was generated from the client modules)."""
    schema = load()
    defs = schema["$defs"]
    out = {}
    for client_id, prop in defs["Clients"]["properties"].items():
        ref = next(branch["$ref"] for branch in prop["anyOf"] if "$ref" in branch)
        out[client_id] = defs[ref.rsplit("/", 1)[1]]
    return out


def generate(fleet_cls=None) -> dict:
    """Build the schema from :class:`taosync.fleet.model.Fleet` (imports pydantic), or
    from ``fleet_cls`` (:func:`taosync.fleet.model.fleet_model`)."""
    if fleet_cls is None:
        from taosync.fleet.model import Fleet as fleet_cls

    raw = fleet_cls.model_json_schema(by_alias=True, mode="validation")
    schema = _tidy(raw)
    schema["$schema"] = DRAFT
    return _ordered(schema)


def dumps(schema: dict) -> str:
    """The committed form: indent 2, model order, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=False) + "\n"


def _tidy(node, in_properties: bool = False):
    """Drop pydantic's auto titles ("Base Url") on properties; editors show the key itself.

    The model's own title and the ``$defs`` class names stay (hover text and error
    messages use them).
    """
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _tidy(sub, in_properties=(key == "properties"))
                        for name, sub in value.items()}
        elif key == "title" and in_properties:
            continue
        else:
            out[key] = _tidy(value)
    return out


def _ordered(node):
    if isinstance(node, list):
        return [_ordered(v) for v in node]
    if not isinstance(node, dict):
        return node
    keys = [k for k in _ORDER if k in node] + [k for k in node if k not in _ORDER]
    # $defs last: the reader meets the top-level shape first
    if "$defs" in keys:
        keys.remove("$defs")
        keys.append("$defs")
    out = {}
    for k in keys:
        v = node[k]
        if k in ("properties", "$defs") and isinstance(v, dict):
            out[k] = {name: _ordered(sub) for name, sub in v.items()}
        else:
            out[k] = _ordered(v)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rendered = dumps(generate())
    if argv == ["--write"]:
        targets = [PACKAGED] + ([REPO_COPY] if REPO_COPY.parent.is_dir() else [])
        for path in targets:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(rendered, encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
        return 0
    if argv:
        print("usage: python -m taosync.fleet.schema [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
