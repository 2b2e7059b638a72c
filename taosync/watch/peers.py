"""Other taosync processes (the watcher's :class:`Peers`): a rollback, redo,
destroy, forget or adopt run elsewhere is taken as the new baseline, not undone.

The watch registers itself in the state directory (engine/coordination.py), so those
commands say it is running and leave a note of what they did. It learns of them

* from the state's records: one of kind rollback, redo or destroy newer than the last
  record it accounted for (its own applies and re-asserts never have those kinds). It
  looks after planning and again under the lock, just before it would write, so an
  operation that lands in between is never overwritten; a history that vanished
  (``destroy --purge``) counts as well;
* from fleet.yaml: a save whose digest a forget or adopt announced before writing it.

Then it *holds*: it logs one line, writes nothing — no drift re-assert, no apply — and
waits for a save of fleet.yaml (an included fleet, the key file) that changes what
the fleet renders; then it applies as usual. A forgotten
client stays unmanaged (``managed: false``), so its files are not written even then.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from taosync.engine.coordination import RECORDED, Op

if TYPE_CHECKING:
    from pathlib import Path

    from taosync.engine.state import ApplyRecord, State
    from taosync.pipeline import Context
    from taosync.settings import Settings
    from taosync.watch.baseline import Baseline
    from taosync.watch.report import Reporter
    from taosync.watch.scheduler import Pending


#: seconds an announced forget or adopt may take to write fleet.yaml
FLEET_OP_PENDING = 30.0


class Superseded(Exception):
    """Another process's operation landed before this write: write nothing."""

    def __init__(self, op: Op) -> None:
        super().__init__(op.who())
        self.op = op


class Hold:
    """Why the watch writes nothing now, and what fleet.yaml rendered then."""

    def __init__(self, op: Op, desired: list[tuple[Any, ...]] | None) -> None:
        self.op = op
        self.desired = desired


def desired(ctx: Context | None) -> list[tuple[Any, ...]] | None:
    """What ``ctx`` asks of the files (Cline's ``updatedAt`` timestamp aside)."""
    if ctx is None:
        return None
    return [(str(p.path), p.format, p.client, p.values, p.skeleton, p.secret)
            for p in ctx.patches]


