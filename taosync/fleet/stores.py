"""Password stores a key reference can name: the OS keyring, 1Password and ``pass``.

``${keyring:SERVICE/USER}`` reads the ``keyring`` library (macOS Keychain, Secret Service,
Windows Credential Manager; the optional extra ``taosync[keyring]``), imported only when
such a reference is read. ``${op://VAULT/ITEM/FIELD}`` reads 1Password: through the
``onepassword`` SDK when ``OP_SERVICE_ACCOUNT_TOKEN`` is set and the SDK is installed (CI),
else through the ``op`` CLI (the desktop app's unlock). ``${pass:PATH}`` is the first
line of ``pass show PATH``.

A password store asks the user to unlock it, so each distinct reference is read once per
run (:data:`_READ`, forgotten when the run ends: :func:`forget`), and every 1Password
reference of a run is read in ONE call (:func:`prefetch`): ``op read`` takes one
reference per call, each its own unlock prompt; ``op inject`` fills a whole template in
one, so taosync hands it every reference between boundary lines it makes up. Values live
only in memory, as :class:`~taosync.fleet.secrets.Secret`; state and the render cache keep
keyed hashes, as of every key. A store's own message is shown shortened, with any
token-looking value in it hidden. :func:`run_bounded` runs a store's program — and a
``${cmd:…}`` key command — in its own session, bounded in time and output.

:func:`fetch_command` is the other half of ``secrets: reference``: the shell command a
client that runs one for its key (Claude Code's ``apiKeyHelper``, Pi's ``!command``)
runs to read the same store itself, so the key is never written; :func:`command_reference`
reads such a command back as its reference, so verify and status resolve it through the
run's one read instead of running the store again.

Standard library only at import (the fast path may resolve a reference).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Iterable, Mapping

#: the reference kinds this module reads
KINDS = ("keyring", "op", "pass")
#: what each store needs, and the line that installs it
INSTALL = {
    "keyring": "pip install 'taosync[keyring]' (the `keyring` library; on Linux a Secret "
               "Service such as GNOME Keyring or KWallet)",
    "op": "the 1Password CLI `op`: https://developer.1password.com/docs/cli/get-started/ "
          "(then 1Password → Settings → Developer → Integrate with 1Password CLI); in CI "
          "`pip install 'taosync[1password]'` and OP_SERVICE_ACCOUNT_TOKEN",
    "pass": "apt install pass gnupg (macOS: brew install pass gnupg), then `pass init GPG-ID`",
}
#: what a token-looking value in a store's message is shown as (the Redactor's
#: ``SENSITIVE``; this module sits below fleet/secrets.py)
HIDDEN = "(sensitive value)"
#: how long a store may take to answer: an unlock prompt waits for a person
STORE_TIMEOUT = 60.0

#: (kind, arg) → the value read this run (fleet/secrets.py makes it a Secret)
_READ: dict[tuple[str, str], str] = {}
#: (kind, arg) → why this run's read failed (a failed batch is not tried again)
_FAILED: dict[tuple[str, str], str] = {}
#: how many runs are inside one another (the certificate's runs are inside an apply's)
_DEPTH = [0]


class StoreError(Exception):
    """A store could not give the value; the message never holds it."""


class Overrun(Exception):
    """A key command or a store's program ran too long or printed too much."""


def enter() -> None:
    _DEPTH[0] += 1


def leave() -> None:
    """The end of a run: what it read is forgotten when it was the outermost one."""
    _DEPTH[0] -= 1
    if _DEPTH[0] <= 0:
        _DEPTH[0] = 0
        forget()


def forget() -> None:
    _READ.clear()
    _FAILED.clear()


def read(ref, environ: Mapping[str, str], timeout: float) -> str:
    """The value of store reference ``ref``, read once per run (StoreError)."""
    at = (ref.kind, ref.arg)
    if at not in _READ and at not in _FAILED:
        if ref.kind == "op":
            prefetch([ref], environ, timeout)
        else:
            try:
                _READ[at] = _value(_keyring(ref.arg) if ref.kind == "keyring"
                                   else _pass(ref.arg, environ, timeout))
            except StoreError as exc:
                _FAILED[at] = str(exc)
    if at in _FAILED:
        raise StoreError(_FAILED[at])
    return _READ[at]


def failure(ref) -> str | None:
    """Why this run could not read ``ref`` (None: it was read, or not tried)."""
    return _FAILED.get((ref.kind, ref.arg))


