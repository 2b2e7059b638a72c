"""What watch reports and how it is told what to do: :class:`Event`, :class:`Options`,
the kinds of watched path, and the file digest every part compares."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

FIX, WARN = "fix", "warn"
FLEET, KEY, TARGET = "fleet", "key", "target"
#: a path a client's render looked at (engine/cache.py ``path_kind``): a file or directory
#: appearing or vanishing there re-renders, as a fleet change does (Kilo's target moves
#: when the user creates ~/.config/kilo/opencode.json)
INPUT = "input"


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
    #: seconds between timed verifications (``--reverify``); None: only after changes
    reverify: float | None = None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
