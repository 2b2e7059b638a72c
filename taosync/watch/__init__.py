"""``taosync watch``'s loop: watchdog events → debounce → the apply pipeline → verify.

What is watched: fleet.yaml, the key file of a ``${file:…}`` key and every target file,
each through its directory (editors save by rename, by truncate-and-write or via a
backup file; a target may not exist yet). A directory that does not exist is watched
through its nearest existing ancestor and re-armed when it appears; a watched directory
that vanishes (or is replaced) is re-armed too, by its deletion event and by a check
every :data:`REARM_INTERVAL`.

One worker thread runs one cycle at a time. Events only mark what is pending, so a
change that arrives during a run causes exactly one follow-up run. A cycle starts once
nothing has moved for ``debounce`` seconds (and a file still open for writing has been
closed), or :data:`MAX_DELAY` after the first pending event, whichever is first.

* fleet.yaml or the key file changed → ``pipeline.prepare(use_cache=False)`` (load,
  validate, render); invalid → the located problems (once the file reads the same a
  debounce later: a save caught half-way is loaded again instead), nothing written, the
  last good fleet stays in force; valid → ``pipeline.plan_apply`` + ``pipeline.commit``, the same
  transaction and lock as ``taosync apply``; then the clients whose files were written
  are verified. To keep save-to-synced latency low, load and plan run speculatively as
  soon as the file has been quiet for :data:`SETTLE`; the result is used only if
  nothing moved until the debounce ran out.
* a target changed → plan against the last good fleet. taosync's own writes come back
  as byte-identical files (the engine's fast path; no parse) and end there; a file some
  other program rewrote with every owned key intact plans "unchanged" and is left alone
  (reported once); an owned key that drifted is re-asserted (``drift="fix"``) or only
  reported (``drift="warn"``). A file re-asserted :data:`FIGHT_LIMIT` times within
  its window is only reported from then on, so a program that keeps resetting a key
  cannot drive an endless write loop.

Verification runs on its own thread, one run at a time; requests made while one runs
are merged into a single follow-up. Every outcome is an :class:`Event` handed to the
callback (the command prints them; tests collect them). :meth:`Watcher.stop` never
interrupts a transaction: it waits for one in progress and none starts after it.

Another taosync's rollback, redo, destroy, forget or adopt is taken as the new baseline:
nothing is written until fleet.yaml renders something else (``peers``).

The parts: ``events`` (Event, Options), ``arming`` (watches and incoming events),
``scheduler`` (the worker loop, debounce, speculation), ``cycle`` (what a cycle does),
``verifier`` (verification after an apply), ``peers`` (other taosync processes);
:class:`Watcher` holds their shared state.
It prints nothing and imports neither click nor any command.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from taosync.watch.arming import CLOSE_WAIT, REARM_INTERVAL, Arming, Handler
from taosync.watch.cycle import FIGHT_LIMIT, LOCK_WAIT, MAX_RETRIES, RETRY_DELAY, Cycle
from taosync.watch.events import FIX, FLEET, KEY, TARGET, WARN, Event, Options
from taosync.watch.peers import Peers
from taosync.watch.scheduler import MAX_DELAY, SETTLE, Scheduler, Pending, Speculation
from taosync.watch.verifier import Verifier

__all__ = ["CLOSE_WAIT", "FIGHT_LIMIT", "FIX", "FLEET", "KEY", "LOCK_WAIT", "MAX_DELAY",
           "MAX_RETRIES", "REARM_INTERVAL", "RETRY_DELAY", "SETTLE", "TARGET", "WARN",
           "Event", "Options", "Watcher"]


class Watcher(Scheduler, Arming, Cycle, Peers):
    """Keep every client file in sync with fleet.yaml; ``start()`` / ``stop()``.

    ``on_event(Event)`` is called from the watcher's threads, one call at a time.
    """

    def __init__(self, settings, options: Options | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        # pin the fleet path: ./fleet.yaml deleted must not switch to another file
        self.settings = dataclasses.replace(
            settings, config=Path(os.path.abspath(settings.config_path())))
        self.options = options or Options()
        self._on_event = on_event or (lambda event: None)
        self.fleet_path = str(self.settings.config)
        self.home = self.settings.home_dir

        self._cond = threading.Condition()
        self._pending = Pending()
        self._gen = 0  # counts events; a speculation is good while it is unchanged
        self._open: dict[str, float] = {}  # path → when a still-open write was seen
        self._stopping = False
        self._txn = threading.Lock()  # held for a whole transaction
        self._emit_lock = threading.Lock()
        self._closed = False  # after stop(): a straggling thread prints nothing more
        self._busy = False  # a cycle is running

        self._ctx = None  # the last good pipeline.Context
        self._redactor = None  # every secret seen this run, to scrub from every event
        self._key_file: str | None = None
        self._targets: dict[str, str] = {}  # watched path (as given and real) → state key
        #: path the last render looked at → what it found there (engine/cache.py path_kind)
        self._inputs: dict[str, str | None] = {}
        self._interest: dict[str, str] = {self.fleet_path: FLEET}
        self._ancestors: frozenset[str] = frozenset()
        self._watches: dict[str, tuple[Any, tuple[int, int] | None]] = {}
        self._watch_lock = threading.Lock()
        self._observer = None
        self._close_events = False
        self._spec: Speculation | None = None

        self._retries = 0
        #: fleet.yaml as it read (its sha256, or "absent") the last time it failed to load
        #: and was given a debounce to settle before being reported
        self._failed_read: str | None = None
        self._warned: set[str] = set()
        self._reported: dict[str, str] = {}  # state key → what was last reported about it
        self._reasserts: dict[str, deque] = {}
        self._fighting: set[str] = set()
        self._first_cycle = True
        self._announced = False

        self._peers_init()

        self.counts = {"cycles": 0, "applies": 0, "verifies": 0}
        self._verifier = Verifier(self)
        self._worker = threading.Thread(target=self._run, name="taosync-watch", daemon=True)

    # -- life cycle --------------------------------------------------------------------

    def start(self, ctx=None) -> "Watcher":
        """Watch; the first cycle applies. ``ctx``: the fleet the command loaded to check
        it before starting, used by that cycle unless fleet.yaml changed since."""
        from watchdog.observers import Observer

        self._observer = Observer()
        self._close_events = type(self._observer).__name__ == "InotifyObserver"
        self._handler = Handler(self)
        self._observer.start()
        self._peers_start()
        self._rearm()
        with self._cond:
            self._pending.fleet = True
            self._pending.first = self._pending.last = float("-inf")
            if ctx is not None:
                self._spec = Speculation(self._gen, ctx=ctx)
        self._verifier.start()
        self._worker.start()
        return self

    def stop(self, timeout: float = 0.8) -> None:
        """Stop watching; wait for a transaction in progress, start no new one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        with self._txn:  # a transaction in progress finishes; none starts after this
            pass
        self._verifier.stop()
        if self._observer is not None:
            self._observer.stop()
        for thread in (self._worker, self._verifier.thread, self._observer):
            if thread is not None and thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        with self._emit_lock:  # a verification still in flight is abandoned silently
            self._closed = True
        self._peers_stop()

    def idle(self, timeout: float = 5.0) -> bool:
        """Wait until nothing is pending or running (tests and the bench use this)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                quiet = not self._pending and not self._busy
            if quiet and self._verifier.idle():
                return True
            time.sleep(0.01)
        return False
