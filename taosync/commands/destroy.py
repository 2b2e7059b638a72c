"""``taosync destroy``: give back everything taosync wrote, in every client's files."""

from __future__ import annotations

import click

from taosync.confirm import yes_option
from taosync.hints import again
from taosync.settings import common_options, current


@click.command("destroy", epilog="""\b
Examples:
  taosync destroy --dry-run       # what would be given back, as diffs
  taosync destroy                 # asks first (y/N) on a terminal
  taosync destroy --yes --purge   # scripts: no question; state and backups go too
""")
@common_options
@yes_option("Do not ask (scripts: without a terminal destroy needs it, else it writes "
            "nothing and exits 1)")
@click.option("--purge", is_flag=True,
              help="Also remove taosync's state directory (history, backups, hash key): "
                   "nothing can be rolled back afterwards.")
@click.option("--dry-run", is_flag=True, help="Show what would be given back; write nothing.")
def destroy(yes, purge, dry_run):
    """Give back every owned key of every client (asks; --yes, --purge).

    A file nobody else touched since taosync first wrote it goes back byte for byte
    (a file taosync created goes); otherwise each owned key gets the user's earlier
    value back or is removed, and keys edited by hand since stay. Directories taosync
    created are removed once empty. Without --purge, taosync rollback undoes it.
    A client set managed: false (taosync forget) is left alone: its files are named
    and not touched.
    """
    from taosync import ui
    from taosync.commands.report import plan_json, print_plan, protect, warn_held
    from taosync.commands.rollback import history_context, say_skipped, unmanaged_clients
    from taosync.engine.destroy import holds_or_in, plan_destroy, remove_made_dirs
    from taosync.engine.recovery import recover
    from taosync.engine.state import locked
    from taosync import pipeline

    s = current()
    ctx, _recovered = history_context(s)
    store = ctx.store
    state = store.load()
    unmanaged = unmanaged_clients(ctx, state)
    teardown = plan_destroy(store, state, store.hmac_key(create=False), unmanaged,
                            pipeline.bounds(ctx.env))
    protect(ctx, state, teardown.plan, rollback=True)
    warn_held(teardown.plan.held, ctx)
    home = s.home_dir
    dirs = [d for d in state.made_dirs if purge or not holds_or_in(d, store.root)]
    if s.json and dry_run:
        ui.emit_json({"dry_run": True, "purge": purge, "exact": teardown.exact,
                      "dirs": dirs, "skipped": teardown.skipped,
                      **plan_json(teardown.plan, ctx)})
        return 0
    if not (teardown.plan.changed or purge):  # one line, as every command says it
        if s.json:  # the contract: one object, nothing given back
            ui.emit_json({"destroy_id": None, "purge": purge, "exact": teardown.exact,
                          "dirs_removed": [], "skipped": teardown.skipped,
                          **plan_json(teardown.plan, ctx)})
        else:
            say_skipped(teardown.skipped, home)
            ui.out(ui.nothing_to_do("taosync owns nothing here but the files of clients "
                                    "set managed: false, left as they are"
                                    if teardown.skipped else
                                    "taosync owns nothing in this home"))
        return 0
    if not s.json:
        print_plan(teardown.plan, ctx, diffs=True)
        say_skipped(teardown.skipped, home)
        for d in dirs:
            ui.out(f"remove directory {pipeline.display_path(d, home)} (if empty)")
        if purge:
            ui.out(f"remove taosync's state {pipeline.display_path(store.root, home)}")
    if dry_run:
        ui.out("dry run: nothing was written")
        return 0
    _confirm(len(teardown.plan.changed), purge, yes)

    from taosync.commands import watch_note

    pids = watch_note.watches(store)  # before --purge takes their registrations away
    planned_against = store.digest
    with locked(store):
        now = store.load()
        recovered = recover(store, now, store.system, pipeline.client_locations(ctx.env))
        if recovered or store.digest != planned_against or not teardown.plan.still_on_disk():
            # another run changed the state or a file since the plan shown: plan again
            state = now
            teardown = plan_destroy(store, state, store.hmac_key(create=False), unmanaged,
                                    pipeline.bounds(ctx.env))
            protect(ctx, state, teardown.plan, rollback=True)
        # else the plan shown was made from these very bytes: it is the one written
        state.forgotten = sorted(unmanaged)
        from taosync.engine.apply import execute

        result = execute(teardown.plan, state, store, kind="destroy")
        if result.apply_id:  # under the lock: a watch reads it with the record
            watch_note.tell(store, "destroy", pids, record=result.apply_id)
        removed = remove_made_dirs(state, keep_under=None if purge else store.root)
        if store.system.exists(store.root / pipeline.TRUST_MARK):  # a project's trust: gone too
            store.system.remove(store.root / pipeline.TRUST_MARK)
        if not purge:
            store.save(state)
    if purge:
        _purge(store, s)
        removed += remove_made_dirs(state)
    if result.apply_id or purge:
        watch_note.note("destroy", pids)
    if s.json:
        ui.emit_json({"destroy_id": None if purge else result.apply_id, "purge": purge,
                      "exact": teardown.exact, "dirs_removed": [str(d) for d in removed],
                      "skipped": teardown.skipped,
                      **plan_json(teardown.plan, ctx)})
        return 0
    n = len(result.written)
    ui.out(f"destroyed: {n} file{'s' if n != 1 else ''} given back"
           + (f", {len(removed)} director{'ies' if len(removed) != 1 else 'y'} removed"
              if removed else "")
           + ("; taosync's state purged" if purge else
              f" (recorded as #{result.apply_id}; {again('rollback')} undoes it)"
              if result.apply_id else ""))
    return 0


def _confirm(files: int, purge: bool, yes: bool) -> None:
    """The confirm rule (taosync/confirm.py): a terminal asks (default no); without
    one, --yes is the only way on."""
    from taosync.confirm import confirm

    what = (f"give back everything taosync owns in {files} file{'s' if files != 1 else ''}"
            + (" and delete its state (no rollback afterwards)" if purge else ""))
    confirm("destroy", what, f"{what[0].upper()}{what[1:]}?", [], yes=yes)


#: sub-directories of the user scope's state holding the other scopes' own states
SCOPE_DIRS = ("projects", "profiles", "system")


def _purge(store, s) -> None:
    """Remove this scope's state directory; the user scope's purge leaves the other
    scopes' states in it (a project's files still name theirs: destroy --project)."""
    kept = [d for d in SCOPE_DIRS if s.project is None
            and store.system.is_dir(store.root / d)]
    if not kept:
        store.system.remove_tree(store.root)
        return
    for child in sorted(store.root.iterdir()):
        if child.name in kept:
            continue
        if store.system.is_dir(child) and not child.is_symlink():
            store.system.remove_tree(child)
        else:
            store.system.remove(child)
