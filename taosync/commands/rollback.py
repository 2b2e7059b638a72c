"""``taosync rollback``: restore the files of the last (or --to N-th) apply."""

from __future__ import annotations

import click

from taosync.settings import common_options, current


@click.command("rollback")
@common_options
@click.option("--to", "to", type=int, metavar="N",
              help="Undo apply N and every later one (default: the last apply).")
@click.option("--dry-run", is_flag=True, help="Show what would be restored; write nothing.")
def rollback(to, dry_run):
    """Restore the files of the last (or --to N-th) apply from its backups."""
    from taosync import pipeline, ui
    from taosync.errors import TaosyncError
    from taosync.commands.report import plan_json, print_plan, protect
    from taosync.engine.apply import RealWriter, execute
    from taosync.engine.state import locked
    from taosync.engine.recovery import recover
    from taosync.engine.rollback import plan_rollback
    from taosync.engine.state import StateStore
    from taosync.pipeline import Context

    s = current()
    store = StateStore(s.state_dir())
    env = s.client_env()
    # an apply cut short is undone first (whether or not the fleet still loads); it is
    # the apply the user wants rolled back, so without --to nothing more is undone
    recovered = pipeline.recover_first(store, env)
    try:  # the fleet's key, to redact diffs; a rollback must work without a valid fleet
        ctx = pipeline.prepare(s)
    except TaosyncError:
        ctx = Context(s, loaded=None, env=env, store=store)
    ctx.store = store
    state = store.load()  # plan first, unlocked: "nothing to roll back" writes nothing
    protect(ctx, state)
    if recovered and to is None:
        return _recovered_only(s, recovered, state)
    the_plan, undone, edited = plan_rollback(store, state, to)
    protect(ctx, state, the_plan, rollback=True)
    if dry_run:
        result_files, apply_id = the_plan.changed, None
    else:
        with locked(store):
            state = store.load()
            recover(store, state, RealWriter(), pipeline.client_locations(env))
            the_plan, undone, edited = plan_rollback(store, state, to)
            protect(ctx, state, the_plan, rollback=True)
            result = execute(the_plan, state, store, RealWriter(), kind="rollback")
            result_files, apply_id = result.written, result.apply_id
    home = s.home_dir
    for path in edited:
        ui.warn(f"{pipeline.display_path(path, home)} was edited after taosync wrote it; "
                f"{'the rollback would replace' if dry_run else 'the rollback replaced'} "
                "those edits too (taosync rollback again brings them back)")
    if s.json:
        ui.emit_json({"undone": undone, "rollback_id": apply_id, "dry_run": dry_run,
                      "edited_since_apply": [str(p) for p in edited],
                      **plan_json(the_plan, ctx)})
        return 0
    show_diffs = dry_run or s.verbosity > 0  # the redactor guards them, key or none
    print_plan(the_plan, ctx, diffs=show_diffs)
    what = ", ".join(f"#{i}" for i in undone)
    if dry_run:
        ui.out(f"dry run: would undo apply {what}")
    elif result_files:
        ui.out(f"rolled back apply {what}: {len(result_files)} file(s) restored "
               f"(recorded as #{apply_id}; taosync rollback undoes it)")
    else:
        ui.out(f"apply {what}: files already as they were; nothing to restore")
    return 0


def _recovered_only(s, recovered: list[str], state) -> int:
    """The rollback was the interrupted apply's recovery: say so, undo nothing more."""
    from taosync import ui

    last = state.applies[-1].id if state.applies else None
    if s.json:
        ui.emit_json({"undone": [], "recovered": recovered, "rollback_id": None,
                      "last_apply": last})
        return 0
    ui.out("rolled back the interrupted apply: its files are as they were before it; "
           + (f"nothing else was undone (taosync rollback again undoes apply #{last})"
              if last is not None else "taosync had applied nothing before it"))
    return 0