def prefetch(refs: Iterable[Any], environ: Mapping[str, str], timeout: float) -> None:
    """Read every 1Password reference of ``refs`` not read yet this run, in one call."""
    wanted = sorted({r.arg for r in refs if r.kind == "op"} -
                    {arg for kind, arg in (*_READ, *_FAILED) if kind == "op"})
    if not wanted:
        return
    try:
        values = _op_sdk(wanted, environ) if _use_sdk(environ) else \
            _op_inject(wanted, environ, timeout)
    except StoreError as exc:
        named = [arg for arg in wanted if arg in str(exc)]
        for arg in wanted:
            _FAILED[("op", arg)] = str(exc) if not named or arg in named else \
                f"not read: the run's one 1Password call failed on ${{{named[0]}}}"
        return
    for arg in wanted:
        try:
            _READ[("op", arg)] = _value(values[arg])
        except StoreError as exc:  # an empty field
            _FAILED[("op", arg)] = str(exc)


def _value(value: str | None) -> str:
    if value is None or not value.strip():
        raise StoreError("the store holds an empty value")
    return value.strip()


# -- the OS keyring -------------------------------------------------------------------------

def keyring_parts(arg: str) -> tuple[str, str]:
    """(service, user) of ``SERVICE/USER``; the user is after the last ``/``."""
    service, _, user = arg.rpartition("/")
    if not service.strip() or not user.strip():
        raise StoreError(f"{arg!r} is not SERVICE/USER (e.g. ${{keyring:taosync/gateway}})")
    return service.strip(), user.strip()


def keyring_module():
    """The ``keyring`` library, or StoreError saying how to install it."""
    try:
        import keyring  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise StoreError("the keyring library is not installed: "
                         + INSTALL["keyring"]) from None
    return keyring


def _keyring(arg: str) -> str:
    service, user = keyring_parts(arg)
    keyring = keyring_module()
    try:
        value = keyring.get_password(service, user)
    except Exception as exc:  # the library's own errors (locked, no backend) and its backends'
        raise StoreError(keyring_problem(exc)) from None
    if value is None:
        raise StoreError(f"no password for service {service!r}, user {user!r} in the keyring "
                         f"({backend_name()}); store one with `taosync secret set {user} "
                         f"--service {service}`")
    return value


def keyring_problem(exc: BaseException) -> str:
    """What a keyring error means, with the library's message (redacted)."""
    name = type(exc).__name__
    said = said_by(str(exc)) or name
    if name == "KeyringLocked":
        return f"the keyring is locked ({said}); unlock it (log in to the desktop session, " \
               f"or `gnome-keyring-daemon --unlock`) and run again"
    if name in ("NoKeyringError", "InitError") or "No recommended backend" in said:
        return f"no usable keyring backend ({said}); on Linux start a Secret Service (GNOME " \
               f"Keyring, KWallet) or choose one with PYTHON_KEYRING_BACKEND"
    return f"the keyring failed: {name}: {said}"


def backend_name() -> str:
    try:
        import keyring

        backend = keyring.get_keyring()
    except Exception:
        return "no backend"
    return f"{type(backend).__module__}.{type(backend).__name__}"


# -- pass -----------------------------------------------------------------------------------

def _pass(arg: str, environ: Mapping[str, str], timeout: float) -> str:
    if not arg or arg.startswith("-"):
        raise StoreError(f"{arg!r} is not a password store path")
    rc, out, err = run(["pass", "show", arg], environ, timeout, what="pass")
    if rc != 0:
        said = said_by(err)
        store = store_dir(environ)
        if not os.path.isfile(os.path.join(store, ".gpg-id")):  # pass says "not in the store"
            raise StoreError(f"no password store at {store} ({said}); create one with `pass "
                             f"init GPG-ID` (PASSWORD_STORE_DIR moves it)")
        if "is not in the password store" in said:
            raise StoreError(f"{arg} is not in the password store ({said}); add it with "
                             f"`pass insert {arg}`")
        raise StoreError(f"`pass show` exited {rc}: {said or '(no message)'}")
    return out.splitlines()[0] if out.strip() else ""


def store_dir(environ: Mapping[str, str]) -> str:
    """Where ``pass`` keeps its store: ``$PASSWORD_STORE_DIR``, else ``~/.password-store``."""
    return environ.get("PASSWORD_STORE_DIR") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".password-store")


# -- 1Password ------------------------------------------------------------------------------

def _use_sdk(environ: Mapping[str, str]) -> bool:
    """The SDK when a service account is configured and the SDK is installed."""
    if not environ.get("OP_SERVICE_ACCOUNT_TOKEN"):
        return False
    import importlib.util

    return importlib.util.find_spec("onepassword") is not None


