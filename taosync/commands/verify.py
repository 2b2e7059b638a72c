"""``taosync verify``: one real request per backend, shaped as each client sends it.

By default each probe carries the values in the client's files as they are (base URL, key,
model, headers), so a hand-broken file fails naming that file and key path, and every owned
key path that differs from fleet.yaml is reported as drift; ``--desired`` (and ``--stub``)
probe what fleet.yaml would write instead.

Also :func:`verify_after_apply`, which ``taosync apply`` calls after writing, and
:func:`verify_fleet`, the same without printing (for callers that embed the report).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import click

from taosync.cli import common_options, settings
from taosync.clients.registry import complete, ids as client_ids
from taosync.errors import BadInput, TaosyncError


@dataclass
class Report:
    """One verify run: the results, and where the probes went."""

    results: list[Any] = field(default_factory=list)
    stub_root: str | None = None  # set when probes went to the stand-in gateway
    history: str | None = None  # the history file appended to (None if it could not be)
    warnings: list[str] = field(default_factory=list)
    #: on-disk runs: (client, line) per key path a client's file differs from fleet.yaml in
    drift: list[tuple[str, str]] = field(default_factory=list)
    #: on-disk runs: (client, why) for a client that could not be probed; each fails
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and not self.problems

    def keys(self, key: Any = None) -> list[Any]:
        """Every key this run knows of (``key`` and each one a probe sent), to scrub."""
        out = [key] if key is not None else []
        for r in self.results:
            if getattr(r, "key", None) is not None and r.key not in out:
                out.append(r.key)
        return out

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        passed = sum(1 for r in self.results if r.ok)
        return {"ok": self.ok, "stub": self.stub_root is not None,
                **({"stub_root": self.stub_root} if self.stub_root else {}),
                "passed": passed, "failed": len(self.results) - passed,
                "results": [r.to_dict() for r in self.results],
                **({"warnings": self.warnings} if self.warnings else {}),
                "drift": [{"client": c, "message": m} for c, m in self.drift],
                "problems": [{"client": c, "message": m} for c, m in self.problems]}


def stand_in_key() -> Any:
    import secrets as _s

    from taosync.fleet.secrets import Secret

    return Secret("sk-stub-" + _s.token_hex(16), "stand-in")


def verify_fleet(fleet: Any, key: Any, env: Any, *, state_dir: Any = None,
                 only: Iterable[str] | None = None, route: str | None = None,
                 stub: bool = False, strict: bool = True, on_disk: bool = False) -> Report:
    """Collect, probe (against a stand-in gateway when ``stub``), record history.

    ``on_disk``: build each probe from the values in the client's files (and report their
    drift from fleet.yaml) rather than from what fleet.yaml would write; apply and watch,
    which verify right after writing those files, need not read them back."""
    from taosync.verify import diagnose, history
    from taosync.verify.probes import collect_on_disk, collect_specs
    from taosync.verify.runner import run

    if key is None:
        if not stub:
            raise BadInput("gateway.key is not resolved; verify needs the key")
        key = stand_in_key()
    report = Report()
    problem = diagnose.key_problem(key)
    if problem:
        report.warnings.append(f"the key ({key.redacted()}) {problem}")
    selection = dict(only=list(only) if only else None, route=route, strict=strict)
    if on_disk and not stub:
        groups, found = collect_on_disk(fleet, key, env, **selection)
        for disk in found:
            report.drift += [(disk.client, line) for line in disk.drift]
            report.problems += [(disk.client, text) for text in disk.problems]
    else:
        groups = collect_specs(fleet, key, env, **selection)
    if not groups:
        return report
    if stub:
        from taosync.stub import Stub

        with Stub(key=key, models=list(fleet.models)) as server:
            report.stub_root = server.root
            report.results = run(groups, key, fleet.verify, base_override=server.root)
    else:
        report.results = run(groups, key, fleet.verify)
    if state_dir is not None:
        try:
            report.history = str(history.append(state_dir, report.results,
                                                stub=stub, key=key))
        except OSError as exc:
            report.warnings.append(f"could not append to the verify history in {state_dir}: "
                                   f"{exc.strerror or exc}")
    return report


# -- printing ------------------------------------------------------------------------------

def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    ms = seconds * 1000
    return f"{ms:.0f} ms" if ms < 1000 else f"{seconds:.1f} s"


def _tokens(r: Any) -> str:
    if r.tokens_in is None and r.tokens_out is None:
        return "—"
    return f"{r.tokens_in if r.tokens_in is not None else '?'}/" \
           f"{r.tokens_out if r.tokens_out is not None else '?'}"


def table_lines(report: Report, *, color: Any = None, verbose: bool = False) -> list[tuple[bool, str]]:
    """(is_problem, line) pairs: the header, one row per probe, cause/fix under failures."""
    style = color or (lambda text, kind: text)
    head = ["CLIENT", "ROUTE", "MODEL", "BACKEND", "", "LATENCY", "TTFB", "TOKENS", "ANSWER"]
    rows = []
    for r in report.results:
        rows.append([r.client, r.route, r.model, r.backend or "—", "✓" if r.ok else "✗",
                     _ms(r.latency), _ms(r.ttfb), _tokens(r),
                     r.answer if r.ok else (f"HTTP {r.status}" if r.status else "no answer")])
    widths = [max(len(str(x[i])) for x in [head, *rows]) for i in range(len(head))]

    def fmt(cells: list[str]) -> str:
        parts = []
        for i, cell in enumerate(cells):
            text = str(cell) if i == len(cells) - 1 else str(cell).ljust(widths[i])
            parts.append(text)
        return "  ".join(parts).rstrip()

    out = [(False, style(fmt(head), "bold"))]
    for r, cells in zip(report.results, rows):
        line = fmt(cells)
        mark = "✓" if r.ok else "✗"
        col = sum(widths[:4]) + 2 * 4
        line = line[:col] + style(mark, "ok" if r.ok else "fail") + line[col + 1:]
        out.append((not r.ok, line))
        if verbose:
            out.append((not r.ok, style(f"    {r.protocol} → {r.url} "
                                        f"({r.attempts} attempt{'s' if r.attempts != 1 else ''})",
                                        "dim")))
        if not r.ok and r.diagnosis is not None:
            d = r.diagnosis
            out.append((True, f"    {style(d.code, 'fail')}: {d.cause}"))
            out.append((True, f"    fix: {d.fix}"))
    return out


def print_report(report: Report, s: Any, key: Any = None) -> None:
    """The table (or JSON), every line through the run's redactor: it knows the fleet's
    key, every key a probe sent (a stale one read from a client file too) and the keyed
    hashes of every key taosync wrote, so a gateway echoing any of them prints none."""
    from taosync import ui
    from taosync.engine.state import StateStore
    from taosync.fleet.secrets import Redactor

    store = StateStore(s.state_dir())
    try:
        known = store.load().remembered_secrets()
    except TaosyncError:  # a damaged state must not stop a verify from reporting
        known = []
    redactor = Redactor(key, hmac_key=store.hmac_key(create=False), known_hashes=known)
    for used in report.keys():
        redactor.add(used)
    ui.use_redactor(redactor)
    scrub, echo = ui.clean, ui.echo

    for text in report.warnings:
        ui.warn(scrub(text))
    for client, line in report.drift:
        ui.warn(scrub(f"{client}: {line}"))
    if s.json:
        ui.emit_json(report.to_dict())
        return
    if report.stub_root:
        ui.out(ui.style(f"probing a stand-in gateway at {report.stub_root} with the fleet's "
                        "key and catalogue (no file is changed)", "dim"))
    for client, text in report.problems:
        ui.problem(scrub(f"{ui.style('✗', 'fail')} {client}: {text}"))
    if not report.results:
        if not report.problems:
            ui.out("nothing to verify: no enabled client in fleet.yaml")
        return
    for problem, line in table_lines(report, color=ui.style, verbose=s.verbosity > 0):
        line = scrub(line)
        if s.verbosity < 0:
            if problem:
                ui.problem(line)
        else:
            echo(line)
    passed = sum(1 for r in report.results if r.ok)
    total = len(report.results)
    summary = f"{passed}/{total} backend{'s' if total != 1 else ''} pass"
    if report.problems:
        n = len({client for client, _ in report.problems})
        summary += f"; {n} client{'s' if n != 1 else ''} not probed"
    if report.ok:
        ui.out(ui.style(summary, "ok"))
    else:
        line = ui.style(summary, "fail") + f" — {total - passed} failed"
        if s.verbosity < 0:
            ui.problem(line)
        else:
            echo(line)


def verify_after_apply(loaded: Any, env: Any, settings: Any, only: Iterable[str] | None = None,
                       stub: bool = False, *, route: str | None = None,
                       strict: bool = False, on_disk: bool = False) -> int:
    """Verify a loaded fleet (``load_fleet`` result), print the table (or JSON), append
    history; return the exit code (0 all pass, 1 any fails). ``stub``: send the probes to a
    stand-in gateway started in-process with the fleet's key and catalogue. A client in
    ``only`` that is not enabled is skipped (``strict=True``: bad input, as for verify).
    ``on_disk``: probe the values in the client files (right after an apply they are the
    desired ones, so the default reads nothing back)."""
    key = getattr(loaded, "key", None)
    report = verify_fleet(loaded.fleet, key, env, state_dir=settings.state_dir(), only=only,
                          route=route, stub=stub, strict=strict, on_disk=on_disk)
    print_report(report, settings, key)
    return report.exit_code


def _load(s: Any, env: Any, stub: bool) -> tuple[Any, list[str]]:
    """load_fleet; with --stub, a key that cannot be resolved is replaced by a stand-in
    (the quick start needs no account), any other problem is still bad input."""
    from taosync.fleet.load import load_fleet

    path = s.config_path()
    try:
        return load_fleet(path, home=s.home_dir, environ=env.environ), []
    except TaosyncError as first:
        if not stub:
            raise
        try:
            loaded = load_fleet(path, home=s.home_dir, environ=env.environ, resolve_key=False)
        except TaosyncError:
            raise first from None
        why = "; ".join(p.message for p in getattr(first, "problems", [])) or first.message
        return loaded, [f"{why} — --stub probes the stand-in gateway with a stand-in key"]


@click.command("verify")
@click.option("--only", "only", multiple=True, metavar="CLIENT", shell_complete=complete,
              help="Verify only this client (repeatable): " + ", ".join(client_ids()) + ".")
@click.option("--route", metavar="NAME", help="Verify only the probes of this route.")
@click.option("--stub", "use_stub", is_flag=True,
              help="Send the probes to a stand-in gateway on loopback, started for this run "
                   "with the fleet's key and catalogue (files are not changed); implies "
                   "--desired.")
@click.option("--desired", is_flag=True,
              help="Probe what fleet.yaml would write (e.g. before the first apply), not the "
                   "values in the client files.")
@common_options
def verify(only: tuple[str, ...], route: str | None, use_stub: bool, desired: bool) -> int:
    """Send one real request per backend, shaped as each client sends it.

    Each request carries the values in the client's files (base URL, key, model,
    headers); --desired sends what fleet.yaml would write instead. A key path that differs
    from fleet.yaml is reported as drift. Exit 0 when every backend answers, 1 when any
    fails (each failure with its cause, the file and key path it comes from, and the fix)
    or a client has no files yet, 2 on bad input.
    """
    from taosync import ui
    from taosync.engine.state import StateStore
    from taosync.pipeline import recover_first

    s = settings()
    env = s.client_env()
    recover_first(StateStore(s.state_dir()), env)  # an interrupted apply is put back first
    loaded, notes = _load(s, env, use_stub)
    for w in getattr(loaded, "warnings", []):
        ui.warn(w.format() if hasattr(w, "format") else str(w))
    for note in notes:
        ui.warn(note)
    rc = verify_after_apply(loaded, env, s, only=only or None, stub=use_stub, route=route,
                            strict=True, on_disk=not desired)
    for warning in env.warnings:
        ui.warn(warning)
    return rc
