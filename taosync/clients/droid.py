"""Factory Droid (``droid`` 0.215.0, npm): ``~/.factory/settings.json`` and ``mcp.json``.

Facts (clients.md §15, and runs of ``droid exec`` 0.215.0 against ``taosync stub`` in a
loopback-only namespace): droid reads ``$FACTORY_HOME_OVERRIDE/.factory`` (the variable
replaces HOME), else ``~/.factory``. ``settings.json`` is strict JSON; ``customModels`` is
a list of entries (``model``, ``displayName``, ``baseUrl``, ``apiKey``, ``provider``;
``extraHeaders``, ``maxContextLimit`` optional). ``provider`` picks the wire:
``generic-chat-completion-api`` POSTs ``{baseUrl}/chat/completions`` and ``openai``
``{baseUrl}/responses`` (baseUrl root + ``/v1``, Bearer); ``anthropic`` POSTs
``{baseUrl}/v1/messages`` (baseUrl the root, ``x-api-key``).

A custom model is named ``custom:<displayName, trimmed, whitespace runs as ->-<n>``, ``n``
counting the earlier entries of the same name: taosync's entries are the ones whose
displayName is ``taotoken/<model id>`` (one per catalogue model, so droid's model
switch offers them all), so ``n`` is 0. The model in use is
``sessionDefaultSettings.model``, which beats the legacy top-level ``model`` of the same
file (droid moves ``model`` there only when unset: function ``aSA``); the spec-mode
model is ``sessionDefaultSettings.specModeModel``. ``settings.local.json`` beats
``settings.json`` key by key, and its ``customModels`` replaces the whole list.

The key: ``${NAME}`` in ``apiKey`` is expanded from droid's process environment only
(no env file; unset, droid sends the literal text). ``extraHeaders`` are not expanded.
MCP: ``mcp.json`` ``mcpServers.<name>`` (``type`` stdio/http/sse; ``${VAR}`` expanded in
values; no ``cwd``; ``disabled: true`` switches one off).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, OnDisk, Seen, disk_key,
                                  shown, slot_option)
from taosync.formats.base import Match, keypath_str

ID = "droid"
BINARY = "droid"  # taosync doctor shows its --version
TITLE = "Factory Droid"
SUMMARY = ("Factory Droid (settings.json customModels, the whole catalogue): model, "
           "spec_model.")
LOCATION_VARS = ("FACTORY_HOME_OVERRIDE",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"FACTORY_HOME_OVERRIDE": "."}
TARGETS = [
    "~/.factory/settings.json ($FACTORY_HOME_OVERRIDE/.factory): customModels "
    "[displayName=taotoken/<id>] per catalogue model, sessionDefaultSettings.model, "
    "sessionDefaultSettings.specModeModel",
    "~/.factory/mcp.json: mcpServers.<name>",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Factory Droid (`droid` 0.215.0)',
     '`~/.factory/settings.json` (`$FACTORY_HOME_OVERRIDE/.factory`)',
     '`customModels[displayName=taotoken/<model id>].{model,baseUrl,apiKey,provider,'
     'extraHeaders,maxContextLimit}` for every catalogue model, '
     '`sessionDefaultSettings.model`, `sessionDefaultSettings.specModeModel` (when set); '
     'a `settings.local.json` that overrides them is reported'),
    ('',
     '`~/.factory/mcp.json`',
     '`mcpServers.<name>`'),
)

#: the real client this module was proven with: (registry, package spec, note); the
#: ~300 MB binary comes in its optional dependency @factory/cli-linux-x64@0.215.0
INSTALL = ("npm", "droid@0.215.0", "")
#: README "Secrets" and "MCP secrets": how `secrets: reference` writes the key and MCP
#: secrets
KEY_REFERENCE = (
    "`apiKey: \"${NAME}\"` when the key is `${env:NAME}` (droid expands it from its own "
    "environment only: a warning says to export it where droid runs); other references "
    "inline (0600), with a warning.")
MCP_REFERENCE = (
    "`${env:NAME}` → `${NAME}` (droid expands it from its environment: export it); other "
    "references inline (0600), with a warning.")
#: displayName prefix of the customModels entries taosync writes (and so owns), and
#: what droid 0.215.0 sends besides auth (seen by the stand-in gateway)
PREFIX, CLIENT_HEADERS = "taotoken/", {"User-Agent": "factory-cli/0.215.0"}
#: the wire protocol of the entries → droid's ``provider`` and how it is reached
WIRES = {
    "openai-chat": declare.Wire("generic-chat-completion-api", "openai", "/chat/completions",
                                "bearer"),
    "openai-responses": declare.Wire("openai", "openai", "/responses", "bearer"),
    "anthropic-messages": declare.Wire("anthropic", "anthropic", "/v1/messages", "x-api-key"),
}
#: droid's ``${NAME}`` (no default form in apiKey)
_VAR = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
#: apiKey placeholders droid drops an entry for (function ``Vf$``)
_PLACEHOLDERS = ("YOUR_OPENAI_API_KEY", "YOUR_API_KEY")
_DEFAULTS = ("sessionDefaultSettings",)

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for `sessionDefaultSettings.model` (default: "
                "default_route); every catalogue model is a custom model."),
    slot_option("spec_model", "Route or model id for spec mode "
                "(`sessionDefaultSettings.specModeModel`; unset: not written)."),
    declare.protocol_option(TITLE, WIRES, "the custom models' `provider`"),
)


def factory_dir(env: ClientEnv) -> Path:
    return (env.location("FACTORY_HOME_OVERRIDE") or env.home) / ".factory"


def display_name(model: str) -> str:
    return PREFIX + model


def model_id(display: str, n: int = 0) -> str:
    """How droid names custom model ``display`` (function ``d3H``)."""
    return f"custom:{_normal(display)}-{n}"


def _normal(display: str) -> str:
    return re.sub(r"\s+", "-", display.strip())


def _entry(model: str) -> tuple:
    return ("customModels", Match("displayName", display_name(model)))


def _chosen(settings: Any, name: str) -> tuple[Any, str] | None:
    """(value, key path) of a session default in one settings file: under
    ``sessionDefaultSettings``, else the legacy top-level key droid moves there."""
    if not isinstance(settings, dict):
        return None
    defaults = settings.get("sessionDefaultSettings")
    if isinstance(defaults, dict) and defaults.get(name) is not None:
        return defaults[name], f"sessionDefaultSettings.{name}"
    if settings.get(name) is not None:
        return settings[name], name
    return None


def _valid(entry: Any) -> bool:
    """An entry droid loads (function ``fqH``)."""
    return isinstance(entry, dict) and isinstance(entry.get("model"), str) and \
        isinstance(entry.get("provider"), str) and isinstance(entry.get("baseUrl"), str) \
        and entry.get("apiKey") not in _PLACEHOLDERS


def resolve(models: list, wanted: str) -> tuple[int, dict] | None:
    """(index in ``models``, entry) of the custom model ``wanted`` names, as droid finds
    it: by its ``custom:<name>-<n>`` id, else ``custom:<model>`` (the first such)."""
    if not wanted.startswith("custom:"):
        return None
    valid = [(i, e) for i, e in enumerate(models) if _valid(e)]
    counts: dict[str, int] = {}
    for i, e in valid:
        name = _normal(e["displayName"] if isinstance(e.get("displayName"), str)
                       else e["model"])
        n = counts[name] = counts.get(name, -1) + 1
        if f"custom:{name}-{n}" == wanted:
            return i, e
    return next(((i, e) for i, e in valid if "custom:" + e["model"] == wanted), None)


class Droid(declare.Wired):
    """The table (the two session defaults), and what it cannot say: a customModels entry
    per catalogue model with the wire the ``protocol`` option picks; the key as
    ``${NAME}``; and ``settings.local.json`` over ``settings.json`` when read back."""

    # -- render -------------------------------------------------------------------------

    def slot_value(self, fleet: Any, bind: declare.Bind) -> str | None:
        model = super().slot_value(fleet, bind)
        return model_id(display_name(model)) if model is not None else None

    def render_key(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """One entry per catalogue model (and slot model), each holding the key or
        ``${NAME}``."""
        settings = values["settings"]
        ref = self.key_reference(fleet, env, self.file("settings", env))
        api_key = f"${{{ref.arg}}}" if ref is not None else key
        wire = self.wire(fleet)
        url = declare.gateway_url(fleet, wire.root)
        slot_models = [fleet.model_for(chosen) for _, chosen in self.slots(fleet)]
        for model in dict.fromkeys([*fleet.models, *slot_models]):
            e = _entry(model)
            settings.update({e + ("model",): model, e + ("baseUrl",): url,
                             e + ("apiKey",): api_key, e + ("provider",): wire.word})
            if fleet.gateway.headers:
                settings[e + ("extraHeaders",)] = fleet.gateway_headers()
            window = fleet.context_window(model)
            if window:
                settings[e + ("maxContextLimit",)] = window

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list:
        """As declared; then the variables droid must find in its environment, named once."""
        patches = super().render(fleet, key, env)
        if self.reference(fleet):
            from taosync.fleet.logic import McpSecret
            from taosync.fleet.secrets import parse_reference

            ref = parse_reference(fleet.gateway.key)
            names = [ref.arg] if self.follows(ref) else []
            if self.cfg(fleet).mcp and fleet.mcp_servers:
                names += [v.ref.arg for server in fleet.mcp_servers_expanded(key).values()
                          for v in (server.env if server.kind == "stdio"
                                    else server.headers).values()
                          if isinstance(v, McpSecret) and v.ref.kind == "env"]
            if names:
                env.warnings.append(
                    f"{self.id}: {self.title} expands ${{NAME}} from its own environment only (no "
                    f"env file; unset, it sends the literal text): export "
                    f"{', '.join(dict.fromkeys(names))} where droid runs")
        return patches

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk:
        """What the files make droid send, with the wire of the entry the model names;
        a settings.local.json key that beats an owned one is drift."""
        obs = self.observe(env)
        out = declare.Declared.on_disk(self.speaking(obs.settings.get("protocol", "openai-chat")),
                                       fleet, key, env)
        files = [self.file(name, env) for name in ("local", "settings")]
        for note in obs.notes:
            if note.startswith(str(files[0])):  # as verify names files: ~/.factory/…
                for path in files:
                    note = note.replace(str(path), shown(path, env))
                out.drift.append(note)
        return out

    def read_key(self, obs: Observation, env: ClientEnv,
                 where: str) -> tuple[Seen | None, Any, str | None]:
        if obs.key_envs:  # apiKey "${NAME}": droid's environment, or the literal text
            var = obs.key_envs[0]
            secret, problem = disk_key("env", var.value, f"{where} {var.key} (${{{var.value}}}"
                                       f", from droid's environment)", env)
            return var, secret, problem and problem + (
                f" (droid would send the literal ${{{var.value}}}: export {var.value})")
        return super().read_key(obs, env, where)

    def unprobed(self, obs: Observation, env: ClientEnv, where: str) -> str | None:
        if not obs.slots.get("model"):
            return (f"{where} sessionDefaultSettings.model names no customModels entry "
                    f"(custom:<displayName>-<n>)")
        return None if obs.urls else f"{where}: the model's customModels entry has no baseUrl"

    # -- reading back -------------------------------------------------------------------

    def read_binding(self, bind: declare.Bind, seen: Seen, obs: Observation,
                     prefix: str | None = None) -> None:
        """Nothing by the table's paths: the entries read are those the defaults name."""

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        """The session defaults and the entries they name, as droid merges the user's
        settings.local.json over settings.json."""
        settings, local = docs["settings"], docs["local"]
        path, local_path = self.file("settings", env), self.file("local", env)
        models = settings.get("customModels") if isinstance(settings, dict) else None
        models_path = path
        if isinstance(local, dict) and isinstance(local.get("customModels"), list):
            models, models_path = local["customModels"], local_path
            obs.notes.append(f"{local_path}: customModels replaces the list in {path}, "
                             f"taosync's entries included")
        models = models if isinstance(models, list) else []
        for name, slot in (("model", "model"), ("specModeModel", "spec_model")):
            found, found_path = _chosen(local, name), local_path
            if found is not None:
                obs.notes.append(f"{local_path}: {found[1]} beats "
                                 f"sessionDefaultSettings.{name} in {path}")
            else:
                found, found_path = _chosen(settings, name), path
            if found is None or not isinstance(found[0], str):
                continue
            hit = resolve(models, found[0].strip())
            if hit is None:
                if slot == "model":
                    obs.provider = Seen(f"model {found[0]!r} (not a customModels entry: a "
                                        f"Factory model)", found_path, found[1])
                continue
            index, entry = hit
            named = entry.get("displayName")
            at = keypath_str(("customModels", Match("displayName", named))) \
                if isinstance(named, str) else f"customModels[{index}]"
            obs.slots[slot] = [Seen(entry["model"], models_path, f"{at}.model")]
            if slot == "model":
                self.read_entry(entry, models_path, at, obs)

    def read_entry(self, entry: dict, path: Path, at: str, obs: Observation) -> None:
        """The URL, key, headers and wire of the entry the model names."""
        protocol = self.protocol_of(entry.get("provider"))
        if protocol is None:
            obs.provider = Seen(f"provider {entry.get('provider')!r}", path, f"{at}.provider")
            return
        obs.protocol = WIRES[protocol].root
        if protocol != "openai-chat":
            obs.settings["protocol"] = protocol
        obs.urls.append(Seen(entry["baseUrl"].strip(), path, f"{at}.baseUrl"))
        api_key = entry.get("apiKey")
        var = _VAR.match(api_key.strip()) if isinstance(api_key, str) else None
        if var is not None:
            obs.key_envs.append(Seen(var.group(1), path, f"{at}.apiKey"))
            obs.settings["secrets"] = "reference"
        elif isinstance(api_key, str) and api_key.strip():
            super().read_binding(declare.key("settings"), Seen(api_key, path, f"{at}.apiKey"),
                                 obs)
        headers = entry.get("extraHeaders")
        if isinstance(headers, dict) and headers:
            obs.headers.append(Seen({str(k): str(v) for k, v in headers.items()}, path,
                                    f"{at}.extraHeaders"))


