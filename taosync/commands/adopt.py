"""``taosync adopt [CLIENT]``: take values you changed in a client back into fleet.yaml.

The drifted owned keys (engine/drift.py) are read back through each client's own
``observe`` (the machinery of ``taosync import``), which says which fleet slot a file
value belongs to. A model id picked in a client becomes that slot's value (the route
that already gives that model, else the id itself, added to the catalogue); a Codex
profile's model becomes its route's. So that nothing else of the client moves, a slot
the fleet leaves unset (Claude Code's ``sonnet`` follows ``model``) is pinned to what it
renders today. The fleet edit keeps comments, is shown as a diff first, and the state
then records the files as they are (they already hold the adopted values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import click

from taosync.confirm import yes_option
from taosync.clients.registry import complete
from taosync.hints import again
from taosync.settings import common_options, current

_LIST_SLOT = re.compile(r"^(?P<option>[\w-]+)\[(?P<route>[^\]]+)\]$")


@dataclass
class Adoption:
    """One fleet.yaml edit and why: ``where`` is the client file and key it came from."""

    fleet_path: tuple[str, ...]
    value: object
    where: str
    note: str = ""


@click.command("adopt", epilog="""\b
Examples:
  taosync adopt                  # every client; shows the fleet.yaml diff, then asks
  taosync adopt claude-code --dry-run
  taosync adopt --yes            # no question (scripts)
After adopt, taosync plan has nothing to change for the adopted keys.""")
@common_options
@click.argument("client", required=False, shell_complete=complete)
@click.option("--dry-run", is_flag=True, help="Show the fleet.yaml diff; write nothing.")
@yes_option("Write without asking (a terminal asks; without one adopt needs it, else it "
            "writes nothing and exits 1)")
def adopt(client, dry_run, yes):
    """Write values you changed in a client's files back into fleet.yaml.

    A model you picked in a client becomes its slot's (or a Codex profile's route's)
    value; fleet.yaml keeps its comments. Drift that is not a model choice is listed."""
    from taosync import pipeline, ui
    from taosync.confirm import confirm
    from taosync.commands.fleet_edit import FleetEdit, print_diff
    from taosync.commands.report import protect
    from taosync.engine.drift import find_drift
    from taosync.errors import WriteFailed

    s = current()
    only = pipeline.check_only([client], "adopt") if client else None
    ctx = pipeline.prepare(s, use_cache=False)
    state = ctx.store.load()
    drift = [d for d in find_drift(state, ctx.store.hmac_key(create=False), only)
             if d.kind == "changed"]
    protect(ctx, state, drift=drift)
    fleet = pipeline.loaded_fleet(ctx).fleet
    edit = FleetEdit(s.config_path())
    clients_of = {path: fs.clients for path, fs in state.files.items()}
    drifted = {(d.path, d.key) for d in drift}
    names = [c for c in fleet.enabled_clients() if any(c in clients_of.get(d.path, ())
                                                        for d in drift)]
    adoptions: list[Adoption] = []
    for name in names:
        adoptions += _adoptions(name, fleet, edit, ctx.env, drifted)
    taken = {a.where for a in adoptions}
    home = s.home_dir
    for d in drift:
        where = f"{pipeline.display_path(d.path, home)} {d.key}"
        if where not in taken:
            ui.warn(f"not adopted: {where} is not a model choice fleet.yaml can express "
                    f"({again('apply')} puts fleet.yaml's value back)")
    for a in adoptions:
        edit.set(a.fleet_path, a.value)
    if not edit.changed:
        if s.json:  # one object, as every command prints (it printed nothing)
            ui.emit_json({"adopted": [], "fleet": str(edit.path), "diff": ""})
            return 0
        ui.out("nothing to adopt: no model you picked in a client differs from fleet.yaml")
        return 0
    _check(edit)
    ui.home_header()
    print_diff(edit.diff())
    for a in adoptions:
        if a.note:
            ui.out(a.note)
    if dry_run:
        if s.json:
            ui.emit_json({"adopted": _adopted(adoptions), "fleet": str(edit.path),
                          "diff": edit.diff(), "dry_run": True})
            return 0
        ui.out("dry run: nothing was written")
        return 0
    shown = pipeline.display_path(edit.path, home)
    confirm("adopt", f"write the values you edited in client files into {shown} (the "
            "diff above)", f"Write this to {shown}?", [], yes=yes)
    from taosync.commands import watch_note

    pids = watch_note.watches(ctx.store)
    watch_note.tell(ctx.store, "adopt", pids, fleet_text=edit.new_text)
    edit.write()
    watch_note.note("adopt", pids)
    ctx = pipeline.prepare(s, use_cache=False)
    state = ctx.store.load()
    the_plan = pipeline.make_plan(ctx, state, only)
    pending = {str(fp.path) for fp in the_plan.changed}
    if pending:  # the adopted fleet renders more than the files hold (a new catalogue entry)
        ui.warn("fleet.yaml now differs from the client files elsewhere too; "
                f"run {again('plan')} to see what apply would change")
    try:  # the state takes every file that matches the adopted fleet as it is; none is written
        pipeline.commit(ctx, the_plan, state, only, skip=pending)
    except WriteFailed as exc:
        ui.warn(f"fleet.yaml was updated, but {exc.message}")
    if s.json:
        ui.emit_json({"adopted": _adopted(adoptions), "fleet": str(edit.path),
                      "diff": edit.diff()})
        return 0
    ui.out(f"adopted {len(taken)} value(s) into {pipeline.display_path(edit.path, home)}")
    return 0


def _adopted(adoptions: list[Adoption]) -> list[dict]:
    """``--json``'s ``adopted``: each value taken, its fleet key and where it was read."""
    return [{"fleet_key": ".".join(a.fleet_path), "value": a.value, "from": a.where}
            for a in adoptions if a.where]


