"""Routes that choose their model, end to end against the stand-in gateway with faults:
the choice is checked in the client files themselves, not only in taosync's output."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TEST_KEY

PREFERRED, BACKUP = "claude-sonnet-4-20250514", "gpt-4.1"  # not a prefix of another id
MODELS = ["gpt-4o-mini", PREFERRED, BACKUP, "nvidia/deepseek-r1", "intel/llama-7b"]


def choosing_fleet(fleet_file: Path, root: str, policy: str = "failover",
                   dwell: str | None = "0s") -> None:
    """The example fleet with ``balanced`` choosing between two candidates, pointed at
    the stand-in gateway, probes without retries (a 500 fails at once). ``dwell``: the
    route's hysteresis — 0s by default here, so these tests see each move back at once
    (tests/test_route_flaps.py holds the default 10m; None leaves it out)."""
    text = fleet_file.read_text().replace("https://taotoken.net/api", root)
    text = text.replace("  claude-sonnet-4-20250514: {}\n",
                        "  claude-sonnet-4-20250514: {}\n  gpt-4.1: {}\n")
    text = text.replace("  balanced: claude-sonnet-4-20250514\n",
                        f"  balanced:\n    candidates: [{PREFERRED}, {BACKUP}]\n"
                        f"    policy: {policy}\n"
                        + (f"    dwell: {dwell}\n" if dwell is not None else ""))
    text = text.replace("timeout: 20}", "timeout: 20, retries: 0}")
    fleet_file.write_text(text)


def claude_fallbacks(home: Path) -> list[str] | None:
    """Claude Code's ``fallbackModel``: the balanced route's candidates but its choice."""
    return json.loads((home / ".claude/settings.json").read_text()).get("fallbackModel")


def files_naming(home: Path, model: str) -> set[str]:
    """Every client file under ``home`` whose text names ``model`` (taosync's own state
    and history left out; Claude Code's ``fallbackModel`` too, which names the route's
    other candidates by design: :func:`claude_fallbacks`)."""
    out = set()
    for path in home.rglob("*"):
        if not path.is_file() or "taosync" in path.relative_to(home).parts[:3]:
            continue
        try:
            text = path.read_text(errors="replace")
        except FileNotFoundError:
            continue  # a write's temporary file, renamed into place since the walk saw it
        if path == home / ".claude/settings.json":
            doc = json.loads(text)
            doc.pop("fallbackModel", None)
            text = json.dumps(doc)
        if model in text:
            out.add(str(path.relative_to(home)))
    return out


BALANCED_FILES = {".claude/settings.json", ".cline/data/settings/providers.json",
                  ".continue/config.yaml"}


def test_failover_moves_every_client_on_the_route_and_back(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        r = taosync("apply")
        assert r.rc == 1, r.both  # the preferred candidate fails its probe
        assert f"route balanced → {BACKUP} ({PREFERRED}: HTTP 500 at " in r.out
        on_backup = files_naming(home, BACKUP)
        assert on_backup >= BALANCED_FILES, on_backup
        assert not any(f for f in files_naming(home, PREFERRED) if f in BALANCED_FILES)
        assert claude_fallbacks(home) == [PREFERRED]  # the chain moved with the route
        # every candidate was probed, the failing one included
        probed = {s.body.get("model") for s in stub.posts() if isinstance(s.body, dict)}
        assert {PREFERRED, BACKUP} <= probed
        state = json.loads(next(home.rglob("state.json")).read_text())
        assert state["routes"]["balanced"]["model"] == BACKUP
        assert "HTTP 500" in state["routes"]["balanced"]["reason"]

        # status names the route off its preferred candidate; route prints the choice
        status = taosync("status")
        assert f"balanced → {BACKUP}, off its preferred {PREFERRED}" in status.out, status.both
        assert taosync("route", "balanced").out == BACKUP + "\n"
        assert (f"balanced  {BACKUP}  (default)  (failover of 2: {PREFERRED}, {BACKUP})"
                in taosync("route").out.splitlines())
        assert f"export TAOTOKEN_MODEL_BALANCED='{BACKUP}'" in taosync("env").out

        # recovery: the preferred one answers again; the next verify + apply moves back
        stub.clear_faults()
        assert taosync("verify").rc == 0
        r = taosync("apply")
        assert r.rc == 0, r.both
        assert files_naming(home, PREFERRED) >= BALANCED_FILES
        assert not any(f for f in files_naming(home, BACKUP) if f in BALANCED_FILES)
        assert claude_fallbacks(home) == [BACKUP]
        assert taosync("route", "balanced").out == PREFERRED + "\n"
        state = json.loads(next(home.rglob("state.json")).read_text())
        assert state["routes"]["balanced"]["model"] == PREFERRED


def test_score_picks_the_faster_model_and_explain_shows_both(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"delay=0.6@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root, policy="score")
        r = taosync("apply")
        assert r.rc == 0, r.both
        assert f"route balanced → {BACKUP} (best score" in r.out
        assert files_naming(home, BACKUP) >= BALANCED_FILES
        assert not any(f for f in files_naming(home, PREFERRED) if f in BALANCED_FILES)
        assert claude_fallbacks(home) == [PREFERRED]  # the chain moved with the route

        r = taosync("route", "balanced", "--explain")
        lines = r.out.splitlines()
        assert lines[0] == BACKUP
        rows = {line.split()[1] if line.startswith("→") else line.split()[0]: line
                for line in lines[2:4]}
        assert set(rows) == {PREFERRED, BACKUP}
        assert rows[BACKUP].startswith("→") and "healthy" in rows[PREFERRED]
        assert lines[-1].startswith("policy score: best score")

        data = json.loads(taosync("route", "balanced", "--explain", "--json").out)
        by_model = {c["model"]: c for c in data["choice"]["candidates"]}
        assert data["model"] == BACKUP and set(by_model) == {PREFERRED, BACKUP}
        slow, fast = by_model[PREFERRED], by_model[BACKUP]
        assert slow["median_latency_ms"] - fast["median_latency_ms"] > 500
        assert fast["score"] > slow["score"] > 0

        # the delay goes: with equal latency the earlier candidate wins the tie again
        # only when it scores at least as well; a cost on the backup makes it dearer
        stub.clear_faults()
        fleet_file.write_text(fleet_file.read_text().replace(
            "  gpt-4.1: {}\n", "  gpt-4.1: {cost: 1000}\n"))
        assert taosync("verify").rc == 0
        assert taosync("apply").rc == 0
        assert files_naming(home, PREFERRED) >= BALANCED_FILES


def test_no_healthy_candidate_keeps_the_last_choice_and_verify_says_so(taosync, home,
                                                                        fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert taosync("apply").rc == 1
        assert balanced_files_on(home, BACKUP)
        stub.add_fault(f"server_error@{BACKUP}")  # now both fail
        r = taosync("verify")
        assert r.rc == 1
        assert f"route balanced → {BACKUP} (no healthy candidate ({PREFERRED}: HTTP 500 at" in r.out
        assert f"kept {BACKUP}" in r.out
        data = json.loads(taosync("verify", "--json").out)
        assert data["ok"] is False and data["routes"]["balanced"]["healthy"] is False
        assert taosync("apply").rc == 0  # nothing moves: the last choice stays
        assert balanced_files_on(home, BACKUP)
        assert taosync("route", "balanced").out == BACKUP + "\n"


def balanced_files_on(home: Path, model: str) -> bool:
    return files_naming(home, model) >= BALANCED_FILES


def test_a_route_choice_is_a_render_input_of_the_cache(taosync, home, fleet_file):
    """The no-op fast path reuses the render while the choice holds (without pydantic or
    httpx), and misses it as soon as the history moves the route."""
    import subprocess
    import sys

    from taosync import pipeline
    from taosync.settings import Settings
    from taosync.stub import Stub

    def prepare():
        return pipeline.prepare(Settings(config=fleet_file, home=home))

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert taosync("apply").rc == 0
        ctx = prepare()
        assert ctx.loaded is None and ctx.routes["balanced"].model == PREFERRED
        probe = ("import sys; from taosync.cli import run; rc = run(['--home', sys.argv[1], "
                 "'-c', sys.argv[2], 'plan', '--check']); "
                 "assert not {'pydantic', 'httpx'} & set(sys.modules), sorted(sys.modules); "
                 "sys.exit(rc)")
        done = subprocess.run([sys.executable, "-c", probe, str(home), str(fleet_file)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr

        stub.add_fault(f"server_error@{PREFERRED}")
        assert taosync("verify").rc == 1
        ctx = prepare()
        assert ctx.loaded is not None, "a moved route must miss the cache"
        assert ctx.routes["balanced"].model == BACKUP
        r = taosync("plan", "--check")
        assert r.rc == 1 and f"route balanced → {BACKUP} ({PREFERRED}: HTTP 500 at" in r.out


def test_per_model_timeout_and_retries_override_verify(taosync, home, fleet_file):
    """A slow stack gets its own (short) timeout and does not hold up the rest; a model's
    retries override verify's."""
    import time

    from taosync.stub import Stub

    faults = ["delay=3@nvidia/deepseek-r1", "server_error=1@intel/llama-7b",
              "server_error=1@gpt-4o-mini"]
    with Stub(key=TEST_KEY, models=MODELS, faults=faults) as stub:
        text = fleet_file.read_text().replace("https://taotoken.net/api", stub.root)
        text = text.replace("nvidia/deepseek-r1: {backend: cuda}",
                            "nvidia/deepseek-r1: {backend: cuda, timeout: 0.5}")
        text = text.replace("intel/llama-7b: {backend: oneapi}",
                            "intel/llama-7b: {backend: oneapi, retries: 0}")
        fleet_file.write_text(text.replace("timeout: 20}", "timeout: 20, retries: 1}"))
        started = time.monotonic()
        r = taosync("verify", "--desired", "--json", "--only", "codex")
        took = time.monotonic() - started
    results = {res["model"]: res for res in json.loads(r.out)["results"]}
    assert r.rc == 1
    deep = results["nvidia/deepseek-r1"]
    assert not deep["ok"] and deep["diagnosis"]["code"] == "timeout", deep
    assert took < 2.5, took  # bounded by the model's 0.5 s, not verify's 20 s
    llama = results["intel/llama-7b"]  # retries: 0 — its one 500 fails it
    assert (llama["ok"], llama["attempts"], llama["status"]) == (False, 1, 500)
    mini = results["gpt-4o-mini"]  # verify's retries: 1 — the 500 is retried
    assert (mini["ok"], mini["attempts"]) == (True, 2)


