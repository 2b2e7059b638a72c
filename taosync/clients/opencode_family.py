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

One declaration serves both: :class:`Family`, instantiated once per client (``opencode.py``,
``kilo.py``) with its :class:`Flavor` — what differs between them — as a field.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, Option, Patch, Seen, disk_key,
                                  slot_option)
from taosync.fleet.secrets import Secret, parse_reference
from taosync.formats.base import KeyPath

FORMAT = "jsonc"
NPM = "@ai-sdk/openai-compatible"
PROVIDER_NAME = "taosync gateway"
#: provider ids built into opencode/Kilo: a custom entry there would be merged with it
_BUILT_IN = ("openai", "anthropic", "opencode", "kilo")


#: README "Secrets" (both flavours): how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`options.apiKey: \"{env:NAME}\"` for `${env:NAME}`, `\"{file:/abs/path}\"` for "
    "`${file:PATH}` (the client substitutes them); `${cmd:}`/`${shell:}` fall back to "
    "inline (0600) with a warning.")
#: README "MCP secrets" (both flavours): how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "`${env:NAME}` → `{env:NAME}`, `${file:PATH}` → `{file:/abs/path}` anywhere in the "
    "value (the client substitutes them in its whole file), and `${gateway.key}` → the "
    "key's own reference; `${cmd:}`/`${shell:}` inline (0600), with a warning.")


@dataclass(frozen=True)
class Flavor:
    """What one client of the family has of its own: id, product, version proven, where."""

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
    summary: str = ""  # one line for the schema and help
    binary: str = ""  # its command (taosync doctor shows its --version)
    #: the package README's install line names: (registry, package spec, note)
    install: tuple[str, str, str] = ("", "", "")


