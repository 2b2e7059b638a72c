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
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

FIX, WARN = "fix", "warn"
FLEET, KEY, TARGET = "fleet", "key", "target"

#: seconds between checks that every watched directory is still the one being watched
REARM_INTERVAL = 1.0
#: quiet time after which fleet.yaml is loaded and planned ahead of the debounce
SETTLE = 0.02
#: at most this long (and ``10 × debounce``) after the first pending event, run anyway
MAX_DELAY = 1.0
#: a file modified but not yet closed (inotify tells) is waited for this long at most
CLOSE_WAIT = 1.0
#: each attempt at the state lock; a busy lock is retried, never waited on for long,
#: so SIGTERM is honoured within a second
LOCK_WAIT = 0.25
RETRY_DELAY = 0.5
MAX_RETRIES = 20
#: (re-asserts, seconds): a file re-asserted this often is only reported afterwards
FIGHT_LIMIT = (5, 60.0)


@dataclass
class Event:
    """One thing that happened; ``level`` is info, detail (shown with -v) or problem."""

    kind: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    level: str = "info"
    time: float = field(default_factory=time.time)

    def stamp(self) -> str:
        return datetime.fromtimestamp(self.time).strftime("%H:%M:%S.%f")[:-3]

    def to_dict(self) -> dict[str, Any]:
        when = datetime.fromtimestamp(self.time).astimezone().isoformat(timespec="milliseconds")
        return {"time": when, "event": self.kind, "level": self.level,
                "message": self.message, **self.data}


@dataclass
class Options:
    debounce: float = 0.1
    drift: str = FIX  # fix | warn
    verify: bool = True
    stub: bool = False


