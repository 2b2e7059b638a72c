"""OpenAI Codex CLI (``@openai/codex`` 0.171.0): config.toml, auth.json, profile files.

Facts (clients.md §2): everything lives in ``$CODEX_HOME`` (default ``~/.codex``, the same
home-relative path on Linux, macOS and Windows). taosync always writes a custom
``[model_providers.<id>]`` (the built-in ``openai`` provider cannot be overridden, and
``OPENAI_BASE_URL`` is ignored); its ``base_url`` takes root + ``/v1`` and Codex POSTs
``{base_url}/responses`` (``wire_api = "responses"`` is the only wire API left).

The key: ``env_key = NAME`` makes Codex read ``$NAME`` itself (``secrets: reference`` with
``gateway.key: ${env:NAME}``); otherwise ``requires_openai_auth = true`` makes it read
``auth.json`` ``{"auth_mode": "apikey", "OPENAI_API_KEY": …}`` (what ``codex login
--with-api-key`` writes). Profiles: ``codex -p NAME`` layers ``$CODEX_HOME/NAME.config.toml``
(``[profiles.NAME]`` tables are no longer read since 0.134.0).
"""

from __future__ import annotations

import re
from pathlib import Path

from taosync.clients.base import ClientEnv, Patch, ProbeSpec
from taosync.fleet.secrets import Secret, parse_reference

NAME = "codex"
TARGETS = [
    "~/.codex/config.toml ($CODEX_HOME): model, model_provider, [model_providers.<id>], "
    "[mcp_servers.<name>]",
    "~/.codex/auth.json: auth_mode, OPENAI_API_KEY (unless the key comes from ${env:NAME})",
    "~/.codex/<profile>.config.toml: model, model_provider (one per entry in profiles)",
]

PROVIDER_NAME = "taosync gateway"


def codex_home(env: ClientEnv) -> Path:
    return env.location("CODEX_HOME") or env.home / ".codex"


def profile_name(slot: str) -> str:
    """The ``codex -p`` name (and file stem) for a profile entry: [A-Za-z0-9_-] only."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", slot)



def _env_key(fleet, cfg) -> str | None:
    """The variable Codex should read the key from, or None when the key goes inline."""
    if fleet.secrets_for(cfg) != "reference":
        return None
    ref = parse_reference(fleet.gateway.key)
    return ref.arg if ref.kind == "env" else None


def _profiles(cfg, env: ClientEnv | None = None) -> list[tuple[str, str]]:
    """(profile entry, file-safe profile name) pairs, duplicates and collisions dropped."""
    out: list[tuple[str, str]] = []
    taken: dict[str, str] = {}
    for slot in cfg.profiles:
        name = profile_name(slot)
        if name in taken:
            if taken[name] != slot and env is not None:
                env.warnings.append(
                    f"{NAME}: profiles {taken[name]!r} and {slot!r} both map to the file "
                    f"{name}.config.toml; kept {taken[name]!r}, skipped {slot!r}"
                )
            continue
        taken[name] = slot
        out.append((slot, name))
    return out



def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.codex
    home = codex_home(env)
    config_path = home / "config.toml"
    provider = ("model_providers", cfg.provider_id)

    values: dict = {
        ("model",): fleet.model_for(cfg.model),
        ("model_provider",): cfg.provider_id,
        provider + ("name",): PROVIDER_NAME,
        provider + ("base_url",): fleet.openai_url,
        provider + ("wire_api",): "responses",
    }
    if fleet.gateway.headers:
        values[provider + ("http_headers",)] = dict(fleet.gateway.headers)

    patches: list[Patch] = []
    env_key = _env_key(fleet, cfg)
    if env_key is not None:
        values[provider + ("env_key",)] = env_key
    else:
        auth_path = home / "auth.json"
        if fleet.secrets_for(cfg) == "reference":
            ref = parse_reference(fleet.gateway.key)
            env.warnings.append(
                f"{NAME}: secrets: reference needs gateway.key = ${{env:NAME}} (Codex reads "
                f"the key only from an environment variable), but it is {ref.describe()}; "
                f"wrote the key inline into {auth_path} (mode 0600)"
            )
        values[provider + ("requires_openai_auth",)] = True
        if env.getenv("CODEX_API_KEY") is not None:
            env.warnings.append(
                f"{NAME}: CODEX_API_KEY is set in this environment and overrides the key "
                f"taosync writes to {auth_path}; unset it to use the gateway key"
            )
        patches.append(Patch(auth_path, "json", {
            ("auth_mode",): "apikey",
            ("OPENAI_API_KEY",): key,
        }, NAME, secret=True))

    holds_key = False
    if cfg.mcp and fleet.mcp_servers:
        for name, server in fleet.mcp_servers_expanded(key).items():
            if server.kind == "stdio":
                entry: dict = {"command": server.command}
                if server.args:
                    entry["args"] = list(server.args)
                if server.env:
                    entry["env"] = dict(server.env)
                if server.cwd:
                    entry["cwd"] = server.cwd
            else:
                entry = {"url": server.url}
                if server.headers:
                    entry["http_headers"] = dict(server.headers)
                if server.transport == "sse":
                    env.warnings.append(
                        f"{NAME}: MCP server {name!r} uses the sse transport, but Codex speaks "
                        f"streamable HTTP only; wrote its url anyway, it may fail to connect"
                    )
            values[("mcp_servers", name)] = entry
            holds_key = holds_key or key.found_in(entry)
        if holds_key and env_key is not None:
            env.warnings.append(
                f"{NAME}: an MCP server uses ${{gateway.key}}, so the key is written into "
                f"{config_path} (mode 0600) even with secrets: reference"
            )

    patches.insert(0, Patch(config_path, "toml", values, NAME, secret=holds_key))

    for slot, name in _profiles(cfg, env):
        if name != slot:
            env.warnings.append(
                f"{NAME}: profile {slot!r} is written as {name}.config.toml; "
                f"use `codex -p {name}`"
            )
        patches.append(Patch(home / f"{name}.config.toml", "toml", {
            ("model",): fleet.model_for(slot),
            ("model_provider",): cfg.provider_id,
        }, NAME))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = fleet.clients.codex
    base = fleet.openai_url
    headers = tuple(fleet.gateway.headers.items())
    out: list[ProbeSpec] = []
    seen: set[str] = set()
    for slot in [cfg.model] + [slot for slot, _ in _profiles(cfg)]:
        model = fleet.model_for(slot)
        if model in seen:
            continue
        seen.add(model)
        out.append(ProbeSpec(
            client=NAME, route=fleet.route_for(slot), model=model,
            protocol="openai-responses", base_url=base,
            url=base.rstrip("/") + "/responses", auth="bearer", headers=headers,
        ))
    return out
