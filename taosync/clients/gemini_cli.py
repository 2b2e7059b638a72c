"""Gemini CLI (``@google/gemini-cli`` 0.61.0): settings.json and the ``.env`` beside it.

Facts (clients.md §5): everything lives in ``$GEMINI_CLI_HOME/.gemini`` (default
``~/.gemini``). Gemini CLI speaks only Gemini's protocol: it POSTs
``{GOOGLE_GEMINI_BASE_URL}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with
``x-goog-api-key``, so it needs the gateway's Gemini root (``gateway.gemini_base_url``,
never ``…/v1``). The base URL and key are environment variables only (no settings key);
Gemini reads them from ``~/.gemini/.env`` in a *trusted* folder, so taosync writes them there
(0600) and never switches folder trust off — that is the user's security setting.
``security.auth.selectedType: gemini-api-key`` is required: a base URL alone makes Gemini
pick auth type ``gateway``, which it then refuses. Extra headers go in
``GEMINI_CLI_CUSTOM_HEADERS`` (``Name: value, …``; bundle ``parseCustomHeaders``).

MCP servers: ``mcpServers.<name>`` with ``command``/``args``/``env``/``cwd``, ``httpUrl``
(streamable HTTP) or ``url`` (SSE), ``headers``; names may not hold ``_`` (mapped to
``-``). Settings strings expand ``$VAR``/``${VAR}``, which ``secrets: reference`` uses for MCP
secrets. Qwen Code (a fork) reads the same MCP shape: :func:`mcp_servers` serves both.
"""

from __future__ import annotations

import sys
from pathlib import Path

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Patch, ProbeSpec, Seen,
                                  disk_key, fleet_mcp, probe_specs, read_plain, shown,
                                  slot_option, start_on_disk, stored_key)
from taosync.fleet.logic import McpSecret, inline_mcp_secrets, joined
from taosync.fleet.secrets import Secret, parse_reference
from taosync.formats.base import keypath_str

ID = "gemini-cli"
BINARY = "gemini"  # taosync doctor shows its --version
TITLE = "Gemini CLI"
SUMMARY = "Gemini CLI (Gemini generateContent; needs gateway.gemini_base_url): model."
LOCATION_VARS = ("GEMINI_CLI_HOME",)
#: fleet keys it cannot work without (checked, located, wherever it is enabled)
REQUIRES = {"gateway.gemini_base_url": (
    "Gemini CLI speaks only Gemini's protocol (POST …/v1beta/models/{model}:"
    "streamGenerateContent), so it needs the root where the gateway serves it, e.g. "
    "gemini_base_url: https://gw.example.com (without /v1)")}
OPTIONS = (
    slot_option("model", "Route or model id for model.name (default: default_route)."),
)
#: settings.json holds JSON with comments: Gemini CLI 0.61.0 strips them before parsing
#: (clients.md §5, verified); a user's comments are legitimate there and are kept
SETTINGS_FORMAT = "jsonc"
TARGETS = [
    "~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini): security.auth.selectedType, "
    "model.name, mcpServers.<name>",
    "~/.gemini/.env: GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL, GEMINI_CLI_CUSTOM_HEADERS",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Gemini CLI (0.61.0)',
     '`~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini`)',
     '`security.auth.selectedType` (`gemini-api-key`), `model.name`, `mcpServers.<name>` '
     '(`_` in a name becomes `-`); never `security.folderTrust`'),
    ('',
     '`~/.gemini/.env` (0600)',
     '`GEMINI_API_KEY` (unless the key is `${env:GEMINI_API_KEY}` in reference mode), '
     '`GOOGLE_GEMINI_BASE_URL` (`gateway.gemini_base_url`), `GEMINI_CLI_CUSTOM_HEADERS`'),
)

KEY_VAR = "GEMINI_API_KEY"
URL_VAR = "GOOGLE_GEMINI_BASE_URL"
HEADERS_VAR = "GEMINI_CLI_CUSTOM_HEADERS"
AUTH_TYPE = "gemini-api-key"
PROTOCOL = "gemini"


def gemini_dir(env: ClientEnv) -> Path:
    return (env.location("GEMINI_CLI_HOME") or env.home) / ".gemini"


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    return [gemini_dir(env)], []


def probe_path(model: str) -> str:
    """What Gemini CLI appends to its base URL for ``model``."""
    from taosync.protocols.gemini import QUERY, SUFFIX

    return SUFFIX.format(model=model) + QUERY


def _key_in_env(fleet, cfg) -> bool:
    """True when Gemini reads the key from its own environment (reference mode with
    ``gateway.key: ${env:GEMINI_API_KEY}``), so .env need not hold it."""
    if fleet.secrets_for(cfg) != "reference":
        return False
    ref = parse_reference(fleet.gateway.key)
    return ref.kind == "env" and ref.arg == KEY_VAR


