"""Verification after an apply: on its own thread, one run at a time; requests made
while one runs are merged into a single follow-up. With ``reverify`` it also verifies
every enabled client on a timer (measured from the end of the last run). After each
run, a route whose choice the new history moves makes the watcher render the fleet
again (the cycle reports each switch). Reports through the watcher's
events; prints nothing itself."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taosync.pipeline import Context
    from taosync.settings import Settings
    from taosync.watch.baseline import Baseline
    from taosync.watch.events import Options
    from taosync.watch.report import Reporter
    from taosync.watch.scheduler import Queue

#: a request for every enabled client (the timer's)
ALL = "*"


class Verifier:
    """Verification, one run at a time; requests made meanwhile merge into the next run.
    The timer verifies ``baseline``'s fleet; a moved route puts the fleet back on
    ``queue``; ``counts["verifies"]`` counts the runs."""

    def __init__(self, settings: Settings, options: Options, baseline: Baseline,
                 report: Reporter, queue: Queue, counts: dict[str, int]) -> None:
        self.settings = settings
        self.options = options
        self.baseline = baseline
        self.report = report
        self.queue = queue
        self.counts = counts
        self._cond = threading.Condition()
        self._clients: set[str] = set()
        self._ctx: Context | None = None
        self._running = False
        self._stopping = False
        self.thread = threading.Thread(target=self._run, name="taosync-verify", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return not self._running and not self._clients

    def request(self, ctx: Context, clients: set[str]) -> None:
        with self._cond:
            self._ctx = ctx
            self._clients |= clients
            self._cond.notify_all()

    def _run(self) -> None:
        interval = self.options.reverify or 0.0  # 0: no timer
        due = time.monotonic() + interval if interval else None
        while True:
            with self._cond:
                while not self._clients and not self._stopping:
                    if due is not None and time.monotonic() >= due:
                        if self.baseline.ctx is not None:
                            self._ctx, self._clients = self.baseline.ctx, {ALL}
                            break
                        due = time.monotonic() + interval
                    self._cond.wait(None if due is None else max(0.0, due - time.monotonic()))
                if self._stopping:
                    return
                ctx, clients = self._ctx, self._clients
                self._clients = set()
                self._running = True
            try:
                if ctx is not None:  # a request always brings one
                    self._verify(ctx, clients)
            except Exception as exc:
                self.report.emit("error", f"verify failed to run: {type(exc).__name__}: "
                                 f"{getattr(exc, 'message', exc)}", level="problem")
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()
                if interval:
                    due = time.monotonic() + interval

    def _verify(self, ctx: Context, clients: set[str]) -> None:
        from taosync import pipeline
        from taosync.verify.session import verify_fleet

        fleet = pipeline.loaded_fleet(ctx).fleet
        only = sorted(set(fleet.enabled_clients()) if ALL in clients
                      else set(clients) & set(fleet.enabled_clients()))
        if not only:
            return
        self.counts["verifies"] += 1
        report = verify_fleet(fleet, ctx.key, ctx.env, state_dir=self.settings.state_dir(),
                              only=only, stub=pipeline.stand_in(self.options.stub), strict=False)
        for text in report.warnings:
            self.report.emit("warning", text, level="problem")
        for r in report.results:
            ms = f"{r.latency * 1000:.0f} ms" if r.latency is not None else "—"
            line = f"{'✓' if r.ok else '✗'} {r.client}  {r.route}  {r.model}  {ms}"
            if not r.ok:
                line += f"  {'HTTP ' + str(r.status) if r.status else 'no answer'}"
                if r.diagnosis is not None:
                    line += (f" — {r.diagnosis.code}: {r.diagnosis.cause}; "
                             f"fix: {r.diagnosis.fix}")
            self.report.emit("probe", line, r.to_dict(), level="info" if r.ok else "problem")
        passed = sum(1 for r in report.results if r.ok)
        total = len(report.results)
        self.report.emit("verified", f"verified {', '.join(only)}: {passed}/{total} "
                f"backend{'s' if total != 1 else ''} pass"
                + (" (stand-in gateway)" if report.stub_root else ""),
                {"clients": only, "ok": report.ok, "passed": passed,
                 "failed": total - passed, "stub": report.stub_root is not None},
                level="info" if report.ok else "problem")
        if not report.stub_root and pipeline.routes_moved(ctx):
            # stand-in runs are no evidence; a moved route has the fleet rendered again
            self.queue.requeue(fleet=True, delay=0.0)
