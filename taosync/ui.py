"""Printing: human text by default, JSON with --json, colour only on a terminal
without NO_COLOR, problems on stderr. Nothing here ever sees a key: callers pass
already-redacted text (Secret prints itself redacted anyway)."""

from __future__ import annotations

import json
import sys

import click

from taosync.cli import settings

COLORS = {"ok": "green", "warn": "yellow", "fail": "red", "dim": "bright_black", "bold": None}


def style(text: str, kind: str) -> str:
    if not settings().color:
        return text
    if kind == "bold":
        return click.style(text, bold=True)
    return click.style(text, fg=COLORS.get(kind))


def out(text: str = "") -> None:
    """A line of the command's main output (suppressed by -q)."""
    if settings().verbosity >= 0 and not settings().json:
        click.echo(text)


def detail(text: str) -> None:
    """A line shown only with -v."""
    if settings().verbosity > 0 and not settings().json:
        click.echo(text)


def warn(text: str) -> None:
    """Warnings go to stderr in every mode, so JSON on stdout stays parseable."""
    click.echo(style("warning: ", "warn") + text, err=True)


def problem(text: str) -> None:
    click.echo(text, err=True)


def emit_json(data) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def fail(exc) -> None:
    """Print a TaosyncError: JSON on stdout with --json, else a message on stderr."""
    if settings().json:
        emit_json({"ok": False, "error": exc.message, "details": exc.details,
                   "exit_code": exc.exit_code})
        return
    for line in exc.details:
        click.echo(line, err=True)
    click.echo(style("error: ", "fail") + exc.message, err=True)
    sys.stderr.flush()
