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
import re
import shlex
import sys
from pathlib import Path

from taosync.clients.base import (Finding, safe_url, same_key, ClientEnv, Observation, OnDisk, Patch, ProbeSpec, Seen, disk_key,
                                  fleet_mcp, probe_specs, read_plain, shown, slot_option,
                                  start_on_disk, stored_key)
from taosync.fleet.logic import inline_mcp_secrets, joined
from taosync.fleet.secrets import Secret, expand_path, parse_reference
from taosync.formats.base import keypath_str

ID = "claude-code"
BINARY = "claude"  # taosync doctor shows its --version
TITLE = "Claude Code"
SUMMARY = "Claude Code (Anthropic Messages): model, haiku, sonnet, opus slots."
LOCATION_VARS = ("CLAUDE_CONFIG_DIR",)
#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for ANTHROPIC_MODEL (default: default_route)."),
    slot_option("haiku", "Route or model id for the Haiku slot (background tasks)."),
    slot_option("sonnet", "Route or model id for the Sonnet slot (default: the model slot)."),
    slot_option("opus", "Route or model id for the Opus slot."),
)
TARGETS = [
    "~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json): env.ANTHROPIC_BASE_URL, "
    "model slots, custom headers, and ANTHROPIC_AUTH_TOKEN or apiKeyHelper",
    "~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json): mcpServers.<name> (user scope)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Claude Code (2.1.332)',
     '`~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR`)',
     '`env.ANTHROPIC_BASE_URL` (root, never `/v1`), `env.ANTHROPIC_MODEL`, '
     '`env.ANTHROPIC_DEFAULT_{SONNET,HAIKU,OPUS}_MODEL`, `env.ANTHROPIC_CUSTOM_HEADERS`, '
     'and `env.ANTHROPIC_AUTH_TOKEN` (inline) or `apiKeyHelper` (reference)'),
    ('',
     '`~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`)',
     '`mcpServers.<name>` (Claude rewrites this file itself; taosync only merges)'),
)

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


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    settings_json, state = paths(env)
    return [settings_json.parent], [state]


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
        values[("env", "ANTHROPIC_CUSTOM_HEADERS")] = joined(
            fleet.gateway_headers().items(), ": ", "\n")

    helper = _key_helper(fleet, env) if _reference_mode(fleet, cfg) else None
    if helper is not None:
        values[("apiKeyHelper",)] = helper
    else:
        if _reference_mode(fleet, cfg):
            env.warnings.append(
                f"{ID}: secrets: reference needs gateway.key to be an ${{env:…}}, "
                f"${{file:…}}, ${{cmd:…}} or ${{shell:…}} reference for apiKeyHelper, but it "
                f"is a literal key; wrote it inline as env.ANTHROPIC_AUTH_TOKEN in "
                f"{settings_path} (mode 0600)"
            )
        values[("env", "ANTHROPIC_AUTH_TOKEN")] = key

    patches = [Patch(settings_path, "json", values, ID)]

    if cfg.mcp and fleet.mcp_servers:
        servers: dict = {}
        for name, server in fleet.mcp_servers_expanded(key).items():
            if server.kind == "stdio":
                entry = {"type": "stdio", "command": server.command,
                         "args": list(server.args), "env": dict(server.env)}
                # cwd is ignored by Claude Code, in .mcp.json and in ~/.claude.json alike:
                # github.com/anthropics/claude-code/issues/17565 (2.1.4, macOS) and
                # /issues/54786 (2.1.123, Windows); both closed as stale, not fixed
                if server.cwd:
                    env.warnings.append(
                        f"{ID}: MCP server {name!r} sets cwd, which Claude Code's "
                        f"mcpServers schema does not have; left it out of {state_path}"
                    )
            else:
                entry = {"type": "http" if server.transport == "http" else "sse",
                         "url": server.url}
                if server.headers:
                    entry["headers"] = dict(server.headers)
            if _reference_mode(fleet, cfg):
                warning = inline_mcp_secrets(
                    ID, name, entry.get("env") or entry.get("headers") or {}, state_path,
                    "Claude Code expands ${VAR} only in a project's .mcp.json, not in "
                    "~/.claude.json")
                if warning:
                    env.warnings.append(warning)
            servers[("mcpServers", name)] = entry
        holds_key = key.found_in(list(servers.values()))
        if holds_key and helper is not None:
            env.warnings.append(
                f"{ID}: an MCP server uses ${{gateway.key}}, so the key is written into "
                f"{state_path} (mode 0600) even with secrets: reference"
            )
        patches.append(Patch(state_path, "json", servers, ID, secret=holds_key))
    return patches


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    cfg = fleet.clients.claude_code
    reference = _reference_mode(fleet, cfg) and _key_helper(fleet, env) is not None
    return probe_specs(fleet, ID, fleet.distinct_models(_slots(cfg).values()),
                       protocol="anthropic-messages", base_url=fleet.anthropic_url,
                       path="/v1/messages?beta=true", auth="both" if reference else "bearer")


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probes Claude Code's settings.json makes it send: env.ANTHROPIC_BASE_URL, the
    key (env.ANTHROPIC_AUTH_TOKEN as Bearer, else env.ANTHROPIC_API_KEY as x-api-key, else
    apiKeyHelper's output as both), the model slots and env.ANTHROPIC_CUSTOM_HEADERS."""
    settings_path, _ = paths(env)
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, settings_path)
    if obs is None:
        return out
    where = shown(settings_path, env)
    if not obs.urls:
        out.problems.append(f"{where} sets no env.ANTHROPIC_BASE_URL")
        return out
    url = obs.urls[0]
    auth, secret, key_seen, problem = "bearer", None, None, None
    if obs.keys:  # AUTH_TOKEN first: Claude sends it as Bearer
        key_seen = obs.keys[0]
        auth = "bearer" if key_seen.key == "env.ANTHROPIC_AUTH_TOKEN" else "x-api-key"
        secret, problem = stored_key(key_seen, env, where)
    elif obs.key_envs or obs.key_helper:
        key_seen = obs.key_envs[0] if obs.key_envs else obs.key_helper
        kind = "env" if obs.key_envs else "shell"
        auth = "both"
        secret, problem = disk_key(kind, key_seen.value, f"{where} apiKeyHelper", env)
    else:
        problem = (f"{where} holds no key (env.ANTHROPIC_AUTH_TOKEN, env.ANTHROPIC_API_KEY "
                   f"or apiKeyHelper)")
    if problem:
        out.problems.append(problem)
        return out
    origins = [out.origin("url", url, env), out.origin("key", key_seen, env)]
    for slot, value in _slots(fleet.clients.claude_code).items():
        found = obs.slots.get(slot)
        if not found:
            continue
        out.probes += probe_specs(
            fleet, ID, [(value, found[0].value)], protocol="anthropic-messages",
            base_url=url.value, path="/v1/messages?beta=true", auth=auth,
            headers=obs.headers[0].value if obs.headers else {}, secret=secret,
            origins=tuple(origins + [out.origin("model", found[0], env)]))
    if not out.probes:
        out.problems.append(f"{where} names no model (env.ANTHROPIC_MODEL)")
    return out


