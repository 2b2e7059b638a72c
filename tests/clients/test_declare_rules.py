"""Rules declare.py keeps for every declared client (issue 24, Build 2), whatever the
client: under ``secrets: reference`` an MCP server that writes the gateway key into a file
is named in a warning, unless the key went inline for the client anyway (and it was warned
about that)."""

from __future__ import annotations

import pytest

from helpers import KEY, fleet
from taosync.clients import declare, registry


def _declared_with_mcp() -> list[str]:
    out = []
    for client_id in registry.ids():
        client = getattr(registry.get(client_id), "CLIENT", None)
        if isinstance(client, declare.Declared) and client.mcp is not None:
            out.append(client_id)
    return out


@pytest.mark.parametrize("client_id", _declared_with_mcp())
def test_gateway_key_written_by_an_mcp_server_is_named(client_id, clients_env):
    client = registry.get(client_id).CLIENT
    f = fleet(secrets="reference", gateway__key="${env:TAOTOKEN_API_KEY}", mcp_servers={
        "router": {"command": "npx", "args": ["-y", "router"],
                   "env": {"ROUTER_KEY": "${gateway.key}"}}})
    patches = client.render(f, KEY, clients_env)
    path = client.file(client.mcp_file, clients_env)
    (mcp,) = [p for p in patches if p.path == path]
    if not KEY.found_in(list(mcp.values.values())):
        return  # written as the client's own reference
    warnings = clients_env.warnings
    assert any("${gateway.key}" in w and "MCP settings" in w for w in warnings) or \
        any("will be written inline" in w for w in warnings), warnings
    assert not any(str(clients_env.home) in w for w in warnings)  # ~/ paths only
    assert not any(KEY.reveal() in w for w in warnings)


def test_a_listed_mcp_name_imports_its_first_entry(tmp_path):
    """In a list of servers by name the client's first entry is the one taosync writes to
    (a Match finds the first), so import reads that one too."""
    from taosync.clients.base import Observation

    shape = declare.McpShape(("servers",), listed=True)
    obs = Observation("toy")
    declare.read_mcp(shape, {"servers": [{"name": "a", "command": "first"},
                                         {"name": "a", "command": "second"}]},
                     tmp_path / "f.json", obs)
    assert obs.mcp_servers["a"].value == {"command": "first"}


def test_a_switched_off_mcp_entry_is_named_not_imported(tmp_path):
    from taosync.clients.base import Observation

    shape = declare.McpShape(("mcp",), disabled={"enabled": False})
    obs = Observation("toy")
    declare.read_mcp(shape, {"mcp": {"off": {"command": "x", "enabled": False},
                                     "on": {"command": "y", "enabled": 0}}},
                     tmp_path / "f.json", obs)
    assert list(obs.mcp_servers) == ["on"]
    assert obs.notes == [f"{tmp_path / 'f.json'}: MCP server 'off' is disabled; not imported"]


def _toy_with_an_opt(home) -> declare.Declared:
    """A client whose provider entry is named by its option ``provider_id`` and, on disk,
    by the file's ``use`` key (Codex's model_provider) or ``model``'s prefix (opencode)."""
    from taosync.clients.base import Option

    provider = ("providers", declare.Opt("provider_id", read=("use",)))
    return declare.Declared(
        "toy", "Toy", files={"c": declare.File(lambda env: env.home / "c.json", "json")},
        primary="c", bindings=(declare.slot("c", "model", prefix="{provider_id}/"),
                               declare.url("c", *provider, "base"),
                               declare.key("c", *provider, "key")),
        key_rule=declare.KeyRule(("env", "file"), forms={"env": "{{env:{}}}",
                                                        "file": "{{file:{}}}"}),
        options=(Option("provider_id", str, "gw", "", pattern=r"^[a-z]+$",
                        reserved={"builtin": "the client's own"}),))


@pytest.mark.parametrize("use, imported", [("mine", "mine"), ("builtin", None),
                                           ("Not-A-Name", None)])
def test_an_opt_is_read_back_from_the_key_naming_it(tmp_path, use, imported):
    """Import follows the key that names the entry, reads the table's rows there, strips
    the slot prefix the option spells, and imports the option only when it takes the
    value (its pattern, not reserved)."""
    import json

    from taosync.clients.base import ClientEnv

    (tmp_path / "c.json").write_text(json.dumps({
        "use": use, "model": f"{use}/gpt-x",
        "providers": {use: {"base": "http://127.0.0.1:9/v1", "key": "{env:GW_KEY}"}}}))
    obs = _toy_with_an_opt(tmp_path).observe(ClientEnv(home=tmp_path, environ={}))
    assert [(s.value, s.key) for s in obs.urls] == [("http://127.0.0.1:9/v1",
                                                     f"providers.{use}.base")]
    assert obs.slots["model"][0].value == "gpt-x"
    assert [s.value for s in obs.key_envs] == ["GW_KEY"] and obs.keys == []
    assert obs.settings.get("provider_id") == imported
    assert obs.settings["secrets"] == "reference"


