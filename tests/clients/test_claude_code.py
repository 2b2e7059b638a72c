"""claude-code: exact patches and probes, import, the contract every client keeps, and the
real ``claude``."""

from __future__ import annotations

import json
import shlex

import pytest

from conftest import TEST_KEY
from helpers import (
    KEY, KEY_ONE, LLAMA, MINI, R1, ROOT, ROUTER_ARGS, ROUTER_ENV, SONNET, by_path, fleet, imported,
    populate, round_trip, write)
from real import binary, run_real_client, stand_in
from contract import check_contract
from taosync.clients import claude_code
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "claude-code", {"model": "balanced", "haiku": "fast"},
                   reference_off_disk=True)


# -- render and probes

def test_claude_inline(clients_env, tmp_path):
    patches = by_path(claude_code.render(fleet(), KEY, clients_env))
    settings = patches[tmp_path / ".claude" / "settings.json"]
    assert settings.format == "json" and settings.client == "claude-code"
    assert settings.values == {
        ("env", "ANTHROPIC_BASE_URL"): ROOT,
        ("env", "ANTHROPIC_MODEL"): SONNET,
        ("env", "ANTHROPIC_DEFAULT_SONNET_MODEL"): SONNET,
        ("env", "ANTHROPIC_DEFAULT_HAIKU_MODEL"): MINI,
        ("env", "ANTHROPIC_DEFAULT_OPUS_MODEL"): R1,
        ("env", "ANTHROPIC_AUTH_TOKEN"): KEY,
    }
    assert isinstance(settings.values[("env", "ANTHROPIC_AUTH_TOKEN")], Secret)
    state = patches[tmp_path / ".claude.json"]
    assert state.format == "json" and state.secret  # the router's env holds the key
    assert state.values == {("mcpServers", "taotoken-router"): {
        "type": "stdio", "command": "npx", "args": ROUTER_ARGS, "env": ROUTER_ENV}}
    assert len(patches) == 2 and clients_env.warnings == []


def test_claude_slots_unset_and_sonnet_override(clients_env):
    values = claude_code.render(fleet(clients__claude_code={"sonnet": "fast"}), KEY,
                                clients_env)[0].values
    assert values[("env", "ANTHROPIC_MODEL")] == SONNET  # default_route
    assert values[("env", "ANTHROPIC_DEFAULT_SONNET_MODEL")] == MINI
    assert ("env", "ANTHROPIC_DEFAULT_HAIKU_MODEL") not in values
    assert ("env", "ANTHROPIC_DEFAULT_OPUS_MODEL") not in values


def test_claude_headers(clients_env):
    f = fleet(gateway__headers={"X-Team": "core", "X-Trace": "1"})
    values = claude_code.render(f, KEY, clients_env)[0].values
    assert values[("env", "ANTHROPIC_CUSTOM_HEADERS")] == Secret("X-Team: core\nX-Trace: 1")
    (probe, *_) = claude_code.probes(f, KEY, clients_env)
    assert probe.headers == (("X-Team", Secret("core")), ("X-Trace", Secret("1")))


@pytest.mark.parametrize("ref, helper", [
    ("${env:TAOTOKEN_API_KEY}", "printenv TAOTOKEN_API_KEY"),
    ("${cmd:pass show 'tao token'}", "pass show 'tao token'"),
    ("${shell:pass show tao | head -1}", "pass show tao | head -1"),
])
def test_claude_reference_helper(clients_env, ref, helper):
    f = fleet(gateway__key=ref, secrets="reference")
    settings, _ = claude_code.render(f, KEY, clients_env)
    assert settings.values[("apiKeyHelper",)] == helper
    assert ("env", "ANTHROPIC_AUTH_TOKEN") not in settings.values
    assert not any(isinstance(v, Secret) for v in settings.values.values())
    assert {p.auth for p in claude_code.probes(f, KEY, clients_env)} == {"both"}


def test_claude_reference_file_helper_expands_home(clients_env, tmp_path):
    f = fleet(gateway__key="${file:~/my keys/tao}", secrets="reference")
    settings, _ = claude_code.render(f, KEY, clients_env)
    expected = "cat " + shlex.quote(str(tmp_path / "my keys" / "tao"))
    assert settings.values[("apiKeyHelper",)] == expected


