"""``taosync watch``: re-apply after every save of fleet.yaml; keep owned keys asserted.

Parses options, prints each :class:`taosync.watch.Event` as one timestamped line (or a
JSON line with ``--json``), and stops cleanly on SIGINT/SIGTERM. The loop itself lives
in :mod:`taosync.watch`.
"""

from __future__ import annotations

import json
import signal
import sys
import threading

import click

from taosync.settings import common_options, current
from taosync import ui
from taosync.ui import JSON_FORMAT_VERSION


@click.command("watch")
@common_options
@click.option("--debounce", type=click.FloatRange(0, 10), default=0.1, show_default=True,
              metavar="SECONDS", help="Wait this long after the last save before applying.")
@click.option("--drift", type=click.Choice(["fix", "warn"]), default="fix", show_default=True,
              help="An owned key edited in a client file: re-assert it, or only report it.")
@click.option("--no-verify", is_flag=True, help="Do not send verification requests.")
@click.option("--stub", is_flag=True,
              help="Verify against a stand-in gateway on loopback (the files still name "
                   "the fleet's gateway).")
@click.option("--reverify", metavar="INTERVAL", callback=lambda c, p, v: _interval(v),
              help="Also verify every client on this timer (e.g. 30s, 5m): a failing backend "
                   "moves its routes, and they move back on recovery, within one interval.")
def watch(debounce, drift, no_verify, stub, reverify):
    """Re-apply after every save of fleet.yaml; keep owned keys asserted.

    Watches fleet.yaml, the key file of a ${file:…} key and every client file. A save
    is applied after DEBOUNCE seconds of quiet (an invalid save is reported and changes
    nothing), then the clients whose files changed are verified. An invalid fleet.yaml
    or a key that does not resolve at start exits 2 before watching. --reverify INTERVAL also verifies
    every client on a timer, so a failing backend moves its routes (and back on
    recovery) within one interval. Stop with Ctrl-C or SIGTERM.
    """
    from taosync import pipeline
    from taosync.watch import Options, Watcher

    s = current()
    # before watching starts, as every command does: another home's state, an invalid
    # fleet.yaml or a key that does not resolve is bad input (exit 2, nothing written);
    # only a later save that fails is reported and waited out
    first = pipeline.prepare(s, use_cache=False)
    printer = _Printer(s)
    watcher = Watcher(s, Options(debounce=debounce, drift=drift, verify=not no_verify,
                                 stub=stub, reverify=reverify), on_event=printer)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.start(first)
        while not stop.wait(0.2):
            pass
    finally:
        watcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    from taosync.watch import Event

    printer(Event("stopped", "stopped"))
    return 0


def _interval(text: str | None) -> float | None:
    """``--reverify`` as seconds (30s, 5m, 1h; a plain number is seconds)."""
    if text is None:
        return None
    from taosync.verify.routing import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if seconds <= 0:
        raise click.BadParameter("must be more than 0 seconds")
    return seconds


class _Printer:
    """One line per event: ``HH:MM:SS.mmm  message`` (problems' details indented below),
    or one JSON object per line. -q shows only problems, -v adds detail events."""

    def __init__(self, s) -> None:
        self.json = s.json
        self.verbosity = s.verbosity
        self.color = s.color

    def __call__(self, event) -> None:
        if event.level == "detail" and self.verbosity <= 0:
            return
        if event.level != "problem" and self.verbosity < 0:
            return
        if self.json:
            line = json.dumps({"format_version": JSON_FORMAT_VERSION, **event.to_dict()},
                              ensure_ascii=False, default=str)
        else:
            text = event.message
            if self.color and event.level == "problem":
                text = click.style(text, fg="red" if event.kind != "drift" else "yellow")
            elif self.color and event.kind in ("applied", "verified", "route"):
                text = click.style(text, fg="green")
            stamp = event.stamp()
            stamp = click.style(stamp, fg="bright_black") if self.color else stamp
            lines = [f"{stamp}  {text}"]
            pad = " " * (len(event.stamp()) + 2)
            for detail in event.data.get("problems", []) + event.data.get("details", []):
                lines.append(pad + detail)
            line = "\n".join(lines)
        line = ui.json_safe(line) if self.json else ui.terminal_safe(line)
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            pass
