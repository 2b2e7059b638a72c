"""Cline: the ``cline`` CLI 3.0.65 / SDK store, the legacy store (v3.89.2), VS Code MCP files.

Facts (clients.md §3). Cline is mid-migration, so taosync writes both generations:

* current (CLI 3.x, SDK, extension 4.x "Next"): ``$CLINE_DIR`` (default ``~/.cline``),
  data dir ``$CLINE_DATA_DIR`` (default ``$CLINE_DIR/data``):
  ``settings/providers.json`` (provider ``openai-compatible``; a file that fails the zod
  schema silently logs the user out, so the shape is exactly what ``cline auth`` writes,
  including ``updatedAt`` and ``tokenSource``) and ``settings/cline_mcp_settings.json``
  (override ``$CLINE_MCP_SETTINGS_PATH``; nested ``transport`` form, as ``cline mcp add``
  writes it);
* legacy extension store (v3.89.2 keys, which 4.x migrates from): ``data/globalState.json``
  and ``data/secrets.json``;
* legacy VS Code extension MCP file:
  ``<app data>/<App>/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json``
  (flat form; app data = ``~/.config`` on Linux, ``~/Library/Application Support`` on
  macOS, ``%APPDATA%`` on Windows).

``baseUrl``/``openAiBaseUrl`` take root + ``/v1``; Cline POSTs ``{base}/chat/completions``
with Bearer auth. Cline cannot read the key from the environment or a helper, so the key
is always written inline (files 0600).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from taosync.clients.base import ClientEnv, Patch, ProbeSpec
from taosync.fleet.secrets import Secret, parse_reference

NAME = "cline"
TARGETS = [
    "~/.cline/data/settings/providers.json ($CLINE_DIR, $CLINE_DATA_DIR): the "
    "openai-compatible provider (base URL, model, key, headers)",
    "~/.cline/data/settings/cline_mcp_settings.json ($CLINE_MCP_SETTINGS_PATH): "
    "mcpServers.<name>",
    "~/.cline/data/globalState.json + secrets.json: the legacy extension store (legacy: true)",
    "<VS Code-family app>/User/globalStorage/saoudrizwan.claude-dev/settings/"
    "cline_mcp_settings.json: mcpServers.<name> for the legacy extension (editors)",
]

PROVIDER = "openai-compatible"

#: fleet editor name → the app directory under the platform's app-data directory
EDITOR_APPS = {
    "code": "Code",
    "code-insiders": "Code - Insiders",
    "vscodium": "VSCodium",
    "cursor": "Cursor",
    "windsurf": "Windsurf",
}
EXTENSION_ID = "saoudrizwan.claude-dev"


def cline_dirs(env: ClientEnv) -> tuple[Path, Path]:
    """(Cline dir, data dir)."""
    base = env.location("CLINE_DIR") or env.home / ".cline"
    return base, env.location("CLINE_DATA_DIR") or base / "data"


def global_storage(env: ClientEnv, editor: str) -> Path:
    return env.app_data() / EDITOR_APPS[editor] / "User" / "globalStorage"


def editors(cfg, env: ClientEnv) -> list[str]:
    """The editors whose legacy MCP file to write: the configured list, or the installed ones."""
    if cfg.editors != "auto":
        return list(dict.fromkeys(cfg.editors))
    return [name for name in EDITOR_APPS if env.is_dir(global_storage(env, name))]


def now_iso() -> str:
    """UTC now as Cline writes it: ``2026-11-29T23:28:58.515Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"




def _mcp_entries(fleet, key: Secret, *, nested: bool) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for name, server in fleet.mcp_servers_expanded(key).items():
        if server.kind == "stdio":
            entry: dict = {"type": "stdio", "command": server.command, "args": list(server.args)}
            if server.env:
                entry["env"] = dict(server.env)
            if server.cwd:
                entry["cwd"] = server.cwd
        else:
            entry = {"type": "streamableHttp" if server.transport == "http" else "sse",
                     "url": server.url}
            if server.headers:
                entry["headers"] = dict(server.headers)
        out[name] = {"transport": entry} if nested else entry
    return out


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.cline
    _, data = cline_dirs(env)
    model = fleet.model_for(cfg.model)
    headers = dict(fleet.gateway.headers)
    providers_path = data / "settings" / "providers.json"

    if fleet.secrets_for(cfg) == "reference":
        ref = parse_reference(fleet.gateway.key)
        env.warnings.append(
            f"{NAME}: secrets: reference cannot keep the key off disk for Cline (it reads "
            f"the key from no environment variable or helper); wrote the key from "
            f"{ref.describe()} inline into {providers_path} (mode 0600)"
        )

    p = ("providers", PROVIDER)
    values: dict = {
        ("lastUsedProvider",): PROVIDER,
        p + ("settings", "provider"): PROVIDER,
        p + ("settings", "apiKey"): key,
        p + ("settings", "model"): model,
        p + ("settings", "baseUrl"): fleet.openai_url,
        p + ("tokenSource",): "manual",
    }
    if headers:
        values[p + ("settings", "headers")] = headers
    patches = [Patch(
        providers_path, "json", values, NAME,
        skeleton={("version",): 1, ("modes",): {}},
        volatile={p + ("updatedAt",): now_iso()},
        secret=True,
    )]

    mcp = cfg.mcp and bool(fleet.mcp_servers)
    if mcp:
        mcp_path = (env.location("CLINE_MCP_SETTINGS_PATH")
                    or data / "settings" / "cline_mcp_settings.json")
        entries = _mcp_entries(fleet, key, nested=True)
        patches.append(Patch(
            mcp_path, "json", {("mcpServers", n): e for n, e in entries.items()}, NAME,
            secret=key.found_in(entries),
        ))

    if cfg.legacy:
        state = {
            ("planModeApiProvider",): "openai",
            ("actModeApiProvider",): "openai",
            ("openAiBaseUrl",): fleet.openai_url,
            ("planModeOpenAiModelId",): model,
            ("actModeOpenAiModelId",): model,
        }
        if headers:
            state[("openAiHeaders",)] = headers
        patches.append(Patch(data / "globalState.json", "json", state, NAME))
        patches.append(Patch(data / "secrets.json", "json", {("openAiApiKey",): key}, NAME,
                             secret=True))

    if mcp:
        flat = _mcp_entries(fleet, key, nested=False)
        holds_key = key.found_in(flat)
        for editor in editors(cfg, env):
            path = (global_storage(env, editor) / EXTENSION_ID / "settings"
                    / "cline_mcp_settings.json")
            patches.append(Patch(
                path, "json", {("mcpServers", n): e for n, e in flat.items()}, NAME,
                secret=holds_key,
            ))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = fleet.clients.cline
    base = fleet.openai_url
    return [ProbeSpec(
        client=NAME, route=fleet.route_for(cfg.model), model=fleet.model_for(cfg.model),
        protocol="openai-chat", base_url=base, url=base.rstrip("/") + "/chat/completions",
        auth="bearer", headers=tuple(fleet.gateway.headers.items()),
    )]
