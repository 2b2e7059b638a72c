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


def inventory(patches, state) -> dict[str, list[dict]]:
    """client → its files, each with its key paths (owned, volatile, skeleton) and
    whether each is present in the file on disk and owned in the state."""
    from taosync.formats.base import keypath_str

    clients: dict[str, list[dict]] = {}
    rendered = set()
    for patch in patches:
        rendered.add(str(patch.path))
        keys = ([(kp, "owned") for kp in patch.values] + [(kp, "volatile") for kp in patch.volatile]
                + [(kp, "skeleton (filled in when missing)") for kp in patch.skeleton])
        clients.setdefault(patch.client, []).append(
            _file(str(patch.path), patch.format, [(keypath_str(kp), role) for kp, role in keys],
                  state, rendered=True))
    for path_text, fs in sorted(state.files.items()):
        if path_text in rendered:
            continue
        keys = [(k, "volatile" if o.volatile else "owned") for k, o in fs.owned.items()]
        for client in fs.clients:
            clients.setdefault(client, []).append(
                _file(path_text, fs.format, keys, state, rendered=False))
    return clients


def _file(path_text: str, fmt: str, keys, state, *, rendered: bool) -> dict:
    """One file's entry: present on disk, owned in the state, and each key's marks."""
    from pathlib import Path

    from taosync.engine.plan import read_target
    from taosync.errors import BadInput
    from taosync.formats.base import MISSING, keypath_parse
    from taosync.formats.registry import editor_for

    owned = state.files.get(path_text)
    doc, editor, error = None, None, None
    try:
        text = read_target(Path(path_text))[1]
        if text is not None:
            editor = editor_for(fmt)
            doc = editor.parse(text)
    except BadInput as exc:
        text, error = None, exc.message
    except Exception as exc:  # a file that does not parse: its keys cannot be looked up
        error = f"does not parse ({type(exc).__name__})"
    entries = []
    for key, role in keys:
        present = (doc is not None and editor is not None
                   and editor.get(doc, keypath_parse(key)) is not MISSING)
        entries.append({"key": key, "role": role, "present": present,
                        "owned": owned is not None and key in owned.owned})
    return {"path": path_text, "format": fmt, "rendered": rendered,
            "present": _present(path_text), "owned": owned is not None,
            "keys": entries, **({"error": error} if error else {})}


def _present(path_text: str) -> bool:
    from pathlib import Path

    from taosync.privilege import owner_rights

    with owner_rights():  # root on a user's home: looked at as its owner
        return Path(path_text).exists()
