"""Verify at scale: probes spread over small connection pools, in-flight probes capped."""

from __future__ import annotations

import time

import pytest

from taosync.clients.base import ProbeSpec
from taosync.errors import BadInput
from taosync.fleet.model import Verify
from taosync.fleet.secrets import Secret
from taosync.stub import Stub
from taosync.verify import runner

RAW = "sk-test-SCALE-0123456789abcdef"


def chat(root: str, model: str) -> ProbeSpec:
    return ProbeSpec("cline", model, model, "openai-chat", root + "/v1",
                     root + "/v1/chat/completions", "bearer")


def test_many_backends_over_several_pools_come_back_in_order():
    n = runner.POOL_SIZE * 2 + 3
    models = [f"m{i:02d}" for i in range(n)]
    with Stub(key=RAW, models=models) as s:
        results = runner.run([chat(s.root, m) for m in models], Secret(RAW), Verify(retries=0))
        assert len(s.posts("/v1/chat/completions")) == n
    assert [r.model for r in results] == models
    assert all(r.ok for r in results)


def test_the_in_flight_cap_is_honoured(monkeypatch):
    """Three probes of 0.2 s each, one at a time, cannot take less than 0.6 s."""
    monkeypatch.setenv("TAOSYNC_VERIFY_CONCURRENCY", "1")
    with Stub(key=RAW, models=["a", "b", "c"], faults=["delay=0.2"]) as s:
        start = time.perf_counter()
        results = runner.run([chat(s.root, m) for m in "abc"], Secret(RAW), Verify(retries=0))
        elapsed = time.perf_counter() - start
    assert all(r.ok for r in results)
    assert elapsed >= 0.6


@pytest.mark.parametrize("raw", ["0", "-3", "many"])
def test_a_bad_cap_is_bad_input(raw):
    with pytest.raises(BadInput, match="TAOSYNC_VERIFY_CONCURRENCY"):
        runner.max_in_flight(Verify(), {"TAOSYNC_VERIFY_CONCURRENCY": raw})
    assert runner.max_in_flight(Verify(), {}) == runner.MAX_IN_FLIGHT
    assert runner.max_in_flight(Verify(), {"TAOSYNC_VERIFY_CONCURRENCY": "3"}) == 3
