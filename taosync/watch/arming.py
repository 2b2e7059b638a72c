"""Arming: which directories are watched (each path of interest through its directory,
or its nearest existing ancestor), re-armed when one appears, vanishes or is replaced;
and the watchdog events coming in, which only mark what is pending."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from taosync.watch.events import FLEET, INPUT, KEY, TARGET, digest

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent
    from watchdog.observers.api import BaseObserver, ObservedWatch

    from taosync.watch.baseline import Baseline
    from taosync.watch.handler import Handler
    from taosync.watch.scheduler import Queue


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


class Arming:
    """The watches on the paths of ``baseline`` (and fleet.yaml), and the watchdog
    handler of the events they deliver, which mark work in ``queue``."""

    def __init__(self, fleet_path: str, baseline: Baseline, queue: Queue) -> None:
        self.fleet_path = fleet_path
        self.baseline = baseline
        self.queue = queue
        # under queue.cond: what an incoming event is matched against
        self._interest: dict[str, str] = {fleet_path: FLEET}
        self._ancestors: frozenset[str] = frozenset()
        # under _lock: directory → (its watch, its (device, inode) when armed)
        self._watches: dict[str, tuple[ObservedWatch, tuple[int, int] | None]] = {}
        self._lock = threading.Lock()
        self._observer: BaseObserver | None = None
        self._close_events = False  # the observer reports a file closed after writing
        self._handler: Handler | None = None

    def start(self, observer: BaseObserver) -> None:
        from taosync.watch.handler import Handler

        self._handler = Handler(self.dispatch)
        self._observer = observer
        self._close_events = type(observer).__name__ == "InotifyObserver"

    def watched(self) -> list[str]:
        """The directories watched now."""
        return sorted(self._watches)

    # -- incoming events (the watchdog handler interface) -------------------------------

    def dispatch(self, event: FileSystemEvent) -> None:
        """One watchdog event (on the observer's thread): mark what it touches."""
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return  # our own reads
        paths = [os.fsdecode(p) for p in (event.src_path, getattr(event, "dest_path", ""))
                 if p]
        now = time.monotonic()
        q = self.queue
        with q.cond:
            hit = False
            for path in paths:
                source = self._interest.get(path)
                if source == INPUT and not self._missed(path, INPUT):
                    source = None  # a render input as it was (touched, not created or removed)
                if source is not None:
                    hit = True
                    self._mark(source, path)
                    if self._close_events and kind == "modified" and not event.is_directory:
                        q.open.setdefault(path, now)
                    elif kind in ("closed", "moved", "created", "deleted"):
                        q.open.pop(path, None)
                if event.is_directory and kind != "modified" and (
                        path in self._ancestors or path in self._watches):
                    hit = True  # a directory on the way appeared, vanished or moved
                    q.pending.rearm = True
            if hit:
                q.gen += 1
                q.moved(now)
                q.cond.notify_all()

    def _mark(self, source: str, path: str) -> None:
        """Record a change of ``path`` (caller holds ``queue.cond``)."""
        self.queue.mark(source, path, self.baseline.targets.get(path, path))

    def _missed(self, path: str, source: str) -> bool:
        """Whether a file under a directory armed only now needs a look."""
        if source == TARGET:
            return True
        if source == INPUT:
            from taosync.engine.cache import path_kind

            return path_kind(path) != self.baseline.inputs.get(path)
        from taosync.privilege import rights_for

        with rights_for(path):
            if not os.path.exists(path):
                return False
        ctx = self.baseline.ctx
        if source == FLEET and ctx is not None and ctx.loaded is not None:
            known = self.baseline.included().get(path, ctx.loaded.sha256)
            try:
                from taosync.bounded import read_regular

                with rights_for(path):
                    return digest(read_regular(path)) != known
            except OSError:
                return False
        return True

    # -- the watches -------------------------------------------------------------------

    def rearm(self, *, look: bool) -> None:
        """Watch the directory of every path of interest (or its nearest existing
        ancestor); drop watches no longer needed, replace dead or replaced ones. With
        ``look`` (every time but before the first cycle), files under a newly armed
        directory, or under a watched one that vanished or was replaced, are checked,
        since their events may have been missed."""
        b = self.baseline
        interest = {self.fleet_path: FLEET}
        if b.key_file:
            interest[b.key_file] = KEY
            interest[os.path.realpath(b.key_file)] = KEY
        interest[os.path.realpath(self.fleet_path)] = FLEET
        for path in b.included():
            interest[path] = FLEET
        for path in b.inputs:
            interest.setdefault(path, INPUT)
        for path in b.targets:
            interest[path] = TARGET
        from taosync.privilege import in_home, invoker_rights, owner_rights

        ancestors = set()
        want, invokers = set(), set()
        for path, source in interest.items():
            parent = os.path.dirname(path)
            # root on a user's home watches the home's directories as their owner (no
            # watch through a link of theirs), fleet.yaml's and the key's as the invoker
            invoker = source in (FLEET, KEY) and not in_home(path)
            with invoker_rights() if invoker else owner_rights():
                nearest = _nearest_dir(parent)
            want.add(nearest)
            if invoker:
                invokers.add(nearest)
            while True:
                ancestors.add(parent)
                up = os.path.dirname(parent)
                if up == parent:
                    break
                parent = up
        from watchdog.events import (DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
                                     FileClosedEvent, FileCreatedEvent, FileDeletedEvent,
                                     FileModifiedEvent, FileMovedEvent, FileSystemEvent)

        kinds: list[type[FileSystemEvent]] = [
            FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent,
            FileClosedEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
        fresh: list[str] = []
        gone: set[str] = set()
        with self._lock:
            if self._observer is None or self._handler is None:
                return  # not started
            alive = {e.watch.path for e in self._observer.emitters if e.is_alive()}
            for d, (watch, ident) in list(self._watches.items()):
                with invoker_rights() if d in invokers else owner_rights():
                    same = _ident(d) == ident
                if d in want and d in alive and same:
                    continue
                if not same:
                    gone.add(d)  # renamed away (or replaced): its files are not there now
                try:
                    self._observer.unschedule(watch)
                except (KeyError, ValueError, OSError):
                    pass
                del self._watches[d]
            for d in sorted(want - set(self._watches)):
                try:
                    with invoker_rights() if d in invokers else owner_rights():
                        ident = _ident(d)  # the emitter's thread keeps these rights
                        watch = self._observer.schedule(self._handler, d, recursive=False,
                                                        event_filter=kinds)
                except OSError:
                    continue  # vanished meanwhile; the next check tries again
                self._watches[d] = (watch, ident)
                fresh.append(d)
        q = self.queue
        with q.cond:
            self._interest = interest
            self._ancestors = frozenset(ancestors)
            if (fresh or gone) and look:
                # a file under a directory armed now, or under one that went away with
                # its files (``mv ~/.codex ~/.codex.old``: no event names them)
                now = time.monotonic()
                for path, source in interest.items():
                    where = os.path.dirname(path)
                    if (where in gone or where in fresh or _nearest_dir(where) in fresh) \
                            and self._missed(path, source):
                        self._mark(source, path)
                        q.moved(now)
                q.cond.notify_all()
