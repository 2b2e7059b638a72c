"""The shipped example fleet.yaml (README's quick start applies it) works as shipped.

The rest of the suite runs on its own copy (conftest.EXAMPLE_FLEET) and may pin that
copy's lines and counts; these tests read everything they count from the shipped file
and the registry, so a client added to it (or to the registry) changes nothing here."""

from __future__ import annotations

import json

from ruamel.yaml import YAML

from conftest import SHIPPED_EXAMPLE, TEST_KEY
from taosync.clients import registry

DATA = YAML(typ="safe").load(SHIPPED_EXAMPLE.read_text(encoding="utf-8"))


def test_it_names_only_registered_clients_and_catalogue_routes():
    assert set(DATA["clients"]) <= set(registry.ids())
    assert set(DATA["routes"].values()) <= set(DATA["models"])
    assert DATA["default_route"] in DATA["routes"]


def test_it_applies_and_every_client_it_names_passes_verify_against_the_stand_in(
        taosync, home, tmp_path):
    from taosync.stub import Stub

    fleet = tmp_path / "shipped.yaml"
    with Stub(key=TEST_KEY, models=list(DATA["models"])) as stub:
        fleet.write_text(SHIPPED_EXAMPLE.read_text(encoding="utf-8").replace(
            DATA["gateway"]["base_url"], stub.root).replace(
            DATA["gateway"]["gemini_base_url"], stub.root))
        r = taosync("apply", "--json", config=fleet)
        assert r.rc == 0, r.both
        report = json.loads(r.out)
    planned = {c for f in report["files"] for c in f["clients"]}
    verified = {c for res in report["verify"]["results"] for c in res["clients"]}
    assert planned == verified == set(DATA["clients"])
    assert report["verify"]["failed"] == 0
    again = taosync("apply", config=fleet)
    assert again.rc == 0 and "nothing to do" in again.out, again.both
