"""shell-gpt (``shell-gpt`` 1.5.1, ``sgpt``, PyPI): ``~/.config/shell_gpt/.sgptrc``.

Facts (clients.md §12): the file is always ``~/.config/shell_gpt/.sgptrc`` (no XDG, no
variable), ``KEY=VALUE`` lines read literally (the rest of the line after ``=``: no
quotes, no inline comments); an environment variable of the same name wins.
``API_BASE_URL`` takes root + ``/v1`` (the openai SDK's ``base_url``) and sgpt POSTs
``{base}/chat/completions`` (streamed, Bearer); ``DEFAULT_MODEL`` is the plain id.

On a run that finds any of its defaults missing, sgpt rewrites the whole file: comments
dropped, every key it read kept in order with the same value, its defaults appended. So
taosync owns only its three keys, edits by key (format ``keyvalue``), and its values read
back unchanged after that rewrite: nothing drifts and the next apply changes nothing.
The key is always inline (mode 0600), with ``secrets: reference`` too, as for Cline.
shell-gpt has no MCP.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import ClientEnv, Observation, Seen, slot_option

ID = "shell-gpt"
BINARY = "sgpt"  # taosync doctor shows its --version
#: a profile's instance (docs/profiles.md): no variable of its own moves its files, so a
#: separate HOME (the profile's root)
ISOLATION = {"HOME": "."}
SUMMARY = "shell-gpt (sgpt, .sgptrc): model."
TARGETS = [
    "~/.config/shell_gpt/.sgptrc: API_BASE_URL, OPENAI_API_KEY, DEFAULT_MODEL",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('shell-gpt (`sgpt` 1.5.1)',
     '`~/.config/shell_gpt/.sgptrc`',
     '`API_BASE_URL` (root + `/v1`), `OPENAI_API_KEY` (always inline), `DEFAULT_MODEL`; '
     'the defaults sgpt appends on its first run stay its own'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = "inline (`.sgptrc`, 0600), with a warning."
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("pypi", "shell-gpt==1.5.1 click", "`click`: it imports it without declaring it")

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for DEFAULT_MODEL (default: default_route)."),
)


def config_path(env: ClientEnv) -> Path:
    return env.home / ".config" / "shell_gpt" / ".sgptrc"


class ShellGpt(declare.Declared):
    """The table, and what it cannot say: ``API_BASE_URL=default`` means OpenAI's own
    API, and a key with a line break cannot be written."""

    def extra_render(self, fleet, key, env, values) -> None:
        if any(c in key.reveal() for c in "\r\n"):  # sgpt reads one line per key
            del values["rc"][("OPENAI_API_KEY",)]
            env.warnings.append(f"{ID}: the key holds a line break, which .sgptrc cannot "
                                f"hold; OPENAI_API_KEY is not written to {config_path(env)}")

    def read_binding(self, bind, seen, obs, prefix=None) -> None:
        if not (bind.role == "url" and seen.value.strip() == "default"):
            super().read_binding(bind, seen, obs, prefix)

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        path, config = config_path(env), docs["rc"]
        if config and not obs.urls:
            obs.provider = Seen("OpenAI's own API (API_BASE_URL default)", path,
                                "API_BASE_URL")
        if config and config.get("USE_LITELLM", "false").strip().lower() == "true":
            obs.notes.append(f"{path}: USE_LITELLM=true routes sgpt through LiteLLM; "
                             f"taosync's keys assume the openai client (USE_LITELLM=false)")

    def at_run_time(self, obs: Observation, env: ClientEnv) -> None:
        super().at_run_time(obs, env)
        obs.urls = [seen for seen in obs.urls if seen.value != "default"]


CLIENT = ShellGpt(
    ID, "shell-gpt", files={"rc": declare.File(config_path, "keyvalue", private=True)}, primary="rc",
    # an environment variable of the same name wins over each
    bindings=(declare.url("rc", "API_BASE_URL", env="API_BASE_URL"),
              declare.key("rc", "OPENAI_API_KEY", env="OPENAI_API_KEY"),
              declare.slot("rc", "DEFAULT_MODEL", env="DEFAULT_MODEL")),
    # what sgpt 1.5.1 sends besides auth (the openai SDK it installs with)
    sends={"User-Agent": "OpenAI/Python 2.54.0"}, sends_headers=False,
    key_rule=declare.KeyRule((), "without OPENAI_API_KEY in .sgptrc it stops, or asks for "
                             "a key, when that variable is unset", first="OPENAI_API_KEY"),
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