@dataclass
class _Pending:
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
class _Speculation:
    gen: int
    ctx: Any = None
    plan: Any = None
    state: Any = None
    error: BaseException | None = None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _nearest_dir(path: str) -> str:
    """``path`` itself when it is a directory, else its nearest existing ancestor."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Watcher:
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
        self._pending = _Pending()
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
        self._interest: dict[str, str] = {self.fleet_path: FLEET}
        self._ancestors: frozenset[str] = frozenset()
        self._watches: dict[str, tuple[Any, tuple[int, int] | None]] = {}
        self._watch_lock = threading.Lock()
        self._observer = None
        self._close_events = False
        self._spec: _Speculation | None = None

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

        self.counts = {"cycles": 0, "applies": 0, "verifies": 0}
        self._verifier = _Verifier(self)
        self._worker = threading.Thread(target=self._run, name="taosync-watch", daemon=True)

    # -- life cycle --------------------------------------------------------------------

    def start(self) -> "Watcher":
        from watchdog.observers import Observer

        self._observer = Observer()
        self._close_events = type(self._observer).__name__ == "InotifyObserver"
        self._handler = _Handler(self)
        self._observer.start()
        self._rearm()
        with self._cond:
            self._pending.fleet = True
            self._pending.first = self._pending.last = float("-inf")
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

    # -- events in ---------------------------------------------------------------------

    def _fs_event(self, event) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return  # our own reads
        paths = [p for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        if isinstance(paths[0], bytes):
            paths = [os.fsdecode(p) for p in paths]
        now = time.monotonic()
        with self._cond:
            hit = False
            for path in paths:
                source = self._interest.get(path)
                if source is not None:
                    hit = True
                    self._mark(source, path, now)
                    if self._close_events and kind == "modified" and not event.is_directory:
                        self._open.setdefault(path, now)
                    elif kind in ("closed", "moved", "created", "deleted"):
                        self._open.pop(path, None)
                if event.is_directory and kind != "modified" and (
                        path in self._ancestors or path in self._watches):
                    hit = True  # a directory on the way appeared, vanished or moved
                    self._pending.rearm = True
            if hit:
                self._gen += 1
                p = self._pending
                p.last = now
                if p.first is None:
                    p.first = now
                self._cond.notify_all()

    def _mark(self, source: str, path: str, now: float) -> None:
        """Record a change of ``path`` (caller holds ``_cond``)."""
        self._pending.sources[path] = source
        if source == TARGET:
            self._pending.targets.add(self._targets.get(path, path))
        else:
            self._pending.fleet = True

    # -- the worker --------------------------------------------------------------------

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
                    batch, self._pending = self._pending, _Pending()
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

        spec = _Speculation(gen)
        try:
            spec.ctx = pipeline.prepare(self.settings, use_cache=False)
            spec.plan, spec.state = pipeline.plan_apply(spec.ctx)
        except Exception as exc:  # a TaosyncError is reported by the cycle, a bug re-run there
            spec.error = exc
        with self._cond:
            self._spec = spec

    def _take_speculation(self) -> _Speculation | None:
        with self._cond:
            spec, self._spec = self._spec, None
            gen = self._gen
        if spec is None or spec.gen != gen:
            return None
        if spec.error is not None and not _is_taosync(spec.error):
            return None  # run it again in the cycle, where it is reported
        if spec.ctx is not None and spec.ctx.loaded is not None:
            try:
                with open(self.fleet_path, "rb") as fh:
                    if _sha(fh.read()) != spec.ctx.loaded.sha256:
                        return None
            except OSError:
                return None
        return spec

    def _cycle(self, batch: _Pending) -> None:
        self.counts["cycles"] += 1
        try:
            self._cycle_body(batch)
        finally:
            self._first_cycle = False
            self._watching()

    def _cycle_body(self, batch: _Pending) -> None:
        if batch.rearm:
            self._rearm()
        for path, source in sorted(batch.sources.items()):
            if source != TARGET:
                what = "the key file" if source == KEY else self._show(path)
                gone = not os.path.exists(path)
                self._emit("changed", f"{what} {'deleted' if gone else 'changed'}",
                           {"source": source, "path": path, "deleted": gone})
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

    def _fleet_run(self, spec: _Speculation | None) -> None:
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
        self._adopt(ctx, spec.state if spec is not None else None)
        if self._first_cycle:
            self._rearm()
            self._watching()
        try:
            if spec is not None and spec.plan is not None:
                the_plan, state = spec.plan, spec.state
            else:
                the_plan, state = pipeline.plan_apply(ctx)
        except BadInput as exc:
            self._emit("error", exc.message, level="problem")
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

    def _settled(self) -> bool:
        """Is a fleet.yaml that failed to load worth reporting? Only once it reads the
        same a debounce later: a save caught half-way (truncated and not yet written,
        moved aside and not yet back) is loaded again instead. The first cycle does not
        wait: nobody is saving then."""
        try:
            with open(self.fleet_path, "rb") as fh:
                now = _sha(fh.read())
        except OSError:
            now = "absent"
        if self._first_cycle or now == self._failed_read:
            return True
        self._failed_read = now
        self._requeue(fleet=True, delay=self.options.debounce)
        return False

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
                self._emit("warning", text, level="problem")
        state = state if state is not None else ctx.store.load()
        self._know(ctx, state)
        paths = {str(p.path) for p in ctx.patches} | set(state.files)
        targets = {}
        for key in paths:
            targets[os.path.abspath(key)] = key
            targets[os.path.realpath(key)] = key
        with self._cond:
            self._targets = targets

    # -- a target changed --------------------------------------------------------------

    def _target_run(self, keys: set[str]) -> None:
        from taosync import pipeline
        from taosync.errors import BadInput

        ctx = self._ctx
        if ctx is None:
            return  # no good fleet yet: nothing to hold the files to
        try:
            the_plan, state = pipeline.plan_apply(ctx)
        except BadInput as exc:
            if self._reported.get("error") != exc.message:
                self._reported["error"] = exc.message
                self._emit("error", exc.message, level="problem")
            return
        self._reported.pop("error", None)
        for fp in the_plan.files:
            key = str(fp.path)
            if key not in keys or fp.changed:
                continue
            previous = state.files.get(key)
            sha = _sha((fp.old_text or "").encode("utf-8")) if fp.old_text is not None else None
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
                sig = "drift:" + _sha((fp.old_text or "").encode("utf-8"))
                if self._reported.get(key) == sig:
                    continue
                self._reported[key] = sig
                why = ("reported only (--drift warn)" if self.options.drift == WARN else
                       "reported only: something keeps changing it back")
                self._drift_event(fp, ctx, "reported", why)
            return
        now = time.monotonic()
        result = self._commit(ctx, the_plan, state, retry_fleet=False, retry_keys=keys)
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

    def _commit(self, ctx, the_plan, state, *, retry_fleet: bool, retry_keys=()):
        """The apply transaction; (result, plan written), or None when it could not run."""
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
                                                       on_recover=put_back)
            except WriteFailed as exc:
                failed = exc
            except BadInput as exc:
                self._emit("error", exc.message, level="problem")
                return None
            else:
                self._retries = 0
                if result.written:
                    self._rearm()  # a directory taosync just made is watched at once
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

    def _missed(self, path: str, source: str) -> bool:
        """Whether a file under a directory armed only now needs a look."""
        if source == TARGET:
            return True
        if not os.path.exists(path):
            return False
        if source == FLEET and self._ctx is not None and self._ctx.loaded is not None:
            try:
                with open(path, "rb") as fh:
                    return _sha(fh.read()) != self._ctx.loaded.sha256
            except OSError:
                return False
        return True

    # -- watches -----------------------------------------------------------------------

    def _rearm(self) -> None:
        """Watch the directory of every path of interest (or its nearest existing
        ancestor); drop watches no longer needed, replace dead or replaced ones. Files
        under a newly armed directory are checked, since their events may have been missed."""
        interest = {self.fleet_path: FLEET}
        if self._key_file:
            interest[self._key_file] = KEY
            interest[os.path.realpath(self._key_file)] = KEY
        interest[os.path.realpath(self.fleet_path)] = FLEET
        for path in self._targets:
            interest[path] = TARGET
        ancestors = set()
        want = set()
        for path in interest:
            parent = os.path.dirname(path)
            want.add(_nearest_dir(parent))
            while True:
                ancestors.add(parent)
                up = os.path.dirname(parent)
                if up == parent:
                    break
                parent = up
        from watchdog.events import (DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
                                     FileClosedEvent, FileCreatedEvent, FileDeletedEvent,
                                     FileModifiedEvent, FileMovedEvent)

        kinds = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent,
                 FileClosedEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
        fresh = []
        with self._watch_lock:
            if self._observer is None:
                return
            alive = {e.watch.path for e in self._observer.emitters if e.is_alive()}
            for d, (watch, ident) in list(self._watches.items()):
                if d in want and d in alive and _ident(d) == ident:
                    continue
                try:
                    self._observer.unschedule(watch)
                except (KeyError, ValueError, OSError):
                    pass
                del self._watches[d]
            for d in sorted(want - set(self._watches)):
                ident = _ident(d)
                try:
                    watch = self._observer.schedule(self._handler, d, recursive=False,
                                                    event_filter=kinds)
                except OSError:
                    continue  # vanished meanwhile; the next check tries again
                self._watches[d] = (watch, ident)
                fresh.append(d)
        with self._cond:
            self._interest = interest
            self._ancestors = frozenset(ancestors)
            if fresh and not self._first_cycle:
                now = time.monotonic()
                for path, source in interest.items():
                    if os.path.dirname(path) in fresh and self._missed(path, source):
                        self._mark(source, path, now)
                        self._pending.last = now
                        if self._pending.first is None:
                            self._pending.first = now
                self._cond.notify_all()


def _is_taosync(exc: BaseException) -> bool:
    from taosync.errors import TaosyncError

    return isinstance(exc, TaosyncError)


class _Handler:
    """The watchdog handler: hands every event to the watcher (non-blocking)."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event) -> None:
        self.watcher._fs_event(event)


