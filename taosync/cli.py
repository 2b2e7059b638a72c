"""The command line: a thin click group, global options, lazy command modules.

Every command lives in ``taosync/commands/<name>.py`` and is imported only when run,
so ``taosync validate`` never pays for httpx or watchdog. The global options and the
run's settings live in :mod:`taosync.settings`. Nothing imports this module but
``__main__``.
"""

from __future__ import annotations

import click

from taosync import __version__
from taosync.errors import INTERNAL_ERROR, TaosyncError
from taosync.settings import common_options, reset

#: command name → "module:attribute"; aliases point at the same command
COMMANDS = {
    "validate": "taosync.commands.validate:validate",
    "schema": "taosync.commands.schema:schema",
    "plan": "taosync.commands.plan:plan",
    "diff": "taosync.commands.plan:plan",
    "apply": "taosync.commands.apply:apply",
    "status": "taosync.commands.status:status",
    "rollback": "taosync.commands.rollback:rollback",
    "log": "taosync.commands.log:log",
    "prune": "taosync.commands.prune:prune",
    "destroy": "taosync.commands.destroy:destroy",
    "managed": "taosync.commands.managed:managed",
    "verify": "taosync.commands.verify:verify",
    "stats": "taosync.commands.stats:stats",
    "doctor": "taosync.commands.doctor:doctor",
    "stub": "taosync.commands.stub:stub",
    "watch": "taosync.commands.watch:watch",
    "init": "taosync.commands.init:init",
    "import": "taosync.commands.import_:import_",
    "route": "taosync.commands.route:route",
    "env": "taosync.commands.env:env",
    "exec": "taosync.commands.profile_shell:exec_",
    "forget": "taosync.commands.forget:forget",
    "use": "taosync.commands.use:use",
    "adopt": "taosync.commands.adopt:adopt",
    "completion": "taosync.commands.completion:completion",
    "cat": "taosync.commands.cat:cat",
    "where": "taosync.commands.where:where",
    "source-path": "taosync.commands.where:where",
    "edit": "taosync.commands.edit:edit",
    "update": "taosync.commands.update:update",
    "help": "taosync.commands.help_:help_",
    "secret": "taosync.commands.secret:secret",
}
#: the second names of commands, left out of the command list (their command says them)
ALIASES = ("diff", "source-path")
HELP = {
    "validate": "Check fleet.yaml; print every problem with its line and column.",
    "schema": "Print the JSON schema of fleet.yaml.",
    "plan": "Show what apply would change in each client file (alias: diff).",
    "apply": "Write the fleet into every client's files, changing only owned keys.",
    "status": "Show drift (owned keys edited on disk) and pending changes; exit 1 when either.",
    "rollback": "Step back one apply (again: one more; --to N, --redo) from the backups.",
    "log": "List applies, rollbacks and watch re-asserts: id, time, files, summary.",
    "prune": "Drop the backups holding secrets no longer in use (--secrets: every old one).",
    "destroy": "Give back every owned key of every client (asks; --yes, --purge).",
    "managed": "List every file and owned key per client, and whether it is on disk.",
    "verify": "Send one real request per backend, shaped as each client sends it.",
    "stats": "Per model (or route): runs, failures, median/p95 latency, TTFB, tokens in/out.",
    "doctor": "Check state, client files and binaries, overrides, proxies, runtimes: ok/warning/error.",
    "stub": "Serve a stand-in gateway on loopback (for demos and tests).",
    "watch": "Re-apply after every save of fleet.yaml; keep owned keys asserted.",
    "init": "Write a commented starter fleet.yaml (PATH, else -c, $TAOSYNC_CONFIG, ./fleet.yaml).",
    "import": "Propose a fleet.yaml from the clients' existing files (on stdout).",
    "route": "Print the model id the routing table gives TASK (no TASK: the whole table).",
    "env": "Print shell exports of the gateway URLs and route models (the key only with --with-key).",
    "exec": "Run COMMAND inside profile NAME's isolated instance (its exit code is exec's).",
    "forget": "Stop managing a client (managed: false); its files stay exactly as they are.",
    "use": "Switch clients to the named gateway NAME (fleet.yaml edited, then applied).",
    "adopt": "Write values you changed in a client's files back into fleet.yaml.",
    "completion": "Print the shell completion script (bash, zsh, fish, powershell).",
    "cat": "Print one client file as taosync would leave it (secrets hidden; --reveal).",
    "where": "Show which fleet.yaml and state directory are in effect, and why (alias: source-path).",
    "edit": "Open fleet.yaml in your editor; validate it on save (--apply: then apply).",
    "update": "Pull the fleet's git repositories (fast-forward only), then apply.",
    "help": "Show the help of CMD (= taosync CMD --help); no CMD: every command.",
    "secret": "Store a key in the OS keyring (set); print one for a client's key command (get).",
}

