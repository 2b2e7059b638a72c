"""Pi coding agent (``@mariozechner/pi-coding-agent`` 0.73.1, npm): models.json, settings.json.

Facts (clients.md §16; ``core/model-registry.js``, ``core/resolve-config-value.js``,
``core/auth-storage.js`` and ``config.js`` of 0.73.1, and ``pi -p`` run against ``taosync
stub``): pi reads ``$PI_CODING_AGENT_DIR`` (default ``~/.pi/agent``, on every OS)
``models.json`` — ``providers.<name>`` with ``baseUrl``, ``api``, ``apiKey`` (required for
a provider that is not built in), ``headers`` and ``models: [{id, name, contextWindow, …}]``;
``//`` comments and trailing commas are stripped before parsing — and ``settings.json``
(strict JSON) ``defaultProvider`` + ``defaultModel``. ``api`` is the request:
``openai-completions`` POSTs ``{baseUrl}/chat/completions`` and ``openai-responses``
``{baseUrl}/responses`` (Bearer; baseUrl = root + ``/v1``), ``anthropic-messages``
``{baseUrl}/v1/messages`` with ``x-api-key`` (baseUrl = the root). Catalogue models carry
no protocol, so one ``api`` (from the client's ``protocol`` option, named as for Droid and
Hermes) serves the whole provider.

The provider is ``taotoken``, the name gptme, Codex and opencode use too. It is none of
pi's built-in providers (``getProviders()``: ``openai``, ``anthropic``, …): under a
built-in name pi would merge its own models into the entry and read that provider's
variable (``OPENAI_API_KEY``) before models.json's key. A name taken from the gateway's
host would move with the URL and strand the user's ``--model taotoken/<id>``.

The key: ``apiKey`` — and each ``headers`` value, and an ``auth.json`` key — is resolved
on every request: ``!command`` runs through the shell (``/bin/sh``; its trimmed output; an
empty output or a failure stops the run with "Failed to resolve API key"); else the value
of the environment variable of that name, when set; else the text itself. So under
``secrets: reference`` taosync writes ``!printenv NAME`` for ``${env:NAME}``: a bare
``NAME`` would work while it is set, but an unset one is sent as the key (a 401 that names
no cause), where ``printenv`` fails loudly. ``${file:}`` is ``!cat '<path>'`` and
``${cmd:}``/``${shell:}`` the command. ``auth.json`` ``{"<provider>": {"type": "api_key",
"key": …}}`` beats models.json's key: import and verify read the key pi uses, and verify
names the file. Pi has no MCP client (extensions and skills instead).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, OnDisk, Seen, disk_key, read_plain,
                                  shown, slot_option, stored_key)
from taosync.formats.base import Match, keypath_str

ID = "pi"
BINARY = "pi"  # taosync doctor shows its --version (pi prints it on stderr)
TITLE = "Pi"
SUMMARY = "Pi (models.json provider + settings.json default): model, protocol."
LOCATION_VARS = ("PI_CODING_AGENT_DIR",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"PI_CODING_AGENT_DIR": ".pi/agent"}
#: Pi has no MCP client: the fleet's mcp_servers are not written for it
MCP = False
TARGETS = [
    "~/.pi/agent/models.json ($PI_CODING_AGENT_DIR): providers.taotoken (baseUrl, api, "
    "apiKey, headers, models[id=<id>])",
    "~/.pi/agent/settings.json: defaultProvider, defaultModel",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys)
OWNED_FILES = (
    ("Pi (`@mariozechner/pi-coding-agent` 0.73.1)",
     "`~/.pi/agent/models.json` (`$PI_CODING_AGENT_DIR`)",
     "`providers.taotoken.{baseUrl,api,apiKey,headers}` (root + `/v1`; the root for "
     "`anthropic-messages`), `providers.taotoken.models[id=<model id>].{name,contextWindow}` "
     "(the whole catalogue)"),
    ("", "`~/.pi/agent/settings.json`", "`defaultProvider` (`taotoken`), `defaultModel`"),
)
#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`apiKey: \"!printenv NAME\"` for `${env:NAME}` (an unset one stops Pi with an error; "
    "a bare `NAME` would be sent as the key), `\"!cat '/abs/path'\"` for `${file:PATH}`, "
    "`\"!COMMAND\"` for `${cmd:}`/`${shell:}` (Pi runs it through the shell), and the "
    "store's own read for `${keyring:}`/`${op://}`/`${pass:}` (as Claude Code's). A key in "
    "`~/.pi/agent/auth.json` for `taotoken` beats it: `verify` names that file.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "@mariozechner/pi-coding-agent@0.73.1", "")

#: the ``providers.<name>`` entry taosync owns
PROVIDER = "taotoken"
#: taosync's protocol → Pi's ``api`` and how the request goes
WIRES = {
    "openai-chat": declare.Wire("openai-completions", "openai", "/chat/completions", "bearer"),
    "openai-responses": declare.Wire("openai-responses", "openai", "/responses", "bearer"),
    "anthropic-messages": declare.Wire("anthropic-messages", "anthropic", "/v1/messages",
                                       "x-api-key"),
}

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for `defaultModel` (default: default_route); "
                "any catalogue model works as `pi --model taotoken/<id>`."),
    declare.protocol_option(TITLE, WIRES, "the provider's `api`"),
)

_ENTRY = ("providers", PROVIDER)
#: a bare name Pi reads as an environment variable (a key is no such word)
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")


def agent_dir(env: ClientEnv) -> Path:
    return env.location("PI_CODING_AGENT_DIR") or env.home / ".pi" / "agent"


class Pi(declare.Wired):
    """The table, and what it cannot say: the request follows the ``protocol`` option (on
    disk: the file's ``api``); the key is
    written as the ``!command`` Pi runs; import and verify follow ``defaultProvider`` to its
    entry and let an ``auth.json`` key win, as Pi does."""

    # -- render ---------------------------------------------------------------------------

    def render_key(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        ref = self.key_reference(fleet, env, self.file("models", env))
        values["models"][_ENTRY + ("apiKey",)] = \
            key if ref is None else "!" + declare.key_command(ref, env)

    def extra_render(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """The whole catalogue, so ``pi --model taotoken/<id>`` works for every model; each
        entry owned field by field (a user's ``reasoning`` or ``input`` there stays). Its
        ``name``, not its ``id``, is owned: given back, an entry left as ``{id}`` is pruned,
        while one left without an ``id`` would make Pi reject the whole file."""
        for name, value in fleet.gateway_headers().items():
            if value.reveal().startswith("!"):
                env.warnings.append(f"{ID}: gateway.headers {name} starts with '!', which Pi "
                                    f"runs as a shell command instead of sending it")
        for model in fleet.models:
            at = _ENTRY + ("models", Match("id", model))
            values["models"][at + ("name",)] = model
            window = fleet.context_window(model)
            if window:
                values["models"][at + ("contextWindow",)] = window

    # -- reading back -------------------------------------------------------------------

    def read_binding(self, bind: declare.Bind, seen: Seen, obs: Observation,
                     prefix: str | None = None) -> None:
        """Nothing: :meth:`extra_observe` follows ``defaultProvider`` to its entry."""

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        settings, models = docs["settings"], docs["models"]
        settings_path, models_path = self.file("settings", env), self.file("models", env)
        if not isinstance(settings, dict):
            return
        name, model = settings.get("defaultProvider"), settings.get("defaultModel")
        if not isinstance(name, str) or not name.strip():
            if isinstance(model, str) and model.strip():
                obs.notes.append(f"{settings_path}: defaultModel without defaultProvider; "
                                 f"Pi picks the first model it has a key for")
            return
        providers = models.get("providers") if isinstance(models, dict) else None
        entry = providers.get(name) if isinstance(providers, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        at = ("providers", name)
        base = entry.get("baseUrl")
        if not (isinstance(base, str) and base.strip()):
            obs.provider = Seen(f"provider {name!r} (no baseUrl in models.json: Pi's own)",
                                settings_path, "defaultProvider")
            return
        obs.urls.append(Seen(base.strip(), models_path, keypath_str(at + ("baseUrl",))))
        listed = [m for m in entry.get("models") or [] if isinstance(m, dict)] \
            if isinstance(entry.get("models"), list) else []
        chosen = next((m for m in listed if m.get("id") == model), {})
        api = chosen.get("api") or entry.get("api")
        protocol = self.protocol_of(api)
        if protocol is not None:
            obs.settings["protocol"] = protocol
            obs.protocol = WIRES[protocol].root
        elif isinstance(api, str):
            obs.notes.append(f"{models_path}: provider {name!r} speaks {api!r}, which taosync "
                             f"does not write (api: {', '.join(w.word for w in WIRES.values())})")
        headers = entry.get("headers")
        if isinstance(headers, dict) and headers:
            obs.headers.append(Seen({str(k): str(v) for k, v in headers.items()}, models_path,
                                    keypath_str(at + ("headers",))))
        if isinstance(model, str) and model.strip():
            obs.slots["model"] = [Seen(model.strip(), settings_path, "defaultModel")]
            if not chosen:
                obs.notes.append(f"{settings_path}: defaultModel {model!r} is not listed "
                                 f"under {keypath_str(at + ('models',))}")
        self.observe_key(env, name, entry.get("apiKey"), obs)

    def observe_key(self, env: ClientEnv, name: str, api_key: Any, obs: Observation) -> None:
        """The key Pi uses: ``auth.json``'s for the provider, else models.json's
        ``apiKey``; each a ``!command``, a variable's name or the key itself."""
        auth_path = agent_dir(env) / "auth.json"
        stored = read_plain(auth_path, "json", Observation(ID))  # unreadable: Pi ignores it
        cred = stored.get(name) if isinstance(stored, dict) else None
        if isinstance(cred, dict) and cred.get("type") == "api_key" and \
                isinstance(cred.get("key"), str) and cred["key"].strip():
            path, where, value = auth_path, keypath_str((name, "key")), cred["key"]
            obs.notes.append(f"{auth_path}: a key for provider {name!r} overrides "
                             f"models.json's apiKey (remove it with pi's /logout)")
        elif isinstance(api_key, str) and api_key.strip():
            path, where = self.file("models", env), keypath_str(("providers", name, "apiKey"))
            value = api_key
        else:
            return
        value = value.strip()
        if value.startswith("!"):
            obs.settings["secrets"] = "reference"
            var = declare.printed_variable(value[1:])
            if var:
                obs.key_envs.append(Seen(var, path, where))
            else:
                obs.key_helper = Seen(value[1:].strip(), path, where)
        elif _VARIABLE.fullmatch(value):
            obs.settings["secrets"] = "reference"
            obs.key_envs.append(Seen(value, path, where))
        else:
            from taosync.fleet.secrets import Secret

            obs.keys.append(Seen(Secret(value, f"{path} {where}"), path, where))

    # -- verify -------------------------------------------------------------------------

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk:
        """The probes the files make Pi send, shaped by the files' own ``api``; a key in
        ``auth.json`` that overrides models.json's is named (its value never is)."""
        obs = self.observe(env)
        out = self.on_disk_as_filed(obs, fleet, key, env)
        held = [*obs.key_envs, *obs.keys, *([obs.key_helper] if obs.key_helper else [])]
        for seen in (s for s in held if s.file == agent_dir(env) / "auth.json"):
            out.drift.append(f"{shown(seen.file, env)} {seen.key} overrides models.json's "
                             f"apiKey: Pi sends that key, not the fleet's; remove it (pi's "
                             f"/logout) so the fleet's key is used")
        return out

    def unprobed(self, obs: Observation, env: ClientEnv, where: str) -> str | None:
        if not obs.urls:
            return self.no_url(where, env)
        if "protocol" not in obs.settings:
            return (f"{shown(self.file('models', env), env)}: the default provider's api is "
                    f"none of {', '.join(w.word for w in WIRES.values())}")
        return None

    def no_url(self, where: str, env: ClientEnv) -> str:
        return (f"{where} names no defaultProvider with a baseUrl in "
                f"{shown(self.file('models', env), env)}")

    def read_key(self, obs: Observation, env: ClientEnv,
                 where: str) -> tuple[Seen | None, Any, str | None]:
        """The key as Pi resolves it: a command's output, a set variable's value, or
        the text (an unset variable's name would be sent as the key: a problem here)."""
        if obs.key_envs:
            seen = obs.key_envs[0]
            label = f"{shown(seen.file, env)} {seen.key}"
            if not env.getenv(seen.value):
                return seen, None, f"{label}: {seen.value} is not set, so Pi has no key"
            return (seen, *disk_key("env", seen.value, f"{label} (${seen.value})", env))
        if obs.key_helper is not None:
            seen = obs.key_helper
            return (seen, *disk_key("shell", seen.value, f"{shown(seen.file, env)} {seen.key}",
                                    env))
        if obs.keys:
            return (obs.keys[0], *stored_key(obs.keys[0], env))
        return None, None, f"{where} holds no key (providers.<defaultProvider>.apiKey)"


CLIENT = Pi(
    ID, TITLE, primary="models",
    files={"models": declare.File(lambda env: agent_dir(env) / "models.json", "jsonc",
                                  json_object=True),
           "settings": declare.File(lambda env: agent_dir(env) / "settings.json", "json",
                                    json_object=True)},
    bindings=(declare.url("models", *_ENTRY, "baseUrl"),
              declare.computed("models", *_ENTRY, "api",
                               value=lambda fleet, cfg: WIRES[cfg.protocol].word),
              declare.key("models", *_ENTRY, "apiKey"),
              declare.headers("models", *_ENTRY, "headers"),
              declare.fixed("settings", "defaultProvider", value=PROVIDER),
              declare.slot("settings", "defaultModel")),
    key_rule=declare.KeyRule(declare.BY_COMMAND,
                             "Pi runs a !command for its key"),
    wires=WIRES,
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
