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

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Option, Patch, ProbeSpec, Seen,
                                  fleet_mcp, probe_specs, read_plain, shown, slot_option,
                                  start_on_disk, stored_key)
from taosync.fleet.logic import inline_mcp_secrets
from taosync.fleet.secrets import Secret, parse_reference
from taosync.formats.base import keypath_str

ID = "cline"
BINARY = "cline"  # taosync doctor shows its --version
TITLE = "Cline"
SUMMARY = "Cline (OpenAI-compatible provider): model, editors, legacy."
#: environment variables naming a directory (LOCATION_VARS) or one file it reads
LOCATION_VARS = ("CLINE_DIR", "CLINE_DATA_DIR")
LOCATION_FILES = ("CLINE_MCP_SETTINGS_PATH",)
TARGETS = [
    "~/.cline/data/settings/providers.json ($CLINE_DIR, $CLINE_DATA_DIR): the "
    "openai-compatible provider (base URL, model, key, headers)",
    "~/.cline/data/settings/cline_mcp_settings.json ($CLINE_MCP_SETTINGS_PATH): "
    "mcpServers.<name>",
    "~/.cline/data/globalState.json + secrets.json: the legacy extension store (legacy: true)",
    "<VS Code-family app>/User/globalStorage/saoudrizwan.claude-dev/settings/"
    "cline_mcp_settings.json: mcpServers.<name> for the legacy extension (editors)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Cline CLI/SDK (3.0.65)',
     '`~/.cline/data/settings/providers.json` (`$CLINE_DIR`, `$CLINE_DATA_DIR`)',
     '`lastUsedProvider`, '
     '`providers.openai-compatible.{settings.{provider,apiKey,model,baseUrl,headers,contextWindow},'
     ' tokenSource, updatedAt}`; `version` and `modes` only when missing (an invalid file '
     "silently logs Cline out, so the shape is exactly Cline's)"),
    ('',
     '`~/.cline/data/settings/cline_mcp_settings.json` (`$CLINE_MCP_SETTINGS_PATH`)',
     '`mcpServers.<name>`'),
    ('Cline legacy extension (v3.89.2 store)',
     '`~/.cline/data/globalState.json`, `secrets.json`',
     '`planModeApiProvider`, `actModeApiProvider`, `openAiBaseUrl`, '
     '`planModeOpenAiModelId`, `actModeOpenAiModelId`, `openAiHeaders`; `openAiApiKey`'),
    ('',
     '`<editor>/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json`',
     '`mcpServers.<name>` (per editor in `editors`)'),
)

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

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id (default: default_route)."),
    Option("legacy", bool, True, "Also write the legacy extension store (globalState.json + "
           "secrets.json) that Cline 4.x migrates from."),
    Option("editors", list[Literal[tuple(EDITOR_APPS)]] | Literal["auto"], "auto",
           "VS Code-family editors whose Cline MCP file to write; `auto` = "
           "those installed (their User/globalStorage exists)."),
)


def cline_dirs(env: ClientEnv) -> tuple[Path, Path]:
    """(Cline dir, data dir)."""
    base = env.location("CLINE_DIR") or env.home / ".cline"
    return base, env.location("CLINE_DATA_DIR") or base / "data"


def global_storage(env: ClientEnv, editor: str) -> Path:
    return env.app_data() / EDITOR_APPS[editor] / "User" / "globalStorage"


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    dirs = [*cline_dirs(env)]
    dirs += [global_storage(env, editor) / EXTENSION_ID for editor in EDITOR_APPS]
    mcp = env.location("CLINE_MCP_SETTINGS_PATH")
    return dirs, [mcp] if mcp is not None else []


def editors(cfg, env: ClientEnv) -> list[str]:
    """The editors whose legacy MCP file to write: the configured list, or the installed ones."""
    if cfg.editors != "auto":
        return list(dict.fromkeys(cfg.editors))
    return [name for name in EDITOR_APPS if env.is_dir(global_storage(env, name))]


