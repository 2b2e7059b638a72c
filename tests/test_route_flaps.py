"""A flapping backend is not the user's history (issue 23, Build 4b).

A route's re-render (only its choice moved) is a ``route`` record outside the user's
rollback window, so 25+ switches never push the user's applies or the backups of their
original files out; and a dwell (hysteresis) keeps a route on a healthy choice for a
while before it moves to another healthy candidate, while leaving a failing choice stays
immediate. Driven by real ``python -m taosync`` processes against the stand-in gateway
with faults; the clock is moved by writing the route's ``since`` in state.json (the
moment the dwell runs from), as if that much time had passed.
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path

from conftest import EXAMPLE_FLEET, TEST_KEY, snapshot
from test_certificate import STATE, certified, cli
from test_routing_failover import (BACKUP, BALANCED_FILES, MODELS, PREFERRED, choosing_fleet,
                                   files_naming)

FLAPS = 25  # route switches: 13 away from the failing preferred model, 12 back

#: the user's own files before taosync ever ran: their backups must stay rollback-able
ORIGINALS = {
    ".codex/config.toml": '# mine\nmodel = "o3"\napproval_policy = "never"\n',
    ".claude/settings.json": '{\n  "theme": "dark",\n  "model": "opus"\n}\n',
}


def client_files(home: Path) -> dict[str, str]:
    """Every client file (taosync's own state left out) → sha256."""
    return {p: h for p, h in snapshot(home).items() if not p.startswith(STATE)}


def state_of(home: Path) -> dict:
    return json.loads((home / STATE / "state.json").read_text())


def kinds(home: Path) -> list[tuple[int, str]]:
    return [(r["id"], r["kind"]) for r in state_of(home)["applies"]]


def on(home: Path, model: str) -> bool:
    return files_naming(home, model) >= BALANCED_FILES


def age_route(home: Path, seconds: float, route: str = "balanced") -> None:
    """As if ``seconds`` had passed since the route moved to its choice."""
    path = home / STATE / "state.json"
    state = json.loads(path.read_text())
    moved = time.gmtime(since_of(state, route) - seconds)
    state["routes"][route]["since"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", moved)
    path.write_text(json.dumps(state))


def since_of(state: dict, route: str = "balanced") -> float:
    return calendar.timegm(time.strptime(state["routes"][route]["since"],
                                         "%Y-%m-%dT%H:%M:%SZ"))


def seed_originals(home: Path) -> None:
    for rel, text in ORIGINALS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)


def test_25_route_switches_keep_the_users_applies_and_original_backups(taosync, home,
                                                                       fleet_file):
    """A backend failing and recovering 13 times, seen by repeated ``verify`` and the
    ``apply`` after each: 25 route re-renders (the last onto the backup), recorded as
    route records with their own cap; the user's two applies and the backups of their
    original files stay, and two rollbacks give back first the user's state after their
    first apply, then the files they had before taosync."""
    from taosync.engine.state import KEEP_ROUTES
    from taosync.stub import Stub

    seed_originals(home)
    before_taosync = client_files(home)
    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root, dwell="0s")  # every flap moves the route
        first = cli(home, fleet_file, "apply")
        assert first.returncode == 0, first.stdout + first.stderr
        after_first = client_files(home)
        assert (home / STATE / "backups" / "1").is_dir()
        # the user's own second apply: Codex on the deep route
        fleet_file.write_text(fleet_file.read_text().replace(
            "codex: {model: fast,", "codex: {model: deep,"))
        second = cli(home, fleet_file, "apply", "--no-verify")
        assert second.returncode == 0 and "applied #2" in second.stdout, second.stdout
        assert kinds(home) == [(1, "apply"), (2, "apply")]

        for flap in range(FLAPS):
            failing = flap % 2 == 0
            stub.clear_faults()
            if failing:
                stub.add_fault(f"server_error@{PREFERRED}")
            verified = cli(home, fleet_file, "verify")
            assert verified.returncode == (1 if failing else 0), verified.stdout
            moved = taosync("apply", "--no-verify")  # in-process: the loop's time
            assert moved.rc == 0, moved.both
            assert "re-rendered for the route choice (a route switch, not your apply" \
                in moved.out, moved.out
            assert on(home, BACKUP if failing else PREFERRED), flap

    records = kinds(home)
    assert records[:2] == [(1, "apply"), (2, "apply")], records
    # the newest KEEP_ROUTES route records, and the first after apply #2: apply #2 wrote
    # only Codex's file, so that one holds the route's files as they were at #2
    routes = [i for i, kind in records if kind == "route"]
    newest = list(range(3 + FLAPS - KEEP_ROUTES, 3 + FLAPS))
    assert routes == [3, *newest], records
    kept_backups = {p.name for p in (home / STATE / "backups").iterdir()}
    assert kept_backups == {str(i) for i in [1, 2, 3, *newest]}, kept_backups

    log = cli(home, fleet_file, "log")
    assert f"  #3-#{2 + FLAPS} " in log.stdout, log.stdout  # one line for them all
    assert f"{KEEP_ROUTES + 1} route re-renders of " in log.stdout, log.stdout
    assert "* #2 " in log.stdout and "  #1 " in log.stdout, log.stdout
    assert cli(home, fleet_file, "log", "-v").stdout.count("route re-render (a route's") \
        == KEEP_ROUTES + 1

    # a route record is no apply to roll back to
    to_route = cli(home, fleet_file, "rollback", "--to", str(routes[-1]))
    assert to_route.returncode == 2 and "is a route re-render, not one of your applies" \
        in to_route.stderr, to_route.stderr

    back = cli(home, fleet_file, "rollback")  # steps over the route records and apply #2
    assert back.returncode == 0 and "rolled back apply #2" in back.stdout, back.stdout
    assert client_files(home) == after_first
    assert cli(home, fleet_file, "rollback").returncode == 0  # and over apply #1
    assert client_files(home) == before_taosync
    for rel, text in ORIGINALS.items():
        assert (home / rel).read_text() == text


