"""``taosync verify``: one real request per backend, shaped as each client sends it.

By default each probe carries the values in the client's files as they are (base URL, key,
model, headers), so a hand-broken file fails naming that file and key path, and every owned
key path that differs from fleet.yaml (rendered with the current route choices, as apply
and status render it) is reported as drift; ``--desired`` probes what fleet.yaml would
write instead. A route's standby candidates are probed too; one failing is a warning
(``--strict``: a failure). ``--stub`` sends the same probes to a stand-in gateway
(only the gateway part of each URL swapped, so a doubled ``/v1`` still fails there).

Also :func:`verify_after_apply`, which ``taosync apply`` calls after writing; the run
itself without printing is :func:`taosync.verify.session.verify_fleet`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import click

from taosync.clients.registry import complete, ids as client_ids
from taosync.errors import TaosyncError
from taosync.settings import common_options, current
from taosync.commands.route import complete_route

if TYPE_CHECKING:
    from taosync.fleet.secrets import Redactor
    from taosync.verify.session import Table


# -- printing ------------------------------------------------------------------------------

def print_report(report: Any, s: Any, key: Any = None, live: "LiveTable | None" = None) -> None:
    """The table (or JSON), every line through the run's redactor: it knows the fleet's
    key, every key a probe sent (a stale one read from a client file too) and the keyed
    hashes of every key taosync wrote, so a gateway echoing any of them prints none.
    ``live``: the table already printed row by row; only what came after is left."""
    from taosync import ui
    from taosync.verify.session import table_lines

    if live is None or not live.begun:
        redactor = use_redactor(s, key)
        for used in report.keys():
            redactor.add(used)
        print_preamble(report, s)
        if s.json or not report.results:
            if not s.json and not report.problems and not report.unprobed:
                ui.out(ui.nothing_to_do("no enabled client in fleet.yaml to verify"))
            return
        for problem, line in table_lines(report, color=ui.style, verbose=s.verbosity > 0):
            line = ui.clean(line)
            if s.verbosity < 0:
                if problem:
                    ui.warn(line)
            else:
                ui.echo(line)
    else:
        from taosync.verify.session import diagnosis_lines

        for line in diagnosis_lines(report.results, color=ui.style, verbose=s.verbosity > 0):
            (ui.warn if s.verbosity < 0 else ui.echo)(ui.clean(line))
        for text in report.warnings[live.warned:]:  # found after the probes (history)
            ui.warn(ui.clean(text))
    print_summary(report, s)


def use_redactor(s: Any, key: Any) -> Any:
    """Install (and return) the run's redactor: the fleet's key and the keyed hashes of
    every key taosync wrote; the caller adds each key a probe sent."""
    from taosync import ui
    from taosync.fleet.secrets import Redactor
    from taosync.pipeline import state_store

    store = state_store(s)
    try:
        known = store.load().remembered_secrets()
    except TaosyncError:  # a damaged state must not stop a verify from reporting
        known = []
    redactor = Redactor(key, hmac_key=store.hmac_key(create=False), known_hashes=known)
    ui.use_redactor(redactor)
    return redactor


def print_preamble(report: Any, s: Any) -> None:
    """What precedes the table: warnings, drift, the stand-in's address, unprobed
    clients (or the JSON, which is all there is with --json)."""
    from taosync import ui

    scrub = ui.clean
    for text in report.warnings:
        ui.warn(scrub(text))
    for client, line in report.drift:
        ui.warn(scrub(f"{client}: {line}"))
    if s.json:
        ui.emit_json(report.to_dict(), exit_code=report.exit_code)
        return
    if report.stub_root:
        what = ("catalogue (it accepts any key: the fleet's could not be resolved)"
                if report.any_key else "key and catalogue")
        ui.out(ui.style(f"probing a stand-in gateway at {report.stub_root} with the fleet's "
                        f"{what} (no file is changed)", "dim"))
    for client, text in report.problems:
        ui.problem(scrub(f"{ui.style('✗', 'fail')} {client}: {text}"))
    for client, text in report.unprobed:
        ui.out(ui.style(f"- {client}: {text}", "dim"))


def print_summary(report: Any, s: Any) -> None:
    """After the table: the route choices and the pass/fail count."""
    from taosync import ui
    from taosync.commands.report import route_lines

    if s.json or not report.results:
        return
    scrub, echo = ui.clean, ui.echo
    for line in route_lines(report.routes):
        (echo if s.verbosity >= 0 else ui.problem)(scrub(line))
    passed = sum(1 for r in report.results if r.ok)
    total = len(report.results)
    summary = f"{passed}/{total} backend{'s' if total != 1 else ''} pass"
    standby = 0 if report.strict else len(report.standby_failed)
    if standby:
        summary += (f"; {standby} failing standby candidate probe{'s' if standby != 1 else ''}"
                    " (a warning)")
    if report.problems:
        n = len({client for client, _ in report.problems})
        summary += f"; {n} client{'s' if n != 1 else ''} not probed"
    if report.ok:
        ui.out(ui.style(summary, "ok"))
    else:
        line = ui.style(summary, "fail") + f" — {len(report.failed)} failed"
        if s.verbosity < 0:
            ui.warn(line)
        else:
            echo(line)


class LiveTable:
    """On a terminal (stdout and stderr), the table row by row as each probe finishes,
    under a header printed before any is sent (widths fixed from the probe groups), with
    the live line below counting the probes still running."""

    def __init__(self, progress: Any, s: Any, key: Any):
        import sys

        self.progress, self.s, self.key = progress, s, key
        self.wanted = progress.live and sys.stdout.isatty()
        self.begun, self.warned, self.pending, self.total = False, 0, 0, 0
        self.table: Table | None = None
        self.redactor: Redactor | None = None

    def begin(self, groups: list[Any], report: Any) -> None:
        """Called once before the probes are sent: what precedes the table, its header."""
        from taosync import ui
        from taosync.verify.session import Table

        self.begun, self.pending, self.total = True, len(groups), len(groups)
        self.redactor = redactor = use_redactor(self.s, self.key)
        for known in report.keys():  # the gateway's credentials
            redactor.add(known)
        self.warned = len(report.warnings)
        print_preamble(report, self.s)
        self.table = table = Table.for_groups(groups, color=ui.style,
                                              verbose=self.s.verbosity > 0)
        self.progress.above(table.header())
        self.progress.start(lambda: f"{ui.probing(self.total)} {self.pending} still running,")

    def result(self, r: Any) -> None:
        """One finished probe: its row (and cause/fix) above the live line."""
        assert self.table is not None and self.redactor is not None  # begin() came first
        if r.key is not None:
            self.redactor.add(r.key)
        self.pending -= 1
        for _, line in self.table.rows(r):
            self.progress.above(line)


def verify_after_apply(loaded: Any, env: Any, settings: Any, only: Iterable[str] | None = None,
                       stub: bool = False, *, route: str | None = None,
                       strict: bool = False, on_disk: bool = False,
                       standby_fails: bool = False) -> int:
    """Verify a loaded fleet (``load_fleet`` result), print the table (or JSON), append
    history; return the report's exit code. ``stub``: send the probes to a stand-in
    gateway started in-process with the fleet's key and catalogue. A client in
    ``only`` that is not enabled is skipped (``strict=True``: bad input, as for verify).
    ``on_disk``: probe the values in the client files (right after an apply they are the
    desired ones, so the default reads nothing back). ``standby_fails`` (``--strict``): a
    failing standby candidate exits 1 too. On a terminal the rows appear as their probes
    finish (:class:`LiveTable`); elsewhere the table is printed at the end."""
    from taosync.verify.session import verify_fleet
    from taosync.pipeline import stand_in

    from taosync import ui

    key = getattr(loaded, "key", None)
    with ui.Progress() as progress:
        live = LiveTable(progress, settings, key)
        report = verify_fleet(loaded.fleet, key, env, state_dir=settings.state_dir(), only=only,
                              route=route, stub=stand_in(stub), strict=strict, on_disk=on_disk,
                              standby_fails=standby_fails,
                              on_start=None if live.wanted else
                              lambda n: progress.start(ui.probing(n)),
                              on_groups=live.begin if live.wanted else None,
                              on_result=live.result if live.wanted else None)
    print_report(report, settings, key, live=live)
    return report.exit_code


def _load(s: Any, env: Any, stub: bool) -> tuple[Any, list[str]]:
    """load_fleet; with --stub, a key that cannot be resolved is replaced by a stand-in
    (the quick start needs no account), any other problem is still bad input."""
    from taosync.fleet.load import load_fleet

    path = s.config_path()
    project = s.project
    try:
        return load_fleet(path, home=s.home_dir, environ=env.environ, project=project,
                          profile=s.profile_name()), []
    except TaosyncError as first:
        if not stub:
            raise
        try:
            loaded = load_fleet(path, home=s.home_dir, environ=env.environ, resolve_key=False,
                                project=project, profile=s.profile_name())
        except TaosyncError:
            raise first from None
        why = "; ".join(p.message for p in getattr(first, "problems", [])) or first.message
        return loaded, [f"the key could not be resolved ({why}): the stand-in gateway gets a "
                        "stand-in key and accepts any key, so no key is checked and no key "
                        "path is compared with fleet.yaml"]


@click.command("verify")
@click.option("--only", "only", multiple=True, metavar="CLIENT", shell_complete=complete,
              help="Verify only this client (repeatable): " + ", ".join(client_ids()) + ".")
@click.option("--route", metavar="NAME", shell_complete=complete_route, help="Verify only the probes of this route.")
@click.option("--stub", "use_stub", is_flag=True,
              help="Send the probes to a stand-in gateway on loopback, started for this run "
                   "with the fleet's key and catalogue (files are not changed). The probes "
                   "still carry the values in the client files (only the gateway part of "
                   "each URL is swapped), so a broken file fails here too; add --desired "
                   "to probe fleet.yaml's values (a home never applied gets those).")
@click.option("--desired", is_flag=True,
              help="Probe what fleet.yaml would write (e.g. before the first apply), not the "
                   "values in the client files.")
@click.option("--strict", is_flag=True,
              help="Exit 1 when a standby candidate of a route fails too (by default that is "
                   "a warning: no client is on it).")
@common_options
def verify(only: tuple[str, ...], route: str | None, use_stub: bool, desired: bool,
           strict: bool) -> int:
    """Send one real request per backend, shaped as each client sends it.

    Each request carries the values in the client's files (base URL, key, model,
    headers); --desired sends what fleet.yaml would write instead. A key path that differs
    from fleet.yaml (with the current route choices) is reported as drift. A route with
    candidates also gets a probe of each standby candidate. Exit 0 when every model a
    client is on answers (a failing standby is a warning), 1 when one fails (each failure
    with its cause, the file and key path it comes from, and the fix), no candidate of a
    route is healthy, a client has no files yet, or with --strict a standby fails; 2 on
    bad input.
    """
    from taosync import ui
    from taosync.pipeline import recover_first, state_store

    s = current()
    env = s.client_env()
    store = state_store(s)
    state = store.load()  # another home's state is refused before anything is put back
    if recover_first(store, env):  # an interrupted apply is put back first
        state = store.load()
    loaded, notes = _load(s, env, use_stub)
    on_disk = not desired
    if s.project is not None:  # docs/project.md: what verify --project sends
        from taosync.clients.project_scope import gateway_clients

        on_disk, only = False, tuple(gateway_clients(loaded.fleet, only))
        notes.append("--project probes what the project renders (as --desired) for the "
                     "clients that take a project's gateway: " + ", ".join(only))
    if on_disk and s.system_scope:  # the clients read back their user files, not policy
        on_disk = False
        notes.append("--system: verify probes fleet.yaml's values (status --system says "
                     "whether the managed files hold them)")
    if use_stub and on_disk and not state.applies:
        on_disk = False  # the offline demo of a fleet not applied yet
        notes.append("nothing was applied here yet: --stub probes fleet.yaml's values")
    for w in getattr(loaded, "warnings", []):
        ui.warn(w.format() if hasattr(w, "format") else str(w))
    for note in notes:
        ui.warn(note)
    rc = verify_after_apply(loaded, env, s, only=only or None, stub=use_stub, route=route,
                            strict=True, on_disk=on_disk, standby_fails=strict)
    from taosync.clients.base import grouped_warnings

    for warning in grouped_warnings(env.warnings):
        ui.warn(warning)
    if getattr(loaded, "fleet", None) is not None:
        from taosync.clients import variables

        for line in variables.notes(loaded.fleet, loaded.key, env):  # a stale exported key
            ui.warn(line)
        from taosync.doctor.checks import render_patches
        from taosync.doctor.redirection import here_findings, here_warning
        from taosync.engine.system import current as system

        guard = here_warning(here_findings(  # the key-redirection guard, here
            system().cwd(), render_patches(loaded.fleet, loaded.key, env), loaded.key,
            store.root))
        if guard:
            ui.warn(guard)
    return rc
