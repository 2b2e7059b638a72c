"""Adding a client is its module, one registry line and its test file: a toy client,
defined here and registered through the test-only hook (never in the shipped registry),
gets its place in the schema and passes the same contract as the shipped clients."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from contract import check_contract
from taosync.clients import registry
from taosync.clients.base import (ClientEnv, Observation, OnDisk, Option, Seen, probe_specs,
                                  read_plain, slot_option)
from taosync.engine.patch import Patch
from taosync.fleet.secrets import Secret

# -- the toy client: everything a client module declares -----------------------------------

ID = "toy"
TITLE = "Toy"
SUMMARY = "Toy (OpenAI chat): model."
TARGETS = ["~/.toy/config.toml ($TOY_HOME): base_url, model, api_key"]
LOCATION_VARS = ("TOY_HOME",)
OPTIONS = (
    slot_option("model", "Route or model id (default: default_route)."),
    Option("verbose", bool, False, "Ask the toy to talk more."),
)


def toy_home(env: ClientEnv) -> Path:
    return env.location("TOY_HOME") or env.home / ".toy"


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    return [toy_home(env)], []


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.toy
    values = {("base_url",): fleet.openai_url, ("model",): fleet.model_for(cfg.model),
              ("api_key",): key}
    return [Patch(toy_home(env) / "config.toml", "toml", values, ID, secret=True)]


def probes(fleet, key: Secret, env: ClientEnv):
    return probe_specs(fleet, ID, fleet.distinct_models([fleet.clients.toy.model]),
                       protocol="openai-chat", base_url=fleet.openai_url,
                       path="/chat/completions")


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    return OnDisk(ID, probes=probes(fleet, key, env))


def observe(env: ClientEnv) -> Observation:
    obs = Observation(ID, protocol="openai")
    path = toy_home(env) / "config.toml"
    data = read_plain(path, "toml", obs)
    if isinstance(data, dict):
        for name, bucket in (("base_url", obs.urls), ("api_key", obs.keys)):
            if isinstance(data.get(name), str):
                value = Secret(data[name], f"{path} {name}") if name == "api_key" \
                    else data[name]
                bucket.append(Seen(value, path, name))
        if isinstance(data.get("model"), str):
            obs.slots["model"] = [Seen(data["model"], path, "model")]
    return obs


TOY = sys.modules[__name__]


@pytest.fixture
def toy_registered(monkeypatch):
    """The toy in the registry and in the schema the run path reads, for one test."""
    from taosync import schema_build
    from taosync.fleet import logic, schema

    def caches_clear():
        schema.client_entries.cache_clear()
        logic.client_attrs.cache_clear()

    registry.register(types.SimpleNamespace(**{name: getattr(TOY, name) for name in (
        "ID", "TITLE", "SUMMARY", "TARGETS", "LOCATION_VARS", "OPTIONS", "render", "probes",
        "on_disk", "observe", "locations")}))
    generated = schema_build.generate(schema_build.fleet_model())
    monkeypatch.setattr(schema, "load", lambda: generated)
    caches_clear()
    yield generated
    registry.unregister(ID)
    caches_clear()


def test_toy_is_not_shipped():
    assert ID not in registry.CLIENTS
    assert ID not in registry.ids()


def test_toy_gets_its_place_in_the_schema(toy_registered):
    entry = toy_registered["properties"]["clients"]
    clients = toy_registered["$defs"]["Clients"]["properties"]
    assert clients[ID]["description"] == SUMMARY, entry
    toy = toy_registered["$defs"]["Toy"]["properties"]
    assert toy["model"]["x-slot"] == "one"
    assert toy["verbose"] == {"description": "Ask the toy to talk more.", "type": "boolean",
                              "default": False}
    assert {"enabled", "secrets", "mcp"} <= set(toy)


def test_toy_slot_is_checked_like_any_other(toy_registered, taosync, fleet_file):
    from contract import write_fleet

    write_fleet(fleet_file, ID, {"model": "balancd"})
    r = taosync("validate")
    assert r.rc == 2
    assert "clients.toy.model" in r.err and "did you mean 'balanced'" in r.err


def test_toy_keeps_the_contract(toy_registered, taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, ID, {"model": "fast"}, reference_off_disk=False)


def test_toy_location_variable_is_cleared_by_the_fixtures(toy_registered):
    import conftest

    assert "TOY_HOME" in conftest.client_location_vars()
