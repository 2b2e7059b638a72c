"""One home, one state: the home (and the location variables) a state was made for.

The state keys client files by absolute path. Two homes sharing one state directory
(``HOME=/tmp/x taosync apply`` in a shell exporting ``XDG_STATE_HOME``) would each plan
the other's files as "no longer managed" and give them back. So state.json records the
home and every location variable in force when it was written (:class:`Owner`), and

* a run with another home refuses before it reads or writes anything (:meth:`Owner.claim`,
  called by every load of a command's store): exit 2, both homes named, and the fix;
* a state from before taosync recorded its home adopts the run's home at its next write —
  unless it holds files and none of them is in this home or its locations (then it is
  another home's: refused the same way);
* independently, a run never plans, writes or deletes a file outside the home and the
  locations in force, and never gives back a file that lies where its client's files no
  longer live (a location variable such as ``CLAUDE_CONFIG_DIR`` moved them): such state
  entries are left alone, kept, and named (:class:`Bounds`); ``apply --release-moved``
  gives back the moved ones.

Standard library only, and nothing imported at load but what state.py has: every
command's store is made with an Owner, the no-op path included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from taosync.engine import location_vars

#: every environment variable a client module reads its files' location from (a client's
#: LOCATION_VARS and LOCATION_FILES, the XDG/Windows bases), generated from the registry
#: (``python -m taosync.dev regenerate``) so the no-op path need not import the clients
LOCATION_VARS = location_vars.LOCATION_VARS


#: why a state entry is left alone (:meth:`Bounds.held`)
OUTSIDE, MOVED = "outside", "moved"


def within(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies under it (both absolute, compared as spelled)."""
    path, root = os.path.abspath(path), os.path.abspath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class Owner:
    """The home of this run and the location variables in force (var → path)."""

    home: str
    locations: dict = field(default_factory=dict)
    #: the home came from --home (the fix a refusal names is then that option)
    sandboxed: bool = False

    def same_home(self, other: str) -> bool:
        """``other`` is this home (as spelled, or the same directory through links)."""
        if os.path.abspath(other) == os.path.abspath(self.home):
            return True
        try:
            return os.path.realpath(other) == os.path.realpath(self.home)
        except (OSError, ValueError):
            return False

    def holds(self, path: str) -> bool:
        """``path`` lies in this home or in a location in force."""
        return any(within(path, root) for root in (self.home, *self.locations.values()))

    def claim(self, state, state_path) -> None:
        """Raise BadInput when ``state`` belongs to another home (module doc); adopt an
        unrecorded one in memory (saved by the next write)."""
        from taosync.errors import BadInput

        recorded = state.home
        if recorded is None:
            if state.files and not any(self.holds(p) for p in state.files):
                example = sorted(state.files)[0]
                raise BadInput(
                    f"{state_path}: this state holds no file in this run's home {self.home} "
                    f"(it holds {example} and {len(state.files) - 1} more) and was written "
                    "before taosync recorded its home: set XDG_STATE_HOME to a state "
                    "directory of this home (or unset it), or run with the home it was "
                    "made for; nothing was changed")
            return
        if not self.same_home(recorded):
            raise BadInput(
                f"{state_path}: this state belongs to home {recorded}; this run's home is "
                f"{self.home}: set XDG_STATE_HOME to a state directory of this home (or "
                f"unset it), or {self._run_with(recorded)}; nothing was changed")

    def _run_with(self, home: str) -> str:
        return f"pass --home {home}" if self.sandboxed else f"run with HOME={home}"


def moved_vars(recorded: dict, now: dict) -> list[tuple[str, str | None, str | None]]:
    """(variable, path when the state was written, path now) for each location variable
    that differs (None: unset)."""
    return [(var, recorded.get(var), now.get(var)) for var in sorted(set(recorded) | set(now))
            if recorded.get(var) != now.get(var)]


class Bounds:
    """Where this run may give files back: what :meth:`held` says of a state entry no
    longer desired. ``home``: the run's; ``where(client)``: (directories, files) where
    that client's files live under the variables in force, ``where(None)`` those of
    every client (pipeline.py builds it from the registry, which the engine does not
    know); asked only about an entry no longer desired (a no-op plan asks nothing)."""

    def __init__(self, home, where, release_moved: bool = False):
        self.home = str(home)
        self.where = where
        self.release_moved = release_moved
        self._mine: tuple[list, set] | None = None
        self._per_client: dict[str, tuple[list, set]] = {}

    def _where(self, client: str | None):
        dirs, files = self.where(client)
        return [os.path.abspath(d) for d in dirs], {os.path.abspath(f) for f in files}

    def _inside(self, path: str, where) -> bool:
        dirs, files = where
        return os.path.abspath(path) in files or any(within(path, d) for d in dirs)

    def in_scope(self, path: str) -> bool:
        """In the home or where any client's files live under the variables in force."""
        if within(path, self.home):
            return True
        if self._mine is None:
            self._mine = self._where(None)
        return self._inside(path, self._mine)

    def held(self, path: str, clients) -> str | None:
        """None when ``path`` may be given back; else OUTSIDE (not in this home nor a
        location in force: never touched) or MOVED (not where its clients' files live
        now: a location variable changed; given back only with ``release_moved``)."""
        if not self.in_scope(path):
            return OUTSIDE
        for client in clients:
            if client not in self._per_client:
                self._per_client[client] = self._where(client)
            if self._inside(path, self._per_client[client]):
                return None
        return None if self.release_moved else MOVED