class _Verifier:
    """Verification, one run at a time; requests made meanwhile merge into the next run."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self._cond = threading.Condition()
        self._clients: set[str] = set()
        self._ctx = None
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

    def request(self, ctx, clients: set[str]) -> None:
        with self._cond:
            self._ctx = ctx
            self._clients |= clients
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._clients and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                ctx, clients = self._ctx, self._clients
                self._clients = set()
                self._running = True
            try:
                self._verify(ctx, clients)
            except Exception as exc:
                self.watcher._emit("error", f"verify failed to run: {type(exc).__name__}: "
                                   f"{getattr(exc, 'message', exc)}", level="problem")
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()

    def _verify(self, ctx, clients: set[str]) -> None:
        from taosync import pipeline
        from taosync.verify.session import verify_fleet

        w = self.watcher
        fleet = pipeline.loaded_fleet(ctx).fleet
        only = sorted(set(clients) & set(fleet.enabled_clients()))
        if not only:
            return
        w.counts["verifies"] += 1
        report = verify_fleet(fleet, ctx.key, ctx.env, state_dir=w.settings.state_dir(),
                              only=only, stub=w.options.stub, strict=False)
        for text in report.warnings:
            w._emit("warning", text, level="problem")
        for r in report.results:
            ms = f"{r.latency * 1000:.0f} ms" if r.latency is not None else "—"
            line = f"{'✓' if r.ok else '✗'} {r.client}  {r.route}  {r.model}  {ms}"
            if not r.ok:
                line += f"  {'HTTP ' + str(r.status) if r.status else 'no answer'}"
                if r.diagnosis is not None:
                    line += (f" — {r.diagnosis.code}: {r.diagnosis.cause}; "
                             f"fix: {r.diagnosis.fix}")
            w._emit("probe", line, r.to_dict(), level="info" if r.ok else "problem")
        passed = sum(1 for r in report.results if r.ok)
        total = len(report.results)
        w._emit("verified", f"verified {', '.join(only)}: {passed}/{total} "
                f"backend{'s' if total != 1 else ''} pass"
                + (" (stand-in gateway)" if report.stub_root else ""),
                {"clients": only, "ok": report.ok, "passed": passed,
                 "failed": total - passed, "stub": report.stub_root is not None},
                level="info" if report.ok else "problem")
