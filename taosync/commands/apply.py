"""``taosync apply``: write the fleet into every client's files as one transaction."""

from __future__ import annotations

import click

from taosync.confirm import yes_option
from taosync.hints import again
from taosync.settings import common_options, current
from taosync.commands.plan import NO_KEY_HELP, only_option


@click.command("apply", epilog="""\b
Examples:
  taosync apply                 # asks before replacing values you had or edited by hand
  taosync apply --yes           # scripts: no question (docs/commands.md: Confirming)
  taosync apply --dry-run       # show the diff, write nothing
  taosync apply --force --only codex --no-verify
  taosync apply -m "deep route on r1"   # a note taosync log shows
taosync adopt takes values you edited by hand into fleet.yaml instead.""")
@common_options
@only_option
@click.option("--dry-run", is_flag=True, help="Plan and show; write nothing.")
@click.option("--no-verify", is_flag=True, help="Do not send the verification requests.")
@yes_option("Do not ask: replace values you had before taosync and owned keys you edited "
            "since the last apply (each one is named). Without it a terminal asks, and a "
            "script stops at a hand edit (exit 1)")
@click.option("--force", is_flag=True,
              help="--yes, and also write target files you made read-only (no owner write "
                   "bit; they stay read-only; without --force such a file stops the apply).")
@click.option("--stub", is_flag=True,
              help="Verify against a stand-in gateway on loopback instead of the real one "
                   "(the files still name the fleet's gateway).")
@click.option("--release-moved", is_flag=True,
              help="Give back the files taosync owns where a client kept its files before "
                   "a location variable (CLAUDE_CONFIG_DIR, CODEX_HOME, …) moved them; "
                   "without it they are left alone, kept and named.")
@click.option("-m", "--message", metavar="TEXT",
              help="A note on why, kept with this apply's record: taosync log shows it "
                   "(beside the fleet keys the apply changed).")
@click.option("--trust", is_flag=True,
              help="With --project: also write the trust entries that make Codex, Gemini "
                   "and Qwen read the project's files (shown first, asked under the confirm "
                   "rule; destroy --project removes them). docs/project.md")
@click.option("--no-key", is_flag=True,
              help="Only with --dry-run (else exit 2: nothing can be written without the "
                   "key). " + NO_KEY_HELP)
def apply(only, dry_run, no_verify, stub, yes, force, no_key, release_moved, message,
          trust=False, pulled=None, switched=None):
    """Write the fleet into every client's files, changing only owned keys."""
    import contextlib

    from taosync import confirm, pipeline, ui
    from taosync.commands.report import (plan_json, print_plan, print_warnings, protect,
                                         read_only, warn_dotfiles, warn_held)
    from taosync.errors import BadInput

    if no_key and not dry_run:
        raise BadInput("apply --no-key needs --dry-run: without the key there is nothing "
                       f"to write (use {again('plan --no-key')} in CI)")
    message = checked_message(message)
    s = current()
    if trust and s.project is None:
        raise BadInput("--trust goes with --project: it trusts a project's folder "
                       "(docs/project.md)")
    s.trust = trust
    # afterwards, certify the no-op answers (engine/certificate.py): the user scope's only
    s.certify = not dry_run and s.project is None
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
    yes = yes or force
    if trust and not dry_run:
        _confirm_trust(ctx, s, yes)
    replaced = confirm.replaced_values(ctx, state, the_plan)
    shown_replaced = False
    if the_plan.changed:
        if not dry_run:  # asks on a terminal (confirm.py)
            shown_replaced = confirm.confirm_replacing(replaced, yes=yes)
        chosen = _confirm_drift(ctx, s, state, the_plan, only_set, yes, dry_run)
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
            ctx, the_plan, state, only_set, force=force, skip=skip, message=message,
            on_recover=lambda path: ui.warn(
                f"an earlier apply was interrupted; {'apply would put' if dry_run else 'put'} "
                f"back {pipeline.display_path(path, s.home_dir)}"))
    protect(ctx, state, the_plan)  # the plan written may be a fresh one
    warn_held(the_plan.held, ctx, the_plan.moved_vars)
    if dry_run:
        if s.json:
            ui.emit_json({"dry_run": True, **plan_json(the_plan, ctx), "replaced": replaced})
        else:
            print_plan(the_plan, ctx, diffs=True)
            ui.out("dry run: nothing was written")
        return 0

    if not s.json:
        if result.written:
            print_plan(the_plan, ctx, diffs=s.verbosity > 0)
            ui.out(applied_line(result))
        else:
            ui.out(ui.nothing_to_do(ui.files_match(len(the_plan.files)))
                   + ("; -m's note is not kept (no record without a write)" if message else ""))

    if trust and not dry_run:  # kept: later project runs keep the entries, destroy drops them
        from taosync.engine.state import write_private

        write_private(ctx.store.root / pipeline.TRUST_MARK, b"trust\n")
    done = {str(fp.path) for fp in result.written}  # not the files skipped at a prompt
    written_over = [r for r in replaced if r["path"] in done]
    if not s.json:  # the report is only printed as JSON: no diffs to make, but what they
        for fp in the_plan.files:  # would have taught the Redactor, it learns all the same
            fp.teach(ui.redactor())
    report = {**({"pulled": pulled} if pulled is not None else {}),
              **({"switched": switched} if switched is not None else {}),
              "apply_id": result.apply_id,
              **({"record_kind": result.kind} if result.apply_id else {}),
              **(plan_json(the_plan, ctx) if s.json else {}), "replaced": written_over}
    rc = 0
    if no_verify:
        pass  # asked not to: no "verify" entry in the report
    elif not result.written and not stub:
        ui.out(f"not verifying: nothing changed (run {again('verify')} to check anyway)")
        report["verify"] = None
    else:  # the clients whose files were written (all of them for an explicit --stub run)
        written = sorted({c for fp in result.written for c in fp.clients}) or list(only)
        if s.project is not None:  # a project's gateway: the clients that take it (verify.py)
            from taosync.clients.project_scope import gateway_clients

            written = gateway_clients(pipeline.loaded_fleet(ctx).fleet, written)
        rc, report["verify"] = _verify(ctx, s, written, stub)
        if not stub:  # stand-in runs are no evidence about the real backends
            rerouted = _reroute(ctx, s, only_set, force)
            if rerouted is not None:
                report["rerouted"] = rerouted
    if s.json:
        ui.emit_json(report, exit_code=rc)
        return rc
    line = pipeline.profiles_line({n: done for n, done in pipeline.profile_states(ctx).items()
                                   if not done})
    if line is not None and s.verbosity >= 0:  # a profile never applied: say how
        ui.out(line)
    last = confirm.replaced_line(result, [] if shown_replaced else written_over,
                                 verify_failed=rc != 0)
    if last is not None:  # the last line: what was written, replaced, and the undo
        ui.warn(last)
    return rc


