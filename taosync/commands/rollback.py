"""``taosync rollback``: step the files back one apply (or to --to N), or forward (--redo)."""

from __future__ import annotations

import click

from taosync.confirm import yes_option
from taosync.hints import again
from taosync.settings import common_options, current


@click.command("rollback", epilog="""\b
Examples:
  taosync rollback            # back one apply (again: one more)
  taosync rollback --to 3     # as before apply #3 (taosync log lists them)
  taosync rollback --redo     # take back the last rollback
  taosync rollback --dry-run  # show what would be restored
""")
@common_options
@click.option("--to", "to", type=int, metavar="N",
              help="Step back over apply N and every later one still in effect.")
@click.option("--redo", is_flag=True,
              help="Take back the last rollback (its applies are in effect again).")
@click.option("--dry-run", is_flag=True, help="Show what would be restored; write nothing.")
@click.option("--keep-secrets", is_flag=True,
              help="Where the backup holds another secret than the one in use now (a "
                   "rotated key), keep the one in use (the default without a terminal).")
@click.option("--restore-secrets", is_flag=True,
              help="Put the backup's older secrets back too (a key rotated away since).")
@yes_option("Do not ask before replacing files you edited after taosync wrote them (a "
            "terminal asks; without one the step needs it, else it writes nothing and "
            "exits 1)")
def rollback(to, redo, dry_run, keep_secrets, restore_secrets, yes):
    """Step back one apply (again: one more; --to N, --redo) from the backups.

    Each rollback goes one apply further back; --redo goes forward again. Files are put back from the backups taosync took before each apply. With no apply
    left to step back over, a plain rollback takes back the last rollback (as --redo).
    A new apply ends the redo chain. A client set managed: false (taosync forget) is
    left alone: its files are named and not touched. Where a backup holds another
    secret than the one in use now (a key rotated since), a terminal asks; otherwise
    the secret in use stays (--restore-secrets puts the old one back).
    """
    from taosync import pipeline, ui
    from taosync.errors import BadInput
    from taosync.commands.report import plan_json, print_diffs, protect, warn_held
    from taosync.engine.rollback import commit_step, keep_current_secrets, old_secrets, plan_step

    if redo and to is not None:
        raise BadInput("rollback: --redo and --to do not go together")
    if keep_secrets and restore_secrets:
        raise BadInput("rollback: --keep-secrets and --restore-secrets do not go together")
    s = current()
    # an apply cut short is undone first (whether or not the fleet still loads); it is
    # the apply the user wants rolled back, so without --to nothing more is undone
    ctx, recovered = history_context(s)
    store, env = ctx.store, ctx.env
    state = store.load()  # plan first, unlocked: "nothing to roll back" writes nothing
    planned_against = store.digest
    protect(ctx, state)
    if recovered and to is None and not redo:
        return _recovered_only(s, recovered, state)
    unmanaged = unmanaged_clients(ctx, state)
    step = plan_step(store, state, to, redo, unmanaged, pipeline.bounds(env))
    protect(ctx, state, step.plan, rollback=True)
    secrets = old_secrets(step, state, store.hmac_key(create=False), ctx.key)
    keep = bool(secrets) and _keep_secrets(s, secrets, step.kind, dry_run, keep_secrets,
                                           restore_secrets, ctx.key)
    if keep:
        keep_current_secrets(secrets)
    if step.edited and not dry_run:
        _confirm_edited(step, s.home_dir, yes)
    rows: list[str] = []
    if dry_run:
        result_files, record_id = step.plan.changed, None
        rows = file_rows(step, state, s.home_dir)
    else:
        from taosync.commands import watch_note

        pids = watch_note.watches(store)

        def before_writing(state, step):
            protect(ctx, state, step.plan, rollback=True)
            rows.extend(file_rows(step, state, s.home_dir))  # before the state moves on

        step, state, result = commit_step(
            store, to, redo, unmanaged, pipeline.bounds(env), pipeline.client_locations(env),
            keep=keep, key=ctx.key, on_plan=before_writing,
            on_record=lambda kind, record: watch_note.tell(store, kind, pids, record=record),
            planned=(step, state, planned_against))
        result_files, record_id = result.written, result.apply_id
        if record_id:
            watch_note.note(step.kind, pids)
    home = s.home_dir
    if not s.json:
        ui.home_header()  # before the first path
    say_skipped(step.skipped, home)
    warn_held(step.plan.held, ctx)
    for path in step.edited:
        ui.warn(f"{pipeline.display_path(path, home)} was edited after taosync wrote it; "
                f"the {step.kind} {'would replace' if dry_run else 'replaced'} those edits "
                f"too ({again('rollback' + (' --redo' if step.kind == 'rollback' else ''))} "
                "brings them back)")
    if s.json:
        ui.emit_json({"kind": step.kind, "undone": step.undoes if step.kind == "rollback" else [],
                      "redone": step.undoes if step.kind == "redo" else [],
                      "rollback_id": record_id, "dry_run": dry_run,
                      "edited_since_apply": [str(p) for p in step.edited],
                      "older_secrets": [{"path": str(o.path), "keys": o.keys, "kept": keep}
                                        for o in secrets],
                      "skipped": step.skipped,
                      "sources": {p: f"#{i}" for p, i in step.source.items()},
                      **plan_json(step.plan, ctx)})
        return 0
    for line in rows:
        ui.out(line)
    if dry_run or s.verbosity > 0:
        print_diffs(step.plan, ctx)
    if rows:
        ui.out("")
    kinds = {r.id: r.kind for r in state.applies}
    what = ", ".join(f"{kinds.get(i, 'apply')} #{i}" for i in step.undoes)
    if step.kind == "redo":
        verb = "would take back" if dry_run else "took back"
        why = "" if redo else " (no apply left to step back over)"
        ui.out(f"redo{why}: {verb} {what}"
               + (f" (recorded as #{record_id}; {again('rollback')} steps back again)"
                  if record_id else ""))
    elif dry_run:
        ui.out(f"dry run: would roll back {what}")
    elif result_files:
        ui.out(f"rolled back {what}: {files_count(result_files)} "
               f"(recorded as #{record_id}; {again('rollback --redo')} takes it back)")
    else:
        others = [fp for fp in step.plan.files if not fp.released]
        why = ("files already as they were" if not step.skipped else
               "its other files are already as they were" if others else
               "its files are those of clients set managed: false")
        ui.out(ui.nothing_to_do(f"{why} ({what})"))
    return 0


