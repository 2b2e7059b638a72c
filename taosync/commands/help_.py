"""``taosync help [CMD]``: the same text as ``taosync CMD --help`` (no CMD: ``taosync
--help``), for users of git, chezmoi and terraform who type ``help`` first."""

from __future__ import annotations

import click

from taosync.settings import common_options, current


def _complete(ctx, param, incomplete):
    """The group's command names (cli.py is above the commands: asked through click)."""
    root = ctx.find_root()
    return [name for name in root.command.list_commands(root)
            if name.startswith(incomplete) and name != "diff"]


@click.command("help", epilog="""\b
Examples:
  taosync help            # the list of commands (= taosync --help)
  taosync help apply      # = taosync apply --help
""")
@common_options
@click.argument("command", required=False, metavar="[CMD]", shell_complete=_complete)
def help_(command):
    """Show the help of CMD (= taosync CMD --help); no CMD: every command."""
    from taosync import ui
    from taosync.errors import BadInput

    root = click.get_current_context().find_root()
    group = root.command
    assert isinstance(group, click.Group)  # taosync's command group
    if command is None:
        name, text = None, root.get_help()
    else:
        names = group.list_commands(root)
        cmd = group.get_command(root, command) if command in names else None
        if cmd is None:
            from taosync.fleet.problems import closest

            hint = closest(command, [n for n in names if n != "diff"])
            raise BadInput(f"no such command '{command}'"
                           + (f"; did you mean '{hint}'?" if hint else "")
                           + " (taosync help lists them)")
        with click.Context(cmd, info_name=command, parent=root) as sub:
            name, text = command, cmd.get_help(sub)
    if current().json:
        ui.emit_json({"command": name, "text": text})
    else:
        click.echo(text)
    return 0
