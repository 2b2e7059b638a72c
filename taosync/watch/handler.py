"""The watchdog handler: hands every event on, non-blocking (imported when a watch
starts, so importing :mod:`taosync.watch` does not load watchdog)."""

from __future__ import annotations

from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler


class Handler(FileSystemEventHandler):
    def __init__(self, on_event: Callable[[FileSystemEvent], None]) -> None:
        self.on_event = on_event

    def dispatch(self, event: FileSystemEvent) -> None:
        self.on_event(event)