def _confirm_edited(step, home, yes: bool) -> None:
    """A step over files edited since taosync wrote them replaces those edits: the
    confirm rule (taosync/confirm.py) — a terminal asks, a script needs --yes."""
    from taosync.confirm import confirm
    from taosync.pipeline import display_path

    n = len(step.edited)
    files = f"{n} file{'s' if n != 1 else ''}"
    back = "taosync rollback" if step.kind == "redo" else "taosync rollback --redo"
    lines = [f"  {display_path(p, home)}: edited after taosync wrote it" for p in step.edited]
    confirm(step.kind,
            f"replace your edits of {files} ({back} would bring them back)",
            f"Replace your edits in {'this file' if n == 1 else f'these {files}'}?",
            [f"the {step.kind} replaces edits made after taosync wrote these files "
             f"({back} brings them back):", *lines], yes=yes)


def _keep_secrets(s, secrets, kind: str, dry_run: bool, keep: bool, restore: bool,
                  key) -> bool:
    """Warn about each older secret the step would put back (the one in use shown as
    ``sk-…ab12`` when it is the fleet's key, never the old one) and decide: the flags;
    else a terminal asks (default: keep); else keep — a rotated key may be revoked or
    leaked, and rolling back settings should not roll back a credential unasked."""
    import sys

    from taosync import ui
    from taosync.confirm import can_ask
    from taosync.pipeline import display_path

    for o in secrets:
        now = ", ".join(key.redacted() if key is not None and n == key.reveal()
                        else "(sensitive value)" for n in o.now)
        ui.warn(f"{display_path(o.path, s.home_dir)}: the {kind} would put back an older "
                f"secret (sensitive value) at {', '.join(o.keys)} in place of the one in "
                f"use now ({now})")
    if keep or restore:
        decided = keep
    elif not dry_run and can_ask():
        sys.stderr.write(f"Keep the secret{'s' if len(secrets) != 1 else ''} in use now "
                         "and roll back everything else? [Y/n] ")
        sys.stderr.flush()
        decided = sys.stdin.readline().strip().lower() not in ("n", "no")
    else:
        decided = True
    if decided:
        ui.warn(f"{'would keep' if dry_run else 'kept'} the secrets in use now "
                "(--restore-secrets puts the older ones back)")
    else:
        ui.warn(f"{'would put' if dry_run else 'put'} back the older secrets "
                "(--keep-secrets keeps the ones in use now)")
    return decided