def test_claude_reference_per_client_and_literal_fallback(clients_env):
    f = fleet(clients__claude_code={"secrets": "reference", "mcp": False})  # fleet: inline
    assert claude_code.render(f, KEY, clients_env)[0].values[("apiKeyHelper",)] == \
        "printenv TAOTOKEN_API_KEY"
    f = fleet(gateway__key="sk-literal-0123456789abcdef", secrets="reference")
    settings, _ = claude_code.render(f, KEY, clients_env)
    assert settings.values[("env", "ANTHROPIC_AUTH_TOKEN")] == KEY
    assert ("apiKeyHelper",) not in settings.values
    (warning,) = clients_env.warnings
    assert "literal" in warning and "inline" in warning and "sk-literal" not in warning
    assert {p.auth for p in claude_code.probes(f, KEY, clients_env)} == {"bearer"}


def test_claude_reference_warns_when_mcp_holds_key(clients_env):
    f = fleet(secrets="reference")
    claude_code.render(f, KEY, clients_env)
    # one cause shared by the clients it concerns (one grouped line: clients/base.py)
    assert any(w.startswith("claude-code: ") and "gateway.key" in w and "MCP settings" in w
               for w in clients_env.warnings)


def test_claude_mcp_http_sse_and_cwd(clients_env):
    f = fleet(mcp_servers={
        "remote": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer t"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
        "local": {"command": "srv", "cwd": "/srv"},
    })
    _, state = claude_code.render(f, KEY, clients_env)
    assert state.values == {
        ("mcpServers", "remote"): {"type": "http", "url": "https://mcp.example/mcp",
                                   "headers": {"Authorization": "Bearer t"}},
        ("mcpServers", "old"): {"type": "sse", "url": "https://mcp.example/sse"},
        ("mcpServers", "local"): {"type": "stdio", "command": "srv", "args": [], "env": {}},
    }
    assert not state.secret
    (warning,) = clients_env.warnings
    assert "'local'" in warning and "cwd" in warning


def test_claude_import_leaves_out_the_cwd_claude_ignores(clients_env, tmp_path):
    write(tmp_path / ".claude.json", json.dumps({"mcpServers": {
        "local": {"type": "stdio", "command": "srv", "args": [], "env": {}, "cwd": "/srv"}}}))
    assert claude_code.observe(clients_env).mcp_servers["local"].value == {"command": "srv"}


def test_claude_no_mcp_patch_when_disabled_or_empty(clients_env):
    assert len(claude_code.render(fleet(clients__claude_code={"mcp": False}), KEY,
                                  clients_env)) == 1
    assert len(claude_code.render(fleet(mcp_servers={}), KEY, clients_env)) == 1


def test_claude_config_dir(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")},
                    sandboxed=True)
    paths = [p.path for p in claude_code.render(fleet(), KEY, env)]
    assert paths == [tmp_path / "cc" / "settings.json", tmp_path / "cc" / ".claude.json"]
    assert env.warnings == []


def test_claude_config_dir_outside_sandbox_ignored(tmp_path):
    home = tmp_path / "home"
    env = ClientEnv(home=home, environ={"CLAUDE_CONFIG_DIR": str(tmp_path / "real")},
                    sandboxed=True)
    paths = [p.path for p in claude_code.render(fleet(), KEY, env)]
    assert paths == [home / ".claude" / "settings.json", home / ".claude.json"]
    (warning,) = env.warnings
    assert "CLAUDE_CONFIG_DIR" in warning and "outside" in warning


def test_claude_probes(clients_env):
    probes = claude_code.probes(fleet(), KEY, clients_env)
    assert probes == [
        ProbeSpec("claude-code", route, model, "anthropic-messages", ROOT,
                  ROOT + "/v1/messages?beta=true", "bearer")
        for route, model in (("balanced", SONNET), ("fast", MINI), ("deep", R1))
    ]
    # model ids in slots (not routes) → route None; one probe per distinct route and
    # model: haiku's route is kept (verify sends one request labelled with both)
    f = fleet(clients__claude_code={"model": SONNET, "sonnet": SONNET, "haiku": "balanced"})
    assert [(p.route, p.model) for p in claude_code.probes(f, KEY, clients_env)] == [
        (None, SONNET), ("balanced", SONNET)]


