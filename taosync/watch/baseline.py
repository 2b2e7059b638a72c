"""The last good fleet: the context every target is held to, and the paths it involves
(its key file, its targets, what its render looked at, the fleets it includes). The
cycle replaces it after each good load; arming, peers and the verifier only read it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taosync.pipeline import Context


class Baseline:
    """What the watch holds the files to; ``ctx`` is None until a fleet loads."""

    def __init__(self) -> None:
        self.ctx: Context | None = None
        self.key_file: str | None = None
        self.targets: dict[str, str] = {}  # watched path (as given and real) → state key
        #: path the last render looked at → what it found there (engine/cache.py path_kind)
        self.inputs: dict[str, str | None] = {}

    def included(self) -> dict[str, str]:
        """Path → sha256 of every base fleet the last good fleet.yaml ``include:``s: an
        edit of one re-applies exactly as an edit of fleet.yaml does."""
        loaded = self.ctx.loaded if self.ctx is not None else None
        included = {}
        for path, sha in getattr(loaded, "sources", [])[1:]:
            included[os.path.abspath(path)] = sha
            included[os.path.realpath(path)] = sha
        return included
