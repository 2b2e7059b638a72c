"""The run's settings: what the global options say (config, home, state dir, output
mode), shared by the commands and by :mod:`taosync.ui`.

The global options work before or after the command name (``taosync --home D plan``
== ``taosync plan --home D``): :func:`common_options` attaches them to the group and to
every command and both spellings land in the same :class:`Settings`. Standard library
only at import; click is imported where an option or the click context is needed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from taosync.engine.system import current as system, environ
from taosync import hints
from taosync.errors import BadInput


class _Colour:
    """``Settings.color``: what --color said, else decided on first use (FORCE_COLOR,
    NO_COLOR, a terminal): a run that prints nothing styled never asks whether stdout is
    a terminal, so its certified answer (engine/certificate.py) holds on one too."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return None  # the dataclass default: undecided
        value = obj.__dict__.get("_color")
        if value is None:
            value = obj.__dict__["_color"] = color_wanted("auto")
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__["_color"] = value


@dataclass
class Settings:
    """What the global options say, shared by every command."""

    config: Path | None = None
    home: Path | None = None
    json: bool = False
    verbosity: int = 0  # -1 quiet, 0 normal, 1+ verbose
    color: bool | None = _Colour()  # type: ignore[assignment]
    #: under --home, the line saying which directory ``~/`` means was printed (ui.py)
    home_shown: bool = field(default=False, repr=False, compare=False)
    #: certify this run's no-op answers when it ends (apply sets it; cli.py, engine/certificate.py)
    certify: bool = field(default=False, repr=False, compare=False)
    #: --profile NAME (else $TAOSYNC_PROFILE): the isolated instance this run acts on, with
    #: its own client files and state (docs/profiles.md, taosync/clients/isolation.py)
    profile: str | None = None

    @property
    def sandboxed(self) -> bool:
        return self.home is not None

    @property
    def home_dir(self) -> Path:
        """--home, else $HOME; an empty or unset HOME is bad input rather than ``/`` (a
        stripped environment, a service) — taosync would write at the root."""
        if self.home is not None:
            return self.home
        if sys.platform != "win32" and not environ().get("HOME"):
            raise BadInput("HOME is empty or unset: pass --home DIR")
        return Path.home()

    def client_env(self):
        """Where client files live; its environment is the System's (a certified run
        records each variable a client looks at). Under a profile: the profile's root,
        each client's isolation variable pointing into it."""
        env = self.user_env()
        name = self.profile_name()
        if name is None:
            return env
        from taosync.clients.isolation import profile_env

        return profile_env(env, name, self.profile_root(name))

    def user_env(self):
        """The user scope's ClientEnv (a profile's root and state are found from it)."""
        from taosync.clients.base import ClientEnv
        from taosync.privilege import act_for_home

        act_for_home(self.home_dir)  # root on another user's home acts with their rights
        return ClientEnv(home=self.home_dir, sandboxed=self.sandboxed,
                         environ=environ().copy())

    def _location(self, var: str) -> Path | None:
        return self.user_env().location(var)

    # -- profiles (docs/profiles.md) -------------------------------------------------------

    def profile_name(self) -> str | None:
        """--profile, else $TAOSYNC_PROFILE (``taosync exec`` and ``env --profile`` set
        it), else None: the user scope. A name that is no safe directory name is bad input."""
        name = self.profile or environ().get("TAOSYNC_PROFILE") or None
        if name is not None:
            from taosync.fleet.profiles import check_name

            check_name(name, "--profile" if self.profile else "$TAOSYNC_PROFILE")
        return name

    def profile_root(self, name: str) -> Path:
        """The profile's config root: $XDG_DATA_HOME/taosync/profiles/NAME (under --home
        when given); its clients' files live there, as under a home of their own."""
        if sys.platform == "win32":
            base = self._location("LOCALAPPDATA") or self.home_dir / "AppData" / "Local"
        else:
            base = self._location("XDG_DATA_HOME") or self.home_dir / ".local" / "share"
        return base / "taosync" / "profiles" / name

    def config_path(self) -> Path:
        """-c, else $TAOSYNC_CONFIG, else ./fleet.yaml, else $XDG_CONFIG_HOME/taosync/fleet.yaml."""
        return self.config_choice()[0]

    def config_choice(self) -> tuple[Path, str]:
        """The fleet.yaml in effect and what chose it: ``-c``, ``$TAOSYNC_CONFIG``,
        ``./fleet.yaml`` (it exists) or ``default`` (``taosync where`` says which)."""
        if self.config is not None:
            return self.config, "-c"
        env = environ().get("TAOSYNC_CONFIG")
        if env:
            return Path(env), "$TAOSYNC_CONFIG"
        from taosync.privilege import invoker_rights

        local = Path("fleet.yaml")
        with invoker_rights():  # the invoker's fleet, in the invoker's directory
            here = system().exists(local)
        if here:
            return local, "./fleet.yaml"
        return self.default_config_path(), "default"

    def default_config_path(self) -> Path:
        base = self._location("XDG_CONFIG_HOME") or self.home_dir / ".config"
        return base / "taosync" / "fleet.yaml"

    def state_dir(self) -> Path:
        """$XDG_STATE_HOME/taosync (or %LOCALAPPDATA%\\taosync), under --home when given."""
        if sys.platform == "win32":
            base = self._location("LOCALAPPDATA") or self.home_dir / "AppData" / "Local"
            return self._scoped(base / "taosync")
        base = self._location("XDG_STATE_HOME") or self.home_dir / ".local" / "state"
        return self._scoped(base / "taosync")

    def _scoped(self, state: Path) -> Path:
        """A profile's state lives apart: state_dir()/profiles/NAME."""
        name = self.profile_name()
        return state if name is None else state / "profiles" / name