# -- /v1 rule and overrides ----------------------------------------------------------


# -- import

def test_claude_code_round_trip(run, home, tmp_path, monkeypatch):
    populate(home, "claude")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["gateway"] == {"base_url": "https://gw.example.com/api",
                                "key": "${env:TAOTOKEN_API_KEY}",
                                "headers": {"X-Team": "platform"}}
    assert fleet["routes"] == {"main": "claude-sonnet-4-20250514", "haiku": "gpt-4o-mini",
                               "opus": "nvidia/deepseek-r1"}
    assert fleet["default_route"] == "main"
    assert fleet["clients"] == {"claude-code": {"model": "main", "haiku": "haiku",
                                                "opus": "opus"}}
    assert fleet["mcp_servers"]["docs"] == {"command": "npx", "args": ["-y", "some-mcp"],
                                            "env": {"DOCS_DIR": "/srv/docs"}}
    assert fleet["mcp_servers"]["search"]["url"] == "https://mcp.example.com/mcp"
    # the one thing plan adds: the Sonnet slot, which defaults to the model slot
    settings = [f for f in plan["files"] if f["display"] == "~/.claude/settings.json"][0]
    assert {c["key"] for c in settings["changes"]} <= {"env.ANTHROPIC_DEFAULT_SONNET_MODEL"}
    assert [f["action"] for f in plan["files"] if f["display"] == "~/.claude.json"] == ["unchanged"]


def test_claude_api_key_helper_is_kept_as_the_reference(run, home, tmp_path, monkeypatch):
    write(home / ".claude/settings.json", json.dumps({
        "apiKeyHelper": "security find-generic-password -s taotoken -w",
        "env": {"ANTHROPIC_BASE_URL": "https://gw.example.com/api",
                "ANTHROPIC_MODEL": "gw-main"}}))
    r, data = imported(run)
    assert r.rc == 0
    assert data["fleet"]["gateway"]["key"] == "${shell:security find-generic-password -s taotoken -w}"
    assert data["fleet"]["clients"]["claude-code"]["secrets"] == "reference"
    write(home / ".claude/settings.json", json.dumps({
        "apiKeyHelper": "printenv MY_GW_KEY",
        "env": {"ANTHROPIC_BASE_URL": "https://gw.example.com/api",
                "ANTHROPIC_MODEL": "gw-main"}}))
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["fleet"]["gateway"]["key"] == "${env:MY_GW_KEY}"
    assert ("~/.claude/settings.json", "apiKeyHelper") not in changes



def test_claude_fallback_model_imports_as_the_routes_candidates(run, home, tmp_path,
                                                               monkeypatch):
    """A hand-written fallbackModel comes back as the model slot's route choosing among
    the model and its fallbacks, in order, so apply writes the same model and list back;
    a repeat, or the model itself, in the list is dropped (Claude skips them too)."""
    def settings(chain):
        write(home / ".claude/settings.json", json.dumps({
            "fallbackModel": chain,
            "env": {"ANTHROPIC_BASE_URL": "https://gw.example.com/api",
                    "ANTHROPIC_AUTH_TOKEN": KEY_ONE, "ANTHROPIC_MODEL": "gw-main"}}))

    settings(["gw-b", "gw-c"])
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    route = fleet["clients"]["claude-code"]["model"]
    assert fleet["routes"][route] == {"candidates": ["gw-main", "gw-b", "gw-c"]}
    assert {"gw-main", "gw-b", "gw-c"} <= set(fleet["models"])
    assert ("~/.claude/settings.json", "fallbackModel") not in changes
    settings(["gw-b", "gw-main", "gw-c", "gw-b"])
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["fleet"]["routes"][route] == {"candidates": ["gw-main", "gw-b", "gw-c"]}
    change = changes[("~/.claude/settings.json", "fallbackModel")]
    assert change["new"] == ["gw-b", "gw-c"]


