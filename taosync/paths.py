"""How taosync shows a path to people: relative to the (possibly sandboxed) home."""

from __future__ import annotations

from pathlib import Path


def display_path(path: Path | str, home: Path) -> str:
    """``~/.codex/config.toml`` for paths under the (possibly sandboxed) home."""
    path = Path(path)
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
