"""How taosync shows a path to people: relative to the (possibly sandboxed) home.

Under ``--home`` the paths stay ``~/…`` and commands print a ``home: ./sandbox`` header
first (:func:`display_home`), rather than long real paths on every row."""

from __future__ import annotations

from pathlib import Path


def display_path(path: Path | str, home: Path) -> str:
    """``~/.codex/config.toml`` for paths under the (possibly sandboxed) home."""
    path = Path(path)
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def display_home(home: Path | str, cwd: Path | None = None) -> str:
    """A home directory as the header names it: ``./sandbox`` under the current
    directory (``cwd``, as the caller's System read it), else its absolute path."""
    home = Path(home)
    try:
        rel = home.absolute().relative_to(Path.cwd() if cwd is None else cwd)
    except (ValueError, OSError):
        return str(home)
    return "." if str(rel) == "." else f"./{rel}"
