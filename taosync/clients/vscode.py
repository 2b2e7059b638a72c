"""VS Code (GitHub Copilot's agent mode; MCP servers only): the user profile's ``mcp.json``.

VS Code takes no custom gateway for Copilot a file can set, but reads the user's MCP
servers from ``mcp.json`` in its user directory: ``~/.config/Code/User/mcp.json`` on Linux
(``$XDG_CONFIG_HOME``), ``~/Library/Application Support/Code/User/mcp.json`` on macOS,
``%APPDATA%\\Code\\User\\mcp.json`` on Windows. The file is JSON with comments; its
top-level ``servers.<name>`` has ``type: stdio`` + ``command``/``args``/``env``, or
``type: http`` / ``type: sse`` + ``url``/``headers``. The docs name no working-directory
field (a ``cwd`` is left out, with a warning).

Secrets: VS Code resolves its predefined variables in the server configuration,
``${env:NAME}`` among them, and ``${input:id}`` (an ``inputs`` entry it prompts for once
and keeps in its own secret storage). ``secrets: reference`` writes ``${env:NAME}``:
the value stays the one variable the fleet names (so ``taosync env`` exports it and a key
rotation reaches VS Code); an ``${input:…}`` would make VS Code ask the user for a copy
taosync could neither set nor rotate.

Cannot run here (a GUI app): written from the docs in :data:`SOURCES`, not a binary.
"""

from __future__ import annotations

from taosync.clients import declare

#: the top-level ``servers`` map, each entry typed by its transport
SHAPE = declare.McpShape(("servers",), stdio={"type": "stdio"}, http={"type": "http"},
                         sse={"type": "sse"}, cwd=False, by_reference=declare.env_colon,
                         note="VS Code resolves only ${env:NAME} here")
CLIENT = declare.McpOnly.app(
    "vscode", "VS Code", lambda env: env.app_data() / "Code" / "User" / "mcp.json", "jsonc",
    SHAPE, mcp_readme=(
        "`${env:NAME}` kept as `${env:NAME}` (VS Code resolves it; not `${input:…}`, a copy "
        "VS Code would prompt for and keep); other references inline (0600), with a warning."),
    where=("`~/.config/Code/User/mcp.json` (Linux, `$XDG_CONFIG_HOME`), "
           "`~/Library/Application Support/Code/User/mcp.json` (macOS), "
           "`%APPDATA%\\Code\\User\\mcp.json` (Windows); JSONC"),
    sources=(
        ("https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
         "mcp.json in the workspace (.vscode/mcp.json) or the user profile; top-level "
         "\"servers\" (and \"inputs\"); stdio: type, command, args, env, envFile; http/sse: "
         "type, url, headers; predefined variables may be used in the server configuration"),
        ("https://code.visualstudio.com/docs/reference/variables-reference",
         "${env:Name} is the value of an environment variable"),
    ))
(ID, TITLE, SUMMARY, BINARY, TARGETS, OWNED_FILES, OPTIONS, LOCATION_VARS, KEY_REFERENCE,
 MCP_REFERENCE, INSTALL, GATEWAY, SOURCES) = CLIENT.constants()
render, probes, on_disk, observe, locations = CLIENT.functions()
