"""``taosync cat PATH``: one client file as taosync would leave it after an apply.

chezmoi's ``cat``: the full render of one target — the file as it is now with the plan's
edits made — from the same plan ``plan`` and ``apply`` make. Nothing is written. Secrets
print as ``(sensitive value)`` through the run's redactor unless ``--reveal``.
"""

from __future__ import annotations

import click

from taosync.settings import common_options, current
from taosync.hints import again


@click.command("cat", epilog="""\b
Examples:
  taosync cat ~/.codex/config.toml          # secrets shown as (sensitive value)
  taosync cat ~/.claude/settings.json --json
  taosync cat ~/.aider.conf.yml --reveal    # the real bytes, secrets included
""")
@common_options
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--reveal", is_flag=True,
              help="Print the file exactly as it would be written, secrets included "
                   "(mind your terminal's scrollback and any pipe).")
def cat(path, reveal):
    """Print one client file as taosync would leave it (secrets hidden; --reveal).

    PATH is ``~/…`` (under --home: that home), relative to the current directory, or
    absolute; it must be a file taosync manages (taosync managed lists them). Writes
    nothing.
    """
    from taosync import pipeline, ui
    from taosync.commands.report import protect, read_only
    from taosync.errors import BadInput

    s = current()
    target = target_path(path, s.home_dir)
    with read_only():
        ctx = pipeline.prepare(s, recover=False)
        state = ctx.store.load()
        protect(ctx, state)
        the_plan = pipeline.make_plan(ctx, state)
    protect(ctx, state, the_plan)
    fp = find(the_plan, target)
    if fp is None:
        raise BadInput(f"{path}: not a file taosync manages here; "
                       f"`{again('managed')}` lists every file it writes"
                       + (" (under --home, ~ means that home: quote it, '~/…', so the "
                          "shell leaves it to taosync)" if s.sandboxed else ""))
    clients = list(fp.clients)
    text = fp.new_text
    if s.json:
        ui.emit_json({"path": str(fp.path),
                      "display": pipeline.display_path(fp.path, s.home_dir),
                      "client": ", ".join(clients), "clients": clients,
                      "action": fp.action, "text": text}, reveal=reveal)
        return 0
    if text is None:
        ui.warn(f"{pipeline.display_path(fp.path, s.home_dir)}: an apply would remove this "
                "file (nothing of it is left but what taosync wrote)")
        return 0
    if reveal:
        click.echo(text, nl=False)
        return 0
    for line in text.splitlines():
        ui.echo(line)
    return 0


def target_path(path: str, home):
    """PATH as the plan names files: ``~`` is the run's home, a relative path is from
    the current directory."""
    import os
    from pathlib import Path

    if path == "~" or path.startswith(("~/", "~" + os.sep)):
        p = Path(home) / path[2:]
    else:
        p = Path(path)
    return Path(os.path.abspath(p))


def find(the_plan, target):
    """The plan's file at ``target`` (as the client addresses it, or after its links)."""
    import os
    from pathlib import Path

    wanted = str(target)
    real = os.path.realpath(target)
    for fp in the_plan.files:
        if os.path.abspath(fp.path) == wanted or os.path.realpath(fp.path) == real \
                or (fp.real_path is not None and os.path.abspath(Path(fp.real_path)) == real):
            return fp
    return None
