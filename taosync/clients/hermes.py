"""Hermes Agent (``hermes-agent`` 0.19.0, PyPI): ``~/.hermes/config.yaml`` and ``.env``.

Facts (clients.md §17; hermes_cli/config.py, runtime_provider.py, env_loader.py,
fallback_config.py and agent/chat_completion_helpers.py at 0.19.0; every row below run
with ``hermes -z`` against ``taosync stub``): Hermes reads ``$HERMES_HOME/config.yaml``
(default ``~/.hermes``; ``%LOCALAPPDATA%\\hermes`` on Windows). ``model: {provider: <name>,
default: <model id>}`` names an entry of ``providers:``, whose ``base_url`` takes root +
``/v1`` and whose ``api_mode`` picks the wire API: ``chat_completions`` POSTs
``{base_url}/chat/completions``, ``codex_responses`` ``{base_url}/responses`` (both
Bearer, with ``extra_headers``), ``anthropic_messages`` ``/v1/messages`` under the root
(``x-api-key``; no ``extra_headers`` in that mode).

The key: ``key_env: NAME`` makes Hermes read ``$NAME``, after loading ``$HERMES_HOME/.env``
into its environment with override — a line there beats the shell. So config.yaml never
holds the key: inline mode writes it to ``.env`` (0600, where ``hermes setup`` keeps
keys), reference mode with ``gateway.key: ${env:NAME}`` writes only the name, and verify
names a ``.env`` line that would send another value. ``$HERMES_HOME/active_profile``
naming a profile (``hermes profile use``) makes Hermes read ``profiles/<name>/`` instead:
verify says so. An unset variable sends
``Bearer no-key-required`` (and ``hermes -z`` still exits 0).

Failover inside the request: ``fallback_providers:`` is a list of ``{provider, model,
base_url, key_env}``; Hermes moves down it on a 429, 402, 401/403, a non-retryable 4xx,
a 5xx or timeout that outlives its retries, or an empty answer. It picks a fallback's wire
API from the provider and URL, not from ``api_mode``, so each entry is ``provider:
custom`` at the gateway's ``/v1`` (Chat Completions) whatever the primary speaks, and it
sends no ``extra_headers`` there. MCP: ``mcp_servers.<name>`` = ``{command, args, env}``
or ``{url, headers}`` (``transport: sse``), ``${VAR}`` expanded from that environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, OnDisk, Seen, read_plain,
                                  shown, slot_option, stored_key)
from taosync.formats.base import keypath_str

ID = "hermes"
BINARY = "hermes"  # taosync doctor shows its --version
TITLE = "Hermes Agent"
SUMMARY = "Hermes Agent (config.yaml providers + .env key): model, protocol, failover."
LOCATION_VARS = ("HERMES_HOME",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"HERMES_HOME": ".hermes"}

#: what Hermes 0.19.0 sends besides the gateway's headers (seen by the stand-in gateway)
OPENAI_HEADERS = {"User-Agent": "OpenAI/Python 2.24.0", "X-Stainless-Lang": "python"}
ANTHROPIC_HEADERS = {"User-Agent": "Anthropic/Python 0.87.0",
                     "anthropic-beta": "interleaved-thinking-2025-05-14,"
                                       "fine-grained-tool-streaming-2025-05-14"}
#: taosync's protocol → Hermes' ``api_mode`` and the request Hermes sends
WIRES = {
    "openai-chat": declare.Wire("chat_completions", "openai", "/chat/completions", "bearer",
                                {"sends": OPENAI_HEADERS}),
    "openai-responses": declare.Wire("codex_responses", "openai", "/responses", "bearer",
                                     {"sends": OPENAI_HEADERS}),
    "anthropic-messages": declare.Wire("anthropic_messages", "anthropic", "/v1/messages",
                                       "x-api-key", {"sends": ANTHROPIC_HEADERS,
                                                     "sends_headers": False}),
}
#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for `model.default` (default: default_route)."),
    declare.protocol_option(TITLE, WIRES, "the provider's `api_mode`"),
    declare.failover_option(TITLE),
)
TARGETS = [
    "~/.hermes/config.yaml ($HERMES_HOME): model.{provider,default}, providers.taotoken, "
    "fallback_providers (a route with candidates), mcp_servers.<name>",
    "~/.hermes/.env: the key under providers.taotoken.key_env (inline mode)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Hermes Agent (`hermes-agent` 0.19.0)',
     '`~/.hermes/config.yaml` (`$HERMES_HOME`)',
     '`model.{provider,default}`, `providers.taotoken.{base_url,api_mode,key_env,'
     'extra_headers}`, `fallback_providers` (whole, for a route with candidates and '
     '`failover: true`), `mcp_servers.<name>.*`'),
    ('',
     '`~/.hermes/.env`',
     '`<key_env>` (inline mode; mode 0600)'),
)
#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`key_env: NAME` when the key is `${env:NAME}` (verify names a `~/.hermes/.env` line "
    "setting NAME: Hermes loads it over the shell); inline, and for other references (with "
    "a warning), the value goes to `~/.hermes/.env` (0600), never into `config.yaml`.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = "`${env:NAME}` → `${NAME}` (Hermes expands it in config.yaml); others inline " \
    "(0600), with a warning."
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("pypi", "hermes-agent[anthropic,mcp]==0.19.0",
           "Python 3.11–3.13; without `mcp` it starts no MCP server")

#: the ``providers:`` entry taosync owns
PROVIDER = "taotoken"
#: the variable the key is stored under in ``.env`` when the fleet's key is no ${env:NAME}
DEFAULT_KEY_VAR = "TAOTOKEN_API_KEY"
_PROVIDER = ("providers", PROVIDER)


def hermes_home(env: ClientEnv) -> Path:
    """``$HERMES_HOME``, else ``~/.hermes`` (``%LOCALAPPDATA%\\hermes`` on Windows), as
    hermes_constants.get_hermes_home has it."""
    if env.platform == "win32":
        local = env.location("LOCALAPPDATA") or env.home / "AppData" / "Local"
        return env.location("HERMES_HOME") or local / "hermes"
    return env.location("HERMES_HOME") or env.home / ".hermes"


def active_profile(env: ClientEnv, obs: Observation) -> str | None:
    """The profile ``$HERMES_HOME/active_profile`` selects, when it is not the default:
    Hermes then reads ``profiles/<name>/`` instead of the files taosync writes (a
    HERMES_HOME that is itself a profile directory ignores it)."""
    home = hermes_home(env)
    if home.parent.name == "profiles":
        return None
    name = read_plain(home / "active_profile", "text", obs, ("text",))
    name = name.strip() if isinstance(name, str) else ""
    return name if name and name != "default" else None


def _profile_problem(env: ClientEnv, name: str) -> str:
    home = hermes_home(env)
    return (f"{shown(home / 'active_profile', env)} selects profile {name!r}: Hermes reads "
            f"{shown(home / 'profiles' / name / 'config.yaml', env)}, not the files taosync "
            f"writes (`hermes profile use default` returns to them)")


class Hermes(declare.Wired):
    """The table, and what it cannot say: the request depends on the ``protocol`` option
    (its wire), the route's other candidates become
    ``fallback_providers``, import follows ``model.provider`` to its entry, and the key
    Hermes sends is ``.env``'s before the environment's."""

    def warn_headers(self, fleet: Any, env: ClientEnv) -> None:
        """Headers go nowhere in anthropic_messages mode, nor to a fallback."""
        names = ", ".join(fleet.gateway.headers)
        if not names:
            return
        if not self.sends_headers:
            env.warnings.append(
                f"{ID}: Hermes sends no extra headers with protocol: anthropic-messages; "
                f"gateway.headers ({names}) are not sent by {TITLE}")
        elif self.chain(fleet):
            env.warnings.append(
                f"{ID}: Hermes sends providers.{PROVIDER}.extra_headers to the primary model "
                f"only; its fallback_providers requests carry no gateway.headers ({names})")

    def value(self, fleet: Any, key: Any, bind: declare.Bind) -> Any:
        if bind.role == "headers" and not self.sends_headers:
            return None
        return super().value(fleet, key, bind)

    def chain(self, fleet: Any) -> list[str]:
        """The models Hermes falls back to, in order (none with ``failover: false``)."""
        cfg = self.cfg(fleet)
        return fleet.fallbacks_for(cfg.model) if cfg.failover else []

    def extra_render(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """``fallback_providers``: the route's other candidates, each at the gateway's
        Chat Completions URL with the key by the same variable."""
        var = values["config"][_PROVIDER + ("key_env",)]
        chain = self.chain(fleet)
        if chain:
            values["config"][("fallback_providers",)] = [
                {"provider": "custom", "model": model, "base_url": fleet.openai_url,
                 "key_env": var} for model in chain]

    # -- import -------------------------------------------------------------------------

    def read_binding(self, bind: declare.Bind, seen: Seen, obs: Observation,
                     prefix: str | None = None) -> None:
        """Nothing by the table's paths: the entry read is the one model.provider names."""

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        profile = active_profile(env, obs)
        if profile:
            obs.notes.append(_profile_problem(env, profile))
        config, path = docs["config"], self.file("config", env)
        model = config.get("model") if isinstance(config, dict) else None
        if not isinstance(model, dict):
            if isinstance(model, str) and model.strip():
                obs.provider = Seen(f"model {model.strip()!r} (no model.provider entry)",
                                    path, "model")
            return
        default = model.get("default")
        if isinstance(default, str) and default.strip():
            obs.slots["model"] = [Seen(default.strip(), path, "model.default")]
        name = model.get("provider")
        providers = config.get("providers")
        entry = providers.get(name) if isinstance(providers, dict) else None
        if not isinstance(entry, dict):
            obs.provider = Seen(f"provider {name!r} (no providers.{name} entry)", path,
                                "model.provider")
            return
        p = ("providers", str(name))
        mode = entry.get("api_mode") or entry.get("transport") or "chat_completions"
        protocol = self.protocol_of(mode)
        if protocol is None:
            obs.provider = Seen(f"provider {name!r} with api_mode {mode!r}", path,
                                keypath_str(p + ("api_mode",)))
            return
        obs.settings["protocol"] = protocol
        obs.protocol = WIRES[protocol].root
        for bind in self.bindings:
            value = entry.get(bind.path[-1])
            if bind.role in ("url", "headers", "key_var") and value is not None:
                super().read_binding(bind, Seen(value, path, keypath_str(p + bind.path[-1:])),
                                     obs)
        inline = entry.get("api_key")
        if isinstance(inline, str) and inline.strip():
            super().read_binding(declare.key("config", *p, "api_key"),
                                 Seen(inline, path, keypath_str(p + ("api_key",))), obs)
        elif obs.key_envs:
            self.read_stored_key(obs.key_envs[0].value, docs, env, obs)

    # -- verify -------------------------------------------------------------------------

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk:
        """The request the files make Hermes send (by the file's api_mode), and a
        ``.env`` line that sends another key than the environment's reference."""
        obs = self.observe(env)
        out = self.on_disk_as_filed(obs, fleet, key, env)
        profile = active_profile(env, obs)
        if profile:
            out.problems.append(_profile_problem(env, profile))
        from taosync.fleet.secrets import parse_reference

        ref = parse_reference(fleet.gateway.key)
        var = obs.key_envs[0].value if obs.key_envs else None
        if self.reference(fleet) and ref.kind == "env" and var == ref.arg and obs.keys:
            out.drift.append(
                f"{shown(obs.keys[0].file, env)} sets {var}, which Hermes loads over the "
                f"environment: it sends that value, not ${var} of your shell (secrets: "
                f"reference); remove the line")
        return out

    def read_key(self, obs: Observation, env: ClientEnv,
                 where: str) -> tuple[Seen | None, Any, str | None]:
        """``.env``'s value of ``key_env`` first: Hermes loads it with override."""
        if obs.key_envs and obs.keys:
            return (obs.keys[0], *stored_key(obs.keys[0], env))
        return super().read_key(obs, env, where)


CLIENT = Hermes(
    ID, TITLE, primary="config",
    files={"config": declare.File(lambda env: hermes_home(env) / "config.yaml", "yaml"),
           "env": declare.File(lambda env: hermes_home(env) / ".env", "dotenv")},
    bindings=(declare.fixed("config", "model", "provider", value=PROVIDER),
              declare.slot("config", "model", "default"),
              declare.url("config", *_PROVIDER, "base_url"),
              declare.computed("config", *_PROVIDER, "api_mode",
                               value=lambda fleet, cfg: WIRES[cfg.protocol].word),
              declare.key_var("config", *_PROVIDER, "key_env", default=DEFAULT_KEY_VAR,
                              store="env"),
              declare.headers("config", *_PROVIDER, "extra_headers")),
    sends=OPENAI_HEADERS,
    wires=WIRES,
    key_rule=declare.KeyRule(("env",), "Hermes reads the key only from config.yaml or the "
                             "variable key_env names"),
    mcp=declare.McpShape(("mcp_servers",), whole=False, sse={"transport": "sse"}, cwd=False,
                         by_reference=declare.env_as("${{{}}}"), disabled={"enabled": False},
                         note="Hermes expands only ${env:NAME} values, as ${NAME}"),
    mcp_file="config",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
