"""aider (``aider-chat`` 0.86.2, PyPI; LiteLLM inside): ``~/.aider.conf.yml``.

Facts (clients.md §9): aider reads ``.aider.conf.yml`` in the home, then the git root,
then the working directory (later wins); taosync writes the home one. A gateway model is
``openai/<id>`` (LiteLLM's prefix; the gateway sees ``<id>``; without it aider sends no
request and still exits 0), ``openai-api-base`` takes root + ``/v1`` and aider POSTs
``{base}/chat/completions`` (streamed, Bearer).

taosync owns only the gateway, key and model keys; aider's own preferences (offline and
quiet: ``check-update``, ``analytics-disable``, ``show-model-warnings``) stay the user's.
The key: ``openai-api-key`` inline; with ``secrets: reference`` aider reads
``OPENAI_API_KEY`` from its environment (or a ``.env``), so the file holds no key. aider
has no MCP and no setting for extra request headers.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import ClientEnv, Observation, Seen, slot_option

ID = "aider"
BINARY = "aider"  # taosync doctor shows its --version
TITLE = "aider"
SUMMARY = "aider (.aider.conf.yml, openai/<id>): model, weak_model, editor_model."
LOCATION_VARS: tuple[str, ...] = ()
#: aider has no MCP client: the fleet's mcp_servers are not written for it
MCP = False
TARGETS = [
    "~/.aider.conf.yml: model, weak-model, editor-model (openai/<id>), openai-api-base, "
    "openai-api-key (inline only)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('aider (`aider-chat` 0.86.2)',
     '`~/.aider.conf.yml`',
     '`model`, `weak-model`, `editor-model` (when set; `openai/<id>`), `openai-api-base` '
     '(root + `/v1`), `openai-api-key` (inline; reference: aider reads `$OPENAI_API_KEY`)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "no `openai-api-key`: aider reads `$OPENAI_API_KEY` (a warning says to export it when "
    "the key is `${env:OTHER}`); other references inline (0600), with a warning.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("pypi", "aider-chat==0.86.2", "")

PREFIX = "openai/"
#: the variable aider (LiteLLM's openai provider) reads the key from
KEY_ENV = "OPENAI_API_KEY"

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id of the main model (default: default_route)."),
    slot_option("weak_model", "Route or model id for commit messages and summaries "
                "(unset: aider uses the main model)."),
    slot_option("editor_model", "Route or model id of the editor model in architect mode "
                "(unset: not written)."),
)


def config_path(env: ClientEnv) -> Path:
    return env.home / ".aider.conf.yml"


class Aider(declare.Declared):
    """The table, and the one thing it cannot say: under ``secrets: reference`` aider
    reads the key from ``OPENAI_API_KEY`` alone, so the file then holds none."""

    def render_key(self, fleet, key, env, values) -> None:
        ref = self.key_reference(fleet, env, config_path(env))
        if ref is None:
            values["conf"][("openai-api-key",)] = key
        elif ref.arg != KEY_ENV:
            env.warnings.append(
                f"{ID}: aider reads the key from {KEY_ENV}, not {ref.arg}: export "
                f"{KEY_ENV}=\"${ref.arg}\" where aider runs (the key stays off disk)")

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        path = config_path(env)
        if obs.urls and not obs.keys:
            obs.key_envs.append(Seen(KEY_ENV, path, "openai-api-key"))
            obs.settings["secrets"] = "reference"
        if obs.urls and obs.provider is None and "model" not in obs.slots:
            obs.notes.append(f"{path}: sets openai-api-base but no openai/<id> model")


CLIENT = Aider(
    ID, TITLE, files={"conf": declare.File(config_path, "yaml")}, primary="conf",
    bindings=(
        declare.slot("conf", "model", prefix=PREFIX),
        declare.slot("conf", "weak-model", option="weak_model", prefix=PREFIX, optional=True),
        declare.slot("conf", "editor-model", option="editor_model", prefix=PREFIX,
                     optional=True),
        declare.url("conf", "openai-api-base"),
        declare.key("conf", "openai-api-key"),
    ),
    # what aider 0.86.2 sends besides auth (its pinned openai SDK, through LiteLLM)
    sends={"User-Agent": "OpenAI/Python 2.20.0"}, sends_headers=False,
    key_rule=declare.KeyRule(("env",), f"aider reads the key only from {KEY_ENV}",
                             fallback=KEY_ENV),
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
