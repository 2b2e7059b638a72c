"""``taosync route TASK``: the model id the routing table gives a task type.

A route with candidates prints the candidate chosen from the verify history (as apply
would render it); ``--explain`` shows every candidate with its health, median and p95
latency, tokens, cost, score and the reason for the choice.

For scripts (``model=$(taosync route fast)``), so it stays on the fast path: the fleet is
read through the pydantic-free run-time view (FleetView) and the key is never resolved.
An unknown task is an error (exit 1, "did you mean" on stderr), so a script never runs
on a model it did not ask for; ``--default`` opts into the default route's model instead
(with a warning). Without TASK, the whole table is printed. Exit 0, 1 for an unknown
task, or 2 for an invalid fleet.
"""

from __future__ import annotations

import click

from taosync.settings import common_options, current


def load_view(resolve_key: bool = False):
    """(Loaded, view) of the configured fleet; view = the derived values route/env print."""
    from taosync.fleet.load import load_fleet

    from taosync.engine.state import StateStore
    from taosync.pipeline import resolve_routes

    s = current()
    loaded = load_fleet(s.config_path(), home=s.home_dir, resolve_key=resolve_key,
                        profile=s.profile_name())
    choices = resolve_routes(loaded.fleet, StateStore(s.state_dir()))
    return loaded, dict(fleet_view(loaded.fleet), choices=choices)


def fleet_view(fleet) -> dict:
    """What the fleet says about routes and URLs, as the clients get them: read through
    :class:`~taosync.fleet.view.FleetView`, not a second copy of its logic."""
    return {
        "base_url": fleet.gateway.base_url,
        "anthropic": fleet.anthropic_url,
        "openai": fleet.openai_url,
        "gemini": fleet.gateway.gemini_base_url,
        "routes": {name: fleet.route_model(name) for name in fleet.routes},
        "default_route": fleet.route_for(None),
        "default_model": fleet.model_for(None),
        "backends": {model_id: model.backend for model_id, model in fleet.models.items()},
    }


def _completer(field: str, doc: str):
    """A shell completer offering the names in ``fleet_view()[field]`` (none if the fleet
    does not load)."""
    def complete(ctx, param, incomplete: str):
        try:
            _, view = load_view()
        except Exception:
            return []
        return [name for name in view[field] if name.startswith(incomplete)]

    complete.__doc__ = doc
    return complete


complete_route = _completer("routes", "Shell completion: the route names of the configured fleet.")
complete_model = _completer("backends", "Shell completion: the catalogue's model ids.")


@click.command("route")
@common_options
@click.argument("task", required=False, shell_complete=complete_route)
@click.option("--explain", is_flag=True,
              help="Show each candidate: health, median and p95 latency, tokens, cost, score, "
                   "and why the route chose as it did.")
@click.option("--default", "use_default", is_flag=True,
              help="An unknown TASK gets the default route's model (with a warning) "
                   "instead of exit 1.")
def route(task: str | None, explain: bool, use_default: bool = False) -> int:
    """Print the model id the routing table gives TASK (no TASK: the whole table).

    An unknown TASK exits 1 with "did you mean" on stderr; --default gives it the
    default route's model instead.
    """
    from taosync import ui

    s = current()
    loaded, view = load_view()
    if s.verbosity >= 0:
        for p in loaded.warnings:
            ui.warn(p.format())
    urls = {"anthropic": view["anthropic"], "openai": view["openai"]}

    if task is None:
        choices = view["choices"]
        rows = [{"route": name, "model": model, "backend": view["backends"].get(model),
                 "default": name == view["default_route"],
                 **({"candidates": [c.model for c in choices[name].candidates],
                     "policy": choices[name].policy} if name in choices else {})}
                for name, model in view["routes"].items()]
        if s.json:
            ui.emit_json({"routes": rows, "default_route": view["default_route"],
                          "default_model": view["default_model"], "urls": urls})
            return 0
        width = max((len(r["route"]) for r in rows), default=0)
        for r in rows:
            mark = "  (default)" if r["default"] else ""
            if "candidates" in r:
                mark += f"  ({r['policy']} of {len(r['candidates'])}: {', '.join(r['candidates'])})"
            click.echo(f"{r['route']:<{width}}  {r['model']}{mark}")
        return 0

    if task in view["routes"]:
        name, model = task, view["routes"][task]
    else:
        from taosync.fleet.problems import closest

        name, model = view["default_route"], view["default_model"]
        hint = closest(task, view["routes"])
        if not use_default:
            message = (f"no route {task!r}" + (f" (did you mean {hint}?)" if hint else "")
                       + "; routes: " + (", ".join(view["routes"]) or "none")
                       + " (--default takes the default route's model)")
            if s.json:
                ui.emit_json({"task": task, "known": False, "error": message,
                              "problems": [{"file": str(loaded.path), "line": None,
                                            "column": None, "path": "routes",
                                            "message": message, "severity": "error"}]},
                             exit_code=1)
            else:
                ui.problem(ui.style("error: ", "fail") + message)
            return 1
        if s.verbosity >= 0:
            ui.warn(f"no route {task!r}"
                    + (f" (did you mean {hint}?)" if hint else "")
                    + "; using the default route"
                    + (f" {name}" if name else " (none set: the first catalogue model)")
                    + f" → {model}")
    choice = view["choices"].get(name)
    if s.json:
        ui.emit_json({"task": task, "route": name, "known": task in view["routes"],
                      "model": model, "backend": view["backends"].get(model), "urls": urls,
                      **({"choice": choice.to_dict()} if explain and choice else {})})
        return 0
    click.echo(model)
    if explain:
        for line in explain_lines(name, model, choice):
            click.echo(ui.terminal_safe(line))  # history text (its codes) is data
    return 0


def explain_lines(name: str | None, model: str, choice) -> list[str]:
    """The ``--explain`` table: one row per candidate, then the reason."""
    if choice is None:
        return [f"route {name} names one model: {model}" if name else
                "no route: the first catalogue model"]

    def num(value, unit: str = "", fmt: str = "{:.0f}") -> str:
        return "—" if value is None else fmt.format(value) + unit

    head = ["ON", "CANDIDATE", "HEALTH", "MEDIAN", "P95", "MEDIAN TOKENS", "COST", "SCORE",
            "WHY"]
    rows = [["→" if c.model == choice.model else "", c.model, c.health,
             num(c.median_latency_ms, " ms"), num(c.p95_latency_ms, " ms"),
             num(c.median_tokens), f"{c.cost:g}", num(c.score, "", "{:.4g}"), c.why]
            for c in choice.candidates]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()
           for r in [head, *rows]]
    out.append(f"policy {choice.policy}: {choice.reason}")
    return out
