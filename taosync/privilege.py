"""Root on another user's home acts with that user's rights.

``sudo taosync apply --home /home/alice`` must not let alice aim a root write (or read)
at a file of root's through a symlink in her home (``~/.gemini/.env`` →
``/etc/environment``). So when taosync runs with euid 0 on a home owned by another uid,
every file operation of the System (engine/system.py: client files, taosync's state in
that home, backups, the journal, the lock) runs with the owner's file rights: on Linux
the calling thread's fsuid/fsgid and supplementary groups become the owner's
(``setfsuid(2)``: the kernel then drops CAP_DAC_OVERRIDE, CAP_FOWNER and the other file
capabilities from that thread until fsuid is 0 again), so the kernel itself refuses what
the owner could not do. The files the invoker names — fleet.yaml, its includes, a
``${file:}`` key — are read as :func:`rights_for` says: with root's rights when they lie
outside the home (the invoker's), with the owner's when they lie in it (the home's: a
link there must not turn root's read into a leak); the key commands of a fleet.yaml the
home holds run as the owner (:func:`command_identity`). Code that must not switch
(imports: taosync may be installed where only root reads) stays outside these blocks.

Before any write, :func:`refuse_foreign_link` also refuses, with one line naming the
link and where it leads, a target reached through a symlink that leaves the home or
leads to another owner's file (exit 2, nothing written): the same answer on systems
without ``setfsuid``, and a clear one where the kernel would only say "Permission denied".

Not root, or root on root's own home: nothing here does anything. Standard library
only; ctypes and threading are imported only when root acts for another owner.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from taosync.errors import BadInput


class Owner:
    """Whom root acts for: the home, its owner's uid, gid and groups, and whether this
    platform can switch a thread's file rights (Linux) or only refuse links."""

    def __init__(self, home: Path, uid: int, gid: int, groups: list[int], name: str):
        self.home, self.uid, self.gid, self.groups, self.name = home, uid, gid, groups, name
        self.real_home = Path(os.path.realpath(home))
        self.root_groups = os.getgroups()
        self.fleet_in_home = False  # a fleet file the home holds: its key commands are the home's
        self.switch = _Switch.make() if sys.platform.startswith("linux") else None

    def describe(self) -> str:
        return f"uid {self.uid}" + (f" ({self.name})" if self.name else "")


_owner: Owner | None = None


def act_for_home(home: Path) -> Owner | None:
    """Decide, for this run, whether root acts for ``home``'s owner (and for whom)."""
    global _owner
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        _owner = None
        return None
    try:
        st = os.stat(home)
    except OSError:
        st = None  # no home yet: root makes it, it is root's
    if st is None or st.st_uid == 0:
        _owner = None
        return None
    if _owner is not None and (_owner.home, _owner.uid) == (Path(home), st.st_uid):
        return _owner  # the same run asking again: keep its threads' switch state
    gid, groups, name = st.st_gid, [st.st_gid], ""
    try:
        import pwd

        entry = pwd.getpwuid(st.st_uid)
        name, gid = entry.pw_name, entry.pw_gid
        groups = os.getgrouplist(entry.pw_name, entry.pw_gid)
    except (KeyError, OSError, ImportError):
        pass
    _owner = Owner(Path(home), st.st_uid, gid, groups, name)
    return _owner


def owner() -> Owner | None:
    """The owner root acts for in this run, or None (not root, or root's own home)."""
    return _owner


def forget() -> None:
    """A new run in the same process decides again (tests run many in one process)."""
    global _owner
    _owner = None


class _Nothing:
    """The rights context when there is nothing to switch (the common case)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NOTHING = _Nothing()


def owner_rights():
    """A block run with the home owner's file rights (this thread only); nothing when
    root does not act for another owner, or inside :func:`invoker_rights`."""
    if _owner is None or _owner.switch is None:
        return _NOTHING
    return _Rights(_owner, _owner.switch, to_owner=True)


def invoker_rights():
    """A block run with the invoker's (root's) rights, even inside :func:`owner_rights`:
    the invoker's own files (see :func:`rights_for`)."""
    if _owner is None or _owner.switch is None:
        return _NOTHING
    return _Rights(_owner, _owner.switch, to_owner=False)


def in_home(path) -> bool:
    """``path`` (as named, before any link) lies in the home root acts for."""
    return _owner is not None and _inside(Path(os.path.abspath(path)),
                                          Path(os.path.abspath(_owner.home)))


def rights_for(path, fleet: bool = False):
    """The rights to read a file the invoker named (fleet.yaml, an include, a
    ``${file:}`` key) with: the owner's when it lies in the home — the home's file,
    reached through the home's links —, else the invoker's. ``fleet``: it is a fleet
    file; one in the home makes the fleet's key commands run as the owner too."""
    if _owner is None:
        return _NOTHING
    if in_home(path):
        _owner.fleet_in_home |= fleet
        if _owner.switch is None:
            return _NOTHING
        return _Rights(_owner, _owner.switch, to_owner=True, force=True)
    return invoker_rights()


def command_identity() -> dict:
    """Popen's ``user``/``group``/``extra_groups`` for a key command: the owner's when
    the fleet came from the home (root never runs a command the user wrote), else none."""
    if _owner is None or not _owner.fleet_in_home:
        return {}
    return {"user": _owner.uid, "group": _owner.gid, "extra_groups": _owner.groups}


def with_owner_rights(function):
    """``function`` run inside :func:`owner_rights` (taosync's own files in the home
    that a module reads or writes around the System: the watch's registrations)."""
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with owner_rights():
            return function(*args, **kwargs)
    return wrapper


