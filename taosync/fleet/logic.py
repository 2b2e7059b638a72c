"""What a fleet *means* for the clients: slots → models, URLs, references, MCP expansion.

Shared by the pydantic model (:mod:`taosync.fleet.model`, the definition and the schema's
source) and the run-time view (:mod:`taosync.fleet.view`), so both answer alike.
Standard library only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taosync.fleet.secrets import Secret

#: ``${gateway.base_url}``, ``${gateway.key}``, ``${routes.fast}`` … inside MCP values.
#: Anything else in ``${…}`` (``${HOME}``, ``${VAR:-x}``) is written as it is; clients.md records
#: a client expanding it only for Claude Code's project ``.mcp.json``.
FLEET_REFERENCE = re.compile(r"\$\{((?:gateway|routes|models)\.[^}]*|default_route)\}")

#: client name as spelled in fleet.yaml → attribute on ``fleet.clients``
CLIENT_ATTRS = {"claude-code": "claude_code", "codex": "codex", "cline": "cline",
                "continue": "continue_"}


def expand_all(value: Any, fn) -> Any:
    """Apply ``fn`` to every string inside a plain value."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [expand_all(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: expand_all(v, fn) for k, v in value.items()}
    return value


class FleetLogic:
    """Derived answers every client needs; expects the fleet's fields on ``self``."""

    def model_for(self, slot: str | None) -> str:
        """The catalogue id a client slot means: a route name first, else a model id."""
        if slot is None:
            slot = self.default_route
        if slot is None:
            return next(iter(self.models))
        if slot in self.routes:
            return self.routes[slot]
        return slot

    def distinct_models(self, slots) -> list[tuple[str | None, str]]:
        """(slot, model) for each distinct model the slots name, first slot first."""
        out: dict[str, str | None] = {}
        for slot in slots:
            out.setdefault(self.model_for(slot), slot)
        return [(slot, model) for model, slot in out.items()]

    def context_window(self, model: str) -> int | None:
        """The catalogue's context window for a model id, when it gives one."""
        entry = self.models.get(model)
        return entry.context_window if entry is not None else None

    def route_for(self, slot: str | None) -> str | None:
        """The route name a client slot stands for (None when it names a model id)."""
        name = slot if slot is not None else self.default_route
        return name if name is not None and name in self.routes else None

    def secrets_for(self, client) -> str:
        return client.secrets or self.secrets

    @property
    def anthropic_url(self) -> str:
        """Base URL Anthropic-shaped clients append ``/v1/messages`` to (the root)."""
        return self.gateway.anthropic_base_url or self.gateway.base_url

    @property
    def openai_url(self) -> str:
        """Base URL OpenAI-shaped clients append ``/chat/completions`` or ``/responses`` to."""
        return self.gateway.openai_base_url or self.gateway.base_url + "/v1"

    def reference_value(self, name: str, key: "Secret | None") -> str:
        """The value of one ``${…}`` fleet reference (``gateway.key``, ``routes.fast``, …).

        Raises KeyError (with a message) for a reference the fleet cannot satisfy.
        """
        if name == "gateway.key":
            if key is None:
                raise KeyError("gateway.key is not resolved")
            return key.reveal()
        gateway = {
            "gateway.base_url": self.gateway.base_url,
            "gateway.anthropic_base_url": self.anthropic_url,
            "gateway.openai_base_url": self.openai_url,
        }
        if name in gateway:
            return gateway[name]
        if name == "default_route":
            return self.model_for(None)
        kind, _, rest = name.partition(".")
        if kind == "routes" and rest in self.routes:
            return self.routes[rest]
        if kind == "models" and rest in self.models:
            return rest
        raise KeyError(f"unknown reference ${{{name}}}")

    def expand(self, text: str, key: "Secret | None") -> str:
        """``text`` with every fleet reference replaced (other ``${…}`` left as is)."""
        return FLEET_REFERENCE.sub(lambda m: self.reference_value(m.group(1), key), text)

    def mcp_servers_expanded(self, key: "Secret | None") -> dict:
        """The MCP servers with fleet references expanded in every string value."""
        return {name: server.replaced(expand_all(server.plain(), lambda s: self.expand(s, key)))
                for name, server in self.mcp_servers.items()}

    def enabled_clients(self) -> dict:
        """Client name (as spelled in fleet.yaml) → its settings, for enabled clients."""
        out = {}
        for name, attr in CLIENT_ATTRS.items():
            value = getattr(self.clients, attr)
            if value is not None and value.enabled:
                out[name] = value
        return out