# -- reading back (taosync import) ---------------------------------------------------

#: ``model`` values that name a slot rather than a model id
_MODEL_ALIASES = re.compile(r"^(default|best|opusplan|sonnet|opus|haiku)(\[[^\]]*\])?$")
#: apiKeyHelper commands that just print an environment variable
_PRINTENV = re.compile(
    r"^\s*(?:printenv\s+([A-Za-z_][A-Za-z0-9_]*)"
    r"|echo\s+(?:\"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\"|\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?))\s*$")


def observe(env: ClientEnv) -> Observation:
    """What Claude Code's user settings and state file say (for ``taosync import``)."""
    settings_path, state_path = paths(env)
    obs = Observation(ID, protocol="anthropic")
    data = read_plain(settings_path, "json", obs)
    if data is not None and not isinstance(data, dict):
        obs.problems.append(f"{settings_path}: the top level is not a JSON object")
    elif data:
        _observe_settings(data, settings_path, obs)
    state = read_plain(state_path, "json", obs)
    if isinstance(state, dict):
        _observe_mcp(state, state_path, obs)
    return obs


def _observe_settings(data: dict, path: Path, obs: Observation) -> None:
    envs = data.get("env") if isinstance(data.get("env"), dict) else {}

    def text(var: str) -> str | None:
        value = envs.get(var)
        return value.strip() if isinstance(value, str) and value.strip() else None

    def seen(var: str) -> Seen:
        return Seen(text(var), path, f"env.{var}")

    for var, label in (("CLAUDE_CODE_USE_BEDROCK", "Amazon Bedrock"),
                       ("CLAUDE_CODE_USE_VERTEX", "Google Vertex AI"),
                       ("CLAUDE_CODE_USE_FOUNDRY", "Microsoft Foundry")):
        if text(var) not in (None, "0", "false"):
            obs.provider = Seen(f"{label} ({var}={text(var)})", path, f"env.{var}")
            return

    if text("ANTHROPIC_BASE_URL"):
        obs.urls.append(seen("ANTHROPIC_BASE_URL"))

    for slot, var in _SLOT_VARS.items():
        if text(var):
            obs.slots.setdefault(slot, []).append(seen(var))
    if text("ANTHROPIC_SMALL_FAST_MODEL"):
        obs.slots.setdefault("haiku", []).append(seen("ANTHROPIC_SMALL_FAST_MODEL"))
        obs.notes.append(
            f"{path}: env.ANTHROPIC_SMALL_FAST_MODEL is deprecated and Claude reads it before "
            f"ANTHROPIC_DEFAULT_HAIKU_MODEL, which is what taosync writes; remove it")
    model = data.get("model")
    if isinstance(model, str) and model.strip() and not _MODEL_ALIASES.match(model.strip()):
        if "model" in obs.slots:
            obs.notes.append(f"{path}: model {model!r} is overridden by env.ANTHROPIC_MODEL")
        else:
            obs.slots["model"] = [Seen(model.strip(), path, "model")]

    literal = False
    for var in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"):
        if text(var):
            literal = True
            obs.keys.append(Seen(Secret(text(var), f"{path} env.{var}"), path, f"env.{var}"))
    if text("ANTHROPIC_API_KEY"):
        obs.notes.append(
            f"{path}: env.ANTHROPIC_API_KEY (x-api-key) is not what taosync writes: it sets "
            f"ANTHROPIC_AUTH_TOKEN (Bearer, no interactive approval); remove "
            f"ANTHROPIC_API_KEY once `taosync apply` has run")
    helper = data.get("apiKeyHelper")
    if isinstance(helper, str) and helper.strip():
        if literal:
            obs.notes.append(f"{path}: apiKeyHelper is shadowed by the key in env, which "
                             f"Claude prefers")
        else:
            obs.settings["secrets"] = "reference"
            m = _PRINTENV.match(helper)
            if m:
                name = next(g for g in m.groups() if g)
                obs.key_envs.append(Seen(name, path, "apiKeyHelper"))
            else:
                obs.key_helper = Seen(helper.strip(), path, "apiKeyHelper")

    raw = text("ANTHROPIC_CUSTOM_HEADERS")
    if raw:
        headers = {}
        for line in raw.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip():
                headers[name.strip()] = value.strip()
        if headers:
            obs.headers.append(Seen(headers, path, "env.ANTHROPIC_CUSTOM_HEADERS"))

    if not obs.urls and (obs.slots or obs.keys or obs.key_envs or obs.key_helper):
        obs.provider = Seen("Anthropic's own API (no env.ANTHROPIC_BASE_URL)", path, "env")


