"""A stdio MCP server that writes the environment it was started with to a JSON file.

The real-client tests start it through a client (``python echo_mcp.py OUT``) to see what
the client really hands an MCP server: an ``env`` value as written, or expanded. It
answers ``initialize`` and ``tools/list`` (one no-op tool: some clients count a server
without tools as failed) and nothing else.
"""

import json
import os
import sys


def main(out: str) -> None:
    with open(out, "w") as fh:
        json.dump(dict(os.environ), fh)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue  # a notification
        method = msg.get("method")
        if method == "initialize":
            version = (msg.get("params") or {}).get("protocolVersion", "2024-11-05")
            result = {"protocolVersion": version, "capabilities": {"tools": {}},
                      "serverInfo": {"name": "echo", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "noop", "description": "does nothing",
                                 "inputSchema": {"type": "object", "properties": {}}}]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