def now_iso() -> str:
    """UTC now as Cline writes it: ``2026-11-29T23:28:58.515Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _mcp_entries(fleet, key: Secret) -> dict[str, dict]:
    """Server name → Cline's entry (the legacy file's shape; the current store nests
    each entry under ``transport``)."""
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
        out[name] = entry
    return out


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.cline
    _, data = cline_dirs(env)
    model = fleet.model_for(cfg.model)
    headers = fleet.gateway_headers()
    providers_path = data / "settings" / "providers.json"

    if fleet.secrets_for(cfg) == "reference":
        ref = parse_reference(fleet.gateway.key)
        env.warnings.append(
            f"{ID}: secrets: reference cannot keep the key off disk for Cline (it reads "
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
    context_window = fleet.context_window(model)
    if context_window:
        values[p + ("settings", "contextWindow")] = context_window
    patches = [Patch(
        providers_path, "json", values, ID,
        skeleton={("version",): 1, ("modes",): {}},
        volatile={p + ("updatedAt",): now_iso()},
        secret=True,
    )]

    entries = _mcp_entries(fleet, key) if cfg.mcp and fleet.mcp_servers else {}
    holds_key = key.found_in(entries)
    if entries:
        mcp_path = (env.location("CLINE_MCP_SETTINGS_PATH")
                    or data / "settings" / "cline_mcp_settings.json")
        if fleet.secrets_for(cfg) == "reference":
            for name, e in entries.items():
                warning = inline_mcp_secrets(ID, name, e.get("env") or e.get("headers") or {},
                                             mcp_path, "Cline is not known to expand "
                                             "variables in its MCP settings")
                if warning:
                    env.warnings.append(warning)
        patches.append(Patch(
            mcp_path, "json", {("mcpServers", n): {"transport": e} for n, e in entries.items()},
            ID, secret=holds_key,
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
        patches.append(Patch(data / "globalState.json", "json", state, ID))
        patches.append(Patch(data / "secrets.json", "json", {("openAiApiKey",): key}, ID,
                             secret=True))

    if entries:
        for editor in editors(cfg, env):
            path = (global_storage(env, editor) / EXTENSION_ID / "settings"
                    / "cline_mcp_settings.json")
            patches.append(Patch(
                path, "json", {("mcpServers", n): e for n, e in entries.items()}, ID,
                secret=holds_key,
            ))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    return probe_specs(fleet, ID, fleet.distinct_models([fleet.clients.cline.model]),
                       protocol="openai-chat", base_url=fleet.openai_url,
                       path="/chat/completions")


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probe Cline's active store makes it send: providers.json's openai-compatible
    provider (baseUrl, apiKey, model, headers), or the legacy store when that is the one
    in use. Cline reads its key only from these files."""
    _, data = cline_dirs(env)
    providers_path = data / "settings" / "providers.json"
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, providers_path)
    if obs is None:
        return out
    where = shown(providers_path, env)
    if not obs.urls:
        out.problems.append(f"{where} sets no providers.{PROVIDER}.settings.baseUrl")
        return out
    url = obs.urls[0]  # the store in use: the current one first

    def same_store(found: list[Seen]) -> Seen | None:
        stores = {url.file, data / "secrets.json"} if url.file.name == "globalState.json" \
            else {url.file}
        return next((s for s in found if s.file in stores), None)

    key_seen, model = same_store(obs.keys), same_store(obs.slots.get("model", []))
    if key_seen is None:
        out.problems.append(f"{shown(url.file, env)}: Cline has no key next to "
                            f"{url.key}")
        return out
    if model is None:
        out.problems.append(f"{shown(url.file, env)}: Cline has no model next to {url.key}")
        return out
    secret, problem = stored_key(key_seen, env)
    if problem:
        out.problems.append(problem)
        return out
    headers = same_store(obs.headers)
    out.probes = probe_specs(
        fleet, ID, [(fleet.clients.cline.model, model.value)], protocol="openai-chat",
        base_url=url.value, path="/chat/completions",
        headers=headers.value if headers else {}, secret=secret,
        origins=(out.origin("url", url, env), out.origin("key", key_seen, env),
                 out.origin("model", model, env)))
    return out


# -- reading back (taosync import) ---------------------------------------------------

#: provider ids of the current store that mean "an OpenAI-compatible base URL"
_GATEWAY_IDS = (PROVIDER, "openai")