def _observe_mcp(state: dict, path: Path, obs: Observation) -> None:
    servers = state.get("mcpServers")
    if isinstance(servers, dict):
        for name, entry in servers.items():
            if not isinstance(entry, dict):
                continue
            kind = entry.get("type")
            if "command" in entry and kind in (None, "stdio"):
                value = fleet_mcp(command=entry.get("command"), args=entry.get("args"),
                                  env=entry.get("env"))
            else:
                value = fleet_mcp(url=entry.get("url"), headers=entry.get("headers"),
                                  transport="sse" if kind == "sse" else "http")
            if value is None:
                obs.notes.append(f"{path}: MCP server {name!r} has a shape fleet.yaml cannot "
                                 f"express; not imported")
                continue
            obs.mcp_servers[name] = Seen(value, path, keypath_str(("mcpServers", name)))
    projects = state.get("projects")
    if isinstance(projects, dict):
        n = sum(len(p["mcpServers"]) for p in projects.values()
                if isinstance(p, dict) and isinstance(p.get("mcpServers"), dict))
        if n:
            obs.notes.append(f"{path}: {n} project-scope MCP server{'s' if n != 1 else ''} "
                             f"under projects.* not imported (taosync writes user scope)")


# -- doctor ----------------------------------------------------------------------------------

