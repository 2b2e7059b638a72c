"""``taosync stats``: from verify history, per model or ``--by route`` — runs, failures,
median and p95 latency, TTFB, tokens in/out — and ``--recommend``: each route's declared
candidates ranked by the score routes use, with advice (never an edit of fleet.yaml)."""

from __future__ import annotations

import click

from taosync.hints import again
from taosync.settings import common_options, current
from taosync.commands.route import complete_model

#: advice names a model only when it scores at least this much better than the route's
#: (a few milliseconds between two healthy backends are noise, not a reason to re-pin)
ADVICE_MARGIN = 1.25


def _since(ctx, param, value: str | None) -> float | None:
    if value is None:
        return None
    from taosync.verify.routing import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("stats")
@click.option("--model", "models", multiple=True, metavar="ID", shell_complete=complete_model,
              help="Only this model (repeatable).")
@click.option("--by", "by", type=click.Choice(["model", "route"]), default="model",
              show_default=True, help="One row per model, or per route the probes stood for.")
@click.option("--since", metavar="AGE", callback=_since,
              help="Only probes younger than AGE (e.g. 1h, 30m, 7d).")
@click.option("--recommend", is_flag=True,
              help="For each route with candidates, rank those candidates by the routing "
                   "score (latency × tokens × cost; quality is not measured) and say when "
                   "another would be faster or cheaper (advice only).")
@click.option("--include-stub", is_flag=True,
              help="Count runs against the stand-in gateway too (left out by default: their "
                   "latencies say nothing about the real backends).")
@common_options
def stats(models: tuple[str, ...], by: str, since: float | None, recommend: bool,
          include_stub: bool) -> int:
    """Per model (or route): runs, failures, median/p95 latency, TTFB, tokens in/out."""
    import time

    from taosync import ui
    from taosync.verify import history
    from taosync.verify.routing import when

    s = current()
    records = history.read(s.state_dir())
    if models:
        records = [r for r in records if r["model"] in models]
    if since is not None:
        cutoff = time.time() - since
        records = [r for r in records if when(r) >= cutoff]
    if recommend:
        return _recommend(s, records, include_stub)
    rows = history.summarize(records, include_stub=include_stub, by=by)
    if s.json:
        ui.emit_json({"history": str(history.path(s.state_dir())),
                      ("routes" if by == "route" else "models"): rows})
        return 0
    if not rows:
        skipped = sum(1 for r in records if r.get("stub"))
        ui.out(f"no verify history yet: run `{again('verify')}`"
               + (f" ({skipped} stand-in probe(s) left out; --include-stub shows them)"
                  if skipped and not include_stub else ""))
        return 0
    # every column says what it holds: the tokens are the runs' totals, the last probe
    # says passed or failed in words (an unlabelled ✓ read as "healthy now")
    head = [by.upper(), "BACKEND", "RUNS", "FAILS", "MEDIAN", "P95", "TTFB",
            "TOTAL TOKENS IN/OUT", "LAST PROBE"]
    table = []
    for r in rows:
        last = "—"
        if r["last"]:
            last = ("passed " if r["last_ok"] else
                    f"failed ({r['last_code'] or 'no answer'}) ") + r["last"]
        table.append([
            r[by], r["backend"] or "—", str(r["runs"]),
            f"{r['failures']} ({r['failure_rate'] * 100:.0f}%)" if r["failures"] else "0",
            _ms(r["median_latency_ms"]), _ms(r["p95_latency_ms"]), _ms(r["median_ttfb_ms"]),
            f"{r['tokens_in']}/{r['tokens_out']}", last])
    _table(head, table)
    return 0


def _ms(value) -> str:
    return f"{value} ms" if value is not None else "—"


