"""taosync processes on one home agree: who is watching, and what another process did.

A running ``taosync watch`` keeps the files as fleet.yaml asks. A one-shot command that
changes them on purpose without fleet.yaml asking for it (rollback, redo, destroy,
forget, adopt) must not be undone by it a second later, so the two meet in the state
directory:

* ``watch/<pid>.json`` — one per running watch (pid, fleet.yaml), removed when it stops.
  A file whose process is gone (killed) is stale: not reported, and removed.
* ``ops.json`` — the last :data:`KEEP_OPS` such operations, written only while a watch
  runs: kind, pid, time, the state record it made (rollback, redo, destroy) or the
  fleet.yaml digest it is about to write (forget, adopt), so the watch can tell that
  save from the user's own. A watch never writes one: its own applies are never taken
  for another process's.

What a watch does with them is taosync/watch/peers.py. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from taosync.privilege import with_owner_rights

WATCH_DIR = "watch"
OPS_FILE = "ops.json"
KEEP_OPS = 20
#: the state record kinds a watch takes as another process's decision about the files
RECORDED = ("rollback", "redo", "destroy")


@dataclass
class Op:
    """One operation of another process: ``kind`` (rollback, redo, destroy, forget,
    adopt), who did it, and what identifies it to a watch."""

    kind: str
    pid: int | None = None
    record: int | None = None  # the state record it made
    fleet: str | None = None  # sha256 of the fleet.yaml it wrote
    client: str | None = None  # forget: the client forgotten
    id: str = ""
    time: float = 0.0

    def who(self) -> str:
        what = f"{self.kind} {self.client}" if self.client else self.kind
        return f"{what} by pid {self.pid}" if self.pid else f"{what} by another taosync"


# -- watches -----------------------------------------------------------------------------

@with_owner_rights
def register_watch(root: Path, fleet: str) -> Path | None:
    """Say this process watches ``fleet`` (None when the state directory does not exist
    yet: the watch registers after its first apply made it)."""
    if not root.is_dir():
        return None
    folder = root / WATCH_DIR
    path = folder / f"{os.getpid()}.json"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        _write(path, {"pid": os.getpid(), "fleet": fleet, "started": time.time()})
    except OSError:
        return None
    return path


@with_owner_rights
def unregister_watch(path: Path | None) -> None:
    if path is None:
        return
    try:
        path.unlink()
    except OSError:
        pass


@with_owner_rights
def running_watches(root: Path) -> list[int]:
    """The pids of the watches running on this state directory (not this process)."""
    folder = root / WATCH_DIR
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    pids = []
    for name in names:
        stem, _, ext = name.partition(".")
        if ext != "json" or not stem.isdigit() or int(stem) == os.getpid():
            continue
        if alive(int(stem)):
            pids.append(int(stem))
        else:
            try:
                (folder / name).unlink()  # stale: the watch was killed
            except OSError:
                pass
    return pids


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (someone else's counts)."""
    if sys.platform == "win32":  # os.kill would terminate it there
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # query limited info
        if not handle:
            return False
        code = ctypes.c_ulong()
        ctypes.windll.kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        ctypes.windll.kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


# -- operations --------------------------------------------------------------------------

@with_owner_rights
def record_op(root: Path, kind: str, *, record: int | None = None, fleet: str | None = None,
              client: str | None = None) -> None:
    """Remember an operation of this process for the watches (best effort: a watch that
    cannot tell who did it still takes it, as "another taosync")."""
    ops = [vars(op) for op in read_ops(root)]
    ops.append(vars(Op(kind, os.getpid(), record, fleet, client, os.urandom(8).hex(),
                       time.time())))
    try:
        _write(root / OPS_FILE, ops[-KEEP_OPS:])
    except OSError:
        pass


@with_owner_rights
def read_ops(root: Path) -> list[Op]:
    try:
        from taosync.bounded import read_regular

        data = json.loads(read_regular(root / OPS_FILE))
        return [Op(**entry) for entry in data if isinstance(entry, dict)]
    except (OSError, ValueError, TypeError):
        return []


def _write(path: Path, data) -> None:
    from taosync.engine.state import write_private

    write_private(path, json.dumps(data).encode("utf-8"))
