"""continue: exact patches and probes, import, the contract every client keeps, and the
real ``cn``."""

from __future__ import annotations

import pytest

from conftest import TEST_KEY
from helpers import (
    KEY, KEY_ONE, LLAMA, MINI, ROOT, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, fleet, imported,
    populate, round_trip, write)
from real import binary, run_real_client
from contract import check_contract
from taosync.clients import continue_
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.base import Match
from taosync.fleet.secrets import Secret


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
    assert config.lead == (E(SONNET), E(MINI))  # Continue uses the first model with a role
    assert clients_env.warnings == []


def test_continue_default_roles_reference_headers(clients_env, tmp_path):
    f = fleet(secrets="reference", gateway__headers={"X-Team": "core"}, mcp_servers={},
              clients__continue={"secret_name": "TAO_KEY"})
    config, dotenv = continue_.render(f, KEY, clients_env)
    assert config.values == {
        E(SONNET) + ("provider",): "openai", E(SONNET) + ("model",): SONNET,
        E(SONNET) + ("apiBase",): V1, E(SONNET) + ("apiKey",): "${{ secrets.TAO_KEY }}",
        E(SONNET) + ("roles",): ["chat", "edit", "apply", "summarize"],
        E(SONNET) + ("requestOptions", "headers"): {"X-Team": Secret("core")},
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


# -- the model Continue really uses: the first with a role ---------------------------

USERS_CONFIG = """name: Mine
version: 1.0.0
schema: v1
models:
  # my own local model: Continue picks the first model with a role
  - name: My Local
    provider: ollama
    model: llama3.1:8b
  - name: My Embedder
    provider: ollama
    model: nomic-embed-text
    roles: [embed]
"""


def model_names(path) -> list[str]:
    from ruamel.yaml import YAML

    return [m["name"] for m in YAML(typ="safe").load(path.read_text())["models"]]


def test_apply_puts_taosyncs_entries_before_the_users_own(taosync, home, fleet_file):
    """A user's chat model listed first would be the one Continue uses: apply puts
    taosync's entries first (in Continue's role order) and leaves the user's entries,
    their order and their comment as they were."""
    from contract import write_fleet

    config = home / ".continue/config.yaml"
    write(config, USERS_CONFIG)
    write_fleet(fleet_file, "continue", {"roles": {"chat": "balanced", "autocomplete": "fast"}})
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert model_names(config) == [SONNET, MINI, "My Local", "My Embedder"]
    text = config.read_text()
    assert text.index("# my own local model") < text.index("- name: My Local") and \
        text.index("# my own local model") > text.index(f"- name: {MINI}")
    assert USERS_CONFIG.split("models:\n")[1].split("  - name: My Local\n")[1] in text
    assert taosync("plan", "--check").rc == 0
    assert taosync("status").rc == 0


def test_a_users_entry_moved_first_is_pending_and_verify_says_continue_uses_it(
        taosync, home, fleet_file):
    """After apply, the user moves their own chat model above taosync's: status and
    plan --check (fast path and full) say a change is pending, verify fails naming the
    entry Continue uses instead, and apply moves taosync's entry back up."""
    import subprocess
    import sys

    from contract import write_fleet
    from taosync.stub import Stub

    config = home / ".continue/config.yaml"
    write(config, USERS_CONFIG)
    with Stub(key=TEST_KEY, models=[SONNET, MINI]) as stub:
        write_fleet(fleet_file, "continue", {"roles": {"chat": "balanced"}})
        fleet_file.write_text(fleet_file.read_text().replace(ROOT, stub.root))
        assert taosync("apply", "--no-verify").rc == 0
        assert taosync("verify").rc == 0
        text = config.read_text()
        mine = "  - name: My Local\n    provider: ollama\n    model: llama3.1:8b\n"
        config.write_text(text.replace(mine, "").replace("models:\n", "models:\n" + mine))
        assert model_names(config)[0] == "My Local"

        r = taosync("verify")
        assert r.rc == 1, r.both
        assert (f"~/.continue/config.yaml models[name=My Local] comes before taosync's "
                f"models[name={SONNET}], so Continue uses it for chat: taosync apply puts "
                f"taosync's entries first") in r.both
        assert not [p for p in stub.posts() if p.body.get("model") == "llama3.1:8b"]
        for argv in (["plan", "--check"], ["status"]):
            fast = subprocess.run([sys.executable, "-m", "taosync", *argv, "--home", str(home),
                                   "-c", str(fleet_file)], capture_output=True, text=True)
            assert fast.returncode == 1, fast.stdout + fast.stderr
        r = taosync("status")
        assert r.rc == 1
        assert (f"drift    ~/.continue/config.yaml: models: [\"{SONNET}\"] → "
                f"[\"My Local\", \"{SONNET}\", \"My Embedder\"]") in r.out
        r = taosync("doctor", "--local")
        assert "drift ~/.continue/config.yaml" in r.out and "models" in r.out, r.out
        r = taosync("apply", "--no-verify", "--yes")
        assert r.rc == 0, r.both
        assert "models" in r.err  # the hand edit it undoes is named (--yes: a warning)
        assert model_names(config) == [SONNET, "My Local", "My Embedder"]
        assert taosync("verify").rc == 0


def test_verify_says_when_cn_uses_a_model_picked_in_cn(taosync, home, fleet_file):
    """cn's own /model pick (index/globalContext.json cliSelectedModel) wins over the
    order of models: verify says so; taosync leaves that choice alone."""
    import json

    from contract import write_fleet
    from taosync.stub import Stub

    write(home / ".continue/config.yaml", USERS_CONFIG)
    with Stub(key=TEST_KEY, models=[SONNET, MINI]) as stub:
        write_fleet(fleet_file, "continue", {"roles": {"chat": "balanced"}})
        fleet_file.write_text(fleet_file.read_text().replace(ROOT, stub.root))
        assert taosync("apply", "--no-verify").rc == 0
        picked = home / ".continue/index/globalContext.json"
        write(picked, json.dumps({"cliSelectedModel": "My Local"}))
        r = taosync("verify")
        assert r.rc == 1, r.both
        assert ("~/.continue/index/globalContext.json cliSelectedModel: cn uses 'My Local'"
                in r.both)
        write(picked, json.dumps({"cliSelectedModel": SONNET}))
        assert taosync("verify").rc == 0
        assert json.loads(picked.read_text()) == {"cliSelectedModel": SONNET}


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


USERS_OWN = """name: Mine
version: 1.0.0
schema: v1
models:
  # my own local model, first: Continue picks the first model with a role
  - name: My Local
    provider: openai
    model: my-local-model
    apiBase: {base}
    apiKey: sk-mine-0123456789
  - name: My Embedder
    provider: openai
    model: my-embedder
    apiBase: {base}
    roles: [embed]
"""


@pytest.mark.skipif(CN is None, reason="cn (@continuedev/cli 1.5.47) is not installed; "
                    "set TAOSYNC_TEST_CN_BIN")
def test_real_cn_uses_taosyncs_model_over_the_users_own_listed_first(taosync, home,
                                                                     fleet_file):
    """A user's own chat model listed before taosync's: after apply, ``cn -p`` talks to
    taosync's model (Continue takes the first model with the chat role), and the user's
    entries are all still there, unchanged."""
    from real import stand_in
    from ruamel.yaml import YAML

    with stand_in(taosync, fleet_file, home, models=["gw-main", "my-local-model"]) as s:
        base = s.stub.root + "/v1"
        write(home / ".continue/config.yaml", USERS_OWN.format(base=base))
        s.apply("continue", {"roles": {"chat": "gw-main"}}, models={"gw-main": {}},
                routes={}, default_route=None, mcp_servers={})
        done = s.run([CN, "-p", "Reply with OK."])
        posts = s.stub.posts("/v1/chat/completions")
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert posts and [p.body.get("model") for p in posts] == ["gw-main"] * len(posts), \
        [p.body.get("model") for p in posts]
    assert "gw-main answered through the taosync stand-in" in done.stdout
    models = YAML(typ="safe").load((home / ".continue/config.yaml").read_text())["models"]
    mine = [m for m in models if m["name"] in ("My Local", "My Embedder")]
    assert mine == [{"name": "My Local", "provider": "openai", "model": "my-local-model",
                     "apiBase": base, "apiKey": "sk-mine-0123456789"},
                    {"name": "My Embedder", "provider": "openai", "model": "my-embedder",
                     "apiBase": base, "roles": ["embed"]}]
    text = (home / ".continue/config.yaml").read_text()
    assert "# my own local model, first" in text


@pytest.mark.skipif(CN is None, reason="cn (@continuedev/cli 1.5.47) is not installed; "
                    "set TAOSYNC_TEST_CN_BIN")
def test_real_cn_follows_its_own_pick_over_the_order_and_verify_says_so(taosync, home,
                                                                       fleet_file):
    """What verify reads is what cn does: with cliSelectedModel naming the user's model
    (a /model pick), cn talks to that one although taosync's entry is first."""
    import json

    from real import stand_in

    with stand_in(taosync, fleet_file, home, models=["gw-main", "my-local-model"]) as s:
        base = s.stub.root + "/v1"
        write(home / ".continue/config.yaml", USERS_OWN.format(base=base))
        write(home / ".continue/index/globalContext.json",
              json.dumps({"cliSelectedModel": "My Local"}))
        s.apply("continue", {"roles": {"chat": "gw-main"}}, models={"gw-main": {}},
                routes={}, default_route=None, mcp_servers={})
        assert model_names(home / ".continue/config.yaml")[0] == "gw-main"
        done = s.run([CN, "-p", "Reply with OK."])
        assert [p.body.get("model") for p in s.stub.posts("/v1/chat/completions")] == \
            ["my-local-model"], done.stdout + done.stderr
        r = taosync("verify", "--only", "continue")
    assert r.rc == 1, r.both
    assert "cliSelectedModel: cn uses 'My Local'" in r.both


def test_a_home_applied_before_taosync_led_gets_its_entries_moved_fast_path_too(
        taosync, home, fleet_file):
    """An upgrade: state.json and the render cache from before taosync kept its entries
    first (no "lead" anywhere) and a file with the user's model on top. The fast path
    (a real subprocess) must not call that in sync: plan --check exits 1, apply moves."""
    import hashlib
    import json
    import subprocess
    import sys

    from contract import write_fleet

    config = home / ".continue/config.yaml"
    write(config, USERS_CONFIG)
    write_fleet(fleet_file, "continue", {"roles": {"chat": "balanced"}})
    assert taosync("apply", "--no-verify").rc == 0
    text = config.read_text()
    mine = "  - name: My Local\n    provider: ollama\n    model: llama3.1:8b\n"
    text = text.replace(mine, "").replace("models:\n", "models:\n" + mine)
    config.write_text(text)
    (state_file,) = [p for p in home.rglob("state.json")]
    state = json.loads(state_file.read_text())
    for entry in state["files"].values():
        entry.pop("lead", None)
        if entry["path"] == str(config):
            entry["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    for patch in state.get("inputs", {}).get("patches", []):
        patch.pop("lead", None)
    state_file.write_text(json.dumps(state))

    def cli(*argv):
        return subprocess.run([sys.executable, "-m", "taosync", *argv, "--home", str(home),
                               "-c", str(fleet_file)], capture_output=True, text=True)

    r = cli("plan", "--check")
    assert r.returncode == 1, r.stdout + r.stderr
    assert cli("apply", "--no-verify").returncode == 0
    assert model_names(config)[0] == SONNET
    assert cli("plan", "--check").returncode == 0
