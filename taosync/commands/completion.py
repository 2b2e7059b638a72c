"""``taosync completion SHELL``: the shell completion script, from click's machinery.

click completes bash, zsh and fish; :class:`PowerShellComplete` adds PowerShell to the
same protocol (the script calls ``taosync`` with ``_TAOSYNC_COMPLETE=powershell_complete``
and the command line in ``COMP_LINE``). The group in cli.py imports this module only when
a completion variable is set, so an ordinary run never pays for it.
"""

from __future__ import annotations

import os

import click
from click.shell_completion import (CompletionItem, ShellComplete, add_completion_class,
                                    get_completion_class, split_arg_string)

from taosync.settings import common_options, current

SHELLS = ("bash", "zsh", "fish", "powershell")
PROG = "taosync"
COMPLETE_VAR = "_TAOSYNC_COMPLETE"

_SOURCE_POWERSHELL = """\
Register-ArgumentCompleter -Native -CommandName %(prog_name)s -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $line = $commandAst.ToString()
    $upTo = $cursorPosition - $commandAst.Extent.StartOffset
    if ($upTo -lt $line.Length) { $line = $line.Substring(0, $upTo) }
    $env:%(complete_var)s = "powershell_complete"
    $env:COMP_LINE = $line
    $env:COMP_INCOMPLETE = $wordToComplete
    try {
        %(prog_name)s | ForEach-Object {
            [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
        }
    } finally {
        Remove-Item Env:%(complete_var)s, Env:COMP_LINE, Env:COMP_INCOMPLETE -ErrorAction SilentlyContinue
    }
}
"""


class PowerShellComplete(ShellComplete):
    """PowerShell: the command line up to the cursor and the word being completed."""

    name = "powershell"
    source_template = _SOURCE_POWERSHELL

    def get_completion_args(self) -> tuple[list[str], str]:
        words = split_arg_string(os.environ.get("COMP_LINE", ""))[1:]
        incomplete = os.environ.get("COMP_INCOMPLETE", "")
        if incomplete and words and words[-1] == incomplete:
            words = words[:-1]
        return words, incomplete

    def format_completion(self, item: CompletionItem) -> str:
        return item.value


add_completion_class(PowerShellComplete)

INSTALL = """\b
Install (then open a new shell):
  bash:        taosync completion bash > ~/.local/share/bash-completion/completions/taosync
  zsh:         taosync completion zsh > "${fpath[1]}/_taosync"
               (or: eval "$(taosync completion zsh)" in ~/.zshrc)
  fish:        taosync completion fish > ~/.config/fish/completions/taosync.fish
  powershell:  taosync completion powershell | Out-String | Invoke-Expression
               (add that line to $PROFILE to keep it)

\b
Completes commands (also help CMD), options, client ids (--only, forget, adopt), route
names (--route, route TASK), catalogue model ids (--model), choices (--shell, --drift) and
file paths (cat PATH)."""


@click.command("completion", epilog=INSTALL)
@common_options
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> int:
    """Print the shell completion script (bash, zsh, fish, powershell)."""
    from taosync import ui

    root = click.get_current_context().find_root().command
    completer = get_completion_class(shell)
    assert completer is not None  # click.Choice(SHELLS): a shell click completes
    complete = completer(root, {}, PROG, COMPLETE_VAR)
    if current().json:
        ui.emit_json({"shell": shell, "script": complete.source()})
    else:
        click.echo(complete.source())
    return 0
