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
has no MCP.

Headers (aider/models.py at 0.86.2): ``.aider.model.settings.yml`` (home, git root, working
directory; a later file's entry replaces an earlier one of the same ``name``) is a list of
model settings; the entry whose ``name`` equals the model as given (``openai/<id>``, the
prefix included) is used, and its ``extra_params`` go into every completion call, so
``extra_params.extra_headers`` reaches the gateway (LiteLLM → the openai SDK). With
``gateway.headers`` taosync owns ``extra_params.extra_headers`` of one entry per catalogue
model; the user's other entries and fields stay. An entry by exact name replaces aider's
built-in settings of that name (its edit format among them), so taosync writes none
without headers.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import ClientEnv, Observation, Seen, slot_option

ID = "aider"
BINARY = "aider"  # taosync doctor shows its --version
#: a profile's instance (docs/profiles.md): no variable of its own moves its files, so a
#: separate HOME (the profile's root)
ISOLATION = {"HOME": "."}
SUMMARY = "aider (.aider.conf.yml, openai/<id>): model, weak_model, editor_model."
TARGETS = [
    "~/.aider.conf.yml: model, weak-model, editor-model (openai/<id>), openai-api-base, "
    "openai-api-key (inline only)",
    "~/.aider.model.settings.yml: [name=openai/<id>].extra_params.extra_headers per catalogue "
    "model (with gateway.headers)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('aider (`aider-chat` 0.86.2)',
     '`~/.aider.conf.yml`',
     '`model`, `weak-model`, `editor-model` (when set; `openai/<id>`), `openai-api-base` '
     '(root + `/v1`), `openai-api-key` (inline; reference: aider reads `$OPENAI_API_KEY`)'),
    ('',
     '`~/.aider.model.settings.yml`',
     '`[name=openai/<model id>].extra_params.extra_headers` for every catalogue model, only '
     'with `gateway.headers`'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "no `openai-api-key`: aider reads `$OPENAI_API_KEY` (`taosync env --with-key` exports "
    "it; `apply` says so when it is not set); other references inline (0600), with a "
    "warning.")
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


def settings_path(env: ClientEnv) -> Path:
    return env.home / ".aider.model.settings.yml"


class Aider(declare.Declared):
    """The table, and the one thing it cannot say: under ``secrets: reference`` aider
    reads the key from ``OPENAI_API_KEY`` alone, so the file then holds none."""

    def render_key(self, fleet, key, env, values) -> None:
        """Inline, or nothing: aider then reads ``OPENAI_API_KEY`` (its ``key_variables``;
        when that is not set here, apply says so once for every client that needs one)."""
        if self.key_reference(fleet, env, config_path(env)) is None:
            values["conf"][("openai-api-key",)] = key

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        path = config_path(env)
        if obs.urls and not obs.keys:
            obs.key_envs.append(Seen(KEY_ENV, path, "openai-api-key"))
            obs.settings["secrets"] = "reference"
        if obs.urls and obs.provider is None and "model" not in obs.slots:
            obs.notes.append(f"{path}: sets openai-api-base but no openai/<id> model")


CLIENT = Aider(
    ID, "aider", primary="conf",
    files={"conf": declare.File(config_path, "yaml"),
           "settings": declare.File(settings_path, "yaml")},
    bindings=(
        declare.slot("conf", "model", prefix=PREFIX),
        declare.slot("conf", "weak-model", option="weak_model", prefix=PREFIX, optional=True),
        declare.slot("conf", "editor-model", option="editor_model", prefix=PREFIX,
                     optional=True),
        declare.url("conf", "openai-api-base"),
        declare.key("conf", "openai-api-key"),
        # each catalogue model's settings entry (read back: the main model's)
        declare.headers("settings", declare.named("name", declare.Each(
            declare.Opt("entry", read=("model",), file="conf"), prefix=PREFIX, chosen=True)),
                        "extra_params", "extra_headers"),
    ),
    # what aider 0.86.2 sends besides auth (its pinned openai SDK, through LiteLLM)
    sends={"User-Agent": "OpenAI/Python 2.20.0"},
    key_rule=declare.KeyRule(("env",), f"aider reads the key only from {KEY_ENV}",
                             fallback=KEY_ENV),
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
