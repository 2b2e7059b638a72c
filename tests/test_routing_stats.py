"""``stats --by route``, p95, ``--since`` and ``--recommend`` on real verify runs."""

from __future__ import annotations

import json
import time

from conftest import TEST_KEY

from taosync.stub import Stub

EXAMPLE_ROOT = "https://taotoken.net/api"
MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]


def test_stats_by_route_since_and_recommend(taosync, fleet_file, home):
    with Stub(key=TEST_KEY, models=MODELS, faults=["delay=0.4@intel/llama-7b"]) as s:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, s.root)
                              .replace("timeout: 20}", "timeout: 5, retries: 0}"))
        assert taosync("verify", "--desired").rc == 0
        assert taosync("verify", "--desired", "--only", "codex").rc == 0
    hist = next(home.rglob("history.jsonl"))
    old = json.loads(hist.read_text().splitlines()[0])
    old.update(t=time.time() - 7200, ts="2000-01-01T00:00:00Z", model="gpt-4o-mini",
               routes=["fast"], latency_ms=99999.0)
    with hist.open("a") as fh:
        fh.write(json.dumps(old) + "\n")

    rows = {r["route"]: r for r in json.loads(taosync("stats", "--by", "route", "--json").out)["routes"]}
    assert set(rows) == {"fast", "balanced", "deep", "batch"}
    assert rows["batch"]["median_latency_ms"] >= 400 and rows["batch"]["p95_latency_ms"] >= 400
    assert rows["fast"]["p95_latency_ms"] == 99999  # the old, slow probe is in
    assert rows["fast"]["tokens_in"] > 0 and rows["fast"]["median_ttfb_ms"] is not None
    recent = {r["route"]: r for r in json.loads(
        taosync("stats", "--by", "route", "--since", "1h", "--json").out)["routes"]}
    assert recent["fast"]["runs"] == rows["fast"]["runs"] - 1
    assert recent["fast"]["p95_latency_ms"] < 99999
    human = taosync("stats", "--by", "route").out
    assert human.splitlines()[0].split()[:2] == ["ROUTE", "BACKEND"] and "P95" in human

    r = taosync("stats", "--recommend", "--json")
    assert r.rc == 0, r.err
    advice = {row["route"]: row for row in json.loads(r.out)["routes"]}
    batch = advice["batch"]
    assert batch["pinned"] and batch["model"] == "intel/llama-7b"
    # batch names one model: the faster catalogue models are not its candidates, so
    # nothing is advised (issue #29: it used to say "pin <a faster model> for batch")
    assert batch["fixed"] and batch["candidates"] == ["intel/llama-7b"]
    assert [c["model"] for c in batch["ranking"]] == ["intel/llama-7b"]
    assert batch["advice"] is None
    before = fleet_file.read_text()
    human = taosync("stats", "--recommend").out
    assert "batch (intel/llama-7b)" in human and "route batch" not in human
    assert "advice only: fleet.yaml is not changed" in human
    assert fleet_file.read_text() == before

    assert taosync("stats", "--since", "soon").rc == 2


# -- --recommend chooses only among a route's declared candidates (issue #29) ---------------

def _probe(model: str, latency_ms: float, route: str, *, ok: bool = True, tokens: int = 18,
           age: float = 60.0) -> dict:
    """One history line as verify writes it (a real backend, not the stand-in)."""
    t = time.time() - age
    return {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)), "t": t, "run": "r1",
            "stub": False, "model": model, "backend": None, "protocol": "openai-chat",
            "clients": ["cline"], "routes": [route], "ok": ok, "status": None if ok else 500,
            "code": None if ok else "server_error", "latency_ms": latency_ms,
            "ttfb_ms": latency_ms / 2, "tokens_in": tokens - 2, "tokens_out": 2, "attempts": 1}


def _write_history(home, lines: list[dict]) -> None:
    hist = home / ".local" / "state" / "taosync" / "history.jsonl"
    hist.parent.mkdir(parents=True, exist_ok=True)
    hist.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_recommend_never_advises_a_model_a_single_model_route_does_not_declare(taosync, home):
    """The bad advice of issue #29: `deep` names one model; a smaller catalogue model
    answered the 16-token probe faster, and --recommend told the user to pin it for deep
    — on latency alone, with nothing measured about the answers a deep route is for."""
    _write_history(home, [*(_probe("gpt-4o-mini", 120.0, "fast") for _ in range(3)),
                          *(_probe("nvidia/deepseek-r1", 2500.0, "deep") for _ in range(3))])
    r = taosync("stats", "--recommend", "--json")
    assert r.rc == 0, r.err
    doc = json.loads(r.out)
    rows = {row["route"]: row for row in doc["routes"]}
    deep = rows["deep"]
    assert deep["advice"] is None, deep["advice"]
    assert deep["fixed"] is True and deep["candidates"] == ["nvidia/deepseek-r1"]
    assert [c["model"] for c in deep["ranking"]] == ["nvidia/deepseek-r1"]
    for row in doc["routes"]:  # no route is ever advised a model it does not declare
        assert {c["model"] for c in row["ranking"]} <= set(row["candidates"]), row
        assert row["advice"] is None or any(f" {m} " in row["advice"]
                                            for m in row["candidates"]), row
    assert "quality" in doc["basis"]["not_measured"]

    human = taosync("stats", "--recommend").out
    assert "gpt-4o-mini for deep" not in human
    fixed = [line for line in human.splitlines() if line.startswith("fixed")]
    assert len(fixed) == 1, human  # said once, not per route
    assert "deep (nvidia/deepseek-r1)" in fixed[0] and "nothing to recommend" in fixed[0]
    assert "route deep" not in human