def test_a_dwell_holds_a_healthy_choice_and_moves_after_it(home, fleet_file):
    """Default dwell (10m): the route leaves its failing preferred model at once; when
    that recovers, the route stays on the backup (apply writes nothing; route, explain,
    status and plan say why and until when) until the dwell has passed, then moves back
    — recorded as a route record."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root, dwell=None)  # the default
        assert cli(home, fleet_file, "apply").returncode == 0
        assert on(home, PREFERRED)

        stub.add_fault(f"server_error@{PREFERRED}")  # away: immediate, whatever the dwell
        assert cli(home, fleet_file, "verify").returncode == 1
        moved = cli(home, fleet_file, "apply", "--no-verify")
        assert moved.returncode == 0 and on(home, BACKUP), moved.stdout
        assert kinds(home)[-1][1] == "route"
        records = len(kinds(home))

        stub.clear_faults()  # the preferred one is back: the route holds
        assert cli(home, fleet_file, "verify").returncode == 0
        route = cli(home, fleet_file, "route", "balanced", "--explain")
        assert route.stdout.splitlines()[0] == BACKUP, route.stdout
        why = route.stdout.splitlines()[-1]
        assert why.startswith(f"policy failover: held on {BACKUP} until "), why
        assert f"(dwell 10m); then {PREFERRED}: preferred candidate healthy" in why, why
        data = json.loads(cli(home, fleet_file, "route", "balanced", "--explain",
                              "--json").stdout)
        assert data["choice"]["instead"] == PREFERRED and data["choice"]["held_until"]
        held = cli(home, fleet_file, "apply", "--no-verify")
        assert held.returncode == 0 and held.stdout.startswith("nothing to do"), held.stdout
        assert on(home, BACKUP) and len(kinds(home)) == records
        assert cli(home, fleet_file, "plan", "--check").returncode == 0
        status = cli(home, fleet_file, "status")
        assert f"balanced → {BACKUP}, off its preferred {PREFERRED} since " in status.stdout
        assert f"(held on {BACKUP} until " in status.stdout, status.stdout
        # the certified no-op holds only until the dwell ends
        assert cli(home, fleet_file, "status").returncode == 0
        until = certified(home)["until"]
        assert until is not None and until <= since_of(state_of(home)) + 600

        age_route(home, 9 * 60)  # 9 of 10 minutes: still held
        assert cli(home, fleet_file, "plan", "--check").returncode == 0
        assert cli(home, fleet_file, "route", "balanced").stdout == BACKUP + "\n"

        age_route(home, 2 * 60)  # 11 minutes: the dwell is over
        assert cli(home, fleet_file, "route", "balanced").stdout == PREFERRED + "\n"
        back = cli(home, fleet_file, "apply", "--no-verify")
        assert back.returncode == 0 and on(home, PREFERRED), back.stdout
        assert kinds(home)[-1][1] == "route" and len(kinds(home)) == records + 1


def test_a_failing_choice_is_left_at_once_within_its_dwell(home, fleet_file):
    """Held on the backup (just moved there, healthy), the backup now fails while the
    preferred one passes: the route moves at once — a broken backend is never kept."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root, dwell="1h")
        assert cli(home, fleet_file, "apply").returncode == 1  # the preferred one fails
        assert on(home, BACKUP) and state_of(home)["routes"]["balanced"]["healthy"]
        stub.clear_faults()
        stub.add_fault(f"server_error@{BACKUP}")
        assert cli(home, fleet_file, "verify").returncode == 1
        assert cli(home, fleet_file, "route", "balanced").stdout == PREFERRED + "\n"
        moved = cli(home, fleet_file, "apply", "--no-verify")
        assert moved.returncode == 0 and on(home, PREFERRED), moved.stdout
        reason = state_of(home)["routes"]["balanced"]["reason"]
        assert reason == "preferred candidate healthy", reason


