"""llm (Simon Willison's ``llm`` 0.36, i.e. 0.36.0; PyPI): its user directory.

Facts (clients.md §10): the directory is ``$LLM_USER_PATH``, else click's app directory
``io.datasette.llm`` (``$XDG_CONFIG_HOME`` or ``~/.config`` on Linux, Application Support
on macOS, ``%APPDATA%`` on Windows). ``extra-openai-models.yaml`` is a list of models:
``model_id`` (the local name, ``llm -m``), ``model_name`` (sent on the wire), ``api_base``
(root + ``/v1``; llm POSTs ``{api_base}/chat/completions``, streamed, Bearer),
``api_key_name`` (the entry of ``keys.json`` holding the key) and optional ``headers``.
``default_model.txt`` holds the default model id, as ``llm models default`` writes it.

taosync registers the whole catalogue (one entry per model id, so ``llm -m <id>`` works
for every model) and the ``model`` slot picks the default. The key is always written into
``keys.json`` (mode 0600): with ``secrets: reference`` too, as for Cline. llm has no MCP.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, Seen, disk_key, read_plain, shown,
                                  slot_option, stored_key)

ID = "llm"
BINARY = "llm"  # taosync doctor shows its --version
SUMMARY = "llm (extra-openai-models.yaml, the whole catalogue): model (the default)."
LOCATION_VARS = ("LLM_USER_PATH",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"LLM_USER_PATH": ".config/io.datasette.llm"}
TARGETS = [
    "~/.config/io.datasette.llm/extra-openai-models.yaml ($LLM_USER_PATH): one entry per "
    "catalogue model ([model_id=<id>])",
    "~/.config/io.datasette.llm/keys.json: the key under the name taotoken",
    "~/.config/io.datasette.llm/default_model.txt: the default model id",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('llm (0.36)',
     '`~/.config/io.datasette.llm/extra-openai-models.yaml` (`$LLM_USER_PATH`)',
     '`[model_id=<id>].{model_name,api_base,api_key_name,headers}` for every catalogue '
     'model'),
    ('',
     '`~/.config/io.datasette.llm/keys.json`',
     '`taotoken` (always inline: llm reads no key reference)'),
    ('',
     '`~/.config/io.datasette.llm/default_model.txt`',
     'the whole file: the `model` slot\'s model id'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = "inline (`keys.json`, 0600), with a warning."
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("pypi", "llm==0.36", "")

#: the name of the gateway key in keys.json (``api_key_name`` of every entry)
KEY_NAME = "taotoken"
MODELS_FILE = "extra-openai-models.yaml"
#: what llm 0.36 sends besides auth (the openai SDK it installs with)
HEADERS = {"User-Agent": "OpenAI/Python 3.57.0"}

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id of the default model (default: default_route); "
                "every catalogue model is registered for `llm -m <id>`."),
)


def user_dir(env: ClientEnv) -> Path:
    return env.location("LLM_USER_PATH") or env.app_data() / "io.datasette.llm"


#: an extra-openai-models.yaml entry per catalogue model; read back: the one llm uses
#: (:meth:`Llm.read_opts`), and the keys.json name it gives (taosync's own when it writes)
_ENTRY = (declare.named("model_id", declare.Each(read=declare.Opt("used"))),)


class Llm(declare.Declared):
    """The table (an extra-openai-models.yaml entry per catalogue model, so ``llm -m
    <id>`` works for each), and what it cannot say: which entry llm uses."""

    def read_opts(self, docs: dict) -> dict[str, str]:
        """The entry llm uses: default_model.txt's model when it is a gateway entry (its
        ``api_base`` set), else the first gateway entry; and the key name it gives."""
        gateway, default = _gateway(docs), _default(docs)
        used = default if default in gateway else next(iter(gateway), None)
        name = gateway[used].get("api_key_name") if used is not None else None
        return {k: v for k, v in (("used", used), ("key_name", name)) if isinstance(v, str)}

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        """The default model as llm sends it (an entry's model_name), and what import
        leaves out: a default that is no gateway model, the other gateway entries."""
        gateway, default, path = _gateway(docs), _default(docs), self.file("models", env)
        used = self.read_opts(docs).get("used")
        obs.slots.pop("model", None)
        if used is None:
            return
        if default is not None and default != used:
            obs.notes.append(f"{self.file('default', env)}: the default model {default} is "
                             f"not a gateway model; not imported")
        wire = gateway[used].get("model_name")
        wire = wire if isinstance(wire, str) else used
        if wire != used:
            obs.notes.append(f"{path}: {used} is sent as {wire}; taosync names each "
                             f"entry by the gateway's model id")
        if used == default:
            obs.slots["model"] = [Seen(wire, self.file("default", env), "text")]
        others = [m for m in gateway if m != used]
        if others:
            obs.notes.append(f"{path}: also registers {', '.join(others)}; taosync "
                             f"registers every model in fleet.yaml's models:, so add them there "
                             f"to keep them")

    def headers_sent(self, fleet, read=None) -> dict:
        """llm's own headers, then those of the entry (they win, as in the openai SDK)."""
        return {**self.sends, **(dict(read) if read is not None else fleet.gateway_headers())}

    def unprobed(self, obs: Observation, env: ClientEnv, where: str) -> str | None:
        """``llm "prompt"`` uses default_model.txt's model: one with no gateway entry
        sends nothing to the gateway."""
        default_path = self.file("default", env)
        if obs.slots.get("model"):
            return None
        model = read_plain(default_path, "text", obs, ("text",))
        if not (isinstance(model, str) and model.strip()):
            return f"{shown(default_path, env)} names no model"
        return (f"{shown(default_path, env)} names {model.strip()}, which {where} does not "
                f"send to a gateway (no api_base)")

    def read_key(self, obs: Observation, env: ClientEnv, where: str):
        """keys.json's entry the model's api_key_name names, else $OPENAI_API_KEY (as llm
        falls back); no api_key_name: llm sends a dummy key."""
        if obs.keys:
            return (obs.keys[0], *stored_key(obs.keys[0], env))
        default = read_plain(self.file("default", env), "text", obs, ("text",))
        entry = _entries(read_plain(self.file("models", env), "yaml", obs))[default.strip()]
        name, keys = entry.get("api_key_name"), shown(self.file("keys", env), env)
        if not isinstance(name, str):
            return None, None, f"{where} {obs.urls[0].key[:-len('.api_base')]} has no " \
                f"api_key_name: llm sends Bearer DUMMY_KEY"
        return (Seen(None, self.file("keys", env), name),
                *disk_key("env", "OPENAI_API_KEY", f"{keys} has no {name}, so llm reads "
                          f"OPENAI_API_KEY", env))


CLIENT = Llm(
    ID, "llm", primary="models",
    files={"models": declare.File(lambda env: user_dir(env) / MODELS_FILE, "yaml"),
           "keys": declare.File(lambda env: user_dir(env) / "keys.json", "json"),
           "default": declare.File(lambda env: user_dir(env) / "default_model.txt", "text")},
    bindings=(declare.model("models", *_ENTRY, "model_name"),
              declare.url("models", *_ENTRY, "api_base"),
              declare.fixed("models", *_ENTRY, "api_key_name", value=KEY_NAME),
              declare.headers("models", *_ENTRY, "headers"),
              declare.key("keys", declare.Opt("key_name", value=KEY_NAME)),
              declare.slot("default", "text")), sends=HEADERS,
    key_rule=declare.KeyRule((), "its gateway models read the key from keys.json"),
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)


# -- reading back (taosync import) ---------------------------------------------------


def _entries(doc) -> dict[str, dict]:
    """extra-openai-models.yaml's entries by model_id (the first of each)."""
    out: dict[str, dict] = {}
    for entry in doc if isinstance(doc, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("model_id"), str):
            out.setdefault(entry["model_id"], entry)
    return out


def _gateway(docs: dict) -> dict[str, dict]:
    """The entries of extra-openai-models.yaml that send to a gateway (api_base set)."""
    return {model_id: entry for model_id, entry in _entries(docs["models"]).items()
            if isinstance(entry.get("api_base"), str) and entry["api_base"].strip()}


def _default(docs: dict) -> str | None:
    """default_model.txt's model id."""
    text = docs["default"].get("text") if isinstance(docs["default"], dict) else None
    return text.strip() if isinstance(text, str) else None
