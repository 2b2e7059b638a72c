"""How plans, applies and drift are shown to people and to scripts (shared by commands)."""

from __future__ import annotations

from taosync import ui
from taosync.formats.base import MISSING
from taosync.pipeline import display_path

ACTION_STYLE = {"create": "ok", "update": "warn", "delete": "fail", "unchanged": "dim"}


def print_warnings(ctx) -> None:
    for line in ctx.warnings:  # already whole lines, "warning:" included
        ui.problem(line)


def warn_dotfiles(plan, ctx) -> None:
    """The dotfiles guard (engine/dotfiles.py): a file that will hold a secret in a git
    work tree is warned about, once per file."""
    from taosync.engine import dotfiles

    home = ctx.settings.home_dir
    for line in dotfiles.warnings(plan.files, lambda p: display_path(p, home)):
        ui.warn(line)


def shown(value, secret: bool, key) -> object:
    """A value as it may be shown: anything in a key slot redacted, MISSING as None."""
    if value is MISSING:
        return None
    if secret:
        from taosync.fleet.secrets import redact

        if value is None:  # taosync stored no value: it held the key
            return key.redacted() if key is not None else "(hidden)"
        return redact(value) if isinstance(value, str) else "(hidden)"
    if key is not None and isinstance(value, str):
        return key.scrub(value)
    return value


def plan_json(plan, ctx) -> dict:
    home = ctx.settings.home_dir
    files = []
    for fp in plan.files:
        files.append({
            "path": str(fp.path), "display": display_path(fp.path, home),
            "clients": fp.clients, "format": fp.format, "action": fp.action,
            "secret": fp.secret,
            "changes": [{"key": c.path, "kind": c.kind,
                         "old": shown(c.old, c.secret, ctx.key),
                         "new": shown(c.new, c.secret, ctx.key)} for c in fp.changes],
            "diff": fp.diff(ctx.key) if ctx.key is not None else None,
        })
    return {"changed": len(plan.changed), "files": files}


def print_plan(plan, ctx, *, diffs: bool) -> None:
    home = ctx.settings.home_dir
    width = max((len(display_path(f.path, home)) for f in plan.files), default=0)
    for fp in plan.files:
        label = ui.style(f"{fp.action:<9}", ACTION_STYLE[fp.action])
        keys = len(fp.changes)
        what = f"{keys} key{'s' if keys != 1 else ''}" if fp.changed else "up to date"
        ui.out(f"{label} {display_path(fp.path, home):<{width}}  "
               f"{', '.join(fp.clients)}  {what}")
    if diffs:
        for fp in plan.changed:
            text = fp.diff(ctx.key)
            if text:
                ui.out("")
                for line in text.rstrip("\n").splitlines():
                    ui.out(ui.style(line, _diff_style(line)))
    n = len(plan.changed)
    ui.out("")
    ui.out(f"{n} file{'s' if n != 1 else ''} to change" if n else "nothing to change")


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    return {"+": "ok", "-": "fail"}.get(line[:1], "dim")
