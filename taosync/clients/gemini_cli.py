"""Gemini CLI (``@google/gemini-cli`` 0.61.0): settings.json and the ``.env`` beside it.

Facts (clients.md §5): everything lives in ``$GEMINI_CLI_HOME/.gemini`` (default
``~/.gemini``). Gemini CLI speaks only Gemini's protocol: it POSTs
``{GOOGLE_GEMINI_BASE_URL}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with
``x-goog-api-key``, so it needs the gateway's Gemini root (``gateway.gemini_base_url``,
never ``…/v1``). The base URL and key are environment variables only (no settings key);
Gemini reads them from ``~/.gemini/.env`` in a *trusted* folder, so taosync writes them there
(0600) and never switches folder trust off — that is the user's security setting.
``security.auth.selectedType: gemini-api-key`` is required: a base URL alone makes Gemini
pick auth type ``gateway``, which it then refuses. Extra headers go in
``GEMINI_CLI_CUSTOM_HEADERS`` (``Name: value, …``; bundle ``parseCustomHeaders``).

MCP servers: ``mcpServers.<name>`` with ``command``/``args``/``env``/``cwd``, ``httpUrl``
(streamable HTTP) or ``url`` (SSE), ``headers``; names may not hold ``_`` (mapped to
``-``). Settings strings expand ``$VAR``/``${VAR}``, which ``secrets: reference`` uses for MCP
secrets. Qwen Code (a fork) reads the same MCP shape: :func:`mcp_servers` serves both.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, Seen, disk_key, shown, slot_option,
                                  stored_key)

ID = "gemini-cli"
BINARY = "gemini"  # taosync doctor shows its --version
SUMMARY = "Gemini CLI (Gemini generateContent; needs gateway.gemini_base_url): model."
LOCATION_VARS = ("GEMINI_CLI_HOME",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"GEMINI_CLI_HOME": "."}
#: fleet keys it cannot work without (checked, located, wherever it is enabled)
REQUIRES = {"gateway.gemini_base_url": (
    "Gemini CLI speaks only Gemini's protocol (POST …/v1beta/models/{model}:"
    "streamGenerateContent), so it needs the root where the gateway serves it, e.g. "
    "gemini_base_url: https://gw.example.com (without /v1)")}
OPTIONS = (
    slot_option("model", "Route or model id for model.name (default: default_route)."),
)
#: settings.json holds JSON with comments: Gemini CLI 0.61.0 strips them before parsing
#: (clients.md §5, verified); a user's comments are legitimate there and are kept
SETTINGS_FORMAT = "jsonc"
TARGETS = [
    "~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini): security.auth.selectedType, "
    "model.name, mcpServers.<name>",
    "~/.gemini/.env: GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL, GEMINI_CLI_CUSTOM_HEADERS",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Gemini CLI (0.61.0)',
     '`~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini`)',
     '`security.auth.selectedType` (`gemini-api-key`), `model.name`, `mcpServers.<name>` '
     '(`_` in a name becomes `-`); never `security.folderTrust`'),
    ('',
     '`~/.gemini/.env` (0600)',
     '`GEMINI_API_KEY` (unless the key is `${env:GEMINI_API_KEY}` in reference mode), '
     '`GOOGLE_GEMINI_BASE_URL` (`gateway.gemini_base_url`), `GEMINI_CLI_CUSTOM_HEADERS`'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "reads its key only from `$GEMINI_API_KEY`: with `${env:GEMINI_API_KEY}` nothing is "
    "written; any other reference puts it in `~/.gemini/.env` (0600), with a warning.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "`${env:NAME}` → `${NAME}` (expanded in `settings.json` from its environment); other "
    "references inline (0600), with a warning.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "@google/gemini-cli@0.61.0", "")

KEY_VAR = "GEMINI_API_KEY"
URL_VAR = "GOOGLE_GEMINI_BASE_URL"
HEADERS_VAR = "GEMINI_CLI_CUSTOM_HEADERS"
AUTH_TYPE = "gemini-api-key"
PROTOCOL = "gemini"


def gemini_dir(env: ClientEnv) -> Path:
    return (env.location("GEMINI_CLI_HOME") or env.home) / ".gemini"


#: Gemini's ``mcpServers`` entries, which Qwen Code (a fork) reads too
MCP_SHAPE = declare.McpShape(
    ("mcpServers",), args_always=False, url_field={"http": "httpUrl", "sse": "url"},
    by_reference=declare.env_as("${{{}}}"),
    note="settings.json expands only ${env:NAME} values, as ${NAME}")


class GeminiCli(declare.Declared):
    """The table, and what it cannot say: the gateway's Gemini root is required, the key
    and URL of the real environment beat ``.env``'s, and MCP names hold no ``_``."""

    def render(self, fleet, key, env):
        if fleet.gateway.gemini_base_url is None:  # the fleet check refuses this first
            from taosync.errors import BadInput

            raise BadInput(f"clients.{ID}: needs gateway.gemini_base_url")
        return super().render(fleet, key, env)

    def mcp_name(self, name: str, taken: dict[str, str], env: ClientEnv) -> str | None:
        mapped = name.replace("_", "-")
        if taken.get(mapped, name) != name:
            env.warnings.append(f"{ID}: MCP servers {taken[mapped]!r} and {name!r} are both "
                                f"{mapped!r} without '_', which Gemini CLI does not allow in "
                                f"a name; kept {taken[mapped]!r}, skipped {name!r}")
            return None
        taken[mapped] = name
        if mapped != name:
            env.warnings.append(f"{ID}: MCP server {name!r} is written as {mapped!r}: Gemini "
                                f"CLI does not allow '_' in a server name")
        return mapped

    def probe_path(self, model: str) -> str:
        from taosync.protocols.gemini import QUERY, SUFFIX

        return SUFFIX.format(model=model) + QUERY

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        dotenv_path = self.file("env", env)
        url = (env.getenv(URL_VAR) or "").strip()
        if url:  # the real environment beats .env, as in Gemini
            obs.urls[:] = [Seen(url, dotenv_path, URL_VAR)]
            obs.notes.append(f"{URL_VAR} is set in the environment, which Gemini prefers "
                             f"to {dotenv_path}")
        if not obs.keys and env.getenv(KEY_VAR):
            obs.key_envs.append(Seen(KEY_VAR, dotenv_path, KEY_VAR))
            obs.settings["secrets"] = "reference"

    def read_key(self, obs, env, where):
        where = shown(self.file("env", env), env)
        if env.getenv(KEY_VAR):  # the real environment beats .env, as in Gemini
            return (Seen(None, self.file("env", env), KEY_VAR),
                    *disk_key("env", KEY_VAR, f"{KEY_VAR} (from the environment)", env))
        if obs.keys:
            return (obs.keys[0], *stored_key(obs.keys[0], env))
        return None, None, f"{where} sets no {KEY_VAR} (nor does the environment)"


CLIENT = GeminiCli(
    ID, "Gemini CLI", primary="settings", protocol=PROTOCOL, root="gemini", auth="x-goog-api-key",
    files={"settings": declare.File(lambda env: gemini_dir(env) / "settings.json",
                                    SETTINGS_FORMAT, json_object=True),
           "env": declare.File(lambda env: gemini_dir(env) / ".env", "dotenv", private=True)},
    bindings=(declare.fixed("settings", "security", "auth", "selectedType", value=AUTH_TYPE,
                            selects="auth type {} (Google login or Vertex AI)"),
              declare.slot("settings", "model", "name"),
              declare.url("env", URL_VAR),
              declare.key("env", KEY_VAR),
              declare.headers("env", HEADERS_VAR, join=(": ", ", "))),
    key_rule=declare.KeyRule(("env",), f"Gemini CLI reads its key only from ${KEY_VAR}, in "
                             f"the environment or ~/.gemini/.env", only=KEY_VAR,
                             first=KEY_VAR),
    places={"url": f"{URL_VAR} (nor does the environment)"},
    mcp=MCP_SHAPE, mcp_file="settings",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