def test_a_flapping_backend_rewrites_the_clients_once_within_the_dwell(taosync, home,
                                                                       fleet_file):
    """Ten flaps of the preferred model within the default dwell: one switch away (at
    once), then the route holds on the healthy backup — one route record, not ten."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root, dwell=None)
        assert taosync("apply").rc == 0
        for flap in range(10):
            stub.clear_faults()
            if flap % 2 == 0:
                stub.add_fault(f"server_error@{PREFERRED}")
            taosync("verify")
            assert taosync("apply", "--no-verify").rc == 0
            assert on(home, BACKUP), flap
    assert [kind for _, kind in kinds(home)] == ["apply", "route"]


def test_a_hand_edit_overwritten_with_a_route_move_stays_the_users_apply(taosync, home,
                                                                         fleet_file):
    """A write that also puts back a key the user edited holds their edit in its backup:
    it is the user's apply (rollback steps back over it, edit and all), not a route
    record."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert taosync("apply").rc == 0
        settings = home / ".claude" / "settings.json"
        edited = settings.read_text().replace(PREFERRED, "my-own-model")
        settings.write_text(edited)
        stub.add_fault(f"server_error@{PREFERRED}")
        taosync("verify")
        assert taosync("apply", "--no-verify", "--force").rc == 0
        assert kinds(home)[-1] == (2, "apply")
        assert taosync("rollback").rc == 0
        assert settings.read_text() == edited


def test_an_old_state_without_record_kinds_reads_them_as_applies(home):
    """State files from before kinds existed: a record without one is a user's apply."""
    from taosync.engine.state import State

    state = State.from_json({"applies": [{"id": 1, "time": "t", "files": []}]})
    assert state.applies[0].kind == "apply"


