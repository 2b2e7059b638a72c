"""Qwen Code (``@qwen-code/qwen-code`` 0.24.4): ``~/.qwen/settings.json``.

Facts (clients.md §7): the user settings are ``$QWEN_HOME/settings.json`` (``QWEN_HOME``
replaces ``~/.qwen``), JSON with comments. Auth type ``openai`` speaks Chat Completions:
``{baseUrl}/chat/completions`` with the root + ``/v1`` URL and a Bearer key. Inline, the
key, URL and type live in ``security.auth`` and the model in ``model.name``; with
``secrets: reference`` and an ``${env:NAME}`` key, a ``modelProviders.openai[]`` entry (id =
the model) names the variable in ``envKey``, so the key stays off disk. Extra headers go in
``generationConfig.customHeaders`` of the provider entry, or of ``model`` without one (no
merging between the two; bundled docs ``model-providers.md``).

Qwen writes ``$version`` into settings.json itself: not owned, never drift. MCP servers
take Gemini CLI's shape (``mcpServers``; see :mod:`taosync.clients.gemini_cli`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Patch, ProbeSpec, Seen,
                                  disk_key, probe_specs, read_plain, shown, slot_option,
                                  start_on_disk, stored_key)
from taosync.clients.gemini_cli import mcp_servers, observe_mcp
from taosync.fleet.secrets import Secret, parse_reference
from taosync.formats.base import Match, keypath_str

ID = "qwen-code"
BINARY = "qwen"  # taosync doctor shows its --version
TITLE = "Qwen Code"
SUMMARY = "Qwen Code (OpenAI Chat Completions): model."
LOCATION_VARS = ("QWEN_HOME",)
OPTIONS = (
    slot_option("model", "Route or model id for model.name (default: default_route)."),
)
#: settings.json holds JSON with comments: Qwen Code strips them before parsing and keeps
#: them when it rewrites the file (QwenLM/qwen-code packages/cli/src/config/settings.ts);
#: a user's comments are legitimate there and are kept
SETTINGS_FORMAT = "jsonc"
TARGETS = [
    "~/.qwen/settings.json ($QWEN_HOME): security.auth, model.name, "
    "modelProviders.openai[id=<model>] (reference mode), mcpServers.<name>",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Qwen Code (0.24.4)',
     '`~/.qwen/settings.json` (`$QWEN_HOME`)',
     '`security.auth.selectedType` (`openai`), `model.name`, and `security.auth.{baseUrl,'
     'apiKey}` + `model.generationConfig.customHeaders` (inline) or '
     '`modelProviders.openai[id=<model>].{envKey,baseUrl,generationConfig.customHeaders}` '
     '(reference); `mcpServers.<name>`; never `$version` (Qwen\'s own)'),
)

AUTH_TYPE = "openai"


def qwen_home(env: ClientEnv) -> Path:
    return env.location("QWEN_HOME") or env.home / ".qwen"


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    return [qwen_home(env)], []


def _env_key(fleet, cfg) -> str | None:
    """The variable Qwen should read the key from (``envKey``), or None for inline."""
    if fleet.secrets_for(cfg) != "reference":
        return None
    ref = parse_reference(fleet.gateway.key)
    return ref.arg if ref.kind == "env" else None


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.qwen_code
    path = qwen_home(env) / "settings.json"
    model = fleet.model_for(cfg.model)
    reference = fleet.secrets_for(cfg) == "reference"
    env_key = _env_key(fleet, cfg)
    headers = fleet.gateway_headers()

    values: dict = {("security", "auth", "selectedType"): AUTH_TYPE, ("model", "name"): model}
    if env_key is not None:
        entry = ("modelProviders", AUTH_TYPE, Match("id", model))
        values[entry + ("envKey",)] = env_key
        values[entry + ("baseUrl",)] = fleet.openai_url
        if headers:
            values[entry + ("generationConfig", "customHeaders")] = headers
    else:
        if reference:
            env.warnings.append(
                f"{ID}: secrets: reference needs gateway.key to be ${{env:NAME}} (Qwen reads "
                f"the variable named in modelProviders.openai[].envKey); wrote the key inline "
                f"into {path} (mode 0600)")
        values[("security", "auth", "baseUrl")] = fleet.openai_url
        values[("security", "auth", "apiKey")] = key
        if headers:
            values[("model", "generationConfig", "customHeaders")] = headers

    holds_key = env_key is None
    if cfg.mcp and fleet.mcp_servers:
        servers, mcp_key = mcp_servers(fleet, key, env, client=ID, path=path,
                                       reference=reference)
        values.update(servers)
        if mcp_key and env_key is not None:
            env.warnings.append(f"{ID}: an MCP server uses ${{gateway.key}}, so the key is "
                                f"written into {path} (mode 0600) even with secrets: "
                                f"reference")
        holds_key = holds_key or mcp_key
    return [Patch(path, SETTINGS_FORMAT, values, ID, secret=holds_key)]


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    return probe_specs(fleet, ID, fleet.distinct_models([fleet.clients.qwen_code.model]),
                       protocol="openai-chat", base_url=fleet.openai_url,
                       path="/chat/completions")


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probe settings.json makes Qwen send: the ``modelProviders.openai[]`` entry whose
    id is ``model.name`` (its baseUrl and envKey) when there is one, else
    ``security.auth``'s baseUrl and apiKey (``$VAR`` expanded from the environment)."""
    path = qwen_home(env) / "settings.json"
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, path)
    if obs is None:
        return out
    where = shown(path, env)
    found = obs.slots.get("model")
    if not found:
        out.problems.append(f"{where} names no model (model.name)")
        return out
    if not obs.urls:
        out.problems.append(f"{where} sets no base URL (security.auth.baseUrl or "
                            f"modelProviders.openai[].baseUrl)")
        return out
    url = obs.urls[0]
    if obs.key_envs:
        key_seen = obs.key_envs[0]
        secret, problem = disk_key("env", key_seen.value, f"{where} {key_seen.key}", env)
    elif obs.keys:
        key_seen = obs.keys[0]
        secret, problem = stored_key(key_seen, env, where)
    else:
        key_seen, secret = None, None
        problem = f"{where} holds no key (security.auth.apiKey or modelProviders envKey)"
    if problem:
        out.problems.append(problem)
        return out
    out.probes += probe_specs(
        fleet, ID, [(fleet.clients.qwen_code.model, found[0].value)], protocol="openai-chat",
        base_url=url.value, path="/chat/completions",
        headers=obs.headers[0].value if obs.headers else {}, secret=secret,
        origins=(out.origin("url", url, env), out.origin("key", key_seen, env),
                 out.origin("model", found[0], env)))
    return out


