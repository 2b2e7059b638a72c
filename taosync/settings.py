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
    #: --project [DIR]: the project scope's root (absolute; lane "project", taosync/project.py)
    project: Path | None = None
    #: apply --project --trust: write the clients' trust entries for the project
    trust: bool = field(default=False, repr=False, compare=False)
    #: the trust entries of this project run, as shown (pipeline.project_files)
    trust_entries: list[str] = field(default_factory=list, repr=False, compare=False)
    #: --system: the managed (policy) scope, with a state of its own (docs/system.md)
    system_scope: bool = False
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

        if not self.system_scope:  # --system writes the machine's policy, as root
            act_for_home(self.home_dir)  # root on another user's home acts with their rights
        return ClientEnv(home=self.home_dir, sandboxed=self.sandboxed,
                         environ=environ().copy(),
                         extra_dirs=(self.project,) if self.project is not None else (),
                         system_scope=self.system_scope)

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
        """$XDG_STATE_HOME/taosync (or %LOCALAPPDATA%\\taosync), under --home when given;
        --system: the managed scope's own (/var/lib/taosync for root, else .../system)."""
        if self.system_scope:  # docs/system.md "State"
            import os

            if self.home is None and getattr(os, "geteuid", lambda: -1)() == 0:
                # root: the machine's; $TAOSYNC_SYSTEM_ROOT (tests only) stands for "/"
                # (clients/system.py root_of; settings imports no client module)
                root = Path(environ().get("TAOSYNC_SYSTEM_ROOT") or "/")
                return root / ("ProgramData" if sys.platform == "win32" else "var/lib") / "taosync"
            return self.user_state_dir() / "system"
        return self.user_state_dir()

    def user_state_dir(self) -> Path:
        if sys.platform == "win32":
            base = self._location("LOCALAPPDATA") or self.home_dir / "AppData" / "Local"
            return self._scoped(base / "taosync")
        base = self._location("XDG_STATE_HOME") or self.home_dir / ".local" / "state"
        return self._scoped(base / "taosync")

    def _scoped(self, root: Path) -> Path:
        """The state directory of the scope in force: a project's is its own sub-directory
        (``projects/<16 hex of sha256 of its root>``), a profile's ``profiles/NAME``, so
        neither touches the user's."""
        self.one_scope()
        name = self.profile_name()
        if name is not None:
            return root / "profiles" / name
        if self.project is None:
            return root
        import hashlib

        return root / "projects" / hashlib.sha256(str(self.project).encode()).hexdigest()[:16]

    def one_scope(self) -> None:
        """One scope per run: a project, a profile and the managed (system) scope each have
        files and a state of their own, so two of them at once is bad input."""
        named = [what for what, on in (
            ("--project", self.project is not None),
            ("--profile" if self.profile else "$TAOSYNC_PROFILE", self.profile_name() is not None),
            ("--system", self.system_scope)) if on]
        if len(named) > 1:
            raise BadInput(f"{' and '.join(named)} name {len(named)} scopes: a run acts on "
                           "one (run one, then the other)")


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
    if s.project is not None:
        opts += ["--project", shlex.quote(str(s.project))]
    if s.system_scope:
        opts.append("--system")
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


#: the commands that act on a project scope (docs/project.md); --project elsewhere is bad input
PROJECT_COMMANDS = ("plan", "diff", "apply", "status", "verify", "rollback", "log", "destroy",
                    "doctor")  # doctor --project: the key-redirection guard (docs/guard.md)


def _project(ctx, param, value):
    """--project [DIR]: the project's root (the git root of DIR, else DIR itself)."""
    if value is None:
        return
    current().project = project_root(Path(value))
    if ctx.parent is not None:  # after the command's name
        project_command(ctx.info_name)


def project_command(name: str | None) -> None:
    """--project goes only with a command that acts on a project scope, and one scope per
    run (Settings.one_scope)."""
    s = current()
    s.one_scope()
    if s.project is not None and name not in PROJECT_COMMANDS:
        raise BadInput(f"--project does not go with `{name}`: it works with "
                       f"{', '.join(PROJECT_COMMANDS)} (docs/project.md)")


def project_root(path: Path) -> Path:
    """The project ``--project DIR`` names: the root of the git work tree DIR is in, else
    DIR itself (absolute). Not a directory: bad input."""
    import os
    import subprocess

    where = Path(os.path.abspath(os.path.expanduser(str(path))))
    if not where.is_dir():
        raise BadInput(f"--project {path}: not a directory; name the repository's folder "
                       "(default: the git root of the current directory)")
    try:
        done = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return where
    top = done.stdout.strip() if done.returncode == 0 else ""
    return Path(top) if top else where


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
        click.option("--project", metavar="DIR", is_flag=False, flag_value=".",
                     expose_value=False, callback=_project,
                     help="Project scope: the project files of the repository at DIR "
                          "(default: the git root of the current directory), with its own "
                          "state (docs/project.md)."),
        click.option("--system", is_flag=True, expose_value=False, callback=_store("system_scope"),
                     help="The managed scope: write the fleet as policy into the clients' "
                          "managed files (/etc/claude-code, /etc/codex), with a state of "
                          "its own (docs/system.md)."),
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
