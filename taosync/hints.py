"""Next-step hints: ``taosync WORDS`` as the user would type it in this run, with the
global options in effect that change what a command acts on (``--home``, ``-c``), so a
hint copied from the output acts on the same home and fleet.

The engine and verify sit below the run's settings, so they cannot ask them: settings
hands this module the options it read (:func:`provide`), and every layer spells its hints
through :func:`again`. Without settings (a library call) a hint is plain ``taosync WORDS``.
"""

from __future__ import annotations

from typing import Callable

_options: Callable[[], list[str]] | None = None


def provide(options: Callable[[], list[str]]) -> None:
    """Where the global options in effect come from (settings.py, once, at import)."""
    global _options
    _options = options


def again(words: str) -> str:
    """``taosync [--home H] [-c F] WORDS``: a command to run next on this home and fleet."""
    opts = _options() if _options is not None else []
    return " ".join(["taosync", *opts, *([words] if words else [])])