# -- reading back (taosync import) ---------------------------------------------------

#: a settings string that is just ``$VAR`` / ``${VAR}`` (Qwen expands it from the env)
_ENV_REF = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")


def observe(env: ClientEnv) -> Observation:
    """What Qwen's user settings.json says: the provider entry ``model.name`` picks, else
    ``security.auth``."""
    path = qwen_home(env) / "settings.json"
    obs = Observation(ID, protocol="openai")
    data = read_plain(path, SETTINGS_FORMAT, obs)
    if data is not None and not isinstance(data, dict):
        obs.problems.append(f"{path}: the top level is not a JSON object")
        return obs
    data = data or {}

    def text(value) -> str | None:
        return value.strip() if isinstance(value, str) and value.strip() else None

    def section(*keys) -> dict:
        value = data
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        return value if isinstance(value, dict) else {}

    auth = section("security", "auth")
    selected = auth.get("selectedType")
    if selected not in (None, AUTH_TYPE):
        obs.provider = Seen(f"auth type {selected!r}", path, "security.auth.selectedType")
    model = text(section("model").get("name"))
    if model:
        obs.slots["model"] = [Seen(model, path, "model.name")]
    providers = section("modelProviders").get(AUTH_TYPE)
    entry = next((e for e in providers if isinstance(e, dict) and e.get("id") == model),
                 None) if isinstance(providers, list) and model else None
    if entry is not None:
        at = ("modelProviders", AUTH_TYPE, Match("id", model))
        _observe_source(obs, path, entry, at, "envKey", text)
        custom = entry.get("generationConfig", {}).get("customHeaders") if isinstance(
            entry.get("generationConfig"), dict) else None
        custom_at = at + ("generationConfig", "customHeaders")
    else:
        _observe_source(obs, path, auth, ("security", "auth"), "apiKey", text)
        custom = section("model", "generationConfig").get("customHeaders")
        custom_at = ("model", "generationConfig", "customHeaders")
    if isinstance(custom, dict) and custom:
        obs.headers.append(Seen({str(k): str(v) for k, v in custom.items()}, path,
                                keypath_str(custom_at)))
    observe_mcp(data, path, obs)
    return obs


def _observe_source(obs: Observation, path: Path, where: dict, at: tuple, key_field: str,
                    text) -> None:
    """baseUrl and the key (a literal, ``$VAR``, or an ``envKey`` name) of one section."""
    url = text(where.get("baseUrl"))
    if url:
        obs.urls.append(Seen(url, path, keypath_str(at + ("baseUrl",))))
    value = text(where.get(key_field))
    if not value:
        return
    k = keypath_str(at + (key_field,))
    ref = _ENV_REF.match(value) if key_field == "apiKey" else None
    if key_field == "envKey" or ref:
        obs.key_envs.append(Seen(ref.group(1) if ref else value, path, k))
        obs.settings["secrets"] = "reference"
    else:
        obs.keys.append(Seen(Secret(value, f"{path} {k}"), path, k))
