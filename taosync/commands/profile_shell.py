"""Profiles in a shell (docs/profiles.md): ``taosync exec NAME -- CMD …`` runs a command
inside a profile's isolated instance; ``taosync env --profile NAME`` prints the exports
that make a shell (or direnv) use one, and ``taosync env --aliases`` prints a
``claude-work``-style alias (a function for fish and PowerShell) per profile × client.

The variables come from the clients' ``ISOLATION`` declarations
(taosync/clients/isolation.py); the profile's name is checked against fleet.yaml (an
unknown one is bad input, listing the profiles), and its root is the settings'.
"""

from __future__ import annotations

import os
import sys

import click

from taosync.settings import common_options, current


def profile_data(name: str | None) -> dict:
    """fleet.yaml's data with profile ``name`` merged (checked: an unknown profile is bad
    input, located), without resolving the key."""
    from taosync.fleet.load import load_fleet

    s = current()
    return load_fleet(s.config_path(), home=s.home_dir, resolve_key=False, model=False,
                      profile=name).data


def isolation_exports(name: str) -> dict[str, str]:
    """What ``env --profile NAME`` adds: each client's isolation variable (not HOME: a
    shell keeps its own) and TAOSYNC_PROFILE, so a taosync run in that shell acts on it."""
    from taosync.clients import isolation

    out = isolation.variables(current().profile_root(name))
    out[isolation.PROFILE_VAR] = name
    return out


def home_note(name: str) -> str:
    from taosync.clients import isolation

    binaries = isolation.binaries()
    names = ", ".join(binaries[c] for c in isolation.home_clients())
    return (f"{names} run isolated only with a home of their own: "
            f"taosync exec {name} -- {binaries[isolation.home_clients()[0]]} …, or "
            "taosync env --aliases")


def _enabled(data: dict) -> list[str]:
    """The client ids enabled in merged fleet data (as the view counts them)."""
    from taosync.fleet.schema import load as load_schema
    from taosync.fleet.view import FleetView

    return list(FleetView(data, load_schema()).enabled_clients())


def aliases(shell: str, quote) -> list[str]:
    """One alias (or function) per declared profile × client that profile runs: the client
    with its isolation variables set, any variable that would lead it elsewhere unset
    (``quote``: env's quoting for ``shell``)."""
    from taosync.clients import isolation
    from taosync.clients.registry import all as all_clients
    from taosync.fleet.profiles import declared

    s = current()
    registry = all_clients()
    lines = []
    for name in declared(profile_data(None)):
        root = s.profile_root(name)
        for cid in _enabled(profile_data(name)):
            module = registry[cid]
            if not module.ISOLATION:
                continue
            values = {**isolation.variables(root, cid, home=True),
                      isolation.PROFILE_VAR: name}
            unset = sorted(v for v in (*module.LOCATION_VARS, *module.LOCATION_FILES)
                           if v not in values and v not in ("APPDATA", "LOCALAPPDATA"))
            lines.append(_alias(f"{module.BINARY}-{name}", module.BINARY, values, unset,
                                shell, quote))
    return lines


def _alias(alias: str, binary: str, values: dict[str, str], unset: list[str], shell: str,
           quote) -> str:
    if shell == "fish":
        sets = " ".join(f"{k}={quote(v, shell)}" for k, v in values.items())
        drop = "".join(f"-u {v} " for v in unset)
        return f"function {alias}; env {drop}{sets} {binary} $argv; end"
    if shell == "powershell":
        names = [*values, *unset]
        saved = "; ".join(f"$o{i} = $env:{k}" for i, k in enumerate(names))
        sets = "; ".join([f"$env:{k} = {quote(v, shell)}" for k, v in values.items()]
                         + [f"Remove-Item Env:{k} -ErrorAction Ignore" for k in unset])
        back = "; ".join(f"$env:{k} = $o{i}" for i, k in enumerate(names))
        return (f"function {alias} {{ {saved}; {sets}; try {{ & {binary} @args }} "
                f"finally {{ {back} }} }}")
    drop = "".join(f"-u {v} " for v in unset)
    sets = " ".join(f"{k}={quote(v, shell)}" for k, v in values.items())
    return f"alias {alias}={quote(f'env {drop}{sets} {binary}', shell)}"


@click.command("exec", context_settings={"ignore_unknown_options": True,
                                         "allow_interspersed_args": False},
               epilog="""\b
Examples:
  taosync exec work -- claude -p "Reply with OK."
  taosync exec work -- codex exec "Reply with OK."
  taosync exec home -- aider --message hi      # aider, sgpt, gptme: the root is their HOME
  taosync exec work -- sh -c 'echo $CLAUDE_CONFIG_DIR'
""")
@common_options
@click.argument("name", metavar="NAME")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_(name: str, command: tuple[str, ...]) -> int:
    """Run COMMAND inside profile NAME's isolated instance (its exit code is exec's)."""
    from taosync import ui
    from taosync.clients import isolation
    from taosync.engine.system import environ
    from taosync.errors import BadInput
    from taosync.fleet.profiles import check_name

    s = current()
    if command and command[0] == "--":  # click keeps the separator of unprocessed words
        command = command[1:]
    if not command:
        raise BadInput("exec: no COMMAND: taosync exec NAME -- COMMAND [ARGS…]")
    check_name(name, "exec NAME")
    s.profile = name
    profile_data(name)  # an unknown profile is bad input, located in fleet.yaml
    root = s.profile_root(name)
    if not (s.state_dir() / "state.json").exists():
        ui.warn(f"profile {name!r} was never applied: its clients find no files of it yet "
                f"(taosync apply --profile {name})")
    env = isolation.exec_environ(environ(), name, root, command[0])
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], list(command), env)
    except FileNotFoundError:
        raise BadInput(f"exec: {command[0]}: command not found") from None
    except OSError as exc:
        raise BadInput(f"exec: {command[0]}: {exc.strerror}") from None
    return 0  # not reached: the command replaced this process
