"""Printing: human text by default, JSON with --json, colour as --color says (auto: a
terminal, unless NO_COLOR is non-empty; FORCE_COLOR forces it), problems on stderr.

Every line goes through the run's :class:`~taosync.fleet.secrets.Redactor` once a
command has installed one (:func:`use_redactor`), so no output path — a diff, a
``changes`` entry, a warning, an error, a ``-v`` line — can print a secret, whatever
the caller forgot (Secret prints itself redacted anyway)."""

from __future__ import annotations

import json
import sys

import click

from taosync.settings import current
# text a terminal must not obey (a module below verify, which makes its diagnoses safe)
from taosync.terminal import json_safe, terminal_safe, untrusted  # noqa: F401

_redactor: tuple[object, object] | None = None  # (the run's Settings, its Redactor)

COLORS = {"ok": "green", "warn": "yellow", "fail": "red", "dim": "bright_black", "bold": None}


def style(text: str, kind: str) -> str:
    if not current().color:
        return text
    if kind == "bold":
        return click.style(text, bold=True)
    return click.style(text, fg=COLORS.get(kind))


def _echo(text: str, err: bool = False) -> None:
    """click.echo with the run's colour setting — asked only for a line that holds an
    escape sequence (click strips them when colour is off; any other line prints the
    same either way), so a run that styles nothing never asks for a terminal. Every
    line passes :func:`terminal_safe` first."""
    text = terminal_safe(text)
    click.echo(text, err=err, color=current().color if "\x1b" in text else False)


def use_redactor(redactor) -> None:
    """Hide what ``redactor`` knows from everything this run prints from now on. Tied
    to the run's settings, so a later run in the same process starts clean."""
    global _redactor
    _redactor = (current(), redactor) if redactor is not None else None


def redactor():
    """The run's redactor, or None before a command installed one."""
    if _redactor is not None and _redactor[0] is current():
        return _redactor[1]
    return None


def clean(text: str, *, by_name: bool = True) -> str:
    """``text`` without any secret the run knows of, nor any value that looks like one
    (a token by its prefix, a value under a secret-looking name): before a command has
    installed its redactor too, and in commands that install none (import, log, …)."""
    return _redactor_or_rules().scrub(text, by_name=by_name)


_rules_only = None  # a Redactor that knows no secret: the rules of looks_secret alone


def _redactor_or_rules():
    global _rules_only
    r = redactor()
    if r is not None:
        return r
    if _rules_only is None:
        from taosync.fleet.secrets import Redactor

        _rules_only = Redactor()
    return _rules_only


def out(text: str = "") -> None:
    """A line of the command's main output (suppressed by -q)."""
    if current().verbosity >= 0 and not current().json:
        _echo(clean(text))


def echo(text: str) -> None:
    """A line of output printed whatever -q says (a result table's failing rows)."""
    _echo(clean(text))


def detail(text: str) -> None:
    """A line shown only with -v."""
    if current().verbosity > 0 and not current().json:
        _echo(clean(text))


def warn(text: str) -> None:
    """Warnings go to stderr in every mode, so JSON on stdout stays parseable. A line that
    already says so (a located ``file:line:col: path: warning: …``) gets no second prefix."""
    if text.startswith("warning: ") or ": warning: " in text:
        _echo(clean(text), err=True)
        return
    _echo(style("warning: ", "warn") + clean(text), err=True)


def problem(text: str) -> None:
    _echo(clean(text), err=True)


def nothing_to_do(why: str) -> str:
    """The one way every command says it has nothing to do (apply, plan, status, watch,
    destroy, rollback, verify), so a script or a person looks for one phrase."""
    return f"nothing to do: {why}"


def files_match(n: int) -> str:
    """``25 files match fleet.yaml``: the reason a plan has nothing to do."""
    return f"{n} file{'s' if n != 1 else ''} match{'es' if n == 1 else ''} fleet.yaml"


def home_header() -> None:
    """Under --home, once per run before the first path: which directory ``~/`` means,
    so a sandboxed run never looks as if it wrote into the real home."""
    s = current()
    if s.verbosity < 0 or s.json:
        return  # out() would print nothing (and styling it would ask for a terminal)
    if s.sandboxed and not s.home_shown:
        from taosync.engine.system import current as system
        from taosync.paths import display_home

        s.home_shown = True
        shown = display_home(s.home_dir, system().cwd())
        out(style(f"home: {shown}  (--home; ~/ below means this directory)", "dim"))


