"""Scheduling: when pending work runs. Events only mark what is pending (:class:`Queue`);
one worker thread (:class:`Scheduler`) runs one cycle at a time. A cycle starts once
nothing has moved for the debounce (and a file still open for writing has been closed),
or :data:`MAX_DELAY` after the first pending event. fleet.yaml is loaded and planned
ahead (speculatively) once it has been quiet for :data:`SETTLE`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from taosync.watch.events import TARGET, Options

if TYPE_CHECKING:
    from taosync.engine.plan import Plan
    from taosync.engine.state import State
    from taosync.pipeline import Context
    from taosync.settings import Settings
    from taosync.watch.report import Reporter

#: quiet time after which fleet.yaml is loaded and planned ahead of the debounce
SETTLE = 0.02
#: at most this long (and ``10 × debounce``) after the first pending event, run anyway
MAX_DELAY = 1.0
#: seconds between checks that every watched directory is still the one being watched
REARM_INTERVAL = 1.0
#: a file modified but not yet closed (inotify tells) is waited for this long at most
CLOSE_WAIT = 1.0


@dataclass
class Pending:
    """What the events since the last cycle asked for."""

    fleet: bool = False
    targets: set[str] = field(default_factory=set)  # state keys of target files
    sources: dict[str, str] = field(default_factory=dict)  # path → FLEET | KEY | TARGET
    rearm: bool = False
    first: float | None = None  # monotonic time of the first and the last event
    last: float = 0.0
    not_before: float = 0.0  # a retry waits

    def __bool__(self) -> bool:
        return self.fleet or bool(self.targets) or self.rearm


@dataclass
class Speculation:
    """fleet.yaml loaded and planned ahead, good while ``gen`` is the queue's."""

    gen: int
    ctx: Context | None = None
    plan: Plan | None = None
    state: State | None = None
    error: BaseException | None = None


def _is_taosync(exc: BaseException) -> bool:
    from taosync.errors import TaosyncError

    return isinstance(exc, TaosyncError)


class Queue:
    """The pending work and its condition: arming marks it, the worker takes it, a retry
    or a moved route puts work back. Every field is read and written under ``cond``."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.pending = Pending()
        self.gen = 0  # counts events; a speculation is good while it is unchanged
        self.open: dict[str, float] = {}  # path → when a still-open write was seen
        self.stopping = False
        self.busy = False  # a cycle is running
        self.spec: Speculation | None = None

    def mark(self, source: str, path: str, key: str) -> None:
        """Record a change of ``path`` (state key ``key`` for a target; caller holds
        ``cond``)."""
        self.pending.sources[path] = source
        if source == TARGET:
            self.pending.targets.add(key)
        else:
            self.pending.fleet = True

    def moved(self, now: float) -> None:
        """Something of interest moved at ``now`` (caller holds ``cond``)."""
        self.pending.last = now
        if self.pending.first is None:
            self.pending.first = now

    def requeue(self, *, fleet: bool = False, targets: Iterable[str] = (),
                delay: float) -> None:
        """Run again (the fleet, these targets) no sooner than ``delay`` from now."""
        with self.cond:
            if fleet:
                self.pending.fleet = True
            self.pending.targets |= set(targets)
            self.pending.not_before = time.monotonic() + delay
            if self.pending.first is None:
                self.pending.first = self.pending.last = time.monotonic()
            self.cond.notify_all()

    def due(self, now: float, debounce: float) -> float | None:
        """When the pending work may run (caller holds ``cond``); None: nothing pending."""
        p = self.pending
        if not p:
            return None
        if p.first == float("-inf"):
            return max(now, p.not_before) if p.not_before else now
        due = p.last + debounce
        for path, since in list(self.open.items()):
            if since + CLOSE_WAIT <= now:
                del self.open[path]  # no close came (an attribute change, or no inotify)
            else:
                due = max(due, since + CLOSE_WAIT)
        cap = (p.first or now) + max(MAX_DELAY, 10 * debounce)
        if not self.open:
            due = min(due, cap)
        return max(due, p.not_before)

    def take_speculation(self) -> Speculation | None:
        """The speculation, if nothing moved since it was made and it did not fail with a
        bug (that is run again in the cycle, where it is reported); none is left."""
        with self.cond:
            spec, self.spec = self.spec, None
            gen = self.gen
        if spec is None or spec.gen != gen:
            return None
        if spec.error is not None and not _is_taosync(spec.error):
            return None
        return spec

    def drop_speculation(self) -> None:
        with self.cond:
            self.spec = None

    def quiet(self) -> bool:
        with self.cond:
            return not self.pending and not self.busy

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()


class Scheduler:
    """The worker thread: waits for due work, runs ``cycle`` on it, speculates ahead of
    the debounce, and calls ``rearm`` every :data:`REARM_INTERVAL` while idle."""

    def __init__(self, queue: Queue, options: Options, settings: Settings, report: Reporter,
                 cycle: Callable[[Pending], None], rearm: Callable[[], None]) -> None:
        self.queue = queue
        self.options = options
        self.settings = settings
        self.report = report
        self.cycle = cycle
        self.rearm = rearm
        self.thread = threading.Thread(target=self._run, name="taosync-watch", daemon=True)

    def _run(self) -> None:
        q = self.queue
        next_rearm = time.monotonic() + REARM_INTERVAL
        while True:
            speculate = False
            gen = 0
            with q.cond:
                while True:
                    if q.stopping:
                        return
                    now = time.monotonic()
                    due = q.due(now, self.options.debounce)
                    if due is not None and due <= now:
                        break
                    if now >= next_rearm:
                        break
                    wake = next_rearm
                    if due is not None:
                        wake = min(wake, due)
                        spec_at = q.pending.last + min(SETTLE, self.options.debounce)
                        if (q.pending.fleet and not q.open and spec_at < due
                                and (q.spec is None or q.spec.gen != q.gen)):
                            if spec_at <= now:
                                speculate = True
                                gen = q.gen
                                break
                            wake = min(wake, spec_at)
                    q.cond.wait(max(0.0, wake - now))
                batch = None
                if not speculate and due is not None and due <= now:
                    batch, q.pending = q.pending, Pending()
                    q.busy = True
            if speculate:
                self._speculate(gen)
                continue
            if batch is None:
                self.rearm()
                next_rearm = time.monotonic() + REARM_INTERVAL
                continue
            try:
                self.cycle(batch)
            except Exception as exc:  # a bug must not end the watch
                self.report.emit("error", f"internal error: {type(exc).__name__}: {exc}",
                                 level="problem")
            finally:
                with q.cond:
                    q.busy = False
                    q.cond.notify_all()

    def _speculate(self, gen: int) -> None:
        """Load and plan the fleet ahead of the debounce (reads only)."""
        from taosync import pipeline

        spec = Speculation(gen)
        try:
            spec.ctx = pipeline.prepare(self.settings, use_cache=False)
            spec.plan, spec.state = pipeline.plan_apply(spec.ctx)
        except Exception as exc:  # a TaosyncError is reported by the cycle, a bug re-run there
            spec.error = exc
        with self.queue.cond:
            self.queue.spec = spec
