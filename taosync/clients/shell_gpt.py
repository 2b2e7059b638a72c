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

import sys
from pathlib import Path

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Patch, ProbeSpec, Seen,
                                  disk_key, probe_specs, read_plain, shown, slot_option,
                                  start_on_disk)
from taosync.fleet.secrets import Secret, parse_reference

ID = "shell-gpt"
BINARY = "sgpt"  # taosync doctor shows its --version
TITLE = "shell-gpt"
SUMMARY = "shell-gpt (sgpt, .sgptrc): model."
LOCATION_VARS: tuple[str, ...] = ()
#: shell-gpt has no MCP client: the fleet's mcp_servers are not written for it
MCP = False
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

#: what sgpt 1.5.1 sends besides auth (the openai SDK it installs with)
HEADERS = {"User-Agent": "OpenAI/Python 2.54.0"}
#: the values sgpt takes from its environment before the file
OVERRIDES = ("API_BASE_URL", "OPENAI_API_KEY", "DEFAULT_MODEL")

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for DEFAULT_MODEL (default: default_route)."),
)


def config_path(env: ClientEnv) -> Path:
    return env.home / ".config" / "shell_gpt" / ".sgptrc"


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    return [config_path(env).parent], []


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    cfg = fleet.clients.shell_gpt
    path = config_path(env)
    if fleet.secrets_for(cfg) == "reference":
        ref = parse_reference(fleet.gateway.key)
        env.warnings.append(
            f"{ID}: secrets: reference cannot keep the key off disk for shell-gpt (without "
            f"OPENAI_API_KEY in .sgptrc it stops, or asks for a key, when that variable is "
            f"unset); wrote the key from {ref.describe()} inline into {path} (mode 0600)")
    if fleet.gateway.headers:
        env.warnings.append(f"{ID}: shell-gpt has no setting for extra request headers; its "
                            f"requests go without gateway.headers")
    for var in OVERRIDES:
        if env.getenv(var):
            env.warnings.append(f"{ID}: {var} is set in this environment and overrides the "
                                f"value taosync writes to {path}")
    values = {("API_BASE_URL",): fleet.openai_url, ("OPENAI_API_KEY",): key,
              ("DEFAULT_MODEL",): fleet.model_for(cfg.model)}
    if any(c in key.reveal() for c in "\r\n"):  # sgpt reads one line per key
        del values[("OPENAI_API_KEY",)]
        env.warnings.append(f"{ID}: the key holds a line break, which .sgptrc cannot hold; "
                            f"OPENAI_API_KEY is not written to {path}")
    return [Patch(path, "keyvalue", values, ID, secret=True)]


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    return probe_specs(fleet, ID, fleet.distinct_models([fleet.clients.shell_gpt.model]),
                       protocol="openai-chat", base_url=fleet.openai_url,
                       path="/chat/completions", headers=HEADERS)


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    """The probe ``.sgptrc`` makes sgpt send: API_BASE_URL, OPENAI_API_KEY and
    DEFAULT_MODEL, each overridden by the environment variable of its name, as sgpt does."""
    path = config_path(env)
    out, obs = start_on_disk(sys.modules[__name__], fleet, key, env, path)
    if obs is None:
        return out
    where = shown(path, env)

    def effective(name: str, found: list[Seen]) -> Seen | None:
        if env.getenv(name):
            return Seen(env.getenv(name), path, f"{name} (from the environment)")
        return found[0] if found else None

    url = effective("API_BASE_URL", obs.urls)
    model = effective("DEFAULT_MODEL", obs.slots.get("model", []))
    if url is None or url.value == "default":
        out.problems.append(f"{where} sets no API_BASE_URL (sgpt would call api.openai.com)")
        return out
    if env.getenv("OPENAI_API_KEY"):
        key_seen = Seen(None, path, "OPENAI_API_KEY (from the environment)")
        secret, problem = disk_key("env", "OPENAI_API_KEY", "OPENAI_API_KEY (which overrides "
                                   f"{where} OPENAI_API_KEY)", env)
    elif obs.keys:
        key_seen = obs.keys[0]
        secret, problem = disk_key("literal", key_seen.value.reveal(),
                                   f"{where} OPENAI_API_KEY", env)
    else:
        key_seen, secret, problem = None, None, f"{where} sets no OPENAI_API_KEY"
    if model is None:
        problem = problem or f"{where} sets no DEFAULT_MODEL"
    if problem:
        out.problems.append(problem)
        return out
    out.probes = probe_specs(
        fleet, ID, [(fleet.clients.shell_gpt.model, model.value)], protocol="openai-chat",
        base_url=url.value, path="/chat/completions", headers=HEADERS, secret=secret,
        origins=(out.origin("url", url, env), out.origin("key", key_seen, env),
                 out.origin("model", model, env)))
    return out


# -- reading back (taosync import) ---------------------------------------------------


def observe(env: ClientEnv) -> Observation:
    """What ``.sgptrc`` says (values as sgpt reads them)."""
    path = config_path(env)
    obs = Observation(ID, protocol="openai")
    config = read_plain(path, "keyvalue", obs)
    if not isinstance(config, dict):
        return obs
    base = config.get("API_BASE_URL", "").strip()
    if base and base != "default":
        obs.urls.append(Seen(base, path, "API_BASE_URL"))
    elif config:
        obs.provider = Seen("OpenAI's own API (API_BASE_URL default)", path, "API_BASE_URL")
    if config.get("USE_LITELLM", "false").strip().lower() == "true":
        obs.notes.append(f"{path}: USE_LITELLM=true routes sgpt through LiteLLM; taosync's "
                         f"keys assume the openai client (USE_LITELLM=false)")
    model = config.get("DEFAULT_MODEL", "").strip()
    if model:
        obs.slots["model"] = [Seen(model, path, "DEFAULT_MODEL")]
    key = config.get("OPENAI_API_KEY", "").strip()
    if key:
        obs.keys.append(Seen(Secret(key, f"{path} OPENAI_API_KEY"), path, "OPENAI_API_KEY"))
    return obs
