"""The watch's voice: every outcome becomes an :class:`~taosync.watch.events.Event` handed
to the callback, one at a time and scrubbed of every secret seen this run (a key rotated
away, a drifted token included). After :meth:`Reporter.close` nothing more is said, so a
straggling thread prints nothing once the watch has stopped."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

from taosync.watch.events import Event

if TYPE_CHECKING:
    from pathlib import Path

    from taosync.engine.plan import FilePlan
    from taosync.engine.state import State
    from taosync.fleet.secrets import Redactor
    from taosync.pipeline import Context


class Reporter:
    """Emits events; knows the secrets to hide and how paths are shown."""

    def __init__(self, on_event: Callable[[Event], None], home: Path) -> None:
        self._on_event = on_event
        self.home = home
        self._lock = threading.Lock()
        self._closed = False
        self._redactor: Redactor | None = None  # every secret seen this run

    def emit(self, kind: str, message: str, data: dict[str, Any] | None = None, *,
             level: str = "info") -> None:
        event = Event(kind, self._scrub(message), self._scrub(data or {}), level)
        with self._lock:
            if self._closed:
                return
            try:
                self._on_event(event)
            except Exception:  # a broken printer (closed pipe) must not stop the loop
                pass

    def close(self) -> None:
        """Say nothing more (a verification still in flight is abandoned silently)."""
        with self._lock:
            self._closed = True

    def show(self, path: str | Path) -> str:
        from taosync.pipeline import display_path

        return display_path(path, self.home)

    def know(self, ctx: Context, state: State) -> None:
        """A redactor for ``ctx``'s key (shown as its redacted form) that still hides
        every secret seen earlier in this run (a key rotated away, a drifted token)."""
        from taosync.pipeline import redactor_for

        earlier = self._redactor
        self._redactor = redactor_for(ctx, state)
        if earlier is not None:
            self._redactor.add(earlier.values())

    def changes(self, files: Iterable[FilePlan], ctx: Context) -> list[dict[str, Any]]:
        """The key-level changes of ``files``, secrets shown redacted (and remembered)."""
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

    def _scrub(self, value: Any) -> Any:
        return self._redactor.scrub_data(value) if self._redactor is not None else value
