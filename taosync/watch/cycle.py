"""One cycle: fleet.yaml changed (load, plan, apply, then verify) or a target changed
(plan against the last good fleet: keep, re-assert or report drift); every outcome an
:class:`~taosync.watch.events.Event` through the :class:`~taosync.watch.report.Reporter`."""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable

from taosync.watch.events import KEY, TARGET, WARN, Options, digest
from taosync.watch.peers import Superseded, fleet_sources_touched

if TYPE_CHECKING:
    from pathlib import Path

    from taosync.engine.apply import Result
    from taosync.engine.coordination import Op
    from taosync.engine.plan import FilePlan, Plan
    from taosync.engine.state import State
    from taosync.fleet.problems import FleetInvalid
    from taosync.pipeline import Context
    from taosync.settings import Settings
    from taosync.watch.arming import Arming
    from taosync.watch.baseline import Baseline
    from taosync.watch.peers import Peers
    from taosync.watch.report import Reporter
    from taosync.watch.scheduler import Pending, Queue, Speculation
    from taosync.watch.verifier import Verifier

#: each attempt at the state lock; a busy lock is retried, never waited on for long,
#: so SIGTERM is honoured within a second
LOCK_WAIT = 0.25
RETRY_DELAY = 0.5
MAX_RETRIES = 20
#: (re-asserts, seconds): a file re-asserted this often is only reported afterwards
FIGHT_LIMIT = (5, 60.0)


