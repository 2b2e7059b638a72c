"""``taosync plan`` (alias ``diff``): what apply would change, file by file."""

from __future__ import annotations

import click

from taosync.clients.registry import complete, ids as client_ids
from taosync.settings import common_options, current

only_option = click.option("--only", "only", multiple=True, metavar="CLIENT", shell_complete=complete,
                           help="Only this client (repeatable): " + ", ".join(client_ids()) + ".")
#: what --no-key does, for each command that takes it
NO_KEY_HELP = ("Do not resolve the key (CI without secrets): key-bearing values are compared "
               "by the keyed hash the state holds and shown as (sensitive, unchanged) or "
               "(sensitive, differs).")
no_key_option = click.option("--no-key", is_flag=True, help=NO_KEY_HELP)


@click.command("plan")
@common_options
@only_option
@click.option("--check", is_flag=True, help="Exit 1 when anything would change.")
@no_key_option
def plan(only, check, no_key):
    """Show what apply would change in each client file (alias: diff)."""
    from taosync import pipeline, ui
    from taosync.commands.report import (plan_json, print_plan, print_warnings, protect,
                                         read_only, warn_dotfiles, warn_held)

    s = current()
    with read_only():
        ctx = pipeline.prepare(s, no_key=no_key, recover=False)
        state = ctx.store.load()
        protect(ctx, state)
        only_set = pipeline.check_only(only)
        the_plan = pipeline.make_plan(ctx, state, only_set)
    protect(ctx, state, the_plan)
    print_warnings(ctx)
    warn_dotfiles(the_plan, ctx)
    warn_held(the_plan.held, ctx, the_plan.moved_vars)
    rc = 1 if check and the_plan.changed else 0
    if s.json:
        ui.emit_json(plan_json(the_plan, ctx), exit_code=rc)
    else:
        print_plan(the_plan, ctx, diffs=True)
    return rc
