"""``watch`` treats a base fleet that fleet.yaml ``include:``s like fleet.yaml itself:
saving it re-applies (issue 18), and a base fleet included later is watched at once."""

from __future__ import annotations

from conftest import EXAMPLE_FLEET
from test_watch import codex_model, watch, with_fast  # noqa: F401 - the watch fixture

import pytest


@pytest.fixture
def base(fleet_file):
    """The example fleet moved into team/base.yaml; fleet.yaml only includes it."""
    path = fleet_file.parent / "team" / "base.yaml"
    path.parent.mkdir()
    path.write_text(EXAMPLE_FLEET.read_text())
    fleet_file.write_text("include: [team/base.yaml]\n")
    return path


def test_saving_an_included_base_fleet_reapplies(watch, home, base):  # noqa: F811
    h = watch()
    assert codex_model(home) == "gpt-4o-mini"
    base.write_text(with_fast("intel/llama-7b"))
    h.wait_event("applied", 2)
    h.settle()
    assert codex_model(home) == "intel/llama-7b"
    changed = h.of("changed")
    assert changed and {e.data["source"] for e in changed} == {"fleet"}
    assert str(base.resolve()) in {e.data["path"] for e in changed}


def test_a_base_fleet_included_later_is_watched(watch, home, fleet_file, base):  # noqa: F811
    h = watch()
    extra = fleet_file.parent / "extra.yaml"
    extra.write_text("routes: {fast: intel/llama-7b}\n")
    fleet_file.write_text("include: [team/base.yaml, extra.yaml]\n")
    h.wait_event("applied", 2)
    h.settle()
    assert codex_model(home) == "intel/llama-7b"
    extra.write_text("routes: {fast: nvidia/deepseek-r1}\n")
    h.wait_event("applied", 3)
    h.settle()
    assert codex_model(home) == "nvidia/deepseek-r1"


def test_the_schema_declares_include(taosync):
    """Editors validating against the schema stop flagging ``include:``."""
    import json

    schema = json.loads(taosync("schema").out)
    assert schema["properties"]["include"]["type"] == "array"
    assert schema["properties"]["include"]["items"] == {"type": "string"}
    assert "watch" in schema["properties"]["include"]["description"]
