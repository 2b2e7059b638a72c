"""What opencode and its fork Kilo CLI share: one JSONC file, one provider entry, ``mcp``.

Facts (clients.md §6, §8; proven with ``opencode-ai`` 1.18.33 and ``@kilocode/cli`` 7.7.7):
the global file is ``$XDG_CONFIG_HOME/<dir>/<name>.json`` (default ``~/.config``, on every
OS: both use ``xdg-basedir``), JSONC, merged with project files and with the other global
files of :attr:`Flavor.files`: a ``<name>.jsonc`` next to it is read after it and wins
(proven with both binaries), and Kilo reads ``opencode.json`` and ``opencode.jsonc`` after
its own ``kilo.json(c)`` (proven with Kilo 7.7.7: a model set in either wins over
kilo.json's), so taosync writes into the one read last. A custom provider entry
``provider.<id>`` with ``npm: @ai-sdk/openai-compatible``, ``options.baseURL`` = root +
``/v1`` (the client appends ``/chat/completions``), ``options.apiKey`` and a **required**
``models`` map; ``model`` / ``small_model`` are ``<provider id>/<models key>``. A model's
``limit`` needs ``output`` next to ``context`` (else "Missing key …limit.output"); 0 means
the client's default (opencode then sends ``max_tokens: 32000``).

The file is text-substituted before parsing: ``{env:NAME}`` and ``{file:PATH}`` anywhere,
which is how ``secrets: reference`` keeps the key (and MCP secrets) off disk. Both
clients add ``$schema`` (Kilo also ``permission``) on their first run: never owned, so
never drift; taosync writes ``$schema`` only where it is missing.

Each client is its own module (``opencode.py``, ``kilo.py``) holding a :class:`Flavor`
and delegating here.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Option, Patch, ProbeSpec,
                                  Seen, disk_key, fleet_mcp, probe_specs, read_plain, shown,
                                  slot_option, start_on_disk)
from taosync.fleet.logic import McpSecret, attr_name, inline_mcp_secrets
from taosync.fleet.secrets import Secret, expand_path, parse_reference
from taosync.formats.base import keypath_str

FORMAT = "jsonc"
NPM = "@ai-sdk/openai-compatible"
PROVIDER_NAME = "taosync gateway"
#: provider ids built into opencode/Kilo: a custom entry there would be merged with it
_BUILT_IN = ("openai", "anthropic", "opencode", "kilo")


@dataclass(frozen=True)
class Flavor:
    """One client of the family: its id, product, version proven, and where it looks."""

    id: str
    title: str
    version: str  # the version this module was proven against
    dirname: str  # directory under $XDG_CONFIG_HOME
    #: the global files in that directory the client merges, the one it reads last (whose
    #: values win) first: taosync writes into the first that exists, else creates the last
    files: tuple[str, ...]
    schema_url: str  # the ``$schema`` the client inserts itself
    #: environment variables that add a config merged over the global file
    overrides: tuple[str, ...] = ()


def options() -> tuple[Option, ...]:
    """The fleet.yaml options both clients take (beyond enabled, secrets, mcp)."""
    return (
        slot_option("model", "Route or model id for `model` (default: default_route)."),
        slot_option("small_model", "Route or model id for `small_model` (titles, "
                    "summaries; default: the same as model)."),
        Option("provider_id", str, "taotoken",
               "Id of the provider.<id> entry taosync owns (the `<id>/` prefix of model).",
               pattern=r"^[A-Za-z0-9_-]+$",
               reserved={pid: f"'{pid}' is a provider built into opencode and Kilo (its own "
                              f"definition would be merged in); use another id such as "
                              f"'taotoken'" for pid in _BUILT_IN}),
    )


def targets(f: Flavor) -> list[str]:
    return [f"~/.config/{f.dirname}/{f.files[-1]} ($XDG_CONFIG_HOME; {_winner_note(f)}): "
            f"provider.<id>, model, small_model, mcp.<name>"]


def _winner_note(f: Flavor, quote: str = "") -> str:
    others = ", ".join(f"{quote}{name}{quote}" for name in reversed(f.files[:-1]))
    return (f"{others} when that exists" if len(f.files) == 2 else
            f"the one of {others} read last when the user has one")


def owned_files(f: Flavor) -> tuple:
    return ((f"{f.title} ({f.version})",
             f"`~/.config/{f.dirname}/{f.files[-1]}` (`$XDG_CONFIG_HOME`; "
             f"{_winner_note(f, '`')})",
             "`model`, `small_model`, `provider.<id>.{npm,options.baseURL,options.apiKey,"
             "options.headers}`, `provider.<id>.models.<model id>.{id,limit.context,"
             "limit.output}` (the whole catalogue), its `name` and `$schema` only when "
             "missing; `mcp.<name>.{type,command,environment,cwd,url,headers}`"),)


# -- where ------------------------------------------------------------------------------


def config_dir(f: Flavor, env: ClientEnv) -> Path:
    return (env.location("XDG_CONFIG_HOME") or env.home / ".config") / f.dirname


def config_path(f: Flavor, env: ClientEnv) -> Path:
    """The file the client reads last of those the user has (its values win over the
    others'), else the one taosync creates. Writing anywhere else would leave the client
    on the user's values while taosync called it in sync."""
    folder = config_dir(f, env)
    for name in f.files[:-1]:
        path = folder / name
        if env.is_file(path):  # an input of the render: creating one moves the target
            return path
    return folder / f.files[-1]


def locations(f: Flavor, env: ClientEnv) -> tuple[list[Path], list[Path]]:
    return [config_dir(f, env)], []


def _cfg(f: Flavor, fleet):
    return getattr(fleet.clients, attr_name(f.id))


# -- render -----------------------------------------------------------------------------


def key_token(fleet, env: ClientEnv) -> str | None:
    """What the file holds instead of the key in reference mode (``{env:NAME}``,
    ``{file:PATH}``), or None when only inline works."""
    ref = parse_reference(fleet.gateway.key)
    if ref.kind == "env":
        return f"{{env:{ref.arg}}}"
    if ref.kind == "file":
        return f"{{file:{_absolute(ref.arg, env)}}}"
    return None


def _absolute(path: str, env: ClientEnv) -> str:
    """A ``${file:PATH}`` as the client must read it (``~`` is the taosync home)."""
    return str(expand_path(path, env.home).absolute())


def _as_written(value, token: str | None, key: Secret, env: ClientEnv):
    """An MCP string as the file holds it with ``secrets: reference``: a secret the
    client can substitute itself becomes its ``{env:}``/``{file:}`` text, and the
    gateway key (``${gateway.key}``) its reference; anything else as it is."""
    if isinstance(value, McpSecret) and value.ref.kind in ("env", "file"):
        arg = value.ref.arg if value.ref.kind == "env" else _absolute(value.ref.arg, env)
        return f"{value.prefix}{{{value.ref.kind}:{arg}}}{value.suffix}"
    if token is not None and isinstance(value, str) and key.found_in(value):
        return value.replace(key.reveal(), token)
    return value


def render(f: Flavor, fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = _cfg(f, fleet)
    path = config_path(f, env)
    pid = cfg.provider_id
    provider = ("provider", pid)
    reference = fleet.secrets_for(cfg) == "reference"
    token = key_token(fleet, env) if reference else None
    if reference and token is None:
        env.warnings.append(
            f"{f.id}: secrets: reference needs gateway.key to be an ${{env:…}} or "
            f"${{file:…}} reference ({f.title} reads {{env:NAME}} and {{file:PATH}}), but it "
            f"is not; wrote the key inline into {path} (mode 0600)")
    values: dict = {
        provider + ("npm",): NPM,
        provider + ("options", "baseURL"): fleet.openai_url,
        provider + ("options", "apiKey"): token if token is not None else key,
    }
    if fleet.gateway.headers:
        values[provider + ("options", "headers")] = fleet.gateway_headers()
    for model in fleet.models:
        entry = provider + ("models", model)
        values[entry + ("id",)] = model
        window = fleet.context_window(model)
        if window:
            values[entry + ("limit", "context")] = window
            values[entry + ("limit", "output")] = 0  # required with context; 0 = default
    model = fleet.model_for(cfg.model)
    small = fleet.model_for(cfg.small_model if cfg.small_model is not None else cfg.model)
    values[("model",)] = f"{pid}/{model}"
    values[("small_model",)] = f"{pid}/{small}"

    holds_key = False
    if cfg.mcp and fleet.mcp_servers:
        def written(value):
            return _as_written(value, token, key, env) if reference else value

        for name, server in fleet.mcp_servers_expanded(key).items():
            m = ("mcp", name)
            secrets = server.env if server.kind == "stdio" else server.headers
            secrets = {var: written(value) for var, value in secrets.items()}
            if server.kind == "stdio":
                entry: dict = {"type": "local",
                               "command": [written(v) for v in (server.command, *server.args)]}
                if secrets:
                    entry["environment"] = secrets
                if server.cwd:
                    entry["cwd"] = server.cwd
            else:  # type remote tries streamable HTTP, then SSE
                entry = {"type": "remote", "url": written(server.url)}
                if secrets:
                    entry["headers"] = secrets
            values.update({m + (k,): v for k, v in entry.items()})
            if reference:
                warning = inline_mcp_secrets(
                    f.id, name, secrets, path, f"{f.title} substitutes only {{env:NAME}} and "
                    f"{{file:PATH}}, so ${{cmd:…}} and ${{shell:…}} values are written")
                if warning:
                    env.warnings.append(warning)
            holds_key = holds_key or key.found_in(entry) or any(
                isinstance(v, McpSecret) for v in secrets.values())

    for var in f.overrides:
        if env.getenv(var):
            env.warnings.append(f"{f.id}: {var} is set in this environment; {f.title} merges "
                                f"that config over {path}, so it may override what taosync "
                                f"writes")
    return [Patch(path, FORMAT, values, f.id, secret=holds_key,
                  skeleton={("$schema",): f.schema_url, provider + ("name",): PROVIDER_NAME})]


def probes(f: Flavor, fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = _cfg(f, fleet)
    small = cfg.small_model if cfg.small_model is not None else cfg.model
    return probe_specs(fleet, f.id, fleet.distinct_models([cfg.model, small]),
                       protocol="openai-chat", base_url=fleet.openai_url,
                       path="/chat/completions")


# -- reading back -----------------------------------------------------------------------

_ENV_TOKEN = re.compile(r"^\{env:([^}]+)\}$")
_FILE_TOKEN = re.compile(r"^\{file:([^}]+)\}$")


def observe(f: Flavor, env: ClientEnv) -> Observation:
    """What the global file says: the provider ``model`` names, its models, MCP servers."""
    path = config_path(f, env)
    obs = Observation(f.id, protocol="openai")
    config = read_plain(path, FORMAT, obs)
    if not isinstance(config, dict):
        return obs
    providers = config.get("provider") if isinstance(config.get("provider"), dict) else {}
    model = config.get("model")
    pid = None
    if isinstance(model, str) and "/" in model:
        pid, _, model_id = model.partition("/")
        entry = providers.get(pid)
        options = entry.get("options") if isinstance(entry, dict) else None
        base = options.get("baseURL") if isinstance(options, dict) else None
        if not (isinstance(base, str) and base.strip()):
            obs.provider = Seen(f"provider {pid!r} (no options.baseURL: its built-in or "
                                f"models.dev definition)", path, "model")
            return obs
        where = ("provider", pid, "options")
        obs.urls.append(Seen(base.strip(), path, keypath_str(where + ("baseURL",))))
        if re.fullmatch(r"[A-Za-z0-9_-]+", pid) and pid not in _BUILT_IN:
            obs.settings["provider_id"] = pid
        _observe_key(options.get("apiKey"), path, keypath_str(where + ("apiKey",)), obs)
        headers = options.get("headers")
        if isinstance(headers, dict) and headers:
            obs.headers.append(Seen({str(k): str(v) for k, v in headers.items()}, path,
                                    keypath_str(where + ("headers",))))
        obs.slots["model"] = [Seen(model_id, path, "model")]
        small = config.get("small_model")
        if isinstance(small, str) and small.startswith(pid + "/"):
            obs.slots["small_model"] = [Seen(small[len(pid) + 1:], path, "small_model")]
        models = entry.get("models") if isinstance(entry.get("models"), dict) else {}
        others = [m for m in models if m not in (model_id, small)]
        if others:
            obs.notes.append(f"{path}: provider {pid!r} also lists {', '.join(others)}; "
                             f"apply lists the whole fleet catalogue there")
    elif isinstance(model, str):
        obs.notes.append(f"{path}: model {model!r} has no provider prefix, which {f.title} "
                         f"refuses (\"Model not found\"); taosync writes <provider>/<id>")

    servers = config.get("mcp") if isinstance(config.get("mcp"), dict) else {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        if entry.get("enabled") is False:
            obs.notes.append(f"{path}: MCP server {name!r} is disabled; not imported")
            continue
        command = entry.get("command")
        if entry.get("type") == "local" and isinstance(command, list) and command:
            value = fleet_mcp(command=command[0], args=command[1:],
                              env=entry.get("environment"), cwd=entry.get("cwd"))
        elif entry.get("type") == "remote":
            value = fleet_mcp(url=entry.get("url"), headers=entry.get("headers"))
        else:
            value = None
        if value is None:
            obs.notes.append(f"{path}: MCP server {name!r} has a shape fleet.yaml cannot "
                             f"express; not imported")
            continue
        obs.mcp_servers[name] = Seen(value, path, keypath_str(("mcp", name)))
    return obs


def _observe_key(value, path: Path, where: str, obs: Observation) -> None:
    if not (isinstance(value, str) and value.strip()):
        return
    value = value.strip()
    env_ref, file_ref = _ENV_TOKEN.match(value), _FILE_TOKEN.match(value)
    if env_ref:
        obs.key_envs.append(Seen(env_ref.group(1).strip(), path, where))
        obs.settings["secrets"] = "reference"
    elif file_ref:
        obs.key_helper = Seen(f"cat {shlex.quote(file_ref.group(1).strip())}", path, where)
        obs.settings["secrets"] = "reference"
    else:
        obs.keys.append(Seen(Secret(value, f"{path} {where}"), path, where))


def on_disk(f: Flavor, module, fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probes the global file makes the client send: the provider that ``model``
    names (options.baseURL, apiKey with ``{env:}``/``{file:}`` resolved as the client
    does, options.headers) and its ``model`` and ``small_model``."""
    path = config_path(f, env)
    out, obs = start_on_disk(module, fleet, key, env, path)
    if obs is None:
        return out
    where = shown(path, env)
    if not obs.urls:
        out.problems.append(f"{where} names no model of a provider with options.baseURL "
                            f"(model: \"<provider>/<id>\")")
        return out
    url = obs.urls[0]
    key_seen = (obs.key_envs or ([obs.key_helper] if obs.key_helper else []) or obs.keys
                or [None])[0]
    if key_seen is None:
        out.problems.append(f"{where} {url.key[:-len('baseURL')]}apiKey is not set")
        return out
    key_where = f"{where} {key_seen.key}"
    if obs.key_envs:
        secret, problem = disk_key("env", key_seen.value, key_where, env)
    elif obs.key_helper is not None:  # "cat PATH", from a {file:PATH} key
        secret, problem = disk_key("file", shlex.split(key_seen.value)[-1], key_where, env)
    else:
        secret, problem = disk_key("literal", key_seen.value.reveal(), key_where, env)
    if problem:
        out.problems.append(problem)
        return out
    cfg = _cfg(f, fleet)
    small = cfg.small_model if cfg.small_model is not None else cfg.model
    for slot, route in (("model", cfg.model), ("small_model", small)):
        found = obs.slots.get(slot)
        if not found:
            continue
        out.probes += probe_specs(
            fleet, f.id, [(route, found[0].value)], protocol="openai-chat",
            base_url=url.value, path="/chat/completions",
            headers=obs.headers[0].value if obs.headers else {}, secret=secret,
            origins=(out.origin("url", url, env), out.origin("key", key_seen, env),
                     out.origin("model", found[0], env)))
    return out

