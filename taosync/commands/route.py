"""``taosync route TASK``: the model id the routing table gives a task type.

For scripts (``model=$(taosync route fast)``), so it stays on the fast path: the fleet is
read through the pydantic-free run-time view (FleetView) and the key is never resolved.
An unknown task gets the default route's model, with a warning on stderr. Without TASK,
the whole table is printed. Exit 0, or 2 for an invalid fleet.
"""

from __future__ import annotations

import click

from taosync.settings import common_options, current


def load_view(resolve_key: bool = False):
    """(Loaded, view) of the configured fleet; view = the derived values route/env print."""
    from taosync.fleet.load import load_fleet

    s = current()
    loaded = load_fleet(s.config_path(), home=s.home_dir, resolve_key=resolve_key)
    return loaded, fleet_view(loaded.fleet)


def fleet_view(fleet) -> dict:
    """What the fleet says about routes and URLs, as the clients get them: read through
    :class:`~taosync.fleet.view.FleetView`, not a second copy of its logic."""
    return {
        "base_url": fleet.gateway.base_url,
        "anthropic": fleet.anthropic_url,
        "openai": fleet.openai_url,
        "gemini": fleet.gateway.gemini_base_url,
        "routes": dict(fleet.routes),
        "default_route": fleet.route_for(None),
        "default_model": fleet.model_for(None),
        "backends": {model_id: model.backend for model_id, model in fleet.models.items()},
    }


def _complete_task(ctx, param, incomplete: str):
    """Shell completion: the route names of the configured fleet (none if it does not load)."""
    try:
        _, view = load_view()
    except Exception:
        return []
    return [name for name in view["routes"] if name.startswith(incomplete)]


@click.command("route")
@common_options
@click.argument("task", required=False, shell_complete=_complete_task)
def route(task: str | None) -> int:
    """Print the model id the routing table gives TASK (no TASK: the whole table)."""
    from taosync import ui

    s = current()
    loaded, view = load_view()
    if s.verbosity >= 0:
        for p in loaded.warnings:
            ui.warn(p.format())
    urls = {"anthropic": view["anthropic"], "openai": view["openai"]}

    if task is None:
        rows = [{"route": name, "model": model, "backend": view["backends"].get(model),
                 "default": name == view["default_route"]}
                for name, model in view["routes"].items()]
        if s.json:
            ui.emit_json({"routes": rows, "default_route": view["default_route"],
                          "default_model": view["default_model"], "urls": urls})
            return 0
        width = max((len(r["route"]) for r in rows), default=0)
        for r in rows:
            mark = "  (default)" if r["default"] else ""
            click.echo(f"{r['route']:<{width}}  {r['model']}{mark}")
        return 0

    if task in view["routes"]:
        name, model = task, view["routes"][task]
    else:
        from taosync.fleet.problems import closest

        name, model = view["default_route"], view["default_model"]
        hint = closest(task, view["routes"])
        if s.verbosity >= 0:
            ui.warn(f"no route {task!r}"
                    + (f" (did you mean {hint}?)" if hint else "")
                    + "; using the default route"
                    + (f" {name}" if name else " (none set: the first catalogue model)")
                    + f" → {model}")
    if s.json:
        ui.emit_json({"task": task, "route": name, "known": task in view["routes"],
                      "model": model, "backend": view["backends"].get(model), "urls": urls})
        return 0
    click.echo(model)
    return 0