def observe(env: ClientEnv) -> Observation:
    """What Cline's stores say: providers.json, the legacy store, the MCP files."""
    _, data = cline_dirs(env)
    obs = Observation(ID, protocol="openai")
    providers_path = data / "settings" / "providers.json"
    current = read_plain(providers_path, "json", obs)
    active_current = False
    if isinstance(current, dict) and isinstance(current.get("providers"), dict):
        providers = current["providers"]
        last = current.get("lastUsedProvider")
        if last is None and len(providers) == 1:
            last = next(iter(providers))
        gateway_id = next((i for i in _GATEWAY_IDS if isinstance(providers.get(i), dict)), None)
        if last in _GATEWAY_IDS and last in providers:
            gateway_id = last
        if gateway_id is not None and last in (None, gateway_id):
            active_current = True
            _observe_provider(providers[gateway_id], gateway_id, providers_path, obs)
        elif last is not None:
            obs.provider = Seen(f"provider {last!r}", providers_path, "lastUsedProvider")
            if gateway_id is not None:
                obs.notes.append(f"{providers_path}: an inactive {gateway_id!r} provider is "
                                 f"there too; not imported")

    state_path = data / "globalState.json"
    state = read_plain(state_path, "json", obs)
    if isinstance(state, dict) and obs.provider is None:
        act = state.get("actModeApiProvider") or state.get("apiProvider")
        if act == "openai":
            _observe_legacy(state, state_path, data / "secrets.json", obs)
        elif act and not active_current:
            obs.provider = Seen(f"provider {act!r} (legacy extension store)", state_path,
                                "actModeApiProvider")

    mcp_paths = [env.location("CLINE_MCP_SETTINGS_PATH")
                 or data / "settings" / "cline_mcp_settings.json"]
    for editor in EDITOR_APPS:
        mcp_paths.append(global_storage(env, editor) / EXTENSION_ID / "settings"
                         / "cline_mcp_settings.json")
    for path in mcp_paths:
        doc = read_plain(path, "json", obs)
        if isinstance(doc, dict) and isinstance(doc.get("mcpServers"), dict):
            _observe_mcp(doc["mcpServers"], path, obs)
    return obs


def _observe_provider(entry: dict, provider_id: str, path: Path, obs: Observation) -> None:
    settings = entry.get("settings") if isinstance(entry.get("settings"), dict) else {}
    where = ("providers", provider_id, "settings")
    if provider_id != PROVIDER:
        obs.notes.append(f"{path}: the gateway is under provider id {provider_id!r}; taosync "
                         f"writes {PROVIDER!r} and makes it lastUsedProvider")
    base = settings.get("baseUrl")
    if isinstance(base, str) and base.strip():
        obs.urls.append(Seen(base.strip(), path, keypath_str(where + ("baseUrl",))))
    model = settings.get("model")
    if isinstance(model, str) and model.strip():
        obs.slots.setdefault("model", []).append(
            Seen(model.strip(), path, keypath_str(where + ("model",))))
    key = settings.get("apiKey")
    if isinstance(key, str) and key.strip():
        k = keypath_str(where + ("apiKey",))
        obs.keys.append(Seen(Secret(key.strip(), f"{path} {k}"), path, k))
    headers = settings.get("headers")
    if isinstance(headers, dict) and headers:
        obs.headers.append(Seen({str(k): str(v) for k, v in headers.items()}, path,
                                keypath_str(where + ("headers",))))


def _observe_legacy(state: dict, path: Path, secrets_path: Path, obs: Observation) -> None:
    base = state.get("openAiBaseUrl")
    if isinstance(base, str) and base.strip():
        obs.urls.append(Seen(base.strip(), path, "openAiBaseUrl"))
    for var in ("actModeOpenAiModelId", "planModeOpenAiModelId", "openAiModelId"):
        model = state.get(var)
        if isinstance(model, str) and model.strip():
            obs.slots.setdefault("model", []).append(Seen(model.strip(), path, var))
    headers = state.get("openAiHeaders")
    if isinstance(headers, dict) and headers:
        obs.headers.append(Seen({str(k): str(v) for k, v in headers.items()}, path,
                                "openAiHeaders"))
    key = read_plain(secrets_path, "json", obs, ("openAiApiKey",))
    if isinstance(key, str) and key.strip():
        obs.keys.append(Seen(Secret(key.strip(), f"{secrets_path} openAiApiKey"), secrets_path,
                             "openAiApiKey"))


def _observe_mcp(servers: dict, path: Path, obs: Observation) -> None:
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        t = entry.get("transport") if isinstance(entry.get("transport"), dict) else entry
        if entry.get("disabled") is True:
            obs.notes.append(f"{path}: MCP server {name!r} is disabled; not imported")
            continue
        kind = t.get("type") or t.get("transportType")
        if "command" in t:
            value = fleet_mcp(command=t.get("command"), args=t.get("args"), env=t.get("env"),
                              cwd=t.get("cwd"))
        else:  # a url entry with no type is sse in Cline's flat form
            value = fleet_mcp(url=t.get("url"), headers=t.get("headers"),
                              transport="http" if kind in ("streamableHttp", "http") else "sse")
        if value is None:
            obs.notes.append(f"{path}: MCP server {name!r} has a shape fleet.yaml cannot "
                             f"express; not imported")
            continue
        seen = obs.mcp_servers.get(name)
        if seen is None:
            obs.mcp_servers[name] = Seen(value, path, keypath_str(("mcpServers", name)))
        elif seen.value != value:
            obs.notes.append(f"{path}: MCP server {name!r} differs from the one in {seen.file}; "
                             f"imported the one in {seen.file}")
