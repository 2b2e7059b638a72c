"""One System for every file operation taosync does, on targets and on its own state.

The shape of chezmoi's System: :class:`RealSystem` does the operations,
:class:`DryRunSystem` reads through and only records what it would have written (so
``apply --dry-run`` runs the real commit path), :class:`ErrorOnWriteSystem` refuses any
write (tests use it to prove a command wrote nothing), and
:class:`~taosync.engine.certificate.RecordingSystem` refuses writes and records every
read — files, what is at a path, the environment, the working directory, the clock, a
key command's output — as an input of the answer it certifies (the no-op fast path
replays that answer while every input holds). So everything a command decides from
goes through here: a read that goes around it is a read the certificate would miss.
The System in effect is :func:`current`; :func:`using` installs another for a block
(the dry run, a test, a certified run). Standard library only.
"""

from __future__ import annotations

import os
import stat as stat_mod
import sys
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, TypeVar

from taosync.bounded import CLIENT_FILE_MAX, read_regular
from taosync.errors import WriteFailed
from taosync.privilege import invoker_rights, owner_rights

if TYPE_CHECKING:
    #: the environment a System shows: ``os.environ`` itself, or a recording copy (a
    #: dict); either is read as a mapping and ``copy()``-ed to keep
    Environ = dict[str, str] | os._Environ[str]

T = TypeVar("T")

#: directories taosync creates for client files (they may hold the key)
CLIENT_DIR_MODE = 0o700


class LockBusy(WriteFailed):
    """Another taosync holds the lock (distinct from an I/O error: worth retrying)."""


class System(Protocol):
    """Every file operation taosync does, and every other thing a run reads. Reads:
    ``read_bytes``, ``stat`` (callers use its ``st_mode``), ``lstat``, ``realpath``,
    ``exists``, ``is_dir``, ``kind``, ``lexists``, ``cwd``, ``environ``, ``now`` (with
    ``holds_until``: when what was decided from the clock may change) and ``ran`` (the
    output of a command run for a value, such as ``${cmd:…}``). Writes: the rest."""

    def read_bytes(self, path: Path, limit: int = ...) -> bytes: ...
    def stat(self, path: Path) -> os.stat_result: ...
    def lstat(self, path: Path) -> os.stat_result: ...
    def realpath(self, path: Path) -> Path: ...
    def exists(self, path: Path) -> bool: ...
    def is_dir(self, path: Path) -> bool: ...
    def kind(self, path: Path) -> str | None: ...
    def lexists(self, path: Path) -> bool: ...
    def cwd(self) -> Path: ...
    def environ(self) -> Environ: ...
    def now(self) -> float: ...
    def holds_until(self, when: float) -> None: ...
    def ran(self, what: str, output: str) -> None: ...
    def resolving(self) -> AbstractContextManager[None]: ...
    def write_atomic(self, path: Path, data: bytes, mode: int,
                     before_replace: Callable[[], None] | None = None) -> None: ...
    def write(self, path: Path, data: bytes, mode: int) -> None: ...
    def guard(self, path: Path, check: Callable[[], None]) -> None: ...
    def remove(self, path: Path) -> None: ...
    def remove_tree(self, path: Path) -> None: ...
    def rename(self, src: Path, dst: Path) -> None: ...
    def make_dirs(self, path: Path, mode: int) -> None: ...
    def make_private_dir(self, path: Path) -> None: ...
    def append(self, path: Path, data: bytes, mode: int) -> None: ...
    def lock(self, path: Path, timeout: float) -> AbstractContextManager[None]: ...