#: what each exit code means per command (DESIGN.md: 0 ok · 1 the job found a problem ·
#: 2 bad input · 3 could not write; every command: 70 internal error), and one example;
#: shown at the end of every --help
OK, BAD, WRITE = "done", "bad input (an invalid fleet.yaml, a wrong option)", \
    "could not write; nothing was left half-written"
INTERNAL = "internal error (a bug in taosync): please report it"
#: the confirm rule's exit (taosync/confirm.py): nothing was written
NOT_CONFIRMED = "not confirmed: you answered no, or no terminal and no --yes"
EXIT_CODES = {
    "validate": {0: "the fleet is usable (warnings on stderr)", 2: "fleet.yaml is invalid"},
    "schema": {0: OK, 2: BAD, 3: WRITE},
    "plan": {0: "the plan was printed", 1: "with --check: apply would change something",
             2: BAD},
    "apply": {0: "written (and verified)", 1: "a verify probe failed, or nothing was "
              "confirmed (you answered no, or no terminal and a hand edit without --yes)",
              2: BAD, 3: WRITE},
    "status": {0: "in sync", 1: "drift or pending changes", 2: BAD},
    "rollback": {0: OK, 1: NOT_CONFIRMED, 2: BAD + " or nothing to step back", 3: WRITE},
    "log": {0: OK, 2: BAD},
    "prune": {0: OK, 2: BAD, 3: WRITE},
    "destroy": {0: OK, 1: NOT_CONFIRMED, 2: BAD, 3: WRITE},
    "managed": {0: OK, 2: BAD},
    "verify": {0: "every model a client is on answered (a failing standby is a warning)",
               1: "a probe of such a model failed, a route has no healthy candidate, a "
                  "client has no files, or (--strict) a standby failed", 2: BAD},
    "stats": {0: OK, 2: BAD},
    "doctor": {0: "nothing is broken (warnings allowed)",
               1: "an error line; with --project: a project file would send your key away",
               2: BAD},
    "stub": {0: "stopped cleanly", 2: BAD + " or the port is taken"},
    "watch": {0: "stopped cleanly (Ctrl-C, SIGTERM)", 2: BAD, 3: WRITE},
    "init": {0: OK, 2: BAD + " or the file exists (--force)", 3: WRITE},
    "import": {0: "a clean proposal", 1: "a proposal with conflicts, or none", 2: BAD},
    "route": {0: "the model id (or the table) was printed",
              1: "no route TASK (without --default)", 2: BAD},
    "env": {0: OK, 2: BAD + " (or no such profile)"},
    "exec": {0: "COMMAND's own exit code, whatever it is (COMMAND replaces taosync)",
             2: BAD + ", no such profile, or COMMAND not found"},
    "forget": {0: OK, 2: BAD, 3: WRITE},
    "use": {0: "switched (fleet.yaml edited and applied)", 1: "as apply's 1",
            2: BAD + ", no such gateway, or a client it cannot serve (nothing written)",
            3: WRITE},
    "adopt": {0: OK, 1: NOT_CONFIRMED, 2: BAD, 3: WRITE},
    "completion": {0: OK, 2: BAD},
    "cat": {0: "the file was printed", 2: BAD + " or PATH is no file taosync manages"},
    "where": {0: "printed (also when no fleet.yaml is found: where it looked)", 2: BAD},
    "edit": {0: "saved (and, with --apply, applied)", 1: "with --apply: as apply's 1",
             2: BAD + ", or the edit does not validate (it is kept in the file)", 3: WRITE},
    "update": {0: "pulled and applied", 1: "a pull failed (nothing applied), or as apply's 1",
               2: BAD + ", local changes in a repository (nothing pulled), or the fleet "
                  "does not validate after the pull (nothing applied)", 3: WRITE},
    "help": {0: OK, 2: BAD + " or no such command (did you mean …)"},
    "secret": {0: OK, 2: BAD + ", no keyring library, a reference that does not resolve, or "
                          "(get) stdout is a terminal", 3: "the keyring refused the value"},
}
EXAMPLES = {
    "validate": "taosync validate --json",
    "schema": "taosync schema > fleet.schema.json",
    "plan": "taosync plan --check",
    "apply": "taosync apply --only codex --dry-run",
    "status": "taosync status --json",
    "rollback": "taosync rollback",
    "log": "taosync log",
    "prune": "taosync prune --dry-run",
    "destroy": "taosync destroy --yes",
    "managed": "taosync managed --json",
    "verify": "taosync verify --only claude-code",
    "stats": "taosync stats --by route --since 1d",
    "doctor": "taosync doctor",
    "stub": "taosync stub --port 8787",
    "watch": "taosync watch",
    "init": "taosync init ~/fleet.yaml",
    "import": "taosync import > fleet.yaml",
    "route": "model=$(taosync route fast)",
    "env": "eval \"$(taosync env)\"",
    "exec": "taosync exec work -- claude",
    "forget": "taosync forget aider",
    "use": "taosync use work",
    "adopt": "taosync adopt --dry-run",
    "completion": "eval \"$(taosync completion bash)\"",
    "cat": "taosync cat ~/.codex/config.toml",
    "where": "taosync where --json",
    "edit": "taosync edit --apply",
    "update": "taosync update",
    "help": "taosync help apply",
    "secret": "taosync secret set gateway",
}


