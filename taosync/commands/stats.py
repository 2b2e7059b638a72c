"""``taosync stats``: per model, from verify history — runs, failures, median latency, tokens."""

from __future__ import annotations

import json

import click

from taosync.settings import common_options, current
from taosync.commands.route import complete_model


@click.command("stats")
@click.option("--model", "models", multiple=True, metavar="ID", shell_complete=complete_model, help="Only this model (repeatable).")
@click.option("--include-stub", is_flag=True,
              help="Count runs against the stand-in gateway too (left out by default: their "
                   "latencies say nothing about the real backends).")
@common_options
def stats(models: tuple[str, ...], include_stub: bool) -> int:
    """Per model: runs, failures, median latency, tokens (from verify history)."""
    from taosync import ui
    from taosync.verify import history

    s = current()
    records = history.read(s.state_dir())
    if models:
        records = [r for r in records if r["model"] in models]
    rows = history.summarize(records, include_stub=include_stub)
    if s.json:
        click.echo(json.dumps({"history": str(history.path(s.state_dir())), "models": rows},
                              indent=2, ensure_ascii=False))
        return 0
    if not rows:
        skipped = sum(1 for r in records if r.get("stub"))
        ui.out("no verify history yet: run `taosync verify`"
               + (f" ({skipped} stand-in probe(s) left out; --include-stub shows them)"
                  if skipped and not include_stub else ""))
        return 0
    head = ["MODEL", "BACKEND", "RUNS", "FAILS", "MEDIAN", "TTFB", "TOKENS IN/OUT", "LAST"]
    table = []
    for r in rows:
        last = "—"
        if r["last"]:
            last = ("✓ " if r["last_ok"] else f"✗ {r['last_code'] or 'failed'} ") + r["last"]
        table.append([
            r["model"], r["backend"] or "—", str(r["runs"]),
            f"{r['failures']} ({r['failure_rate'] * 100:.0f}%)" if r["failures"] else "0",
            f"{r['median_latency_ms']} ms" if r["median_latency_ms"] is not None else "—",
            f"{r['median_ttfb_ms']} ms" if r["median_ttfb_ms"] is not None else "—",
            f"{r['tokens_in']}/{r['tokens_out']}", last])
    widths = [max(len(row[i]) for row in [head, *table]) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    ui.out(ui.style(line(head), "bold"))
    for row in table:
        ui.out(line(row))
    return 0