class _Reads:
    """The reads every System does on the real disk, and the guard of a target write.
    Root on another user's home does each with the owner's rights (taosync/privilege.py)."""

    def __init__(self):
        self.guarded: dict[Path, Callable[[], None]] = {}

    def guard(self, path: Path, check: Callable[[], None]) -> None:
        """Write (or remove) ``path`` only after ``check()`` passed last thing before
        (checked once, then dropped: putting a file back after a failure is unguarded)."""
        self.guarded[Path(path)] = check

    def _check_for(self, path: Path) -> Callable[[], None]:
        return self.guarded.pop(Path(path), _nothing)

    def read_bytes(self, path: Path, limit: int = CLIENT_FILE_MAX) -> bytes:
        """A regular file's bytes, at most ``limit`` (taosync/bounded.py: a FIFO, a
        device or a huge file is an OSError saying so, never a hang)."""
        with owner_rights():
            return read_regular(path, limit)

    def stat(self, path: Path) -> os.stat_result:
        with owner_rights():
            return os.stat(path)

    def lstat(self, path: Path) -> os.stat_result:
        with owner_rights():
            return os.lstat(path)

    def realpath(self, path: Path) -> Path:
        with owner_rights():
            return Path(os.path.realpath(path))

    def exists(self, path: Path) -> bool:
        with owner_rights():
            return os.path.exists(path)

    def is_dir(self, path: Path) -> bool:
        with owner_rights():
            return os.path.isdir(path)

    def kind(self, path: Path) -> str | None:
        return path_kind(path)

    def lexists(self, path: Path) -> bool:
        with owner_rights():
            return os.path.lexists(path)

    def cwd(self) -> Path:
        return Path.cwd()

    def environ(self) -> Environ:
        return os.environ

    def now(self) -> float:
        return time.time()

    def holds_until(self, when: float) -> None:
        """What was just decided from :meth:`now` stays so until ``when`` (epoch s)."""

    def ran(self, what: str, output: str) -> None:
        """``what`` (a ``${cmd:…}`` reference) was run and printed ``output``."""

    @contextmanager
    def resolving(self) -> Iterator[None]:
        """A key reference is resolved by fleet.secrets (below the engine) inside this
        block: its caller records what it read or ran (engine/cache.py resolve). It is
        the invoker's: read (or run) with the invoker's rights."""
        with invoker_rights():
            yield


def path_kind(path) -> str | None:
    """What is at ``path``: "dir", "file", "other", or None (nothing). A client's target
    can hang on whether a file exists (opencode and Kilo write into the file they read
    last), so files count as much as directories."""
    try:
        with owner_rights():
            mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return "dir" if stat_mod.S_ISDIR(mode) else "file" if stat_mod.S_ISREG(mode) else "other"


def environ() -> Environ:
    """The environment as the System in effect sees it (a certified run records reads)."""
    return current().environ()


class RealSystem(_Reads):
    """The disk. Writes are atomic (temp file beside the target, fsync, chown, chmod,
    rename, fsync dir). A guarded target (see :meth:`guard`) is checked again last thing
    before it is replaced, so a program that rewrote it meanwhile is never silently
    overwritten. A hard-linked target is written in place, so every link keeps seeing
    one file."""

    def write(self, path: Path, data: bytes, mode: int) -> None:
        """A client file: its missing directories 0700, guarded, hard links kept."""
        check = self._check_for(path)  # taken first: a failure below never leaves it set
        with owner_rights():
            self.make_dirs(path.parent, CLIENT_DIR_MODE)
            try:
                links = os.stat(path).st_nlink
            except FileNotFoundError:
                links = 1
            if links > 1:
                write_in_place(path, data, mode, check)
            else:
                self.write_atomic(path, data, mode, before_replace=check)

    def write_atomic(self, path: Path, data: bytes, mode: int,
                     before_replace: Callable[[], None] | None = None) -> None:
        with owner_rights():
            atomic_write(path, data, mode, before_replace)

    def remove(self, path: Path) -> None:
        check = self._check_for(path)
        with owner_rights():
            check()
            try:
                os.unlink(path)
            except FileNotFoundError:
                return
            fsync_dir(path.parent)

    def remove_tree(self, path: Path) -> None:
        import shutil  # only when something is pruned or discarded

        with owner_rights():
            shutil.rmtree(path, ignore_errors=True)

    def rename(self, src: Path, dst: Path) -> None:
        with owner_rights():
            os.replace(src, dst)

    def make_dirs(self, path: Path, mode: int) -> None:
        with owner_rights():
            make_dirs(path, mode)

    def make_private_dir(self, path: Path) -> None:
        with owner_rights():
            make_private_dir(path)

    def append(self, path: Path, data: bytes, mode: int) -> None:
        """One write, so concurrent appenders never interleave lines."""
        with owner_rights():
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    @contextmanager
    def lock(self, path: Path, timeout: float) -> Iterator[None]:
        """An exclusive lock on ``path`` (created 0600, its directory's owner kept). The
        holder writes its pid and command into the file, so a second taosync waiting for
        it says who it waits for (after :data:`LOCK_NOTICE_AFTER` seconds, once)."""
        with owner_rights():
            owner = owner_to_keep(path)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            with owner_rights():
                give_owner(path, owner)  # root in a user's home: still the user's
            start = time.monotonic()
            deadline, told = start + timeout, False
            while True:
                try:
                    _lock(fd)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    if now > deadline:
                        raise LockBusy(f"another taosync ({lock_holder(path)}) holds {path} "
                                       f"(waited {timeout:g} s); nothing was written") from None
                    if not told and now - start >= LOCK_NOTICE_AFTER:
                        told = True
                        notice(f"waiting for the lock held by {lock_holder(path)} "
                               f"(up to {timeout:g} s)")
                    time.sleep(0.02)
            _write_holder(fd)
            yield
        finally:
            os.close(fd)  # closing releases the lock


