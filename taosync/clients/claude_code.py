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

In-client failover: for a model slot on a route with candidates, the top-level
``fallbackModel`` (a JSON list; a string makes Claude reject the whole settings file) gets
the route's other candidates, preferred first. Claude 2.1.332 moves a request to the next
entry, within the same run, on 500/502/503 (at once), 529 or an ``overloaded_error`` (after
3 in a row), a 404 ``not_found_error`` naming the model (at once), and a 4xx it does not
retry, such as 400 or 422 (after its retries); never on 401, 403 without ``model:`` in
its message, or 429. It uses the first three distinct entries, ``--fallback-model`` wins
over the setting, and ``CLAUDE_CODE_NO_MODEL_FALLBACK=1`` switches it off.
"""

from __future__ import annotations

import re
from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Finding, Observation, Seen, disk_key, safe_url,
                                  same_key, slot_option)
from taosync.fleet.secrets import parse_reference

ID = "claude-code"
BINARY = "claude"  # taosync doctor shows its --version
TITLE = "Claude Code"
SUMMARY = "Claude Code (Anthropic Messages): model, haiku, sonnet, opus slots."
LOCATION_VARS = ("CLAUDE_CONFIG_DIR",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"CLAUDE_CONFIG_DIR": ".claude"}
#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for ANTHROPIC_MODEL (default: default_route)."),
    slot_option("haiku", "Route or model id for the Haiku slot (background tasks)."),
    slot_option("sonnet", "Route or model id for the Sonnet slot (default: the model slot)."),
    slot_option("opus", "Route or model id for the Opus slot."),
    declare.failover_option("Claude Code"),
)
TARGETS = [
    "~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json): env.ANTHROPIC_BASE_URL, "
    "model slots, custom headers, and ANTHROPIC_AUTH_TOKEN or apiKeyHelper; fallbackModel "
    "(the model slot's route's other candidates)",
    "~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json): mcpServers.<name> (user scope)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Claude Code (2.1.332)',
     '`~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR`)',
     '`env.ANTHROPIC_BASE_URL` (root, never `/v1`), `env.ANTHROPIC_MODEL`, '
     '`env.ANTHROPIC_DEFAULT_{SONNET,HAIKU,OPUS}_MODEL`, `env.ANTHROPIC_CUSTOM_HEADERS`, '
     '`env.ANTHROPIC_AUTH_TOKEN` (inline) or `apiKeyHelper` (reference), and '
     '`fallbackModel` (the model slot\'s route\'s other candidates; `failover: false` '
     'leaves it out)'),
    ('',
     '`~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`)',
     '`mcpServers.<name>` (Claude rewrites this file itself; taosync only merges)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`apiKeyHelper` = a command that prints the key at run time (`printenv NAME`, `cat "
    "FILE`, or your command; for a password store `op read 'op://…'`, `pass show PATH | "
    "head -n 1`, `<python> -m taosync secret get '${keyring:…}'`).")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "inline in `~/.claude.json` (0600), with a warning: Claude expands `${VAR}` only in a "
    "project's `.mcp.json`, not in user scope.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "@anthropic-ai/claude-code@2.1.332", "")

def paths(env: ClientEnv) -> tuple[Path, Path]:
    """(settings.json, state file .claude.json) on this machine."""
    config_dir = env.location("CLAUDE_CONFIG_DIR")
    if config_dir is not None:
        return config_dir / "settings.json", config_dir / ".claude.json"
    return env.home / ".claude" / "settings.json", env.home / ".claude.json"


#: ``model`` values that name a slot rather than a model id
_MODEL_ALIASES = re.compile(r"^(default|best|opusplan|sonnet|opus|haiku)(\[[^\]]*\])?$")
#: settings that send Claude to another provider than the gateway
_PROVIDERS = (("CLAUDE_CODE_USE_BEDROCK", "Amazon Bedrock"),
              ("CLAUDE_CODE_USE_VERTEX", "Google Vertex AI"),
              ("CLAUDE_CODE_USE_FOUNDRY", "Microsoft Foundry"))
#: how Claude sends a key, by where it read it (apiKeyHelper's output: as both)
_AUTH = {"env.ANTHROPIC_AUTH_TOKEN": "bearer", "env.ANTHROPIC_API_KEY": "x-api-key"}


class ClaudeCode(declare.Declared):
    """The table, and what it cannot say: by reference the key is an ``apiKeyHelper``
    command (sent as Bearer and x-api-key); import also reads the settings Claude honours
    besides taosync's (the top-level ``model``, ``ANTHROPIC_API_KEY``, a deprecated slot,
    another provider)."""

    def render_key(self, fleet, key, env, values) -> None:
        ref = self.key_reference(fleet, env, self.file("settings", env))
        if ref is None:
            values["settings"][("env", "ANTHROPIC_AUTH_TOKEN")] = key
        else:
            values["settings"][("apiKeyHelper",)] = declare.key_command(ref, env)

    def probe_auth(self, fleet, env: ClientEnv) -> str:
        helper = self.reference(fleet) and \
            parse_reference(fleet.gateway.key).kind in self.key_rule.reads
        return "both" if helper else "bearer"

    def disk_auth(self, key_seen: Seen | None) -> str:
        return _AUTH.get(key_seen.key, "both") if key_seen is not None else self.auth

    def read_key(self, obs, env, where):
        if obs.keys or not obs.key_envs:
            return super().read_key(obs, env, where)
        var = obs.key_envs[0]  # an apiKeyHelper that prints a variable
        return (var, *disk_key("env", var.value, f"{where} apiKeyHelper", env))

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        settings = docs["settings"]
        if isinstance(settings, dict) and settings:
            _observe_settings(settings, self.file("settings", env), obs)
        projects = docs["state"].get("projects") if isinstance(docs["state"], dict) else None
        if isinstance(projects, dict):
            n = sum(len(p["mcpServers"]) for p in projects.values()
                    if isinstance(p, dict) and isinstance(p.get("mcpServers"), dict))
            if n:
                obs.notes.append(f"{self.file('state', env)}: {n} project-scope MCP "
                                 f"server{'s' if n != 1 else ''} under projects.* not "
                                 f"imported (taosync writes user scope)")


def _observe_settings(data: dict, path: Path, obs: Observation) -> None:
    """What settings.json says beyond the table's keys."""
    envs = data.get("env")
    if not isinstance(envs, dict):
        envs = {}

    def text(var: str) -> str | None:
        value = envs.get(var)
        return value.strip() if isinstance(value, str) and value.strip() else None

    for var, label in _PROVIDERS:
        if text(var) not in (None, "0", "false"):
            obs.provider = Seen(f"{label} ({var}={text(var)})", path, f"env.{var}")
            for read in (obs.urls, obs.keys, obs.headers):
                read.clear()
            obs.slots.clear()
            return
    model = data.get("model")
    if isinstance(model, str) and model.strip() and not _MODEL_ALIASES.match(model.strip()):
        if "model" in obs.slots:
            obs.notes.append(f"{path}: model {model!r} is overridden by env.ANTHROPIC_MODEL")
        else:
            obs.slots["model"] = [Seen(model.strip(), path, "model")]
    helper = data.get("apiKeyHelper")
    if isinstance(helper, str) and helper.strip():
        if obs.keys:
            obs.notes.append(f"{path}: apiKeyHelper is shadowed by the key in env, which "
                             f"Claude prefers")
        else:
            obs.settings["secrets"] = "reference"
            name = declare.printed_variable(helper)
            if name:
                obs.key_envs.append(Seen(name, path, "apiKeyHelper"))
            else:
                obs.key_helper = Seen(helper.strip(), path, "apiKeyHelper")
    if not obs.urls and (obs.slots or obs.keys or obs.key_envs or obs.key_helper):
        obs.provider = Seen("Anthropic's own API (no env.ANTHROPIC_BASE_URL)", path, "env")