class Cycle:
    """What a cycle does with a batch of pending work. It alone replaces ``baseline``
    and writes; ``txn`` is held for a whole transaction, so a stop can wait for one."""

    def __init__(self, settings: Settings, options: Options, fleet_path: str, *,
                 report: Reporter, queue: Queue, baseline: Baseline, arming: Arming,
                 peers: Peers, verifier: Verifier, counts: dict[str, int]) -> None:
        self.settings = settings
        self.options = options
        self.fleet_path = fleet_path
        self.home = settings.home_dir
        self.report = report
        self.queue = queue
        self.baseline = baseline
        self.arming = arming
        self.peers = peers
        self.verifier = verifier
        self.counts = counts
        self.txn = threading.Lock()
        self._retries = 0
        #: fleet.yaml as it read (its sha256, or "absent") the last time it failed to load
        #: and was given a debounce to settle before being reported
        self.failed_read: str | None = None
        self._warned: set[str] = set()
        self._reported: dict[str, str | None] = {}  # state key → what was last reported
        self._reasserts: dict[str, deque[float]] = {}
        self._fighting: set[str] = set()
        self._first_cycle = True
        self._announced = False

    def run(self, batch: Pending) -> None:
        self.counts["cycles"] += 1
        from taosync.fleet import stores

        stores.forget()  # each cycle is a run: a password store is read again (a new key)
        try:
            self._cycle_body(batch)
        finally:
            self._first_cycle = False
            self._watching()

    def rearm(self) -> None:
        """Re-arm the watches; after the first cycle, look at what they may have missed."""
        self.arming.rearm(look=not self._first_cycle)

    def _cycle_body(self, batch: Pending) -> None:
        if batch.rearm:
            self.rearm()
        from taosync.privilege import rights_for

        for path, source in sorted(batch.sources.items()):
            if source != TARGET:
                what = "the key file" if source == KEY else self.report.show(path)
                with rights_for(path):
                    gone = not os.path.exists(path)
                self.report.emit("changed", f"{what} {'deleted' if gone else 'changed'}",
                                 {"source": source, "path": path, "deleted": gone})
        if fleet_sources_touched(batch):
            self.peers.touched()
        if batch.fleet:
            self._fleet_run(self._speculation())
        elif batch.targets:
            self.queue.drop_speculation()
            self._target_run(batch.targets)

    def _speculation(self) -> Speculation | None:
        """The speculation made of fleet.yaml as it still reads, if any."""
        spec = self.queue.take_speculation()
        if spec is not None and spec.ctx is not None and spec.ctx.loaded is not None:
            from taosync.privilege import rights_for

            try:
                from taosync.bounded import read_regular

                with rights_for(self.fleet_path):
                    if digest(read_regular(self.fleet_path)) != spec.ctx.loaded.sha256:
                        return None
            except OSError:
                return None
        return spec

    def _watching(self) -> None:
        """Say what is watched, once: before the first apply's outcome when the fleet is
        good, else after the first cycle."""
        if self._announced:
            return
        self._announced = True
        n = len(set(self.baseline.targets.values()))
        o = self.options
        how = [f"debounce {o.debounce * 1000:g} ms", f"drift: {o.drift}",
               "no verify" if not o.verify else "verify: stand-in" if o.stub else "verify"]
        self.report.emit("watching", f"watching {self.report.show(self.fleet_path)} and {n} "
                         f"client file{'s' if n != 1 else ''} ({', '.join(how)})",
                         {"fleet": self.fleet_path, "files": n,
                          "directories": self.arming.watched(), "debounce": o.debounce,
                          "drift": o.drift, "verify": o.verify, "stub": o.stub})

    def _take(self, op: Op) -> None:
        """Hold (watch/peers.py), and forget the drift seen so far."""
        self._forget_drift()
        self.peers.take(op)

    def _forget_drift(self) -> None:
        self._reported.clear()
        self._fighting.clear()
        self._reasserts.clear()

    # -- fleet.yaml changed ------------------------------------------------------------

    def _fleet_run(self, spec: Speculation | None) -> None:
        from taosync import pipeline
        from taosync.errors import BadInput, TaosyncError
        from taosync.fleet.load import FleetInvalid

        try:
            if spec is not None and spec.error is not None:
                raise spec.error
            ctx = (spec.ctx if spec is not None and spec.ctx is not None
                   else pipeline.prepare(self.settings, use_cache=False))
        except FleetInvalid as exc:
            if self._settled():
                self._invalid(exc)
            return
        except TaosyncError as exc:
            self.report.emit("error", f"{exc.message}; nothing written, keeping the last "
                             "good state", {"details": list(exc.details)}, level="problem")
            return
        self.failed_read = None
        before = self.baseline.ctx.routes if self.baseline.ctx is not None else {}
        included = set(self.baseline.included())
        self._adopt(ctx, spec.state if spec is not None else None)
        self._route_switches(before, ctx.routes)
        if self._first_cycle:
            self.rearm()
            self._watching()
        elif set(self.baseline.included()) != included:
            self.rearm()  # a base fleet included now (or no more) is watched at once
        op = self.peers.fleet_op(ctx)  # a forget or adopt wrote this fleet.yaml
        if op is not None:
            self.peers.absorb(ctx)
            self._take(op)
            return
        if self.peers.still_held(ctx):
            return
        try:
            if spec is not None and spec.plan is not None and spec.state is not None:
                the_plan, state = spec.plan, spec.state
            else:
                the_plan, state = pipeline.plan_apply(ctx)
        except BadInput as exc:
            self.report.emit("error", exc.message, level="problem")
            return
        op = self.peers.news(state)  # a rollback, redo or destroy since the last look
        if op is not None:
            self._take(op)
            return
        outcome = self._commit(ctx, the_plan, state, retry_fleet=True)
        if outcome is None:
            return
        written, plan_written = outcome
        if written.written:
            self.counts["applies"] += 1
            self._forget_drift()
            files = [self.report.show(fp.path) for fp in written.written]
            clients = sorted({c for fp in written.written for c in fp.clients})
            self.report.emit("applied", f"applied #{written.apply_id}: {', '.join(files)} "
                             f"({', '.join(clients)})",
                             {"apply_id": written.apply_id, "files": files,
                              "clients": clients,
                              "changes": self.report.changes(written.written, ctx)})
            if self.options.verify:
                self.verifier.request(ctx, set(clients))
        else:
            n = len(plan_written.files)
            from taosync import ui

            self.report.emit("unchanged", ui.nothing_to_do(ui.files_match(n)), {"files": n})

    def _route_switches(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        """One event per route whose chosen candidate moved (issue 15), and at start
        for a route already off its preferred candidate."""
        for name, choice in after.items():
            old = before.get(name)
            was = old.model if old is not None else choice.preferred
            if was != choice.model:
                self.report.emit("route", f"route {name} → {choice.model} ({choice.reason})",
                                 {"route": name, "model": choice.model, "from": was,
                                  "reason": choice.reason, "healthy": choice.healthy},
                                 level="info" if choice.healthy else "problem")

    def _settled(self) -> bool:
        """Is a fleet.yaml that failed to load worth reporting? Only once it reads the
        same a debounce later: a save caught half-way (truncated and not yet written,
        moved aside and not yet back) is loaded again instead. The first cycle does not
        wait: nobody is saving then."""
        from taosync.privilege import rights_for

        try:
            from taosync.bounded import read_regular

            with rights_for(self.fleet_path):
                now = digest(read_regular(self.fleet_path))
        except OSError:
            now = "absent"
        if self._first_cycle or now == self.failed_read:
            return True
        self.failed_read = now
        self.queue.requeue(fleet=True, delay=self.options.debounce)
        return False

    def _invalid(self, exc: FleetInvalid) -> None:
        missing = any(p.line == 0 for p in exc.problems) and not os.path.exists(self.fleet_path)
        keep = ("keeping the last good state" if self.baseline.ctx is not None
                else "nothing applied yet")
        shown = self.report.show(self.fleet_path)
        if missing:
            self.report.emit("missing", f"{shown} is gone; {keep} until it comes back",
                             {"path": self.fleet_path}, level="problem")
            return
        n = len(exc.problems)
        self.report.emit("invalid", f"{shown}: {n} problem{'s' if n != 1 else ''}; "
                         f"nothing written, {keep}",
                         {"problems": [p.format() for p in exc.problems],
                          "warnings": [w.format() for w in exc.warnings]}, level="problem")

    def _adopt(self, ctx: Context, state: State | None = None) -> None:
        """Make ``ctx`` the last good fleet: its key, key file and targets."""
        from taosync.fleet.secrets import expand_path

        b = self.baseline
        b.ctx = ctx
        ref = ctx.loaded.key_ref if ctx.loaded is not None else None
        b.key_file = (os.path.abspath(expand_path(ref.arg, self.home))
                      if ref is not None and ref.kind == "file" else None)
        for text in ctx.warnings:
            if text not in self._warned:
                self._warned.add(text)
                self.report.emit("warning", text,
                                 level="info" if text.startswith("info: ") else "problem")
        state = state if state is not None else ctx.store.load()
        self.report.know(ctx, state)
        paths = {str(p.path) for p in ctx.patches} | set(state.files)
        from taosync.privilege import owner_rights

        targets = {}
        for key in paths:
            targets[os.path.abspath(key)] = key
            with owner_rights():  # root on a user's home: through their links as them
                targets[os.path.realpath(key)] = key
        # what the render looked at: the cached render's record of it, or this render's
        inputs = dict(ctx.cache_entry.get("fingerprint", {}).get("paths", {}))
        inputs.update(getattr(ctx.env, "probed", {}))
        with self.queue.cond:  # what incoming events are matched against
            b.targets = targets
            b.inputs = inputs

    # -- a target changed --------------------------------------------------------------

    def _target_run(self, keys: set[str]) -> None:
        from taosync import pipeline
        from taosync.errors import BadInput, TaosyncError

        ctx = self.baseline.ctx
        if ctx is None:
            return  # no good fleet yet: nothing to hold the files to
        if self.peers.holding:
            # another process's operation is the baseline: hands off
            op = self.peers.held_news()
            if op is not None:
                self._take(op)
            return
        try:
            the_plan, state = pipeline.plan_apply(ctx)
        except BadInput as exc:
            if self._reported.get("error") != exc.message:
                self._reported["error"] = exc.message
                self.report.emit("error", exc.message, level="problem")
            return
        self._reported.pop("error", None)
        op = self.peers.news(state)  # a rollback, redo or destroy since the last look
        if op is not None:
            self._take(op)
            return
        if _routes_moved(ctx, state):
            # another process chose another candidate (a verify saw the choice fail) and
            # applied it: that choice is the fleet's now, not drift to undo — render anew
            try:
                fresh = pipeline.prepare(self.settings, use_cache=False)
                the_plan, state = pipeline.plan_apply(fresh)
            except TaosyncError:
                return  # the next fleet cycle reports it
            self._adopt(fresh, state)
            self._route_switches(ctx.routes, fresh.routes)
            ctx = fresh
        for fp in the_plan.files:
            key = str(fp.path)
            if key not in keys or fp.changed:
                continue
            previous = state.files.get(key)
            sha = digest((fp.old_text or "").encode("utf-8")) if fp.old_text is not None else None
            if previous is not None and sha == previous.sha256:
                self.report.emit("checked", f"{self.report.show(key)}: as taosync wrote it",
                                 {"path": key}, level="detail")
            elif self._reported.get(key) != sha:
                self._reported[key] = sha
                self.report.emit("kept", f"{self.report.show(key)} changed by another "
                                 "program; owned keys intact, left alone", {"path": key})
        drifted = the_plan.changed
        if not drifted:
            return
        fighting = [fp for fp in drifted if str(fp.path) in self._fighting]
        if self.options.drift == WARN or fighting:
            for fp in drifted:
                key = str(fp.path)
                sig = "drift:" + digest((fp.old_text or "").encode("utf-8"))
                if self._reported.get(key) == sig:
                    continue
                self._reported[key] = sig
                why = ("reported only (--drift warn)" if self.options.drift == WARN else
                       "reported only: something keeps changing it back")
                self._drift_event(fp, ctx, "reported", why)
            return
        now = time.monotonic()
        outcome = self._commit(ctx, the_plan, state, retry_fleet=False, retry_keys=keys,
                               kind="reassert")
        if outcome is None:
            return
        written, _ = outcome
        limit, window = FIGHT_LIMIT
        for fp in written.written:
            key = str(fp.path)
            self._reported.pop(key, None)
            times = self._reasserts.setdefault(key, deque())
            times.append(now)
            while times and now - times[0] > window:
                times.popleft()
            self._drift_event(fp, ctx, "reasserted", f"re-asserted (#{written.apply_id})")
            if len(times) >= limit:
                self._fighting.add(key)
                self.report.emit("fight", f"{self.report.show(key)}: re-asserted {len(times)} "
                                 f"times in {window:g} s; something keeps changing it back — "
                                 "reporting only until fleet.yaml changes", {"path": key},
                                 level="problem")

    def _drift_event(self, fp: FilePlan, ctx: Context, action: str, why: str) -> None:
        changes = self.report.changes([fp], ctx)
        keys = ", ".join(c["key"] or "(file)" for c in changes) or "(file missing)"
        if fp.action == "create":
            keys = "file missing"
        self.report.emit("drift", f"drift in {self.report.show(fp.path)}: {keys} — {why}",
                         {"path": str(fp.path), "action": action, "changes": changes},
                         level="problem" if action == "reported" else "info")

    # -- the transaction ---------------------------------------------------------------

    def _commit(self, ctx: Context, the_plan: Plan, state: State, *, retry_fleet: bool,
                retry_keys: Iterable[str] = (),
                kind: str = "apply") -> tuple[Result, Plan] | None:
        """The apply transaction (recorded as ``kind``: a drift re-assert is "reassert",
        outside the kept window of applies); (result, plan written), or None."""
        from taosync import pipeline
        from taosync.errors import BadInput, WriteFailed

        def put_back(path: Path) -> None:
            self.report.emit("recovered", f"an earlier apply was interrupted; put back "
                             f"{self.report.show(path)}", {"path": str(path)},
                             level="problem")

        with self.txn:
            if self.queue.stopping:
                return None
            try:
                plan_written, result = pipeline.commit(ctx, the_plan, state,
                                                       lock_timeout=LOCK_WAIT,
                                                       on_recover=put_back, kind=kind,
                                                       check=self.peers.guard)
            except WriteFailed as exc:
                failed = exc
            except BadInput as exc:
                self.report.emit("error", exc.message, level="problem")
                return None
            except Superseded as exc:  # another process's operation landed meanwhile
                self._take(exc.op)
                return None
            else:
                self._retries = 0
                if result.apply_id is not None:
                    self.peers.own(result.apply_id)
                if result.written:
                    self.rearm()  # a directory taosync just made is watched at once
                    self.peers.register()  # the state directory may be new (or purged)
                return result, plan_written
        self._retries += 1
        if self._retries > MAX_RETRIES:
            self._retries = 0
            self.report.emit("error", f"{failed.message}; giving up until the next change",
                             level="problem")
            return None
        if self._retries == 1:
            self.report.emit("error", f"{failed.message}; retrying", level="problem")
        self.queue.requeue(fleet=retry_fleet, targets=retry_keys, delay=RETRY_DELAY)
        return None


def _routes_moved(ctx: Context, state: State) -> bool:
    """The state records another candidate for a route than ``ctx`` rendered: a one-shot
    command (verify, then apply) moved the route since watch last rendered."""
    for name, choice in ctx.routes.items():
        recorded = (state.routes or {}).get(name)
        model = recorded.get("model") if isinstance(recorded, dict) else None
        if model is not None and model != choice.model:
            return True
    return False

