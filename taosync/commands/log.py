"""``taosync log``: the recorded history — applies, rollbacks, redos, destroys, re-asserts,
route re-renders."""

from __future__ import annotations

import click

from taosync.settings import common_options, current


@click.command("log", epilog="""\b
Examples:
  taosync log            # newest first; "*" marks what the files are now
  taosync log -n 5       # the last five
  taosync log --json     # for scripts
  taosync apply -m "deep route on r1"   # the note log shows under that apply
  taosync rollback --to 3
""")
@common_options
@click.option("-n", "count", type=click.IntRange(min=1), metavar="N",
              help="Only the newest N records.")
def log(count):
    """List applies, rollbacks and watch re-asserts: id, time, files, summary.

    Every record taosync keeps (apply, rollback, redo, destroy, reassert), newest first,
    with its kind, files and a one-line summary. An apply also names the fleet keys it
    changed since the apply before it ("fleet: gateway.base_url, routes.deep, key
    rotated": names only, never a value) and the note given with apply -m.

    Applies are kept for rollback in a window of the last 20 of your own steps; watch's
    drift re-asserts and route re-renders (a route's choice moving) are kept beside it
    and never push an apply out. Consecutive route re-renders show as one line (-v:
    each); rollback steps over them.
    """
    from taosync import ui
    from taosync.engine.prune import not_restorable
    from taosync.engine.rollback import cursor
    from taosync.pipeline import display_path, state_store

    s = current()
    state = state_store(s).load()
    at = cursor(state)
    records = list(reversed(state.applies))[:count]
    home = s.home_dir
    rows = []
    for record in records:
        rows.append({
            "id": record.id, "time": record.time, "kind": record.kind,
            "undoes": record.undoes, "summary": summary(record, state),
            "status": _status(record, at),
            "restorable": not not_restorable(record),
            "changes": record.changes, "message": record.message,
            "files": [{"path": e["path"], "display": display_path(e["path"], home),
                       "action": e.get("action"), "clients": _clients(e),
                       "backup": None if e.get("pruned") else e.get("backup"),
                       "pruned": bool(e.get("pruned"))} for e in record.files],
        })
    if s.json:
        ui.emit_json({"records": rows, "in_effect": at.in_effect, "redoable": at.redoable})
        return 0
    if not rows:
        ui.out("no history: taosync has not written anything here yet")
        return 0
    for row in (rows if s.verbosity > 0 else _folded(rows)):
        if row["kind"] == "routes":
            ui.out(f"  #{row['id']:<4} {row['time']:<25}  route     {row['summary']}")
            continue
        mark = {"current": "*", "rolled back": "-", "redoable": "~"}.get(row["status"], " ")
        notes = [row["status"]] if row["status"] not in ("", "current") else []
        if not row["restorable"]:
            notes.append("not restorable: backups dropped by taosync prune")
        note = f"  ({'; '.join(notes)})" if notes else ""
        ui.out(f"{mark} #{row['id']:<4} {row['time']:<25}  {row['kind']:<8}  "
               f"{row['summary']}{note}")
        if row["changes"] is not None:
            ui.out(f"{'':8}fleet: {', '.join(row['changes']) or 'no key changed'}")
        if row["message"]:
            for n, line in enumerate(row["message"].splitlines()):
                ui.out(f"{'':8}{'note: ' if n == 0 else '      '}{line}")
        if s.verbosity > 0 or len(row["files"]) <= 3:
            for f in row["files"]:
                clients = ", ".join(f["clients"])
                ui.out(f"{'':8}{f['action'] or 'write':<9} {f['display']}"
                       + (f"  {clients}" if clients else "")
                       + ("  (backup pruned)" if f["pruned"] else ""))
        else:
            ui.out(f"{'':8}{len(row['files'])} files (-v lists them)")
    return 0


def _folded(rows: list[dict]) -> list[dict]:
    """``rows`` (newest first) with each run of two or more route re-renders as one row."""
    out: list[dict] = []
    run: list[dict] = []
    for row in [*rows, None]:
        if row is not None and row["kind"] == "route":
            run.append(row)
            continue
        if len(run) > 1:
            clients = sorted({c for r in run for f in r["files"] for c in f["clients"]})
            paths = {f["path"] for r in run for f in r["files"]}
            who = f" ({', '.join(clients)})" if clients else ""
            out.append({"kind": "routes", "id": f"{run[-1]['id']}-#{run[0]['id']}",
                        "time": run[0]["time"],
                        "summary": f"{len(run)} route re-renders of {len(paths)} "
                        f"file{'s' if len(paths) != 1 else ''}{who}: not your applies, "
                        "rollback steps over them (-v lists each)"})
        else:
            out.extend(run)
        run = []
        if row is not None:
            out.append(row)
    return out


def summary(record, state) -> str:
    """One line: what the record did, to how many files of which clients."""
    n = len(record.files)
    files = f"{n} file{'s' if n != 1 else ''}"
    clients = sorted({c for e in record.files for c in _clients(e)})
    who = f" ({', '.join(clients)})" if clients else ""
    kinds = {r.id: r.kind for r in state.applies}
    undone = ", ".join(f"{kinds.get(i, 'record')} #{i}" for i in record.undoes)
    if record.kind == "rollback":
        return f"stepped back over {undone or 'an earlier apply'}: {files} restored{who}"
    if record.kind == "redo":
        return f"took back {undone or 'a rollback'}: {files} restored{who}"
    if record.kind == "destroy":
        return f"gave back every owned key: {files}{who}"
    if record.kind == "reassert":
        return f"watch re-asserted drifted keys: {files}{who}"
    if record.kind == "route":
        return (f"route re-render (a route's choice moved): {files}{who}; not your apply, "
                "rollback steps over it")
    actions: dict[str, int] = {}
    for e in record.files:
        actions[e.get("action") or "write"] = actions.get(e.get("action") or "write", 0) + 1
    detail = ", ".join(f"{k} {v}" for k, v in sorted(actions.items()))
    return f"wrote {files}: {detail}{who}"


def _clients(entry: dict) -> list[str]:
    before = entry.get("before") or {}
    return list(entry.get("clients") or before.get("clients") or [])


def _status(record, at) -> str:
    """current (the newest step in effect), rolled back, redoable, or ""."""
    from taosync.engine.rollback import STEPS

    if at.in_effect and record.id == at.in_effect[-1]:
        return "current"
    if record.kind in STEPS and record.id not in at.in_effect:
        return "rolled back"
    if record.id in at.redoable:
        return "redoable"
    return ""