CLIENT = ClaudeCode(
    ID, TITLE, primary="settings", protocol="anthropic-messages", root="anthropic",
    path="/v1/messages?beta=true",
    files={"settings": declare.File(lambda env: paths(env)[0], "json", json_object=True),
           "state": declare.File(lambda env: paths(env)[1], "json")},
    bindings=(declare.url("settings", "env", "ANTHROPIC_BASE_URL"),
              declare.slot("settings", "env", "ANTHROPIC_MODEL"),
              declare.slot("settings", "env", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                           option="sonnet", default="model"),
              declare.slot("settings", "env", "ANTHROPIC_DEFAULT_HAIKU_MODEL", option="haiku",
                           optional=True),
              declare.slot("settings", "env", "ANTHROPIC_SMALL_FAST_MODEL", option="haiku",
                           note="is deprecated and Claude reads it before "
                           "ANTHROPIC_DEFAULT_HAIKU_MODEL, which is what taosync writes; "
                           "remove it"),
              declare.slot("settings", "env", "ANTHROPIC_DEFAULT_OPUS_MODEL", option="opus",
                           optional=True),
              declare.headers("settings", "env", "ANTHROPIC_CUSTOM_HEADERS",
                              join=(": ", "\n")),
              declare.key("settings", "env", "ANTHROPIC_AUTH_TOKEN"),
              declare.fallbacks("settings", "fallbackModel"),
              declare.key("settings", "env", "ANTHROPIC_API_KEY",
                          note="(x-api-key) is not what taosync writes: it sets "
                          "ANTHROPIC_AUTH_TOKEN (Bearer, no interactive approval); remove "
                          "ANTHROPIC_API_KEY once `taosync apply` has run")),
    key_rule=declare.KeyRule(declare.BY_COMMAND,
                             "Claude Code runs apiKeyHelper to read it"),
    places={"key": "env.ANTHROPIC_AUTH_TOKEN, env.ANTHROPIC_API_KEY or apiKeyHelper",
            "slot": "env.ANTHROPIC_MODEL"},
    # cwd is ignored by Claude Code, in .mcp.json and in ~/.claude.json alike:
    # github.com/anthropics/claude-code/issues/17565 (2.1.4, macOS) and
    # /issues/54786 (2.1.123, Windows); both closed as stale, not fixed
    mcp=declare.McpShape(("mcpServers",), stdio={"type": "stdio"}, http={"type": "http"},
                         sse={"type": "sse"}, env_always=True, cwd=False,
                         note="Claude Code expands ${VAR} only in a project's .mcp.json, "
                         "not in ~/.claude.json"),
    mcp_file="state",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)


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
    value = get("CLAUDE_CODE_NO_MODEL_FALLBACK")
    chain = fleet.fallbacks_for(claude.model) if claude is not None and claude.failover else []
    if value.lower() in ("1", "true", "yes", "on") and chain:
        out.append(Finding("CLAUDE_CODE_NO_MODEL_FALLBACK", "warn",
                           f"{value} in the shell switches off Claude Code's fallbackModel: "
                           f"the route's other candidates taosync writes there "
                           f"({', '.join(chain)}) are never tried; unset it, or set "
                           f"failover: false for claude-code"))
    return out
