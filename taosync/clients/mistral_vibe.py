"""Mistral Vibe (``mistral-vibe`` 3.0.3, PyPI, Python ≥ 3.12): config.toml and .env.

Facts (clients.md §11): everything lives in ``$VIBE_HOME`` (default ``~/.vibe``).
``config.toml`` names the model by **alias**: ``active_model`` must equal the ``alias`` of
a ``[[models]]`` entry (else Vibe silently falls back to Mistral's own API and asks for
MISTRAL_API_KEY); the entry's ``name`` is what goes on the wire and its ``provider`` names
a ``[[providers]]`` entry whose ``api_base`` takes root + ``/v1`` (Vibe POSTs
``{api_base}/chat/completions``, Bearer, streaming, with ``api_style = "openai"``).

The key is read by name only: ``api_key_env_var = NAME`` makes Vibe take ``$NAME`` from
its environment, then from ``$VIBE_HOME/.env`` (then the OS keyring). So the key never
goes into config.toml: inline mode writes it to ``.env`` (0600), reference mode with
``gateway.key: ${env:NAME}`` writes only the name. An inline ``api_key`` is not a Vibe
setting. taosync registers every catalogue model as a ``[[models]]`` entry whose alias is
the model id, so Vibe's model switch offers the whole catalogue; the slot picks
``active_model``. MCP servers go in ``[[mcp_servers]]`` (``transport = "stdio"`` with
command/args/env/cwd, or ``"streamable-http"`` with url/headers).
"""

from __future__ import annotations

import sys
from pathlib import Path

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Patch, ProbeSpec, Seen,
                                  fleet_mcp, named_key, probe_specs, read_plain, shown,
                                  slot_option, start_on_disk)
from taosync.fleet.logic import inline_mcp_secrets
from taosync.fleet.secrets import Secret, parse_reference
from taosync.formats.base import Match, keypath_str

ID = "mistral-vibe"
BINARY = "vibe"  # taosync doctor shows its --version
TITLE = "Mistral Vibe"
SUMMARY = "Mistral Vibe (config.toml [[models]] + .env key): model."
LOCATION_VARS = ("VIBE_HOME",)
#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for `active_model` (default: default_route); "
                "every catalogue model is registered, so Vibe's model switch offers them all."),
)
TARGETS = [
    "~/.vibe/config.toml ($VIBE_HOME): active_model, [[providers]] name=taotoken, "
    "[[models]] alias=<model id> per catalogue model, [[mcp_servers]] name=<name>",
    "~/.vibe/.env: the key under the provider's api_key_env_var (inline mode)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Mistral Vibe (3.0.3)',
     '`~/.vibe/config.toml` (`$VIBE_HOME`)',
     '`active_model` (an alias), `providers[name=taotoken].{api_base,api_style,'
     'api_key_env_var,extra_headers}`, `models[alias=<model id>].{name,provider,'
     'max_context_length}` for every catalogue model, `mcp_servers[name=<name>].*`'),
    ('',
     '`~/.vibe/.env`',
     '`<api_key_env_var>` (inline mode; mode 0600)'),
)

#: the ``[[providers]]`` entry taosync owns
PROVIDER = "taotoken"
#: what Vibe 3.0.3 sends besides the gateway's headers (seen by the stand-in gateway; it
#: also sends ``x-affinity: <session id>``, which differs per run)
CLIENT_HEADERS = {"User-Agent": "python-httpx/0.28.1"}
#: the variable the key is stored under in ``.env`` when the fleet's key is no ${env:NAME}
DEFAULT_KEY_VAR = "TAOTOKEN_API_KEY"


def vibe_home(env: ClientEnv) -> Path:
    return env.location("VIBE_HOME") or env.home / ".vibe"


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    return [vibe_home(env)], []


def _key_var(fleet) -> str:
    """The variable Vibe reads the key from: the fleet's ``${env:NAME}``, else ours."""
    ref = parse_reference(fleet.gateway.key)
    return ref.arg if ref.kind == "env" else DEFAULT_KEY_VAR