def _op_sdk(refs: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    """Every reference through one authenticated SDK client (one sign-in for the run)."""
    import asyncio

    from onepassword.client import Client  # type: ignore[import-not-found]

    from taosync import __version__

    async def read_all() -> dict[str, str]:
        client = await Client.authenticate(auth=environ["OP_SERVICE_ACCOUNT_TOKEN"],
                                           integration_name="taosync",
                                           integration_version=__version__)
        return {ref: await client.secrets.resolve(ref) for ref in refs}

    try:
        return asyncio.run(read_all())
    except Exception as exc:  # the SDK raises its own error types
        raise StoreError(f"1Password (SDK, service account) failed: "
                         f"{said_by(str(exc)) or type(exc).__name__}") from None


def _op_inject(refs: list[str], environ: Mapping[str, str], timeout: float) -> dict[str, str]:
    """Every reference through ONE ``op inject``: a template of ``{{ op://… }}`` between
    boundary lines taosync makes up, filled by 1Password in one unlock."""
    import secrets as random

    boundary = f"--taosync-{random.token_hex(12)}--"
    template = "".join(f"{boundary}{i}\n{{{{ {ref} }}}}\n" for i, ref in enumerate(refs))
    template += f"{boundary}end\n"
    rc, out, err = run(["op", "inject"], environ, timeout, what="op", stdin=template)
    if rc != 0:
        said = said_by(err)
        if re.search(r"not (currently )?signed in|sign ?in|authorization prompt|"
                     r"session expired|account is not", said, re.IGNORECASE):
            raise StoreError(
                f"1Password CLI needs you to sign in ({said}); unlock the 1Password app with "
                f"its CLI integration on (Settings → Developer), or run `eval $(op signin)` "
                f"in this shell, or set OP_SERVICE_ACCOUNT_TOKEN")
        raise StoreError(f"`op inject` exited {rc}: {said or '(no message)'}")
    values: dict[str, str] = {}
    for i, ref in enumerate(refs):
        head = f"{boundary}{i}\n"
        start = out.find(head)
        end = out.find(boundary, start + len(head)) if start >= 0 else -1
        if start < 0 or end < 0:
            raise StoreError("`op inject` printed something other than the template it was given")
        values[ref] = out[start + len(head):end].removesuffix("\n")
    return values


# -- running a store's program --------------------------------------------------------------

def run(argv: list[str], environ: Mapping[str, str], timeout: float, *, what: str,
        stdin: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a store's program, with no terminal to prompt on
    (stdin is ``stdin`` or nothing), bounded in time and output as a key command is."""
    import subprocess

    try:
        rc, out, err = run_bounded(argv, environ, max(timeout, STORE_TIMEOUT), stdin=stdin)
    except FileNotFoundError:
        raise StoreError(f"`{argv[0]}` is not installed (or not on PATH): "
                         + INSTALL[what]) from None
    except Overrun as exc:
        raise StoreError(f"`{' '.join(argv[:2])}` {exc}") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise StoreError(f"`{argv[0]}` cannot run: {getattr(exc, 'strerror', None) or exc}") \
            from None
    try:
        return rc, out.decode("utf-8"), err.decode("utf-8", "replace")
    except UnicodeDecodeError:
        raise StoreError(f"`{' '.join(argv[:2])}` printed bytes that are not UTF-8") from None


def said_by(text: str) -> str:
    """A store's message, shortened: its last line, its ``[ERROR] date time`` stamp
    dropped, at most 200 characters, every token-looking value hidden."""
    from taosync.fleet.looks_secret import hide

    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    last = re.sub(r"^\[ERROR\]\s*(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\s*)?", "", lines[-1])
    last = re.sub(r"^(Error|error):\s*", "", last)
    return hide(last, HIDDEN)[:200]


# -- handing the read to a client -----------------------------------------------------------

def fetch_command(ref) -> str:
    """The shell command a client runs to read store reference ``ref`` itself:
    ``op read 'op://…'``, ``pass show 'PATH' | head -n 1``, and for the keyring this
    Python's ``-m taosync secret get`` (the ``keyring`` library taosync reads with, and
    its backend choice, whatever the client's PATH holds)."""
    import shlex

    if ref.kind == "op":
        return f"op read {shlex.quote(ref.arg)}"
    if ref.kind == "pass":
        return f"pass show {shlex.quote(ref.arg)} | head -n 1"
    return (f"{shlex.quote(sys.executable)} -m taosync secret get "
            f"{shlex.quote('${keyring:' + ref.arg + '}')}")


#: the commands :func:`fetch_command` writes, read back
_FETCHED = (
    ("op", re.compile(r"^op read (?:'(op://[^']*)'|(op://\S+))$")),
    ("pass", re.compile(r"^pass show (?:'([^']*)'|([^\s'|]+)) \| head -n ?1$")),
    ("keyring", re.compile(r"^(?:'[^']*'|\S+) -m taosync secret get (?:'\$\{keyring:([^']*)\}'"
                           r"|\$\{keyring:(\S*)\})$")),
)


def command_reference(command: str) -> tuple[str, str] | None:
    """(kind, argument) of the store reference a key command taosync wrote reads (None:
    another command)."""
    text = command.strip()
    for kind, pattern in _FETCHED:
        match = pattern.match(text)
        if match:
            return kind, next(g for g in match.groups() if g is not None)
    return None


# -- running a key command or a store's program, bounded --------------------------------

def run_bounded(argv, environ, timeout: float, *, shell: bool = False,
                stdin: str | None = None) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of a key command or a password store's program, in
    its own session (a timeout kills its children too), with the process's rights,
    ``stdin`` its only input; :class:`Overrun` when it overruns time or output (the
    message goes after the command's name), OSError when it cannot start."""
    import subprocess

    from taosync.privilege import command_identity, invoker_rights

    with invoker_rights():  # exec'd with the rights of the process, not of a thread
        proc = subprocess.Popen(argv, shell=shell,
                                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(environ), start_new_session=True,
                                **command_identity())
    try:
        if stdin is not None and proc.stdin is not None:  # a template of a few lines
            try:
                proc.stdin.write(stdin.encode("utf-8"))
            except BrokenPipeError:
                pass  # it did not read its input: its exit code says why
            proc.stdin.close()
        out, err = _bounded_output(proc, timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise Overrun(f"did not finish within {timeout:g} s") from None
    except _TooMuch:
        _kill_group(proc)
        raise Overrun(f"printed more than {SECRET_MAX // 1024} KiB (a key is one line; "
                          f"is it the right command?)") from None
    except BaseException:
        _kill_group(proc)
        raise
    return proc.returncode, out, err


#: the most a key command may print: as much as a key file holds (taosync/bounded.py)
SECRET_MAX = 64 * 1024


class _TooMuch(Exception):
    """The key command printed more than :data:`SECRET_MAX`."""


def _bounded_output(proc, timeout: float) -> tuple[bytes, bytes]:
    """(stdout, stderr) of ``proc`` once it exits, read in chunks as they come: stdout
    past :data:`SECRET_MAX` raises :class:`_TooMuch`, stderr keeps only its last
    :data:`SECRET_MAX` bytes, and the whole wait is bounded by ``timeout``
    (``subprocess.TimeoutExpired``) — ``${cmd:yes}`` fills neither memory nor time."""
    import selectors
    import subprocess
    import sys
    import time

    if sys.platform == "win32":  # no select() on pipes there: the timeout alone bounds it
        out, err = proc.communicate(timeout=timeout)
        if len(out) > SECRET_MAX:
            raise _TooMuch
        return out, err[-SECRET_MAX:]
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is out and len(out) > SECRET_MAX:
                    raise _TooMuch
                if key.data is err and len(err) > SECRET_MAX:
                    del err[:-SECRET_MAX]
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    finally:
        proc.stdout.close()
        proc.stderr.close()
    return bytes(out), bytes(err)


def _kill_group(proc) -> None:
    """SIGKILL the key command's whole process group (its children too) and reap it.

    The pipes are closed rather than drained: a child that left the group could hold
    them open for ever.
    """
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()  # the group is gone or not ours; the command itself still must go
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()


# -- doctor ---------------------------------------------------------------------------------

def available(kind: str, environ: Mapping[str, str]) -> tuple[bool, str]:
    """(usable, what was found or the fix) for store ``kind``, without reading a value."""
    import shutil

    path = environ.get("PATH", os.defpath)
    if kind == "keyring":
        try:
            keyring = keyring_module()
        except StoreError as exc:
            return False, str(exc)
        try:
            backend = keyring.get_keyring()
            name = f"{type(backend).__module__}.{type(backend).__name__}"
            if type(backend).__module__.endswith(".fail"):
                return False, keyring_problem(RuntimeError("No recommended backend was available"))
        except Exception as exc:
            return False, keyring_problem(exc)
        return True, f"keyring backend {name}"
    if kind == "op":
        if _use_sdk(environ):
            return True, "the 1Password SDK with OP_SERVICE_ACCOUNT_TOKEN"
        exe = shutil.which("op", path=path)
        if exe is None:
            return False, "`op` is not installed (or not on PATH): " + INSTALL["op"]
        return True, f"1Password CLI {exe} (it asks to be unlocked when read)"
    exe = shutil.which("pass", path=path)
    if exe is None:
        return False, "`pass` is not installed: " + INSTALL["pass"]
    store = store_dir(environ)
    if not os.path.isfile(os.path.join(store, ".gpg-id")):
        return False, f"no password store at {store}: create one with `pass init GPG-ID` " \
                      f"(PASSWORD_STORE_DIR moves it)"
    if shutil.which("gpg", path=path) is None and shutil.which("gpg2", path=path) is None:
        return False, "`gpg` is not installed: " + INSTALL["pass"]
    return True, f"pass {exe}, store {store}"
