"""``watch --reverify``: a backend that fails and recovers moves its route and back,
within one (shortened, real) interval, re-rendering the client files each time."""

from __future__ import annotations

import json
import time

import pytest

from conftest import TEST_KEY
from test_routing_failover import (BACKUP, BALANCED_FILES, MODELS, PREFERRED, choosing_fleet,
                                   files_naming)
from test_watch import Harness, wait_until

INTERVAL = 0.4


def balanced_on(home, model) -> bool:
    return files_naming(home, model) >= BALANCED_FILES


def last_kind(home) -> str | None:
    """The kind of the newest history record (None before the first)."""
    try:
        applies = json.loads(next(home.rglob("state.json")).read_text())["applies"]
    except (StopIteration, ValueError):
        return None
    return applies[-1]["kind"] if applies else None


def test_reverify_moves_the_route_on_failure_and_back_on_recovery(home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        h = Harness(home, fleet_file, verify=True, reverify=INTERVAL)
        h.watcher.start()
        try:
            moved = h.wait_event("route")
            assert moved.message.startswith(f"route balanced → {BACKUP} ({PREFERRED}: HTTP 500")
            assert moved.data["from"] == PREFERRED and moved.data["model"] == BACKUP
            wait_until(lambda: balanced_on(home, BACKUP), what="clients on the backup")
            assert not any(f in BALANCED_FILES for f in files_naming(home, PREFERRED))
            # the re-render is a route record, not one of the user's applies (issue 23)
            wait_until(lambda: last_kind(home) == "route", what="a route record")

            # nothing moves while the preferred one keeps failing: the timer verifies
            # again, the route stays
            timed = len(h.of("verified"))
            h.wait_event("verified", count=timed + 2, timeout=INTERVAL * 10)
            assert len(h.of("route")) == 1

            recovered_at = time.monotonic()
            stub.clear_faults()
            back = h.wait_event("route", count=2, timeout=INTERVAL * 10)
            took = time.monotonic() - recovered_at
            assert back.message == (f"route balanced → {PREFERRED} "
                                    "(preferred candidate healthy)")
            wait_until(lambda: balanced_on(home, PREFERRED), what="clients back on preferred")
            assert took < INTERVAL * 3 + 1.0, took  # within about one interval
            json.dumps(back.to_dict())  # a JSON line for --json
        finally:
            h.watcher.stop(timeout=3)


@pytest.mark.parametrize("bad", ["soon", "0", "-5m"])
def test_reverify_interval_is_checked(taosync, bad):
    r = taosync("watch", "--reverify", bad)
    assert r.rc == 2 and "--reverify" in r.err and "Traceback" not in r.both
