"""The route choice from history (taosync/verify/routing.py): pure, deterministic,
property-tested, plus the fleet checks and the bounded history it reads."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from taosync.verify import history, routing

NOW = 1_800_000_000.0
MODELS = ["m-a", "m-b", "m-c", "m-d"]

record = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS),
    "protocol": st.sampled_from(["openai-chat", "anthropic-messages"]),
    "ok": st.booleans(),
    "t": st.floats(min_value=NOW - 3 * 86400, max_value=NOW, allow_nan=False),
    "status": st.sampled_from([None, 200, 500, 429]),
    "latency_ms": st.one_of(st.none(), st.floats(min_value=1, max_value=5000)),
    "tokens_in": st.integers(min_value=0, max_value=50),
    "tokens_out": st.integers(min_value=0, max_value=50),
    "stub": st.booleans(),
})
spec = st.fixed_dictionaries({
    "candidates": st.lists(st.sampled_from(MODELS), min_size=1, max_size=4, unique=True),
    "policy": st.sampled_from(["failover", "score"]),
    "weight": st.one_of(st.none(), st.floats(min_value=0.1, max_value=2)),
    "cost": st.dictionaries(st.sampled_from(MODELS), st.floats(min_value=0.1, max_value=10)),
})


@settings(max_examples=300, deadline=None)
@given(spec=spec, records=st.lists(record, max_size=40), data=st.data(),
       previous=st.one_of(st.none(), st.sampled_from(MODELS)))
def test_the_choice_is_a_candidate_healthy_if_any_and_order_independent(spec, records, data,
                                                                        previous):
    choice = routing.choose("balanced", spec, records, now=NOW, window=5, max_age="24h",
                            previous=previous)
    assert choice.model in spec["candidates"]
    healthy = [c.model for c in choice.candidates if c.health == routing.HEALTHY]
    assert choice.healthy == bool(healthy)
    if healthy:
        assert choice.model in healthy
        if spec["policy"] == "failover":
            assert choice.model == healthy[0]
    else:
        assert choice.model == (previous if previous in spec["candidates"]
                                else spec["candidates"][0])
    shuffled = data.draw(st.permutations(records))
    again = routing.choose("balanced", spec, shuffled, now=NOW, window=5, max_age="24h",
                           previous=previous)
    assert (again.model, again.reason) == (choice.model, choice.reason)


def probe(model, ok, t, latency=100.0, protocol="openai-chat", status=None, tokens=10):
    return {"model": model, "ok": ok, "t": t, "protocol": protocol, "latency_ms": latency,
            "status": status if status is not None else (200 if ok else 500),
            "tokens_in": tokens, "tokens_out": 0}


FAILOVER = {"candidates": ["m-a", "m-b"], "policy": "failover"}


def test_failover_moves_on_a_failure_and_returns_on_recovery():
    down = [probe("m-a", True, NOW - 60), probe("m-a", False, NOW - 30), probe("m-b", True, NOW - 30)]
    choice = routing.choose("balanced", FAILOVER, down, now=NOW)
    assert choice.model == "m-b"
    assert choice.reason.startswith("m-a: HTTP 500 at ")
    back = down + [probe("m-a", True, NOW - 1)]
    assert routing.choose("balanced", FAILOVER, back, now=NOW).model == "m-a"


def test_a_probe_older_than_max_age_is_not_healthy_and_never_probed_is_unknown():
    old = [probe("m-a", True, NOW - 7200), probe("m-b", True, NOW - 60)]
    choice = routing.choose("balanced", FAILOVER, old, now=NOW, max_age="1h")
    assert choice.model == "m-b" and choice.candidates[0].health == routing.STALE
    fresh = routing.choose("balanced", FAILOVER, [], now=NOW, previous="m-b")
    assert (fresh.model, fresh.healthy) == ("m-b", False)  # keeps the last choice
    assert [c.health for c in fresh.candidates] == [routing.UNKNOWN] * 2
    assert "no healthy candidate" in fresh.reason


def test_a_candidate_is_healthy_only_when_every_protocol_passed():
    mixed = [probe("m-a", True, NOW - 5, protocol="openai-chat"),
             probe("m-a", False, NOW - 5, protocol="anthropic-messages"),
             probe("m-b", True, NOW - 5)]
    assert routing.choose("balanced", FAILOVER, mixed, now=NOW).model == "m-b"


def test_score_is_weight_over_latency_tokens_cost_and_ties_keep_the_earlier():
    score = {"candidates": ["m-a", "m-b"], "policy": "score", "cost": {"m-b": 2}}
    recs = [probe("m-a", True, NOW - 5, latency=1000, tokens=10),
            probe("m-b", True, NOW - 5, latency=500, tokens=10)]
    choice = routing.choose("deep", score, recs, now=NOW)
    a, b = choice.candidates
    assert a.score == b.score == 0.4 / (1.0 * 10 * 1)  # deep: base 0.4; b: half the time, twice the cost
    assert choice.model == "m-a"  # a tie keeps the earlier candidate
    cheaper = dict(score, cost={"m-b": 1.5})
    assert routing.choose("deep", cheaper, recs, now=NOW).model == "m-b"


def test_the_stand_in_gateway_is_no_evidence():
    recs = [dict(probe("m-a", False, NOW - 5), stub=True), probe("m-a", True, NOW - 60)]
    assert routing.choose("balanced", FAILOVER, recs, now=NOW).candidates[0].health == "healthy"


# ------------------------------------------------------------------ bounded history


def test_history_is_capped_keeping_every_models_latest_window(tmp_path, monkeypatch):
    from taosync.engine.system import current

    target = tmp_path / history.FILE
    lines = [json.dumps(probe("rare", True, 1.0))] * 30 + \
            [json.dumps(probe("busy", True, float(i))) for i in range(3000)]
    target.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(history, "KEEP", 100)
    history._cap(current(), target, keep=20, max_bytes=1000)
    kept = history.read(tmp_path)
    assert len(kept) == 120
    assert sum(r["model"] == "rare" for r in kept) == 20
    assert [r["t"] for r in kept if r["model"] == "busy"] == [float(i) for i in range(2900, 3000)]
    assert oct(target.stat().st_mode & 0o777) == "0o600"


# ------------------------------------------------------------------ fleet checks


def test_route_candidates_are_checked_with_located_errors(taosync, fleet_file):
    text = fleet_file.read_text()
    fleet_file.write_text(text.replace(
        "  balanced: claude-sonnet-4-20250514\n",
        "  balanced:\n    candidates: [claude-sonnet-4-2025051, gpt-4o-mini]\n"))
    r = taosync("validate")
    assert r.rc == 2
    assert ":20:18: routes.balanced.candidates[0]: " in r.err, r.err
    assert "did you mean 'claude-sonnet-4-20250514'?" in r.err
    for bad, words in (("candidates: []", "candidates"), ("{candidates: [gpt-4o-mini], policy: fastest}",
                                                           "policy")):
        fleet_file.write_text(text.replace("  balanced: claude-sonnet-4-20250514\n",
                                           f"  balanced: {bad}\n" if bad.startswith("{")
                                           else f"  balanced: {{{bad}}}\n"))
        r = taosync("validate")
        assert r.rc == 2 and words in r.err and "Traceback" not in r.both, r.both
    assert "failover" in r.err  # the unknown policy names the known ones


def test_the_states_route_choices_are_shape_checked():
    import pytest

    from taosync.engine.state import Damaged, State

    good = {"balanced": {"model": "m-b", "preferred": "m-a", "reason": "m-a: HTTP 500 at 12:03",
                         "since": "2026-12-01T12:03:00Z", "healthy": True}}
    state = State.from_json({"routes": good})
    assert state.routes == good and state.to_json()["routes"] == good
    assert "routes" not in State().to_json()  # none: the state stays as it was
    for bad, where in (([], "routes is list"),
                       ({"balanced": "m-b"}, "routes['balanced'] is str"),
                       ({"balanced": dict(good["balanced"], healthy="yes")},
                        "routes['balanced'].healthy is str"),
                       ({"balanced": {k: v for k, v in good["balanced"].items()
                                      if k != "model"}}, "routes['balanced'].model is NoneType")):
        with pytest.raises(Damaged, match=re.escape(where)):
            State.from_json({"routes": bad})


def test_healthy_means_every_protocol_the_routes_clients_speak():
    def on_route(rec):
        return dict(rec, routes=["balanced"])

    recs = [on_route(probe("m-a", True, NOW - 5, protocol="anthropic-messages")),
            on_route(probe("m-a", True, NOW - 5, protocol="openai-chat")),
            on_route(probe("m-b", True, NOW - 5, protocol="openai-chat"))]
    down = recs + [on_route(probe("m-a", False, NOW - 1, protocol="anthropic-messages"))]
    choice = routing.choose("balanced", FAILOVER, down, now=NOW)
    # m-b was never probed the way Claude Code asks: unknown, so not a safe move
    assert [c.health for c in choice.candidates] == [routing.FAILING, routing.UNKNOWN]
    assert (choice.model, choice.healthy) == ("m-a", False)
    both = down + [on_route(probe("m-b", True, NOW - 1, protocol="anthropic-messages"))]
    assert routing.choose("balanced", FAILOVER, both, now=NOW).model == "m-b"
    # a protocol no client of the route spoke within max_age no longer counts
    gone = [on_route(probe("m-a", False, NOW - 2 * 86400, protocol="anthropic-messages")),
            on_route(probe("m-a", True, NOW - 5, protocol="openai-chat"))]
    later = routing.choose("balanced", FAILOVER, gone, now=NOW, max_age="24h")
    assert later.model == "m-a" and later.healthy


def test_fallbacks_for_is_the_routes_other_candidates_preferred_first(tmp_path):
    """The chain clients with their own per-request failover are given: the candidates
    after taking out the one chosen now, in the route's order; none for a plain route or
    a model id."""
    from taosync.fleet.load import load_fleet

    path = tmp_path / "fleet.yaml"
    path.write_text(
        "version: 1\ngateway: {base_url: 'https://gw.example/v1', key: sk-inline-0123456789}\n"
        "models: {m-a: {}, m-b: {}, m-c: {}}\n"
        "routes: {fast: m-a, balanced: {candidates: [m-a, m-b, m-c]}}\n"
        "default_route: balanced\nclients: {codex: {}}\n", encoding="utf-8")
    fleet = load_fleet(path, home=tmp_path, environ={}).fleet
    assert fleet.fallbacks_for("balanced") == ["m-b", "m-c"]
    assert fleet.fallbacks_for(None) == ["m-b", "m-c"]  # the default route
    assert fleet.fallbacks_for("fast") == [] and fleet.fallbacks_for("m-c") == []
    fleet.choose_routes({"balanced": "m-b"})  # m-a failed: the chain starts over m-a, m-c
    assert fleet.model_for("balanced") == "m-b"
    assert fleet.fallbacks_for("balanced") == ["m-a", "m-c"]
