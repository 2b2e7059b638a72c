"""Protocol name → module, imported on first use (one line per protocol).

Adding a wire protocol (e.g. Gemini's ``generateContent``) is one module in this package
holding every name of :class:`taosync.protocols.base.ProtocolPlugin`, plus one line here.
"""

from __future__ import annotations

import importlib
import weakref
from types import ModuleType
from typing import TYPE_CHECKING, cast

from taosync.protocols.base import KeyHeader, ProtocolPlugin, key_headers, missing

MODULES = {
    "anthropic-messages": "taosync.protocols.anthropic_messages",
    "openai-responses": "taosync.protocols.openai_responses",
    "openai-chat": "taosync.protocols.openai_chat",
    "gemini": "taosync.protocols.gemini",
}

if TYPE_CHECKING:  # the type checker holds each module to the contract (get() checks at run time)
    from taosync.protocols import anthropic_messages, gemini, openai_chat, openai_responses

    _CONTRACT: list[ProtocolPlugin] = [anthropic_messages, openai_responses, openai_chat, gemini]


def names() -> list[str]:
    return list(MODULES)


def get(name: str) -> ProtocolPlugin:
    """The module of protocol ``name``; KeyError for an unknown one, TypeError for a
    module that lacks a name of the contract (said when it is first used, not at the call
    that would need the missing name)."""
    module = importlib.import_module(MODULES[name])
    if module not in _checked:  # once per module: a check costs ~0.3 ms, asked per request
        if not isinstance(module, ProtocolPlugin):
            raise TypeError(f"protocol module {MODULES[name]} lacks "
                            f"{', '.join(missing(module))} "
                            f"(see taosync.protocols.base.ProtocolPlugin)")
        _checked.add(module)
    return cast(ProtocolPlugin, module)


#: the modules found whole (weakly: a test may register a module object of its own)
_checked: "weakref.WeakSet[ModuleType]" = weakref.WeakSet()


def for_models(path: str) -> ProtocolPlugin | None:
    """The protocol whose own model list is served at ``path`` (``MODELS_PATH``, e.g.
    Gemini's ``/v1beta/models``), else None (``/v1/models`` is every OpenAI-shaped one's)."""
    for name in MODULES:
        module = get(name)
        if module.MODELS_PATH == path:
            return module
    return None


def for_endpoint(path: str) -> tuple[ProtocolPlugin, str] | None:
    """(protocol module, operation) serving gateway path ``path`` (e.g. ``/v1/messages``),
    operation being ``"answer"`` or a key of the module's ``SIDE_ENDPOINTS``; else None."""
    for name in MODULES:
        module = get(name)
        operation = module.route(path)
        if operation is not None:
            return module, operation
    return None


def key_carriers() -> tuple[list[KeyHeader], list[str]]:
    """(headers, query parameters) a key may arrive in at a gateway serving every protocol
    (the stand-in), each once, in registry order."""
    headers: list[KeyHeader] = []
    queries: list[str] = []
    for name in MODULES:
        module = get(name)
        headers.extend(h for h in key_headers(module) if h not in headers)
        queries.extend(q for q in module.KEY_QUERY if q not in queries)
    return headers, queries
