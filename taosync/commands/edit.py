"""``taosync edit [--apply]``: open the fleet.yaml in effect in the user's editor, check it
when the editor exits, and (``--apply``) apply it once it is valid.

chezmoi's ``edit``, with ``crontab -e``'s loop. The file is edited in place (includes
and the schema comment resolve as they do for every other command), so the user's edit
is never lost: an edit that does not validate stays in the file, its problems are
printed with their lines, and on a terminal the editor is offered again. Without a
terminal (or when the user declines) it ends with exit 2 — never silently: the problems
and the way back into the editor are the last lines. Nothing is applied unless the
fleet is valid.
"""

from __future__ import annotations

import click

from taosync.confirm import APPLY_ASKS, can_ask, yes_option
from taosync.errors import TaosyncError
from taosync.settings import common_options, current

#: editors tried, in order, when neither $VISUAL nor $EDITOR is set
FALLBACK_EDITORS = ("editor", "nano", "vi")
WINDOWS_EDITOR = "notepad"


@click.command("edit", epilog="""\b
Examples:
  taosync edit                  # $VISUAL or $EDITOR; checked when the editor exits
  taosync edit --apply          # and apply it once it is valid
  EDITOR="code --wait" taosync edit
""")
@common_options
@click.option("--apply", "then_apply", is_flag=True,
              help="Apply the fleet when the edited file is valid (as taosync apply does: "
                   "it asks before overwriting your hand edits).")
@click.option("--no-verify", is_flag=True,
              help="With --apply: do not send the verification requests.")
@yes_option(APPLY_ASKS)
def edit(then_apply, no_verify, yes):
    """Open fleet.yaml in your editor; validate it on save (--apply: then apply).

    The editor is $VISUAL, else $EDITOR, else the first of editor, nano, vi found on
    PATH (notepad on Windows), and taosync says which. When the editor exits the file is
    checked (without resolving the key); problems are printed with their lines and, on
    a terminal, you are asked whether to edit again. Your edit is always kept in the
    file: an invalid one ends with exit 2 and nothing applied.
    """
    from pathlib import Path

    from taosync import ui
    from taosync.commands.apply import apply
    from taosync.commands.validate import report_invalid
    from taosync.errors import BadInput
    from taosync.fleet.load import FleetInvalid

    s = current()
    path = Path(s.config_path()).absolute()
    if not path.is_file():
        raise BadInput(f"{path}: no such file (taosync where says which fleet.yaml is in "
                       "effect and where it looked; taosync init writes one)")
    command = editor_command()
    before = path.read_bytes()
    while True:
        _run_editor(command, path)
        if path.read_bytes() == before:
            ui.out(f"{path}: not changed" + ("; nothing applied" if then_apply else ""))
            if s.json:
                ui.emit_json({"file": str(path), "changed": False, "valid": None})
            return 0
        try:
            _check(s, path)
            break
        except FleetInvalid as exc:
            rc = report_invalid(exc)
            if can_ask() and ask_reopen():
                continue
            ui.problem(f"your edit is kept in {path}, which does not validate: nothing "
                       f"{'was applied' if then_apply else 'applies it until it validates'}; "
                       "taosync edit opens it again")
            return rc
    ui.out(f"{path}: saved and valid")
    if not then_apply:
        ui.out("taosync apply writes it into the clients' files")
        if s.json:
            ui.emit_json({"file": str(path), "changed": True, "valid": True})
        return 0
    ctx = click.get_current_context()
    return ctx.invoke(apply, only=(), dry_run=False, no_verify=no_verify, stub=False, yes=yes,
                      force=False, no_key=False, release_moved=False, message=None)


def editor_command() -> list[str]:
    """$VISUAL, else $EDITOR (split as a shell would: ``code --wait``), else the first
    fallback editor on PATH — named on stderr, so the user knows what opened."""
    import shlex
    import shutil
    import sys

    from taosync import ui
    from taosync.engine.system import environ
    from taosync.errors import BadInput

    for var in ("VISUAL", "EDITOR"):
        value = (environ().get(var) or "").strip()
        if value:
            try:
                words = shlex.split(value, posix=sys.platform != "win32")
            except ValueError as exc:
                raise BadInput(f"${var} ({value!r}) cannot be split into a command: {exc}; "
                               "set it to the editor's command, e.g. EDITOR=vi") from None
            if words:
                return words
    names = (WINDOWS_EDITOR,) if sys.platform == "win32" else FALLBACK_EDITORS
    for name in names:
        found = shutil.which(name)
        if found:
            ui.warn(f"neither $VISUAL nor $EDITOR is set: opening {name} (set EDITOR to "
                    "choose another)")
            return [found]
    raise BadInput("neither $VISUAL nor $EDITOR is set and none of "
                   f"{', '.join(names)} is on PATH: set EDITOR (e.g. EDITOR=vi taosync edit)")


def _run_editor(command: list[str], path) -> None:
    """The editor on the user's terminal, waiting for it; one that cannot start is bad
    input, one that fails (vim's :cq) stops the edit with nothing applied."""
    import subprocess

    from taosync.errors import BadInput

    try:
        done = subprocess.run([*command, str(path)])
    except OSError as exc:
        raise BadInput(f"cannot start the editor {command[0]!r} ({exc.strerror or exc}): set "
                       "VISUAL or EDITOR to an editor on PATH") from None
    if done.returncode != 0:
        raise EditorFailed(f"the editor {command[0]!r} exited with {done.returncode}: "
                           f"nothing was checked or applied ({path} keeps what it saved; "
                           "taosync validate checks it)")


class EditorFailed(TaosyncError):
    """The editor reported a failure: the edit is not taken up (exit 1)."""

    exit_code = 1


def _check(s, path) -> None:
    """Raise FleetInvalid unless the file is a valid fleet (the key is not resolved: an
    unset variable in this shell is no fault of the edit; apply resolves it)."""
    from taosync.fleet.load import load_fleet

    load_fleet(path, home=s.home_dir, environ=s.client_env().environ, resolve_key=False,
               model=False)


def ask_reopen() -> bool:
    """Ask whether to open the editor again (yes by default: nothing is replaced by it,
    so it is no confirm of taosync/confirm.py's rule; asked where that rule can ask)."""
    return click.confirm("edit again?", default=True, err=True)