class Progress:
    """A live line on a terminal's stderr while something slow runs: ``probing 5
    backends… 3 s`` (a spinner and the elapsed seconds, redrawn by a daemon thread), erased
    when done. Nothing at all without a terminal, with --json or -q: logs stay clean.
    :meth:`above` prints a line of output over it (a live table's row as it arrives)."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self):
        import threading

        s = current()
        self.live = sys.stderr.isatty() and not s.json and s.verbosity >= 0
        self._text = ""
        self._thread = None
        self._done: threading.Event | None = None
        self._lock = threading.Lock()  # one writer at a time: the spinner or a row

    def start(self, text) -> None:
        """Show ``text`` (or what ``text()`` returns at each redraw, for a count that
        changes) with a spinner and the seconds since now."""
        if not self.live or self._thread is not None:
            return
        import threading
        import time

        done = threading.Event()
        self._text, self._done, began = text, done, time.monotonic()

        def spin() -> None:
            n = 0
            while not done.wait(0.1 if n else 0):
                text = self._text() if callable(self._text) else self._text
                with self._lock:
                    if done.is_set():
                        return
                    sys.stderr.write(f"\r\x1b[K{self.FRAMES[n % len(self.FRAMES)]} "
                                     f"{clean(text)} {time.monotonic() - began:.0f} s")
                    sys.stderr.flush()
                n += 1

        self._thread = threading.Thread(target=spin, name="taosync-progress", daemon=True)
        self._thread.start()

    def above(self, text: str) -> None:
        """Print ``text`` as a line of output, the live line erased first (the spinner
        draws it again below on its next turn)."""
        with self._lock:
            if self._thread is not None:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
            echo(text)
            sys.stdout.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None and self._done is not None:
            self._done.set()
            self._thread.join()
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def probing(n: int) -> str:
    return f"probing {n} backend{'s' if n != 1 else ''}…"


#: the version of the --json contract every command's object carries (README: JSON output)
JSON_FORMAT_VERSION = 1


def emit_json(data, exit_code: int = 0, *, reveal: bool = False) -> None:
    """Print one command's JSON object under the shared contract: ``ok``, ``exit_code`` and
    ``format_version`` first, then its own keys (``ok`` always means "exit code 0").

    The data is scrubbed value by value (so an escaped secret is found decoded, and a
    value under a secret-looking name inside a string, a diff's line), then the JSON
    text once more (so one escaped twice is found too; by value only: the document's
    own ``"key": "env.X"`` fields are no secrets). ``reveal``: the user asked for the
    key itself (``env --with-key``)."""
    if isinstance(data, dict):
        data = {**{"ok": None, "exit_code": None, "format_version": JSON_FORMAT_VERSION},
                **data, "ok": exit_code == 0, "exit_code": exit_code}
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    if not reveal:
        data = _redactor_or_rules().scrub_data(json.loads(text))
        text = clean(json.dumps(data, indent=2, ensure_ascii=False, default=str),
                     by_name=False)
    click.echo(json_safe(text))


def located_problems(exc) -> list[dict]:
    """The problems of a failed run in ``validate --json``'s located shape: every problem
    of an invalid fleet, else one unlocated entry holding the error's message."""
    if hasattr(exc, "all"):
        return [p.to_json() for p in exc.all()]
    return [{"file": None, "line": None, "column": None, "path": None,
             "message": exc.message, "severity": "error"}]


def fail(exc, force_json: bool = False) -> None:
    """Print a TaosyncError: JSON on stdout with --json (``force_json``: a usage error
    that stopped before the options were read), else a message on stderr."""
    if current().json or force_json:
        emit_json({"ok": False, "error": exc.message, "problems": located_problems(exc),
                   "details": exc.details}, exit_code=exc.exit_code)
        return
    for line in exc.details:
        click.echo(terminal_safe(clean(line)), err=True)
    _echo(style("error: ", "fail") + clean(exc.message), err=True)
    sys.stderr.flush()


def internal_error(exc: BaseException) -> None:
    """Report an unexpected exception (a bug): one line on stderr naming its type, the
    traceback only with -v; under --json the contract's object, exit code 70.

    Everything goes through the run's redactor and, as a last resort, one that knows
    every Secret this process made: the exception's text (and the traceback's) may hold
    a secret even when it happens before the run's redactor knew of it."""
    import traceback

    from taosync.errors import INTERNAL_ERROR
    from taosync.fleet.secrets import Redactor, made

    last_resort = Redactor()
    last_resort.add(made())

    def scrub(text: str) -> str:
        return last_resort.scrub(clean(text))

    s = current()
    name = type(exc).__qualname__
    if s.verbosity > 0:
        trace = "".join(traceback.format_exception(exc))
        click.echo(terminal_safe(scrub(trace.rstrip("\n"))), err=True)
        message = f"internal error: {name}: please report it, with the traceback above"
    else:
        message = (f"internal error: {name}: please report it (run again with -v for the "
                   "traceback)")
    if s.json:
        emit_json({"ok": False, "error": scrub(message),
                   "problems": [{"file": None, "line": None, "column": None, "path": None,
                                 "message": scrub(message), "severity": "error"}],
                   "details": []}, exit_code=INTERNAL_ERROR)
        return
    click.echo("taosync: " + scrub(message), err=True)
    sys.stderr.flush()