def history_context(s):
    """(context, files recovered) for commands that work from the state's history
    (rollback, destroy): an interrupted apply is put back first, and the fleet is
    loaded only for its key, to redact diffs — they must work without a valid fleet."""
    from taosync import pipeline
    from taosync.errors import TaosyncError
    from taosync.pipeline import Context, state_store

    store = state_store(s)
    env = s.client_env()
    store.load()  # another home's state is refused before anything is put back
    recovered = pipeline.recover_first(store, env)
    try:
        ctx = pipeline.prepare(s)
    except TaosyncError:
        ctx = Context(s, loaded=None, env=env, store=store)
    ctx.store = store
    return ctx, recovered


def unmanaged_clients(ctx, state) -> set[str]:
    """Clients set ``managed: false``, whose files rollback, redo and destroy leave
    alone: fleet.yaml's (read without resolving the key, which they do not need), or,
    when it does not load, the ones the last write recorded in the state."""
    from taosync.errors import TaosyncError

    loaded = ctx.loaded
    if loaded is None:
        from taosync.fleet.load import load_fleet

        try:
            loaded = load_fleet(ctx.settings.config_path(), home=ctx.settings.home_dir,
                                environ=ctx.env.environ, resolve_key=False,
                                profile=ctx.settings.profile_name())
        except TaosyncError:
            return set(state.forgotten)
    return loaded.fleet.unmanaged_clients()


def say_skipped(skipped: dict[str, list[str]], home) -> None:
    """One line per unmanaged client: the files of it left exactly as they are."""
    from taosync import ui
    from taosync.pipeline import display_path

    for client, paths in sorted(skipped.items()):
        shown = ", ".join(display_path(p, home) for p in sorted(paths))
        ui.out(f"skipped {client} (managed: false): {shown} left as "
               f"{'it is' if len(paths) == 1 else 'they are'}")


def file_rows(step, state, home) -> list[str]:
    """One line per file the step writes: put back or removed, from which record, for
    which clients, and how many of the keys taosync owns there come back (``restored``:
    owned in the state the file returns to) or go (``removed``: owned now, not then)."""
    from taosync.pipeline import display_path

    rows = []
    width = max((len(display_path(fp.path, home)) for fp in step.plan.changed), default=0)
    for fp in step.plan.changed:
        source = step.source.get(str(fp.path))
        now = state.files.get(str(fp.path))
        owned_now = set(now.owned) if now is not None else set()
        owned_then = set(fp.new_state.owned) if fp.new_state is not None else set()
        counts = [f"{n} key{'s' if n != 1 else ''} {what}" for n, what in (
            (len(owned_then), "restored"), (len(owned_now - owned_then), "removed")) if n]
        clients = ", ".join(fp.clients) or "no client recorded"
        verb, whence = (("remove", f"created by #{source}") if fp.new_text is None else
                        ("restore", f"backup of #{source}"))
        rows.append(f"{verb:<8} {display_path(fp.path, home):<{width}}  {clients}  "
                    f"{', '.join(counts) or 'as it was'} ({whence})")
    return rows


def files_count(files) -> str:
    """``3 files restored, 22 removed``: what a rollback did to the files it wrote."""
    removed = sum(1 for fp in files if fp.new_text is None)
    restored = len(files) - removed
    parts = [f"{restored} file{'s' if restored != 1 else ''} restored"] if restored else []
    if removed:
        parts.append(f"{removed}{'' if parts else ' file' + ('s' if removed != 1 else '')} "
                     "removed")
    return ", ".join(parts)


def _recovered_only(s, recovered: list[str], state) -> int:
    """The rollback was the interrupted apply's recovery: say so, undo nothing more."""
    from taosync import ui

    last = state.applies[-1].id if state.applies else None
    if s.json:
        ui.emit_json({"undone": [], "recovered": recovered, "rollback_id": None,
                      "last_apply": last})
        return 0
    ui.out("rolled back the interrupted apply: its files are as they were before it; "
           + (f"nothing else was undone ({again('rollback')} again undoes apply #{last})"
              if last is not None else "taosync had applied nothing before it"))
    return 0
