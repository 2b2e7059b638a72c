"""Protocol name → module, imported on first use (one line per protocol).

Adding a wire protocol (e.g. Gemini's ``generateContent``) is one module in this package
exposing the names :mod:`taosync.protocols.base` documents, plus one line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES = {
    "anthropic-messages": "taosync.protocols.anthropic_messages",
    "openai-responses": "taosync.protocols.openai_responses",
    "openai-chat": "taosync.protocols.openai_chat",
    "gemini": "taosync.protocols.gemini",
}


def names() -> list[str]:
    return list(MODULES)


def get(name: str) -> ModuleType:
    """The module of protocol ``name``; KeyError for an unknown one."""
    return importlib.import_module(MODULES[name])


def for_models(path: str) -> ModuleType | None:
    """The protocol whose own model list is served at ``path`` (``MODELS_PATH``, e.g.
    Gemini's ``/v1beta/models``), else None (``/v1/models`` is every OpenAI-shaped one's)."""
    for name in MODULES:
        module = get(name)
        if getattr(module, "MODELS_PATH", None) == path:
            return module
    return None


def for_endpoint(path: str) -> tuple[ModuleType, str] | None:
    """(protocol module, operation) serving gateway path ``path`` (e.g. ``/v1/messages``),
    operation being ``"answer"`` or a key of the module's ``SIDE_ENDPOINTS``; else None."""
    for name in MODULES:
        module = get(name)
        operation = module.route(path)
        if operation is not None:
            return module, operation
    return None
