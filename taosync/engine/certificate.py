"""The no-op certificate: what a full run read to decide, and the exact lines it printed.

A no-op ``apply``/``plan``/``status`` is most runs (shell start-up files, hooks, CI), and
the full path spends most of its time importing what it decides with. So after an
``apply``, the full path answers each command form the fast path may be asked
(:data:`FORMS`, each also with ``-q``) once more, in the same process, on a
:class:`~taosync.engine.system.RecordingSystem`: every read of the run — each file's
bytes, what is at a path, a stat, a symlink's target, each environment variable looked
at, the working directory, the output of a ``${cmd:…}`` key command, and how long what
was decided from the clock holds — is recorded as an input, and the lines the run
printed on stdout and stderr, in order, with its exit code, as its answer. Nothing is
written by those runs (a form that would write is not certified). The record of all of
it is one file, ``certificate.json`` in the state directory, written 0600.

The fast path (taosync/fastpath.py) re-checks every input and, when all hold, replays
the answer for the command line it was given; it knows no route, include, client or
key: a feature added later is covered as soon as it reads through the System. Every
value is stored as a keyed hash (HMAC-SHA256 with the state's ``hmac.key``): the key,
MCP secrets and environment values never appear in the certificate.

Reads that go around the System are caught while certifying (an audit hook): a file
opened, a directory listed or a process started other than through it — say, the
dotfiles guard asking git — leaves that form uncertified, so the full path answers it.

This module is the checking half and is loaded by the fast path: standard library
only, and only ``os``, ``stat`` and ``sys`` at import. JSON is read with the C scanner
json.loads uses and hashes made with the built-in SHA-256 (importing ``json`` and
``hashlib``/``hmac`` costs as much as starting Python); tests/test_fastpath.py keeps
them equal to the modules they stand for.
"""

import os
import stat
import sys
from types import ModuleType

#: bump when the file's shape or an input's spelling changes: an older one is a miss
FORMAT = 1
FILE = "certificate.json"
#: the command forms certified (each also with -q); the fast path answers nothing else
FORMS = (("apply",), ("apply", "--no-verify"), ("plan",), ("plan", "--check"), ("status",))

_json: ModuleType | None  # the C scanner json itself uses
try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None
try:  # the name of this version's module first: a failed import searches all of sys.path
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _sha256
    else:  # CPython's own module: typeshed has no stub for it
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - a build without them
    from hashlib import sha256 as _sha256


def form_key(words, quiet: bool) -> str:
    """``"plan --check -q"``: how an answer is filed (flags in FORMS order)."""
    return " ".join(words) + (" -q" if quiet else "")


# -- reading and hashing on the standard library's C parts ----------------------------


def read(path: str) -> bytes:
    """The file's bytes, read with os calls (half the cost of ``open(path, "rb").read()``
    for the small files read here), bounded as every read of a client file is: a FIFO
    or a device put in a file's place is an OSError, never a hang."""
    from taosync.bounded import read_regular

    return read_regular(path)


class _ScanContext:
    """What json.decoder.JSONDecoder hands the C scanner: json.loads' defaults, and the
    error class the scanner raises (it imports json.decoder for it when absent: a
    SystemError on Python 3.11 when json was never imported)."""

    object_hook = object_pairs_hook = None
    parse_float, parse_int, strict = float, int, True
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__
    memo: dict = {}


