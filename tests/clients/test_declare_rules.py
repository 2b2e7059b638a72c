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
    assert any("${gateway.key}" in w and str(path) in w for w in warnings) or \
        any("wrote the key" in w and "inline" in w for w in warnings), warnings
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
