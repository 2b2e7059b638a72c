"""``taosync apply``: write the fleet into every client's files as one transaction."""

from __future__ import annotations

import click

from taosync.settings import common_options, current
from taosync.commands.plan import NO_KEY_HELP, only_option


@click.command("apply", epilog="""\b
Examples:
  taosync apply                 # asks before overwriting keys you edited by hand
  taosync apply --dry-run       # show the diff, write nothing
  taosync apply --force --only codex --no-verify
taosync adopt takes values you edited by hand into fleet.yaml instead.""")
@common_options
@only_option
@click.option("--dry-run", is_flag=True, help="Plan and show; write nothing.")
@click.option("--no-verify", is_flag=True, help="Do not send the verification requests.")
@click.option("--force", is_flag=True,
              help="Write without asking: overwrite owned keys you edited since the last "
                   "apply (each one is named in a warning; without --force a terminal asks "
                   "first), and write target files you made read-only (no owner write bit; "
                   "they stay read-only; without --force such a file stops the apply).")
@click.option("--stub", is_flag=True,
              help="Verify against a stand-in gateway on loopback instead of the real one "
                   "(the files still name the fleet's gateway).")
@click.option("--release-moved", is_flag=True,
              help="Give back the files taosync owns where a client kept its files before "
                   "a location variable (CLAUDE_CONFIG_DIR, CODEX_HOME, …) moved them; "
                   "without it they are left alone, kept and named.")
@click.option("--no-key", is_flag=True,
              help="Only with --dry-run (else exit 2: nothing can be written without the "
                   "key). " + NO_KEY_HELP)
def apply(only, dry_run, no_verify, stub, force, no_key, release_moved):
    """Write the fleet into every client's files, changing only owned keys."""
    import contextlib

    from taosync import pipeline, ui
    from taosync.commands.report import (plan_json, print_plan, print_warnings, protect,
                                         read_only, warn_dotfiles, warn_held)
    from taosync.errors import BadInput

    if no_key and not dry_run:
        raise BadInput("apply --no-key needs --dry-run: without the key there is nothing "
                       "to write (use taosync plan --no-key in CI)")
    s = current()
    s.certify = not dry_run  # afterwards, certify the no-op answers (engine/certificate.py)
    with read_only() if dry_run else contextlib.nullcontext():
        ctx = pipeline.prepare(s, no_key=no_key, recover=not dry_run)
        ctx.release_moved = release_moved
        protect(ctx)
        only_set = pipeline.check_only(only)
        print_warnings(ctx)
        # Plan first without the lock: a file that does not parse stops here, before
        # taosync writes anything at all (not even its lock or state).
        the_plan, state = pipeline.plan_apply(ctx, only_set)
    protect(ctx, state, the_plan)
    warn_dotfiles(the_plan, ctx)
    skip: set[str] = set()
    if the_plan.changed:
        chosen = _confirm_drift(ctx, s, state, the_plan, only_set, force, dry_run)
        if chosen is None:
            ui.out("quit: nothing was written")
            return 1
        skip = chosen
        _warn_if_root_in_someone_elses_home(s.home_dir)
    # A dry run is the apply itself (lock, re-plan, backups, journal, writes, state) on a
    # System that only records what it would write.
    from taosync.engine.system import DryRunSystem, using

    with (using(DryRunSystem()) if dry_run else contextlib.nullcontext()), \
            (read_only() if dry_run else contextlib.nullcontext()):
        the_plan, result = pipeline.commit(
            ctx, the_plan, state, only_set, force=force, skip=skip,
            on_recover=lambda path: ui.warn(f"an earlier apply was interrupted; "
                                            f"{'apply would put' if dry_run else 'put'} back {path}"))
    protect(ctx, state, the_plan)  # the plan written may be a fresh one
    warn_held(the_plan.held, ctx, the_plan.moved_vars)
    if dry_run:
        if s.json:
            ui.emit_json({"dry_run": True, **plan_json(the_plan, ctx)})
        else:
            print_plan(the_plan, ctx, diffs=True)
            ui.out("dry run: nothing was written")
        return 0

    if not s.json:
        if result.written:
            print_plan(the_plan, ctx, diffs=s.verbosity > 0)
            ui.out(applied_line(result))
        else:
            ui.out(f"nothing to do: {len(the_plan.files)} file(s) up to date")

    report = {"apply_id": result.apply_id,
              **({"record_kind": result.kind} if result.apply_id else {}),
              **plan_json(the_plan, ctx)}
    rc = 0
    if no_verify:
        pass  # asked not to: no "verify" entry in the report
    elif not result.written and not stub:
        ui.out("not verifying: nothing changed (run taosync verify to check anyway)")
        report["verify"] = None
    else:  # the clients whose files were written (all of them for an explicit --stub run)
        written = sorted({c for fp in result.written for c in fp.clients}) or list(only)
        rc, report["verify"] = _verify(ctx, s, written, stub)
        if not stub:  # stand-in runs are no evidence about the real backends
            rerouted = _reroute(ctx, s, only_set, force)
            if rerouted is not None:
                report["rerouted"] = rerouted
    if s.json:
        ui.emit_json(report, exit_code=rc)
    return rc