#: seconds of waiting for the lock before saying so
LOCK_NOTICE_AFTER = 0.5


def notice(text: str) -> None:
    """A progress line on stderr (the engine sits below ui; nothing secret is said)."""
    import sys

    try:
        sys.stderr.write(f"taosync: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _write_holder(fd: int) -> None:
    """Record who holds the lock: ``pid command`` (best effort)."""
    command = ""
    try:
        import click  # already imported by the CLI; absent context: no command name

        ctx = click.get_current_context(silent=True)
        command = ctx.info_name if ctx is not None and ctx.info_name else ""
    except ImportError:
        pass
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}".strip().encode() + b"\n", 0)
    except (OSError, AttributeError):
        pass


def lock_holder(path: Path) -> str:
    """``pid 1234 (watch)`` from the lock file, or ``unknown pid`` when it says nothing."""
    try:
        with owner_rights():
            words = Path(path).read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        words = []
    if not words or not words[0].isdigit():
        return "an unknown pid"
    return f"pid {words[0]}" + (f" ({' '.join(words[1:])})" if len(words) > 1 else "")


class DryRunSystem(_Reads):
    """Reads the disk as it is; every write is only recorded in :attr:`would`, as
    (operation, path). A guard is still checked, as a real write would."""

    def __init__(self):
        super().__init__()
        self.would: list[tuple[str, Path]] = []

    def _record(self, what: str, path: Path) -> None:
        self.would.append((what, Path(path)))

    def write(self, path: Path, data: bytes, mode: int) -> None:
        self._check_for(path)()
        self._record("write", path)

    def write_atomic(self, path, data, mode, before_replace=None) -> None:
        self._record("write", path)

    def remove(self, path: Path) -> None:
        self._check_for(path)()
        if self.exists(path):
            self._record("remove", path)

    def remove_tree(self, path: Path) -> None:
        if self.exists(path):
            self._record("remove", path)

    def rename(self, src: Path, dst: Path) -> None:
        self._record("rename", src)

    def make_dirs(self, path: Path, mode: int) -> None:
        if not self.exists(path):
            self._record("mkdir", path)

    def make_private_dir(self, path: Path) -> None:
        self.make_dirs(path, 0o700)

    def append(self, path: Path, data: bytes, mode: int) -> None:
        self._record("append", path)

    @contextmanager
    def lock(self, path: Path, timeout: float) -> Iterator[None]:
        yield  # nothing is written, so nothing needs guarding from another apply


class ErrorOnWriteSystem(DryRunSystem):
    """Raises on any write (but to the paths in ``allow``, which go to the disk): run a
    command on it to prove the command writes nothing."""

    def __init__(self, allow: tuple[Path, ...] = ()):
        super().__init__()
        self.allow = {Path(p) for p in allow}
        self._real = RealSystem()

    def _record(self, what: str, path: Path) -> None:
        raise WrittenOnReadOnly(f"{what} {path} on a read-only run")

    def append(self, path: Path, data: bytes, mode: int) -> None:
        if Path(path) in self.allow:
            return self._real.append(path, data, mode)
        self._record("append", path)

    def make_private_dir(self, path: Path) -> None:
        if any(p.parent == Path(path) for p in self.allow):
            return self._real.make_private_dir(path)
        super().make_private_dir(path)


