"""A verify run without printing: collect the probes, send them (to the stand-in gateway
with ``stub``), record the history, and hand back a :class:`Report`.

Shared by ``taosync verify``, ``taosync apply`` (after writing) and ``taosync watch``,
which print it their own way; :func:`table_lines` gives the table as plain lines (no
click, no terminal) for any of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from taosync.errors import BadInput


def sent_credentials(groups) -> list[Any]:
    """Every header value and URL userinfo the probes send (read from client files too)."""
    from taosync.fleet.logic import url_userinfo

    out: list[Any] = []
    for g in groups:
        out += [value for _name, value in g.headers]
        out += [u for u in (url_userinfo(g.url), url_userinfo(g.base_url)) if u]
    return out


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
    #: route → taosync.verify.routing.Choice, from the history this run added to
    routes: dict = field(default_factory=dict)
    #: ``--stub`` without the key: the stand-in accepted any key (none was checked)
    any_key: bool = False
    #: ``verify --strict``: a failing standby candidate fails the run too
    strict: bool = False
    #: the gateway's other credentials (URL userinfo, header values: the fleet's and
    #: those read from client files), each a secret no line may print
    credentials: list[Any] = field(default_factory=list)
    #: (client, why) for an enabled app that sends nothing to the gateway (it takes only
    #: MCP servers): not a failure, and never counted as a pass
    unprobed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def failed(self) -> list[Any]:
        """The results that fail the run: a model some client is on (or fleet.yaml would
        put one on), and with ``strict`` a standby candidate too."""
        return [r for r in self.results if not r.ok and (self.strict or not r.standby)]

    @property
    def standby_failed(self) -> list[Any]:
        """Failing standby candidates: a warning (the route just does not move there)."""
        return [r for r in self.results if not r.ok and r.standby]

    @property
    def ok(self) -> bool:
        return (not self.failed and not self.problems
                and all(c.healthy for c in self.routes.values()))

    def keys(self, key: Any = None) -> list[Any]:
        """Every key this run knows of (``key`` and each one a probe sent), to scrub."""
        out = [key] if key is not None else []
        for r in self.results:
            if getattr(r, "key", None) is not None and r.key not in out:
                out.append(r.key)
        return out + list(self.credentials)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        passed = sum(1 for r in self.results if r.ok)
        return {"ok": self.ok, "stub": self.stub_root is not None, "strict": self.strict,
                **({"stub_root": self.stub_root} if self.stub_root else {}),
                "passed": passed, "failed": len(self.results) - passed,
                "results": [r.to_dict() for r in self.results],
                **({"warnings": self.warnings} if self.warnings else {}),
                **({"routes": {n: c.to_dict() for n, c in self.routes.items()}}
                   if self.routes else {}),
                "drift": [{"client": c, "message": m} for c, m in self.drift],
                "problems": [{"client": c, "message": m} for c, m in self.problems],
                **({"unprobed": [{"client": c, "message": m} for c, m in self.unprobed]}
                   if self.unprobed else {})}


def stand_in_key() -> Any:
    """A made-up key for ``--stub`` when gateway.key does not resolve (its source says so:
    a file is never judged against it)."""
    import secrets as _s

    from taosync.fleet.secrets import STAND_IN, Secret

    return Secret("sk-stub-" + _s.token_hex(16), STAND_IN)


def verify_fleet(fleet: Any, key: Any, env: Any, *, state_dir: Any = None,
                 only: Iterable[str] | None = None, route: str | None = None,
                 stub: Any = None, strict: bool = True, on_disk: bool = False,
                 standby_fails: bool = False, on_start: Any = None, on_groups: Any = None,
                 on_result: Any = None) -> Report:
    """Collect, probe (against a stand-in gateway when ``stub``), record history.

    ``stub``: the stand-in gateway to start for this run (``taosync.stub.Stub``, passed in
    by the caller so verify stays below the stub in the layers), or None for the real one.

    ``on_disk``: build each probe from the values in the client's files (and report their
    drift from fleet.yaml) rather than from what fleet.yaml would write; apply and watch,
    which verify right after writing those files, need not read them back. Either way the
    fleet answers with the route choices the history makes now (``state_dir``): the render
    apply wrote and status compares the files with.

    ``standby_fails`` (``verify --strict``): a failing standby candidate fails the run;
    otherwise it is a warning. ``key`` None (``--stub`` without the key): the stand-in
    gets a made-up key and accepts any, and no key path is compared with fleet.yaml.

    ``on_groups(groups, report)``: called once right before the probes are sent (the
    stand-in already started, so ``report.stub_root`` is known); ``on_result(result)``:
    each ProbeResult the moment its probe finishes. Together they print a live table;
    ``report.results`` keeps the probe order either way."""
    from taosync.verify import diagnose, history
    from taosync.verify.probes import collect_on_disk, collect_specs
    from taosync.verify.runner import run

    unresolved = key is None
    if unresolved:
        if not stub:
            raise BadInput("gateway.key is not resolved; verify needs the key")
        key = stand_in_key()
    if state_dir is not None:
        choose_routes(fleet, state_dir)
    report = Report(strict=standby_fails, any_key=unresolved,
                    credentials=fleet.gateway_credentials())
    problem = diagnose.key_problem(key)
    if problem:
        report.warnings.append(f"the key ({key.redacted()}) {problem}")
    selected = list(only) if only else None
    report.unprobed = mcp_only(fleet, selected)
    if on_disk:
        groups, found = collect_on_disk(fleet, key, env, only=selected, route=route,
                                        strict=strict)
        for disk in found:
            report.drift += [(disk.client, line) for line in disk.drift]
            report.problems += [(disk.client, text) for text in disk.problems]
        if stub:
            groups = [_relative_to_gateway(g, fleet) for g in groups]
    else:
        groups = collect_specs(fleet, key, env, only=selected, route=route, strict=strict)
    groups = with_candidates(groups, fleet)
    report.credentials += sent_credentials(groups)
    if not groups:
        return report
    if on_start is not None:  # the caller's progress line: how many requests are under way
        on_start(len(groups))
    if stub:
        # without the key the stand-in cannot tell a right key from a wrong one
        # one stand-in answers every gateway: with several keys it cannot hold to one
        several = bool(fleet.gateway_keys())
        with stub(key=None if unresolved or several else key,
                  models=list(fleet.models)) as server:
            report.stub_root = server.root
            if on_groups is not None:
                on_groups(groups, report)
            report.results = run(groups, key, fleet.verify, base_override=server.root,
                                 on_result=on_result)
    else:
        if on_groups is not None:
            on_groups(groups, report)
        report.results = run(groups, key, fleet.verify, on_result=on_result)
    if not standby_fails:
        report.warnings += standby_warnings(report.standby_failed)
    if state_dir is not None:
        try:
            report.history = str(history.append(state_dir, report.results,
                                                stub=bool(stub), key=key,
                                                keep=fleet.routing.window))
        except OSError as exc:
            report.warnings.append(f"could not append to the verify history in {state_dir}: "
                                   f"{exc.strerror or exc}")
        if not stub:
            report.routes = _route_choices(fleet, state_dir)
    return report


def mcp_only(fleet: Any, only: list[str] | None) -> list[tuple[str, str]]:
    """(client, why) for each enabled (and selected) app that takes only MCP servers:
    there is nothing to probe for it (its MCP entries are still compared with fleet.yaml,
    as every client's are)."""
    from taosync.clients.registry import all as all_clients

    enabled = fleet.enabled_clients()
    return [(client_id, f"nothing to probe: {module.TITLE} takes no custom gateway, only "
             f"MCP servers (its entries are compared with fleet.yaml)")
            for client_id, module in all_clients().items()
            if not module.GATEWAY and client_id in enabled and (not only or client_id in only)]


def standby_warnings(results: list[Any]) -> list[str]:
    """One line per failing standby candidate and route (its clients' probes together)."""
    seen: dict[tuple[str, str], list[Any]] = {}
    for r in results:
        seen.setdefault((r.model, r.route), []).append(r)
    out = []
    for (model, route), rows in seen.items():
        r = rows[0]
        why = f"HTTP {r.status}" if r.status else (r.diagnosis.code if r.diagnosis
                                                   else "no answer")
        clients = ", ".join(dict.fromkeys(c for row in rows for c in row.clients))
        out.append(f"standby candidate {model} of route {route} fails ({why}) as {clients} "
                   "would send it: no client is on it, so the route does not move there; "
                   "verify --strict counts it as a failure")
    return out


def choose_routes(fleet: Any, state_dir: Any) -> None:
    """Make ``fleet`` answer with the route choices the history makes now (what apply
    rendered into the files, and status compares them with), not each route's preferred
    candidate."""
    choices = _route_choices(fleet, state_dir)
    if choices:
        fleet.choose_routes({name: c.model for name, c in choices.items()})


def _route_choices(fleet: Any, state_dir: Any) -> dict:
    """The route choices the history now makes (as the next apply renders them)."""
    from pathlib import Path

    from taosync.engine.state import StateStore
    from taosync.errors import TaosyncError
    from taosync.verify.history import route_choices

    try:
        return route_choices(fleet.routing_spec(), StateStore(Path(state_dir)))
    except (TaosyncError, ValueError):  # a damaged state must not stop a verify
        return {}


def with_candidates(groups: list[Any], fleet: Any) -> list[Any]:
    """The probe groups plus, for each route with candidates, one *standby* probe of every
    other candidate by each request (URL, auth, key) the route's clients send: the choice
    needs every candidate's health. A plain route adds nothing (a drifted file's model is
    probed as it is, never fleet.yaml's too). A standby probe that is the same request as
    a client's own is that client's probe (not a standby, and its labels stay the ones
    the files give it)."""
    import dataclasses

    from taosync.protocols import registry

    choosing = (fleet.routing_spec() or {}).get("routes", {})
    standby = []
    for group in groups:
        for route in group.routes:
            if route not in choosing:
                continue
            for model in fleet.route_candidates(route):
                if model == group.model:
                    continue
                entry = fleet.models.get(model)
                url = registry.get(group.protocol).with_model(group.url, group.model, model)
                standby.append(dataclasses.replace(
                    group, model=model, url=url, clients=list(group.clients), routes=[route],
                    origins=[], backend=entry.backend if entry else None,
                    timeout=entry.timeout if entry else None,
                    retries=entry.retries if entry else None, standby=True))
    merged: dict[tuple, Any] = {}
    for group in [*groups, *standby]:
        kept = merged.setdefault(group.key, group)
        if kept is not group and kept.standby == group.standby:
            for client in group.clients:  # the same request another slot or route stands for
                for route in group.routes:
                    kept.add(client, route)
    return list(merged.values())


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


HEAD = ["CLIENT", "ROUTE", "MODEL", "BACKEND", "OK", "LATENCY", "TTFB", "TOKENS IN/OUT",
        "ANSWER"]
#: the widths a live table gives the columns known only once a probe answered (a wider
#: cell just pushes the rest of its row right)
LIVE_WIDTHS = [len("OK"), len("999 ms"), len("999 ms"), len("TOKENS IN/OUT")]


def known_cells(item: Any) -> list[str]:
    """The cells known before a probe is sent (client, route, model, backend), from a
    ProbeGroup or a ProbeResult alike."""
    routes = [r for r in item.routes if r]
    shown = ", ".join(routes) if routes else "—"
    if getattr(item, "standby", False):
        shown += " (standby)"
    gateway = getattr(item, "gateway", None)
    on = f" @{gateway}" if gateway and gateway != "default" else ""  # docs/gateways.md
    return [", ".join(item.clients) + on, shown, item.model, item.backend or "—"]


def _cells(r: Any) -> list[str]:
    return [*known_cells(r), "✓" if r.ok else "✗", _ms(r.latency), _ms(r.ttfb), _tokens(r),
            r.answer if r.ok else (f"HTTP {r.status}" if r.status else "no answer")]


class Table:
    """The verify table's layout: fixed column widths, a header, each result's lines."""

    def __init__(self, widths: list[int], *, color: Any = None, verbose: bool = False):
        self.widths = widths
        self.style = color or (lambda text, kind: text)
        self.verbose = verbose

    @classmethod
    def for_results(cls, results: list[Any], **kw: Any) -> "Table":
        """Widths that fit every finished result (the table printed at the end)."""
        rows = [HEAD, *(_cells(r) for r in results)]
        return cls([max(len(str(x[i])) for x in rows) for i in range(len(HEAD))], **kw)

    @classmethod
    def for_groups(cls, groups: list[Any], **kw: Any) -> "Table":
        """Widths fixed before any probe answered (the live table): the known columns fit
        every group, the others get :data:`LIVE_WIDTHS`."""
        rows = [HEAD[:4], *(known_cells(g) for g in groups)]
        known = [max(len(x[i]) for x in rows) for i in range(4)]
        rest = [max(len(h), w) for h, w in zip(HEAD[4:8], LIVE_WIDTHS)]
        return cls(known + rest + [len(HEAD[-1])], **kw)

    def fmt(self, cells: list[str]) -> str:
        parts = [str(cell) if i == len(cells) - 1 else str(cell).ljust(self.widths[i])
                 for i, cell in enumerate(cells)]
        return "  ".join(parts).rstrip()

    def header(self) -> str:
        return self.style(self.fmt(HEAD), "bold")

    def rows(self, r: Any) -> list[tuple[bool, str]]:
        """(is_problem, line) pairs for one result: its row, then cause/fix on failure."""
        style, line = self.style, self.fmt(_cells(r))
        col = sum(self.widths[:4]) + 2 * 4
        line = line[:col] + style("✓" if r.ok else "✗", "ok" if r.ok else "fail") + line[col + 1:]
        out = [(not r.ok, line)]
        if self.verbose:
            out.append((not r.ok, style(f"    {r.protocol} → {r.url} "
                                        f"({r.attempts} attempt{'s' if r.attempts != 1 else ''})",
                                        "dim")))
        return out


def diagnosis_lines(results: list[Any], *, color: Any = None, verbose: bool = False) -> list[str]:
    """Under the table, each way the probes failed once: ``15 probes: proxy: nothing
    listens on 127.0.0.1:18799`` and its fix (a failure of one probe names its row),
    rather than the same cause and fix under every row. The client files and key paths
    the failing values came from follow (up to three; ``verbose``: all)."""
    style = color or (lambda text, kind: text)
    groups: dict[tuple, list[Any]] = {}
    for r in results:
        d = r.diagnosis
        if not r.ok and d is not None:
            groups.setdefault((d.code, d.shared, d.fix), []).append(r)
    out = []
    for (code, shared, fix), failed in groups.items():
        if len(failed) == 1:
            r = failed[0]
            who = " ".join(c for c in (", ".join(r.clients), ", ".join(x for x in r.routes if x))
                           if c)
            out.append(f"{style('✗', 'fail')} {who}: {style(code, 'fail')}: {r.diagnosis.cause}")
        else:
            out.append(f"{style('✗', 'fail')} {len(failed)} probes: {style(code, 'fail')}: {shared}")
            wheres = list(dict.fromkeys(r.diagnosis.where for r in failed if r.diagnosis.where))
            if wheres and (len(wheres) <= 3 or verbose):
                out.append(f"    in: {'; '.join(wheres)}")
            elif wheres:
                out.append(f"    in: {len(wheres)} client files (-v names each)")
        out.append(f"    fix: {fix}")
    return out


def table_lines(report: Report, *, color: Any = None, verbose: bool = False) -> list[tuple[bool, str]]:
    """(is_problem, line) pairs: the header, one row per probe, then each way they
    failed (:func:`diagnosis_lines`)."""
    table = Table.for_results(report.results, color=color, verbose=verbose)
    return [(False, table.header()), *(line for r in report.results for line in table.rows(r)),
            *((True, line) for line in diagnosis_lines(report.results, color=color,
                                                       verbose=verbose))]


def _relative_to_gateway(group: Any, fleet: Any) -> Any:
    """An on-disk probe bound for the stand-in: only the fleet's gateway part of its URL is
    swapped for the stand-in's, so whatever the client's file adds (a doubled ``/v1``)
    is still sent, and still fails."""
    from dataclasses import replace

    from taosync.protocols import registry

    gateway = fleet.gateways_all().get(group.gateway or "", fleet.gateway)
    base = gateway.base_url.rstrip("/") + registry.get(group.protocol).BASE_SUFFIX
    return replace(group, base_url=base) if group.url.startswith(base) else group