def _options_in_effect() -> list[str]:
    """The global options a next-step hint repeats (taosync/hints.py): ``--home`` (shown
    as the header shows it) and ``-c``."""
    import shlex

    s = current()
    opts = []
    if s.home is not None:
        from taosync.paths import display_home

        opts += ["--home", shlex.quote(display_home(s.home, system().cwd()))]
    if s.config is not None:
        opts += ["-c", shlex.quote(str(s.config))]
    if s.profile is not None:  # $TAOSYNC_PROFILE is still set for the next command
        opts += ["--profile", shlex.quote(s.profile)]
    return opts


hints.provide(_options_in_effect)


def color_wanted(mode: str) -> bool:
    """--color always/never; auto: FORCE_COLOR (non-empty, not 0) forces it, NO_COLOR
    (only when non-empty, as no-color.org says) turns it off, else a terminal gets it."""
    if mode != "auto":
        return mode == "always"
    force = environ().get("FORCE_COLOR", "")
    if force and force.lower() not in ("0", "false"):
        return True
    if environ().get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


_last: Settings | None = None


def current() -> Settings:
    """The run's settings; after the click context has closed (errors raised out of a
    command are printed then), the ones that run used."""
    import click

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
        setattr(current(), attr, convert(value) if convert else value)
    return callback


def _verbosity(sign: int):
    def callback(ctx, param, value):
        if value:
            current().verbosity = sign * value
    return callback


def common_options(f):
    """The global options, attached to the group and to every command."""
    import click

    opts = [
        click.option("-c", "--config", type=click.Path(dir_okay=False, path_type=Path),
                     expose_value=False, callback=_store("config"),
                     help="fleet.yaml to use (else $TAOSYNC_CONFIG, ./fleet.yaml, "
                          "$XDG_CONFIG_HOME/taosync/fleet.yaml)."),
        click.option("--home", type=click.Path(file_okay=False, path_type=Path),
                     expose_value=False, callback=_store("home", lambda p: p.expanduser().absolute()),
                     help="Use DIR as the home directory for every client file and for "
                          "taosync's state (sandboxes, dotfiles CI, tests)."),
        click.option("--profile", metavar="NAME", expose_value=False,
                     callback=_store("profile"),
                     help="Act on profile NAME of fleet.yaml (else $TAOSYNC_PROFILE): its own "
                          "client files and state (docs/profiles.md)."),
        click.option("--json", "json_", is_flag=True, expose_value=False,
                     callback=_store("json"), help="Machine-readable output."),
        click.option("--color", type=click.Choice(["auto", "always", "never"]),
                     expose_value=False, callback=_store("color", color_wanted),
                     help="Colour the output: auto (a terminal, unless NO_COLOR is set; "
                          "FORCE_COLOR forces it), always, never."),
        click.option("-q", "--quiet", count=True, expose_value=False,
                     callback=_verbosity(-1), help="Print only problems."),
        click.option("-v", "--verbose", count=True, expose_value=False,
                     callback=_verbosity(1), help="Print more."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def reset() -> None:
    """Forget the previous run's settings (a new run in the same process starts clean)."""
    global _last
    _last = None
