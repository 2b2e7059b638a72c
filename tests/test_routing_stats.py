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
    assert batch["ranking"][-1]["model"] == "intel/llama-7b"  # the slow one ranks last
    assert batch["advice"].startswith(f"pin {batch['ranking'][0]['model']} for batch: scores ")
    assert "faster" in batch["advice"]
    before = fleet_file.read_text()
    human = taosync("stats", "--recommend").out
    assert "route batch (pinned, now intel/llama-7b" in human
    assert "advice only: fleet.yaml is not changed" in human
    assert fleet_file.read_text() == before

    assert taosync("stats", "--since", "soon").rc == 2
