"""Cline: the ``cline`` CLI 3.0.65 / SDK store, the legacy store (v3.89.2), VS Code MCP files.

Facts (clients.md §3). Cline is mid-migration, so taosync writes both generations:

* current (CLI 3.x, SDK, extension 4.x "Next"): ``$CLINE_DIR`` (default ``~/.cline``),
  data dir ``$CLINE_DATA_DIR`` (default ``$CLINE_DIR/data``):
  ``settings/providers.json`` (provider ``openai-compatible``; a file that fails the zod
  schema silently logs the user out, so the shape is exactly what ``cline auth`` writes,
  including ``updatedAt`` and ``tokenSource``) and ``settings/cline_mcp_settings.json``
  (override ``$CLINE_MCP_SETTINGS_PATH``; nested ``transport`` form, as ``cline mcp add``
  writes it);
* legacy extension store (v3.89.2 keys, which 4.x migrates from): ``data/globalState.json``
  and ``data/secrets.json``;
* legacy VS Code extension MCP file:
  ``<app data>/<App>/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json``
  (flat form; app data = ``~/.config`` on Linux, ``~/Library/Application Support`` on
  macOS, ``%APPDATA%`` on Windows).

``baseUrl``/``openAiBaseUrl`` take root + ``/v1``; Cline POSTs ``{base}/chat/completions``
with Bearer auth. Cline cannot read the key from the environment or a helper, so the key
is always written inline (files 0600).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from taosync.clients import declare
from taosync.clients.base import (ClientEnv, Observation, Option, Patch, Seen, read_plain,
                                  shown, slot_option, stored_key)

ID = "cline"
BINARY = "cline"  # taosync doctor shows its --version
SUMMARY = "Cline (OpenAI-compatible provider): model, editors, legacy."
#: environment variables naming a directory (LOCATION_VARS) or one file it reads
LOCATION_VARS = ("CLINE_DIR", "CLINE_DATA_DIR")
#: a profile's instance (docs/profiles.md): variable → its directory under the profile's root
ISOLATION = {"CLINE_DIR": ".cline"}
LOCATION_FILES = ("CLINE_MCP_SETTINGS_PATH",)
TARGETS = [
    "~/.cline/data/settings/providers.json ($CLINE_DIR, $CLINE_DATA_DIR): the "
    "openai-compatible provider (base URL, model, key, headers)",
    "~/.cline/data/settings/cline_mcp_settings.json ($CLINE_MCP_SETTINGS_PATH): "
    "mcpServers.<name>",
    "~/.cline/data/globalState.json + secrets.json: the legacy extension store (legacy: true)",
    "<VS Code-family app>/User/globalStorage/saoudrizwan.claude-dev/settings/"
    "cline_mcp_settings.json: mcpServers.<name> for the legacy extension (editors)",
]
#: README's "Files taosync owns" rows: (client and version targeted, file, owned keys);
#: an empty first cell continues the client above (python -m taosync.clients.readme)
OWNED_FILES = (
    ('Cline CLI/SDK (3.0.65)',
     '`~/.cline/data/settings/providers.json` (`$CLINE_DIR`, `$CLINE_DATA_DIR`)',
     '`lastUsedProvider`, '
     '`providers.openai-compatible.{settings.{provider,apiKey,model,baseUrl,headers,contextWindow},'
     ' tokenSource, updatedAt}`; `version` and `modes` only when missing (an invalid file '
     "silently logs Cline out, so the shape is exactly Cline's)"),
    ('',
     '`~/.cline/data/settings/cline_mcp_settings.json` (`$CLINE_MCP_SETTINGS_PATH`)',
     '`mcpServers.<name>`'),
    ('Cline legacy extension (v3.89.2 store)',
     '`~/.cline/data/globalState.json`, `secrets.json`',
     '`planModeApiProvider`, `actModeApiProvider`, `openAiBaseUrl`, '
     '`planModeOpenAiModelId`, `actModeOpenAiModelId`, `openAiHeaders`; `openAiApiKey`'),
    ('',
     '`<editor>/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json`',
     '`mcpServers.<name>` (per editor in `editors`)'),
)

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "cannot read a key from the environment: written inline (0600), with a warning.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = "inline (0600), with a warning."
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "cline@3.0.65", "")

PROVIDER = "openai-compatible"

#: fleet editor name → the app directory under the platform's app-data directory
EDITOR_APPS = {
    "code": "Code",
    "code-insiders": "Code - Insiders",
    "vscodium": "VSCodium",
    "cursor": "Cursor",
    "windsurf": "Windsurf",
}
EXTENSION_ID = "saoudrizwan.claude-dev"

#: one of EDITOR_APPS, as the fleet schema's type
EDITOR: Any = Literal.__getitem__(tuple(EDITOR_APPS))

#: its fleet.yaml options (beyond enabled, secrets, mcp)
OPTIONS = (
    slot_option("model", "Route or model id (default: default_route)."),
    Option("legacy", bool, True, "Also write the legacy extension store (globalState.json + "
           "secrets.json) that Cline 4.x migrates from."),
    Option("editors", list[EDITOR] | Literal["auto"], "auto",
           "VS Code-family editors whose Cline MCP file to write; `auto` = "
           "those installed (their User/globalStorage exists)."),
)


def cline_dirs(env: ClientEnv) -> tuple[Path, Path]:
    """(Cline dir, data dir)."""
    base = env.location("CLINE_DIR") or env.home / ".cline"
    return base, env.location("CLINE_DATA_DIR") or base / "data"


def global_storage(env: ClientEnv, editor: str) -> Path:
    return env.app_data() / EDITOR_APPS[editor] / "User" / "globalStorage"


def mcp_path(env: ClientEnv) -> Path:
    """The current store's MCP file (``$CLINE_MCP_SETTINGS_PATH`` moves it)."""
    return (env.location("CLINE_MCP_SETTINGS_PATH")
            or cline_dirs(env)[1] / "settings" / "cline_mcp_settings.json")