def _catalogue(fleet, active: str) -> list[str]:
    """Every model Vibe gets a ``[[models]]`` entry for: the catalogue, then the active
    model when the slot named an id outside it."""
    return list(dict.fromkeys([*fleet.models, active]))


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.mistral_vibe
    home = vibe_home(env)
    config_path = home / "config.toml"
    model = fleet.model_for(cfg.model)
    var = _key_var(fleet)
    reference = fleet.secrets_for(cfg) == "reference"
    key_in_dotenv = not (reference and parse_reference(fleet.gateway.key).kind == "env")
    if reference and key_in_dotenv:
        env.warnings.append(
            f"{ID}: secrets: reference needs gateway.key = ${{env:NAME}} (Vibe reads the key "
            f"only from an environment variable), but it is "
            f"{parse_reference(fleet.gateway.key).describe()}; wrote the key inline into "
            f"{home / '.env'} (mode 0600)")

    p = ("providers", Match("name", PROVIDER))
    values: dict = {
        ("active_model",): model,
        p + ("api_base",): fleet.openai_url,
        p + ("api_style",): "openai",
        p + ("api_key_env_var",): var,
    }
    if fleet.gateway.headers:
        values[p + ("extra_headers",)] = fleet.gateway_headers()
    for model_id in _catalogue(fleet, model):
        m = ("models", Match("alias", model_id))
        values[m + ("name",)] = model_id
        values[m + ("provider",)] = PROVIDER
        window = fleet.context_window(model_id)
        if window:
            values[m + ("max_context_length",)] = window

    holds_key = False
    if cfg.mcp and fleet.mcp_servers:
        for name, server in fleet.mcp_servers_expanded(key).items():
            s = ("mcp_servers", Match("name", name))
            if server.kind == "stdio":
                entry: dict = {"transport": "stdio", "command": server.command,
                               "args": list(server.args)}
                if server.env:
                    entry["env"] = dict(server.env)
                if server.cwd:
                    entry["cwd"] = server.cwd
            else:
                entry = {"transport": "streamable-http", "url": server.url}
                if server.headers:
                    entry["headers"] = dict(server.headers)
                if server.transport == "sse":
                    env.warnings.append(
                        f"{ID}: MCP server {name!r} uses the sse transport, but Vibe speaks "
                        f"streamable HTTP only; wrote its url anyway, it may fail to connect")
            if reference:
                warning = inline_mcp_secrets(ID, name, entry.get("env") or entry.get("headers")
                                             or {}, config_path, "Vibe does not expand "
                                             "variables in MCP env or headers")
                if warning:
                    env.warnings.append(warning)
            for field, value in entry.items():
                values[s + (field,)] = value
            holds_key = holds_key or key.found_in(entry)

    patches = [Patch(config_path, "toml", values, ID, secret=holds_key)]
    if key_in_dotenv:
        patches.append(Patch(home / ".env", "dotenv", {(var,): key}, ID, secret=True))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    return probe_specs(fleet, ID, fleet.distinct_models([fleet.clients.mistral_vibe.model]),
                       protocol="openai-chat", base_url=fleet.openai_url,
                       path="/chat/completions",
                       headers={**fleet.gateway_headers(), **CLIENT_HEADERS})


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probe config.toml makes Vibe send: the ``[[models]]`` entry ``active_model``
    names, its provider's api_base and extra_headers, and the key from the provider's
    api_key_env_var (the environment first, then ``.env``, as Vibe looks)."""
    home = vibe_home(env)
    config_path = home / "config.toml"
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, config_path)
    if obs is None:
        return out
    where = shown(config_path, env)
    found = obs.slots.get("model")
    if not found:
        out.problems.append(f"{where}: active_model names no [[models]] alias")
        return out
    if not obs.urls:
        out.problems.append(f"{where}: the active model's provider has no api_base")
        return out
    if not obs.key_envs:
        out.problems.append(f"{where}: the active model's provider has no api_key_env_var")
        return out
    var = obs.key_envs[0]
    key_seen, secret, problem = named_key(var, [s for s in obs.keys if s.key == var.value],
                                          where, env)
    if key_seen is None:
        out.problems.append(f"{where} {var.key}: {var.value} is set neither in the "
                            f"environment nor in {shown(home / '.env', env)}")
        return out
    if problem:
        out.problems.append(problem)
        return out
    url = obs.urls[0]
    out.probes += probe_specs(
        fleet, ID, [(fleet.clients.mistral_vibe.model, found[0].value)],
        protocol="openai-chat", base_url=url.value, path="/chat/completions",
        headers={**(obs.headers[0].value if obs.headers else {}), **CLIENT_HEADERS},
        secret=secret,
        origins=(out.origin("url", url, env), out.origin("key", key_seen, env),
                 out.origin("model", found[0], env)))
    return out


# -- reading back (taosync import) ---------------------------------------------------


def _entries(config: dict, table: str) -> list[dict]:
    value = config.get(table)
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def observe(env: ClientEnv) -> Observation:
    """What ``$VIBE_HOME`` says: the model ``active_model`` picks, its provider, the key
    variable and its value in ``.env``, and the MCP servers."""
    home = vibe_home(env)
    config_path = home / "config.toml"
    obs = Observation(ID, protocol="openai")
    config = read_plain(config_path, "toml", obs)
    if not isinstance(config, dict):
        return obs

    active = config.get("active_model")
    models = {(e.get("alias") or e.get("name")): e for e in _entries(config, "models")}
    entry = models.get(active) if isinstance(active, str) else None
    if isinstance(active, str) and entry is None:
        obs.provider = Seen(f"no [[models]] entry with alias {active!r} (Vibe then falls back "
                            f"to Mistral's own API)", config_path, "active_model")
    elif entry is not None:
        m = ("models", Match("alias", active))
        name = entry.get("name")
        if isinstance(name, str) and name.strip():
            obs.slots["model"] = [Seen(name.strip(), config_path, keypath_str(m + ("name",)))]
        providers = {e.get("name"): e for e in _entries(config, "providers")}
        provider_name = entry.get("provider")
        provider = providers.get(provider_name)
        p = ("providers", Match("name", str(provider_name)))
        base = provider.get("api_base") if provider else None
        if provider is None or not (isinstance(base, str) and base.strip()):
            obs.provider = Seen(f"provider {provider_name!r}", config_path,
                                keypath_str(m + ("provider",)))
        elif provider.get("api_style", "openai") != "openai":
            obs.provider = Seen(f"provider {provider_name!r} with api_style "
                                f"{provider.get('api_style')!r}", config_path,
                                keypath_str(p + ("api_style",)))
        else:
            obs.urls.append(Seen(base.strip(), config_path, keypath_str(p + ("api_base",))))
            headers = provider.get("extra_headers")
            if isinstance(headers, dict) and headers:
                obs.headers.append(Seen({str(k): str(v) for k, v in headers.items()},
                                        config_path, keypath_str(p + ("extra_headers",))))
            var = provider.get("api_key_env_var")
            if isinstance(var, str) and var.strip():
                var = var.strip()
                obs.key_envs.append(Seen(var, config_path,
                                         keypath_str(p + ("api_key_env_var",))))
                dotenv = home / ".env"
                value = read_plain(dotenv, "dotenv", obs, (var,))
                if isinstance(value, str) and value.strip():
                    obs.keys.append(Seen(Secret(value.strip(), f"{dotenv} {var}"), dotenv, var))
                else:
                    obs.settings["secrets"] = "reference"

    for server in _entries(config, "mcp_servers"):
        name = server.get("name")
        if not isinstance(name, str):
            continue
        if server.get("transport") == "stdio":
            value = fleet_mcp(command=server.get("command"), args=server.get("args"),
                              env=server.get("env"), cwd=server.get("cwd"))
        else:
            value = fleet_mcp(url=server.get("url"), headers=server.get("headers"))
        if value is None:
            obs.notes.append(f"{config_path}: MCP server {name!r} has a shape fleet.yaml "
                             f"cannot express; not imported")
            continue
        obs.mcp_servers[name] = Seen(value, config_path,
                                     keypath_str(("mcp_servers", Match("name", name))))
    return obs
