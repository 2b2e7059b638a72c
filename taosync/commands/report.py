"""How plans, applies and drift are shown to people and to scripts (shared by commands)."""

from __future__ import annotations

import contextlib

from taosync import ui
from taosync.fleet.secrets import NO_KEY_SAME, shown
from taosync.pipeline import display_path, run_redactor
from taosync.hints import again

ACTION_STYLE = {"create": "ok", "update": "warn", "delete": "fail", "unchanged": "dim",
                "release": "dim", "chmod": "warn"}


def print_warnings(ctx) -> None:
    """The render's warnings and notes, after the ``home:`` header (they name ``~/``
    paths); an ``info:`` note (e.g. the clients without MCP) is left out by -q."""
    if any("~/" in line for line in ctx.warnings):
        ui.home_header()
    for line in ctx.warnings:  # already whole lines, "warning:" or "info:" included
        if not line.startswith("info: "):
            ui.problem(line)
        elif ui.current().verbosity >= 0 and not ui.current().json:
            ui.problem(line)


def warn_dotfiles(plan, ctx) -> None:
    """The dotfiles guard (engine/dotfiles.py): a file that will hold a secret in a git
    work tree is warned about, once per file."""
    from taosync.engine import dotfiles

    home = ctx.settings.home_dir
    for line in dotfiles.warnings(plan.files, lambda p: display_path(p, home)):
        ui.warn(line)


def warn_held(held: dict, ctx, moved_vars=()) -> None:
    """One warning per group of files a run leaves alone though taosync owns them
    (engine/owner.py): outside this home and the locations in force, or where a client's
    files lived before a location variable moved them — and what gives them back."""
    from taosync.engine.owner import OUTSIDE

    home = ctx.settings.home_dir
    groups: dict[tuple, list[str]] = {}
    for path, (why, clients) in sorted(held.items()):
        who = "" if why == OUTSIDE else ", ".join(clients) or "no client"
        groups.setdefault((why, who), []).append(path)
    for (why, clients), paths in groups.items():
        shown = ", ".join(display_path(p, home) for p in paths)
        left = f"left {shown} as {'it is' if len(paths) == 1 else 'they are'} (still owned)"
        if why == OUTSIDE:
            ui.warn(f"{left}: outside this home {home} and the client locations in force, "
                    "so taosync never touches them from here; run with the home they "
                    "belong to to manage them")
        else:
            changed = "".join(
                f"; {var} was {display_path(was, home) if was else 'unset'}, now "
                f"{display_path(now, home) if now else 'unset'}" for var, was, now in moved_vars)
            ui.warn(f"{left}: not where {clients} keeps its files now — a location "
                    f"variable moved them{changed}: run with the earlier location to "
                    f"manage them, or {again('apply --release-moved')} to give them back")


def protect(ctx, state=None, plan=None, drift=(), rollback: bool = False):
    """Install the run's Redactor (:func:`taosync.pipeline.run_redactor`) in ui, so every
    line printed from here on is scrubbed. Call again as more becomes known."""
    redactor = run_redactor(ctx, state, plan, drift, rollback)
    ui.use_redactor(redactor)
    return redactor


@contextlib.contextmanager
def read_only():
    """Errors of a command that never writes say nothing of writing: the engine's
    messages end "taosync changed nothing" / "nothing was written" for apply's sake."""
    from taosync.errors import TaosyncError

    try:
        yield
    except TaosyncError as exc:
        for tail in ("; taosync changed nothing", "; nothing was written",
                     ", taosync changed nothing", " (nothing was written)"):
            exc.message = exc.message.replace(tail, "")
        exc.args = (exc.message,)
        raise


def plan_json(plan, ctx) -> dict:
    home = ctx.settings.home_dir
    files = []
    for fp in plan.files:
        scrub = ui.redactor() or ctx.key
        texts = fp.texts(scrub) if fp.changed and _may_diff(ctx) else None
        files.append({
            "path": str(fp.path), "display": display_path(fp.path, home),
            "clients": fp.clients, "format": fp.format, "action": fp.action,
            "secret": fp.secret, **({"released": True} if fp.released else {}),
            "changes": [{"key": c.path, "kind": c.kind,
                         "old": shown(c.old, c.secret, ctx.key),
                         "new": shown(c.new, c.secret, ctx.key)} for c in fp.changes],
            "diff": fp.diff(scrub) if _may_diff(ctx) else None,
            **({"before": texts[0], "after": texts[1]} if texts else {}),
            **({"sensitive": fp.sensitive} if fp.sensitive else {}),
            **({"kept": fp.kept} if fp.kept else {}),
        })
    held = [{"path": p, "display": display_path(p, home), "clients": clients, "why": why}
            for p, (why, clients) in sorted(getattr(plan, "held", {}).items())]
    return {"changed": len(plan.changed), "files": files, **({"held": held} if held else {}),
            **({"routes": {n: c.to_dict() for n, c in ctx.routes.items()}}
               if getattr(ctx, "routes", None) else {})}


