"""Adding a client is its module, one registry line and its test file: a toy client,
defined here and registered through the test-only hook (never in the shipped registry),
gets its place in the schema and passes the same contract as the shipped clients: the
per-client ``check_contract`` and every check of the contract over the registry
(``test_registry_contract.py``), run here for it as they run for each shipped client."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import test_registry_contract as registry_contract
from contract import check_contract
from test_registry_contract import fleet_file  # noqa: F401 - the registry contract's fleet
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
#: the toy takes no MCP servers: the registry contract checks that none is written
MCP = False
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
    if fleet.gateway.headers:
        env.warnings.append(f"{ID}: the toy has no setting for extra request headers")
    if fleet.secrets_for(cfg) == "reference":  # it reads no variable: say so, never silently
        env.warnings.append(f"{ID}: secrets: reference cannot keep the key off disk for the "
                            f"toy; wrote it inline (mode 0600)")
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
    from taosync.fleet import logic, model, schema, schema_build

    def caches_clear():
        schema.client_entries.cache_clear()
        logic.client_attrs.cache_clear()

    registry.register(types.SimpleNamespace(**{name: getattr(TOY, name) for name in (
        "ID", "TITLE", "SUMMARY", "TARGETS", "LOCATION_VARS", "MCP", "OPTIONS", "render",
        "probes", "on_disk", "observe", "locations")}))
    generated = schema_build.generate(model.fleet_model())
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


#: every check of the contract over the registry, with the arguments of each of its runs
REGISTRY_CHECKS = {
    "render-reads-back-inline": (registry_contract.test_what_render_writes_reads_back,
                                 {"mode": "inline"}),
    "render-reads-back-reference": (registry_contract.test_what_render_writes_reads_back,
                                    {"mode": "reference"}),
    "import-round-trip": (registry_contract.test_import_round_trip, {}),
    "inline-secrets": (
        registry_contract.test_inline_writes_every_secret_only_where_no_one_else_reads, {}),
    "reference-secrets": (
        registry_contract.test_reference_writes_each_secret_as_a_reference_or_warns, {}),
    "gateway-headers": (
        registry_contract.test_gateway_headers_are_written_or_said_to_be_unsendable, {}),
    "destroy-fresh-home": (registry_contract.test_destroy_gives_the_home_back_byte_for_byte,
                           {"seeded": False}),
    "destroy-user-files": (registry_contract.test_destroy_gives_the_home_back_byte_for_byte,
                           {"seeded": True}),
}


def test_every_registry_check_runs_for_the_toy():
    checks = {name for name in dir(registry_contract) if name.startswith("test_")}
    assert checks == {fn.__name__ for fn, _ in REGISTRY_CHECKS.values()}


@pytest.mark.parametrize("check", list(REGISTRY_CHECKS))
def test_toy_keeps_the_registry_contract(toy_registered, check, taosync, home, fleet_file,
                                         tmp_path):
    fn, args = REGISTRY_CHECKS[check]
    fixtures = {"client_id": ID, "taosync": taosync, "home": home, "fleet_file": fleet_file,
                "tmp_path": tmp_path}
    fn(**{name: fixtures[name] for name in fixtures if name in fn.__code__.co_varnames
          [:fn.__code__.co_argcount]}, **args)
