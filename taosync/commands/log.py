"""``taosync log``: the recorded history — applies, rollbacks, redos, destroys, re-asserts."""

from __future__ import annotations

import click

from taosync.settings import common_options, current


@click.command("log", epilog="""\b
Examples:
  taosync log            # newest first; "*" marks what the files are now
  taosync log -n 5       # the last five
  taosync log --json     # for scripts
  taosync rollback --to 3
""")
@common_options
@click.option("-n", "count", type=click.IntRange(min=1), metavar="N",
              help="Only the newest N records.")
def log(count):
    """List applies, rollbacks and watch re-asserts: id, time, files, summary.

    Every record taosync keeps (apply, rollback, redo, destroy, reassert), newest first,
    with its kind, files and a one-line summary.

    Applies are kept for rollback in a window of the last 20 of your own steps; watch's
    drift re-asserts are kept beside it and never push an apply out.
    """
    from taosync import ui
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
            "files": [{"path": e["path"], "display": display_path(e["path"], home),
                       "action": e.get("action"), "clients": _clients(e),
                       "backup": e.get("backup")} for e in record.files],
        })
    if s.json:
        ui.emit_json({"records": rows, "in_effect": at.in_effect, "redoable": at.redoable})
        return 0
    if not rows:
        ui.out("no history: taosync has not written anything here yet")
        return 0
    for row in rows:
        mark = {"current": "*", "rolled back": "-", "redoable": "~"}.get(row["status"], " ")
        note = f"  ({row['status']})" if row["status"] not in ("", "current") else ""
        ui.out(f"{mark} #{row['id']:<4} {row['time']:<25}  {row['kind']:<8}  "
               f"{row['summary']}{note}")
        if s.verbosity > 0 or len(row["files"]) <= 3:
            for f in row["files"]:
                clients = ", ".join(f["clients"])
                ui.out(f"{'':8}{f['action'] or 'write':<9} {f['display']}"
                       + (f"  {clients}" if clients else ""))
        else:
            ui.out(f"{'':8}{len(row['files'])} files (-v lists them)")
    return 0


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