def test_claude_on_bedrock_is_an_unknown_provider(run, home):
    populate(home, "codex")
    write(home / ".claude/settings.json", json.dumps({"env": {
        "CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_MODEL": "anthropic.claude-x"}}))
    r, data = imported(run)
    assert r.rc == 1
    provider = [f for f in data["findings"] if f["topic"] == "provider"]
    assert provider and "Amazon Bedrock" in provider[0]["message"]
    assert "claude-code" not in data["fleet"]["clients"]


# -- in-client failover: fallbackModel

def _with_candidates(*candidates, **client):
    """The example fleet, its ``balanced`` route (Claude's model slot) choosing among
    ``candidates``."""
    from helpers import EXAMPLE

    routes = dict(EXAMPLE["routes"], balanced={"candidates": list(candidates)})
    return fleet(routes=routes, clients__claude_code={"model": "balanced", **client})


def test_claude_fallback_model_is_the_routes_other_candidates(clients_env):
    """The model slot's route chooses the first candidate; fallbackModel gets the others,
    preferred first, as the JSON list Claude requires (a string makes it reject the whole
    file); a plain route writes none."""
    f = _with_candidates(R1, SONNET, LLAMA)
    values = claude_code.render(f, KEY, clients_env)[0].values
    assert values[("env", "ANTHROPIC_MODEL")] == R1
    assert values[("fallbackModel",)] == [SONNET, LLAMA]
    assert ("fallbackModel",) not in claude_code.render(fleet(), KEY, clients_env)[0].values


def test_claude_fallback_model_moves_with_the_routes_choice(clients_env):
    """A route re-render (verify moved the choice to the second candidate) moves the
    chain with it: the chosen model is never its own fallback."""
    f = _with_candidates(R1, SONNET, LLAMA)
    f.choose_routes({"balanced": SONNET})
    values = claude_code.render(f, KEY, clients_env)[0].values
    assert values[("env", "ANTHROPIC_MODEL")] == SONNET
    assert values[("fallbackModel",)] == [R1, LLAMA]


def test_claude_fallback_model_follows_the_model_slot_only(clients_env):
    """The chain is the model slot's: a model slot naming a model id (no route) has none,
    even when another slot's route has candidates."""
    from helpers import EXAMPLE

    routes = dict(EXAMPLE["routes"], fast={"candidates": [MINI, LLAMA]})
    f = fleet(routes=routes, clients__claude_code={"model": SONNET, "haiku": "fast"})
    assert ("fallbackModel",) not in claude_code.render(f, KEY, clients_env)[0].values


def test_claude_failover_false_writes_no_fallback_model(clients_env):
    f = _with_candidates(R1, SONNET, failover=False)
    assert ("fallbackModel",) not in claude_code.render(f, KEY, clients_env)[0].values


def test_claude_failover_must_be_a_flag(taosync, fleet_file):
    """``failover: "no"`` is bad input, located, nothing written."""
    text = fleet_file.read_text().replace(
        "claude-code: {model: balanced, haiku: fast, opus: deep}",
        'claude-code: {model: balanced, haiku: fast, opus: deep, failover: "maybe"}')
    assert "failover" in text
    fleet_file.write_text(text)
    r = taosync("apply", "--no-verify")
    assert r.rc == 2, r.both
    assert "failover" in r.both and "fleet.yaml:" in r.both and "Traceback" not in r.both


# -- the real client

CLAUDE = binary("TAOSYNC_TEST_CLAUDE_BIN", "claude")


@pytest.mark.skipif(CLAUDE is None, reason="claude (@anthropic-ai/claude-code 2.1.332) is not "
                    "installed; set TAOSYNC_TEST_CLAUDE_BIN")