def mcp_servers(fleet, key: Secret, env: ClientEnv, *, client: str, path: Path,
                reference: bool, rename=lambda name: name) -> tuple[dict, bool]:
    """The fleet's MCP servers as Gemini-shaped ``mcpServers`` values (key path → entry),
    and whether one holds the key. With ``secrets: reference`` an ``${env:NAME}`` secret is
    written as ``${NAME}``, which the client expands from its environment."""
    values: dict = {}
    holds_key = False
    for name, server in fleet.mcp_servers_expanded(key).items():
        if server.kind == "stdio":
            entry: dict = {"command": server.command}
            if server.args:
                entry["args"] = list(server.args)
            if server.env:
                entry["env"] = _by_reference(server.env, reference)
            if server.cwd:
                entry["cwd"] = server.cwd
        else:
            entry = {"httpUrl" if server.transport == "http" else "url": server.url}
            if server.headers:
                entry["headers"] = _by_reference(server.headers, reference)
        if reference:
            warning = inline_mcp_secrets(
                client, name, entry.get("env") or entry.get("headers") or {}, path,
                "settings.json expands only ${env:NAME} values, as ${NAME}")
            if warning:
                env.warnings.append(warning)
        shown_name = rename(name)
        if shown_name is None:
            continue
        values[("mcpServers", shown_name)] = entry
        holds_key = holds_key or key.found_in(entry)
    return values, holds_key


def _by_reference(values: dict, reference: bool) -> dict:
    if not reference:
        return dict(values)
    return {name: (f"{v.prefix}${{{v.ref.arg}}}{v.suffix}"
                   if isinstance(v, McpSecret) and v.ref.kind == "env" else v)
            for name, v in values.items()}


