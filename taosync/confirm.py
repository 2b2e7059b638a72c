"""The one confirm rule: taosync asks before it replaces what you wrote yourself.

Four commands can replace something taosync did not write: ``apply`` (values a client
file held before taosync owned that key — a first apply on a real home — and owned
keys you edited by hand since), ``rollback`` (files you edited after taosync wrote
them), ``adopt`` (your fleet.yaml) and ``destroy`` (everything taosync set up). One
rule for all four, stated once in docs/commands.md ("Confirming"):

- **a terminal** (stdin and stderr are terminals, never with ``--json``): show what
  would be replaced on stderr and ask ``…? [y/N]``; Enter or ``n`` writes nothing and
  exits 1;
- **--yes** (``-y``): no question (apply's ``--force`` includes it, and also writes
  files you made read-only);
- **no terminal and no --yes**: nobody can answer, so nothing is written and the
  command exits 1, naming ``--yes`` — except an apply that replaces only values you had
  before taosync owned them: it proceeds (running ``apply`` is choosing the fleet's
  values; each replaced value is backed up) and its last line names what it replaced
  and the rollback command (:func:`replaced_line`).

A no-op never asks (the fast path, taosync/fastpath.py, answers only when nothing
changes, and accepts ``--yes`` as the no-op it is there).
"""

from __future__ import annotations

import sys

from taosync.errors import TaosyncError
from taosync.hints import again

#: where the rule is written down for users (every --yes help names it)
DOCS = "docs/commands.md: Confirming"
#: --yes of a command that asks through ``apply`` (edit --apply, update)
APPLY_ASKS = "Answer yes where the apply would ask (values you had, hand edits): for scripts"


def yes_option(does: str):
    """The rule's ``--yes``/``-y`` flag, one spelling on every command that asks;
    ``does``: what it skips asking for (the help names where the rule is written)."""
    import click

    return click.option("--yes", "-y", is_flag=True, help=f"{does} ({DOCS}).")


#: what a declined or unconfirmed command says (it wrote nothing)
NOTHING_WRITTEN = "nothing was written"


class NotConfirmed(TaosyncError):
    """Nobody confirmed (no terminal, no --yes): nothing was written. Exit 1 — the job
    ran and found values to replace that need a person's yes, as answering no does."""

    exit_code = 1


def can_ask() -> bool:
    """A person can answer here: stdin and stderr are terminals, and not --json."""
    from taosync.settings import current

    if current().json:
        return False
    return sys.stdin.isatty() and sys.stderr.isatty()


def ask(question: str) -> bool:
    """``question [y/N]`` on stderr, the answer from stdin; only y or yes is yes."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def confirm(command: str, what: str, question: str, lines: list[str], *,
            yes: bool) -> None:
    """Apply the rule to a command that would ``what`` (``destroy would …``): return to
    go on, or end the run having written nothing — answered no on a terminal (exit 1),
    or nobody to ask and no --yes (:class:`NotConfirmed`, exit 1). ``lines`` (what would
    be replaced, secrets already hidden) are shown above the question."""
    if yes:
        return
    if not can_ask():
        raise NotConfirmed(f"{command} would {what}; {NOTHING_WRITTEN}: answer on a "
                           "terminal, or pass --yes")
    _ask_or_stop(question, lines)


def _ask_or_stop(question: str, lines: list[str]) -> None:
    """On the terminal: ``lines``, then ``question``; anything but yes ends the run
    (nothing was written, exit 1)."""
    from taosync import ui

    if lines:
        ui.home_header()  # under --home: which directory ~/ means
    for line in lines:
        ui.problem(line)
    if ask(question):
        return
    ui.problem(NOTHING_WRITTEN)
    import click

    raise click.exceptions.Exit(1)


# -- apply onto values the user already had ----------------------------------------------

def replaced_values(ctx, state, plan) -> list[dict]:
    """The values an apply would replace that the user had before taosync owned their
    key (engine/drift.py replaced_existing), each as shown — secrets as
    ``(sensitive value)``, paths as ``~/…`` under the home: ``path``, ``display``,
    ``key``, ``old``, ``new``, ``secret`` (docs/json.md, ``replaced``)."""
    from taosync.engine.drift import replaced_existing
    from taosync.fleet.secrets import shown
    from taosync.paths import display_path

    home = ctx.settings.home_dir
    return [{"path": str(fp.path), "display": display_path(fp.path, home), "key": c.path,
             "old": shown(c.old, c.secret, ctx.key), "new": shown(c.new, c.secret, ctx.key),
             "secret": c.secret}
            for fp, c in replaced_existing(state, plan)]


def _files(replaced: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["display"] for r in replaced))


def confirm_replacing(replaced: list[dict], *, yes: bool) -> bool:
    """An apply over values the user had: on a terminal list them and ask ``Replace these
    N values? [y/N]``; --yes or no terminal goes on. Returns whether a person saw them
    (else the run ends with :func:`replaced_line`)."""
    if not replaced or yes or not can_ask():
        return False
    lines = ["values you have now that apply would replace (taosync did not write them):"]
    for file in _files(replaced):
        lines.append(f"  {file}")
        lines += [f"    {r['key']}: {_value(r['old'], r['secret'])} → "
                  f"{_value(r['new'], r['secret'])}" for r in replaced if r["display"] == file]
    n = len(replaced)
    _ask_or_stop(f"Replace {'this value' if n == 1 else f'these {n} values'}?", lines)
    return True


def _value(v, secret: bool) -> str:
    """A value as the question shows it: quoted, but a hidden secret as its stand-in
    (``(sensitive value)``, ``sk-…ab12``)."""
    return repr(v) if isinstance(v, str) and not secret else str(v)


def replaced_line(result, replaced: list[dict], *, verify_failed: bool) -> str | None:
    """The apply's last line when nobody confirmed on a terminal (or verify failed):
    what was written and replaced, and the exact command that undoes it."""
    written = len(result.written) if result is not None else 0
    if not result or not result.apply_id or not (replaced or verify_failed):
        return None
    n, files = len(replaced), _files(replaced)
    what = f"apply #{result.apply_id} wrote {written} file{'s' if written != 1 else ''}"
    if replaced:
        what += (f", replacing {n} value{'s' if n != 1 else ''} you had in "
                 f"{', '.join(files)}")
    head = "verify failed: " if verify_failed else ""
    return f"{head}{what}; to undo it: {again('rollback')}"
