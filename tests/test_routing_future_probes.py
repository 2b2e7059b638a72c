"""A probe dated in the future does not pin a route (issue #23): a history line whose
time lies beyond the clock-skew allowance (routing.FUTURE_SKEW, 5 minutes) would stay its
candidate's "latest probe" whatever later probes say; routing leaves it out until the
clock reaches it."""

from __future__ import annotations

import json
import time

from conftest import TEST_KEY
from test_routing_failover import BACKUP, MODELS, PREFERRED, choosing_fleet

from taosync.verify import routing

YEAR_2100 = 4102444800.0


def _line(model: str, ok: bool, t: float, route: str = "balanced") -> dict:
    return {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)), "t": t, "run": "forged",
            "stub": False, "model": model, "backend": None, "protocol": "openai-chat",
            "clients": ["cline"], "routes": [route], "ok": ok, "status": None if ok else 500,
            "code": None if ok else "server_error", "latency_ms": 100.0, "ttfb_ms": 50.0,
            "tokens_in": 3, "tokens_out": 2, "attempts": 1}


def test_a_failure_dated_in_2100_does_not_pin_the_route_off_its_preferred(taosync, home,
                                                                          fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root)
        r = taosync("apply")  # verifies every candidate: all pass
        assert r.rc == 0, r.both
        assert taosync("route", "balanced").out == PREFERRED + "\n"
        history = next(home.rglob("history.jsonl"))
        with history.open("a") as f:  # the preferred one "failed", in the year 2100
            f.write(json.dumps(_line(PREFERRED, False, YEAR_2100)) + "\n")
        # the preferred candidate passes now: its real latest probe decides
        assert taosync("verify").rc == 0
        r = taosync("route", "balanced")
        assert r.out == PREFERRED + "\n", r.both
        r = taosync("apply")
        assert r.rc == 0, r.both
        state = json.loads(next(home.rglob("state.json")).read_text())
        assert state["routes"]["balanced"]["model"] == PREFERRED
        assert BACKUP not in (home / ".cline" / "data" / "settings" / "providers.json").read_text()


def test_a_pass_dated_ahead_does_not_keep_a_failing_candidate_healthy():
    now = 1_800_000_000.0
    spec = {"candidates": ["a", "b"], "policy": "failover"}
    records = [_line("a", True, now + 10 * 86400), _line("a", False, now - 60),
               _line("b", True, now - 60)]
    choice = routing.choose("balanced", spec, records, now=now)
    assert choice.model == "b", choice.reason
    assert choice.candidates[0].health == routing.FAILING


def test_clock_skew_within_the_allowance_still_counts():
    now = 1_800_000_000.0
    spec = {"candidates": ["a", "b"], "policy": "failover"}
    ahead = now + routing.FUTURE_SKEW - 1  # another machine's clock a little fast
    records = [_line("a", False, ahead), _line("b", True, now - 60)]
    assert routing.choose("balanced", spec, records, now=now).model == "b"
    records = [_line("a", False, now + routing.FUTURE_SKEW + 1), _line("b", True, now - 60),
               _line("a", True, now - 60)]
    assert routing.choose("balanced", spec, records, now=now).model == "a"
