"""OpenAI Codex CLI (``@openai/codex`` 0.171.0): config.toml, auth.json, profile files.

Facts (clients.md §2): everything lives in ``$CODEX_HOME`` (default ``~/.codex``, the same
home-relative path on Linux, macOS and Windows). taosync always writes a custom
``[model_providers.<id>]`` (the built-in ``openai`` provider cannot be overridden, and
``OPENAI_BASE_URL`` is ignored); its ``base_url`` takes root + ``/v1`` and Codex POSTs
``{base_url}/responses`` (``wire_api = "responses"`` is the only wire API left).

The key: ``env_key = NAME`` makes Codex read ``$NAME`` itself (``secrets: reference`` with
``gateway.key: ${env:NAME}``); otherwise ``requires_openai_auth = true`` makes it read
``auth.json`` ``{"auth_mode": "apikey", "OPENAI_API_KEY": …}`` (what ``codex login
--with-api-key`` writes). Profiles: ``codex -p NAME`` layers ``$CODEX_HOME/NAME.config.toml``
(``[profiles.NAME]`` tables are no longer read since 0.134.0).
"""

from __future__ import annotations

import re

from taosync.clients import declare
from taosync.clients.base import (SLOT_LIST, ClientEnv, Finding, Observation, Option, Patch,
                                  Seen, disk_key, read_plain, safe_url, same_key, shown,
                                  slot_option)
from taosync.fleet.logic import McpSecret
from taosync.formats.base import keypath_str
from taosync.privilege import owner_rights

