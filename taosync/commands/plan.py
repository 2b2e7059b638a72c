"""``taosync plan`` (alias ``diff``): what apply would change, file by file."""

from __future__ import annotations

import click

from taosync.cli import common_options, settings

only_option = click.option("--only", "only", multiple=True, metavar="CLIENT",
                           help="Only this client (repeatable).")


@click.command("plan")
@common_options
@only_option
@click.option("--check", is_flag=True, help="Exit 1 when anything would change.")
def plan(only, check):
    """Show what apply would change in each client file (alias: diff)."""
    from taosync import pipeline, ui
    from taosync.commands.report import plan_json, print_plan, print_warnings, warn_dotfiles

    s = settings()
    ctx = pipeline.prepare(s)
    only_set = pipeline.check_only(only)
    the_plan = pipeline.make_plan(ctx, ctx.store.load(), only_set)
    print_warnings(ctx)
    warn_dotfiles(the_plan, ctx)
    if s.json:
        ui.emit_json(plan_json(the_plan, ctx))
    else:
        print_plan(the_plan, ctx, diffs=True)
    return 1 if check and the_plan.changed else 0