def route_lines(routes: dict, *, all_routes: bool = False) -> list[str]:
    """``route balanced → gpt-4o (claude-sonnet-4-…: HTTP 500 at 12:03)`` for each route
    with candidates that is off its preferred candidate or has none healthy (every such
    route with ``all_routes``)."""
    out = []
    for name, c in routes.items():
        never_probed = all(cand.runs == 0 for cand in c.candidates)  # nothing to say yet
        if c.model == c.preferred and (c.healthy or never_probed) and not all_routes:
            continue
        out.append(f"route {name} → {c.model} ({c.reason})")
    return out


def _may_diff(ctx) -> bool:
    """A diff is shown once a redactor guards it, or the key is known (an older caller)."""
    return ui.redactor() is not None or ctx.key is not None


def print_plan(plan, ctx, *, diffs: bool) -> None:
    """One row per file to change, released by ``managed: false`` or with --no-key
    verdicts; files already as fleet.yaml wants them only with -v; a no-op plan is one
    line."""
    home = ctx.settings.home_dir
    ui.home_header()
    for line in route_lines(getattr(ctx, "routes", None) or {}):
        ui.out(ui.style(line, "bold"))
    verbose = ui.current().verbosity > 0
    listed = (lambda fp: {kp: v for kp, v in fp.sensitive.items() if v != NO_KEY_SAME}) \
        if not verbose else (lambda fp: fp.sensitive)  # --no-key: "unchanged" summed up
    rows = [fp for fp in plan.files
            if fp.changed or fp.released or listed(fp) or fp.kept or verbose]
    width = max((len(display_path(f.path, home)) for f in rows), default=0)
    for fp in rows:
        action = "release" if fp.released else fp.action
        label = ui.style(f"{action:<9}", ACTION_STYLE[action])
        keys = len(fp.changes)
        what = (f"holds the key, readable by others: mode {fp.mode_change}"
                if fp.action == "chmod" else
                f"{keys} key{'s' if keys != 1 else ''}" if fp.changed else
                "no longer managed: left as it is" if fp.released else
                "nothing to give back" if fp.kept else "up to date")
        ui.out(f"{label} {display_path(fp.path, home):<{width}}  "
               f"{', '.join(fp.clients)}  {what}")
        for kp_text, verdict in {**listed(fp), **fp.kept}.items():
            ui.out(f"{'':9} {'':<{width}}  {kp_text}: {verdict}")
    if diffs:
        print_diffs(plan, ctx)
    n = len(plan.changed)
    same = sum(1 for fp in plan.files if not fp.changed and not fp.released)
    matching = ui.files_match(same)
    if rows:
        ui.out("")
    if not verbose:
        same_secret = unchanged_secrets(plan)
        if same_secret:
            ui.out(same_secret)
    if n:
        ui.out(f"{n} file{'s' if n != 1 else ''} to change" + (f" ({matching})" if same else ""))
    else:
        ui.out(ui.nothing_to_do(matching))


def unchanged_secrets(plan) -> str:
    """--no-key: one line for every key-bearing value the keyed hash in the state shows
    unchanged (-v lists each), or "" when there is none."""
    files = [fp for fp in plan.files if NO_KEY_SAME in fp.sensitive.values()]
    n = sum(list(fp.sensitive.values()).count(NO_KEY_SAME) for fp in files)
    if not n:
        return ""
    return (f"{NO_KEY_SAME}: {n} key-bearing value{'s' if n != 1 else ''} in {len(files)} "
            f"file{'s' if len(files) != 1 else ''}, by the keyed hash in the state "
            "(-v lists them)")


def print_diffs(plan, ctx) -> None:
    """The unified diff of each file the plan changes, a blank line before each."""
    home = ctx.settings.home_dir
    for fp in plan.changed:
        text = fp.diff(ui.redactor() or ctx.key, display_path(fp.path, home))
        if text:
            ui.out("")
            for line in text.rstrip("\n").splitlines():
                ui.out(ui.style(line, _diff_style(line)))


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    return {"+": "ok", "-": "fail"}.get(line[:1], "dim")
