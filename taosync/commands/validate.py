"""``taosync validate``: check fleet.yaml and print every problem with its line and column.

Exit 0 when the fleet is usable (warnings go to stderr first), 2 when it is not. It
writes nothing and, to stay fast, never imports pydantic: the schema it checks is
generated from the pydantic model (see :mod:`taosync.fleet.load`).
"""

from __future__ import annotations

import click

from taosync.settings import common_options, current


@click.command("validate")
@common_options
@click.option("--no-key", is_flag=True,
              help="Do not resolve the key reference (CI without secrets); its form is "
                   "still checked.")
@click.option("--explain", is_flag=True,
              help="Also list every value with the file it came from (fleet.yaml or a "
                   "base fleet it includes).")
def validate(no_key: bool, explain: bool = False) -> int:
    """Check fleet.yaml; print every problem with its line and column."""
    from taosync import ui
    from taosync.fleet.load import FleetInvalid, load_fleet

    s = current()
    path = s.config_path()
    try:
        loaded = load_fleet(path, home=s.home_dir, resolve_key=not no_key, model=False,
                            profile=s.profile_name())
    except FleetInvalid as exc:
        return report_invalid(exc)
    if s.profile_name() is None:  # each profile merged onto the fleet is checked too
        from taosync.fleet.profiles import declared

        for name in declared(loaded.data):
            try:
                load_fleet(path, home=s.home_dir, resolve_key=False, model=False, profile=name)
            except FleetInvalid as exc:
                if not s.json:
                    ui.problem(f"with profile {name!r} (--profile {name}) merged:")
                return report_invalid(exc)

    data = loaded.data
    clients = [name for name, cfg in (data.get("clients") or {}).items()
               if isinstance(cfg, dict) and cfg.get("enabled", True) is not False
               and cfg.get("managed", True) is not False]
    counts = {"models": len(data.get("models") or {}), "routes": len(data.get("routes") or {}),
              "clients": len(clients), "mcp_servers": len(data.get("mcp_servers") or {})}
    key = {"reference": loaded.key_ref.describe(), "resolved": loaded.key is not None,
           "redacted": loaded.key.redacted() if loaded.key is not None else None}
    if s.json:
        ui.emit_json({"ok": True, "file": str(path), "sha256": loaded.sha256,
                      "problems": [p.to_json() for p in loaded.warnings],
                      "errors": 0, "warnings": len(loaded.warnings), **counts,
                      "enabled_clients": clients, "key": key,
                      **({"values": [{"path": p, "value": v, "file": f}
                                     for p, v, f in loaded.explain()]} if explain else {})})
        return 0
    for p in loaded.warnings:
        ui.problem(p.format())
    line = (f"{_count(counts['models'], 'model')}, {_count(counts['routes'], 'route')}, "
            f"{_count(counts['clients'], 'client')}")
    if counts["mcp_servers"]:
        line += f", {_count(counts['mcp_servers'], 'MCP server')}"
    ui.out(f"{ui.style('OK', 'ok')}: {path} — {line}")
    if explain:
        for where, value, origin in loaded.explain():
            ui.out(f"  {where} = {value!r}  ({origin})")
    ui.detail(f"clients: {', '.join(clients) or 'none'}")
    if loaded.key is not None:
        ui.detail(f"key: {key['reference']} → {key['redacted']}")
    else:
        ui.detail(f"key: {key['reference']} (not resolved: --no-key)")
    return 0


def report_invalid(exc) -> int:
    """Every problem of an invalid fleet, located (or validate's JSON of them); its exit code."""
    from taosync import ui

    if current().json:
        ui.emit_json({"ok": False, "file": exc.file,
                      "problems": [p.to_json() for p in exc.all()],
                      "errors": len(exc.problems), "warnings": len(exc.warnings),
                      "error": exc.message}, exit_code=exc.exit_code)
        return exc.exit_code
    for p in exc.all():
        ui.problem(p.format())
    n, w = len(exc.problems), len(exc.warnings)
    summary = f"{exc.file}: {_count(n, 'problem')}"
    if w:
        summary += f", {_count(w, 'warning')}"
    ui.problem(ui.style("error: ", "fail") + summary)
    return exc.exit_code


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
