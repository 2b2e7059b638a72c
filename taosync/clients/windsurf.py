"""Windsurf (Codeium's editor; MCP servers only): ``~/.codeium/windsurf/mcp_config.json``.

Windsurf's Cascade takes no custom gateway a file can set, but reads its MCP servers from
``~/.codeium/windsurf/mcp_config.json`` (under ``%USERPROFILE%`` on Windows):
``mcpServers.<name>`` with ``command``/``args``/``env`` for a stdio server and, unlike
Cursor, ``serverUrl`` (``url`` is read too) + ``headers`` for a remote one (streamable
HTTP or SSE). It interpolates ``${env:NAME}`` in ``command``, ``args``, ``env``,
``serverUrl``, ``url`` and ``headers``, which ``secrets: reference`` uses for MCP
secrets. Its docs name no working-directory field: a server's ``cwd`` is left out, with a
warning.

Cannot run here (a GUI app): written from the docs in :data:`SOURCES`, not a binary.
"""

from __future__ import annotations

from taosync.clients import declare

CLIENT = declare.McpOnly.app(
    "windsurf", "Windsurf",
    lambda env: env.home / ".codeium" / "windsurf" / "mcp_config.json", "json",
    declare.McpShape(("mcpServers",), url_field={"http": "serverUrl", "sse": "serverUrl"},
                     cwd=False, by_reference=declare.env_colon,
                     note="Windsurf interpolates only ${env:NAME} in mcp_config.json"),
    sources=(("https://docs.windsurf.com/windsurf/cascade/mcp",
              "~/.codeium/windsurf/mcp_config.json lists the servers under mcpServers; a "
              "remote HTTP server needs serverUrl or url; the file interpolates environment "
              "variables (${env:NAME}) in command, args, env, serverUrl, url and headers"),),
    mcp_readme="`${env:NAME}` kept as `${env:NAME}` (Windsurf interpolates it in `env` "
    "and `headers`); other references inline (0600), with a warning.",
    where="`~/.codeium/windsurf/mcp_config.json` (every OS)")
(ID, TITLE, SUMMARY, BINARY, TARGETS, OWNED_FILES, OPTIONS, LOCATION_VARS, KEY_REFERENCE,
 MCP_REFERENCE, INSTALL, GATEWAY, SOURCES) = CLIENT.constants()
render, probes, on_disk, observe, locations = CLIENT.functions()
