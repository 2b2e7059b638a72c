"""Printing: human text by default, JSON with --json, colour only on a terminal
without NO_COLOR, problems on stderr.

Every line goes through the run's :class:`~taosync.fleet.secrets.Redactor` once a
command has installed one (:func:`use_redactor`), so no output path — a diff, a
``changes`` entry, a warning, an error, a ``-v`` line — can print a secret, whatever
the caller forgot (Secret prints itself redacted anyway)."""

from __future__ import annotations

import json
import sys

import click

from taosync.settings import current

_redactor: tuple[object, object] | None = None  # (the run's Settings, its Redactor)

COLORS = {"ok": "green", "warn": "yellow", "fail": "red", "dim": "bright_black", "bold": None}


def style(text: str, kind: str) -> str:
    if not current().color:
        return text
    if kind == "bold":
        return click.style(text, bold=True)
    return click.style(text, fg=COLORS.get(kind))


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


def clean(text: str) -> str:
    """``text`` without any secret the run knows of."""
    r = redactor()
    return r.scrub(text) if r is not None else text


def out(text: str = "") -> None:
    """A line of the command's main output (suppressed by -q)."""
    if current().verbosity >= 0 and not current().json:
        click.echo(clean(text))


def echo(text: str) -> None:
    """A line of output printed whatever -q says (a result table's failing rows)."""
    click.echo(clean(text))


def detail(text: str) -> None:
    """A line shown only with -v."""
    if current().verbosity > 0 and not current().json:
        click.echo(clean(text))


def warn(text: str) -> None:
    """Warnings go to stderr in every mode, so JSON on stdout stays parseable. A line that
    already says so (a located ``file:line:col: path: warning: …``) gets no second prefix."""
    if text.startswith("warning: ") or ": warning: " in text:
        click.echo(clean(text), err=True)
        return
    click.echo(style("warning: ", "warn") + clean(text), err=True)


def problem(text: str) -> None:
    click.echo(clean(text), err=True)


def emit_json(data) -> None:
    """The data scrubbed value by value (so an escaped secret is found decoded), then
    the JSON text once more (so one escaped twice is found too)."""
    r = redactor()
    if r is not None:
        data = r.scrub_data(json.loads(json.dumps(data, ensure_ascii=False, default=str)))
    click.echo(clean(json.dumps(data, indent=2, ensure_ascii=False, default=str)))


def fail(exc) -> None:
    """Print a TaosyncError: JSON on stdout with --json, else a message on stderr."""
    if current().json:
        emit_json({"ok": False, "error": exc.message, "details": exc.details,
                   "exit_code": exc.exit_code})
        return
    for line in exc.details:
        click.echo(clean(line), err=True)
    click.echo(style("error: ", "fail") + clean(exc.message), err=True)
    sys.stderr.flush()