def _table(head: list[str], table: list[list[str]]) -> None:
    from taosync import ui

    widths = [max(len(row[i]) for row in [head, *table]) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    ui.out(ui.style(line(head), "bold"))
    for row in table:
        ui.out(line(row))


#: what ``--recommend`` ranks by, and what it cannot see: the ``score`` policy's own
#: formula (taosync.verify.routing), so advice and a ``policy: score`` route never disagree
BASIS_SCORE = "weight / (median latency s × median tokens × cost)"
NOT_MEASURED = "answer quality (a probe asks for a few tokens; nothing judges the answers)"


def basis(fleet) -> dict:
    """What the ranking rests on, for the text's basis line and ``--json``."""
    return {"score": BASIS_SCORE, "window": fleet.routing.window,
            "max_age": fleet.routing.max_age, "not_measured": NOT_MEASURED}


def recommendations(fleet, records, *, now: float | None = None) -> list[dict]:
    """Per route: its declared candidates ranked by the ``score`` policy (the route's
    weight, each candidate's cost, medians over the last ``window`` passing probes), the
    model the route resolves to now, and advice when a healthy candidate would score
    better. Only a route's own candidates are ever ranked or advised: a route that names
    one model is ``fixed`` (a faster model elsewhere in the catalogue says nothing about
    the answers the route is for)."""
    import time

    from taosync.verify import routing

    now = time.time() if now is None else now
    records = [r for r in records if not r.get("stub")]
    max_age = routing.parse_duration(fleet.routing.max_age)
    out = []
    for name, target in fleet.routes.items():
        pinned = isinstance(target, str)
        declared = fleet.route_candidates(name)
        weight = routing.weight_of(name, None if pinned else target.weight)
        costs = {m: fleet.models[m].cost for m in declared if m in fleet.models}
        current = fleet.route_model(name)
        # the score policy's own choice among the declared candidates (no dwell: advice
        # looks at the history alone)
        choice = routing.choose(name, {"candidates": declared, "policy": "score",
                                       "weight": weight, "cost": costs}, records, now=now,
                                window=fleet.routing.window, max_age=max_age)
        ranked = sorted((c for c in choice.candidates if c.score is not None),
                        key=lambda c: -(c.score or 0.0))  # every score here is a number
        no_data = [{"model": c.model, "why": c.why if c.health != routing.HEALTHY
                    else "no passing probe with a latency"}
                   for c in choice.candidates if c.score is None]
        fixed = len(declared) == 1
        advice = None
        if not fixed and choice.healthy:
            advice = _advice(name, current, choice.model, ranked)
        out.append({"route": name, "model": current, "pinned": pinned, "fixed": fixed,
                    "policy": None if pinned else target.policy, "weight": weight,
                    "candidates": declared, "ranking": [c.to_dict() for c in ranked],
                    "no_data": no_data, "advice": advice})
    return out


def _advice(route: str, current: str, best_model: str, ranked: list) -> str | None:
    """``prefer X for ROUTE: scores 1.8× Y (faster: …)`` when the best healthy candidate
    beats the route's current one by :data:`ADVICE_MARGIN`, else None."""
    best = next((c for c in ranked if c.model == best_model), None)
    mine = next((c for c in ranked if c.model == current), None)
    if best is None or best.model == current or (mine is not None and best.score < mine.score * ADVICE_MARGIN):
        return None
    why = []
    if mine is not None:
        if best.median_latency_ms < mine.median_latency_ms:
            why.append(f"faster: {best.median_latency_ms:.0f} ms median vs "
                       f"{mine.median_latency_ms:.0f} ms")
        if best.cost < mine.cost:
            why.append(f"cheaper: cost {best.cost:g} vs {mine.cost:g}")
        ratio = f" scores {best.score / mine.score:.1f}× {current}"
    else:
        ratio = f" scores best; {current} has no passing probe on record"
    return f"prefer {best.model} for {route}:{ratio}" + (f" ({'; '.join(why)})" if why else "")


def _recommend(s, records, include_stub: bool) -> int:
    from taosync import ui
    from taosync.commands.route import load_view

    if include_stub:
        ui.warn("--recommend leaves stand-in runs out: their latencies say nothing about "
                "the real backends")
    loaded, _view = load_view()
    fleet = loaded.fleet
    rows = recommendations(fleet, records)
    why = basis(fleet)
    if s.json:
        ui.emit_json({"basis": why, "routes": rows})
        return 0
    choosing = [row for row in rows if not row["fixed"]]
    for row in choosing:
        ui.out(ui.style(f"route {row['route']} (chooses by {row['policy']}, now "
                        f"{row['model']}, weight {row['weight']:g}; candidates: "
                        f"{', '.join(row['candidates'])})", "bold"))
        for rank, c in enumerate(row["ranking"], 1):
            mark = "→" if c["model"] == row["model"] else " "
            ui.out(f"  {mark} {rank}. {c['model']}  score {c['score']:.4g}  "
                   f"median {c['median_latency_ms']:.0f} ms  p95 {c['p95_latency_ms']:.0f} ms  "
                   f"tokens {c['median_tokens']:.0f}  cost {c['cost']:g}  {c['health']}")
        for c in row["no_data"]:
            mark = "→" if c["model"] == row["model"] else " "
            ui.out(f"  {mark} —  {c['model']}  no data: {c['why']}")
        if not row["ranking"]:
            ui.out(f"  no passing probe on record: run `{again('verify')}`")
        ui.out(f"  advice: {row['advice']}" if row["advice"] else "  advice: keep it")
    fixed = [f"{row['route']} ({row['model']})" for row in rows if row["fixed"]]
    if not choosing:
        ui.out("no route declares candidates: nothing to recommend (give a route "
               "`candidates:` to compare models on it)")
    if fixed:
        ui.out(f"fixed, one model each, nothing to recommend: {', '.join(fixed)}")
    if choosing:
        ui.out(f"basis: score = {why['score']} over each candidate's last {why['window']} "
               f"passing probes — latency, tokens and cost only; quality is not measured")
    ui.out(ui.style("advice only: fleet.yaml is not changed", "dim"))
    return 0
