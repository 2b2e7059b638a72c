"""The JSON schema: generated from the model, committed twice (editor copy at the repo
root, packaged copy inside taosync), and all three always the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taosync import schema_build
from taosync.fleet import schema

ROOT = Path(__file__).resolve().parent.parent
REPO_COPY = ROOT / "schemas" / "fleet.schema.json"
PACKAGED = ROOT / "taosync" / "schemas" / "fleet.schema.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fleet"
REGENERATE = "run `python -m taosync.schema_build --write` (or `python -m taosync.schema_build " \
             "> schemas/fleet.schema.json` and copy it to taosync/schemas/)"


def test_committed_schema_matches_the_model():
    generated = schema.dumps(schema_build.generate())
    assert REPO_COPY.read_text(encoding="utf-8") == generated, \
        f"schemas/fleet.schema.json drifted from the pydantic model: {REGENERATE}"


def test_packaged_copy_is_the_committed_one():
    assert schema.PACKAGED == PACKAGED
    assert PACKAGED.read_bytes() == REPO_COPY.read_bytes(), \
        f"taosync/schemas/fleet.schema.json differs from schemas/fleet.schema.json: {REGENERATE}"
    assert schema.text() == REPO_COPY.read_text(encoding="utf-8")


def test_module_prints_the_schema():
    proc = subprocess.run([sys.executable, "-m", "taosync.schema_build"], capture_output=True,
                          text=True, check=True, timeout=120)
    assert proc.stdout == REPO_COPY.read_text(encoding="utf-8")


def test_is_a_valid_draft_2020_12_schema():
    from jsonschema.validators import Draft202012Validator

    data = schema.load()
    assert data["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(data)
    assert REPO_COPY.read_text(encoding="utf-8").endswith("}\n")


def _objects(node, where="#"):
    if isinstance(node, dict):
        if "properties" in node:
            yield where, node
        for k, v in node.items():
            yield from _objects(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _objects(v, f"{where}/{i}")


def test_every_mapping_forbids_unknown_keys_and_says_what_it_is():
    data = schema.load()
    objects = list(_objects(data))
    from taosync.clients import registry

    # Fleet, its 10 own $defs (Clients, Gateway, McpHttp, McpStdio, Model, Profile,
    # ProjectOverlay, Route, Routing, Verify) and one options object per registered client
    assert len(objects) == 1 + 10 + len(registry.ids())
    for where, obj in objects:
        assert obj.get("additionalProperties") is False, where
    for name, prop in data["properties"].items():
        assert prop.get("description"), f"top-level key {name} has no description"
    for name in ("claude-code", "codex", "cline", "continue", "mistral-vibe", "gptme",
                 "opencode", "kilo"):
        assert name in data["$defs"]["Clients"]["properties"]


def test_no_auto_titles_on_properties():
    for _where, obj in _objects(schema.load()):
        for name, prop in obj["properties"].items():
            assert "title" not in prop, name


@pytest.mark.parametrize("name", ["minimal.yaml", "anchors.yaml"])
def test_fixtures_and_example_validate_under_jsonschema(name):
    from jsonschema.validators import Draft202012Validator
    from ruamel.yaml import YAML

    for path in (ROOT / "fleet.yaml", FIXTURES / name):
        doc = json.loads(json.dumps(YAML(typ="safe").load(path.read_text())))
        assert list(Draft202012Validator(schema.load()).iter_errors(doc)) == []


def test_example_points_editors_at_the_committed_schema():
    first = (ROOT / "fleet.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=./schemas/fleet.schema.json"