class _Rights:
    """Switch this thread's file rights for a block, and back. Within an invoker block
    every owner block is a no-op (the System's reads of the key file stay root's)."""

    def __init__(self, who: Owner, switch: _Switch, to_owner: bool, force: bool = False):
        self.who, self.switch, self.to_owner, self.force = who, switch, to_owner, force

    def __enter__(self):
        state = self.switch.state()
        self.was, self.invoker = state.as_owner, state.invoker
        if self.to_owner:
            if self.force:  # the home's file named by the invoker: the owner's, always
                state.invoker = 0
            elif state.invoker:
                return None
            if not state.as_owner:
                self.switch.to_owner(self.who)
        else:
            state.invoker += 1
            if state.as_owner:
                self.switch.to_root(self.who)
        return None

    def __exit__(self, *exc):
        state = self.switch.state()
        state.invoker = self.invoker
        if state.as_owner != self.was:
            (self.switch.to_owner if self.was else self.switch.to_root)(self.who)
        return False


#: setgroups(2) by number, so it changes the calling thread only (glibc's wrapper, like
#: os.setgroups, changes every thread of the process)
_SETGROUPS = {"x86_64": 116, "amd64": 116, "aarch64": 159, "arm64": 159, "riscv64": 159,
              "loongarch64": 159, "ppc64le": 81, "ppc64": 81, "s390x": 206,
              "i386": 206, "i686": 206, "armv7l": 206, "armv6l": 206}


class _Switch:
    """setfsuid/setfsgid/setgroups for the calling thread (Linux, through ctypes)."""

    @classmethod
    def make(cls) -> "_Switch | None":
        try:
            import ctypes
            import platform
            import threading

            libc = ctypes.CDLL(None, use_errno=True)
            libc.setfsuid, libc.setfsgid  # noqa: B018 (present, or AttributeError)
        except (ImportError, OSError, AttributeError):
            return None
        return cls(ctypes, libc, _SETGROUPS.get(platform.machine()), threading.local())

    def __init__(self, ctypes, libc, setgroups_nr, local):
        self.ctypes, self.libc, self.setgroups_nr, self.local = ctypes, libc, setgroups_nr, local

    def state(self):
        local = self.local
        if not hasattr(local, "as_owner"):
            local.as_owner, local.invoker = False, 0
        return local

    def _groups(self, groups: list[int]) -> None:
        if self.setgroups_nr is None:  # no per-thread call known: the process's groups
            os.setgroups(groups)  # (root's own file access never depends on them)
            return
        array = (self.ctypes.c_uint32 * max(len(groups), 1))(*groups)
        if self.libc.syscall(self.setgroups_nr, len(groups), array) != 0:
            raise OSError(self.ctypes.get_errno(), "setgroups failed")

    def _fs(self, uid: int, gid: int) -> None:
        self.libc.setfsgid(gid)
        self.libc.setfsuid(uid)
        # both return the previous id whatever happens: ask again with an invalid id
        if self.libc.setfsuid(0xFFFFFFFF) != uid or self.libc.setfsgid(0xFFFFFFFF) != gid:
            raise PermissionError(f"could not take the file rights of uid {uid}")

    def to_owner(self, who: Owner) -> None:
        self._groups(who.groups)
        self._fs(who.uid, who.gid)
        self.state().as_owner = True

    def to_root(self, who: Owner) -> None:
        self._fs(0, os.getegid())
        self._groups(who.root_groups)
        self.state().as_owner = False


def refuse_foreign_link(path: Path) -> None:
    """As root on another user's home: refuse ``path`` when a symlink on the way (below
    the home) leads out of the home, or to a file of another owner than the home's —
    dangling links included. Raises BadInput (exit 2) with one line; nothing is written
    (callers check before the first write). Not root on another's home: nothing."""
    who = _owner
    if who is None:
        return
    with owner_rights():
        link = _first_link(Path(path), who)
        if link is None:
            return
        real = Path(os.path.realpath(path))
        if in_home(path) and not _inside(real, who.real_home):
            why = f"outside the home {who.home}"
        else:  # (a path a location variable puts outside the home: its owner decides)
            uid = _owner_of(real)
            if uid == who.uid:
                return
            why = (f"owned by uid {uid}, not by the home's owner ({who.describe()})"
                   if uid is not None else f"which {who.describe()} cannot reach")
    raise BadInput(
        f"{path}: refused as root: {link} is a symlink to {real}, {why}; taosync as root "
        f"never follows a user's links there. Remove the link, or run taosync as the "
        f"home's owner (sudo -u {who.name or '#' + str(who.uid)} taosync …); "
        "taosync changed nothing")


def _first_link(path: Path, who: Owner) -> Path | None:
    """The first component of ``path`` (below the home when it is in it) that is a
    symlink, or None."""
    path = Path(os.path.abspath(path))
    try:
        rest = path.relative_to(os.path.abspath(who.home))
        at = Path(os.path.abspath(who.home))
    except ValueError:
        rest, at = path.relative_to(path.anchor), Path(path.anchor)
    for part in rest.parts:
        at = at / part
        try:
            if os.path.islink(at):
                return at
            if not os.path.lexists(at):
                return None  # nothing further exists: no link further
        except OSError:
            return None
    return None


def _owner_of(real: Path) -> int | None:
    """The uid owning ``real``, or (absent) its nearest existing directory; None when
    the owner cannot even look."""
    at = real
    while True:
        try:
            return os.lstat(at).st_uid
        except FileNotFoundError:
            if at.parent == at:
                return None
            at = at.parent
        except OSError:
            return None


def _inside(path: Path, base: Path) -> bool:
    try:
        path.relative_to(base)
        return True
    except ValueError:
        return False
