"""``taosync use NAME [--only CLIENT]``: switch to a named gateway in one step.

Sets ``default_gateway: NAME`` in fleet.yaml (with ``--only``: ``clients.CLIENT.gateway:
NAME``) with the comment-preserving editor ``forget`` and ``adopt`` use, checks the edited
fleet before anything is written (a client the gateway cannot serve is a located error,
exit 2, fleet.yaml untouched), then applies it as ``taosync apply`` does — under the one
confirm rule (taosync/confirm.py). docs/gateways.md has the whole story.
"""

from __future__ import annotations

import click

from taosync.clients.registry import complete
from taosync.confirm import APPLY_ASKS, yes_option
from taosync.settings import common_options, current


def _complete_gateway(ctx, param, incomplete: str) -> list[str]:
    """Shell completion: the gateway names of the configured fleet."""
    try:
        from taosync.fleet.gateways import named
        from taosync.fleet.load import load_fleet

        s = current()
        loaded = load_fleet(s.config_path(), home=s.home_dir, resolve_key=False, model=False)
    except Exception:
        return []
    return [name for name in named(loaded.data) if name.startswith(incomplete)]


@click.command("use", epilog="""\b
Examples:
  taosync use work                  # every client without its own gateway: on work
  taosync use home --only codex     # only Codex (clients.codex.gateway: home)
  taosync use work --dry-run        # show the fleet.yaml edit, write nothing
Undo: taosync use with the gateway you were on (the line before says which).""")
@common_options
@click.argument("name", shell_complete=_complete_gateway)
@click.option("--only", "only", metavar="CLIENT", shell_complete=complete,
              help="Switch this one client (its clients.CLIENT.gateway), not the default.")
@click.option("--dry-run", is_flag=True, help="Show the fleet.yaml edit; write nothing.")
@click.option("--no-verify", is_flag=True, help="Do not send the verification requests.")
@yes_option(APPLY_ASKS)
def use(name, only, dry_run, no_verify, yes):
    """Switch clients to the named gateway NAME (fleet.yaml edited, then applied).

    Sets default_gateway: NAME (--only CLIENT: clients.CLIENT.gateway: NAME) in
    fleet.yaml, keeping its comments, checks the result, and applies it. A client whose
    entry names its own gateway stays there unless --only names it."""
    from taosync import pipeline, ui
    from taosync.commands.apply import apply
    from taosync.commands.fleet_edit import FleetEdit, print_diff
    from taosync.errors import BadInput
    from taosync.fleet.gateways import client_gateway, default_name, named
    from taosync.fleet.load import load_fleet
    from taosync.fleet.problems import closest

    s = current()
    path = s.config_path()
    loaded = load_fleet(path, home=s.home_dir, environ=s.client_env().environ,
                        resolve_key=False, model=False)
    data = loaded.data
    table = named(data)
    if name not in table:
        hint = closest(name, list(table))
        raise BadInput(f"no gateway {name!r}" + (f" (did you mean {hint}?)" if hint else "")
                       + f"; gateways: {', '.join(table)}")
    raw = data.get("clients")
    configured: dict = raw if isinstance(raw, dict) else {}
    if only is not None:
        pipeline.check_only([only])
        if not isinstance(configured.get(only), dict):
            raise BadInput(f"--only {only}: not in fleet.yaml's clients "
                           f"(clients: {', '.join(configured) or 'none'}); add it first")
    before = {client: client_gateway(data, client) for client in configured}
    was = default_name(data) if only is None else before[only]
    edit = FleetEdit(path)
    if only is None:
        edit.set(("default_gateway",), name)
    else:
        edit.set(("clients", only, "gateway"), name)
    _check_edit(edit, s)
    after_data = dict(data)
    if only is None:
        after_data["default_gateway"] = name
    else:
        after_data["clients"] = {**configured, only: {**configured[only], "gateway": name}}
    moved = [c for c in configured if client_gateway(after_data, c) != before[c]]
    pinned = [c for c in configured if only is None and c not in moved
              and before[c] != name and isinstance(configured[c], dict)
              and configured[c].get("gateway")]
    switched = {"gateway": name, "was": was, "only": only, "clients": moved,
                "stayed": pinned, "fleet": str(edit.path), "fleet_changed": edit.changed}
    if not s.json:
        ui.home_header()
        what = f"{only}'s gateway" if only else "default gateway"
        ui.out(f"switch: {what} {was} → {name}"
               + (f" ({', '.join(moved)} now on {name})" if moved else " (no client moves)"))
        for client in pinned:
            ui.out(f"  {client} stays on {before[client]} (clients.{client}.gateway; "
                   f"taosync use {name} --only {client} moves it)")
        if edit.changed:
            print_diff(edit.diff())
    if dry_run:
        if s.json:
            ui.emit_json({"dry_run": True, "switched": switched})
        else:
            ui.out("dry run: nothing was written")
        return 0
    if edit.changed:
        edit.write()
    ctx = click.get_current_context()
    return ctx.invoke(apply, only=(), dry_run=False, no_verify=no_verify, stub=False,
                      yes=yes, force=False, no_key=False, release_moved=False,
                      message=f"use {name}" + (f" --only {only}" if only else ""),
                      switched=switched)


def _check_edit(edit, s) -> None:
    """The edited fleet, loaded as the next apply will load it (without resolving keys),
    from a file beside fleet.yaml (so its includes resolve alike); problems are reported
    at fleet.yaml's name, and nothing is written."""
    import dataclasses
    import os
    import tempfile
    from pathlib import Path

    from taosync.fleet.load import FleetInvalid, load_fleet

    folder = os.path.dirname(os.path.abspath(edit.path))
    fd, tmp = tempfile.mkstemp(prefix=".taosync-use-", suffix=".yaml", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(edit.new_text)
        try:
            load_fleet(Path(tmp), home=s.home_dir, environ=s.client_env().environ,
                       resolve_key=False, model=False)
        except FleetInvalid as exc:
            def moved(p):
                return dataclasses.replace(p, file=str(edit.path)) if p.file == tmp else p

            raise FleetInvalid(str(edit.path), [moved(p) for p in exc.problems],
                               [moved(p) for p in exc.warnings]) from None
    finally:
        os.unlink(tmp)
