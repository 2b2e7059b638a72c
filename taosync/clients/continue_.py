"""Continue (``@continuedev/cli`` 1.5.47 ``cn``; the IDE extensions read the same YAML).

Facts (clients.md §4): the global config is ``$CONTINUE_GLOBAL_DIR/config.yaml`` (default
``~/.continue``, the same home-relative path on Linux, macOS and Windows). It needs
top-level ``name``, ``version`` and ``schema: v1`` (set only where missing); ``models`` and
``mcpServers`` are lists, so taosync addresses its entries by ``name``. Provider ``openai``
with ``apiBase`` = root + ``/v1``: Continue appends ``/`` then ``chat/completions``.

``${{ secrets.NAME }}`` is resolved from the process environment and
``$CONTINUE_GLOBAL_DIR/.env``; with ``secrets: reference`` config.yaml holds only that
template and the key goes into ``.env`` (mode 0600), so config.yaml can be shared.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients.base import ClientEnv, Patch, ProbeSpec
from taosync.formats.base import Match
from taosync.fleet.secrets import Secret

NAME = "continue"
TARGETS = [
    "~/.continue/config.yaml ($CONTINUE_GLOBAL_DIR): models[name=<model id>] and "
    "mcpServers[name=<name>]",
    "~/.continue/.env: the key as <secret_name> (secrets: reference only)",
]

#: Continue's own order of model roles (packages/config-yaml models.ts)
ROLE_ORDER = ("chat", "autocomplete", "embed", "rerank", "edit", "apply", "summarize",
              "subagent")
DEFAULT_ROLES = ("chat", "edit", "apply", "summarize")


def continue_dir(env: ClientEnv) -> Path:
    return env.location("CONTINUE_GLOBAL_DIR") or env.home / ".continue"



def _models(fleet, cfg) -> dict[str, tuple[str | None, list[str]]]:
    """Model id → (the slot that first named it, its roles in Continue's order)."""
    roles: dict[str, str | None] = dict(cfg.roles) or {r: None for r in DEFAULT_ROLES}
    out: dict[str, tuple[str | None, list[str]]] = {}
    for role in ROLE_ORDER:
        if role not in roles:
            continue
        slot = roles[role]
        model = fleet.model_for(slot)
        out.setdefault(model, (slot, []))[1].append(role)
    return out



def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.continue_
    home = continue_dir(env)
    config_path = home / "config.yaml"
    reference = fleet.secrets_for(cfg) == "reference"
    api_key = f"${{{{ secrets.{cfg.secret_name} }}}}" if reference else key

    values: dict = {}
    for model, (_, roles) in _models(fleet, cfg).items():
        e = ("models", Match("name", model))
        values[e + ("provider",)] = "openai"
        values[e + ("model",)] = model
        values[e + ("apiBase",)] = fleet.openai_url
        values[e + ("apiKey",)] = api_key
        values[e + ("roles",)] = roles
        if fleet.gateway.headers:
            values[e + ("requestOptions", "headers")] = dict(fleet.gateway.headers)

    holds_key = False
    if cfg.mcp and fleet.mcp_servers:
        for name, server in fleet.mcp_servers_expanded(key).items():
            m = ("mcpServers", Match("name", name))
            if server.kind == "stdio":
                values[m + ("command",)] = server.command
                values[m + ("args",)] = list(server.args)
                if server.env:
                    values[m + ("env",)] = dict(server.env)
                if server.cwd:
                    values[m + ("cwd",)] = server.cwd
            else:
                values[m + ("url",)] = server.url
                values[m + ("type",)] = "streamable-http" if server.transport == "http" else "sse"
                if server.headers:
                    values[m + ("requestOptions", "headers")] = dict(server.headers)
            holds_key = holds_key or key.found_in(server.model_dump())
        if holds_key and reference:
            env.warnings.append(
                f"{NAME}: an MCP server uses ${{gateway.key}}, so the key is written into "
                f"{config_path} (mode 0600) even with secrets: reference"
            )

    patches = [Patch(
        config_path, "yaml", values, NAME,
        skeleton={("name",): "Local Config", ("version",): "1.0.0", ("schema",): "v1"},
        secret=holds_key,
    )]
    if reference:
        patches.append(Patch(home / ".env", "dotenv", {(cfg.secret_name,): key}, NAME,
                             secret=True))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = fleet.clients.continue_
    base = fleet.openai_url
    headers = tuple(fleet.gateway.headers.items())
    return [
        ProbeSpec(
            client=NAME, route=fleet.route_for(slot), model=model, protocol="openai-chat",
            base_url=base, url=base.rstrip("/") + "/chat/completions", auth="bearer",
            headers=headers,
        )
        for model, (slot, _) in _models(fleet, cfg).items()
    ]
