"""The JSON schema of fleet.yaml: generated from the pydantic model, committed, shipped.

Two committed copies hold the same bytes:

* ``schemas/fleet.schema.json`` at the repository root — what editors read (the
  ``# yaml-language-server: $schema=./schemas/fleet.schema.json`` line of the example);
* ``taosync/schemas/fleet.schema.json`` inside the package — what ``taosync validate``
  checks against and ``taosync schema`` prints, so neither needs pydantic.

``tests/test_schema.py`` fails when either drifts from what ``taosync/schema_build.py``
generates. Regenerate both with ``python -m taosync.schema_build --write`` (or print
it: ``python -m taosync.schema_build``).

Reading the committed schema is standard library only; building it (pydantic, and the
client registry the ``clients:`` section comes from) lives in ``taosync/schema_build.py``, above
the clients, so nothing on the run path imports the model.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

PACKAGED = Path(__file__).resolve().parent.parent / "schemas" / "fleet.schema.json"
#: the editor copy; exists only in a source checkout
REPO_COPY = Path(__file__).resolve().parent.parent.parent / "schemas" / "fleet.schema.json"

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


def dumps(schema: dict) -> str:
    """The committed form: indent 2, model order, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=False) + "\n"