def doctor(fleet, key, environ) -> list[Finding]:
    """Claude Code's environment pitfalls: a settings.json ``env`` value beats the same
    variable in the shell, and ``ANTHROPIC_API_KEY`` is sent as x-api-key beside the
    token (clients.md, Claude Code: precedence and auth headers)."""
    from taosync.fleet.secrets import redact

    get = lambda name: (environ.get(name) or "").strip()  # noqa: E731
    claude = fleet.enabled_clients().get(ID) if fleet is not None else None
    managed = claude is not None
    reference = managed and fleet.secrets_for(claude) == "reference"
    rule = "Claude Code: a settings.json env value beats the same variable in the shell"
    out: list[Finding] = []

    value = get("ANTHROPIC_BASE_URL")
    if value:
        want = fleet.anthropic_url if fleet is not None else None
        if not managed:
            out.append(Finding("ANTHROPIC_BASE_URL", "warn",
                               f"{safe_url(value)} in the shell; Claude Code is not managed by "
                               "taosync here, so it uses this"))
        elif want and value.rstrip("/") != want.rstrip("/"):
            out.append(Finding("ANTHROPIC_BASE_URL", "warn",
                               f"{safe_url(value)} in the shell differs from the fleet's {want}; "
                               f"{rule}, so Claude Code uses the fleet's, other Anthropic tools "
                               "use the shell's"))
        else:
            out.append(Finding("ANTHROPIC_BASE_URL", "info",
                               f"set in the shell (same as the fleet); {rule}"))
    value = get("ANTHROPIC_AUTH_TOKEN")
    if value:
        same = same_key(value, key)
        shown_value = redact(value)
        if reference and same is False:
            out.append(Finding("ANTHROPIC_AUTH_TOKEN", "warn",
                               f"{shown_value} in the shell beats taosync's apiKeyHelper "
                               "(secrets: reference), and it is not the fleet's key: Claude Code "
                               "will send it; unset it"))
        elif same is False:
            out.append(Finding("ANTHROPIC_AUTH_TOKEN", "info",
                               f"{shown_value} in the shell is not the fleet's key; {rule} (taosync "
                               "writes ANTHROPIC_AUTH_TOKEN there), other tools use the shell's"))
        else:
            out.append(Finding("ANTHROPIC_AUTH_TOKEN", "info",
                               f"{shown_value} in the shell" + (" (the fleet's key)" if same else "")))
    value = get("ANTHROPIC_API_KEY")
    if value:
        same = same_key(value, key)
        out.append(Finding("ANTHROPIC_API_KEY", "warn" if same is False else "info",
                           f"{redact(value)} in the shell"
                           + (" is not the fleet's key: Claude Code sends it as x-api-key next "
                              "to Authorization, and a gateway may reject the pair; in "
                              "interactive mode it asks to approve it; unset it"
                              if same is False else
                              ": Claude Code sends it as x-api-key (and asks to approve it in "
                              "interactive mode); ANTHROPIC_AUTH_TOKEN needs no approval")))
    return out