def help_epilog(name: str) -> str:
    """The "Exit codes" and "Example" sections of ``taosync NAME --help``."""
    name = {"diff": "plan", "source-path": "where"}.get(name, name)
    codes = "\n".join(f"  {code}  {meaning}" for code, meaning in
                      {**EXIT_CODES[name], INTERNAL_ERROR: INTERNAL}.items())
    return f"\b\nExit codes:\n{codes}\n\n\b\nExample:\n  {EXAMPLES[name]}"


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        import importlib

        command = getattr(importlib.import_module(module_name), attr)
        if not getattr(command, "exit_codes_shown", False):  # once, after its own epilog
            command.epilog = "\n\n".join(filter(None, [command.epilog, help_epilog(name)]))
            command.exit_codes_shown = True
        return command

    def resolve_command(self, ctx, args):
        """A mistyped command gets "did you mean" (click only says it does not exist)."""
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-") \
                and not ctx.resilient_parsing:
            from taosync.fleet.problems import closest

            hint = closest(name, [c for c in COMMANDS if c != "diff"])
            ctx.fail(f"No such command '{name}'." + (f" Did you mean '{hint}'?" if hint else "")
                     + " (taosync --help lists them)")
        if name and not ctx.resilient_parsing:
            from taosync.settings import project_command

            project_command(name)  # --project before the command's name
        return super().resolve_command(ctx, args)

    def _main_shell_completion(self, ctx_args, prog_name, complete_var=None):
        import os

        if any(var.startswith("_TAOSYNC_COMPLETE") for var in os.environ):
            import taosync.commands.completion  # noqa: F401 - adds PowerShell to click's shells
        return super()._main_shell_completion(ctx_args, prog_name, complete_var)

    def format_commands(self, ctx, formatter):
        rows = [(name, HELP.get(name, "")) for name in COMMANDS if name not in ALIASES]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="taosync")
@common_options
def main():
    """Keep every AI coding client pointed at one LLM gateway.

    One fleet.yaml declares the gateway, the key reference, the model catalogue and
    the routes; taosync renders it into each client's own files and proves it works.
    """


def _certify() -> None:
    """After an apply (it asks, through its settings): answer the fast path's command
    forms once more on a recording System and save the certificate the fast path
    replays (engine/certificate.py). Not inside a certified run itself."""
    from taosync import settings

    s = settings.current()
    if getattr(s, "certify", False):
        from taosync.engine import certificate

        if not certificate.certifying():
            try:
                certificate.certify(s, run)
            except (OSError, TaosyncError):
                pass  # only a shortcut: the next run takes the full path
            settings.reset()


def run(argv: list[str]) -> int:
    """Run the CLI (:func:`_run`); what it read from password stores is forgotten when the
    outermost run ends (fleet/stores.py: each reference is read once per run)."""
    from taosync.fleet import stores

    stores.enter()
    try:
        return _run(argv)
    finally:
        stores.leave()


def _run(argv: list[str]) -> int:
    """Run the CLI; map taosync errors to their exit codes, never a traceback for them,
    and any other exception (a bug) to 70, its traceback only with -v."""
    reset()
    try:
        rc = main.main(args=argv, prog_name="taosync", standalone_mode=False)
        _certify()
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        if "--json" in argv and exc.exit_code == 2:  # a usage error keeps the JSON contract
            from taosync import ui
            from taosync.errors import BadInput

            ui.fail(BadInput(exc.format_message()), force_json=True)
        else:
            exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except TaosyncError as exc:
        from taosync import ui

        ui.fail(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: its own exit code, a one-line report, no traceback
        from taosync import ui

        ui.internal_error(exc)
        return INTERNAL_ERROR
    return rc if isinstance(rc, int) else 0