class Peers:
    """The watcher's view of other taosync processes (see the module doc): what it has
    accounted for, and the hold an operation of theirs put the watch in."""

    def __init__(self, settings: Settings, fleet_path: str, baseline: Baseline,
                 report: Reporter) -> None:
        self.settings = settings
        self.fleet_path = fleet_path
        self.baseline = baseline
        self.report = report
        self._registration: Path | None = None
        self._known_record: int | None = None  # newest state record accounted for
        self._seen_ops: set[str] = set()
        self._hold: Hold | None = None
        self._fleet_touched = False  # a fleet source was saved since the hold began

    def start(self) -> None:
        """What exists already is old news: the first apply goes ahead as usual."""
        from taosync.engine.coordination import read_ops
        from taosync.engine.state import StateStore
        from taosync.errors import BadInput

        root = self.settings.state_dir()
        self._seen_ops = {op.id for op in read_ops(root)}
        try:
            applies = StateStore(root).load().applies
        except BadInput:
            applies = []  # reported by the first cycle
        self._known_record = applies[-1].id if applies else 0
        self.register()

    def register(self) -> None:
        """Say this watch runs (again: the state directory may be new, or purged)."""
        from taosync.engine.coordination import register_watch

        if self._registration is None or not self._registration.exists():
            self._registration = register_watch(self.settings.state_dir(), self.fleet_path)

    def stop(self) -> None:
        from taosync.engine.coordination import unregister_watch

        unregister_watch(self._registration)
        self._registration = None

    @property
    def holding(self) -> bool:
        return self._hold is not None

    def own(self, record: int) -> None:
        """``record`` is this watch's own write: never news."""
        self._known_record = record

    def touched(self) -> None:
        """A fleet source was saved (what ends a hold)."""
        self._fleet_touched = True

    # -- learning of an operation ------------------------------------------------------

    def news(self, state: State) -> Op | None:
        """The newest operation of another process in ``state`` since the last look (and
        the records up to now accounted for)."""
        known = self._known_record or 0
        records = [r for r in state.applies if r.id > known]
        last = state.applies[-1].id if state.applies else 0
        found = None
        if known and last < known:  # the history is gone: destroy --purge, or moved away
            found = Op("destroy --purge")
        for record in records:
            if record.kind in RECORDED:
                found = self._op_for(record)
        self._known_record = last
        return found

    def _op_for(self, record: ApplyRecord) -> Op:
        """The operation that made ``record``, with its pid when it left a note."""
        from taosync.engine.coordination import read_ops

        for op in reversed(read_ops(self.settings.state_dir())):
            if op.record == record.id and op.kind == record.kind:
                self._seen_ops.add(op.id)
                return op
        return Op(record.kind, record=record.id)

    def guard(self, state: State) -> None:
        """``pipeline.commit``'s check, under the lock: write nothing over an operation
        that landed since the plan was made."""
        op = self.news(state)
        if op is not None:
            raise Superseded(op)

    def fleet_op(self, ctx: Context) -> Op | None:
        """The forget or adopt that wrote fleet.yaml as ``ctx`` read it, if one did. One
        announced but not seen yet stays pending a while (its write may be under way)."""
        from taosync.engine.coordination import read_ops

        loaded = ctx.loaded
        found = None
        for op in read_ops(self.settings.state_dir()):
            if op.id in self._seen_ops or op.fleet is None:
                continue
            if loaded is not None and op.fleet == loaded.sha256:
                found = op
                self._seen_ops.add(op.id)
            elif time.time() - op.time > FLEET_OP_PENDING:
                self._seen_ops.add(op.id)
        return found

    # -- holding -----------------------------------------------------------------------

    def take(self, op: Op) -> None:
        """Hold: the files as ``op`` left them are the baseline until fleet.yaml changes."""
        self._hold = Hold(op, desired(self.baseline.ctx))
        self._fleet_touched = False
        self.report.emit("baseline", f"{op.who()}: taken as the new baseline; waiting for "
                         f"{self.report.show(self.fleet_path)} to change",
                         {"op": op.kind, "pid": op.pid, "record": op.record,
                          **({"client": op.client} if op.client else {})})

    def still_held(self, ctx: Context) -> bool:
        """During a hold: does ``ctx`` (just loaded) keep it? Only a saved fleet source
        that renders something else ends it (a route re-chosen by a timed verification,
        a retry or a save that changes nothing keep it)."""
        hold = self._hold
        if hold is None:
            return False
        shown = self.report.show(self.fleet_path)
        if self._fleet_touched and desired(ctx) != hold.desired:
            self._hold = None
            self._fleet_touched = False
            self.absorb(ctx)
            self.report.emit("resumed", f"{shown} changed: applying again "
                             f"(held since {hold.op.who()})", {"op": hold.op.kind})
            return False
        if self._fleet_touched:
            self._fleet_touched = False
            self.report.emit("held", f"{shown} saved, but it renders the same: the files "
                             f"stay as {hold.op.kind} left them", {"op": hold.op.kind})
        return True

    def absorb(self, ctx: Context) -> None:
        """Everything done before this fleet.yaml change is superseded by it."""
        from taosync.engine.coordination import read_ops
        from taosync.errors import BadInput

        try:
            self.news(ctx.store.load())
        except BadInput:
            pass
        self._seen_ops |= {op.id for op in read_ops(self.settings.state_dir())}

    def held_news(self) -> Op | None:
        """A client file changed during a hold: left alone; a further operation (a redo
        after the rollback) is returned, to be taken as the new baseline."""
        from taosync.errors import BadInput

        ctx, hold = self.baseline.ctx, self._hold
        if ctx is None or hold is None:
            return None
        try:
            state = ctx.store.load()
        except BadInput:
            return None
        op = self.news(state)
        if op is not None and not (op.kind == "destroy --purge" and hold.op.kind
                                   == "destroy"):  # the same destroy, its state gone too
            return op
        return None


def fleet_sources_touched(batch: Pending) -> bool:
    """fleet.yaml, a fleet it includes or the key file was saved in ``batch``. A render
    input (a path a client's render looked at) does not count: a destroy removing
    directories taosync made changes those too, and must not end its own hold."""
    from taosync.watch.events import FLEET, KEY

    return any(source in (FLEET, KEY) for source in batch.sources.values())