ID = "codex"
BINARY = "codex"  # taosync doctor shows its --version
SUMMARY = "Codex CLI (OpenAI Responses): model, profiles, provider_id."
LOCATION_VARS = ("CODEX_HOME",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"CODEX_HOME": ".codex"}
#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id for `model` (default: default_route)."),
    slot_option("profiles", "Routes (or model ids) that each get a profile file, so "
         "`codex -p NAME` uses that model.", SLOT_LIST, list[str], []),
    Option("provider_id", str, "taotoken",
           "Id of the [model_providers.<id>] table taosync owns "
           "(never `openai`: Codex reserves it).", pattern=r"^[A-Za-z0-9_-]+$",
           reserved={"openai": "'openai' is Codex's built-in provider (Codex reserves it and "
                               "ignores a redefinition); use another id such as 'taotoken'"}),
)
TARGETS = [
    "~/.codex/config.toml ($CODEX_HOME): model, model_provider, [model_providers.<id>], "
    "[mcp_servers.<name>]",
    "~/.codex/auth.json: auth_mode, OPENAI_API_KEY (unless the key comes from ${env:NAME})",
    "~/.codex/<profile>.config.toml: model, model_provider (one per entry in profiles)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Codex CLI (0.171.0)',
     '`~/.codex/config.toml` (`$CODEX_HOME`)',
     '`model`, `model_provider`, `model_context_window` (when the catalogue gives one), '
     '`[model_providers.<id>]` `base_url` (root + `/v1`), `wire_api = "responses"`, '
     '`http_headers`, and `requires_openai_auth` (inline) or `env_key` (reference), its '
     '`name` only when missing; `[mcp_servers.<name>]`'),
    ('',
     '`~/.codex/auth.json`',
     '`auth_mode`, `OPENAI_API_KEY` (inline)'),
    ('',
     '`~/.codex/<profile>.config.toml`',
     '`model`, `model_provider`, `model_context_window` (one per `profiles` entry)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`env_key = NAME` when the key is `${env:NAME}`; other references fall back to "
    "`auth.json` (0600) with a warning.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "`${env:NAME}` in a stdio `env` under the same name → `env_vars = [\"NAME\"]` (Codex "
    "forwards it from its own environment); a header `${env:NAME}` → `env_http_headers`; "
    "`Authorization: Bearer ${env:NAME}` → `bearer_token_env_var`. Anything else (another "
    "name, `${file:}`, `${cmd:}`) is written inline, 0600, with a warning.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "@openai/codex@0.171.0", "")

PROVIDER_NAME = "taosync gateway"


codex_home = declare.home_dir("CODEX_HOME", ".codex")


def profile_name(slot: str) -> str:
    """The ``codex -p`` name (and file stem) for a profile entry: [A-Za-z0-9_-] only."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", slot)



def _profiles(cfg, env: ClientEnv | None = None) -> list[tuple[str, str]]:
    """(profile entry, file-safe profile name) pairs, duplicates and collisions dropped."""
    out: list[tuple[str, str]] = []
    taken: dict[str, str] = {}
    for slot in cfg.profiles:
        name = profile_name(slot)
        if name in taken:
            if taken[name] != slot and env is not None:
                env.warnings.append(
                    f"{ID}: profiles {taken[name]!r} and {slot!r} both map to the file "
                    f"{name}.config.toml; kept {taken[name]!r}, skipped {slot!r}"
                )
            continue
        taken[name] = slot
        out.append((slot, name))
    return out



def _mcp_env(values: dict, reference: bool) -> dict:
    """A stdio server's ``env`` table; with ``secrets: reference``, a value that is
    ``${env:NAME}`` under the same name goes in ``env_vars`` instead (Codex forwards
    that variable from its own environment, so the secret stays off disk)."""
    inline: dict = {}
    forwarded: list[str] = []
    for var, value in values.items():
        if reference and isinstance(value, McpSecret) and value.env_name == var:
            forwarded.append(var)
        else:
            inline[var] = value
    out: dict = {"env": inline} if inline else {}
    if forwarded:
        out["env_vars"] = forwarded
    return out


def _mcp_headers(values: dict, reference: bool) -> dict:
    """An http server's headers; with ``secrets: reference``, ``${env:NAME}`` values go in
    ``env_http_headers`` (header → variable) and ``Authorization: Bearer ${env:NAME}``
    in ``bearer_token_env_var``, which Codex reads at run time."""
    inline: dict = {}
    from_env: dict = {}
    bearer = None
    for header, value in values.items():
        if reference and isinstance(value, McpSecret) and value.ref.kind == "env":
            if value.env_name is not None:
                from_env[header] = value.env_name
                continue
            if (header.lower() == "authorization" and value.prefix == "Bearer "
                    and not value.suffix and bearer is None):
                bearer = value.ref.arg
                continue
        inline[header] = value
    out: dict = {"http_headers": inline} if inline else {}
    if from_env:
        out["env_http_headers"] = from_env
    if bearer is not None:
        out["bearer_token_env_var"] = bearer
    return out


def _context_window(fleet, model: str) -> dict:
    """``model_context_window`` when the catalogue gives the model's window (Codex
    otherwise warns it has no metadata for an unknown model id)."""
    window = fleet.context_window(model)
    return {("model_context_window",): window} if window else {}


def _mcp_fields(kind: str, values, reference: bool) -> dict:
    return _mcp_env(values, reference) if kind == "stdio" else _mcp_headers(values, reference)


class Codex(declare.Declared):
    """The table, and what it cannot say: the key goes to auth.json (inline) or is
    named by env_key (reference); each profile is a file of its own; import reads
    Codex's own providers and profile files."""

    def render(self, fleet, key, env) -> list[Patch]:
        cfg = self.cfg(fleet)
        patches = super().render(fleet, key, env)
        # the provider's display name is the user's to choose: set only when missing
        patches[0].skeleton = {("model_providers", cfg.provider_id, "name"): PROVIDER_NAME}
        for slot, name in _profiles(cfg, env):
            if name != slot:
                env.warnings.append(f"{ID}: profile {slot!r} is written as "
                                    f"{name}.config.toml; use `codex -p {name}`")
            model = fleet.model_for(slot)
            patches.append(Patch(codex_home(env) / f"{name}.config.toml", "toml", {
                ("model",): model, ("model_provider",): cfg.provider_id,
                **_context_window(fleet, model)}, ID))
        return patches

    def probed_slots(self, fleet) -> list[tuple[str, str | None]]:
        cfg = self.cfg(fleet)
        return [("model", cfg.model)] + [(f"profiles[{name}]", slot)
                                         for slot, name in _profiles(cfg)]

    def read_opts(self, docs: dict) -> dict[str, str]:
        """As the table says, but ``model_providers.openai`` is never followed: Codex
        ignores a redefinition of its built-in provider."""
        read = super().read_opts(docs)
        return {} if read.get("provider_id") == "openai" else read

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        _observe(env, docs, obs)

    def read_key(self, obs: Observation, env: ClientEnv, where: str):
        """As Codex resolves it: env_key's variable; else experimental_bearer_token;
        else auth.json, which CODEX_API_KEY overrides."""
        seen = obs.key_envs[0] if obs.key_envs else obs.keys[0] if obs.keys else None
        if seen is None:
            return None, None, (f"{where} gives Codex no key (model_providers.<id>.env_key, "
                                f"or requires_openai_auth with "
                                f"{shown(self.file('auth', env), env)})")
        key_where = f"{shown(seen.file, env)} {seen.key}"
        if obs.key_envs:
            return (seen, *disk_key("env", seen.value, key_where, env))
        overriding = self.overriding_key(env) if seen.file.name == "auth.json" else None
        return (seen, *(overriding or disk_key("literal", seen.value.reveal(), key_where, env)))


_PROVIDER = ("model_providers", declare.Opt("provider_id", read=("model_provider",)))
MCP_SHAPE = declare.McpShape(
    ("mcp_servers",), args_always=False, headers_at=("http_headers",), sse=None,
    by_fields=_mcp_fields, disabled={"enabled": False},
    # url = streamable HTTP; no sse form in config.toml (not in clients.md; third-party
    # reports, unverified here)
    note="Codex passes an MCP server only whole ${env:NAME} values: env under the same "
         "name, headers, and Authorization: Bearer ${env:NAME}")
CLIENT = Codex(
    ID, "Codex", primary="config",
    files={"config": declare.File(lambda env: codex_home(env) / "config.toml", "toml"),
           "auth": declare.File(lambda env: codex_home(env) / "auth.json", "json")},
    bindings=(
        declare.slot("config", "model"),
        declare.computed("config", "model_provider", value=lambda fleet, cfg: cfg.provider_id),
        declare.computed("config", "model_context_window", value=lambda fleet, cfg:
                         fleet.context_window(fleet.model_for(cfg.model)) or None),
        declare.url("config", *_PROVIDER, "base_url"),
        declare.fixed("config", *_PROVIDER, "wire_api", value="responses"),
        declare.headers("config", *_PROVIDER, "http_headers"),
        declare.fixed("config", *_PROVIDER, "requires_openai_auth", value=True, inline=True),
        declare.key_env("config", *_PROVIDER, "env_key"),
        declare.key("config", *_PROVIDER, "experimental_bearer_token",
                    note="holds the key in config.toml; taosync keeps it in auth.json (or "
                    "the environment) instead — remove it after apply"),
        declare.fixed("auth", "auth_mode", value="apikey", inline=True),
        declare.key("auth", "OPENAI_API_KEY", env="CODEX_API_KEY"),
    ),
    protocol="openai-responses", path="/responses", options=OPTIONS,
    places={"url": "model_providers.<id>.base_url"},
    key_rule=declare.KeyRule(("env",), "Codex reads the key only from an environment variable"),
    mcp=MCP_SHAPE, mcp_file="config",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)


# -- reading back (taosync import) ---------------------------------------------------

#: providers built into Codex that are not a gateway taosync can describe (codex-rs
#: ``model_provider_info.rs`` ``built_in_model_providers`` has openai, ollama and lmstudio;
#: ``oss`` is not among them there, and only names what import reports)
_BUILTIN = {"openai": "OpenAI's own API", "ollama": "Ollama (local)",
            "lmstudio": "LM Studio (local)", "oss": "a local open-source model server"}


def _observe(env: ClientEnv, docs: dict, obs: Observation) -> None:
    """What the table cannot read in ``$CODEX_HOME``: a provider without a base URL or
    built into Codex, a key in config.toml, auth.json only when the provider uses it,
    the profile files, MCP settings fleet.yaml cannot express."""
    home = codex_home(env)
    config_path, auth_path, config = home / "config.toml", home / "auth.json", docs["config"]
    if not isinstance(config, dict):
        obs.keys.clear()
        return
    provider_id = config.get("model_provider")
    table = declare._get(config, ("model_providers", provider_id)) \
        if isinstance(provider_id, str) else None
    uses_auth_json = False
    if isinstance(table, dict) and provider_id != "openai":
        where = keypath_str(("model_providers", str(provider_id)))
        if not obs.urls:
            obs.provider = Seen(f"provider {provider_id!r} without base_url", config_path, where)
        uses_auth_json = table.get("requires_openai_auth") is True
        if table.get("wire_api") not in (None, "responses"):
            obs.notes.append(f"{config_path}: wire_api = {table.get('wire_api')!r} is refused by "
                             f"Codex 0.171; apply sets \"responses\"")
    elif provider_id in (None, "openai"):
        base = config.get("openai_base_url")
        if isinstance(base, str) and base.strip():
            obs.urls.append(Seen(base.strip(), config_path, "openai_base_url"))
            obs.notes.append(f"{config_path}: the built-in openai provider with openai_base_url; "
                             f"taosync writes its own [model_providers.<id>] and points "
                             f"model_provider at it")
            uses_auth_json = True
        elif "model" in config or _exists(auth_path):
            obs.provider = Seen(_BUILTIN["openai"] + " (no model_provider)", config_path,
                                "model_provider")
    else:
        label = _BUILTIN.get(provider_id, f"provider {provider_id!r} (no [model_providers] table)")
        obs.provider = Seen(label, config_path, "model_provider")
    if not uses_auth_json:  # Codex reads auth.json's key only for such a provider
        obs.keys[:] = [k for k in obs.keys if k.file != auth_path]
    elif declare._get(docs["auth"], ("tokens",)) and \
            not any(k.file == auth_path for k in obs.keys):
        obs.notes.append(f"{auth_path}: a ChatGPT login, not an API key")

    if isinstance(config.get("profiles"), dict) and config["profiles"]:
        obs.notes.append(f"{config_path}: [profiles.*] tables are not read by Codex since "
                         f"0.134; not imported (profiles are <name>.config.toml files)")
    with owner_rights():  # root on a user's home: listed as its owner
        profiles = sorted(home.glob("*.config.toml"))
    for path in profiles:
        name = path.name[: -len(".config.toml")]
        profile = read_plain(path, "toml", obs)
        if not isinstance(profile, dict):
            continue
        pmodel, pprovider = profile.get("model"), profile.get("model_provider")
        if name != profile_name(name):
            obs.notes.append(f"{path}: profile name {name!r} cannot be a route name; not imported")
        elif not (isinstance(pmodel, str) and pmodel.strip()):
            obs.notes.append(f"{path}: sets no model; not imported")
        elif pprovider not in (None, provider_id):
            obs.notes.append(f"{path}: uses model_provider {pprovider!r}, not the gateway's; "
                             f"left as it is")
        else:
            obs.slots[f"profiles[{name}]"] = [Seen(pmodel.strip(), path, "model")]

    servers = config.get("mcp_servers")
    for name, entry in servers.items() if isinstance(servers, dict) else ():
        if name in obs.mcp_servers and "command" not in entry and \
                entry.get("bearer_token_env_var"):
            obs.notes.append(f"{config_path}: MCP server {name!r} reads a bearer token from "
                             f"${entry['bearer_token_env_var']}, which fleet.yaml cannot "
                             f"express; that setting stays in config.toml")


# -- doctor ----------------------------------------------------------------------------------

def doctor(fleet, key, environ) -> list[Finding]:
    """OpenAI-style variables Codex reads or ignores: its custom provider (what taosync
    writes) carries its own URL and key (clients.md, Codex: providers and auth)."""
    from taosync.fleet.secrets import redact

    get = lambda name: (environ.get(name) or "").strip()  # noqa: E731
    out: list[Finding] = []
    value = get("OPENAI_API_KEY")
    if value:
        same = same_key(value, key)
        out.append(Finding("OPENAI_API_KEY", "info",
                           f"{redact(value)} in the shell"
                           + (" (the fleet's key)" if same else " (not the fleet's key)"
                              if same is False else "")
                           + ": read by Codex's built-in openai provider and many tools; "
                           "taosync's Codex provider and Cline/Continue files carry their own"))
    value = get("OPENAI_BASE_URL")
    if value:
        want = fleet.openai_url if fleet is not None else None
        differs = want is not None and value.rstrip("/") != want.rstrip("/")
        out.append(Finding("OPENAI_BASE_URL", "warn" if differs else "info",
                           f"{safe_url(value)} in the shell"
                           + (f" differs from the fleet's {want}" if differs else "")
                           + ": Codex ignores OPENAI_BASE_URL (taosync writes a custom provider); "
                           "other OpenAI tools (Qwen Code, SDK scripts) use it"))
    value = get("CODEX_API_KEY")
    if value:
        out.append(Finding("CODEX_API_KEY", "info",
                           f"{redact(value)} in the shell: overrides Codex's auth.json for "
                           "providers with requires_openai_auth; taosync's provider reads its "
                           "own env_key / token"))
    return out


def _exists(path) -> bool:
    with owner_rights():  # root on a user's home: looked at as its owner
        return path.exists()