def mcp_name(name: str, taken: dict[str, str], env: ClientEnv) -> str | None:
    """The name Gemini CLI may use for MCP server ``name`` (no ``_``: mapped to ``-``), or
    None when the mapped name is another server's (then it is skipped, with a warning)."""
    mapped = name.replace("_", "-")
    if taken.get(mapped, name) != name:
        env.warnings.append(f"{ID}: MCP servers {taken[mapped]!r} and {name!r} are both "
                            f"{mapped!r} without '_', which Gemini CLI does not allow in a "
                            f"name; kept {taken[mapped]!r}, skipped {name!r}")
        return None
    taken[mapped] = name
    if mapped != name:
        env.warnings.append(f"{ID}: MCP server {name!r} is written as {mapped!r}: Gemini "
                            f"CLI does not allow '_' in a server name")
    return mapped


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.gemini_cli
    home = gemini_dir(env)
    settings_path, dotenv_path = home / "settings.json", home / ".env"
    reference = fleet.secrets_for(cfg) == "reference"
    base_url = fleet.gateway.gemini_base_url
    if base_url is None:  # the fleet check refuses this; a direct caller gets told
        from taosync.errors import BadInput

        raise BadInput(f"clients.{ID}: needs gateway.gemini_base_url")

    values: dict = {("security", "auth", "selectedType"): AUTH_TYPE,
                    ("model", "name"): fleet.model_for(cfg.model)}
    holds_key = False
    if cfg.mcp and fleet.mcp_servers:
        taken: dict[str, str] = {}
        servers, holds_key = mcp_servers(
            fleet, key, env, client=ID, path=settings_path, reference=reference,
            rename=lambda name: mcp_name(name, taken, env))
        values.update(servers)
        if holds_key and reference:
            env.warnings.append(f"{ID}: an MCP server uses ${{gateway.key}}, so the key is "
                                f"written into {settings_path} (mode 0600) even with "
                                f"secrets: reference")

    dotenv: dict = {(URL_VAR,): base_url.rstrip("/")}
    if not _key_in_env(fleet, cfg):
        dotenv[(KEY_VAR,)] = key
        if reference:
            env.warnings.append(
                f"{ID}: Gemini CLI reads its key only from ${KEY_VAR} (the environment or "
                f"{dotenv_path}); gateway.key is not ${{env:{KEY_VAR}}}, so the key is "
                f"written into {dotenv_path} (mode 0600)")
    if fleet.gateway.headers:
        dotenv[(HEADERS_VAR,)] = joined(fleet.gateway_headers().items(), ": ", ", ")
    return [Patch(settings_path, SETTINGS_FORMAT, values, ID, secret=holds_key),
            Patch(dotenv_path, "dotenv", dotenv, ID, secret=True)]


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = fleet.clients.gemini_cli
    base_url = (fleet.gateway.gemini_base_url or "").rstrip("/")
    return [spec for slot, model in fleet.distinct_models([cfg.model])
            for spec in probe_specs(fleet, ID, [(slot, model)], protocol=PROTOCOL,
                                    base_url=base_url, path=probe_path(model),
                                    auth="x-goog-api-key")]


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probe Gemini CLI's files make it send: ``.env``'s GOOGLE_GEMINI_BASE_URL and
    GEMINI_API_KEY (the real environment wins over ``.env``, as in Gemini), settings.json's
    model.name, and GEMINI_CLI_CUSTOM_HEADERS."""
    home = gemini_dir(env)
    settings_path, dotenv_path = home / "settings.json", home / ".env"
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, settings_path)
    if obs is None:
        return out
    where = shown(dotenv_path, env)
    url = next((s for s in obs.urls), None)
    if url is None:
        out.problems.append(f"{where} sets no {URL_VAR} (nor does the environment)")
        return out
    if env.getenv(KEY_VAR):  # the real environment beats .env, as in Gemini
        key_seen = Seen(None, dotenv_path, KEY_VAR)
        secret, problem = disk_key("env", KEY_VAR, f"{KEY_VAR} (from the environment)", env)
    elif obs.keys:
        key_seen = obs.keys[0]
        secret, problem = stored_key(key_seen, env)
    else:
        key_seen, secret = None, None
        problem = f"{where} sets no {KEY_VAR} (nor does the environment)"
    if problem:
        out.problems.append(problem)
        return out
    found = obs.slots.get("model")
    if not found:
        out.problems.append(f"{shown(settings_path, env)} names no model (model.name)")
        return out
    out.probes += probe_specs(
        fleet, ID, [(fleet.clients.gemini_cli.model, found[0].value)], protocol=PROTOCOL,
        base_url=url.value.rstrip("/"), path=probe_path(found[0].value),
        auth="x-goog-api-key", headers=obs.headers[0].value if obs.headers else {},
        secret=secret, origins=(out.origin("url", url, env), out.origin("key", key_seen, env),
                                out.origin("model", found[0], env)))
    return out


# -- reading back (taosync import) ---------------------------------------------------

def observe(env: ClientEnv) -> Observation:
    """What settings.json and ``.env`` in Gemini's directory say (the real environment's
    GOOGLE_GEMINI_BASE_URL / GEMINI_API_KEY win over ``.env``, as in Gemini)."""
    home = gemini_dir(env)
    settings_path, dotenv_path = home / "settings.json", home / ".env"
    obs = Observation(ID, protocol=PROTOCOL)
    settings = read_plain(settings_path, SETTINGS_FORMAT, obs)
    if settings is not None and not isinstance(settings, dict):
        obs.problems.append(f"{settings_path}: the top level is not a JSON object")
        return obs
    settings = settings or {}
    dotenv = read_plain(dotenv_path, "dotenv", obs)
    dotenv = dotenv if isinstance(dotenv, dict) else {}

    def text(value) -> str | None:
        return value.strip() if isinstance(value, str) and value.strip() else None

    auth = settings.get("security", {}).get("auth", {}) if isinstance(
        settings.get("security"), dict) else {}
    selected = auth.get("selectedType") if isinstance(auth, dict) else None
    if selected not in (None, AUTH_TYPE):
        obs.provider = Seen(f"auth type {selected!r} (Google login or Vertex AI)",
                            settings_path, "security.auth.selectedType")
    url = text(env.getenv(URL_VAR)) or text(dotenv.get(URL_VAR))
    if url:
        origin = "the environment" if text(env.getenv(URL_VAR)) else None
        obs.urls.append(Seen(url, dotenv_path, URL_VAR))
        if origin:
            obs.notes.append(f"{URL_VAR} is set in the environment, which Gemini prefers "
                             f"to {dotenv_path}")
    key = text(dotenv.get(KEY_VAR))
    if key:
        obs.keys.append(Seen(Secret(key, f"{dotenv_path} {KEY_VAR}"), dotenv_path, KEY_VAR))
    elif env.getenv(KEY_VAR):
        obs.key_envs.append(Seen(KEY_VAR, dotenv_path, KEY_VAR))
        obs.settings["secrets"] = "reference"
    model = settings.get("model", {}).get("name") if isinstance(settings.get("model"),
                                                                dict) else None
    if text(model):
        obs.slots["model"] = [Seen(text(model), settings_path, "model.name")]
    headers = text(dotenv.get(HEADERS_VAR))
    if headers:
        parsed = {}
        for entry in headers.split(","):
            name, sep, value = entry.partition(":")
            if sep and name.strip():
                parsed[name.strip()] = value.strip()
        if parsed:
            obs.headers.append(Seen(parsed, dotenv_path, HEADERS_VAR))
    observe_mcp(settings, settings_path, obs)
    return obs


def observe_mcp(settings: dict, path: Path, obs: Observation) -> None:
    """Gemini-shaped ``mcpServers`` (also Qwen Code's) in fleet.yaml's shape."""
    servers = settings.get("mcpServers")
    if not isinstance(servers, dict):
        return
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        if "command" in entry:
            value = fleet_mcp(command=entry.get("command"), args=entry.get("args"),
                              env=entry.get("env"), cwd=entry.get("cwd"))
        elif "httpUrl" in entry:
            value = fleet_mcp(url=entry.get("httpUrl"), headers=entry.get("headers"))
        else:
            value = fleet_mcp(url=entry.get("url"), headers=entry.get("headers"),
                              transport="sse")
        if value is None:
            obs.notes.append(f"{path}: MCP server {name!r} has a shape fleet.yaml cannot "
                             f"express; not imported")
            continue
        obs.mcp_servers[name] = Seen(value, path, keypath_str(("mcpServers", name)))
