"""gptme (``gptme`` 0.35.1, PyPI): config.toml and config.local.toml.

Facts (clients.md §13, and gptme/config/user.py, models.py, llm/llm_openai.py at 0.35.1):
gptme reads ``config.toml`` in its config directory (platformdirs' ``user_config_dir``:
``$XDG_CONFIG_HOME/gptme``, default ``~/.config/gptme``), then ``config.local.toml`` next to
it, which overrides it (``[env]`` merged key by key, ``[[providers]]`` by name). A model
is named ``<provider>/<model id>`` (``[env] MODEL``); a bare id makes no request. A
``[[providers]]`` entry (``base_url`` = root + ``/v1``; gptme POSTs
``{base_url}/chat/completions``, Bearer) accepts every ``<provider>/<id>`` and lists its
models from ``{base_url}/models``, so the one provider entry registers the whole catalogue.

The key: ``api_key_env = NAME`` makes gptme read ``$NAME`` from its environment, then from
``[env]`` of its config files. So config.toml never holds the key (it can live in
dotfiles): inline mode writes it to ``config.local.toml`` ``[env]`` (0600, where gptme's own
``add provider --local`` puts secrets); reference mode with ``gateway.key: ${env:NAME}``
writes only the name. MCP: ``[mcp] enabled, auto_start`` and ``[[mcp.servers]]`` (name,
command, args, env; or url, headers). gptme has no setting for extra request headers.
Note: gptme strips top-level keys it does not know from both files when it loads them.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import ClientEnv, Observation, Seen, slot_option

ID = "gptme"
BINARY = "gptme"  # taosync doctor shows its --version
#: a profile's instance (docs/profiles.md): no variable of its own moves its files, so a
#: separate HOME (the profile's root)
ISOLATION = {"HOME": "."}
SUMMARY = "gptme ([[providers]] + [env] MODEL = <provider>/<id>): model."
#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for `MODEL` (default: default_route); any "
                "catalogue model works as `gptme -m taotoken/<id>`."),
)
TARGETS = [
    "~/.config/gptme/config.toml: [env] MODEL, [[providers]] name=taotoken, [mcp], "
    "[[mcp.servers]] name=<name>",
    "~/.config/gptme/config.local.toml: [env] <api_key_env> (inline mode)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('gptme (0.35.1)',
     '`~/.config/gptme/config.toml` (`$XDG_CONFIG_HOME`)',
     '`env.MODEL` (`taotoken/<model id>`), `providers[name=taotoken].{base_url,api_key_env}`, '
     '`mcp.enabled`, `mcp.auto_start`, `mcp.servers[name=<name>].*`'),
    ('',
     '`~/.config/gptme/config.local.toml`',
     '`env.<api_key_env>` (inline mode; mode 0600)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`api_key_env = NAME` when the key is `${env:NAME}`; inline, and for other references "
    "(with a warning), the value goes to `[env]` of `~/.config/gptme/config.local.toml` "
    "(0600), never into `config.toml`.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "inline in `config.toml` (0600), with a warning: no variable in MCP `env` or "
    "`headers` is expanded.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("pypi", "gptme==0.35.1", "")

#: the ``[[providers]]`` entry taosync owns, and so the prefix of every model name
PROVIDER = "taotoken"
#: what gptme 0.35.1 sends (its OpenAI SDK's headers, seen by the stand-in gateway); it
#: has no setting for more
CLIENT_HEADERS = {"User-Agent": "OpenAI/Python 2.54.0", "X-Stainless-Lang": "python"}
#: the variable the key is stored under when the fleet's key is no ${env:NAME}
DEFAULT_KEY_VAR = "TAOTOKEN_API_KEY"


def gptme_dir(env: ClientEnv) -> Path:
    """platformdirs' ``user_config_dir("gptme")``: ``$XDG_CONFIG_HOME/gptme`` on Linux,
    ``~/Library/Application Support/gptme`` on macOS, ``%LOCALAPPDATA%\\gptme\\gptme`` (not
    roaming; the app name doubles as its author) on Windows."""
    if env.platform == "win32":
        local = env.location("LOCALAPPDATA") or env.home / "AppData" / "Local"
        return local / "gptme" / "gptme"
    return env.app_data() / "gptme"


#: the ``[[providers]]`` entry the model names (``MODEL = "<provider>/<id>"``): taosync's
#: when it writes, the one MODEL names when it reads back
_PROVIDER = ("providers", declare.named("name", declare.Opt("provider", read=("env", "MODEL"),
                                                          sep="/", value=PROVIDER)))


def _section(config: dict | None, name: str) -> dict:
    value = (config or {}).get(name)
    return value if isinstance(value, dict) else {}


class Gptme(declare.Declared):
    """The table, and what it cannot say: import reads MODEL as gptme does —
    config.local.toml's ``[env]`` and ``[models]`` over config.toml's, ``[models] default``
    over MODEL — and the key variable's value from ``[env]`` of either file."""

    def read_opts(self, docs: dict) -> dict[str, str]:
        """The table reads config.toml's MODEL: it is first set to the model gptme uses."""
        model = self.used_model(docs, Path())[0]
        if isinstance(docs["config"], dict) and model is not None:
            docs["config"]["env"] = {**_section(docs["config"], "env"), "MODEL": model}
        return super().read_opts(docs)

    @staticmethod
    def used_model(docs: dict, home: Path) -> tuple[object, Path, str]:
        """(the model gptme uses, the file and key that set it)."""
        def layered(section: str, name: str) -> tuple[object, Path]:
            for doc, file in ((docs["local"], "config.local.toml"), (docs["config"], "config.toml")):
                if name in _section(doc, section):
                    return _section(doc, section)[name], home / file
            return None, home / "config.toml"

        default, file = layered("models", "default")
        if isinstance(default, str) and default.strip():
            return default, file, "models.default"
        return (*layered("env", "MODEL"), "env.MODEL")

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        model, file, key = self.used_model(docs, gptme_dir(env))
        if obs.urls:  # the provider MODEL names is a gateway: the model as gptme reads it
            obs.slots["model"] = [Seen(obs.slots["model"][0].value, file, key)]
            if obs.keys:  # an api_key in config.toml is what gptme sends
                obs.key_envs.clear()
            elif obs.key_envs:
                self.read_stored_key(obs.key_envs[0].value, docs, env, obs, ("local", "config"))
        else:  # gptme's own provider: nothing else is imported
            for found in (obs.slots, obs.keys, obs.key_envs, obs.notes, obs.mcp_servers):
                found.clear()
            if isinstance(docs["config"], dict) and model is not None:
                obs.provider = Seen(f"gptme's built-in provider {str(model).partition('/')[0]!r}"
                                    if "/" in str(model) else
                                    f"model {model!r} (gptme needs <provider>/<id>)", file, key)
        if key == "models.default":
            obs.notes.append(f"{file}: [models] default = {model!r} overrides MODEL; "
                             f"taosync writes [env] MODEL — remove [models] default after apply")


