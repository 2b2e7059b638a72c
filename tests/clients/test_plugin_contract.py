"""Every client the registry hands out is a whole ClientPlugin: no member is optional to
its callers (the defaults a module may leave out are filled in once, by the registry)."""

from __future__ import annotations

import types

import pytest

from taosync.clients import registry
from taosync.clients.plugin import DEFAULTS, MEMBERS, ClientPlugin, completed


@pytest.mark.parametrize("client_id", registry.ids())
def test_every_registered_client_is_a_whole_plugin(client_id):
    client = registry.get(client_id)
    assert isinstance(client, ClientPlugin)
    assert all(hasattr(client, name) for name in MEMBERS)
    assert client.ID == client_id
    assert isinstance(client.MCP, bool) and isinstance(client.BINARY, str)
    assert all(len(row) == 3 for row in client.OWNED_FILES)
    assert isinstance(client.doctor(None, None, {}), list)


def test_what_a_module_leaves_out_gets_the_one_default():
    module = types.SimpleNamespace(**{name: object() for name in MEMBERS
                                      if name not in DEFAULTS})
    whole = completed(module)
    assert whole.LOCATION_FILES == () and whole.REQUIRES == {} and whole.MCP is True
    assert whole.doctor(None, None, {}) == []


def test_a_module_missing_a_required_member_is_refused_by_name():
    module = types.SimpleNamespace(**{name: object() for name in MEMBERS
                                      if name not in DEFAULTS and name != "render"})
    with pytest.raises(TypeError, match="lacks render"):
        completed(module)
