"""Key references and the redacted ``Secret`` type.

fleet.yaml holds a *reference* to the key (``${env:NAME}``, ``${file:PATH}``,
``${cmd:COMMAND}``, ``${shell:COMMAND}``); resolving it gives a :class:`Secret`,
whose ``str``/``repr``/``format`` are redacted so no log line, traceback or f-string
can print the key by accident. Only :meth:`Secret.reveal` gives the value, and only
code that writes a client file or sends a request calls it.

Standard library only: the no-op fast path resolves the key too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

REFERENCE = re.compile(r"^\$\{(env|file|cmd|shell):(.*)\}$", re.DOTALL)
CMD_TIMEOUT = 10.0


class SecretError(Exception):
    """A key reference that cannot be resolved. The message never holds the value."""


class Secret:
    """A resolved key. Prints as ``sk-…ab12``; ``reveal()`` is the only way to the value."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str = "literal") -> None:
        self._value = value
        self.source = source

    def reveal(self) -> str:
        return self._value

    def redacted(self) -> str:
        return redact(self._value)

    def __str__(self) -> str:
        return self.redacted()

    def __repr__(self) -> str:
        return f"Secret({self.redacted()!r}, source={self.source!r})"

    def __format__(self, spec: str) -> str:
        return format(self.redacted(), spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):  # never pickle/copy the value out by accident
        raise TypeError("a Secret cannot be pickled")

    def found_in(self, value) -> bool:
        """Whether the key appears anywhere in a plain value (strings, lists, dicts)."""
        if not self._value:
            return False
        if isinstance(value, str):
            return self._value in value
        if isinstance(value, dict):
            return any(self.found_in(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return any(self.found_in(v) for v in value)
        return False

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by its redacted form."""
        if not self._value:
            return text
        return text.replace(self._value, self.redacted())


def redact(value: str) -> str:
    """``sk-proj-abcdef…wxyz`` → ``sk-…wxyz``; short values show nothing at all."""
    value = value.strip()
    if len(value) < 12:
        return "…" if value else ""
    prefix = value.split("-", 1)[0] + "-" if "-" in value[:8] else ""
    return f"{prefix}…{value[-4:]}"


@dataclass(frozen=True)
class Reference:
    kind: str  # env | file | cmd | shell | literal
    arg: str

    def describe(self) -> str:
        """A safe description: never the value of a literal."""
        if self.kind == "literal":
            return "a literal key"
        return f"${{{self.kind}:{self.arg}}}"


def parse_reference(text: str) -> Reference:
    match = REFERENCE.match(text.strip())
    if not match:
        return Reference("literal", text)
    return Reference(match.group(1), match.group(2).strip())


def resolve(ref: Reference, *, environ=None, home: Path | None = None,
            timeout: float = CMD_TIMEOUT) -> Secret:
    """Resolve a reference to a :class:`Secret`, or raise :class:`SecretError`."""
    environ = os.environ if environ is None else environ
    if ref.kind == "literal":
        return Secret(ref.arg.strip(), "literal")
    if ref.kind == "env":
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ref.arg):
            raise SecretError(f"{ref.arg!r} is not an environment variable name")
        value = environ.get(ref.arg)
        if value is None:
            raise SecretError(f"environment variable {ref.arg} is not set; "
                              f"export it, or point gateway.key at a file or command")
        if not value.strip():
            raise SecretError(f"environment variable {ref.arg} is empty")
        return Secret(value.strip(), ref.describe())
    if ref.kind == "file":
        path = expand_path(ref.arg, home)
        try:
            value = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SecretError(f"key file {path} does not exist") from None
        except IsADirectoryError:
            raise SecretError(f"key file {path} is a directory") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SecretError(f"key file {path} cannot be read: "
                              f"{getattr(exc, 'strerror', None) or type(exc).__name__}") from None
        if not value.strip():
            raise SecretError(f"key file {path} is empty")
        return Secret(value.strip(), ref.describe())
    return _run_key_command(ref, environ, timeout)


def _run_key_command(ref: Reference, environ, timeout: float) -> Secret:
    """``${cmd:…}`` (no shell) or ``${shell:…}``; subprocess is imported only here."""
    import shlex
    import subprocess

    if ref.kind == "cmd":
        try:
            argv = shlex.split(ref.arg)
        except ValueError as exc:
            raise SecretError(f"key command cannot be parsed: {exc}") from None
        if not argv:
            raise SecretError("key command is empty")
        shell = False
    else:
        argv, shell = ref.arg, True
    try:
        # Its own session (process group), so a timeout can kill the command's children too.
        proc = subprocess.Popen(argv, shell=shell, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(environ), start_new_session=True)
    except FileNotFoundError:
        raise SecretError(f"key command not found: {argv[0]}") from None
    except OSError as exc:
        raise SecretError(f"key command cannot run: {exc.strerror}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise SecretError(f"key command did not finish within {timeout:g} s: "
                          f"{ref.describe()}") from None
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        err = stderr.strip().splitlines()[-1:] or ["(no stderr)"]
        raise SecretError(f"key command exited {proc.returncode}: {err[0][:200]}")
    if not stdout.strip():
        raise SecretError("key command printed nothing")
    return Secret(stdout.strip(), ref.describe())


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


def expand_path(text: str, home: Path | None) -> Path:
    """``~`` means the taosync home (``--home``), so sandboxes never read the real one."""
    if text == "~" or text.startswith("~/"):
        base = home if home is not None else Path.home()
        return base / text[2:] if text != "~" else base
    return Path(os.path.expandvars(text)).expanduser()
