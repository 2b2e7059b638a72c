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

Exit 0 unless something is definitely broken (1): an error line (the key cannot be
resolved, a client file does not parse, the gateway host does not resolve, a loopback
proxy in the way has nothing listening …). 2: fleet.yaml cannot be read (the other
checks still run).
"""

from __future__ import annotations

from dataclasses import asdict

import click

from taosync.settings import common_options, current

#: how a check's status is printed: its word, and its style
RESULTS = {"ok": "ok", "warn": "warning", "fail": "error", "info": "info", "missing": "info"}
STYLES = {"ok": "ok", "warn": "warn", "fail": "fail", "info": "dim", "missing": "dim"}


@click.command("doctor")
@common_options
@click.option("--local", "local", is_flag=True,
              help="Check the local GPU runtimes (nvidia-smi, nvcc, sycl-ls) even when the "
                   "gateway is remote (by default only for a local or private one).")
def doctor(local: bool = False) -> int:
    """Check state, client files and binaries, overrides, proxies, runtimes: ok/warning/error.

    Run it before blaming the gateway: one line per check, exit 1 on any error."""
    from taosync import ui
    from taosync.doctor.checks import run_checks

    s = current()
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
