"""One cycle: fleet.yaml changed (load, plan, apply, then verify) or a target changed
(plan against the last good fleet: keep, re-assert or report drift); every outcome an
:class:`~taosync.watch.events.Event`, scrubbed of every secret seen this run."""

from __future__ import annotations

import os
import time
from collections import deque

from taosync.watch.events import KEY, TARGET, WARN, Event, digest
from taosync.watch.peers import Superseded, fleet_sources_touched
from taosync.watch.scheduler import Pending, Speculation

#: each attempt at the state lock; a busy lock is retried, never waited on for long,
#: so SIGTERM is honoured within a second
LOCK_WAIT = 0.25
RETRY_DELAY = 0.5
MAX_RETRIES = 20
#: (re-asserts, seconds): a file re-asserted this often is only reported afterwards
FIGHT_LIMIT = (5, 60.0)


class Cycle:
    """What a cycle does with a batch of pending work (a part of :class:`Watcher`)."""

    def _cycle(self, batch: Pending) -> None:
        self.counts["cycles"] += 1
        try:
            self._cycle_body(batch)
        finally:
            self._first_cycle = False
            self._watching()

    def _cycle_body(self, batch: Pending) -> None:
        if batch.rearm:
            self._rearm()
        from taosync.privilege import rights_for

        for path, source in sorted(batch.sources.items()):
            if source != TARGET:
                what = "the key file" if source == KEY else self._show(path)
                with rights_for(path):
                    gone = not os.path.exists(path)
                self._emit("changed", f"{what} {'deleted' if gone else 'changed'}",
                           {"source": source, "path": path, "deleted": gone})
        if fleet_sources_touched(batch):
            self._fleet_touched = True  # what ends a hold (watch/peers.py)
        if batch.fleet:
            self._fleet_run(self._take_speculation())
        elif batch.targets:
            with self._cond:
                self._spec = None
            self._target_run(batch.targets)

    def _watching(self) -> None:
        """Say what is watched, once: before the first apply's outcome when the fleet is
        good, else after the first cycle."""
        if self._announced:
            return
        self._announced = True
        n = len(set(self._targets.values()))
        o = self.options
        how = [f"debounce {o.debounce * 1000:g} ms", f"drift: {o.drift}",
               "no verify" if not o.verify else "verify: stand-in" if o.stub else "verify"]
        self._emit("watching", f"watching {self._show(self.fleet_path)} and {n} client "
                   f"file{'s' if n != 1 else ''} ({', '.join(how)})",
                   {"fleet": self.fleet_path, "files": n, "directories": sorted(self._watches),
                    "debounce": o.debounce, "drift": o.drift, "verify": o.verify,
                    "stub": o.stub})

    # -- fleet.yaml changed ------------------------------------------------------------

    def _fleet_run(self, spec: Speculation | None) -> None:
        from taosync import pipeline
        from taosync.errors import BadInput, TaosyncError
        from taosync.fleet.load import FleetInvalid

        try:
            if spec is not None and spec.error is not None:
                raise spec.error
            ctx = spec.ctx if spec is not None else pipeline.prepare(self.settings,
                                                                      use_cache=False)
        except FleetInvalid as exc:
            if self._settled():
                self._invalid(exc)
            return
        except TaosyncError as exc:
            self._emit("error", f"{exc.message}; nothing written, keeping the last good "
                       "state", {"details": list(exc.details)}, level="problem")
            return
        self._failed_read = None
        before = self._ctx.routes if self._ctx is not None else {}
        included = set(self._included())
        self._adopt(ctx, spec.state if spec is not None else None)
        self._route_switches(before, ctx.routes)
        if self._first_cycle:
            self._rearm()
            self._watching()
        elif set(self._included()) != included:
            self._rearm()  # a base fleet included now (or no more) is watched at once
        op = self._fleet_op(ctx)  # a forget or adopt wrote this fleet.yaml
        if op is not None:
            self._absorb(ctx)
            self._take(op)
            return
        if self._still_held(ctx):
            return
        try:
            if spec is not None and spec.plan is not None:
                the_plan, state = spec.plan, spec.state
            else:
                the_plan, state = pipeline.plan_apply(ctx)
        except BadInput as exc:
            self._emit("error", exc.message, level="problem")
            return
        op = self._news(state)  # a rollback, redo or destroy since the last look
        if op is not None:
            self._take(op)
            return
        result = self._commit(ctx, the_plan, state, retry_fleet=True)
        if result is None:
            return
        written, plan_written = result
        if written.written:
            self.counts["applies"] += 1
            self._reported.clear()
            self._fighting.clear()
            self._reasserts.clear()
            files = [self._show(fp.path) for fp in written.written]
            clients = sorted({c for fp in written.written for c in fp.clients})
            self._emit("applied", f"applied #{written.apply_id}: {', '.join(files)} "
                       f"({', '.join(clients)})",
                       {"apply_id": written.apply_id, "files": files, "clients": clients,
                        "changes": self._changes(written.written, ctx)})
            if self.options.verify:
                self._verifier.request(ctx, set(clients))
        else:
            n = len(plan_written.files)
            self._emit("unchanged", f"nothing to change: {n} file{'s' if n != 1 else ''} "
                       "up to date", {"files": n})

    def _route_switches(self, before: dict, after: dict) -> None:
        """One event per route whose chosen candidate moved (issue 15), and at start
        for a route already off its preferred candidate."""
        for name, choice in after.items():
            old = before.get(name)
            was = old.model if old is not None else choice.preferred
            if was != choice.model:
                self._emit("route", f"route {name} → {choice.model} ({choice.reason})",
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
        if self._first_cycle or now == self._failed_read:
            return True
        self._failed_read = now
        self._requeue(fleet=True, delay=self.options.debounce)
        return False

    def _invalid(self, exc) -> None:
        missing = any(p.line == 0 for p in exc.problems) and not os.path.exists(self.fleet_path)
        keep = "keeping the last good state" if self._ctx is not None else "nothing applied yet"
        if missing:
            self._emit("missing", f"{self._show(self.fleet_path)} is gone; {keep} until it "
                       "comes back", {"path": self.fleet_path}, level="problem")
            return
        n = len(exc.problems)
        self._emit("invalid", f"{self._show(self.fleet_path)}: {n} problem{'s' if n != 1 else ''}; "
                   f"nothing written, {keep}",
                   {"problems": [p.format() for p in exc.problems],
                    "warnings": [w.format() for w in exc.warnings]}, level="problem")

    def _adopt(self, ctx, state=None) -> None:
        """Make ``ctx`` the last good fleet: its key, key file and targets."""
        from taosync.fleet.secrets import expand_path

        self._ctx = ctx
        ref = getattr(ctx.loaded, "key_ref", None)
        self._key_file = (os.path.abspath(expand_path(ref.arg, self.home))
                          if ref is not None and ref.kind == "file" else None)
        for text in ctx.warnings:
            if text not in self._warned:
                self._warned.add(text)
                self._emit("warning", text,
                           level="info" if text.startswith("info: ") else "problem")
        state = state if state is not None else ctx.store.load()
        self._know(ctx, state)
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
        with self._cond:
            self._targets = targets
            self._inputs = inputs

    # -- a target changed --------------------------------------------------------------

    def _target_run(self, keys: set[str]) -> None:
        from taosync import pipeline
        from taosync.errors import BadInput

        ctx = self._ctx
        if ctx is None:
            return  # no good fleet yet: nothing to hold the files to
        if self._hold is not None:
            self._held_run()  # another process's operation is the baseline: hands off
            return
        try:
            the_plan, state = pipeline.plan_apply(ctx)
        except BadInput as exc:
            if self._reported.get("error") != exc.message:
                self._reported["error"] = exc.message
                self._emit("error", exc.message, level="problem")
            return
        self._reported.pop("error", None)
        op = self._news(state)  # a rollback, redo or destroy since the last look
        if op is not None:
            self._take(op)
            return
        for fp in the_plan.files:
            key = str(fp.path)
            if key not in keys or fp.changed:
                continue
            previous = state.files.get(key)
            sha = digest((fp.old_text or "").encode("utf-8")) if fp.old_text is not None else None
            if previous is not None and sha == previous.sha256:
                self._emit("checked", f"{self._show(key)}: as taosync wrote it",
                           {"path": key}, level="detail")
            elif self._reported.get(key) != sha:
                self._reported[key] = sha
                self._emit("kept", f"{self._show(key)} changed by another program; owned "
                           "keys intact, left alone", {"path": key})
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
        result = self._commit(ctx, the_plan, state, retry_fleet=False, retry_keys=keys,
                              kind="reassert")
        if result is None:
            return
        written, _ = result
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
                self._emit("fight", f"{self._show(key)}: re-asserted {len(times)} times in "
                           f"{window:g} s; something keeps changing it back — reporting only "
                           "until fleet.yaml changes", {"path": key}, level="problem")

    def _drift_event(self, fp, ctx, action: str, why: str) -> None:
        changes = self._changes([fp], ctx)
        keys = ", ".join(c["key"] or "(file)" for c in changes) or "(file missing)"
        if fp.action == "create":
            keys = "file missing"
        self._emit("drift", f"drift in {self._show(fp.path)}: {keys} — {why}",
                   {"path": str(fp.path), "action": action, "changes": changes},
                   level="problem" if action == "reported" else "info")

    # -- shared ------------------------------------------------------------------------

    def _commit(self, ctx, the_plan, state, *, retry_fleet: bool, retry_keys=(),
                kind: str = "apply"):
        """The apply transaction (recorded as ``kind``: a drift re-assert is "reassert",
        outside the kept window of applies); (result, plan written), or None."""
        from taosync import pipeline
        from taosync.errors import BadInput, WriteFailed

        def put_back(path):
            self._emit("recovered", f"an earlier apply was interrupted; put back "
                       f"{self._show(path)}", {"path": str(path)}, level="problem")

        with self._txn:
            if self._stopping:
                return None
            try:
                plan_written, result = pipeline.commit(ctx, the_plan, state,
                                                       lock_timeout=LOCK_WAIT,
                                                       on_recover=put_back, kind=kind,
                                                       check=self._guard)
            except WriteFailed as exc:
                failed = exc
            except BadInput as exc:
                self._emit("error", exc.message, level="problem")
                return None
            except Superseded as exc:  # another process's operation landed meanwhile
                self._take(exc.op)
                return None
            else:
                self._retries = 0
                if result.apply_id is not None:
                    self._known_record = result.apply_id  # our own: never news
                if result.written:
                    self._rearm()  # a directory taosync just made is watched at once
                    self._register()  # the state directory may be new (or purged)
                return result, plan_written
        self._retries += 1
        if self._retries > MAX_RETRIES:
            self._retries = 0
            self._emit("error", f"{failed.message}; giving up until the next change",
                       level="problem")
            return None
        if self._retries == 1:
            self._emit("error", f"{failed.message}; retrying", level="problem")
        self._requeue(fleet=retry_fleet, targets=retry_keys, delay=RETRY_DELAY)
        return None

    def _know(self, ctx, state) -> None:
        """A redactor for ``ctx``'s key (shown as its redacted form) that still hides
        every secret seen earlier in this run (a key rotated away, a drifted token)."""
        from taosync.pipeline import redactor_for

        earlier = self._redactor
        self._redactor = redactor_for(ctx, state)
        if earlier is not None:
            self._redactor.add(earlier.values())

    def _changes(self, files, ctx) -> list[dict]:
        from taosync.fleet.secrets import shown

        out = []
        for fp in files:
            for c in fp.changes:
                if c.secret and self._redactor is not None:  # both sides, old key too
                    self._redactor.add_change(c.old, c.new)
                out.append({"path": str(fp.path), "key": c.path, "kind": c.kind,
                            "old": shown(c.old, c.secret, ctx.key),
                            "new": shown(c.new, c.secret, ctx.key)})
        return out

    def _show(self, path) -> str:
        from taosync.pipeline import display_path

        return display_path(path, self.home)

    def _emit(self, kind: str, message: str, data: dict | None = None, *,
              level: str = "info") -> None:
        event = Event(kind, self._scrub(message), self._scrub(data or {}), level)
        with self._emit_lock:
            if self._closed:
                return
            try:
                self._on_event(event)
            except Exception:  # a broken printer (closed pipe) must not stop the loop
                pass

    def _scrub(self, value):
        return self._redactor.scrub_data(value) if self._redactor is not None else value
