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
from taosync.clients.base import ClientEnv, Observation, Seen, read_plain, slot_option
from taosync.fleet.secrets import Secret
from taosync.formats.base import Match, keypath_str

ID = "gptme"
BINARY = "gptme"  # taosync doctor shows its --version
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


#: the ``[[providers]]`` entry's key path
_PROVIDER = ("providers", Match("name", PROVIDER))


#: ``[[mcp.servers]]`` entries, field by field; ``[mcp]`` switched on with them
MCP_SHAPE = declare.McpShape(("mcp", "servers"), listed=True, whole=False, cwd=False,
                             switch={("mcp", "enabled"): True, ("mcp", "auto_start"): True},
                             note="gptme does not expand variables in MCP env or headers")


class Gptme(declare.Declared):
    """The table, and what it cannot say: import follows MODEL to its provider entry and
    reads ``[env]`` of config.local.toml over config.toml."""

    def observe(self, env: ClientEnv) -> Observation:
        return _observe(env)

    def unprobed(self, obs: Observation, env: ClientEnv, where: str) -> str | None:
        if not obs.slots.get("model"):
            return f"{where}: MODEL names no <provider>/<id> of a [[providers]] entry"
        if not obs.urls:
            return f"{where}: the model's provider has no base_url"
        return None


MCP_SHAPE = declare.McpShape(
    ("mcp", "servers"), listed=True, whole=False, cwd=False,
    switch={("mcp", "enabled"): True, ("mcp", "auto_start"): True},
    note="gptme does not expand variables in MCP env or headers")
CLIENT = Gptme(
    ID, "gptme", primary="config",
    files={"config": declare.File(lambda env: gptme_dir(env) / "config.toml", "toml"),
           "local": declare.File(lambda env: gptme_dir(env) / "config.local.toml", "toml")},
    bindings=(declare.slot("config", "env", "MODEL", prefix=PROVIDER + "/"),
              declare.url("config", *_PROVIDER, "base_url"),
              declare.key_var("config", *_PROVIDER, "api_key_env", default=DEFAULT_KEY_VAR,
                              store="local", under=("env",))),
    sends=CLIENT_HEADERS, sends_headers=False,
    key_rule=declare.KeyRule(("env",), "gptme reads the key only from an environment "
                             "variable or [env]"),
    mcp=MCP_SHAPE, mcp_file="config",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)


# -- reading back (taosync import) ---------------------------------------------------


def _entries(value) -> list[dict]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _section(config: dict | None, name: str) -> dict:
    value = (config or {}).get(name)
    return value if isinstance(value, dict) else {}


def _observe(env: ClientEnv) -> Observation:
    """What config.toml (and config.local.toml over it) say: MODEL and its provider, the
    key variable and its value in ``[env]``, and the MCP servers."""
    home = gptme_dir(env)
    config_path, local_path = home / "config.toml", home / "config.local.toml"
    obs = Observation(ID, protocol="openai")
    config = read_plain(config_path, "toml", obs)
    local = read_plain(local_path, "toml", obs)
    if not isinstance(config, dict):
        return obs

    def layered(section: str, name: str) -> tuple[object, Path]:
        """A value of ``[section]``, config.local.toml first (it overrides)."""
        if name in _section(local, section):
            return _section(local, section)[name], local_path
        return _section(config, section).get(name), config_path

    default, default_file = layered("models", "default")
    model, model_file = layered("env", "MODEL")
    model_key = "env.MODEL"
    if isinstance(default, str) and default.strip():
        model, model_file, model_key = default, default_file, "models.default"
        obs.notes.append(f"{default_file}: [models] default = {default!r} overrides MODEL; "
                         f"taosync writes [env] MODEL — remove [models] default after apply")
    if not isinstance(model, str) or "/" not in model:
        if model is not None:
            obs.provider = Seen(f"model {model!r} (gptme needs <provider>/<id>)", model_file,
                                model_key)
        return obs
    provider_name, _, model_id = model.strip().partition("/")
    providers = {e.get("name"): e for e in _entries(config.get("providers"))}
    provider = providers.get(provider_name)
    p = ("providers", Match("name", provider_name))
    base = provider.get("base_url") if provider else None
    if provider is None or not (isinstance(base, str) and base.strip()):
        obs.provider = Seen(f"gptme's built-in provider {provider_name!r}", model_file,
                            model_key)
        return obs
    obs.urls.append(Seen(base.strip(), config_path, keypath_str(p + ("base_url",))))
    obs.slots["model"] = [Seen(model_id, model_file, model_key)]
    inline = provider.get("api_key")
    var = provider.get("api_key_env")
    if isinstance(inline, str) and inline.strip():
        k = keypath_str(p + ("api_key",))
        obs.keys.append(Seen(Secret(inline.strip(), f"{config_path} {k}"), config_path, k))
        obs.notes.append(f"{config_path}: {k} holds the key in config.toml; taosync keeps it "
                         f"in config.local.toml (or the environment) instead — remove it after "
                         f"apply")
    elif isinstance(var, str) and var.strip():
        var = var.strip()
        obs.key_envs.append(Seen(var, config_path, keypath_str(p + ("api_key_env",))))
        CLIENT.read_stored_key(var, {"local": local, "config": config}, env, obs,
                               ("local", "config"))

    declare.read_mcp(MCP_SHAPE, config, config_path, obs)
    return obs
