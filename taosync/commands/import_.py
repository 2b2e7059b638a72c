"""``taosync import``: propose a fleet.yaml from the clients' existing files.

The proposal goes to stdout and everything said about it to stderr, so
``taosync import > fleet.yaml`` works. Nothing is written. The key is never copied
into the proposal: ``gateway.key`` is a reference, and stderr says where the literal
was found and what to export. The same holds for token-looking MCP env and header
values: each becomes ``${env:NAME}``, with its export line.

Exit 0: a clean proposal. Exit 1: a proposal was made but there were conflicts (two
gateways, two keys, a client on an unknown provider, an MCP server defined two ways) or
unreadable files — read the comments at the top of the proposal before applying it — or
nothing could be proposed (no client on a gateway; stdout stays empty). Exit 2: bad
usage (an unknown --from client).
"""

from __future__ import annotations


import click

from taosync.settings import common_options, current
from taosync.hints import again


def _complete_client(ctx, param, incomplete: str):
    from taosync.clients.registry import complete

    return complete(ctx, param, incomplete)


@click.command("import")
@common_options
@click.option("--from", "from_", multiple=True, metavar="CLIENT", shell_complete=_complete_client,
              help="Read only this client's files (repeatable; default: every client).")
def import_(from_):
    """Propose a fleet.yaml from the clients' existing files (on stdout)."""
    from taosync import importer, pipeline, ui

    s = current()
    pipeline.check_only(from_, option="--from")
    env = s.client_env()
    observations = importer.observe_all(env, from_ or None)
    proposal = importer.build(observations, home=env.home, environ=env.environ)

    if s.json:
        import json

        click.echo(proposal.scrub(json.dumps({
            "ok": proposal.exit_code == 0,
            "exit_code": proposal.exit_code,
            "format_version": ui.JSON_FORMAT_VERSION,
            "fleet": proposal.data,
            "yaml": proposal.text or None,
            "gateway": proposal.gateway,
            "key": proposal.key,
            "mcp_secrets": proposal.mcp_secrets,
            "sources": proposal.sources,
            "read": proposal.read,
            "findings": [f.to_json() for f in proposal.findings],
            "warnings": list(env.warnings),
        }, indent=2, ensure_ascii=False, default=str)))
        return proposal.exit_code

    for w in env.warnings:
        ui.warn(w)
    _report(proposal, s)
    if proposal.data is not None:
        click.echo(proposal.scrub(proposal.text), nl=False)
    return proposal.exit_code


def _report(proposal, s) -> None:
    from taosync import ui

    def say(text: str = "") -> None:
        ui.problem(proposal.scrub(text))

    quiet = s.verbosity < 0
    if proposal.sources and not quiet:
        say("read: " + "; ".join(f"{c} ({', '.join(files)})"
                                 for c, files in proposal.sources.items()))
    elif not proposal.sources:
        say("found no client files under " + str(s.home_dir))
    for f in proposal.findings:
        if f.kind == "note" and quiet:
            continue
        label = {"conflict": ui.style("conflict: ", "fail"),
                 "problem": ui.style("problem: ", "fail"),
                 "note": ui.style("note: ", "warn")}[f.kind]
        say(label + f.message)
        for it in f.items:
            which = f" [{it['which']}]" if "which" in it else ""
            say(f"    {it['client']:<12} {it['value']}{which}  ({it['file']} {it['key']})")
        if f.chosen:
            say(f"    → {f.chosen}")
    if proposal.data is None:
        return
    key = proposal.key
    if key.get("env"):
        say(f"key: the proposal references ${{env:{key['env']}}}; the key itself is never "
            f"copied into fleet.yaml.")
    else:
        say(f"key: the proposal references {key['reference']} (the helper Claude Code ran).")
    for found in key.get("found", []):
        say(f"    found {found['redacted']} in {found['file']} ({found['key']})")
    if key.get("env"):
        if key.get("already_set") and key.get("matches") is not False:
            say(f"    ${key['env']} is already set in this shell.")
        elif key.get("already_set"):
            say(f"    ${key['env']} is set in this shell, but to a different key than the one "
                f"found first; export the right one.")
        if key.get("export_hint") and not (key.get("already_set") and key.get("matches")):
            say(f"    next: {key['export_hint']}")
        elif not key.get("found") and not key.get("already_set"):
            say(f"    next: export {key['env']}=<your gateway key>")
        say("    or keep it in a password manager: gateway.key: ${cmd:pass show taotoken}")
    for found in proposal.mcp_secrets:
        say(f"mcp: {found['server']} {found['key']} references ${{env:{found['env']}}}; its "
            f"value ({found['redacted']} in {found['file']}) is never copied into fleet.yaml.")
        if found["already_set"] and found["matches"]:
            say(f"    ${found['env']} is already set in this shell.")
        else:
            say(f"    next: {found['export_hint']}")
    n = sum(f.kind == "conflict" for f in proposal.findings)
    bad = sum(f.kind == "problem" for f in proposal.findings)
    parts = []
    if n:
        parts.append(f"{n} conflict{'s' if n != 1 else ''} — resolved as shown above and in "
                     f"the comments at the top; check them before `{again('apply')}`")
    if bad:
        parts.append(f"{bad} problem{'s' if bad != 1 else ''} — a file that could not be "
                     "read was skipped; fix it and import again")
    tail = "; ".join(parts) or "no conflicts"
    say(f"proposal: {tail}. Next: `{again('import')} > fleet.yaml && {again('plan')}`.")
