"""``taosync where``: which fleet.yaml, includes, state directory and home are in effect,
and why — the lookup of settings.py spelled out, for "why does it not see my fleet?".

Diagnostic only: it never resolves the key and never writes; a missing fleet.yaml is an
answer (where it looked), not an error.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from taosync.settings import common_options, current
from taosync.hints import again


@click.command("where", epilog="""\b
Examples:
  taosync where                 # fleet.yaml, its includes, state directory, home
  taosync where --json
  TAOSYNC_CONFIG=~/team/fleet.yaml taosync where
""")
@common_options
def where():
    """Show which fleet.yaml and state directory are in effect, and why (alias: source-path).

    fleet.yaml is the first of: -c, $TAOSYNC_CONFIG, ./fleet.yaml (when it exists),
    $XDG_CONFIG_HOME/taosync/fleet.yaml (~/.config when unset). The state lives in
    $XDG_STATE_HOME/taosync (~/.local/state when unset), under --home when given.
    Never resolves the key; a missing fleet.yaml is reported, not an error.
    """
    from taosync import ui
    from taosync.paths import display_path

    s = current()
    home = s.home_dir
    answer: dict[str, Any] = {"config": config_lookup(s), "includes": None, "includes_error": None,
              "state": state_lookup(s),
              "home": {"path": str(home),
                       "reason": "--home" if s.sandboxed else "$HOME"}}
    config = answer["config"]
    if config["exists"]:
        answer["includes"], answer["includes_error"] = includes(s, config["path"])
    if s.json:
        ui.emit_json(answer)
        return 0

    def shown(path: str) -> str:
        return display_path(path, home)

    mark = "" if config["exists"] else "  (not found)"
    ui.echo(f"fleet.yaml  {shown(config['path'])}{mark}")
    ui.echo(f"  because   {config['reason']}")
    if not config["exists"]:
        ui.echo("  looked at:")
        for place in config["searched"]:
            ui.echo(f"    {place['source']}: {shown(place['path']) if place['path'] else 'unset'}"
                    + ("" if place["path"] is None else
                       "  (exists)" if place["exists"] else "  (missing)"))
        ui.echo(f"  `{again('init')}` writes a starter there")
    elif answer["includes"] is None:
        ui.echo(f"  includes  unknown: {answer['includes_error']} (`{again('validate')}` says more)")
    elif answer["includes"]:
        for inc in answer["includes"]:
            ui.echo(f"  includes  {shown(inc)}")
    else:
        ui.echo("  includes  none")
    state = answer["state"]
    ui.echo(f"state       {shown(state['path'])}" + ("" if state["exists"] else
                                                     "  (not yet: the first apply makes it)"))
    ui.echo(f"  because   {state['reason']}")
    ui.echo(f"home        {home}  ({answer['home']['reason']})")
    return 0


def config_lookup(s) -> dict:
    """The fleet.yaml in effect (as Settings.config_path finds it), why, and every place
    the lookup considers, in its order."""
    from pathlib import Path

    from taosync.engine.system import environ

    env_value = environ().get("TAOSYNC_CONFIG") or None
    xdg = s.client_env().location("XDG_CONFIG_HOME")
    default = s.default_config_path()
    searched: list[dict[str, Any]] = [
        {"source": "-c", "path": str(s.config) if s.config is not None else None},
        {"source": "$TAOSYNC_CONFIG", "path": env_value},
        {"source": "./fleet.yaml", "path": str(Path("fleet.yaml").absolute())},
        {"source": "$XDG_CONFIG_HOME/taosync/fleet.yaml" if xdg else
         "~/.config/taosync/fleet.yaml ($XDG_CONFIG_HOME unset)", "path": str(default)},
    ]
    for place in searched:
        place["exists"] = place["path"] is not None and _exists(place["path"])
    path, chosen_by = s.config_choice()
    reason = {
        "-c": "-c/--config was given",
        "$TAOSYNC_CONFIG": "$TAOSYNC_CONFIG is set",
        "./fleet.yaml": "./fleet.yaml exists in the current directory (and no -c, no "
                        "$TAOSYNC_CONFIG)",
    }.get(chosen_by) or ("the default: no -c, no $TAOSYNC_CONFIG, no ./fleet.yaml"
                         + ("; $XDG_CONFIG_HOME is set" if xdg else ""))
    path = Path(path).absolute()
    return {"path": str(path), "reason": reason, "exists": _exists(path),
            "searched": searched}


def state_lookup(s) -> dict:
    """The state directory in effect and why (Settings.state_dir)."""
    from taosync.engine.system import environ

    var = "LOCALAPPDATA" if sys.platform == "win32" else "XDG_STATE_HOME"
    default = "~/AppData/Local" if sys.platform == "win32" else "~/.local/state"
    path = s.state_dir()
    env = s.user_env()  # a profile's state lives under the user scope's directory
    if env.location(var) is not None:
        reason = f"${var} is set"
    elif environ().get(var):
        reason = f"${var} points outside --home, so it is ignored: {default}/taosync"
    else:
        reason = f"the default: ${var} is unset, so {default}/taosync"
    if s.sandboxed:
        reason += " (under --home)"
    if s.system_scope:  # settings.py: the managed scope's own state
        reason = ("--system as root: the machine's own, not a home's" if path != s.user_state_dir() / "system"
                  else f"--system: system/ in the user's state directory ({reason})")
    profile = s.profile_name()
    if profile is not None:
        reason += f"; profile {profile}'s own state below it (profiles/{profile})"
    return {"path": str(path), "reason": reason, "exists": _exists(path)}


def includes(s, path: str) -> tuple[list[str] | None, str | None]:
    """Every file fleet.yaml ``include:``s (transitively), read without the key; or
    (None, why) when it does not load."""
    from pathlib import Path

    from taosync.errors import TaosyncError
    from taosync.fleet.load import load_fleet

    try:
        loaded = load_fleet(Path(path), home=s.home_dir, environ=s.client_env().environ,
                            resolve_key=False, model=False)
    except TaosyncError as exc:
        first = exc.message.splitlines()[0] if exc.message else type(exc).__name__
        return None, first
    return [p for p, _sha in loaded.sources[1:]], None


def _exists(path) -> bool:
    from pathlib import Path

    from taosync.privilege import invoker_rights

    with invoker_rights():
        return Path(path).exists()
