"""`taosync verify` judges the files against the render status and apply use — the one with
the current route choices — and probes only what the files hold. Against the real stand-in
gateway on loopback, with per-model faults:

* a Gemini candidate probe carries its own model (the model is in Gemini's URL path), so a
  route shared by gemini-cli and another client fails over for both;
* after a failover verify reports no drift where status says in sync;
* a failing *standby* candidate is a warning (exit 0), a failure with ``--strict``;
* a hand-edited file is probed as it is, each row labelled with every route sending it,
  and no model in no file is probed;
* ``verify --stub`` without the key says it could not be resolved and blames no key path.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TEST_KEY
from test_routing_failover import BACKUP, MODELS, PREFERRED, choosing_fleet

from taosync.stub import Stub

FIRST, SECOND = "gpt-4o-mini", "gpt-4.1"
EXAMPLE_ROOT = "https://taotoken.net/api"
SONNET, MINI, DEEP, LLAMA = ("claude-sonnet-4-20250514", "gpt-4o-mini", "nvidia/deepseek-r1",
                             "intel/llama-7b")


def gemini_fleet(fleet_file: Path, root: str) -> None:
    """gemini-cli and codex both on ``fast``, which fails over from FIRST to SECOND."""
    fleet_file.write_text(f"""version: 1
gateway:
  base_url: {root}
  key: ${{env:TAOTOKEN_API_KEY}}
  gemini_base_url: {root}
models:
  {FIRST}: {{}}
  {SECOND}: {{}}
routes:
  fast:
    candidates: [{FIRST}, {SECOND}]
    policy: failover
default_route: fast
clients:
  gemini-cli: {{model: fast}}
  codex: {{model: fast}}