@pytest.mark.parametrize("secrets", ["inline", "reference"])
def test_real_claude_answers_through_the_stand_in(taosync, home, fleet_file, secrets):
    """``claude -p`` with only taosync's ~/.claude/settings.json: Messages API under the
    root (no /v1 in the base URL), the fleet's key, the route's model. Non-essential
    traffic off, as for any offline run (clients.md §1)."""
    env = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    if secrets == "reference":
        env["TAOTOKEN_API_KEY"] = TEST_KEY
    done, seen = run_real_client(taosync, fleet_file, home, CLAUDE, ["-p", "Reply with OK."],
                                 "claude-code", {"model": "main", "haiku": "fast"},
                                 secrets=secrets, env=env, headers={"X-Team": "core"})
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert "answered through the taosync stand-in" in done.stdout
    calls = [r for r in seen if r.method == "POST" and r.path.startswith("/api/v1/messages")]
    assert calls and all(r.auth == "ok" for r in calls)
    assert "gw-main" in {r.body.get("model") for r in calls}
    assert {r.body.get("model") for r in calls} <= {"gw-main", "gw-fast"}
    assert all(r.headers.get("x-team") == "core" for r in calls)  # ANTHROPIC_CUSTOM_HEADERS
    settings = (home / ".claude/settings.json").read_text()
    assert (TEST_KEY in settings) == (secrets == "inline")


@pytest.mark.skipif(CLAUDE is None, reason="claude (@anthropic-ai/claude-code 2.1.332) is not "
                    "installed; set TAOSYNC_TEST_CLAUDE_BIN")
def test_real_claude_reads_its_key_from_the_keyring_through_api_key_helper(
        taosync, home, fleet_file, file_keyring):
    """Issue 27: ``gateway.key: ${keyring:taosync/gateway}`` under ``secrets: reference``:
    Claude Code runs the apiKeyHelper taosync wrote (``<python> -m taosync secret get
    '${keyring:…}'``), which reads a real keyring backend (keyrings.alt's file, kept
    outside the home as a desktop keyring is), and the stand-in sees the fleet's key —
    while no file under the home holds it."""
    import os

    from conftest import ROOT

    file_keyring("taosync", "gateway", TEST_KEY)
    env = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "PYTHONPATH": str(ROOT),
           "PYTHON_KEYRING_BACKEND": os.environ["PYTHON_KEYRING_BACKEND"],
           "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"]}
    assert not os.environ["XDG_DATA_HOME"].startswith(str(home))
    done, seen = run_real_client(taosync, fleet_file, home, CLAUDE, ["-p", "Reply with OK."],
                                 "claude-code", {"model": "main"}, secrets="reference",
                                 env=env, key="${keyring:taosync/gateway}")
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert "answered through the taosync stand-in" in done.stdout
    calls = [r for r in seen if r.method == "POST" and r.path.startswith("/api/v1/messages")]
    assert calls and all(r.auth == "ok" for r in calls)
    helper = json.loads((home / ".claude/settings.json").read_text())["apiKeyHelper"]
    assert helper.endswith("-m taosync secret get '${keyring:taosync/gateway}'")
    holding = [str(p) for p in home.rglob("*") if p.is_file() and not p.is_symlink()
               and TEST_KEY.encode() in p.read_bytes()]
    assert holding == []


def _fail_over(taosync, fleet_file, home, status: int, entry: dict):
    """Route ``main`` chooses between gw-a and gw-b; the stand-in answers every request
    for gw-a with ``status``; one ``claude -p`` run with only taosync's files. Returns
    (the run, the models of its Messages requests, in order, and the settings written).
    ``CLAUDE_CODE_MAX_RETRIES=2`` keeps a run that cannot fail over short (Claude would
    otherwise back off through ten retries, three minutes)."""
    with stand_in(taosync, fleet_file, home, models=["gw-a", "gw-b"], prefix="/api",
                  faults=[f"status={status}@gw-a"]) as s:
        s.apply("claude-code", {"model": "main", **entry},
                models={"gw-a": {}, "gw-b": {}},
                routes={"main": {"candidates": ["gw-a", "gw-b"]}}, default_route="main",
                mcp_servers={})
        work = home / "work"
        work.mkdir(exist_ok=True)
        done = s.run([CLAUDE, "-p", "Reply with OK."], cwd=work,
                     env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                          "CLAUDE_CODE_MAX_RETRIES": "2"})
        asked = [r.body.get("model") for r in s.stub.posts("/v1/messages")]
    return done, asked, json.loads((home / ".claude/settings.json").read_text())


