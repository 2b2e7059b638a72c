"""Build the JSON schema of fleet.yaml from the pydantic model (``fleet/model.py``).

The model's ``clients:`` section comes from the client registry, so building sits above
the clients; the run path only reads the committed copies (``fleet/schema.py``).
``python -m taosync.fleet.schema_build --write`` regenerates both committed copies.
"""

from __future__ import annotations

import sys

from taosync.fleet.schema import PACKAGED, REPO_COPY, dumps

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: keys first in this order in every schema object, the rest after in model order
_ORDER = ("$schema", "$id", "$ref", "title", "description", "type", "const", "enum",
          "pattern", "minLength", "minProperties", "minimum", "exclusiveMinimum", "maximum",
          "default", "properties", "required", "additionalProperties", "propertyNames",
          "items", "anyOf")


def generate(fleet_cls=None) -> dict:
    """Build the schema from :class:`taosync.fleet.model.Fleet` (imports pydantic), or
    from ``fleet_cls`` (:func:`taosync.fleet.model.fleet_model`)."""
    if fleet_cls is None:
        from taosync.fleet.model import Fleet as fleet_cls

    raw = fleet_cls.model_json_schema(by_alias=True, mode="validation")
    schema = _tidy(raw)
    schema["$schema"] = DRAFT
    return _ordered(schema)


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
        print("usage: python -m taosync.fleet.schema_build [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