CLIENT = Gptme(
    ID, "gptme", primary="config",
    files={"config": declare.File(lambda env: gptme_dir(env) / "config.toml", "toml"),
           "local": declare.File(lambda env: gptme_dir(env) / "config.local.toml", "toml")},
    bindings=(declare.slot("config", "env", "MODEL", prefix="{provider}/"),
              declare.url("config", *_PROVIDER, "base_url"),
              declare.key_var("config", *_PROVIDER, "api_key_env", default=DEFAULT_KEY_VAR,
                              store="local", under=("env",)),
              declare.key("config", *_PROVIDER, "api_key", note="holds the key in "
                          "config.toml; taosync keeps it in config.local.toml (or the "
                          "environment) instead — remove it after apply")),
    needs=(("slots", "MODEL names no <provider>/<id> of a [[providers]] entry"),
           ("urls", "the model's provider has no base_url")),
    sends=CLIENT_HEADERS, sends_headers=False,
    key_rule=declare.KeyRule(("env",), "gptme reads the key only from an environment "
                             "variable or [env]"),
    mcp=declare.McpShape(("mcp", "servers"), listed=True, whole=False, cwd=False,
                         switch={("mcp", "enabled"): True, ("mcp", "auto_start"): True},
                         note="gptme does not expand variables in MCP env or headers"),
    mcp_file="config",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
