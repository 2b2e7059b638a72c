"""``taosync apply``: write the fleet into every client's files as one transaction."""

from __future__ import annotations

import click

from taosync.settings import common_options, current
from taosync.commands.plan import no_key_option, only_option


@click.command("apply")
@common_options
@only_option
@click.option("--dry-run", is_flag=True, help="Plan and show; write nothing.")
@click.option("--no-verify", is_flag=True, help="Do not send the verification requests.")
@click.option("--force", is_flag=True,
              help="Also write target files you made read-only (no owner write bit); they "
                   "stay read-only. Without it such a file stops the apply, nothing written.")
@click.option("--stub", is_flag=True,
              help="Verify against a stand-in gateway on loopback instead of the real one "
                   "(the files still name the fleet's gateway).")
@no_key_option
def apply(only, dry_run, no_verify, stub, force, no_key):
    """Write the fleet into every client's files, changing only owned keys."""
    import contextlib

    from taosync import pipeline, ui
    from taosync.commands.report import (plan_json, print_plan, print_warnings, protect,
                                         read_only, warn_dotfiles)
    from taosync.errors import BadInput

    if no_key and not dry_run:
        raise BadInput("apply --no-key needs --dry-run: without the key there is nothing "
                       "to write (use taosync plan --no-key in CI)")
    s = current()
    with read_only() if dry_run else contextlib.nullcontext():
        ctx = pipeline.prepare(s, no_key=no_key)
        protect(ctx)
        only_set = pipeline.check_only(only)
        print_warnings(ctx)
        # Plan first without the lock: a file that does not parse stops here, before
        # taosync writes anything at all (not even its lock or state).
        the_plan, state = pipeline.plan_apply(ctx, only_set)
    protect(ctx, state, the_plan)
    warn_dotfiles(the_plan, ctx)
    if the_plan.changed and not dry_run:
        _warn_if_root_in_someone_elses_home(s.home_dir)
    # A dry run is the apply itself (lock, re-plan, backups, journal, writes, state) on a
    # System that only records what it would write.
    from taosync.engine.system import DryRunSystem, using

    with (using(DryRunSystem()) if dry_run else contextlib.nullcontext()), \
            (read_only() if dry_run else contextlib.nullcontext()):
        the_plan, result = pipeline.commit(
            ctx, the_plan, state, only_set, force=force,
            on_recover=lambda path: ui.warn(f"an earlier apply was interrupted; put back {path}"))
    protect(ctx, state, the_plan)  # the plan written may be a fresh one
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
            ui.out(f"applied #{result.apply_id}: {len(result.written)} file(s) written "
                   f"(taosync rollback undoes it)")
        else:
            ui.out(f"nothing to do: {len(the_plan.files)} file(s) up to date")

    report = {"apply_id": result.apply_id, **plan_json(the_plan, ctx)}
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
        ui.emit_json(report)
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
        ui.out(f"applied #{result.apply_id}: {len(result.written)} file(s) re-rendered for "
               "the route choice")
    return {"apply_id": result.apply_id, **plan_json(the_plan, fresh)}


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
        ui.warn(f"running as root in {home}, which belongs to uid {owner}: existing files "
                "keep their owner and group, new ones take their directory's")


def _verify(ctx, s, only, stub) -> tuple[int, dict | None]:
    """Verify what was written: the table on stdout (or the report, for --json)."""
    from taosync import pipeline
    from taosync.commands.verify import print_report
    from taosync.verify.session import verify_fleet
    from taosync.pipeline import stand_in

    report = verify_fleet(pipeline.loaded_fleet(ctx).fleet, ctx.key, ctx.env,
                          state_dir=s.state_dir(), only=list(only) or None, stub=stand_in(stub))
    if not s.json:
        print_report(report, s, ctx.key)
    return report.exit_code, report.to_dict()
