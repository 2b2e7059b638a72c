"""Arming: which directories are watched (each path of interest through its directory,
or its nearest existing ancestor), re-armed when one appears, vanishes or is replaced;
and the watchdog events coming in, which only mark what is pending."""

from __future__ import annotations

import os
import time

from taosync.watch.events import FLEET, INPUT, KEY, TARGET, digest

#: seconds between checks that every watched directory is still the one being watched
REARM_INTERVAL = 1.0
#: a file modified but not yet closed (inotify tells) is waited for this long at most
CLOSE_WAIT = 1.0


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
    """The watcher's watches and the events they deliver (a part of :class:`Watcher`)."""

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
                if source == INPUT and not self._missed(path, INPUT):
                    source = None  # a render input as it was (touched, not created or removed)
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

    def _missed(self, path: str, source: str) -> bool:
        """Whether a file under a directory armed only now needs a look."""
        if source == TARGET:
            return True
        if source == INPUT:
            from taosync.engine.cache import path_kind

            return path_kind(path) != self._inputs.get(path)
        from taosync.privilege import rights_for

        with rights_for(path):
            if not os.path.exists(path):
                return False
        if source == FLEET and self._ctx is not None and self._ctx.loaded is not None:
            known = self._included().get(path, self._ctx.loaded.sha256)
            try:
                from taosync.bounded import read_regular

                with rights_for(path):
                    return digest(read_regular(path)) != known
            except OSError:
                return False
        return True

    def _included(self) -> dict[str, str]:
        """Path → sha256 of every base fleet the last good fleet.yaml ``include:``s: an
        edit of one re-applies exactly as an edit of fleet.yaml does."""
        loaded = self._ctx.loaded if self._ctx is not None else None
        included = {}
        for path, sha in getattr(loaded, "sources", [])[1:]:
            included[os.path.abspath(path)] = sha
            included[os.path.realpath(path)] = sha
        return included

    def _rearm(self) -> None:
        """Watch the directory of every path of interest (or its nearest existing
        ancestor); drop watches no longer needed, replace dead or replaced ones. Files
        under a newly armed directory, or under a watched one that vanished or was
        replaced, are checked, since their events may have been missed."""
        interest = {self.fleet_path: FLEET}
        if self._key_file:
            interest[self._key_file] = KEY
            interest[os.path.realpath(self._key_file)] = KEY
        interest[os.path.realpath(self.fleet_path)] = FLEET
        for path in self._included():
            interest[path] = FLEET
        for path in self._inputs:
            interest.setdefault(path, INPUT)
        for path in self._targets:
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
                                     FileModifiedEvent, FileMovedEvent)

        kinds = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent,
                 FileClosedEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
        fresh, gone = [], set()
        with self._watch_lock:
            if self._observer is None:
                return
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
        with self._cond:
            self._interest = interest
            self._ancestors = frozenset(ancestors)
            if (fresh or gone) and not self._first_cycle:
                # a file under a directory armed now, or under one that went away with
                # its files (``mv ~/.codex ~/.codex.old``: no event names them)
                now = time.monotonic()
                for path, source in interest.items():
                    where = os.path.dirname(path)
                    if (where in gone or where in fresh or _nearest_dir(where) in fresh) \
                            and self._missed(path, source):
                        self._mark(source, path, now)
                        self._pending.last = now
                        if self._pending.first is None:
                            self._pending.first = now
                self._cond.notify_all()


class Handler:
    """The watchdog handler: hands every event to the watcher (non-blocking)."""

    def __init__(self, watcher: "Arming") -> None:
        self.watcher = watcher

    def dispatch(self, event) -> None:
        self.watcher._fs_event(event)