def _reroute(ctx, s, only_set, force) -> dict | None:
    """A route whose chosen model just failed (or whose preferred one is back) is
    rendered once more with the candidate the new history chooses (one extra write)."""
    from taosync import pipeline, ui
    from taosync.commands.report import plan_json, protect, route_lines

    moved = pipeline.reroute(ctx, only_set, force=force)
    if moved is None:
        return None
    fresh, the_plan, result = moved
    protect(fresh, None, the_plan)
    if not s.json:
        for line in route_lines(fresh.routes, all_routes=True):
            ui.out(ui.style(line, "bold"))
        ui.out(applied_line(result))
    return {"apply_id": result.apply_id, "record_kind": result.kind,
            **plan_json(the_plan, fresh)}


def applied_line(result) -> str:
    """``applied #N …``; for a route re-render (engine/state.py "route"), that it is
    not one of the user's applies and what rollback does with it."""
    n = len(result.written)
    if result.kind == "route":
        return (f"applied #{result.apply_id}: {n} file(s) re-rendered for the route choice "
                "(a route switch, not your apply: taosync rollback steps over it to your "
                "last apply)")
    return f"applied #{result.apply_id}: {n} file(s) written (taosync rollback undoes it)"


def _confirm_drift(ctx, s, state, the_plan, only, force, dry_run=False) -> set[str] | None:
    """Never overwrite a hand edit silently: on a terminal ask per file (overwrite / skip
    file / diff / all / quit); with --force, --json or no terminal, overwrite and name
    each key in a warning (a dry run only names them). Returns the files to skip, or
    None to quit."""
    import sys

    from taosync import ui
    from taosync.commands.report import _diff_style
    from taosync.fleet.secrets import shown
    from taosync.pipeline import display_path

    from taosync.engine.drift import overwritten

    drift = overwritten(ctx.store, state, the_plan, only)
    if not drift:
        return set()
    home = s.home_dir
    by_file: dict[str, list] = {}
    for d, change in drift:
        by_file.setdefault(d.path, []).append((d, change))

    def describe(d, change) -> str:
        now = ("deleted it" if d.kind == "removed"
               else f"set {shown(d.new, d.secret, ctx.key)!r}")
        return f"{d.key}: you {now}; fleet.yaml has {shown(change.new, change.secret, ctx.key)!r}"

    def overwriting(items) -> None:
        for d, change in items:
            ui.warn(f"{'apply would overwrite' if dry_run else 'overwriting'} your edit of "
                    f"{display_path(d.path, home)} {describe(d, change)}")

    if dry_run or force or s.json or not (sys.stdin.isatty() and sys.stdout.isatty()):
        overwriting(item for items in by_file.values() for item in items)
        return set()
    import click

    skip: set[str] = set()
    plans = {str(fp.path): fp for fp in the_plan.changed}
    ui.home_header()
    overwrite_all = False
    for path, items in by_file.items():
        if overwrite_all:  # [a]ll: the files not shown yet are still named
            overwriting(items)
            continue
        ui.echo(ui.style(f"{display_path(path, home)}: edited since the last apply", "warn"))
        for d, change in items:
            ui.echo(f"  {describe(d, change)}")
        answer = "d"
        while answer == "d":
            answer = click.prompt("  [o]verwrite, [s]kip this file, show [d]iff, overwrite "
                                  "[a]ll, [q]uit", type=click.Choice(list("osdaq")),
                                  show_choices=False, default="s", show_default=True)
            if answer == "d":
                for line in plans[path].diff(ui.redactor() or ctx.key).splitlines():
                    ui.echo(ui.style(line, _diff_style(line)))
        if answer == "q":
            return None
        if answer == "s":
            skip.add(path)
        overwrite_all = answer == "a"
    return skip


def _warn_if_root_in_someone_elses_home(home) -> None:
    """``sudo taosync apply`` on a user's home: say what happens to file owners."""
    import os

    from taosync import ui

    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    try:
        owner = os.stat(home).st_uid
    except OSError:
        return
    if owner != 0:
        ui.warn(f"running as root in {home}, which belongs to uid {owner}: every client "
                f"file and taosync's state there is read and written with uid {owner}'s "
                "rights, and a link leading out of the home is refused")


def _verify(ctx, s, only, stub) -> tuple[int, dict | None]:
    """Verify what was written: the table on stdout (or the report, for --json)."""
    from taosync import pipeline
    from taosync.commands.verify import print_report
    from taosync.verify.session import verify_fleet
    from taosync.pipeline import stand_in

    from taosync import ui

    with ui.Progress() as progress:
        report = verify_fleet(pipeline.loaded_fleet(ctx).fleet, ctx.key, ctx.env,
                              state_dir=s.state_dir(), only=list(only) or None,
                              stub=stand_in(stub), on_start=lambda n: progress.start(ui.probing(n)))
    if not s.json:
        print_report(report, s, ctx.key)
    return report.exit_code, report.to_dict()
