"""``taosync doctor``: what to check before blaming the gateway, section by section, each
line ok / warning / error (as ``chezmoi doctor`` prints them):

* fleet: fleet.yaml loads, the key and each MCP secret resolve (one that does not is an
  error line at its YAML path and line; the rest runs without it, as ``--no-key`` does);
* state: the last apply, drift from it, a journal an interrupted apply left, the lock;
* targets: each client file parses, is 0600 where it holds the key, and is not (through a
  symlink) inside a git work tree where the key would be one commit from a push;
* clients: each client binary's version against the one README says is proven (the
  version a client module's ``OWNED_FILES`` row names);
* env: environment variables that override (or are ignored by) the client files;
* overrides: Claude Code settings that beat the fleet's (a top-level ``model``; an
  ``apiKeyHelper`` reading a variable that is unset);
* proxy: a loopback proxy in the way is connect-tested (the only connection doctor opens),
  a loopback gateway missing from ``NO_PROXY``;
* dns: the gateway host(s) resolve (resolution only, short timeout);
* runtime (only for a local or private gateway, or with ``--local``): per backend label of
  the catalogue (cuda → nvidia-smi, nvcc; oneapi → sycl-ls; rocm → rocm-smi).

Fix texts name the fleet's own URLs and fields, never a vendor's. Everything printed goes
through the run's redactor. The checks are :mod:`taosync.doctor`'s; this module only
prints them.

``--project [DIR]`` runs the key-redirection guard instead (:mod:`taosync.doctor.redirection`,
docs/guard.md): every project file or ``.env`` in the repository that moves a client's base
URL or key away from the fleet; exit 1 when one would send the user's key away.

Exit 0 unless something is definitely broken (1): an error line (the key cannot be
resolved, a client file does not parse, the gateway host does not resolve, a loopback
proxy in the way has nothing listening …). 2: fleet.yaml cannot be read (the other
checks still run).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from taosync.settings import common_options, current

#: how a check's status is printed: its word, and its style
RESULTS = {"ok": "ok", "warn": "warning", "fail": "error", "info": "info", "missing": "info"}
STYLES = {"ok": "ok", "warn": "warn", "fail": "fail", "info": "dim", "missing": "dim"}


@click.command("doctor", epilog="""\b
Examples:
  taosync doctor                   # every check, ok / warning / error
  taosync doctor --project         # the repository here: files that redirect your key
  taosync doctor --project . --json
""")
@common_options
@click.option("--local", "local", is_flag=True,
              help="Check the local GPU runtimes (nvidia-smi, nvcc, sycl-ls) even when the "
                   "gateway is remote (by default only for a local or private one).")
@click.argument("files", nargs=-1, type=click.UNPROCESSED, required=False)
def doctor(local: bool = False, files: tuple = ()) -> int:
    """Check state, client files and binaries, overrides, proxies, runtimes: ok/warning/error.

    Run it before blaming the gateway: one line per check, exit 1 on any error. With
    --project: the repository's files that would send your key elsewhere (docs/guard.md)."""
    from taosync import ui
    from taosync.doctor.checks import run_checks

    s = current()
    project = s.project  # the global --project (settings.py): the repository's root
    if files and project is None:
        raise click.UsageError(f"unexpected argument {files[0]!r} (file names are taken "
                               "only with --project, as pre-commit passes them)")
    if project is not None:
        return _guard(s, project)
    checks, rc, unusable = run_checks(s, local)
    if s.json:
        ui.emit_json({"checks": [asdict(c) for c in checks],
                      **({"error": unusable.message, "problems": ui.located_problems(unusable)}
                         if unusable is not None else {})}, exit_code=rc)
        return rc
    _print(checks, s.verbosity)
    errors = sum(c.status == "fail" for c in checks)
    warnings = sum(c.status == "warn" for c in checks)
    if rc == 0:
        tail = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
        ui.out(ui.style("nothing definitely broken", "ok") + tail)
    else:
        ui.out(ui.style(f"{errors} error{'s' if errors != 1 else ''}", "fail")
               + f", {warnings} warning{'s' if warnings != 1 else ''}")
    return rc


def _print(checks: list, verbosity: int) -> None:
    """RESULT  SECTION  CHECK  MESSAGE, one line each (errors even with -q, on stderr)."""
    from taosync import ui

    width = max((len(c.name) for c in checks), default=0)
    for c in checks:
        result = RESULTS[c.status]
        line = (f"{ui.style(f'{result:<7}', STYLES[c.status])} {c.section:<9} "
                f"{c.name:<{width}}  {c.detail}")
        if c.status == "fail" and verbosity < 0:
            ui.problem(line)
        else:
            ui.out(line)


#: how a finding's verdict is printed: its word, and its style
VERDICTS = {"sent": ("key sent", "fail"), "replaced": ("redirect", "warn"), "kept": ("ok", "ok")}


def _guard(s, start: Path) -> int:
    """``doctor --project``: one line per project file and client, then the count."""
    from taosync import ui
    from taosync.doctor.redirection import SENT, doctor_project

    root, findings, why = doctor_project(s, start)
    sent = [f for f in findings if f.key == SENT]
    rc = 1 if sent else 0
    if s.json:
        ui.emit_json({"project": str(root), "fleet": why is None,
                      "findings": [f.as_json() for f in findings],
                      "key_sent": len(sent),
                      "redirects": sum(f.redirects for f in findings)}, exit_code=rc)
        return rc
    ui.out(f"project {root}" + (f" ({why})" if why else ""))
    width = max((len(f.client) for f in findings), default=0)
    for f in findings:
        word, style = VERDICTS[f.key]
        what = ", ".join(c.path + (f" = {c.value}" if c.value is not None else "")
                         + (f" ({c.note})" if c.note else "") for c in f.changes)
        line = (f"{ui.style(f'{word:<8}', style)} {f.client:<{width}}  {f.file}: "
                f"{what + ': ' if what else ''}{f.detail}")
        if f.key == SENT and s.verbosity < 0:
            ui.problem(line)
        else:
            ui.out(line)
    redirects = sum(f.redirects for f in findings)
    if sent:
        ui.out(ui.style(f"{len(sent)} file{'s' if len(sent) != 1 else ''} would send your key "
                        "away", "fail") + (f", {redirects - len(sent)} more redirect"
                                           if redirects > len(sent) else ""))
    elif redirects:
        ui.out(ui.style("no file sends your key away", "ok")
               + f" ({redirects} redirect{'s' if redirects != 1 else ''} a client)")
    else:
        ui.out(ui.style("clean", "ok") + ": no project file redirects a client's URL or key")
    return rc
