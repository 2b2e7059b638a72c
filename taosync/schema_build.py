"""The fleet of the registered clients, and the JSON schema of fleet.yaml built from it.

The pydantic model (:mod:`taosync.fleet.model`) takes the clients' option declarations
as an argument, so the fleet layer never reads the client registry: this module, above
the clients, hands the registry's declarations down. The run path only reads the
committed copies of the schema (``fleet/schema.py``).
``python -m taosync.schema_build --write`` regenerates both committed copies.
"""

from __future__ import annotations

import sys
from typing import Any

from taosync.fleet.model import FleetBase, fleet_model as _fleet_model
from taosync.fleet.schema import PACKAGED, REPO_COPY, dumps

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: keys first in this order in every schema object, the rest after in model order
_ORDER = ("$schema", "$id", "$ref", "title", "description", "type", "const", "enum",
          "pattern", "minLength", "minProperties", "minimum", "exclusiveMinimum", "maximum",
          "default", "properties", "required", "additionalProperties", "propertyNames",
          "items", "anyOf")


def fleet_model() -> type[FleetBase]:
    """A fleet for the clients registered now: how a client added at run time (a test's
    toy client) gets its place in the schema, as a shipped one does."""
    from taosync.clients.registry import all as all_clients

    return _fleet_model(all_clients())


#: the fleet of the shipped clients (what the committed schema is generated from)
Fleet = fleet_model()
#: its ``clients:`` section
Clients: Any = Fleet.model_fields["clients"].annotation


def generate(fleet_cls: type[FleetBase] | None = None) -> dict:
    """Build the schema from :data:`Fleet` (imports pydantic), or from ``fleet_cls``
    (:func:`fleet_model`)."""
    raw = (fleet_cls or Fleet).model_json_schema(by_alias=True, mode="validation")
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
        print("usage: python -m taosync.schema_build [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
