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

from typing import Any

from taosync.clients import declare
from taosync.clients.base import ClientEnv, Observation, Seen, slot_option
from taosync.formats.base import Match, keypath_str

ID = "mistral-vibe"
BINARY = "vibe"  # taosync doctor shows its --version
SUMMARY = "Mistral Vibe (config.toml [[models]] + .env key): model."
LOCATION_VARS = ("VIBE_HOME",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"VIBE_HOME": ".vibe"}
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

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`api_key_env_var = NAME` when the key is `${env:NAME}` (Vibe reads it from its "
    "environment); inline, and for other references (with a warning), the value goes to "
    "`~/.vibe/.env` (0600), never into `config.toml`.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "inline in `config.toml` (0600), with a warning: no variable in MCP `env` or "
    "`headers` is expanded.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("pypi", "mistral-vibe==3.0.3", "Python ≥ 3.12")

#: the ``[[providers]]`` entry taosync owns
PROVIDER = "taotoken"
#: what Vibe 3.0.3 sends besides the gateway's headers (seen by the stand-in gateway; it
#: also sends ``x-affinity: <session id>``, which differs per run)
CLIENT_HEADERS = {"User-Agent": "python-httpx/0.28.1"}
#: the variable the key is stored under in ``.env`` when the fleet's key is no ${env:NAME}
DEFAULT_KEY_VAR = "TAOTOKEN_API_KEY"
#: a ``[[models]]`` entry per catalogue model (and the active one), its alias the model
#: id; read back: the one ``active_model`` names, and the ``[[providers]]`` entry that one
#: names (taosync's own when it writes)
_MODEL = ("models", declare.named("alias", declare.Each(
    read=declare.Opt("alias", read=("active_model",)), chosen=True)))
_PROVIDER = ("providers", declare.named("name", declare.Opt("provider", read=(*_MODEL, "provider"),
                                                            value=PROVIDER)))


vibe_home = declare.home_dir("VIBE_HOME", ".vibe")


def _entries(config: Any, table: str) -> list[dict]:
    value = config.get(table) if isinstance(config, dict) else None
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


class Vibe(declare.Declared):
    """The table, and what it cannot say: import and verify follow ``active_model`` →
    its alias → its provider, as Vibe does, and name a provider that is not the gateway."""

    def read_opts(self, docs: dict) -> dict[str, str]:
        """As Vibe finds a ``[[models]]`` entry: by its alias, else its name."""
        for entry in _entries(docs["config"], "models"):
            entry["alias"] = entry.get("alias") or entry.get("name")
        return super().read_opts(docs)

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        config, path = docs["config"], self.file("config", env)
        active = config.get("active_model") if isinstance(config, dict) else None
        if not isinstance(active, str):
            return
        m = ("models", Match("alias", active))
        name = (declare._get(config, m) or {}).get("provider")
        p = ("providers", Match("name", str(name)))
        style = (declare._get(config, p) or {}).get("api_style", "openai")
        if declare._get(config, m) is None:
            obs.provider = Seen(f"no [[models]] entry with alias {active!r} (Vibe then falls "
                                f"back to Mistral's own API)", path, "active_model")
        elif not obs.urls:
            obs.provider = Seen(f"provider {name!r}", path, keypath_str(m + ("provider",)))
        elif style != "openai":
            obs.provider = Seen(f"provider {name!r} with api_style {style!r}", path,
                                keypath_str(p + ("api_style",)))
        if obs.provider is not None:  # not the gateway: none of its provider is imported
            for found in (obs.urls, obs.key_envs, obs.headers):
                found.clear()
        elif obs.key_envs:
            self.read_stored_key(obs.key_envs[0].value, docs, env, obs)


CLIENT = Vibe(
    ID, "Mistral Vibe", primary="config",
    files={"config": declare.File(lambda env: vibe_home(env) / "config.toml", "toml"),
           "env": declare.File(lambda env: vibe_home(env) / ".env", "dotenv")},
    bindings=(declare.computed("config", "active_model",
                               value=lambda fleet, cfg: fleet.model_for(cfg.model)),
              declare.slot("config", *_MODEL, "name", unwritten=True),
              declare.model("config", *_MODEL, "name"),
              declare.fixed("config", *_MODEL, "provider", value=PROVIDER),
              declare.window("config", *_MODEL, "max_context_length"),
              declare.url("config", *_PROVIDER, "api_base"),
              declare.fixed("config", *_PROVIDER, "api_style", value="openai"),
              declare.key_var("config", *_PROVIDER, "api_key_env_var", default=DEFAULT_KEY_VAR,
                              store="env"),
              declare.headers("config", *_PROVIDER, "extra_headers")),
    needs=(("slots", "active_model names no [[models]] alias"),
           ("urls", "the active model's provider has no api_base"),
           ("key_envs", "the active model's provider has no api_key_env_var")),
    sends=CLIENT_HEADERS,
    key_rule=declare.KeyRule(("env",), "Vibe reads the key only from an environment "
                             "variable"),
    mcp=declare.McpShape(("mcp_servers",), listed=True, whole=False,
                         stdio={"transport": "stdio"}, http={"transport": "streamable-http"},
                         sse=None, note="Vibe does not expand variables in MCP env or headers"),
    mcp_file="config",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