def test_pruning_keeps_the_user_window_and_the_route_records_a_rollback_needs():
    from taosync.engine.state import (KEEP_APPLIES, KEEP_ROUTES, ApplyRecord,
                                      prune_history)

    def rec(i, kind, *paths):
        return ApplyRecord(i, "t", kind, [{"path": p, "backup": None} for p in paths])

    # apply #1 wrote a and b; 30 route records rewrite b: only the newest KEEP_ROUTES stay
    records = [rec(1, "apply", "a", "b")] + [rec(i, "route", "b") for i in range(2, 32)]
    kept, dropped = prune_history(records)
    assert [r.id for r in kept] == [1, *range(32 - KEEP_ROUTES, 32)]
    assert len(dropped) == 30 - KEEP_ROUTES
    # apply #1 wrote only a: the first route record after it holds b as it was before
    # (rollback over #1 reads it), so it stays beyond the cap
    records = [rec(1, "apply", "a")] + [rec(i, "route", "b") for i in range(2, 32)]
    kept, _ = prune_history(records)
    assert [r.id for r in kept] == [1, 2, *range(32 - KEEP_ROUTES, 32)]
    # route records never count against the user's window
    records = [rec(i, "apply", "a") for i in range(1, KEEP_APPLIES + 1)] + \
        [rec(i, "route", "a") for i in range(KEEP_APPLIES + 1, KEEP_APPLIES + 40)]
    kept, _ = prune_history(records)
    assert [r.id for r in kept if r.kind == "apply"] == list(range(1, KEEP_APPLIES + 1))


def test_the_hold_is_a_pure_function_of_history_state_and_clock():
    """routing.choose with the route's last choice and when it moved there: held within
    the dwell, moved after it, never held on a failing choice, and a switch dated in the
    future holds nothing (a skewed clock must not pin the route)."""
    from taosync.verify.routing import choose

    spec = {"candidates": ["a", "b"], "policy": "failover", "dwell": "10m"}
    now = 1_000_000.0

    def probe(model, ok, t=now - 5):
        return {"model": model, "ok": ok, "t": t, "latency_ms": 100.0, "protocol": "openai"}

    both_pass = [probe("a", True), probe("b", True)]
    held = choose("balanced", spec, both_pass, now=now, previous="b", since=now - 60)
    assert (held.model, held.instead, held.held_until) == ("b", "a", now - 60 + 600)
    assert held.reason.startswith("held on b until ") and "(dwell 10m); then a: " in held.reason
    assert choose("balanced", spec, both_pass, now=now, previous="b",
                  since=now - 600).model == "a"
    assert choose("balanced", spec, both_pass, now=now, previous="b", since=None).model == "a"
    assert choose("balanced", spec, both_pass, now=now, previous="b",
                  since=now + 3600).model == "a"
    b_fails = [probe("a", True), probe("b", False)]
    away = choose("balanced", spec, b_fails, now=now, previous="b", since=now - 60)
    assert away.model == "a" and away.held_until is None
    assert choose("balanced", dict(spec, dwell="0s"), both_pass, now=now, previous="b",
                  since=now - 1).model == "a"


def test_dwell_takes_a_duration_or_seconds_and_refuses_a_bad_one(taosync, fleet_file):
    """``dwell: 0`` (a number: seconds) moves at once; a bad one is a located error."""
    from taosync.verify.routing import choose

    both = [{"model": m, "ok": True, "t": 99.0, "latency_ms": 1.0} for m in ("a", "b")]
    spec = {"candidates": ["a", "b"], "dwell": 0}
    assert choose("r", spec, both, now=100.0, previous="b", since=99.0).model == "a"
    def fleet(dwell: str) -> None:
        fleet_file.write_text(EXAMPLE_FLEET.read_text())
        choosing_fleet(fleet_file, "http://127.0.0.1:9", dwell=dwell)

    fleet("0")
    assert taosync("validate").rc == 0
    for bad, words in (("soon", "routes.balanced.dwell"), ("-3", "must be at least 0")):
        fleet(bad)
        r = taosync("validate")
        assert r.rc == 2 and words in r.both and "Traceback" not in r.both, r.both
        assert f"{fleet_file}:" in r.both