#: the fleet.yaml options both clients take (beyond enabled, secrets, mcp)
OPTIONS: tuple[Option, ...] = (
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


def _token_for_key(value: Any, key: Secret, token: str) -> Any:
    """``value`` (an MCP entry's field) with the gateway key's text as ``token``."""
    if isinstance(value, str) and key.found_in(value):
        return value.replace(key.reveal(), token)
    if isinstance(value, list):
        return [_token_for_key(v, key, token) for v in value]
    if isinstance(value, dict):
        return {k: _token_for_key(v, key, token) for k, v in value.items()}
    return value


#: the provider entry taosync owns, named by ``provider_id`` (read back: ``model``'s prefix)
_PROVIDER = ("provider", declare.Opt("provider_id", read=("model",), sep="/"))
#: the provider's ``models`` map: the whole catalogue
_MODELS = (*_PROVIDER, "models", declare.Each())
#: how ``options.apiKey`` (and an MCP secret) spells a reference the client substitutes
_FORMS = {"env": "{{env:{}}}", "file": "{{file:{}}}"}

#: the ``mcp`` block: ``local`` (command and args one list, ``environment``) or
#: ``remote`` (which tries streamable HTTP, then SSE)
MCP_SHAPE = declare.McpShape(
    ("mcp",), whole=False, stdio={"type": "local"}, http={"type": "remote"},
    sse={"type": "remote"}, command_list=True, env_field="environment",
    disabled={"enabled": False})


@dataclass(frozen=True)
class Family(declare.Declared):
    """opencode or Kilo CLI: the table both share, with the flavour's differences in
    :attr:`flavor`. What the table cannot say: the provider entry and the model prefix
    are named by the fleet's ``provider_id``, so :meth:`extra_observe` follows ``model``
    to it; the key (and ``${gateway.key}`` in an MCP server) is written as the
    ``{env:}``/``{file:}`` text the client substitutes."""

    flavor: Flavor = Flavor("", "", "", "", ("",), "")

    @classmethod
    def of(cls, f: Flavor) -> "Family":
        return cls(
            f.id, f.title, files={"config": declare.File(partial(config_path, f), FORMAT)},
            primary="config", options=OPTIONS,
            bindings=(declare.slot("config", "model", prefix="{provider_id}/"),
                      declare.slot("config", "small_model", option="small_model",
                                   default="model", prefix="{provider_id}/"),
                      declare.fixed("config", *_PROVIDER, "npm", value=NPM),
                      declare.url("config", *_PROVIDER, "options", "baseURL"),
                      declare.key("config", *_PROVIDER, "options", "apiKey"),
                      declare.headers("config", *_PROVIDER, "options", "headers"),
                      declare.model("config", *_MODELS, "id"),
                      declare.window("config", *_MODELS, "limit", "context"),
                      # required beside context; 0: the client's default
                      declare.window("config", *_MODELS, "limit", "output", value=0)),
            key_rule=declare.KeyRule(("env", "file"), f"{f.title} reads {{env:NAME}} and "
                                     f"{{file:PATH}}", forms=_FORMS),
            mcp=replace(MCP_SHAPE, note=f"{f.title} substitutes only {{env:NAME}} and "
                        f"{{file:PATH}}, so ${{cmd:…}} and ${{shell:…}} values are written"),
            mcp_file="config", flavor=f)

    def exports(self) -> dict[str, Any]:
        """What a flavour's module holds (plugin.py): FLAVOR, its constants (ID, TITLE,
        SUMMARY, BINARY, LOCATION_VARS, ISOLATION, OPTIONS, TARGETS, OWNED_FILES,
        KEY_REFERENCE, MCP_REFERENCE, INSTALL) and functions (render, probes, on_disk, observe,
        locations), all from the flavour: ``globals().update(CLIENT.exports())``."""
        f = self.flavor
        return {"FLAVOR": f, "ID": f.id, "TITLE": f.title, "SUMMARY": f.summary,
                "BINARY": f.binary, "LOCATION_VARS": ("XDG_CONFIG_HOME",),
                "ISOLATION": {"XDG_CONFIG_HOME": ".config"},
                "OPTIONS": OPTIONS, "TARGETS": targets(f), "OWNED_FILES": owned_files(f),
                "KEY_REFERENCE": KEY_REFERENCE, "MCP_REFERENCE": MCP_REFERENCE,
                "INSTALL": f.install, "render": self.render, "probes": self.probes,
                "on_disk": self.on_disk, "observe": self.observe, "locations": self.locations}

    def provider(self, fleet: Any) -> KeyPath:
        return ("provider", self.cfg(fleet).provider_id)

    # -- render -------------------------------------------------------------------------

    def mcp_reference(self, value: Any, env: ClientEnv) -> str | None:
        spelled = self.key_rule.spell(value.ref, env)
        return None if spelled is None else f"{value.prefix}{spelled}{value.suffix}"

    def mcp_values(self, fleet: Any, key: Any, env: ClientEnv, path: Path) -> tuple[dict, bool]:
        """The entries; ``${gateway.key}`` in one becomes the key's reference too."""
        values, holds_key = super().mcp_values(fleet, key, env, path)
        ref = parse_reference(fleet.gateway.key)
        token = self.key_rule.spell(ref, env) if self.reference(fleet) else None
        if holds_key and token is not None:
            values = {at: _token_for_key(v, key, token) for at, v in values.items()}
            holds_key = key.found_in(list(values.values()))
        return values, holds_key

    def extra_render(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """A config merged over the file is worth a warning."""
        for var in self.flavor.overrides:
            if env.getenv(var):
                env.warnings.append(
                    f"{self.id}: {var} is set in this environment; {self.title} merges that "
                    f"config over {env.shown(self.file('config', env))}, so it may override what "
                    f"taosync writes")

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list[Patch]:
        """As declared; the file is marked secret for what its MCP entries hold (an
        inline ``options.apiKey`` is a Secret value, which makes it 0600 by itself)."""
        (patch,) = super().render(fleet, key, env)
        mcp = [v for at, v in patch.values.items() if at[0] == "mcp"]
        return [replace(patch, secret=key.found_in(mcp) or any(
            isinstance(v, Secret) for entry in mcp if isinstance(entry, dict)
            for v in entry.values()))]

    def patch_fields(self, name: str, fleet: Any, env: ClientEnv) -> dict:
        return {"skeleton": {("$schema",): self.flavor.schema_url,
                             self.provider(fleet) + ("name",): PROVIDER_NAME}}

    # -- reading back -------------------------------------------------------------------

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        """What the table reads through ``model``'s provider needs said: a model with no
        provider prefix, a provider with no base URL, the other models it lists."""
        config, path = docs["config"], self.file("config", env)
        model = config.get("model") if isinstance(config, dict) else None
        if not isinstance(model, str):
            return
        if "/" not in model:
            obs.notes.append(f"{path}: model {model!r} has no provider prefix, which "
                             f"{self.title} refuses (\"Model not found\"); taosync writes "
                             f"<provider>/<id>")
            return
        pid, _, model_id = model.partition("/")
        if not obs.urls:
            obs.provider = Seen(f"provider {pid!r} (no options.baseURL: its built-in or "
                                f"models.dev definition)", path, "model")
            return
        small = config.get("small_model")
        models = declare._get(config, ("provider", pid, "models"))
        others = [m for m in (models if isinstance(models, dict) else {})
                  if m not in (model_id, small)]
        if others:
            obs.notes.append(f"{path}: provider {pid!r} also lists {', '.join(others)}; "
                             f"apply lists the whole fleet catalogue there")

    # -- verify -------------------------------------------------------------------------

    def no_url(self, where: str, env: ClientEnv) -> str:
        return (f"{where} names no model of a provider with options.baseURL "
                f"(model: \"<provider>/<id>\")")

    def read_key(self, obs: Observation, env: ClientEnv,
                 where: str) -> tuple[Seen | None, Any, str | None]:
        """The key as the client resolves ``options.apiKey``: ``{env:NAME}``,
        ``{file:PATH}`` (held as ``cat PATH``) or the key itself."""
        seen = next(iter(obs.key_envs or ([obs.key_helper] if obs.key_helper else [])
                         or obs.keys), None)
        if seen is None:
            return None, None, f"{where} {obs.urls[0].key[:-len('baseURL')]}apiKey is not set"
        kind, arg = ("env", seen.value) if obs.key_envs else \
            ("file", shlex.split(seen.value)[-1]) if obs.key_helper else \
            ("literal", seen.value.reveal())
        return (seen, *disk_key(kind, arg, f"{where} {seen.key}", env))

