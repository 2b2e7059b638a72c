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
from taosync.clients import declare
from taosync.clients.base import ClientEnv, Option, slot_option
from taosync.clients.plugin import MEMBERS, ClientPlugin, no_findings

# -- the toy client: everything a client module declares -----------------------------------

ID = "toy"
TITLE = "Toy"
BINARY = "toy"
SUMMARY = "Toy (OpenAI chat): model."
TARGETS = ["~/.toy/config.toml ($TOY_HOME): base_url, model, api_key"]
OWNED_FILES = (("Toy (1.0)", "`~/.toy/config.toml` (`$TOY_HOME`)",
                "`base_url`, `model`, `api_key`"),)
LOCATION_VARS = ("TOY_HOME",)
KEY_REFERENCE = "inline (config.toml, 0600), with a warning."
INSTALL = ("npm", "toy@1.0.0", "")
LOCATION_FILES: tuple[str, ...] = ()
#: the toy takes no MCP servers: the registry contract checks that none is written
MCP = False
REQUIRES: dict[str, str] = {}
OPTIONS = (
    slot_option("model", "Route or model id (default: default_route)."),
    Option("verbose", bool, False, "Ask the toy to talk more."),
)


def toy_home(env: ClientEnv) -> Path:
    return env.location("TOY_HOME") or env.home / ".toy"


CLIENT = declare.Declared(
    ID, TITLE, primary="config",
    files={"config": declare.File(lambda env: toy_home(env) / "config.toml", "toml")},
    bindings=(declare.url("config", "base_url"), declare.slot("config", "model"),
              declare.key("config", "api_key")),
    key_rule=declare.KeyRule((), "it reads the key from its config.toml only"),
    sends_headers=False,
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
doctor = no_findings


TOY = sys.modules[__name__]


@pytest.fixture
def toy_registered(monkeypatch):
    """The toy in the registry and in the schema the run path reads, for one test."""
    from taosync import schema_build
    from taosync.fleet import logic, schema

    def caches_clear():
        schema.client_entries.cache_clear()
        logic.client_attrs.cache_clear()

    registry.register(types.SimpleNamespace(**{name: getattr(TOY, name) for name in MEMBERS
                                               if hasattr(TOY, name)}))  # the rest: DEFAULTS
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


def test_toy_is_a_whole_client_plugin(toy_registered):
    """The registered toy has every member of the client contract: what it declares,
    and the defaults for what it leaves out, as a shipped client does."""
    toy = registry.get(ID)
    assert isinstance(toy, ClientPlugin) and toy.MCP_REFERENCE == ""


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
