"""Qwen Code (``@qwen-code/qwen-code`` 0.24.4): ``~/.qwen/settings.json``.

Facts (clients.md §7): the user settings are ``$QWEN_HOME/settings.json`` (``QWEN_HOME``
replaces ``~/.qwen``), JSON with comments. Auth type ``openai`` speaks Chat Completions:
``{baseUrl}/chat/completions`` with the root + ``/v1`` URL and a Bearer key. Inline, the
key, URL and type live in ``security.auth`` and the model in ``model.name``; with
``secrets: reference`` and an ``${env:NAME}`` key, a ``modelProviders.openai[]`` entry (id =
the model) names the variable in ``envKey``, so the key stays off disk. Extra headers go in
``generationConfig.customHeaders`` of the provider entry, or of ``model`` without one (no
merging between the two; bundled docs ``model-providers.md``).

Qwen writes ``$version`` into settings.json itself: not owned, never drift. MCP servers
take Gemini CLI's shape (``mcpServers``; see :mod:`taosync.clients.gemini_cli`).
"""

from __future__ import annotations

import re

from taosync.clients import declare
from taosync.clients.base import ClientEnv, Observation, Seen, slot_option
from taosync.clients.gemini_cli import MCP_SHAPE
from taosync.formats.base import Match, keypath_str

ID = "qwen-code"
BINARY = "qwen"  # taosync doctor shows its --version
SUMMARY = "Qwen Code (OpenAI Chat Completions): model."
LOCATION_VARS = ("QWEN_HOME",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"QWEN_HOME": ".qwen"}
OPTIONS = (
    slot_option("model", "Route or model id for model.name (default: default_route)."),
)
#: settings.json holds JSON with comments: Qwen Code strips them before parsing and keeps
#: them when it rewrites the file (QwenLM/qwen-code packages/cli/src/config/settings.ts);
#: a user's comments are legitimate there and are kept
SETTINGS_FORMAT = "jsonc"
TARGETS = [
    "~/.qwen/settings.json ($QWEN_HOME): security.auth, model.name, "
    "modelProviders.openai[id=<model>] (reference mode), mcpServers.<name>",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Qwen Code (0.24.4)',
     '`~/.qwen/settings.json` (`$QWEN_HOME`)',
     '`security.auth.selectedType` (`openai`), `model.name`, and `security.auth.{baseUrl,'
     'apiKey}` + `model.generationConfig.customHeaders` (inline) or '
     '`modelProviders.openai[id=<model>].{envKey,baseUrl,generationConfig.customHeaders}` '
     '(reference); `mcpServers.<name>`; never `$version` (Qwen\'s own)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`modelProviders.openai[id=<model>].envKey = NAME` when the key is `${env:NAME}`; "
    "other references inline in `security.auth.apiKey` (0600), with a warning.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "`${env:NAME}` → `${NAME}` (expanded in `settings.json` from its environment); other "
    "references inline (0600), with a warning. Qwen Code 0.24.4 also takes `NAME` from a "
    "project `.env`, `~/.qwen/.env` and `~/.env`; set nowhere it looks, the server gets "
    "the text `${NAME}` itself (tested with the real `qwen`), so have `NAME` wherever "
    "Qwen starts (an IDE or launcher too), or use `secrets: inline`.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "@qwen-code/qwen-code@0.24.4", "")

AUTH_TYPE = "openai"


qwen_home = declare.home_dir("QWEN_HOME", ".qwen")


#: inline, the URL and headers sit beside the key and the model; by reference they move
#: into the provider entry the model picks
_URL = ("security", "auth", "baseUrl")
_HEADERS = ("model", "generationConfig", "customHeaders")
#: a settings string that is just ``$VAR`` / ``${VAR}`` (Qwen expands it from the env)
_ENV_REF = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")


def _provider(model: str) -> tuple:
    return ("modelProviders", AUTH_TYPE, Match("id", model))


#: the provider entry the model picks: ``modelProviders.openai[id=<model.name>]``
_ENTRY = ("modelProviders", AUTH_TYPE, declare.named("id", declare.Each(
    declare.Opt("entry", read=("model", "name")), chosen=True, models=lambda fleet, cfg: ())))


class QwenCode(declare.Declared):
    """The table (inline, the URL and headers beside the key; by reference in a
    ``modelProviders.openai[]`` entry for the model, which names the key's variable), and
    what it cannot say: import reads that entry first, as Qwen does."""

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        model = obs.slots["model"][0].value if obs.slots.get("model") else None
        entry = declare._get(docs["settings"], _provider(model)) if model else None
        at = keypath_str(_provider(str(model)))
        if isinstance(entry, dict):  # the entry wins, as in Qwen
            obs.urls[:] = [s for s in obs.urls if s.key.startswith(at)]
            obs.headers[:] = [s for s in obs.headers if s.key.startswith(at)]
            obs.keys.clear()
            return
        found = _ENV_REF.match(obs.keys[0].value.reveal()) if obs.keys else None
        if found:  # security.auth's key may be $VAR, read from the environment
            obs.key_envs.append(Seen(found.group(1), self.file("settings", env),
                                     obs.keys.pop().key))
            obs.settings["secrets"] = "reference"


CLIENT = QwenCode(
    ID, "Qwen Code", primary="settings",
    files={"settings": declare.File(lambda env: qwen_home(env) / "settings.json",
                                    SETTINGS_FORMAT, json_object=True)},
    bindings=(declare.fixed("settings", "security", "auth", "selectedType", value=AUTH_TYPE,
                            selects="auth type {}"),
              declare.slot("settings", "model", "name"),
              # the entry the model picks (by reference): read first, it wins
              declare.key_env("settings", *_ENTRY, "envKey"),
              declare.url("settings", *_ENTRY, "baseUrl", reference=True),
              declare.headers("settings", *_ENTRY, *_HEADERS[1:], reference=True),
              declare.url("settings", *_URL, inline=True),
              declare.key("settings", "security", "auth", "apiKey"),
              declare.headers("settings", *_HEADERS, inline=True)),
    key_rule=declare.KeyRule(("env",), "Qwen reads the variable named in "
                             "modelProviders.openai[].envKey"),
    places={"url": "base URL (security.auth.baseUrl or modelProviders.openai[].baseUrl)",
            "key": "security.auth.apiKey or modelProviders envKey"},
    mcp=MCP_SHAPE, mcp_file="settings",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
