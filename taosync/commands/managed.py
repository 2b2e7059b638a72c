"""``taosync managed``: every file and owned key per client, for this home and platform."""

from __future__ import annotations

import click

from taosync.settings import common_options, current


@click.command("managed", epilog="""\b
Examples:
  taosync managed           # per client: files, owned keys, on disk / owned marks
  taosync managed --json    # for scripts
""")
@common_options
def managed():
    """List every file and owned key per client, and whether it is on disk.

    For this home and platform, from the same render apply writes, marking which are on
    disk and which the state owns now. Files owned now but no longer rendered are listed too (the next
    apply gives them back). Values are never shown.
    """
    from taosync import pipeline, ui
    from taosync.commands.report import read_only
    from taosync.engine.inventory import inventory

    s = current()
    with read_only():
        ctx = pipeline.prepare(s, recover=False)
        state = ctx.store.load()
    clients = inventory(ctx.patches, state)
    if s.json:
        ui.emit_json({"home": str(s.home_dir), "clients": clients})
        return 0
    home = s.home_dir
    for client, files in clients.items():
        ui.out(ui.style(client, "bold"))
        for f in files:
            where = pipeline.display_path(f["path"], home)
            flags = [("on disk" if f["present"] else "not on disk"),
                     ("owned" if f["owned"] else "not owned yet")]
            if not f["rendered"]:
                flags.append("no longer rendered: the next apply gives it back")
            if f.get("error"):
                flags.append(f["error"])
            ui.out(f"  {where}  ({f['format']}; {', '.join(flags)})")
            for k in f["keys"]:
                marks = ("on disk" if k["present"] else "missing") + (
                    ", owned" if k["owned"] else "") + (
                    f", {k['role']}" if k["role"] != "owned" else "")
                ui.out(f"    {k['key']}  ({marks})")
    if not clients:
        ui.out("nothing managed: no client is enabled in fleet.yaml and taosync owns nothing here")
    return 0
