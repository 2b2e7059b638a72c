"""The command line: a thin click group, global options, lazy command modules.

Every command lives in ``taosync/commands/<name>.py`` and is imported only when run,
so ``taosync validate`` never pays for httpx or watchdog. The global options work
before or after the command name (``taosync --home D plan --json`` ==
``taosync plan --home D --json``): each command carries them too and both spellings
land in the same :class:`Settings`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from taosync import __version__
from taosync.errors import TaosyncError

#: command name → "module:attribute"; aliases point at the same command
COMMANDS = {
    "validate": "taosync.commands.validate:validate",
    "schema": "taosync.commands.schema:schema",
    "plan": "taosync.commands.plan:plan",
    "diff": "taosync.commands.plan:plan",
    "apply": "taosync.commands.apply:apply",
    "status": "taosync.commands.status:status",
    "rollback": "taosync.commands.rollback:rollback",
    "verify": "taosync.commands.verify:verify",
    "stats": "taosync.commands.stats:stats",
    "doctor": "taosync.commands.doctor:doctor",
    "stub": "taosync.commands.stub:stub",
    "watch": "taosync.commands.watch:watch",
    "init": "taosync.commands.init:init",
    "import": "taosync.commands.import_:import_",
    "route": "taosync.commands.route:route",
    "env": "taosync.commands.env:env",
}
HELP = {
    "validate": "Check fleet.yaml; print every problem with its line and column.",
    "schema": "Print the JSON schema of fleet.yaml.",
    "plan": "Show what apply would change in each client file (alias: diff).",
    "apply": "Write the fleet into every client's files, changing only owned keys.",
    "status": "Show drift (owned keys edited on disk) and pending changes; exit 1 when either.",
    "rollback": "Restore the files of the last (or --to N-th) apply from its backups.",
    "verify": "Send one real request per backend, shaped as each client sends it.",
    "stats": "Per model: runs, failures, median latency, tokens (from verify history).",
    "doctor": "Check local runtimes and environment overrides before blaming the gateway.",
    "stub": "Serve a stand-in gateway on loopback (for demos and tests).",
    "watch": "Re-apply after every save of fleet.yaml; keep owned keys asserted.",
    "init": "Write a commented starter fleet.yaml (PATH, else -c, $TAOSYNC_CONFIG, ./fleet.yaml).",
    "import": "Propose a fleet.yaml from the clients' existing files (on stdout).",
    "route": "Print the model id the routing table gives TASK (no TASK: the whole table).",
    "env": "Print shell exports of the gateway URLs and route models (the key only with --with-key).",
}


@dataclass
class Settings:
    """What the global options say, shared by every command."""

    config: Path | None = None
    home: Path | None = None
    json: bool = False
    verbosity: int = 0  # -1 quiet, 0 normal, 1+ verbose
    color: bool = field(default_factory=lambda: "NO_COLOR" not in os.environ
                        and sys.stdout.isatty())

    @property
    def sandboxed(self) -> bool:
        return self.home is not None

    @property
    def home_dir(self) -> Path:
        """--home, else $HOME; an empty or unset HOME is bad input rather than ``/`` (a
        stripped environment, a service) — taosync would write at the root."""
        if self.home is not None:
            return self.home
        if sys.platform != "win32" and not os.environ.get("HOME"):
            from taosync.errors import BadInput

            raise BadInput("HOME is empty or unset: pass --home DIR")
        return Path.home()

    def client_env(self):
        from taosync.clients.base import ClientEnv

        return ClientEnv(home=self.home_dir, sandboxed=self.sandboxed)

    def _location(self, var: str) -> Path | None:
        return self.client_env().location(var)

    def config_path(self) -> Path:
        """-c, else $TAOSYNC_CONFIG, else ./fleet.yaml, else $XDG_CONFIG_HOME/taosync/fleet.yaml."""
        if self.config is not None:
            return self.config
        env = os.environ.get("TAOSYNC_CONFIG")
        if env:
            return Path(env)
        local = Path("fleet.yaml")
        if local.exists():
            return local
        base = self._location("XDG_CONFIG_HOME") or self.home_dir / ".config"
        return base / "taosync" / "fleet.yaml"

    def state_dir(self) -> Path:
        """$XDG_STATE_HOME/taosync (or %LOCALAPPDATA%\\taosync), under --home when given."""
        if sys.platform == "win32":
            base = self._location("LOCALAPPDATA") or self.home_dir / "AppData" / "Local"
            return base / "taosync"
        base = self._location("XDG_STATE_HOME") or self.home_dir / ".local" / "state"
        return base / "taosync"


_last: Settings | None = None


def _settings() -> Settings:
    """The run's settings; after the click context has closed (errors raised out of a
    command are printed then), the ones that run used."""
    global _last
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return _last if _last is not None else Settings()
    root = ctx.find_root()
    if root.obj is None:
        root.obj = Settings()
    _last = root.obj
    return root.obj


def _store(attr: str, convert=None):
    def callback(ctx, param, value):
        if value is None or value is False or value == 0:
            return
        setattr(_settings(), attr, convert(value) if convert else value)
    return callback


def _verbosity(sign: int):
    def callback(ctx, param, value):
        if value:
            _settings().verbosity = sign * value
    return callback


def common_options(f):
    """The global options, attached to the group and to every command."""
    opts = [
        click.option("-c", "--config", type=click.Path(dir_okay=False, path_type=Path),
                     expose_value=False, callback=_store("config"),
                     help="fleet.yaml to use (else $TAOSYNC_CONFIG, ./fleet.yaml, "
                          "$XDG_CONFIG_HOME/taosync/fleet.yaml)."),
        click.option("--home", type=click.Path(file_okay=False, path_type=Path),
                     expose_value=False, callback=_store("home", lambda p: p.expanduser().absolute()),
                     help="Use DIR as the home directory for every client file and for "
                          "taosync's state (sandboxes, dotfiles CI, tests)."),
        click.option("--json", "json_", is_flag=True, expose_value=False,
                     callback=_store("json"), help="Machine-readable output."),
        click.option("-q", "--quiet", count=True, expose_value=False,
                     callback=_verbosity(-1), help="Print only problems."),
        click.option("-v", "--verbose", count=True, expose_value=False,
                     callback=_verbosity(1), help="Print more."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        import importlib

        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, HELP.get(name, "")) for name in COMMANDS if name != "diff"]
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


def settings() -> Settings:
    """The current command's settings (for command modules)."""
    return _settings()


def run(argv: list[str]) -> int:
    """Run the CLI; map taosync errors to their exit codes, never a traceback for them."""
    global _last
    _last = None
    try:
        rc = main.main(args=argv, prog_name="taosync", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
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
    return rc if isinstance(rc, int) else 0