def test_apply_json_reports_the_extra_write_of_a_moved_route(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        report = json.loads(taosync("apply", "--json").out)
        assert report["routes"]["balanced"]["model"] == PREFERRED  # what it wrote first
        again = report["rerouted"]
        assert again["apply_id"] == report["apply_id"] + 1
        # the user's apply, then a route re-render outside their rollback window
        assert (report["record_kind"], again["record_kind"]) == ("apply", "route")
        assert again["routes"]["balanced"]["model"] == BACKUP
        # every client on the route, and every one taking the MCP server's ${routes.balanced}
        # (llm and shell-gpt: on "fast", no MCP)
        assert {c for f in again["files"] if f["changes"] for c in f["clients"]} == {
            "claude-code", "codex", "cline", "continue", "mistral-vibe", "gptme", "aider",
            "qwen-code", "gemini-cli", "opencode", "kilo"}
        # bounded: the next apply writes nothing, verifies nothing
        r = taosync("apply")
        assert r.rc == 0 and "nothing to do" in r.out


def test_status_never_says_a_route_is_off_the_model_it_is_on(taosync, home, fleet_file):
    """A route with candidates none of which was probed yet stays on its preferred model:
    status says it has no healthy candidate, not that it is "off its preferred" model."""
    choosing_fleet(fleet_file, "http://127.0.0.1:9")
    assert taosync("apply", "--no-verify").rc == 0
    status = taosync("status")
    assert "off its preferred" not in status.out, status.both
    assert f"balanced → {PREFERRED}, its preferred, since " in status.out, status.both
    assert "no healthy candidate" in status.out, status.both
