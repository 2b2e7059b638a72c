"""`taosync stats`: per model, from real verify runs against the stand-in."""

from __future__ import annotations

import json

from conftest import TEST_KEY

from taosync.stub import Stub
from taosync.verify import history

EXAMPLE_ROOT = "https://taotoken.net/api"
MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]


def test_stats_per_model_from_two_real_runs(taosync, fleet_file):
    with Stub(key=TEST_KEY, models=MODELS, faults=["server_error@intel/llama-7b"]) as s:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, s.root)
                              .replace("timeout: 20}", "timeout: 5, retries: 0}"))
        assert taosync("verify", "--desired").rc == 1
        assert taosync("verify", "--desired", "--only", "codex").rc == 1
    r = taosync("stats", "--json")
    assert r.rc == 0
    rows = {row["model"]: row for row in json.loads(r.out)["models"]}
    assert set(rows) == set(MODELS)
    llama = rows["intel/llama-7b"]
    assert (llama["runs"], llama["failures"], llama["backend"]) == (2, 2, "oneapi")
    assert llama["median_latency_ms"] is None and llama["last_code"] == "server_error"
    # claude-code, codex, continue, aider, llm, shell-gpt, gemini-cli probe it; codex twice
    mini = rows["gpt-4o-mini"]
    assert (mini["runs"], mini["failures"]) == (8, 0)
    assert mini["median_latency_ms"] is not None and mini["tokens_out"] > 0
    human = taosync("stats")
    assert "intel/llama-7b" in human.out and "2 (100%)" in human.out
    assert "failed (server_error)" in human.out and "LAST PROBE" in human.out
    assert TEST_KEY not in human.both + r.both


def test_stub_runs_are_left_out_unless_asked(taosync):
    taosync("verify", "--stub")
    r = taosync("stats")
    assert r.rc == 0 and "no verify history yet" in r.out and "--include-stub" in r.out
    rows = json.loads(taosync("stats", "--json", "--include-stub").out)["models"]
    assert {row["model"] for row in rows} == set(MODELS)
    only = json.loads(taosync("stats", "--json", "--include-stub", "--model", "gpt-4o-mini").out)
    assert [row["model"] for row in only["models"]] == ["gpt-4o-mini"]


def test_empty_and_damaged_history(tmp_path):
    assert history.read(tmp_path) == []
    (tmp_path / history.FILE).write_text('{"model": "a", "ok": true, "latency_ms": 10}\n'
                                         "not json\n\n"
                                         '{"model": "a", "ok": true, "latency_ms": 30}\n'
                                         '{"model": "a", "ok": false}\n["odd"]\n')
    (row,) = history.summarize(history.read(tmp_path))
    assert (row["runs"], row["failures"], row["median_latency_ms"]) == (3, 1, 20)
