"""The shared path of plan, apply, status and watch: load → render → plan.

Knows the client registry and the engine, and glues them; holds no logic of either.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from taosync.errors import BadInput


@dataclass
class Context:
    settings: object  # taosync.cli.Settings
    loaded: object  # taosync.fleet.load.Loaded
    env: object  # taosync.clients.base.ClientEnv
    store: object  # taosync.engine.state.StateStore

    @property
    def key(self):
        return self.loaded.key if self.loaded is not None else None


def load(settings, *, resolve_key: bool = True) -> Context:
    from taosync.engine.state import StateStore
    from taosync.fleet.load import load_fleet

    env = settings.client_env()
    loaded = load_fleet(settings.config_path(), home=settings.home_dir,
                        environ=env.environ, resolve_key=resolve_key)
    return Context(settings, loaded, env, StateStore(settings.state_dir()))


def check_only(only: tuple[str, ...] | list[str] | None) -> set[str] | None:
    """Validate ``--only`` names against the client registry."""
    if not only:
        return None
    from taosync.clients.base import all_clients

    known = list(all_clients())
    for name in only:
        if name not in known:
            hint = difflib.get_close_matches(name, known, n=1)
            raise BadInput(f"--only {name}: no such client"
                           + (f"; did you mean {hint[0]}?" if hint else "")
                           + f" (clients: {', '.join(known)})")
    return set(only)


def render(ctx: Context, only: set[str] | None = None) -> list:
    """Every enabled client's patches (only those named by ``--only``)."""
    from taosync.clients.base import all_clients

    registry = all_clients()
    fleet = ctx.loaded.fleet
    patches = []
    for name in fleet.enabled_clients():
        if only is not None and name not in only:
            continue
        patches.extend(registry[name].render(fleet, ctx.key, ctx.env))
    return patches


def make_plan(ctx: Context, state, only: set[str] | None = None, *, for_write: bool = False):
    from taosync.engine.plan import build_plan

    patches = render(ctx, only)
    return build_plan(patches, state, ctx.key, ctx.store.hmac_key(create=for_write), only)


def display_path(path: Path | str, home: Path) -> str:
    """``~/.codex/config.toml`` for paths under the (possibly sandboxed) home."""
    path = Path(path)
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