CHOOSING = "balanced: {candidates: [claude-sonnet-4-20250514, gpt-4o-mini, nvidia/deepseek-r1]}"


def test_recommend_names_the_best_scoring_candidate_with_its_basis(taosync, home, fleet_file):
    """Among declared candidates: the best by the `score` policy's own formula, with the
    basis said; a faster model outside the candidates is not considered; a candidate
    never probed is said to lack data."""
    fleet_file.write_text(fleet_file.read_text().replace(
        "balanced: claude-sonnet-4-20250514", CHOOSING))
    _write_history(home, [*(_probe("claude-sonnet-4-20250514", 900.0, "balanced")
                            for _ in range(3)),
                          *(_probe("gpt-4o-mini", 200.0, "balanced") for _ in range(3)),
                          *(_probe("intel/llama-7b", 20.0, "batch") for _ in range(3))])
    r = taosync("stats", "--recommend", "--json")
    assert r.rc == 0, r.err
    doc = json.loads(r.out)
    balanced = {row["route"]: row for row in doc["routes"]}["balanced"]
    assert balanced["candidates"] == ["claude-sonnet-4-20250514", "gpt-4o-mini",
                                      "nvidia/deepseek-r1"]
    assert balanced["fixed"] is False and balanced["model"] == "claude-sonnet-4-20250514"
    assert [c["model"] for c in balanced["ranking"]] == ["gpt-4o-mini",
                                                         "claude-sonnet-4-20250514"]
    # the score policy's formula and weight, not a second one
    from taosync.verify.routing import weight_of
    best = balanced["ranking"][0]
    assert best["score"] == weight_of("balanced", None) / (0.2 * 18 * 1.0)
    assert balanced["advice"].startswith("prefer gpt-4o-mini for balanced: scores 4.5× ")
    assert balanced["no_data"] == [{"model": "nvidia/deepseek-r1", "why": "no probe yet"}]
    assert doc["basis"]["score"] == "weight / (median latency s × median tokens × cost)"
    assert doc["basis"]["window"] == 20

    human = taosync("stats", "--recommend").out
    assert "route balanced (chooses by failover, now claude-sonnet-4-20250514" in human
    assert "advice: prefer gpt-4o-mini for balanced" in human
    assert "nvidia/deepseek-r1  no data: no probe yet" in human
    assert "intel/llama-7b" not in human.split("fixed")[0]  # only in the fixed routes' line
    basis = [line for line in human.splitlines() if line.startswith("basis:")]
    assert len(basis) == 1, human
    assert "latency" in basis[0] and "tokens" in basis[0] and "cost" in basis[0]
    assert "quality is not measured" in basis[0]


def test_recommend_with_no_choosing_route_says_so_once(taosync, home):
    _write_history(home, [_probe("gpt-4o-mini", 120.0, "fast")])
    human = taosync("stats", "--recommend").out
    assert "no route declares candidates: nothing to recommend" in human
    assert "advice:" not in human


def test_recommend_says_why_candidates_lack_data(taosync, home, fleet_file):
    """A candidate whose probes failed, and one whose passing probes carry no latency
    (a damaged or hand-written line), are `no data` with the reason — never a crash, nor
    advice on nothing."""
    fleet_file.write_text(fleet_file.read_text().replace(
        "balanced: claude-sonnet-4-20250514", CHOOSING))
    no_latency = _probe("gpt-4o-mini", 0.0, "balanced")
    no_latency["latency_ms"] = None
    _write_history(home, [_probe("claude-sonnet-4-20250514", 900.0, "balanced", ok=False),
                          no_latency])
    doc = json.loads(taosync("stats", "--recommend", "--json").out)
    balanced = {row["route"]: row for row in doc["routes"]}["balanced"]
    assert balanced["ranking"] == [] and balanced["advice"] is None
    why = {c["model"]: c["why"] for c in balanced["no_data"]}
    assert why["claude-sonnet-4-20250514"].startswith("HTTP 500 at ")
    assert why["gpt-4o-mini"] == "no passing probe with a latency"
    assert why["nvidia/deepseek-r1"] == "no probe yet"
    human = taosync("stats", "--recommend")
    assert human.rc == 0, human.err
    assert "claude-sonnet-4-20250514  no data: HTTP 500 at " in human.out
    assert "no passing probe on record: run `taosync --home" in human.out
