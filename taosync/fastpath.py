"""The no-op fast path: replay the answer the full path certified, before click, ruamel,
pydantic or even ``dataclasses`` are imported.

Users run ``taosync apply`` from shell start-up files, hooks and CI, and the common case
is "nothing changed". After each apply the full path answers every form this module may
be asked (``apply``, ``apply --no-verify``, ``plan``, ``plan --check``, ``status``, each
also with ``-q``) once more on a recording System and saves a certificate
(engine/certificate.py): every input those runs read — files by keyed hash, what is at
each path they looked at, each environment variable they looked up, the working
directory, a key command's output, how long a choice made from the clock holds — and
the exact lines they printed, on which stream, with the exit code.

This module only finds that certificate, asks it whether every input still holds, and
prints the answer filed for the command line it was given. It decides nothing itself:
no render, route, include, client, key or redaction logic lives here, so a feature
added to the full path is covered as soon as it reads through the System. What it
parses is where the certificate is: the command line (the forms above and the global
``-c``/``--home``/``-q``, and apply's ``--yes``, which a no-op never needs; anything else, ``--json``, ``-v``, ``--only``, ``--dry-run``,
``--no-key``, goes to the full path) and the state directory (``$XDG_STATE_HOME`` or
``~/.local/state``, as settings.py finds it; a directory found the wrong way holds no
certificate for this context, and the full path answers).

Anything unsure — no certificate, another taosync, Python or platform, a context
(``--home``, ``-c``) other than the one certified, an input that moved, a damaged
file — returns None and the full path runs, which reports problems properly.
"""


import os
import sys

from taosync.engine import certificate

#: command → the flags it may carry here: those of the certified forms (the global
#: -c/--config, --home, -q work everywhere); ``diff`` is cli.py's alias of ``plan``
ALIASES = {"diff": "plan"}
COMMANDS: dict[str, tuple[str, ...]] = {}
for _words in certificate.FORMS:
    COMMANDS[_words[0]] = tuple(dict.fromkeys((*COMMANDS.get(_words[0], ()), *_words[1:])))
for _alias, _name in ALIASES.items():
    COMMANDS[_alias] = COMMANDS[_name]
_VALUED = {"-c": "config", "--config": "config", "--home": "home"}
_QUIET = {"-q", "--quiet"}
#: flags that change nothing in a no-op answer: ``apply --yes`` only says not to ask,
#: and a no-op asks nothing (taosync/confirm.py), so it replays ``apply``'s answer
_NO_OP_ALIKE = {"apply": {"--yes", "-y"}}


class _Unsure(Exception):
    """The fast path cannot be sure: the full path must run."""


def answer(argv: list[str], environ=None) -> int | None:
    """The exit code after printing what the full path would print, or None (nothing
    printed) when the full path must run."""
    environ = os.environ if environ is None else environ
    try:
        replay = _replay(argv, environ)
    except (_Unsure, OSError, ValueError, TypeError, KeyError, AttributeError,
            IndexError, RecursionError, UnicodeError):
        return None
    if replay is None:
        return None
    rc, chunks = replay
    try:
        for stream, text in chunks:
            out = sys.stdout if stream == 1 else sys.stderr
            out.write(text)
            out.flush()  # in the order the full path printed (click flushes each line)
    except BrokenPipeError:
        return 0  # as cli.run answers a closed pipe
    return rc


def _replay(argv: list[str], environ):
    """(exit code, chunks) certified for this command line, or None."""
    if sys.platform == "win32":
        return None
    words, options, quiet = _parse(argv)
    home, sandboxed = _home(options, environ)
    if os.geteuid() == 0 and os.stat(home).st_uid != 0:
        return None  # root on a user's home: the full path acts with the owner's rights
    cert_dir = _state_dir(home, sandboxed, environ)
    cert = certificate.loads(certificate.read(os.path.join(cert_dir, certificate.FILE))
                             .decode("utf-8"))
    if not certificate.made_for(cert, certificate.context_of(home if sandboxed else None,
                                                             _config(options), home)):
        return None
    key = certificate.read(os.path.join(cert_dir, "hmac.key")).decode().strip()
    if not certificate.holds(cert, certificate.Hmac(bytes.fromhex(key)), environ, home):
        return None
    return certificate.answer(cert, certificate.form_key(words, quiet), sys.stdout.isatty())


def _parse(argv: list[str]) -> tuple[tuple[str, ...], dict[str, str], bool]:
    """(the form's words as certificate.FORMS spells them, {"config"|"home": value},
    quiet) — or _Unsure for anything else."""
    command, flags, options, quiet = None, [], {}, False
    args = iter(argv)
    for arg in args:
        if arg in _VALUED:
            name = _VALUED[arg]
            value = next(args, None)
            if name in options or not value or value.startswith("-"):
                raise _Unsure
            options[name] = value
        elif arg in _QUIET:
            quiet = True
        elif command is not None and arg in _NO_OP_ALIKE.get(ALIASES.get(command, command), ()):
            continue
        elif arg.startswith("-"):
            if command is None or arg not in COMMANDS[command] or arg in flags:
                raise _Unsure
            flags.append(arg)
        elif command is None and arg in COMMANDS:
            command = arg
        else:
            raise _Unsure
    if command is None:
        raise _Unsure
    return (ALIASES.get(command, command),
            *[f for f in COMMANDS[command] if f in flags]), options, quiet


def _pathlib(raw: str) -> str:
    """``str(Path(raw))`` for the spellings pathlib and this agree on (no ``//`` lead)."""
    if not raw or raw.startswith("//"):
        raise _Unsure
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    text = ("/" if raw.startswith("/") else "") + "/".join(parts)
    return text or "."


def _config(options: dict) -> str | None:
    """-c as Settings holds it (click refuses a directory there)."""
    if "config" not in options:
        return None
    if os.path.isdir(options["config"]):
        raise _Unsure
    return _pathlib(options["config"])


def _home(options: dict, environ) -> tuple[str, bool]:
    """(home, sandboxed): --home made absolute as settings.py makes it, else $HOME."""
    if "home" in options:
        raw = os.path.expanduser(options["home"])
        if raw.startswith("~") or os.path.isfile(raw):
            raise _Unsure  # click refuses a file there; pathlib may expand ~user apart
        return _pathlib(raw if os.path.isabs(raw) else os.path.join(os.getcwd(), raw)), True
    if not environ.get("HOME"):
        raise _Unsure  # the full path says so
    return _pathlib(environ["HOME"]), False  # as Path.home() spells it


def _state_dir(home: str, sandboxed: bool, environ) -> str:
    """Where the certificate is: settings.py's state_dir but for a location variable
    pointing out of --home (then the certificate found here, if any, is for another
    context: its inputs say so)."""
    base = environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    if sandboxed and not os.path.realpath(base).startswith(
            os.path.realpath(home).rstrip("/") + "/"):
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "taosync")
