"""``taosync schema``: print the JSON schema of fleet.yaml (the committed copy, so no
pydantic import), or with ``--write`` save it as ``fleet.schema.json`` beside fleet.yaml,
where the ``# yaml-language-server: $schema=./fleet.schema.json`` modeline ``taosync init``
writes points: a relative path keeps working offline, in a clone on another machine, and
in a team repo, where an absolute path into one machine's installed package would not."""

from __future__ import annotations

from pathlib import Path

import click

from taosync.settings import common_options, current

SCHEMA_NAME = "fleet.schema.json"
#: the modeline taosync init puts first in fleet.yaml (the starter template carries it)
MODELINE = f"# yaml-language-server: $schema=./{SCHEMA_NAME}"
SCHEMA_MODE = 0o644


def write_schema(directory: Path) -> tuple[Path, bool]:
    """Write the schema as ``directory``/fleet.schema.json (atomic; 0644). Returns the path
    and whether it changed anything."""
    from taosync.engine.system import current as current_system
    from taosync.errors import WriteFailed
    from taosync.fleet import schema as fleet_schema

    from taosync.privilege import rights_for

    system = current_system()
    target = Path(directory) / SCHEMA_NAME
    data = fleet_schema.text().encode("utf-8")
    try:
        with rights_for(target):  # beside fleet.yaml: with the rights fleet.yaml is read with
            if system.exists(target) and system.read_bytes(target) == data:
                return target, False
            system.make_dirs(target.parent, 0o755)
            system.write_atomic(target, data, SCHEMA_MODE)
    except OSError as exc:
        raise WriteFailed(f"{target}: cannot be written ({exc.strerror}); nothing was "
                          "changed") from None
    return target, True


@click.command("schema")
@common_options
@click.option("--write", "write", is_flag=True,
              help=f"Write {SCHEMA_NAME} beside fleet.yaml (for the editor modeline "
                   "`taosync init` writes) instead of printing it.")
def schema(write: bool = False) -> int:
    """Print the JSON schema of fleet.yaml.

    With --write, save it as fleet.schema.json beside fleet.yaml instead. With --json
    (no --write) the schema comes under "schema" in the one JSON object every command
    prints."""
    import json

    from taosync import ui
    from taosync.fleet import schema as fleet_schema

    s = current()
    if not write:
        if s.json:
            ui.emit_json({"schema": json.loads(fleet_schema.text())})
        else:
            click.echo(fleet_schema.text(), nl=False)
        return 0
    target, changed = write_schema(s.config_path().expanduser().resolve().parent)
    if s.json:
        ui.emit_json({"ok": True, "path": str(target), "changed": changed})
    else:
        ui.out(f"{'wrote' if changed else 'up to date:'} {target}")
    return 0
