"""The run-time view answers exactly as the pydantic model does, on every fleet shape."""

from __future__ import annotations

import copy
import json

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET
from taosync.clients.base import ClientEnv
from taosync.clients.registry import all as all_clients
from taosync.fleet import schema
from taosync.schema_build import Fleet
from taosync.fleet.secrets import Secret
from taosync.fleet.view import FleetView

KEY = Secret("sk-view-0123456789abcdef")
BASE = YAML(typ="safe").load(EXAMPLE_FLEET.read_text())


def variant(**changes) -> dict:
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return data


FLEETS = {
    "example": BASE,
    "reference": variant(secrets="reference"),
    "headers+overrides": variant(
        gateway__headers={"X-Team": "a"},
        gateway__openai_base_url="https://oa.example/v1",
        gateway__anthropic_base_url="https://an.example"),
    "http-mcp": variant(mcp_servers={"remote": {"url": "https://mcp.example/mcp",
                                                "headers": {"A": "b"}, "transport": "sse"},
                                     "local": {"command": "x", "cwd": "/tmp"}}),
    "disabled+editors": variant(clients__cline={"enabled": False},
                                clients__codex={"model": "deep", "secrets": "reference",
                                                "provider_id": "gw", "mcp": False},
                                clients__continue={"roles": {"chat": "fast"}, "secret_name": "K"}),
    "minimal": {"version": 1, "gateway": {"base_url": "https://g.example", "key": "${env:K}"},
                "models": {"m": {}}},
    "no-clients-entries": variant(clients={"claude-code": None, "codex": {}}),
    "context-windows": variant(models={"gpt-4o-mini": {"context_window": 128000},
                                       "claude-sonnet-4-20250514": {"backend": "x"},
                                       "nvidia/deepseek-r1": {"context_window": 64000},
                                       "intel/llama-7b": {}}),
    "cline-editors": variant(clients__cline={"editors": ["cursor", "code"], "legacy": False}),
    "no-verify-block": variant(verify=None, routes=None, default_route=None,
                               clients={"claude-code": {"model": "gpt-4o-mini"}},
                               mcp_servers=None),
}


@pytest.mark.parametrize("name", FLEETS)
def test_view_and_model_agree(name, tmp_path):
    data = FLEETS[name]
    model = Fleet.model_validate(copy.deepcopy(data))
    view = FleetView(copy.deepcopy(data), schema.load())
    assert view.plain() == model.model_dump(by_alias=True)
    assert view.enabled_clients().keys() == model.enabled_clients().keys()
    assert (view.openai_url, view.anthropic_url) == (model.openai_url, model.anthropic_url)
    assert {n: s.plain() for n, s in view.mcp_servers_expanded(KEY).items()} == \
        {n: s.model_dump() for n, s in model.mcp_servers_expanded(KEY).items()}
    registry = all_clients()
    for client in model.enabled_clients():
        env_m = ClientEnv(home=tmp_path, environ={}, platform="linux")
        env_v = ClientEnv(home=tmp_path, environ={}, platform="linux")
        got = [(p.path, p.format, p.values, p.skeleton, p.secret)
               for p in registry[client].render(view, KEY, env_v)]
        want = [(p.path, p.format, p.values, p.skeleton, p.secret)
                for p in registry[client].render(model, KEY, env_m)]
        assert got == want, client
        assert env_v.warnings == env_m.warnings
        assert registry[client].probes(view, KEY, env_v) == \
            registry[client].probes(model, KEY, env_m)


def test_view_never_imports_pydantic():
    import subprocess
    import sys

    code = ("import sys, copy; from taosync.fleet.view import FleetView; "
            "from taosync.fleet import schema; "
            f"v = FleetView({json.dumps(BASE)!s}, schema.load()); v.plain(); "
            "assert 'pydantic' not in sys.modules, 'pydantic was imported'")
    subprocess.run([sys.executable, "-c", code.replace("true", "True").replace("null", "None")],
                   check=True, timeout=120)