CLIENT = Droid(
    ID, TITLE, primary="settings",
    files={"settings": declare.File(lambda env: factory_dir(env) / "settings.json", "json",
                                    json_object=True),
           "local": declare.File(lambda env: factory_dir(env) / "settings.local.json", "json"),
           "mcp": declare.File(lambda env: factory_dir(env) / "mcp.json", "json")},
    bindings=(declare.slot("settings", *_DEFAULTS, "model"),
              declare.slot("settings", *_DEFAULTS, "specModeModel", option="spec_model",
                           optional=True)),
    sends=CLIENT_HEADERS,
    key_rule=declare.KeyRule(("env",), "droid expands ${NAME} in apiKey from its process "
                             "environment only"),
    mcp=declare.McpShape(("mcpServers",), stdio={"type": "stdio"}, http={"type": "http"},
                         sse={"type": "sse"}, cwd=False, disabled={"disabled": True},
                         by_reference=lambda v: f"{v.prefix}${{{v.ref.arg}}}{v.suffix}"
                         if v.ref.kind == "env" else None,
                         note="droid expands only ${NAME}, so only ${env:NAME} values are "
                              "passed by reference"),
    mcp_file="mcp",
    places={"slot": "sessionDefaultSettings.model"},
    wires=WIRES,
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