class RecordingSystem(ErrorOnWriteSystem):
    """Reads the disk, writes nothing (any write raises, as :class:`ErrorOnWriteSystem`),
    and records every read as an input of the answer being certified
    (engine/certificate.py): ``inputs`` maps ``"what:argument"`` to what was found,
    spelled as :func:`taosync.engine.certificate.measure` spells it — contents and
    environment values only as keyed hashes (``digest``), never as they are.

    ``unsure`` collects the reasons a run cannot be certified (a value that changed
    while the run read it, a clock read nothing bounded)."""

    def __init__(self, digest: Callable[[bytes], str]):
        super().__init__()
        self.digest = digest
        self.inputs: dict[str, str | None] = {}
        self.until: float | None = None
        self.unsure: list[str] = []
        self.clock_open = False  # now() was read and no holds_until() followed yet
        self.reading = 0  # inside one of our own reads (the audit hook lets them pass)
        self._environ = RecordingEnviron(os.environ, self)
        #: :func:`shared` results of this certification, by what decides them
        self.memo: dict = {}
        self._read: dict[tuple[str, int], bytes] = {}  # (path, limit) → the bytes read

    def note(self, key: str, value: str | None) -> None:
        if self.inputs.setdefault(key, value) != value:
            self.unsure.append(f"{key} changed while it was read")

    def note_env(self, name: str, value: str | None) -> None:
        self.note(f"env:{name}", None if value is None else self.digest(
            value.encode("utf-8", "surrogateescape")))

    def _reading(self, what: str, path, call):
        self.reading += 1
        try:
            with owner_rights():
                return call()
        except OSError as exc:
            self.note(f"{what}:{path}", "!" + type(exc).__name__)
            raise
        finally:
            self.reading -= 1

    def read_bytes(self, path: Path, limit: int = CLIENT_FILE_MAX) -> bytes:
        # each file is read (and hashed) once per certification: every form is answered
        # from the bytes its input records, which the fast path re-measures before any
        # answer is replayed (state.json alone is read some 30 times otherwise)
        key = (str(path), limit)
        data = self._read.get(key)
        if data is None:
            data = self._reading("file", path,
                                 lambda: super(RecordingSystem, self).read_bytes(path, limit))
            self.note(f"file:{path}", self.digest(data))
            self._read[key] = data
        return data

    def stat(self, path: Path) -> os.stat_result:
        st = self._reading("stat", path, lambda: os.stat(path))
        self.note(f"stat:{path}", str(st.st_mode))
        return st

    def lstat(self, path: Path) -> os.stat_result:
        st = self._reading("lstat", path, lambda: os.lstat(path))
        self.note(f"lstat:{path}", str(st.st_mode))
        return st

    def realpath(self, path: Path) -> Path:
        real = self._reading("real", path, lambda: os.path.realpath(path))
        self.note(f"real:{path}", real)
        return Path(real)

    def kind(self, path: Path) -> str | None:
        found = self._reading("kind", path, lambda: path_kind(path))
        self.note(f"kind:{path}", found)
        return found

    def exists(self, path: Path) -> bool:
        return self.kind(path) is not None

    def is_dir(self, path: Path) -> bool:
        return self.kind(path) == "dir"

    def lexists(self, path: Path) -> bool:
        found = self._reading("lexists", path, lambda: os.path.lexists(path))
        self.note(f"lexists:{path}", "1" if found else "0")
        return found

    def cwd(self) -> Path:
        here = os.getcwd()
        self.note("cwd:", here)
        return Path(here)

    def environ(self) -> Environ:
        return self._environ

    def now(self) -> float:
        self.clock_open = True
        return time.time()

    def holds_until(self, when: float) -> None:
        self.clock_open = False
        if when != float("inf"):
            self.until = when if self.until is None else min(self.until, when)

    def ran(self, what: str, output: str) -> None:
        self.note(f"ran:{what}", self.digest(output.encode("utf-8", "surrogateescape")))

    @contextmanager
    def resolving(self) -> Iterator[None]:
        self.reading += 1
        try:
            with invoker_rights():
                yield
        finally:
            self.reading -= 1


