"""Claude Desktop (Anthropic's app; MCP servers only): ``claude_desktop_config.json``.

Claude Desktop takes no custom gateway, but starts the local MCP servers listed in
``claude_desktop_config.json``: ``~/Library/Application Support/Claude/`` on macOS,
``%APPDATA%\\Claude\\`` on Windows. Linux has **no official build**; the community builds
read ``~/.config/Claude/`` (``$XDG_CONFIG_HOME``), which taosync writes there. Its
``mcpServers.<name>`` has ``command``/``args``/``env`` (no working-directory field: a
``cwd`` is left out, with a warning), and the docs describe no variable expansion in the
file, so MCP secrets are written inline (0600) even under ``secrets: reference``, with a
warning.

Remote servers: the file takes **stdio servers only**; a remote server is added in the
app (Settings → Connectors). taosync leaves an http/sse server out of this file, with a
warning that names it. It does not wrap one in ``npx mcp-remote <url> --header …``: that
would download a third-party package on every start and put the server's header secrets
on a command line, where other users of the machine can read them (``ps``).

Cannot run here (a GUI app): written from the docs in :data:`SOURCES`, not a binary.
"""

from __future__ import annotations

from taosync.clients import declare

SOURCES_CITED = (
    ("https://modelcontextprotocol.io/docs/develop/connect-local-servers",
     "Claude Desktop reads claude_desktop_config.json from ~/Library/Application "
     "Support/Claude/ (macOS) or %APPDATA%\\Claude\\ (Windows); mcpServers.<name> takes "
     "command, args and env of a local (stdio) server"),
    ("https://support.claude.com/en/articles/11175166-getting-started-with-custom-"
     "connectors-using-remote-mcp",
     "remote MCP servers are added as custom connectors in Settings → Connectors, not "
     "through the configuration file"),
)
CLIENT = declare.McpOnly.app(
    "claude-desktop", "Claude Desktop",
    lambda env: env.app_data() / "Claude" / "claude_desktop_config.json", "json",
    declare.McpShape(("mcpServers",), cwd=False,
                     note="Claude Desktop's docs describe no variable expansion in its file",
                     no_remote="remote servers are added in its Settings → Connectors"),
    sources=SOURCES_CITED, mcp_readme="inline (0600), with a warning: its docs describe "
    "no variable expansion in the file.",
    where="`~/Library/Application Support/Claude/claude_desktop_config.json` (macOS), "
    "`%APPDATA%\\Claude\\claude_desktop_config.json` (Windows), "
    "`~/.config/Claude/claude_desktop_config.json` (Linux: no official build); "
    "stdio servers only")
(ID, TITLE, SUMMARY, BINARY, TARGETS, OWNED_FILES, OPTIONS, LOCATION_VARS, KEY_REFERENCE,
 MCP_REFERENCE, INSTALL, GATEWAY, SOURCES) = CLIENT.constants()
render, probes, on_disk, observe, locations = CLIENT.functions()