@pytest.mark.skipif(CLAUDE is None, reason="claude (@anthropic-ai/claude-code 2.1.332) is not "
                    "installed; set TAOSYNC_TEST_CLAUDE_BIN")
@pytest.mark.parametrize("status, tries", [(529, 3), (503, 1)])
def test_real_claude_fails_over_inside_one_run(taosync, home, fleet_file, status, tries):
    """The route's second candidate, written into fallbackModel, answers the same run
    after the first is overloaded (529: after three in a row) or unavailable (503: at
    once): the stand-in saw gw-a asked, then gw-b, and nothing after."""
    done, asked, settings = _fail_over(taosync, fleet_file, home, status, {})
    assert settings["env"]["ANTHROPIC_MODEL"] == "gw-a"
    assert settings["fallbackModel"] == ["gw-b"]
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert asked == ["gw-a"] * tries + ["gw-b"], asked
    assert "gw-b answered through the taosync stand-in" in done.stdout


@pytest.mark.skipif(CLAUDE is None, reason="claude (@anthropic-ai/claude-code 2.1.332) is not "
                    "installed; set TAOSYNC_TEST_CLAUDE_BIN")
def test_real_claude_without_failover_fails_the_same_run(taosync, home, fleet_file):
    """``failover: false``: no fallbackModel, so the same overloaded run ends in an error
    and gw-b is never asked."""
    done, asked, settings = _fail_over(taosync, fleet_file, home, 529, {"failover": False})
    assert "fallbackModel" not in settings
    assert done.returncode != 0, done.stdout[-1000:]
    assert asked and set(asked) == {"gw-a"}, asked
    assert "529" in done.stdout + done.stderr


def test_claude_fallback_model_edited_by_hand_is_drift(taosync, home, fleet_file):
    """A hand-reordered fallbackModel is an owned key off fleet.yaml: status names it,
    verify says the file differs there, apply puts the route's order back."""
    with stand_in(taosync, fleet_file, home, models=["gw-a", "gw-b", "gw-c"]) as s:
        s.apply("claude-code", {"model": "main"}, models={"gw-a": {}, "gw-b": {}, "gw-c": {}},
                routes={"main": {"candidates": ["gw-a", "gw-b", "gw-c"]}},
                default_route="main", mcp_servers={})
        path = home / ".claude/settings.json"
        doc = json.loads(path.read_text())
        assert doc["fallbackModel"] == ["gw-b", "gw-c"]
        doc["fallbackModel"] = ["gw-c", "gw-b"]
        path.write_text(json.dumps(doc, indent=2))
        status = taosync("status")
        assert status.rc == 1 and "fallbackModel" in status.both, status.both
        verify = taosync("verify")
        assert "differs from fleet.yaml in fallbackModel" in verify.both, verify.both
        assert taosync("apply", "--no-verify", "--yes").rc == 0
        assert json.loads(path.read_text())["fallbackModel"] == ["gw-b", "gw-c"]


def test_claude_doctor_names_the_switch_that_turns_fallback_off():
    """``CLAUDE_CODE_NO_MODEL_FALLBACK=1`` (or ``true``) in the shell makes claude 2.1.332
    ignore fallbackModel (seen against the stand-in: the 503 run then fails, ``0`` does
    not): doctor warns where taosync writes a chain, and only there."""
    f = _with_candidates(R1, SONNET)
    for value in ("1", "true"):
        (finding,) = claude_code.doctor(f, KEY, {"CLAUDE_CODE_NO_MODEL_FALLBACK": value})
        assert finding.name == "CLAUDE_CODE_NO_MODEL_FALLBACK" and finding.status == "warn"
        assert SONNET in finding.detail and "failover: false" in finding.detail
    assert claude_code.doctor(f, KEY, {"CLAUDE_CODE_NO_MODEL_FALLBACK": "0"}) == []
    assert claude_code.doctor(fleet(), KEY, {"CLAUDE_CODE_NO_MODEL_FALLBACK": "1"}) == []
    off = _with_candidates(R1, SONNET, failover=False)
    assert claude_code.doctor(off, KEY, {"CLAUDE_CODE_NO_MODEL_FALLBACK": "1"}) == []