class RecordingEnviron(dict):
    """The environment of a certified run: a copy of ``os.environ`` that records each
    variable looked up (``[]``, ``get``, ``in``), set or not. Listing or copying it with
    ``dict()`` records nothing: only a variable looked at is an input; ``copy()`` gives
    another recording copy (a ClientEnv's environment)."""

    def __init__(self, source, recorder: RecordingSystem):
        super().__init__(source)
        self._recorder = recorder

    def _seen(self, name) -> None:
        if isinstance(name, str):
            self._recorder.note_env(name, dict.get(self, name))

    def __getitem__(self, name):
        self._seen(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self._seen(name)
        return super().get(name, default)

    def __contains__(self, name) -> bool:
        self._seen(name)
        return super().__contains__(name)

    def copy(self) -> "RecordingEnviron":
        return RecordingEnviron(self, self._recorder)


def _nothing() -> None:
    """The guard of a write nothing guards."""


class WrittenOnReadOnly(AssertionError):
    """A write reached an :class:`ErrorOnWriteSystem` (a bug, not a user's error)."""


def shared(key: tuple, compute: Callable[[], T]) -> T:
    """``compute()``, or — on a :class:`RecordingSystem` — the result an earlier certified
    run of the same certification computed for the same ``key``.

    The certified forms (engine/certificate.py) answer a dozen command lines against one
    unchanged world: every read of the first run that computed a result is an input of
    the certificate already (one record for all the forms), and the fast path replays no
    answer unless every input still holds. So a result may be reused only within one
    certification (the memo lives on its RecordingSystem) and only for the same ``key``,
    which names everything else the computation depends on — the arguments the forms
    differ in. A computation that failed, read around the System (``unsure``), read the
    clock without bounding it or printed anything (each form's answer is its own lines)
    is never reused: each form meets that on its own. The result is shared as it is:
    callers must not change it (or must copy it)."""
    system = current()
    if not isinstance(system, RecordingSystem):
        return compute()
    memo = system.memo
    if key in memo:
        return memo[key]
    unsure, printed = len(system.unsure), _printed()
    result = compute()
    if len(system.unsure) == unsure and not system.clock_open and _printed() == printed:
        memo[key] = result
    return result


def _printed() -> tuple:
    """How much a certified run has printed so far (its captured stdout and stderr share
    one list of chunks, engine/certificate.py): any line printed changes it."""
    chunks = getattr(sys.stdout, "chunks", None)
    if not isinstance(chunks, list):
        return (None,)
    return len(chunks), len(chunks[-1][1]) if chunks else 0


_installed: System | None = None
_real = RealSystem()


def current() -> System:
    """The System in effect: the one :func:`using` installed, else the disk."""
    return _installed if _installed is not None else _real


@contextmanager
def using(system: System) -> Iterator[System]:
    """Run a block on ``system`` (every thread sees it: a verify's probes run in some)."""
    global _installed
    before, _installed = _installed, system
    try:
        yield system
    finally:
        _installed = before


def atomic_write(path: Path, data: bytes, mode: int, before_replace=None) -> None:
    """Temp file beside ``path``, fsync, chown, chmod, rename, fsync the directory: a
    reader (or a crash) sees the old bytes or the new ones, never a mix.

    The mode is set explicitly (the umask never widens it). The owner is kept: an
    existing file keeps its owner and group, a new one written by root takes its
    directory's (``sudo taosync`` must not leave a user's config ``root:root``).
    ``before_replace()`` runs last before the rename, to refuse when the target moved.
    """
    owner = owner_to_keep(path)
    tmp = path.with_name(f".{path.name}.taosync-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        give_owner(tmp, owner)
        os.chmod(tmp, mode)  # after chown, which may clear mode bits
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def write_in_place(path: Path, data: bytes, mode: int, before_write=None) -> None:
    """Truncate and rewrite a hard-linked file, so its other links see the new text too
    (a rename would split them). Not atomic: the apply's backup and journal cover it."""
    if before_write is not None:
        before_write()
    old_mode = stat_mod.S_IMODE(os.stat(path).st_mode)
    if not old_mode & 0o200:  # read-only and --force: write, then read-only again
        os.chmod(path, old_mode | 0o200)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0))
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.chmod(path, mode)


def make_private_dir(path: Path) -> None:
    """``path`` and every parent this call creates, 0700 whatever the umask (see
    :func:`make_dirs`); an existing ``path`` is tightened to 0700."""
    make_dirs(path, 0o700)
    if os.stat(path).st_mode & 0o777 != 0o700:
        try:
            os.chmod(path, 0o700)
        except PermissionError:  # another user's directory: its writes succeed or fail alone
            pass


def make_dirs(path: Path, mode: int) -> None:
    """Create ``path`` and its missing parents, each with exactly ``mode`` (mkdir's mode
    is masked by the umask and ignored for parents) and, under root, its parent's owner."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for directory in reversed(missing):
        owner = owner_to_keep(directory)  # its parent's, while it does not exist
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by someone else: theirs, leave it
            continue
        give_owner(directory, owner)
        os.chmod(directory, mode)


def owner_to_keep(path: Path) -> tuple[int, int] | None:
    """(uid, gid) ``path`` must end with: its own if it exists; its directory's for a
    new one written by root; None when nothing needs changing."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not _is_root():
            return None
        try:
            st = os.stat(path.parent)
        except OSError:
            return None
    except OSError:
        return None
    return st.st_uid, st.st_gid


def give_owner(path: Path, owner: tuple[int, int] | None) -> None:
    """chown ``path`` to ``owner``; a user who may not (not root, not in that group)
    keeps what the system gave the file."""
    if owner is None or not hasattr(os, "chown"):
        return
    st = os.stat(path, follow_symlinks=False)
    if (st.st_uid, st.st_gid) == owner:
        return
    try:
        os.chown(path, *owner, follow_symlinks=False)
    except PermissionError:
        try:
            os.chown(path, -1, owner[1], follow_symlinks=False)
        except PermissionError:
            pass


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename in it survives a power cut; best effort (some file
    systems and Windows cannot)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _lock(fd: int) -> None:
    if sys.platform == "win32":  # no fcntl
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            raise BlockingIOError from None
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
