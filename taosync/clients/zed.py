"""Zed (the editor; MCP servers only): ``context_servers`` in its ``settings.json``.

Zed's agent takes MCP servers ("context servers") from its user settings,
``~/.config/zed/settings.json`` on Linux (``$XDG_CONFIG_HOME``) and macOS,
``%APPDATA%\\Zed\\settings.json`` on Windows (``crates/paths``: ``config_dir``). The file is
JSON with comments and trailing commas, full of the user's own settings: taosync owns
only ``context_servers.<name>`` and keeps every other byte. An entry is in the current,
flat shape — ``{"command", "args", "env"}`` for a stdio server, ``{"url", "headers"}``
for a remote one (``ContextServerSettingsContent`` is an untagged enum of ``Stdio``,
``Http`` and ``Extension``) — not the legacy ``{"source": "custom", …}`` /
``{"command": {"path", "args", "env"}}`` forms. Zed has no working-directory field (a
``cwd`` is left out, with a warning) and its docs describe no variable expansion there, so
MCP secrets are written inline (the file then 0600), with a warning under ``secrets:
reference``.

Cannot run here (a GUI app): written from the docs and source in :data:`SOURCES`, not a
binary.
"""

from __future__ import annotations

from pathlib import Path

from taosync.clients import declare
from taosync.clients.base import ClientEnv


def settings(env: ClientEnv) -> Path:
    """Zed's ``config_dir``: ``~/.config/zed`` on macOS too, ``%APPDATA%\\Zed``."""
    if env.platform == "darwin":
        return env.home / ".config" / "zed" / "settings.json"
    return env.app_data() / ("Zed" if env.platform == "win32" else "zed") / "settings.json"


CLIENT = declare.McpOnly.app(
    "zed", "Zed", settings, "jsonc",
    declare.McpShape(("context_servers",), cwd=False,
                     note="Zed's docs describe no variable expansion in context_servers"),
    where="`~/.config/zed/settings.json` (Linux, `$XDG_CONFIG_HOME`; macOS), "
    "`%APPDATA%\\Zed\\settings.json` (Windows); JSONC, every other setting kept",
    mcp_readme="inline (0600), with a warning: Zed's docs describe no variable "
    "expansion in `context_servers`.",
    sources=(
        ("https://zed.dev/docs/ai/mcp",
         "custom servers go under context_servers in settings.json: {command, args, env} "
         "for a local server, {url, headers} for a remote one"),
        ("https://github.com/zed-industries/zed/blob/main/crates/settings_content/src/"
         "project.rs",
         "ContextServerSettingsContent: untagged Stdio {enabled, remote, command, args, env, "
         "timeout} | Http {enabled, url, headers, timeout, oauth} | Extension"),
        ("https://github.com/zed-industries/zed/blob/main/crates/paths/src/paths.rs",
         "config_dir: %APPDATA%\\Zed on Windows, $XDG_CONFIG_HOME/zed on Linux, "
         "~/.config/zed elsewhere; settings_file is config_dir/settings.json"),
    ))
(ID, TITLE, SUMMARY, BINARY, TARGETS, OWNED_FILES, OPTIONS, LOCATION_VARS, KEY_REFERENCE,
 MCP_REFERENCE, INSTALL, GATEWAY, SOURCES) = CLIENT.constants()
render, probes, on_disk, observe, locations = CLIENT.functions()
