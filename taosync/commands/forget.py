"""``taosync forget CLIENT``: stop managing a client and leave its files as they are."""

from __future__ import annotations

import click

from taosync.clients.registry import complete
from taosync.settings import common_options, current


@click.command("forget", epilog="""\b
Examples:
  taosync forget cline            # cline's files stay exactly as they are
  taosync forget cline --dry-run  # show the fleet.yaml edit, change nothing
Undo: set clients.<id>.managed back to true (or delete the line) and run taosync apply.""")
@common_options
@click.argument("client", shell_complete=complete)
@click.option("--dry-run", is_flag=True, help="Show the fleet.yaml edit; write nothing.")
def forget(client, dry_run):
    """Stop managing a client (managed: false); its files stay exactly as they are.

    Sets clients.CLIENT.managed: false in fleet.yaml (comments kept) and forgets the
    client's owned keys in the state. Unlike enabled: false, nothing taosync wrote is
    given back."""
    from taosync import pipeline, ui
    from taosync.commands.fleet_edit import FleetEdit, print_diff
    from taosync.commands.report import protect
    from taosync.errors import WriteFailed

    s = current()
    pipeline.check_only([client], "forget")
    ctx = pipeline.prepare(s, use_cache=False)  # the fleet must load before it is edited
    protect(ctx)
    edit = FleetEdit(s.config_path())
    edit.set(("clients", client, "managed"), False)
    state = ctx.store.load()
    owned = [fs for fs in state.files.values() if client in fs.clients]
    ui.home_header()
    if edit.changed:
        print_diff(edit.diff())
    if dry_run:
        ui.out(f"dry run: nothing was written ({len(owned)} file(s) of {client} would be "
               "forgotten, left as they are)")
        return 0
    if edit.changed:
        from taosync.commands import watch_note

        pids = watch_note.watches(ctx.store)
        watch_note.tell(ctx.store, "forget", pids, fleet_text=edit.new_text, client=client)
        edit.write()
        watch_note.note("forget", pids, client)
    ctx = pipeline.prepare(s, use_cache=False)
    only = {client}
    the_plan = pipeline.make_plan(ctx, state, only)
    if the_plan.changed:  # never: a forgotten client's files are not planned for writing
        raise WriteFailed(f"forget {client} would change files; nothing was written to them")
    pipeline.commit(ctx, the_plan, state, only)
    _remember(ctx.store, client)
    home = s.home_dir
    if s.json:
        ui.emit_json({"forgot": client, "files": [fs.path for fs in owned],
                      "fleet": str(edit.path), "fleet_changed": edit.changed})
        return 0
    for fs in owned:
        ui.out(f"forgot   {pipeline.display_path(fs.path, home)}  (left as it is)")
    ui.out(f"taosync no longer manages {client}: {len(owned)} file(s) left exactly as they "
           f"are; clients.{client}.managed is false in {pipeline.display_path(edit.path, home)}")
    return 0


def _remember(store, client: str) -> None:
    """Record the client as forgotten in the state (the plan does so when it owned files
    there), so rollback, redo and destroy leave it alone even without a fleet."""
    from taosync.engine.state import locked

    if not store.system.exists(store.state_path) or client in store.load().forgotten:
        return  # no state: no history that could write its files
    with locked(store):
        state = store.load()
        state.forgotten = sorted({*state.forgotten, client})
        store.save(state)
