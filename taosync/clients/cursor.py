"""Cursor (the editor; MCP servers only): ``~/.cursor/mcp.json``.

Cursor takes no custom gateway a file can set, but reads its global MCP servers from
``~/.cursor/mcp.json`` (``%USERPROFILE%\\.cursor\\mcp.json`` on Windows; a project's
``.cursor/mcp.json`` is merged over it): ``mcpServers.<name>`` with ``command``/``args``/
``env`` for a stdio server, ``url`` + ``headers`` for a remote one (streamable HTTP or SSE
at the same ``url``). It expands ``${env:NAME}`` in ``command``, ``args``, ``env``, ``url``
and ``headers``, which ``secrets: reference`` uses for MCP secrets. Its docs name no
working-directory field: a server's ``cwd`` is left out, with a warning.

Cannot run here (a GUI app): written from the docs in :data:`SOURCES`, not a binary.
"""

from __future__ import annotations

from taosync.clients import declare

CLIENT = declare.McpOnly.app(
    "cursor", "Cursor", lambda env: env.home / ".cursor" / "mcp.json", "json",
    declare.McpShape(("mcpServers",), cwd=False, by_reference=declare.env_colon,
                     note="Cursor expands only ${env:NAME} in mcp.json"),
    where="`~/.cursor/mcp.json` (every OS)",
    mcp_readme="`${env:NAME}` kept as `${env:NAME}` (Cursor expands it in `env` and "
    "`headers`); other references inline (0600), with a warning.",
    sources=(("https://cursor.com/docs/mcp",
              "global servers in ~/.cursor/mcp.json under mcpServers: command/args/env for "
              "stdio, url (+ headers) for streamable HTTP and SSE; ${env:NAME}, ${userHome} "
              "and ${workspaceFolder} are interpolated in command, args, env, url and "
              "headers"),))
(ID, TITLE, SUMMARY, BINARY, TARGETS, OWNED_FILES, OPTIONS, LOCATION_VARS, KEY_REFERENCE,
 MCP_REFERENCE, INSTALL, GATEWAY, SOURCES) = CLIENT.constants()
render, probes, on_disk, observe, locations = CLIENT.functions()
