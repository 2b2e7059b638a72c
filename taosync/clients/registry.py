"""The only list of clients: fleet.yaml id → the module that implements it.

Modules are imported on demand, so naming the clients costs nothing and a command that
needs one client imports only that one. Adding a client is its module, one line here
and ``tests/clients/test_<id>.py``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taosync.clients.plugin import ClientPlugin

#: client id as spelled under ``clients:`` in fleet.yaml → module implementing it
CLIENTS: dict[str, str] = {
    "claude-code": "taosync.clients.claude_code",
    "codex": "taosync.clients.codex",
    "cline": "taosync.clients.cline",
    "continue": "taosync.clients.continue_",
    "mistral-vibe": "taosync.clients.mistral_vibe",
    "gptme": "taosync.clients.gptme",
    "aider": "taosync.clients.aider",
    "llm": "taosync.clients.llm",
    "shell-gpt": "taosync.clients.shell_gpt",
    "qwen-code": "taosync.clients.qwen_code",
    "gemini-cli": "taosync.clients.gemini_cli",
    "opencode": "taosync.clients.opencode",
    "kilo": "taosync.clients.kilo",
    "hermes": "taosync.clients.hermes",
    "droid": "taosync.clients.droid",
    "pi": "taosync.clients.pi",
    "cursor": "taosync.clients.cursor",
    "windsurf": "taosync.clients.windsurf",
    "vscode": "taosync.clients.vscode",
    "claude-desktop": "taosync.clients.claude_desktop",
    "zed": "taosync.clients.zed",
}

#: clients registered at run time (tests' toy clients); never written by shipped code
_EXTRA: dict[str, Any] = {}
#: shipped client id → its module, completed (plugin.DEFAULTS filled in) on first use
_LOADED: dict[str, ClientPlugin] = {}


def ids() -> list[str]:
    """Every client id, in registry order (no import)."""
    return [*CLIENTS, *_EXTRA]


def complete(ctx, param, incomplete: str) -> list[str]:
    """Shell completion of a client id (click's ``shell_complete`` signature)."""
    return [client_id for client_id in ids() if client_id.startswith(incomplete)]


def get(client_id: str) -> ClientPlugin:
    """The module of one client, whole (:func:`taosync.clients.plugin.completed`);
    KeyError for an unknown id."""
    if client_id in _EXTRA:
        from taosync.clients.plugin import completed

        return completed(_EXTRA[client_id])
    if client_id not in _LOADED:  # each shipped module is completed once
        from taosync.clients.plugin import completed

        _LOADED[client_id] = completed(importlib.import_module(CLIENTS[client_id]))
    return _LOADED[client_id]


def all() -> dict[str, ClientPlugin]:  # noqa: A001 - the registry's natural verb
    """Client id → module, importing each on first use."""
    return {client_id: get(client_id) for client_id in ids()}


def register(module: ModuleType | Any) -> None:
    """Add a client module at run time (test hook: the shipped list is ``CLIENTS``)."""
    _EXTRA[module.ID] = module


def unregister(client_id: str) -> None:
    """Undo :func:`register`."""
    _EXTRA.pop(client_id, None)
