"""Continue (``@continuedev/cli`` 1.5.47 ``cn``; the IDE extensions read the same YAML).

Facts (clients.md §4): the global config is ``$CONTINUE_GLOBAL_DIR/config.yaml`` (default
``~/.continue``, the same home-relative path on Linux, macOS and Windows). It needs
top-level ``name``, ``version`` and ``schema: v1`` (set only where missing); ``models`` and
``mcpServers`` are lists, so taosync addresses its entries by ``name``. Provider ``openai``
with ``apiBase`` = root + ``/v1``: Continue appends ``/`` then ``chat/completions``.

Continue uses, for each role, the first entry of ``models`` that has it (no ``roles``:
chat, edit, apply, summarize); ``cn`` takes the chat one unless ``/model`` picked another
(``cliSelectedModel`` in ``index/globalContext.json``). So taosync keeps its entries
first in ``models`` (:attr:`Patch.lead`), and ``verify`` reads which entry wins.

``${{ secrets.NAME }}`` is resolved from the process environment and
``$CONTINUE_GLOBAL_DIR/.env``; with ``secrets: reference`` config.yaml holds only that
template and the key goes into ``.env`` (mode 0600), so config.yaml can be shared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from typing import Any

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, OnDisk, Option, ProbeSpec, SLOT_MAP,
                                  Seen, disk_key, probe_specs, read_plain, shown, slot_option,
                                  start_on_disk)
from taosync.formats.base import Match, keypath_str
from taosync.fleet.secrets import Secret

ID = "continue"
BINARY = "cn"  # taosync doctor shows its --version
SUMMARY = "Continue (config.yaml models): roles → route or model id."
LOCATION_VARS = ("CONTINUE_GLOBAL_DIR",)
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"CONTINUE_GLOBAL_DIR": ".continue"}
TARGETS = [
    "~/.continue/config.yaml ($CONTINUE_GLOBAL_DIR): models[name=<model id>] and "
    "mcpServers[name=<name>]",
    "~/.continue/.env: the key as <secret_name> (secrets: reference only)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Continue (`cn` 1.5.47)',
     '`~/.continue/config.yaml` (`$CONTINUE_GLOBAL_DIR`)',
     '`models[name=<model '
     'id>].{provider,model,apiBase,apiKey,roles,requestOptions.headers,'
     'defaultCompletionOptions.contextLength}`,'
     ' `mcpServers[name=<name>].*`; `name`, `version`, `schema` only when missing'),
    ('',
     '`~/.continue/.env`',
     '`<secret_name>` (reference mode)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`apiKey: ${{ secrets.NAME }}` in `config.yaml`; the value goes to `~/.continue/.env` "
    "(0600).")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "`${env:NAME}` → `${{ secrets.NAME }}` (Continue reads it from its environment or "
    "`~/.continue/.env`); other references inline (0600), with a warning.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "@continuedev/cli@1.5.47", "")

#: Continue's own order of model roles (packages/config-yaml models.ts)
ROLE_ORDER = ("chat", "autocomplete", "embed", "rerank", "edit", "apply", "summarize",
              "subagent")
DEFAULT_ROLES = ("chat", "edit", "apply", "summarize")
#: one of ROLE_ORDER, as the fleet schema's type
ROLE: Any = Literal.__getitem__(ROLE_ORDER)

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("roles", "Role → route or model id. Default: chat, edit, apply and "
         "summarize on default_route.", SLOT_MAP, dict[ROLE, str], {}),
    Option("secret_name", str, "TAOTOKEN_API_KEY",
           "Name used in ${{ secrets.NAME }} when secrets: reference.",
           pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"),
)


#: ``${{ secrets.NAME }}`` (a form, ``{}``: NAME): Continue fills it from its environment
#: and ``.env``
TEMPLATE = "${{{{ secrets.{} }}}}"

continue_dir = declare.home_dir("CONTINUE_GLOBAL_DIR", ".continue")


def _models(fleet, cfg) -> dict[str, tuple[str | None, list[str]]]:
    """Model id → (the slot that first named it, its roles in Continue's order)."""
    roles: dict[str, str | None] = dict(cfg.roles) or {r: None for r in DEFAULT_ROLES}
    out: dict[str, tuple[str | None, list[str]]] = {}
    for role in ROLE_ORDER:
        if role not in roles:
            continue
        slot = roles[role]
        model = fleet.model_for(slot)
        out.setdefault(model, (slot, []))[1].append(role)
    return out


#: ``mcpServers``: a list by name; an ``${env:NAME}`` secret as ``${{ secrets.NAME }}``
MCP_SHAPE = declare.McpShape(
    ("mcpServers",), listed=True, whole=False, http={"type": "streamable-http"},
    sse={"type": "sse"}, headers_at=("requestOptions", "headers"),
    by_reference=declare.env_as(TEMPLATE),
    note="Continue reads ${{ secrets.NAME }} from the environment, so only ${env:NAME} "
         "values are passed by reference")


#: one ``models`` entry per model id the roles name, in Continue's role order
_ENTRY = ("models", declare.named("name", declare.Each(
    declare.Opt("entry"), models=lambda fleet, cfg: _models(fleet, cfg))))
_API_KEY = declare.key("config", *_ENTRY, "apiKey")


class Continue(declare.Declared):
    """The table (a model entry per model id the roles name), and what it cannot say:
    the entries are kept first in ``models``; the key, or in reference mode its
    ``${{ secrets.NAME }}`` template (the key then in ``.env``); reading back and
    verify follow Continue's roles."""

    def render_key(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """The key in each model entry; by reference its template there, the key in .env."""
        name = self.cfg(fleet).secret_name
        if self.key_reference(fleet, env, self.file("config", env)) is not None:
            values["env"][(name,)], key = key, TEMPLATE.format(name)
        self.put(fleet, _API_KEY, values, key)

    def key_variables(self, fleet: Any, env: ClientEnv) -> dict[str, bool]:
        """By reference config.yaml names ``secrets.<secret_name>``, which ``.env`` holds
        and the process environment, when set, fills first."""
        return {self.cfg(fleet).secret_name: False} if self.reference(fleet) else {}

    def patch_fields(self, name: str, fleet: Any, env: ClientEnv) -> dict:
        if name != "config":
            return {}
        return {"skeleton": {("name",): "Local Config", ("version",): "1.0.0",
                             ("schema",): "v1"},
                # Continue uses the first model with a role: taosync's entries go first
                "lead": tuple(("models", Match("name", model))
                              for model in _models(fleet, self.cfg(fleet)))}

    def probes(self, fleet: Any, key: Any, env: ClientEnv) -> list[ProbeSpec]:
        models = [(slot, model) for model, (slot, _) in _models(fleet, self.cfg(fleet)).items()]
        return probe_specs(fleet, ID, models, protocol=self.protocol,
                           base_url=fleet.openai_url, path=self.path)

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk:
        """The probes config.yaml makes Continue send: one per model entry taosync writes
        (named by model id), with that entry's apiBase, apiKey (a ``${{ secrets.NAME }}``
        template resolved from ``.env``, then the environment), model and
        requestOptions.headers."""
        path = self.file("config", env)
        home = path.parent
        out, obs = start_on_disk(self, fleet, key, env, path)
        if obs is None:
            return out
        where = shown(path, env)
        config = read_plain(path, "yaml", obs)
        listed = config.get("models") if isinstance(config, dict) else None
        listed = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
        wanted = _models(fleet, self.cfg(fleet))
        used = _used_for_roles(listed, wanted, where, out)
        _cn_selection(home, listed, wanted, env, obs, out)
        for name, (slot, _) in wanted.items():
            entry = declare._get(listed, (Match("name", name),))  # the first of that name
            at = keypath_str(("models", Match("name", name)))
            if entry is None or name not in used:
                continue  # reported as drift, or as a problem: Continue does not use it
            values = {field: entry.get(field) for field in ("apiBase", "apiKey", "model")}
            missing = [f for f, v in values.items() if not (isinstance(v, str) and v.strip())]
            if missing:
                out.problems.append(f"{where} {at} has no {', '.join(missing)}")
                continue
            key_seen, secret, problem = _entry_key(values["apiKey"], at, path, env, obs)
            if problem:
                out.problems.append(problem)
                continue
            options = entry.get("requestOptions")
            headers = options.get("headers") if isinstance(options, dict) else None
            headers = headers if isinstance(headers, dict) else {}
            out.probes += probe_specs(
                fleet, ID, [(slot, values["model"].strip())], protocol="openai-chat",
                base_url=values["apiBase"].strip(), path="/chat/completions",
                headers={str(k): str(v) for k, v in headers.items()}, secret=secret,
                origins=(out.origin("url", Seen(None, path, f"{at}.apiBase"), env),
                         out.origin("key", key_seen, env),
                         out.origin("model", Seen(None, path, f"{at}.model"), env)))
        if not out.probes and not out.problems:
            out.problems.append(f"{where} has none of the model entries taosync writes")
        return out

    def observe(self, env: ClientEnv) -> Observation:
        """What ``config.yaml`` in Continue's global directory says."""
        path = self.file("config", env)
        home = path.parent
        obs = Observation(ID, protocol="openai")
        config = read_plain(path, "yaml", obs)
        from taosync.privilege import owner_rights

        with owner_rights():  # root on a user's home: looked at as its owner
            deprecated = (home / "config.json").exists()
        if deprecated:
            obs.notes.append(f"{home / 'config.json'}: the deprecated config.json is not read "
                             f"by import; taosync writes config.yaml")
        if not isinstance(config, dict):
            return obs
        kept: list[str] = []
        models = config.get("models")
        for entry in models if isinstance(models, list) else []:
            if not isinstance(entry, dict):
                continue
            name, model, provider = entry.get("name"), entry.get("model"), entry.get("provider")
            base = entry.get("apiBase")
            if "uses" in entry or not isinstance(name, str) or not isinstance(model, str):
                continue
            if provider not in _GATEWAY_PROVIDERS or not (isinstance(base, str) and base.strip()):
                kept.append(f"{name} ({provider})")
                continue
            at = ("models", Match("name", name))
            self.read_rows("config", config, {"entry": name}, obs, env)  # URL, key, headers
            if name != model:
                obs.notes.append(
                    f"{path}: model entry {name!r} (model {model}) — taosync names its entries "
                    f"by model id, so apply adds an entry {model!r} with the roles and leaves "
                    f"{name!r} as it is; rename it to {model!r} first to keep one entry")
            if provider != "openai":
                obs.notes.append(f"{path}: model entry {name!r} uses provider {provider!r}; "
                                 f"taosync writes provider openai (Chat Completions) for "
                                 f"gateway models")
            roles = entry.get("roles")
            if not isinstance(roles, list) or not roles:
                roles = list(DEFAULT_ROLES)
            for role in roles:
                if role in ROLE_ORDER:
                    obs.slots.setdefault(f"roles.{role}", []).append(
                        Seen(model.strip(), path, keypath_str(at + ("model",))))
        firsts: dict[str, Seen] = {}  # a secret name once, where it is first read
        obs.key_envs[:] = [firsts.setdefault(s.value, s) for s in obs.key_envs
                           if s.value not in firsts]
        secret_names = list(firsts)
        if secret_names:
            obs.settings["secret_name"] = secret_names[0]
            dotenv = home / ".env"
            for name in secret_names:
                value = read_plain(dotenv, "dotenv", obs, (name,))
                if isinstance(value, str) and value.strip():
                    obs.keys.append(Seen(Secret(value.strip(), f"{dotenv} {name}"), dotenv, name))
        if kept:
            obs.notes.append(f"{path}: other models kept as they are (taosync never touches "
                             f"them): {', '.join(kept)}")

        declare.read_mcp(MCP_SHAPE, config, path, obs)
        return obs


CLIENT = Continue(
    ID, "Continue", primary="config",
    bindings=(declare.fixed("config", *_ENTRY, "provider", value="openai"),
              declare.model("config", *_ENTRY, "model"),
              declare.url("config", *_ENTRY, "apiBase"), _API_KEY,
              declare.model("config", *_ENTRY, "roles",
                            value=lambda fleet, cfg, model: _models(fleet, cfg)[model][1]),
              declare.window("config", *_ENTRY, "defaultCompletionOptions", "contextLength"),
              declare.headers("config", *_ENTRY, "requestOptions", "headers")),
    files={"config": declare.File(lambda env: continue_dir(env) / "config.yaml", "yaml"),
           "env": declare.File(lambda env: continue_dir(env) / ".env", "dotenv")},
    # in reference mode config.yaml holds the template whatever the fleet's reference
    key_rule=declare.KeyRule(declare.BY_COMMAND, forms={"env": TEMPLATE}),
    mcp=MCP_SHAPE, mcp_file="config",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)


def _entry_key(api_key: str, at: str, path: Path, env: ClientEnv,
               obs: Observation) -> tuple[Seen, Any, str | None]:
    """(where, the key, why not) for a model entry's ``apiKey``: the key itself, or a
    ``${{ secrets.NAME }}`` template resolved from ``.env`` first (as Continue's
    CLIPlatformClient looks), then the environment."""
    where, dotenv_path = f"{shown(path, env)} {at}.apiKey", path.parent / ".env"
    template = CLIENT.key_rule.parse(api_key.strip())
    if template is None:
        return (Seen(None, path, f"{at}.apiKey"), *disk_key("literal", api_key, where, env))
    name = template[1]
    dotenv = read_plain(dotenv_path, "dotenv", obs, (name,))
    if isinstance(dotenv, str) and dotenv.strip():
        return (Seen(None, dotenv_path, name),
                *disk_key("literal", dotenv, f"{shown(dotenv_path, env)} {name}", env))
    if env.getenv(name) is not None:
        return (Seen(None, path, f"{at}.apiKey"),
                *disk_key("env", name, f"{where} (secrets.{name}, from the environment)", env))
    return Seen(None, path, f"{at}.apiKey"), None, (
        f"{where}: secrets.{name} is set neither in {shown(dotenv_path, env)} nor in the "
        f"environment")


def _roles_of(entry: dict) -> list:
    """The roles Continue gives a model entry (none for a hub block, ``uses:``)."""
    if "uses" in entry:
        return []
    roles = entry.get("roles", DEFAULT_ROLES)
    return list(roles) if isinstance(roles, (list, tuple)) else []


def _used_for_roles(listed: list[dict], wanted: dict, where: str, out: OnDisk) -> set[str]:
    """The names of taosync's entries Continue uses for at least one of their roles (it
    takes the first model with a role, cn too for chat); a problem for each entry of the
    user's listed earlier with a role of taosync's."""
    used: set[str] = set()
    lost: dict[tuple[str | None, str], list[str]] = {}
    for model, (_, roles) in wanted.items():
        for role in roles:
            first = next((e for e in listed if role in _roles_of(e)), None)
            name = first.get("name") if first is not None else None
            if name == model:
                used.add(model)
            elif any(e.get("name") == model for e in listed):  # else: drift says so
                lost.setdefault((name, model), []).append(role)
    for (name, model), roles in lost.items():
        mine = keypath_str(("models", Match("name", model)))
        if name is None:  # taosync's entry lost the role on disk
            out.problems.append(f"{where} has no model with the role {', '.join(roles)} "
                                f"(taosync gives it to {mine}), so Continue has none for it")
            continue
        out.problems.append(
            f"{where} {keypath_str(('models', Match('name', str(name))))} comes before "
            f"taosync's {mine}, so Continue uses it for {', '.join(roles)}: taosync apply "
            f"puts taosync's entries first")
    return used


def _cn_selection(home: Path, listed: list[dict], wanted: dict, env: ClientEnv,
                  obs: Observation, out: OnDisk) -> None:
    """cn's own pick (``/model``, kept as ``cliSelectedModel`` in
    ``index/globalContext.json``) wins over the order of ``models`` when it names a chat
    model: a problem when that is not taosync's. taosync never changes that choice."""
    chat = next((model for model, (_, roles) in wanted.items() if "chat" in roles), None)
    if chat is None:
        return
    path = home / "index" / "globalContext.json"
    picked = read_plain(path, "json", obs, ("cliSelectedModel",))
    if not isinstance(picked, str) or picked == chat:
        return
    # cn looks the name up among the chat models by name, else model (ModelService.ts)
    if any(picked == (e.get("name") or e.get("model")) for e in listed
           if "chat" in _roles_of(e) or "roles" not in e):
        out.problems.append(
            f"{shown(path, env)} cliSelectedModel: cn uses {picked!r}, picked with /model "
            f"in cn, not taosync's {chat!r} (pick {chat} there; taosync leaves that choice "
            f"to you)")


# -- reading back (taosync import) ---------------------------------------------------

#: Continue providers whose apiBase is an OpenAI- or Anthropic-shaped gateway
_GATEWAY_PROVIDERS = ("openai", "anthropic")
