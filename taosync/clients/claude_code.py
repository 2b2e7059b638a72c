"""Claude Code (``@anthropic-ai/claude-code`` 2.1.332): settings.json env + the MCP state file.

Facts (clients.md §1): the user settings file is ``$CLAUDE_CONFIG_DIR/settings.json``
(default ``~/.claude/settings.json``, the same home-relative path on Linux, macOS and
Windows); user-scope MCP servers live in the state file ``$CLAUDE_CONFIG_DIR/.claude.json``
when that variable is set, else ``~/.claude.json`` (next to, not inside, ``~/.claude``).
Both are strict JSON. Claude rewrites ``.claude.json`` on every run, so taosync owns only
``mcpServers.<name>`` entries there.

``ANTHROPIC_BASE_URL`` takes the gateway *root*: Claude appends ``/v1/messages?beta=true``.
``ANTHROPIC_AUTH_TOKEN`` is sent as ``Authorization: Bearer`` with no interactive approval
step (unlike ``ANTHROPIC_API_KEY``); ``apiKeyHelper`` output is sent as both Bearer and
``x-api-key``, which is how ``secrets: reference`` keeps the key off disk.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from taosync.clients.base import ClientEnv, Patch, ProbeSpec
from taosync.fleet.secrets import Secret, expand_path, parse_reference

NAME = "claude-code"
TARGETS = [
    "~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json): env.ANTHROPIC_BASE_URL, "
    "model slots, custom headers, and ANTHROPIC_AUTH_TOKEN or apiKeyHelper",
    "~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json): mcpServers.<name> (user scope)",
]

_SLOT_VARS = {
    "model": "ANTHROPIC_MODEL",
    "sonnet": "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "haiku": "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "opus": "ANTHROPIC_DEFAULT_OPUS_MODEL",
}


def paths(env: ClientEnv) -> tuple[Path, Path]:
    """(settings.json, state file .claude.json) on this machine."""
    config_dir = env.location("CLAUDE_CONFIG_DIR")
    if config_dir is not None:
        return config_dir / "settings.json", config_dir / ".claude.json"
    return env.home / ".claude" / "settings.json", env.home / ".claude.json"


def _slots(cfg) -> dict[str, str | None]:
    """Slot → the fleet slot value it uses (a route name, a model id, or None = default).

    Only slots that get a value: model and sonnet always, haiku and opus when set.
    """
    out: dict[str, str | None] = {"model": cfg.model, "sonnet": cfg.sonnet or cfg.model}
    if cfg.haiku:
        out["haiku"] = cfg.haiku
    if cfg.opus:
        out["opus"] = cfg.opus
    return out



def _key_helper(fleet, env: ClientEnv) -> str | None:
    """A shell command printing the key at run time, or None when only inline works."""
    ref = parse_reference(fleet.gateway.key)
    if ref.kind == "env":
        return f"printenv {ref.arg}"
    if ref.kind == "file":
        path = expand_path(ref.arg, env.home)
        return f"cat {shlex.quote(os.path.abspath(path))}"
    if ref.kind == "cmd":
        # taosync runs ${cmd:…} without a shell; quoting each word keeps that meaning
        # when Claude hands the helper to a shell.
        try:
            return shlex.join(shlex.split(ref.arg))
        except ValueError:
            return ref.arg
    if ref.kind == "shell":
        return ref.arg
    return None  # a literal key: nothing to read it from


def _reference_mode(fleet, cfg) -> bool:
    return fleet.secrets_for(cfg) == "reference"



def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.claude_code
    settings_path, state_path = paths(env)

    values: dict = {("env", "ANTHROPIC_BASE_URL"): fleet.anthropic_url}
    for slot, value in _slots(cfg).items():
        values[("env", _SLOT_VARS[slot])] = fleet.model_for(value)
    if fleet.gateway.headers:
        values[("env", "ANTHROPIC_CUSTOM_HEADERS")] = "\n".join(
            f"{name}: {value}" for name, value in fleet.gateway.headers.items()
        )

    helper = _key_helper(fleet, env) if _reference_mode(fleet, cfg) else None
    if helper is not None:
        values[("apiKeyHelper",)] = helper
    else:
        if _reference_mode(fleet, cfg):
            env.warnings.append(
                f"{NAME}: secrets: reference needs gateway.key to be an ${{env:…}}, "
                f"${{file:…}}, ${{cmd:…}} or ${{shell:…}} reference for apiKeyHelper, but it "
                f"is a literal key; wrote it inline as env.ANTHROPIC_AUTH_TOKEN in "
                f"{settings_path} (mode 0600)"
            )
        values[("env", "ANTHROPIC_AUTH_TOKEN")] = key

    patches = [Patch(settings_path, "json", values, NAME)]

    if cfg.mcp and fleet.mcp_servers:
        servers: dict = {}
        for name, server in fleet.mcp_servers_expanded(key).items():
            if server.kind == "stdio":
                entry = {"type": "stdio", "command": server.command,
                         "args": list(server.args), "env": dict(server.env)}
                if server.cwd:
                    env.warnings.append(
                        f"{NAME}: MCP server {name!r} sets cwd, which Claude Code's "
                        f"mcpServers schema does not have; left it out of {state_path}"
                    )
            else:
                entry = {"type": "http" if server.transport == "http" else "sse",
                         "url": server.url}
                if server.headers:
                    entry["headers"] = dict(server.headers)
            servers[("mcpServers", name)] = entry
        holds_key = key.found_in(list(servers.values()))
        if holds_key and helper is not None:
            env.warnings.append(
                f"{NAME}: an MCP server uses ${{gateway.key}}, so the key is written into "
                f"{state_path} (mode 0600) even with secrets: reference"
            )
        patches.append(Patch(state_path, "json", servers, NAME, secret=holds_key))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = fleet.clients.claude_code
    base = fleet.anthropic_url
    reference = _reference_mode(fleet, cfg) and _key_helper(fleet, env) is not None
    headers = tuple(fleet.gateway.headers.items())
    out: list[ProbeSpec] = []
    seen: set[str] = set()
    for slot in _slots(cfg).values():
        model = fleet.model_for(slot)
        if model in seen:
            continue
        seen.add(model)
        out.append(ProbeSpec(
            client=NAME, route=fleet.route_for(slot), model=model,
            protocol="anthropic-messages", base_url=base,
            url=base.rstrip("/") + "/v1/messages?beta=true",
            auth="both" if reference else "bearer", headers=headers,
        ))
    return out