def loads(text: str):
    """json.loads(text); malformed text raises ValueError (never a SystemError)."""
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = _json.make_scanner(_ScanContext)(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    except SystemError:  # the scanner reaching for json.decoder's error: malformed
        raise ValueError("not JSON") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data")
    return value


class Hmac:
    """HMAC-SHA256 with one key (RFC 2104, as hmac.new(key, msg, sha256) computes it)."""

    def __init__(self, key: bytes):
        if len(key) > 64:
            key = _sha256(key).digest()
        key = key.ljust(64, b"\0")
        self.inner = _sha256(bytes(b ^ 0x36 for b in key))
        self.outer = _sha256(bytes(b ^ 0x5C for b in key))

    def __call__(self, data: bytes) -> str:
        """The keyed hash an input is stored as (32 hex digits)."""
        inner = self.inner.copy()
        inner.update(data)
        outer = self.outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()[:32]


# -- checking ---------------------------------------------------------------------------


def path_kind(path: str) -> str | None:
    """engine/system.py path_kind (tests keep the two equal)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _guarded(call) -> str:
    """``str(call())``, or how it failed ("!FileNotFoundError"), as RecordingSystem notes it."""
    try:
        return str(call())
    except OSError as exc:
        return "!" + type(exc).__name__


def realpath(path: str, memo: dict) -> str:
    """os.path.realpath(path), each directory resolved once per run (``memo``): the
    targets share most of their parents, and realpath lstats every component."""
    found = memo.get(path)
    if found is not None:
        return found
    parent, name = os.path.split(path)
    if not path.startswith("/") or name in ("", ".", "..") or parent == path:
        found = os.path.realpath(path)
    else:
        base = realpath(parent, memo) if parent != "/" else "/"
        joined = base.rstrip("/") + "/" + name
        try:
            link = stat.S_ISLNK(os.lstat(joined).st_mode)
        except OSError:
            link = False  # realpath keeps a component that is not there
        found = os.path.realpath(joined) if link else joined
    memo[path] = found
    return found


class DiskReads:
    """The reads an input is measured with, named as the System names them
    (engine/system.py ``read_bytes``, ``kind``, ``stat`` …), on plain os calls: the fast
    path's own (the System's module costs it pathlib and typing). The full path measures
    through the System in effect instead, as it read everything else."""

    def __init__(self) -> None:
        self._memo: dict = {}  # realpath's, for this check

    def read_bytes(self, path) -> bytes:
        return read(path)

    def kind(self, path) -> str | None:
        return path_kind(path)

    def stat(self, path) -> os.stat_result:
        return os.stat(path)

    def lstat(self, path) -> os.stat_result:
        return os.lstat(path)

    def realpath(self, path) -> str:
        return realpath(path, self._memo)

    def lexists(self, path) -> bool:
        return os.path.lexists(path)

    def cwd(self) -> str:
        return os.getcwd()


def measure(key: str, digest: Hmac, environ, home: str, reads=None) -> str | None:
    """What input ``key`` ("what:argument") is now, spelled as RecordingSystem records
    it, read through ``reads`` (a System, or the fast path's :class:`DiskReads`);
    ValueError for a kind this version does not know."""
    if reads is None:
        reads = DiskReads()
    what, _, arg = key.partition(":")
    if what == "file":
        try:
            return digest(reads.read_bytes(arg))
        except OSError as exc:
            return "!" + type(exc).__name__
    if what == "kind":
        return reads.kind(arg)
    if what == "env":
        value = environ.get(arg)
        return None if value is None else digest(value.encode("utf-8", "surrogateescape"))
    if what == "stat":
        return _guarded(lambda: reads.stat(arg).st_mode)
    if what == "lstat":
        return _guarded(lambda: reads.lstat(arg).st_mode)
    if what == "real":
        return _guarded(lambda: reads.realpath(arg))
    if what == "lexists":
        return "1" if reads.lexists(arg) else "0"
    if what == "cwd":
        return str(reads.cwd())
    if what == "ran":  # a ${cmd:…} reference: run again (fleet.secrets kills it on timeout)
        from pathlib import Path

        from taosync.fleet.secrets import SecretError, parse_reference, resolve

        try:
            value = resolve(parse_reference(arg), environ=environ, home=Path(home)).reveal()
        except SecretError:
            return None
        return digest(value.encode("utf-8", "surrogateescape"))
    raise ValueError(f"unknown input {what!r}")


def made_for(cert: dict, context: dict) -> bool:
    """``cert`` was written by this taosync, Python and platform for this command-line
    context (:func:`context_of`): the fast path's and the certifier's first check."""
    from taosync import __version__

    return (cert["format"] == FORMAT and cert["taosync"] == __version__
            and cert["python"] == sys.version and cert["platform"] == sys.platform
            and cert["context"] == context)


def holds(cert: dict, digest: Hmac, environ, home: str, reads=None) -> bool:
    """Every input of ``cert`` is as it was, and what was decided from the clock holds;
    ``reads``: what to read the inputs through (the full path's System; the fast path's
    :class:`DiskReads` when None)."""
    until = cert["until"]
    if until is not None:
        import time

        if time.time() >= until:
            return False
    if reads is None:
        reads = DiskReads()
    ran_op = [key[len("ran:"):] for key in cert["inputs"] if key.startswith("ran:${op://")]
    if len(ran_op) > 1:  # every 1Password reference in one call, as the full path reads them
        from taosync.fleet import stores
        from taosync.fleet.secrets import CMD_TIMEOUT, parse_reference

        stores.prefetch([parse_reference(arg) for arg in ran_op], environ, CMD_TIMEOUT)
    return all(measure(key, digest, environ, home, reads) == was
               for key, was in cert["inputs"].items())


def answer(cert: dict, key: str, tty: bool):
    """(exit code, [(stream 1|2, text), …]) filed for form ``key``, or None."""
    entry = cert["answers"].get(key)
    if entry is None:
        return None
    if tty and entry.get("tty", True) is not True:
        entry = entry["tty"]  # the run asked whether stdout is a terminal: its own answer
    return entry["rc"], entry["chunks"]


# -- certifying (the full path, after an apply) -----------------------------------------


def certify(settings, run) -> bool:
    """Answer every form of :data:`FORMS` (also with ``-q``) once more, recorded, and
    save the certificate of those that wrote nothing. ``run(argv) -> exit code`` is the
    CLI itself (cli.run); ``settings``: the apply's, whose ``--home``/``-c`` the forms
    repeat. Returns whether a certificate was saved. Never raises for a form that fails:
    that form is left to the full path."""
    from taosync import __version__
    from taosync.engine.state import StateStore, write_private
    from taosync.engine.system import RecordingSystem

    if getattr(settings, "system_scope", False):
        return False  # --system always takes the full path (fastpath.py knows no scope)
    store = StateStore(settings.state_dir())
    key = store.hmac_key(create=False)
    if store.hmac_is_ephemeral:
        return False  # nothing applied here yet: no hash to keep
    path = store.root / FILE
    digest = Hmac(key)
    context = context_of(settings.home, settings.config, str(settings.home_dir))
    if _still_holds(path, context, digest, settings):
        return True  # a no-op apply: the answers filed are still the full path's
    recorder = RecordingSystem(digest)
    globals_ = [*(("--home", str(settings.home)) if settings.home is not None else ()),
                *(("-c", str(settings.config)) if settings.config is not None else ())]
    answers = {}
    _install_audit_hook()
    for words in FORMS:
        for quiet in (False, True):
            argv = [*globals_, *words, *(("-q",) if quiet else ())]
            plain = _recorded(run, argv, recorder, tty=False)
            if plain is None:
                continue
            entry, asked = plain
            if asked:
                on_tty = _recorded(run, argv, recorder, tty=True)
                if on_tty is None:
                    continue
                entry["tty"] = on_tty[0]
            answers[form_key(words, quiet)] = entry
    if not answers:
        forget(store)
        return False
    try:
        import json

        cert = {"format": FORMAT, "taosync": __version__, "python": sys.version,
                "platform": sys.platform, "context": context, "until": recorder.until,
                "inputs": dict(sorted(recorder.inputs.items())), "answers": answers}
        write_private(path, json.dumps(cert, ensure_ascii=False, separators=(",", ":"))
                      .encode("utf-8"))
    except OSError:
        return False  # only a shortcut: the next run takes the full path
    return True


def _still_holds(path, context: dict, digest: Hmac, settings) -> bool:
    """The certificate at ``path`` is for this context, this taosync, and holds — read,
    with its inputs, through the System in effect, as the runs it certified read them."""
    from taosync.engine.system import current

    system = current()
    try:
        cert = loads(system.read_bytes(path).decode("utf-8"))
        return (made_for(cert, context) and len(cert["answers"]) == 2 * len(FORMS)
                and holds(cert, digest, system.environ(), str(settings.home_dir), system))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def forget(store) -> None:
    """Drop the certificate (through the System; best effort): no run vouches for it."""
    path = store.root / FILE
    try:
        if store.system.exists(path):
            store.system.remove(path)
    except OSError:
        pass


def context_of(home, config, made_for: str) -> dict:
    """What the command line said, as the certificate files it: ``--home`` (absolute) and
    ``-c`` as the settings hold them (None when not given), and the home the run was for
    (``$HOME`` without --home): a run with another home sharing the state directory
    (XDG_STATE_HOME) never replays this one's answer (engine/owner.py)."""
    return {"home": None if home is None else str(home),
            "config": None if config is None else str(config), "for": made_for}


class _Capture:
    """stdout or stderr of a certified run: every write kept in order, with its stream;
    ``isatty`` answers ``tty`` and says it was asked."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, stream: int, chunks: list, tty: bool, asked: list):
        self.stream, self.chunks, self.tty, self.asked = stream, chunks, tty, asked

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # a text stream (click probes with b"")
            raise TypeError("write() argument must be str")
        if not text:
            return 0
        if self.chunks and self.chunks[-1][0] == self.stream:
            self.chunks[-1][1] += text
        else:
            self.chunks.append([self.stream, text])
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        self.asked.append(self.stream)
        return self.tty

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False


class _Stdin:
    """stdin of a certified run: empty, never a terminal (and asking is noted)."""

    encoding = "utf-8"

    def __init__(self, asked: list):
        self.asked = asked

    def isatty(self) -> bool:
        self.asked.append(0)
        return False

    def read(self, *args) -> str:
        return ""

    def readline(self, *args) -> str:
        return ""

    def fileno(self) -> int:
        raise OSError("a certified run reads no input")


def _recorded(run, argv: list[str], recorder, *, tty: bool):
    """({"rc", "chunks"}, whether stdout's terminal was asked) of one run of ``argv``
    on ``recorder``, or None when it cannot be certified."""
    from taosync.engine.system import WrittenOnReadOnly, using

    chunks: list = []
    asked: list = []
    unsure_before = len(recorder.unsure)
    recorder.clock_open = False  # an earlier run's unbounded clock read is its own
    saved = sys.stdin, sys.stdout, sys.stderr, os.environ
    sys.stdin = _Stdin(asked)  # never a prompt: a run that asks is not certified
    sys.stdout = _Capture(1, chunks, tty, asked)
    sys.stderr = _Capture(2, chunks, tty, asked)
    os.environ = recorder.environ()
    _watching.append(recorder)
    try:
        with using(recorder):
            rc = run(argv)
    except (WrittenOnReadOnly, Exception):
        return None  # it would write, or failed: the full path answers it
    finally:
        _watching.pop()
        sys.stdin, sys.stdout, sys.stderr, os.environ = saved
    if len(recorder.unsure) > unsure_before or recorder.clock_open or {0, 2} & set(asked):
        return None  # it asked whether stdin or stderr is a terminal: not certified
    return {"rc": rc, "chunks": chunks}, 1 in asked


#: the recorders of the certified runs in progress (the audit hook reads the last)
_watching: list = []


def certifying() -> bool:
    """Inside a certified run (which never certifies again)."""
    return bool(_watching)
_hooked = False
#: events that read or reach outside the System: a certified run that raises one is unsure
_OUTSIDE = {"open", "os.listdir", "os.scandir", "subprocess.Popen", "os.system",
            "os.exec", "os.posix_spawn", "os.spawn", "socket.connect", "shutil.copyfile"}


def _install_audit_hook() -> None:
    """Once per process: while a certified run is in progress, an event of
    :data:`_OUTSIDE` that the run's RecordingSystem did not cause makes it unsure —
    but for Python's own files (imports, the standard library) and taosync's."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    code = [p for p in sys.path if p and ("-packages" in p or p.endswith(".zip"))]
    roots = tuple({os.path.join(os.path.realpath(p), "") for p in
                   (sys.prefix, sys.base_prefix, sys.exec_prefix, *code,
                    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))})

    def hook(event: str, args: tuple) -> None:
        if not _watching or event not in _OUTSIDE:
            return
        recorder = _watching[-1]
        if recorder.reading:
            return
        target = args[0] if args else None
        if event in ("open", "os.listdir", "os.scandir") and isinstance(target, (str, bytes)):
            text = os.fsdecode(target)
            if event == "open" and _writing(args):
                return  # a write is the System's to refuse, not a read
            real = os.path.join(os.path.realpath(text), "")
            if real.startswith(roots) or text in ("/dev/null", "/dev/tty"):
                return
        recorder.unsure.append(f"{event} {target!r} outside the System")

    sys.addaudithook(hook)


def _writing(args: tuple) -> bool:
    """An ``open`` event (io.open: path, mode, flags; os.open: path, None, flags) that
    opens for writing."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR))