verify: {{prompt: "Reply with OK.", max_tokens: 16, timeout: 5, retries: 0}}
""")


def gemini_model(home: Path) -> str:
    return json.loads((home / ".gemini/settings.json").read_text())["model"]["name"]


def codex_model(home: Path) -> str:
    import tomllib

    return tomllib.loads((home / ".codex/config.toml").read_text())["model"]


def test_gemini_candidate_probes_carry_their_own_model_so_the_route_fails_over(
        taosync, home, fleet_file):
    with Stub(key=TEST_KEY, models=[FIRST, SECOND], faults=[f"server_error@{FIRST}"]) as stub:
        gemini_fleet(fleet_file, stub.root)
        assert taosync("apply", "--no-verify").rc == 0
        assert (gemini_model(home), codex_model(home)) == (FIRST, FIRST)

        r = taosync("verify")
        assert r.rc == 1, r.both  # the model both clients are on fails
        assert f"route fast → {SECOND} ({FIRST}: HTTP 500 at " in r.out, r.both
        # the second candidate's Gemini probe names it in its URL path (and so its body
        # goes there: Gemini's body names no model)
        paths = {s.path for s in stub.posts() if s.path.startswith("/v1beta/")}
        assert paths == {f"/v1beta/models/{FIRST}:streamGenerateContent",
                         f"/v1beta/models/{SECOND}:streamGenerateContent"}, paths
        data = json.loads(taosync("verify", "--json").out)
        gemini = {res["model"]: res for res in data["results"] if res["protocol"] == "gemini"}
        assert gemini[SECOND]["ok"] and not gemini[FIRST]["ok"]
        assert gemini[SECOND]["url"].endswith(f"/models/{SECOND}:streamGenerateContent?alt=sse")

        r = taosync("apply")
        assert r.rc == 0, r.both  # on the second candidate; the first is only a standby
        assert (gemini_model(home), codex_model(home)) == (SECOND, SECOND)
        assert taosync("route", "fast").out == SECOND + "\n"


def test_verify_and_status_agree_after_a_failover(taosync, home, fleet_file):
    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert taosync("apply").rc == 1  # the preferred one failed: moved to the backup
        assert taosync("route", "balanced").out == BACKUP + "\n"

        status = taosync("status")
        assert status.rc == 0 and "nothing to do" in status.out, status.both
        r = taosync("verify")
        assert "differs from fleet.yaml" not in r.both, r.both
        data = json.loads(taosync("verify", "--json").out)
        assert data["drift"] == []
        balanced = [res for res in data["results"] if "balanced" in res["routes"]]
        # the files are on the backup: every client row of the route probes it
        assert {res["model"] for res in balanced if not res["standby"]} == {BACKUP}


def test_a_failing_standby_candidate_is_a_warning_unless_strict(taosync, home, fleet_file):
    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert taosync("apply").rc == 1
        r = taosync("verify")
        assert r.rc == 0, r.both
        assert (f"standby candidate {PREFERRED} of route balanced fails (HTTP 500)"
                in r.err), r.err
        assert "--strict" in r.err
        assert f"balanced (standby)  {PREFERRED}" in r.out, r.out
        data = json.loads(taosync("verify", "--json").out)
        assert data["ok"] is True
        standby = [res for res in data["results"] if res["standby"]]
        assert standby and {res["model"] for res in standby} == {PREFERRED}
        assert not any(res["ok"] for res in standby)
        assert data["failed"] == len(standby)

        r = taosync("verify", "--strict")
        assert r.rc == 1, r.both
        data = json.loads(taosync("verify", "--strict", "--json").out)
        assert data["ok"] is False

        # a chosen model failing still fails, --strict or not
        stub.add_fault(f"server_error@{BACKUP}")
        assert taosync("verify").rc == 1


def claude_env(home: Path) -> dict:
    return json.loads((home / ".claude/settings.json").read_text())["env"]


def test_a_drifted_file_is_probed_as_it_is_with_every_route_it_sends(taosync, home,
                                                                     fleet_file):
    with Stub(key=TEST_KEY, models=[MINI, SONNET, DEEP, LLAMA]) as stub:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, stub.root))
        assert taosync("apply", "--no-verify").rc == 0
        path = home / ".claude/settings.json"
        data = json.loads(path.read_text())
        data["env"].update(ANTHROPIC_DEFAULT_HAIKU_MODEL=SONNET,  # fast: now the sonnet
                           ANTHROPIC_DEFAULT_OPUS_MODEL=LLAMA)  # deep: a model id by hand
        path.write_text(json.dumps(data, indent=2))
        held = set(claude_env(home).values()) & {MINI, SONNET, DEEP, LLAMA}
        assert held == {SONNET, LLAMA}

        stub.requests.clear()
        r = taosync("verify", "--json", "--only", "claude-code")
        assert r.rc == 0, r.both
        data = json.loads(r.out)
        rows = {res["model"]: res for res in data["results"]}
        assert set(rows) == held  # nothing the file does not hold
        assert sorted(rows[SONNET]["routes"]) == ["balanced", "fast"]
        assert rows[LLAMA]["routes"] == ["deep"]
        sent = {s.body.get("model") for s in stub.posts("/v1/messages")}
        assert sent == held, sent
        drift = {d["message"] for d in data["drift"]}
        assert drift == {f"~/.claude/settings.json differs from fleet.yaml in env.{var}"
                         for var in ("ANTHROPIC_DEFAULT_HAIKU_MODEL",
                                     "ANTHROPIC_DEFAULT_OPUS_MODEL")}


def test_two_routes_on_one_model_label_its_row_with_both(taosync, fleet_file):
    """What fleet.yaml would write (--desired): claude-code's model (balanced) and haiku
    (fast) slots send one request when both routes name the same model."""
    fleet_file.write_text(fleet_file.read_text().replace(
        "  fast: gpt-4o-mini\n", f"  fast: {SONNET}\n"))
    data = json.loads(taosync("verify", "--stub", "--desired", "--json",
                              "--only", "claude-code").out)
    rows = {res["model"]: res for res in data["results"]}
    assert set(rows) == {SONNET, DEEP}
    assert sorted(rows[SONNET]["routes"]) == ["balanced", "fast"]


def test_stub_without_the_key_says_so_and_blames_no_key_path(taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.both
    assert "the key could not be resolved" in r.err, r.err
    assert "TAOTOKEN_API_KEY is not set" in r.err
    assert "differs from fleet.yaml" not in r.both, r.both
    assert "rejected the key" not in r.both and "✗" not in r.out
    assert TEST_KEY not in r.both
    data = json.loads(taosync("verify", "--stub", "--json").out)
    assert data["ok"] and data["drift"] == [] and data["failed"] == 0

    # what it can judge it still does: a doubled /v1 by hand fails, naming its key path
    path = home / ".claude/settings.json"
    data = json.loads(path.read_text())
    data["env"]["ANTHROPIC_BASE_URL"] += "/v1"
    path.write_text(json.dumps(data, indent=2))
    r = taosync("verify", "--stub")
    assert r.rc == 1, r.both
    assert [line for line in r.err.splitlines() if "differs from fleet.yaml in" in line] == [
        "warning: claude-code: ~/.claude/settings.json differs from fleet.yaml in "
        "env.ANTHROPIC_BASE_URL"]
    assert "~/.claude/settings.json env.ANTHROPIC_BASE_URL" in r.out
    assert "rejected the key" not in r.both
