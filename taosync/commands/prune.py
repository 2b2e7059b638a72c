"""``taosync prune``: drop the backups that hold secrets no longer in use."""

from __future__ import annotations

import click

from taosync.hints import again
from taosync.settings import common_options, current


@click.command("prune", epilog="""\b
Examples:
  taosync prune --dry-run     # which backups hold a secret no longer in use
  taosync prune               # drop them (after a key rotation)
  taosync prune --secrets     # drop every old secret, your own earlier ones too
""")
@common_options
@click.option("--secrets", "every", is_flag=True,
              help="Drop every old secret: also your own earlier values (priors.json; "
                   "destroy then leaves those keys as they are).")
@click.option("--dry-run", is_flag=True, help="Show what would be dropped; change nothing.")
def prune(every, dry_run):
    """Drop the backups holding secrets no longer in use (--secrets: every old one).

    After a key rotation the old key sits in the backups of the last 20 steps. prune
    drops each backup that holds a secret taosync wrote and no longer uses; --secrets
    also drops your own earlier values taosync kept to give back. The records stay (taosync
    log marks them not restorable) and a rollback that needs a dropped backup refuses.
    Client files are never touched.
    """
    from taosync import ui
    from taosync.commands.report import protect
    from taosync.commands.rollback import history_context
    from taosync.engine.prune import delete, mark, plan_prune
    from taosync.engine.state import locked
    from taosync.pipeline import display_path

    s = current()
    ctx, _recovered = history_context(s)
    store = ctx.store
    state = store.load()
    protect(ctx, state)
    found = plan_prune(store, state, ctx.key, every)
    if not dry_run and (found.backups or found.priors):
        with locked(store):
            state = store.load()
            found = plan_prune(store, state, ctx.key, every)
            mark(state, found)
            store.save(state)
            delete(store, found)
    home = s.home_dir
    if s.json:
        ui.emit_json({"dry_run": dry_run, "secrets": every,
                      "dropped": [{"record": r.id, "path": e["path"]}
                                  for r, e in found.backups],
                      "not_restorable": found.records, "priors_dropped": found.priors})
        return 0
    if not found.backups and not found.priors:
        ui.out("nothing to prune: no backup holds "
               + ("an old secret" if every else "a secret taosync no longer uses"))
        return 0
    verb = "would drop" if dry_run else "dropped"
    for record_id in found.records:
        paths = [e["path"] for r, e in found.backups if r.id == record_id]
        shown = ", ".join(display_path(p, home) for p in paths)
        ui.out(f"#{record_id}: {verb} {len(paths)} backup{'s' if len(paths) != 1 else ''}"
               + (f" ({shown})" if s.verbosity > 0 or len(paths) <= 3 else " (-v lists them)"))
    if found.backups:
        n = len(found.records)
        ui.out(f"{verb} {len(found.backups)} backup(s) holding "
               + ("old secrets" if every else "secrets no longer in use")
               + f"; {'record' if n == 1 else 'records'} "
               + ", ".join(f"#{i}" for i in found.records)
               + (" would be" if dry_run else " is" if n == 1 else " are")
               + " no longer restorable "
               f"({again('log')} marks them; a rollback that needs them refuses)")
    if found.priors:
        ui.out(f"{verb} priors.json: {found.priors} earlier value(s) of yours taosync kept "
               "to give back (destroy and enabled: false leave those keys as they are)")
    return 0
