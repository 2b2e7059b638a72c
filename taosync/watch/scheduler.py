"""Scheduling: when pending work runs. One worker thread runs one cycle at a time; a
cycle starts once nothing has moved for the debounce (and a file still open for writing
has been closed), or :data:`MAX_DELAY` after the first pending event. fleet.yaml is
loaded and planned ahead (speculatively) once it has been quiet for :data:`SETTLE`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from taosync.watch.arming import CLOSE_WAIT, REARM_INTERVAL
from taosync.watch.events import digest

#: quiet time after which fleet.yaml is loaded and planned ahead of the debounce
SETTLE = 0.02
#: at most this long (and ``10 × debounce``) after the first pending event, run anyway
MAX_DELAY = 1.0


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
    gen: int
    ctx: Any = None
    plan: Any = None
    state: Any = None
    error: BaseException | None = None


def _is_taosync(exc: BaseException) -> bool:
    from taosync.errors import TaosyncError

    return isinstance(exc, TaosyncError)


class Scheduler:
    """The worker loop and its pending work (a part of :class:`Watcher`)."""

    def _due(self, now: float) -> float | None:
        """When the pending work may run (caller holds ``_cond``); None: nothing pending."""
        p = self._pending
        if not p:
            return None
        if p.first == float("-inf"):
            return max(now, p.not_before) if p.not_before else now
        due = p.last + self.options.debounce
        for path, since in list(self._open.items()):
            if since + CLOSE_WAIT <= now:
                del self._open[path]  # no close came (an attribute change, or no inotify)
            else:
                due = max(due, since + CLOSE_WAIT)
        cap = (p.first or now) + max(MAX_DELAY, 10 * self.options.debounce)
        if not self._open:
            due = min(due, cap)
        return max(due, p.not_before)

    def _run(self) -> None:
        next_rearm = time.monotonic() + REARM_INTERVAL
        while True:
            speculate = False
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    now = time.monotonic()
                    due = self._due(now)
                    if due is not None and due <= now:
                        break
                    if now >= next_rearm:
                        break
                    wake = next_rearm
                    if due is not None:
                        wake = min(wake, due)
                        spec_at = self._pending.last + min(SETTLE, self.options.debounce)
                        if (self._pending.fleet and not self._open and spec_at < due
                                and (self._spec is None or self._spec.gen != self._gen)):
                            if spec_at <= now:
                                speculate = True
                                gen = self._gen
                                break
                            wake = min(wake, spec_at)
                    self._cond.wait(max(0.0, wake - now))
                batch = None
                if not speculate and due is not None and due <= now:
                    batch, self._pending = self._pending, Pending()
                    self._busy = True
            if speculate:
                self._speculate(gen)
                continue
            if batch is None:
                self._rearm()
                next_rearm = time.monotonic() + REARM_INTERVAL
                continue
            try:
                self._cycle(batch)
            except Exception as exc:  # a bug must not end the watch
                self._emit("error", f"internal error: {type(exc).__name__}: {exc}",
                           level="problem")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _speculate(self, gen: int) -> None:
        """Load and plan the fleet ahead of the debounce (reads only)."""
        from taosync import pipeline

        spec = Speculation(gen)
        try:
            spec.ctx = pipeline.prepare(self.settings, use_cache=False)
            spec.plan, spec.state = pipeline.plan_apply(spec.ctx)
        except Exception as exc:  # a TaosyncError is reported by the cycle, a bug re-run there
            spec.error = exc
        with self._cond:
            self._spec = spec

    def _take_speculation(self) -> Speculation | None:
        with self._cond:
            spec, self._spec = self._spec, None
            gen = self._gen
        if spec is None or spec.gen != gen:
            return None
        if spec.error is not None and not _is_taosync(spec.error):
            return None  # run it again in the cycle, where it is reported
        if spec.ctx is not None and spec.ctx.loaded is not None:
            from taosync.privilege import rights_for

            try:
                from taosync.bounded import read_regular

                with rights_for(self.fleet_path):
                    if digest(read_regular(self.fleet_path)) != spec.ctx.loaded.sha256:
                        return None
            except OSError:
                return None
        return spec

    def _requeue(self, *, fleet: bool = False, targets=(), delay: float) -> None:
        """Run again (the fleet, these targets) no sooner than ``delay`` from now."""
        with self._cond:
            if fleet:
                self._pending.fleet = True
            self._pending.targets |= set(targets)
            self._pending.not_before = time.monotonic() + delay
            if self._pending.first is None:
                self._pending.first = self._pending.last = time.monotonic()
            self._cond.notify_all()