def editor_mcp_path(env: ClientEnv, editor: str) -> Path:
    return global_storage(env, editor) / EXTENSION_ID / "settings" / "cline_mcp_settings.json"


def editors(cfg, env: ClientEnv) -> list[str]:
    """The editors whose legacy MCP file to write: the configured list, or the installed ones."""
    if cfg.editors != "auto":
        return list(dict.fromkeys(cfg.editors))
    return [name for name in EDITOR_APPS if env.is_dir(global_storage(env, name))]


def now_iso() -> str:
    """UTC now as Cline writes it: ``2026-11-29T23:28:58.515Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


#: the provider entry taosync owns in providers.json
P = ("providers", PROVIDER)
#: its rows' key path (import reads them under the gateway's provider id, which may be
#: "openai": :meth:`Cline.observe`)
_ROW = ("providers", declare.Opt("provider", value=PROVIDER))
#: provider ids of the current store that mean "an OpenAI-compatible base URL"
_GATEWAY_IDS = (PROVIDER, "openai")

#: ``mcpServers``: the current store nests an entry under ``transport``, each editor's file
#: has it flat; a url entry with no type is sse
MCP_SHAPE = declare.McpShape(
    ("mcpServers",), stdio={"type": "stdio"}, http={"type": "streamableHttp"},
    sse={"type": "sse"}, nest="transport", disabled={"disabled": True},
    transport_of=lambda t: "http" if (t.get("type") or t.get("transportType"))
    in ("streamableHttp", "http") else "sse",
    note="Cline is not known to expand variables in its MCP settings")


class Cline(declare.Declared):
    """The table (both stores), and what it cannot say: the legacy store only with
    ``legacy: true``, the context window, one MCP entry nested under ``transport`` in
    the current store and flat in each editor's file; reading back picks the store in
    use (Cline's own choice of provider), and verify probes that store alone."""

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list[Patch]:
        patches = super().render(fleet, key, env)
        mcp = next((p for p in patches if p.path == self.file("mcp", env)), None)
        if mcp is not None:  # the legacy extension's own files: the same entries, flat
            patches += [Patch(editor_mcp_path(env, editor), "json",
                              {at: entry[MCP_SHAPE.nest] for at, entry in mcp.values.items()},
                              ID, secret=mcp.secret)
                        for editor in editors(self.cfg(fleet), env)]
        return patches

    def extra_render(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        window = fleet.context_window(fleet.model_for(self.cfg(fleet).model))
        if window:
            values["providers"][P + ("settings", "contextWindow")] = window
        if not self.cfg(fleet).legacy:
            values["state"].clear()
            values["secrets"].clear()

    def patch_fields(self, name: str, fleet: Any, env: ClientEnv) -> dict:
        if name != "providers":
            return {}
        return {"skeleton": {("version",): 1, ("modes",): {}},
                "volatile": {P + ("updatedAt",): now_iso()}}

    def locations(self, env: ClientEnv) -> tuple[list[Path], list[Path]]:
        dirs = [*cline_dirs(env)]
        dirs += [global_storage(env, editor) / EXTENSION_ID for editor in EDITOR_APPS]
        mcp = env.location("CLINE_MCP_SETTINGS_PATH")
        return dirs, [mcp] if mcp is not None else []

    # -- reading back -------------------------------------------------------------------

    def observe(self, env: ClientEnv) -> Observation:
        """What Cline's stores say: providers.json, the legacy store, the MCP files."""
        obs = Observation(ID, protocol="openai")
        path = self.file("providers", env)
        current = read_plain(path, "json", obs)
        providers = current.get("providers") if isinstance(current, dict) else None
        active_current = False
        if isinstance(providers, dict):
            last = current.get("lastUsedProvider")
            if last is None and len(providers) == 1:
                last = next(iter(providers))
            gateway_id = next((i for i in _GATEWAY_IDS if isinstance(providers.get(i), dict)),
                              None)
            if last in _GATEWAY_IDS and last in providers:
                gateway_id = last
            if gateway_id is not None and last in (None, gateway_id):
                active_current = True
                if gateway_id != PROVIDER:
                    obs.notes.append(f"{path}: the gateway is under provider id "
                                     f"{gateway_id!r}; taosync writes {PROVIDER!r} and makes "
                                     f"it lastUsedProvider")
                self.read_rows("providers", current, {"provider": gateway_id}, obs, env)
            elif last is not None:
                obs.provider = Seen(f"provider {last!r}", path, "lastUsedProvider")
                if gateway_id is not None:
                    obs.notes.append(f"{path}: an inactive {gateway_id!r} provider is "
                                     f"there too; not imported")

        state = read_plain(self.file("state", env), "json", obs)
        if isinstance(state, dict) and obs.provider is None:
            act = state.get("actModeApiProvider") or state.get("apiProvider")
            if act == "openai":  # the legacy store (and its older openAiModelId)
                self.read_rows("state", state, {}, obs, env,
                               (declare.slot("state", "openAiModelId"),))
                self.read_rows("secrets", read_plain(self.file("secrets", env), "json", obs),
                               {}, obs, env)
            elif act and not active_current:
                obs.provider = Seen(f"provider {act!r} (legacy extension store)",
                                    self.file("state", env), "actModeApiProvider")

        for mcp in [mcp_path(env), *(editor_mcp_path(env, e) for e in EDITOR_APPS)]:
            declare.read_mcp(MCP_SHAPE, read_plain(mcp, "json", obs), mcp, obs)
        return obs

    # -- verify -------------------------------------------------------------------------

    def at_run_time(self, obs: Observation, env: ClientEnv) -> None:
        """Cline reads one store, the one in use (the current one first): verify probes
        that store's key, model and headers alone."""
        if not obs.urls:
            return
        stores = {obs.urls[0].file, self.file("secrets", env)} \
            if obs.urls[0].file == self.file("state", env) else {obs.urls[0].file}
        obs.keys[:] = [s for s in obs.keys if s.file in stores]
        obs.headers[:] = [s for s in obs.headers if s.file in stores]
        obs.slots = {k: [s for s in v if s.file in stores] for k, v in obs.slots.items()}

    def read_key(self, obs: Observation, env: ClientEnv, where: str):
        """The store's own key: Cline reads its key only from these files."""
        if obs.keys:
            return (obs.keys[0], *stored_key(obs.keys[0], env))
        return None, None, f"{shown(obs.urls[0].file, env)}: Cline has no key next to " \
            f"{obs.urls[0].key}"


def _data(env: ClientEnv) -> Path:
    return cline_dirs(env)[1]


CLIENT = Cline(
    ID, "Cline", primary="providers",
    files={"providers": declare.File(lambda env: _data(env) / "settings" / "providers.json",
                                     "json"),
           "mcp": declare.File(mcp_path, "json"),
           "state": declare.File(lambda env: _data(env) / "globalState.json", "json"),
           "secrets": declare.File(lambda env: _data(env) / "secrets.json", "json")},
    bindings=(
        declare.fixed("providers", "lastUsedProvider", value=PROVIDER),
        declare.fixed("providers", *_ROW, "settings", "provider", value=PROVIDER),
        declare.key("providers", *_ROW, "settings", "apiKey"),
        declare.slot("providers", *_ROW, "settings", "model"),
        declare.url("providers", *_ROW, "settings", "baseUrl"),
        declare.headers("providers", *_ROW, "settings", "headers"),
        declare.fixed("providers", *_ROW, "tokenSource", value="manual"),
        # the legacy extension store (v3.89.2 keys)
        declare.fixed("state", "planModeApiProvider", value="openai"),
        declare.fixed("state", "actModeApiProvider", value="openai"),
        declare.url("state", "openAiBaseUrl"),
        declare.slot("state", "actModeOpenAiModelId"),
        declare.slot("state", "planModeOpenAiModelId"),
        declare.headers("state", "openAiHeaders"),
        declare.key("secrets", "openAiApiKey"),
    ),
    key_rule=declare.KeyRule((), "it reads the key from no environment variable or helper"),
    places={"url": f"providers.{PROVIDER}.settings.baseUrl",
            "slot": f"providers.{PROVIDER}.settings.model, or the legacy store's "
                    f"actModeOpenAiModelId"},
    mcp=MCP_SHAPE,
    mcp_file="mcp",
)
render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