#: the longest ``apply -m`` note kept (it is a note, not a file)
MESSAGE_LIMIT = 1000


def checked_message(message: str | None) -> str | None:
    """``-m TEXT`` as the record keeps it: trimmed; empty or over MESSAGE_LIMIT is bad input."""
    from taosync.errors import BadInput

    if message is None:
        return None
    message = message.strip()
    if not message:
        raise BadInput("-m/--message is empty: say why, or leave -m out")
    if len(message) > MESSAGE_LIMIT:
        raise BadInput(f"-m/--message is {len(message)} characters long; keep it under "
                       f"{MESSAGE_LIMIT} (it is a note for taosync log)")
    return message


def _confirm_trust(ctx, s, yes) -> None:
    """apply --project --trust: the trust entries are a security decision on the user's
    behalf, so they are shown first (stderr) and asked for under the confirm rule."""
    from taosync import confirm, pipeline, ui

    if ctx.store.system.exists(ctx.store.root / pipeline.TRUST_MARK) or not s.trust_entries:
        return  # trusted before (or nothing to trust): nothing new to decide
    lines = ["trust entries apply --trust writes (the clients then read this project's "
             "files; destroy --project removes them):"] + [f"  {e}" for e in s.trust_entries]
    if yes or not confirm.can_ask():
        for line in lines:
            ui.warn(line)
    n = len(s.trust_entries)
    confirm.confirm("apply --trust", f"write {n} trust entr{'ies' if n != 1 else 'y'}",
                    f"Write {'this trust entry' if n == 1 else f'these {n} trust entries'}?",
                    lines, yes=yes)


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
                f"(a route switch, not your apply: {again('rollback')} steps over it to your "
                "last apply)")
    return f"applied #{result.apply_id}: {n} file(s) written ({again('rollback')} undoes it)"


def _confirm_drift(ctx, s, state, the_plan, only, yes, dry_run=False) -> set[str] | None:
    """Never overwrite a hand edit silently (taosync/confirm.py): on a terminal ask per
    file (overwrite / skip file / diff / all / quit); with --yes (--force) overwrite and
    name each key in a warning (a dry run only names them); with nobody to ask, name
    them and write nothing (exit 1). Returns the files to skip, or None to quit."""
    from taosync import confirm, ui
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

    def overwriting(items, now: bool = True) -> None:
        for d, change in items:
            ui.warn(f"{'overwriting' if now else 'apply would overwrite'} your edit of "
                    f"{display_path(d.path, home)} {describe(d, change)}")

    if dry_run or yes or not confirm.can_ask():
        overwriting((item for items in by_file.values() for item in items), yes and not dry_run)
        if not (dry_run or yes):
            n = len(drift)
            confirm.confirm("apply", f"overwrite {n} owned key{'s' if n != 1 else ''} you "
                            "edited by hand (named above)", "", [], yes=False)
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
        ui.problem(ui.style(f"{display_path(path, home)}: edited since the last apply", "warn"))
        for d, change in items:
            ui.problem(f"  {describe(d, change)}")
        answer = "d"
        while answer == "d":
            answer = click.prompt("  [o]verwrite, [s]kip this file, show [d]iff, overwrite "
                                  "[a]ll, [q]uit", type=click.Choice(list("osdaq")),
                                  show_choices=False, default="s", show_default=True,
                                  err=True)
            if answer == "d":
                for line in plans[path].diff(ui.redactor() or ctx.key,
                                             display_path(path, home)).splitlines():
                    ui.problem(ui.style(line, _diff_style(line)))
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
