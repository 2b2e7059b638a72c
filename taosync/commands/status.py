"""``taosync status``: drift (owned keys edited on disk) and pending changes."""

from __future__ import annotations

import click

from taosync.hints import again
from taosync.settings import common_options, current
from taosync.commands.plan import no_key_option, only_option


@click.command("status")
@common_options
@only_option
@no_key_option
def status(only, no_key):
    """Show drift (owned keys edited on disk) and pending changes; exit 1 when either."""
    from taosync import pipeline, ui
    from taosync.commands.report import (print_warnings, protect, read_only,
                                         unchanged_secrets, warn_held)
    from taosync.engine.drift import find_drift
    from taosync.fleet.secrets import NO_KEY_SAME, shown

    s = current()
    with read_only():
        ctx = pipeline.prepare(s, no_key=no_key, recover=False)
        state = ctx.store.load()
        protect(ctx, state)
        only_set = pipeline.check_only(only)
        print_warnings(ctx)
        drift = find_drift(state, ctx.store.hmac_key(create=False), only_set)
        the_plan = pipeline.make_plan(ctx, state, only_set)
    protect(ctx, state, the_plan, drift)
    warn_held(the_plan.held, ctx, the_plan.moved_vars)
    from taosync.doctor.redirection import here_findings, here_warning
    from taosync.engine.system import current as system

    redirects = here_findings(system().cwd(), ctx.patches, ctx.key,  # the guard, here
                              ctx.store.root)
    guard = here_warning(redirects)
    if guard:
        ui.warn(guard)
    drifted_files = {d.path for d in drift}
    pending = [fp for fp in the_plan.changed]
    home = s.home_dir
    rc = 1 if drift or pending else 0
    profiles = pipeline.profile_states(ctx)
    if s.json:
        ui.emit_json({
            "applied": bool(state.applies),
            "last_apply": state.applies[-1].id if state.applies else None,
            "drift": [{"path": d.path, "display": pipeline.display_path(d.path, home),
                       "key": d.key, "kind": d.kind,
                       "old": shown(d.old, d.secret, ctx.key),
                       "new": shown(d.new, d.secret, ctx.key)} for d in drift],
            "pending": [{"path": str(fp.path), "display": pipeline.display_path(fp.path, home),
                         "action": fp.action, "clients": fp.clients,
                         "keys": [c.path for c in fp.changes]} for fp in pending],
            **({"sensitive": {str(fp.path): fp.sensitive for fp in the_plan.files
                              if fp.sensitive}} if no_key else {}),
            **({"routes": state.routes} if state.routes else {}),
            **({"redirects": [f.as_json() for f in redirects]} if redirects else {}),
            **({"profiles": {n: {"applied": done} for n, done in profiles.items()}}
               if profiles else {}),
        }, exit_code=rc)
    else:
        if not state.applies:
            ui.out(f"never applied here ({again('apply')} writes the fleet)")
        for d in drift:
            where = pipeline.display_path(d.path, home)
            if d.kind == "file-missing":
                ui.out(f"{ui.style('drift', 'fail')}    {where}: the file is gone")
            elif d.kind == "unreadable":
                ui.out(f"{ui.style('drift', 'fail')}    {where}: {d.new}")
            else:
                old = shown(d.old, d.secret, ctx.key)
                new = "(removed)" if d.kind == "removed" else shown(d.new, d.secret, ctx.key)
                ui.out(f"{ui.style('drift', 'fail')}    {where}: {d.key}: "
                       f"{_fmt(old)} → {_fmt(new)}")
        for fp in pending:
            where = pipeline.display_path(fp.path, home)
            why = f"holds the key, readable by others: mode {fp.mode_change}" \
                if fp.action == "chmod" else \
                "re-asserts drifted keys" if str(fp.path) in drifted_files else \
                ", ".join(c.path for c in fp.changes[:4]) + (" …" if len(fp.changes) > 4 else "")
            ui.out(f"{ui.style('pending', 'warn')}  {where}: {fp.action} ({why})")
        for fp in the_plan.files if no_key else ():
            where = pipeline.display_path(fp.path, home)
            for kp_text, verdict in fp.sensitive.items():
                if verdict != NO_KEY_SAME or s.verbosity > 0:  # else summed up below
                    ui.out(f"{'key':<8} {where}: {kp_text}: {verdict}")
        same_secret = unchanged_secrets(the_plan) if s.verbosity <= 0 else ""
        if same_secret:
            ui.out(f"{'key':<8} {same_secret}")
        for name, rec in state.routes.items():  # as the files hold it (the last apply)
            reason = _why_now(name, rec, ctx.routes)
            if rec["model"] != rec["preferred"]:
                ui.out(f"{ui.style('route', 'warn')}    {name} → {rec['model']}, off its "
                       f"preferred {rec['preferred']} since {rec['since']} ({reason})")
            elif not rec["healthy"] or reason.startswith("held on "):  # not known
                # healthy, or held there by the dwell while the policy would move it
                ui.out(f"{ui.style('route', 'warn')}    {name} → {rec['model']}, its "
                       f"preferred, since {rec['since']} ({reason})")
        if not drift and not pending:
            ui.out(ui.nothing_to_do(f"{ui.files_match(len(the_plan.files))}, no drift"))
        line = pipeline.profiles_line(profiles)
        if line is not None:
            ui.out(line)
    return rc


def _why_now(name: str, rec: dict, choices: dict) -> str:
    """Why the route is on the model its files hold: the choice made now when it is the
    same model (a dwell holding it says so), else the reason recorded when it moved (the
    move the history asks for then shows as pending)."""
    now = (choices or {}).get(name)
    return now.reason if now is not None and now.model == rec["model"] else rec["reason"]


def _fmt(value) -> str:
    import json

    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
