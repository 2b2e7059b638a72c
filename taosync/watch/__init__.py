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

The parts, each given only the others it uses: ``events`` (Event, Options),
``report`` (the Reporter: events out, secrets scrubbed), ``baseline`` (the last good
fleet and its paths), ``scheduler`` (the Queue of pending work; the worker loop,
debounce, speculation), ``arming`` (watches and incoming events), ``peers`` (other
taosync processes), ``verifier`` (verification after an apply), ``cycle`` (what a cycle
does); :class:`Watcher` builds them and starts and stops them.
It prints nothing and imports neither click nor any command.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from taosync.watch.arming import Arming
from taosync.watch.baseline import Baseline
from taosync.watch.cycle import FIGHT_LIMIT, LOCK_WAIT, MAX_RETRIES, RETRY_DELAY, Cycle
from taosync.watch.events import FIX, FLEET, KEY, TARGET, WARN, Event, Options
from taosync.watch.peers import Peers
from taosync.watch.report import Reporter
from taosync.watch.scheduler import (CLOSE_WAIT, MAX_DELAY, REARM_INTERVAL, SETTLE, Pending,
                                     Queue, Scheduler, Speculation)
from taosync.watch.verifier import Verifier

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

    from taosync.pipeline import Context
    from taosync.settings import Settings

__all__ = ["CLOSE_WAIT", "FIGHT_LIMIT", "FIX", "FLEET", "KEY", "LOCK_WAIT", "MAX_DELAY",
           "MAX_RETRIES", "REARM_INTERVAL", "RETRY_DELAY", "SETTLE", "TARGET", "WARN",
           "Event", "Options", "Watcher"]


class Watcher:
    """Keep every client file in sync with fleet.yaml; ``start()`` / ``stop()``.

    ``on_event(Event)`` is called from the watcher's threads, one call at a time.
    """

    def __init__(self, settings: Settings, options: Options | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        # pin the fleet path: ./fleet.yaml deleted must not switch to another file
        self.settings = dataclasses.replace(
            settings, config=Path(os.path.abspath(settings.config_path())))
        self.options = options or Options()
        self.fleet_path = str(self.settings.config)
        self.home = self.settings.home_dir
        self.counts = {"cycles": 0, "applies": 0, "verifies": 0}

        self.report = Reporter(on_event or (lambda event: None), self.home)
        self.queue = Queue()
        self.baseline = Baseline()
        self.arming = Arming(self.fleet_path, self.baseline, self.queue)
        self.peers = Peers(self.settings, self.fleet_path, self.baseline, self.report)
        self.verifier = Verifier(self.settings, self.options, self.baseline, self.report,
                                 self.queue, self.counts)
        self.cycle = Cycle(self.settings, self.options, self.fleet_path, report=self.report,
                           queue=self.queue, baseline=self.baseline, arming=self.arming,
                           peers=self.peers, verifier=self.verifier, counts=self.counts)
        self.scheduler = Scheduler(self.queue, self.options, self.settings, self.report,
                                   cycle=self.cycle.run, rearm=self.cycle.rearm)
        self._observer: BaseObserver | None = None

    # what tests wait on
    @property
    def _pending(self) -> Pending:
        return self.queue.pending

    @property
    def _failed_read(self) -> str | None:
        return self.cycle.failed_read

    # -- life cycle --------------------------------------------------------------------

    def start(self, ctx: Context | None = None) -> "Watcher":
        """Watch; the first cycle applies. ``ctx``: the fleet the command loaded to check
        it before starting, used by that cycle unless fleet.yaml changed since."""
        from watchdog.observers import Observer

        self._observer = Observer()
        self.arming.start(self._observer)
        self._observer.start()
        self.peers.start()
        self.arming.rearm(look=False)
        q = self.queue
        with q.cond:
            q.pending.fleet = True
            q.pending.first = q.pending.last = float("-inf")
            if ctx is not None:
                q.spec = Speculation(q.gen, ctx=ctx)
        self.verifier.start()
        self.scheduler.thread.start()
        return self

    def stop(self, timeout: float = 0.8) -> None:
        """Stop watching; wait for a transaction in progress, start no new one."""
        deadline = time.monotonic() + timeout
        self.queue.stop()
        with self.cycle.txn:  # a transaction in progress finishes; none starts after this
            pass
        self.verifier.stop()
        if self._observer is not None:
            self._observer.stop()
        for thread in (self.scheduler.thread, self.verifier.thread, self._observer):
            if thread is not None and thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        self.report.close()  # a verification still in flight is abandoned silently
        self.peers.stop()

    def idle(self, timeout: float = 5.0) -> bool:
        """Wait until nothing is pending or running (tests and the bench use this)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.queue.quiet() and self.verifier.idle():
                return True
            time.sleep(0.01)
        return False
