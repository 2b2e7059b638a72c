"""`taosync verify` end to end: the example fleet against the stand-in, a fleet pointed at a
failing stand-in, selection flags, JSON, history, and never the key in any output."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_KEY

from taosync.stub import Stub

EXAMPLE_ROOT = "https://taotoken.net/api"
MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]


def point_at(fleet_file, root: str) -> None:
    fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, root))


def history_text(home) -> str:
    path = home / ".local" / "state" / "taosync" / "history.jsonl"
    return path.read_text() if path.exists() else ""


def test_stub_mode_proves_every_backend_of_the_example_fleet(taosync, home):
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.both
    assert "stand-in gateway at http://127.0.0.1:" in r.out
    rows = [ln for ln in r.out.splitlines() if "✓" in ln]
    assert len(rows) == 15  # Vibe, gptme, aider, llm and shell-gpt send their own User-Agent; Gemini its own protocol
    assert "cline, continue" in r.out and "cuda" in r.out and "oneapi" in r.out
    assert "15/15 backends pass" in r.out
    assert "✗" not in r.out
    assert not (home / ".claude").exists()  # verify changes no client file
    assert TEST_KEY not in r.both


def test_stub_mode_json(taosync):
    r = taosync("verify", "--stub", "--json")
    assert r.rc == 0
    data = json.loads(r.out)
    assert data["ok"] and data["stub"] and data["passed"] == 15 and data["failed"] == 0
    first = data["results"][0]
    assert first["configured_url"] == EXAMPLE_ROOT + "/v1/messages?beta=true"
    assert first["url"].startswith("http://127.0.0.1:")
    assert set(first) >= {"clients", "routes", "model", "backend", "protocol", "ok", "status",
                          "diagnosis", "latency_ms", "ttfb_ms", "tokens", "answer"}


def test_only_and_route(taosync):
    r = taosync("verify", "--stub", "--json", "--only", "codex", "--only", "cline")
    clients = {c for res in json.loads(r.out)["results"] for c in res["clients"]}
    assert clients == {"codex", "cline"}
    r = taosync("verify", "--stub", "--json", "--route", "deep")
    results = json.loads(r.out)["results"]
    assert {x["model"] for x in results} == {"nvidia/deepseek-r1"}
    assert {c for x in results for c in x["clients"]} == {"claude-code", "codex"}


@pytest.mark.parametrize("args,message", [
    (("--only", "codx"), "did you mean codex"),
    (("--route", "dep"), "did you mean deep"),
])
def test_bad_selection_exits_2(taosync, args, message):
    r = taosync("verify", "--stub", *args)
    assert r.rc == 2 and message in r.err


def test_stub_mode_without_a_resolvable_key_uses_a_stand_in(taosync, monkeypatch):
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.both
    assert "stand-in key" in r.err


def test_real_gateway_with_mixed_results_exits_1_with_cause_and_fix(taosync, fleet_file, home):
    with Stub(key=TEST_KEY, models=MODELS[:3], faults=["no_choices@gpt-4o-mini"]) as s:
        point_at(fleet_file, s.root)
        r = taosync("verify", "--desired")  # never applied: probe what fleet.yaml writes
    assert r.rc == 1
    lines = r.out.splitlines()
    assert any("✓" in ln and "claude-sonnet-4-20250514" in ln for ln in lines)
    assert any("✗" in ln and "intel/llama-7b" in ln for ln in lines)
    assert "model_not_found: the gateway does not know model `intel/llama-7b`" in r.out
    assert "no_choices: the gateway answered 200 but the answer has no" in r.out
    # each way the probes failed is said once under the table, however many failed so
    # (four chat probes got "no choices"), each naming the row when only one failed so
    assert "✗ 4 probes: no_choices: the gateway answered 200 but the answer has no choices" \
        in lines, r.out
    assert "✗ codex batch: model_not_found: the gateway does not know model " \
        "`intel/llama-7b`" in r.out
    assert r.out.count("    fix: ") == 5 < sum(1 for ln in lines if "✗" in ln), r.out
    assert "backends pass" in r.out and "failed" in r.out


def test_quiet_prints_only_failures(taosync, fleet_file):
    with Stub(key=TEST_KEY, models=MODELS[:3]) as s:
        point_at(fleet_file, s.root)
        r = taosync("verify", "--desired", "-q")
    assert r.rc == 1
    assert "✓" not in r.both and "intel/llama-7b" in r.err
    assert r.out == ""


def test_no_key_anywhere_when_the_gateway_echoes_it(taosync, fleet_file, home):
    with Stub(key="sk-the-gateways-other-key-000000", models=MODELS) as s:
        point_at(fleet_file, s.root)
        assert taosync("apply", "--no-verify").rc == 0  # the probes read the key on disk
        human = taosync("verify", "-v")
        as_json = taosync("verify", "--json")
        seen = [p.auth for p in s.posts()]
    assert human.rc == 1 and as_json.rc == 1
    assert set(seen) == {"bad"}
    data = json.loads(as_json.out)
    assert {x["diagnosis"]["code"] for x in data["results"]} == {"auth"}
    assert "sk-…cdef" in as_json.out  # the echoed key, redacted
    for text in (human.out, human.err, as_json.out, as_json.err, history_text(home)):
        assert TEST_KEY not in text
        assert "SECRETKEY" not in text


def test_history_is_appended_per_run(taosync, home):
    taosync("verify", "--stub")
    taosync("verify", "--stub", "--only", "codex")
    records = [json.loads(ln) for ln in history_text(home).splitlines()]
    assert len(records) == 15 + 3
    assert len({r["run"] for r in records}) == 2
    assert all(r["stub"] for r in records)
    assert {"model", "backend", "ok", "latency_ms", "tokens_in", "tokens_out"} <= set(records[0])
    path = home / ".local" / "state" / "taosync" / "history.jsonl"
    assert path.stat().st_mode & 0o777 == 0o600


def test_verify_after_apply_api(home, fleet_file, capsys):
    import click

    from taosync.settings import Settings
    from taosync.clients.base import ClientEnv
    from taosync.commands.verify import verify_after_apply
    from taosync.fleet import schema as fleet_schema
    from taosync.fleet.load import load_fleet
    from taosync.fleet.view import FleetView

    loaded = load_fleet(fleet_file, home=home)
    s = Settings(config=fleet_file, home=home, json=True)
    env = ClientEnv(home=home, sandboxed=True)
    with click.Context(click.Command("apply"), obj=s):
        rc = verify_after_apply(loaded, env, s, only=["claude-code"], stub=True)
        first = json.loads(capsys.readouterr().out)
        # a client that is not enabled is skipped after an apply, not an error
        loaded.data["clients"]["codex"]["enabled"] = False
        # a view reads its data once, as the pydantic model it stands for does: a new one
        loaded.fleet = FleetView(loaded.data, fleet_schema.load())
        rc_none = verify_after_apply(loaded, env, s, only=["codex"], stub=True)
        second = json.loads(capsys.readouterr().out)
    assert rc == 0 and rc_none == 0
    assert {c for x in first["results"] for c in x["clients"]} == {"claude-code"}
    assert second["results"] == [] and second["ok"]


def test_nothing_enabled(taosync, fleet_file):
    text = fleet_file.read_text()
    start = text.index("clients:")
    end = text.index("mcp_servers:")
    fleet_file.write_text(text[:start] + "clients: {}\n\n" + text[end:])
    r = taosync("verify", "--stub")
    assert r.rc == 0 and "nothing to do: no enabled client" in r.out