def _adoptions(name, fleet, edit, env, drifted) -> list[Adoption]:
    """The fleet edits that make ``name``'s rendered slots equal what its files hold."""
    from taosync.clients.registry import get
    from taosync.pipeline import display_path

    module = get(name)
    options = {o.name for o in module.OPTIONS if o.slot}
    obs = module.observe(env)
    out: list[Adoption] = []
    pins: list[Adoption] = []
    for slot, seen in obs.slots.items():
        if not seen or not isinstance(seen[0].value, str):
            continue
        first = seen[0]
        where = f"{display_path(first.file, env.home)} {first.key}"
        is_drifted = (str(first.file), first.key) in drifted
        listed = _LIST_SLOT.match(slot)
        if listed:
            route = listed["route"]
            if is_drifted and route in fleet.routes:
                out += _catalogue(fleet, edit, first.value, where)
                out.append(Adoption(("routes", route), first.value, where,
                                    f"note: route {route} now gives {first.value} to every "
                                    "client that uses it"))
            continue
        path = tuple(slot.split("."))
        if path[0] not in options:
            continue
        fleet_path = ("clients", name, *path)
        if is_drifted:
            out += _catalogue(fleet, edit, first.value, where)
            out.append(Adoption(fleet_path, _slot_value(fleet, first.value), where))
        elif edit.get(*fleet_path) is None:
            pins.append(Adoption(fleet_path, _slot_value(fleet, first.value), ""))
    return out + pins if out else []


def _slot_value(fleet, model_id: str) -> str:
    """The route that gives ``model_id`` (the default route first), else the id itself."""
    default = fleet.default_route
    if default and fleet.routes.get(default) == model_id:
        return default
    return next((r for r, m in fleet.routes.items() if m == model_id), model_id)


def _catalogue(fleet, edit, model_id: str, where: str) -> list[Adoption]:
    """Add ``model_id`` to the catalogue when it is not there yet."""
    if model_id in fleet.models or edit.get("models", model_id) is not None:
        return []
    return [Adoption(("models", model_id), {}, where)]


def _check(edit) -> None:
    """The edited fleet must load (a model id the schema refuses stops here)."""
    import os
    import tempfile

    from taosync.fleet.load import load_fleet
    from taosync.privilege import rights_for

    with rights_for(edit.path):  # beside fleet.yaml, with the rights it is written with
        fd, tmp = tempfile.mkstemp(suffix=".yaml", dir=edit.path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(edit.new_text)
        load_fleet(Path(tmp), home=current().home_dir, resolve_key=False)
    finally:
        with rights_for(edit.path):
            os.unlink(tmp)