def test_a_key_form_spells_and_reads_back_each_reference(tmp_path):
    """KeyRule.forms: the same form writes a reference and reads it back; a file is
    written as an absolute path (the client does not run in the taosync home)."""
    from taosync.clients.base import ClientEnv
    from taosync.fleet.secrets import parse_reference

    rule = _toy_with_an_opt(tmp_path).key_rule
    env = ClientEnv(home=tmp_path, environ={})
    assert rule.spell(parse_reference("${env:GW_KEY}"), env) == "{env:GW_KEY}"
    spelled = rule.spell(parse_reference("${file:~/gw.key}"), env)
    assert spelled == f"{{file:{tmp_path / 'gw.key'}}}"
    assert rule.parse(spelled) == ("file", str(tmp_path / "gw.key"))
    assert rule.parse("{env:GW_KEY}") == ("env", "GW_KEY")
    assert rule.spell(parse_reference("${cmd:pass gw}"), env) is None
    assert rule.parse("sk-literal") is None and rule.parse("{env:}") is None


def test_inline_only_rows_and_the_key_variable(clients_env):
    """Codex: requires_openai_auth and auth.json are written for an inline key only;
    under secrets: reference with ${env:NAME}, env_key = NAME instead."""
    from taosync.clients import codex

    provider = ("model_providers", "taotoken")
    inline = {p.path.name: p.values for p in codex.CLIENT.render(fleet(), KEY, clients_env)}
    assert inline["config.toml"][provider + ("requires_openai_auth",)] is True
    assert provider + ("env_key",) not in inline["config.toml"]
    assert inline["auth.json"] == {("auth_mode",): "apikey", ("OPENAI_API_KEY",): KEY}
    f = fleet(secrets="reference", gateway__key="${env:GW_KEY}")
    ref = {p.path.name: p.values for p in codex.CLIENT.render(f, KEY, clients_env)}
    assert ref["config.toml"][provider + ("env_key",)] == "GW_KEY"
    assert provider + ("requires_openai_auth",) not in ref["config.toml"]
    assert "auth.json" not in ref


def test_a_server_in_two_mcp_files_is_the_first_files_and_a_differing_one_is_named(tmp_path):
    """A client reading its servers from several files (Cline: its store and each
    editor's) imports a name from the first file that has it; the same name with other
    settings in a later file is named in a note, the same settings are not."""
    from taosync.clients.base import Observation

    shape = declare.McpShape(("servers",), nest="transport")
    obs = Observation("toy")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    declare.read_mcp(shape, {"servers": {"s": {"transport": {"command": "one"}},
                                         "t": {"command": "flat"}}}, first, obs)
    declare.read_mcp(shape, {"servers": {"s": {"command": "two"}, "t": {"command": "flat"}}},
                     second, obs)
    assert {n: (s.value, s.file) for n, s in obs.mcp_servers.items()} == {
        "s": ({"command": "one"}, first), "t": ({"command": "flat"}, first)}
    assert obs.notes == [f"{second}: MCP server 's' differs from the one in {first}; "
                         f"imported the one in {first}"]


def test_a_form_reads_back_with_any_blanks_where_it_has_a_space():
    """Continue's ``${{ secrets.NAME }}``: Continue reads it with or without the blanks,
    so import does too; a form without spaces (opencode's) stays exact."""
    rule = declare.KeyRule(forms={"env": "${{{{ secrets.{} }}}}"})
    for text in ("${{ secrets.GW }}", "${{secrets.GW}}", "${{  secrets.GW\t}}"):
        assert rule.parse(text) == ("env", "GW"), text
    assert rule.parse("${{ secrets. }}") is None and rule.parse("{{ secrets.GW }}") is None
    assert declare.KeyRule(forms={"env": "{{env:{}}}"}).parse("{ env:GW}") is None


def test_env_as_spells_only_an_env_reference():
    """An MCP secret a client expands itself is written in its spelling, around the
    prefix and suffix it had; another kind of reference is not (it stays inline)."""
    from taosync.fleet.logic import McpSecret
    from taosync.fleet.secrets import Secret, parse_reference

    spell = declare.env_as("${{{}}}")

    def secret(text: str) -> McpSecret:
        return McpSecret(f"Bearer {text}", "Bearer ", parse_reference(text), "",
                         Secret("tok"))

    assert spell(secret("${env:TOKEN}")) == "Bearer ${TOKEN}"
    assert declare.env_colon(secret("${env:TOKEN}")) == "Bearer ${env:TOKEN}"
    assert spell(secret("${file:~/t}")) is None
