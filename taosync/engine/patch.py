"""The engine's input: the owned keys one client wants in one file.

Client modules build these (:mod:`taosync.clients`); the engine plans, writes and records
them without knowing which client asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taosync.formats.base import KeyPath


@dataclass
class Patch:
    """Desired owned keys of one file.

    ``values`` maps a key path to the plain value taosync owns there (values may contain
    :class:`~taosync.fleet.secrets.Secret` objects; the engine reveals them on write and
    makes the file 0600). A key present last time and absent now is deleted.
    """

    path: Path
    format: str  # json | toml | yaml | dotenv
    values: dict[KeyPath, Any]
    client: str
    #: set only where missing, never owned or removed (Continue's name/version/schema)
    skeleton: dict[KeyPath, Any] = field(default_factory=dict)
    #: owned, but rewritten only when another owned value of this file changes and never
    #: reported as drift (Cline's ``updatedAt`` timestamp)
    volatile: dict[KeyPath, Any] = field(default_factory=dict)
    #: True when the file holds the key and must be 0600 even if no value is a Secret
    secret: bool = False
    #: list elements (a list's path + a Match) kept ahead of every other element of
    #: their list, in this order: for a client that uses the first element with a role
    #: (Continue's ``models``), so an entry of the user's listed earlier does not win
    lead: tuple[KeyPath, ...] = ()
