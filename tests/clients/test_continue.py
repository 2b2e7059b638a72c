"""continue: exact patches and probes, import, the contract every client keeps, and the
real ``cn``."""

from __future__ import annotations

import pytest

from conftest import TEST_KEY
from helpers import (
    KEY, KEY_ONE, LLAMA, MINI, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, fleet, imported,
    populate, round_trip, write)
from real import binary, run_real_client
from contract import check_contract
from taosync.clients import continue_
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.base import Match


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "continue",
                   {"roles": {"chat": "balanced", "autocomplete": "fast"}},
                   reference_off_disk=False)


# -- render and probes

def E(model):
    return ("models", Match("name", model))


M = ("mcpServers", Match("name", "taotoken-router"))


def test_continue_inline(clients_env, tmp_path):
    (config,) = continue_.render(fleet(), KEY, clients_env)
    assert config.path == tmp_path / ".continue" / "config.yaml"
    assert config.format == "yaml" and config.secret
    assert config.skeleton == {("name",): "Local Config", ("version",): "1.0.0",
                               ("schema",): "v1"}
    assert config.values == {
        E(SONNET) + ("provider",): "openai", E(SONNET) + ("model",): SONNET,
        E(SONNET) + ("apiBase",): V1, E(SONNET) + ("apiKey",): KEY,
        E(SONNET) + ("roles",): ["chat", "edit"],
        E(MINI) + ("provider",): "openai", E(MINI) + ("model",): MINI,
        E(MINI) + ("apiBase",): V1, E(MINI) + ("apiKey",): KEY,
        E(MINI) + ("roles",): ["autocomplete"],
        M + ("command",): "npx", M + ("args",): ROUTER_ARGS, M + ("env",): ROUTER_ENV,
    }
    assert clients_env.warnings == []


def test_continue_default_roles_reference_headers(clients_env, tmp_path):
    f = fleet(secrets="reference", gateway__headers={"X-Team": "core"}, mcp_servers={},
              clients__continue={"secret_name": "TAO_KEY"})
    config, dotenv = continue_.render(f, KEY, clients_env)
    assert config.values == {
        E(SONNET) + ("provider",): "openai", E(SONNET) + ("model",): SONNET,
        E(SONNET) + ("apiBase",): V1, E(SONNET) + ("apiKey",): "${{ secrets.TAO_KEY }}",
        E(SONNET) + ("roles",): ["chat", "edit", "apply", "summarize"],
        E(SONNET) + ("requestOptions", "headers"): {"X-Team": "core"},
    }
    assert not config.secret
    assert dotenv.path == tmp_path / ".continue" / ".env"
    assert dotenv.format == "dotenv" and dotenv.values == {("TAO_KEY",): KEY}


def test_continue_roles_in_canonical_order(clients_env):
    f = fleet(clients__continue={"roles": {"summarize": "fast", "apply": "fast",
                                           "chat": "fast", "embed": "batch"}})
    values = continue_.render(f, KEY, clients_env)[0].values
    assert values[E(MINI) + ("roles",)] == ["chat", "apply", "summarize"]
    assert values[E(LLAMA) + ("roles",)] == ["embed"]
    assert [(p.route, p.model) for p in continue_.probes(f, KEY, clients_env)] == [
        ("fast", MINI), ("batch", LLAMA)]


def test_continue_mcp_shapes(clients_env):
    f = fleet(mcp_servers={
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "cwd": "/srv"},
    })
    values = continue_.render(f, KEY, clients_env)[0].values
    mcp = {k: v for k, v in values.items() if k[0] == "mcpServers"}

    def m(name):
        return ("mcpServers", Match("name", name))

    assert mcp == {
        m("remote") + ("url",): "https://mcp.example/mcp",
        m("remote") + ("type",): "streamable-http",
        m("remote") + ("requestOptions", "headers"): {"A": "b"},
        m("old") + ("url",): "https://mcp.example/sse", m("old") + ("type",): "sse",
        m("local") + ("command",): "srv", m("local") + ("args",): [],
        m("local") + ("cwd",): "/srv",
    }


def test_continue_global_dir(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CONTINUE_GLOBAL_DIR": str(tmp_path / "c")},
                    sandboxed=True)
    f = fleet(secrets="reference")
    assert [p.path for p in continue_.render(f, KEY, env)] == [
        tmp_path / "c" / "config.yaml", tmp_path / "c" / ".env"]
    outside = ClientEnv(home=tmp_path / "h", environ={"CONTINUE_GLOBAL_DIR": "/srv/c"},
                        sandboxed=True)
    assert continue_.render(fleet(), KEY, outside)[0].path == \
        tmp_path / "h" / ".continue" / "config.yaml"
    assert any("CONTINUE_GLOBAL_DIR" in w for w in outside.warnings)


def test_continue_probes(clients_env):
    assert continue_.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("continue", route, model, "openai-chat", V1, V1 + "/chat/completions",
                  "bearer")
        for route, model in (("balanced", SONNET), ("fast", MINI))
    ]


# -- platforms -----------------------------------------------------------------------


# -- import

def test_continue_round_trip_keeps_other_models(run, home, tmp_path, monkeypatch):
    populate(home, "continue")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["clients"]["continue"]["roles"] == {
        "chat": "chat", "edit": "chat", "apply": "chat", "autocomplete": "autocomplete"}
    assert "llama3.1:8b" not in fleet["models"]
    assert any("Local Llama" in f["message"] for f in data["findings"])
    cont = [f for f in plan["files"] if f["display"] == "~/.continue/config.yaml"][0]
    assert not any("Local Llama" in c["key"] for c in cont["changes"])


def test_continue_entry_named_apart_from_its_model_is_flagged(run, home):
    write(home / ".continue/config.yaml", """name: c
version: 1.0.0
schema: v1
models:
  - name: GW Sonnet
    provider: openai
    model: claude-sonnet-4
    apiBase: https://gw.example.com/api/v1
""")
    r, data = imported(run)
    assert r.rc == 0
    assert any("rename it to 'claude-sonnet-4'" in f["message"] for f in data["findings"])


# ------------------------------------------------------------------------- the CLI


# -- the real client

CN = binary("TAOSYNC_TEST_CN_BIN", "cn")


@pytest.mark.skipif(CN is None, reason="cn (@continuedev/cli 1.5.47) is not installed; "
                    "set TAOSYNC_TEST_CN_BIN")
@pytest.mark.parametrize("secrets", ["inline", "reference"])
def test_real_cn_answers_through_the_stand_in(taosync, home, fleet_file, secrets):
    """``cn -p`` with only taosync's ~/.continue/config.yaml (and, by reference, .env)."""
    done, seen = run_real_client(taosync, fleet_file, home, CN, ["-p", "Reply with OK."],
                                 "continue", {"roles": {"chat": "main"}}, secrets=secrets,
                                 headers={"X-Team": "core"})
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert "gw-main answered through the taosync stand-in" in done.stdout
    chats = [r for r in seen if r.method == "POST"]
    assert chats and all(r.path == "/api/v1/chat/completions" and r.auth == "ok"
                         and r.body["model"] == "gw-main" for r in chats)
    assert all(r.headers.get("x-team") == "core" for r in chats)  # requestOptions.headers
    config = (home / ".continue/config.yaml").read_text()
    assert (TEST_KEY in config) == (secrets == "inline")
