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

import sys
from pathlib import Path

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Patch, ProbeSpec, Seen,
                                  disk_key, probe_specs, read_plain, shown, slot_option,
                                  start_on_disk, stored_key)
from taosync.fleet.secrets import Secret, parse_reference

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

#: fleet option → aider's key in .aider.conf.yml
MODEL_KEYS = {"model": "model", "weak_model": "weak-model", "editor_model": "editor-model"}
PREFIX = "openai/"
#: the variable aider (LiteLLM's openai provider) reads the key from
KEY_ENV = "OPENAI_API_KEY"
#: what aider 0.86.2 sends besides auth (its pinned openai SDK, through LiteLLM)
HEADERS = {"User-Agent": "OpenAI/Python 2.20.0"}

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


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    return [], [config_path(env)]


def _slots(cfg) -> list[tuple[str, str | None]]:
    """(option, slot) pairs that are written: the main model always, the others when set."""
    return [(option, getattr(cfg, option)) for option in MODEL_KEYS
            if option == "model" or getattr(cfg, option) is not None]


def _key_from_env(fleet, cfg) -> str | None:
    """The variable named by ``gateway.key`` when aider should read the key from its
    environment (``secrets: reference`` with ``${env:NAME}``); None: the key goes inline."""
    if fleet.secrets_for(cfg) != "reference":
        return None
    ref = parse_reference(fleet.gateway.key)
    return ref.arg if ref.kind == "env" else None


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.aider
    path = config_path(env)
    values: dict = {(MODEL_KEYS[option],): PREFIX + fleet.model_for(slot)
                    for option, slot in _slots(cfg)}
    values[("openai-api-base",)] = fleet.openai_url
    from_env = _key_from_env(fleet, cfg)
    if from_env is None:
        values[("openai-api-key",)] = key
        if fleet.secrets_for(cfg) == "reference":
            ref = parse_reference(fleet.gateway.key)
            env.warnings.append(
                f"{ID}: secrets: reference needs gateway.key = ${{env:NAME}} (aider reads the "
                f"key only from {KEY_ENV}), but it is {ref.describe()}; wrote the key inline "
                f"into {path} (mode 0600)")
    elif from_env != KEY_ENV:
        env.warnings.append(
            f"{ID}: aider reads the key from {KEY_ENV}, not {from_env}: export "
            f"{KEY_ENV}=\"${from_env}\" where aider runs (the key stays off disk)")
    if fleet.gateway.headers:
        env.warnings.append(f"{ID}: aider has no setting for extra request headers; its "
                            f"requests go without gateway.headers")
    return [Patch(path, "yaml", values, ID)]


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    slots = [slot for _, slot in _slots(fleet.clients.aider)]
    return probe_specs(fleet, ID, fleet.distinct_models(slots), protocol="openai-chat",
                       base_url=fleet.openai_url, path="/chat/completions", headers=HEADERS)


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probes ``~/.aider.conf.yml`` makes aider send: openai-api-base, the key
    (openai-api-key, else $OPENAI_API_KEY) and each ``openai/<id>`` model."""
    path = config_path(env)
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, path)
    if obs is None:
        return out
    where = shown(path, env)
    if not obs.urls:
        out.problems.append(f"{where} sets no openai-api-base")
        return out
    if obs.keys:
        key_seen = obs.keys[0]
        secret, problem = stored_key(key_seen, env, where)
    else:
        key_seen = Seen(KEY_ENV, path, "openai-api-key")
        secret, problem = disk_key("env", KEY_ENV, f"{where} has no openai-api-key, so "
                                   f"aider reads {KEY_ENV}", env)
    if problem:
        out.problems.append(problem)
        return out
    cfg = fleet.clients.aider
    for option, slot in _slots(cfg):
        found = obs.slots.get(option)
        if not found:
            continue
        out.probes += probe_specs(
            fleet, ID, [(slot, found[0].value)], protocol="openai-chat",
            base_url=obs.urls[0].value, path="/chat/completions", headers=HEADERS,
            secret=secret, origins=(out.origin("url", obs.urls[0], env),
                                    out.origin("key", key_seen, env),
                                    out.origin("model", found[0], env)))
    if not out.probes and not out.problems:
        out.problems.append(f"{where} names no openai/<id> model")
    return out


# -- reading back (taosync import) ---------------------------------------------------


def observe(env: ClientEnv) -> Observation:
    """What ``~/.aider.conf.yml`` says (the git-root and working-directory files are a
    project's, not read)."""
    path = config_path(env)
    obs = Observation(ID, protocol="openai")
    config = read_plain(path, "yaml", obs)
    if not isinstance(config, dict):
        return obs
    base = config.get("openai-api-base")
    if isinstance(base, str) and base.strip():
        obs.urls.append(Seen(base.strip(), path, "openai-api-base"))
    for option, name in MODEL_KEYS.items():
        model = config.get(name)
        if not (isinstance(model, str) and model.strip()):
            continue
        model = model.strip()
        if not model.startswith(PREFIX):
            if option == "model":
                obs.provider = Seen(f"model {model!r} (not an openai/<id> gateway model)",
                                    path, name)
            else:
                obs.notes.append(f"{path}: {name} {model!r} is not an openai/<id> gateway "
                                 f"model; not imported")
            continue
        obs.slots[option] = [Seen(model[len(PREFIX):], path, name)]
    key = config.get("openai-api-key")
    if isinstance(key, str) and key.strip():
        obs.keys.append(Seen(Secret(key.strip(), f"{path} openai-api-key"), path,
                             "openai-api-key"))
    elif obs.urls:
        obs.key_envs.append(Seen(KEY_ENV, path, "openai-api-key"))
        obs.settings["secrets"] = "reference"
    if obs.urls and obs.provider is None and "model" not in obs.slots:
        obs.notes.append(f"{path}: sets openai-api-base but no openai/<id> model")
    return obs
