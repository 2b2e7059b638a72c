"""opencode (``opencode-ai`` 1.18.33): ``~/.config/opencode/opencode.json`` (JSONC).

Facts (clients.md §6) and everything the fork Kilo shares: :mod:`opencode_family`.
opencode also merges ``$OPENCODE_CONFIG`` and ``$OPENCODE_CONFIG_CONTENT`` over the
global file (then project files), so taosync warns when either is set.
"""

from __future__ import annotations

from taosync.clients.opencode_family import Family, Flavor

CLIENT = Family.of(Flavor(
    id="opencode", title="opencode", version="`opencode-ai` 1.18.33", dirname="opencode",
    files=("opencode.jsonc", "opencode.json"), schema_url="https://opencode.ai/config.json",
    overrides=("OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT"), binary="opencode",
    install=("npm", "opencode-ai@1.18.33", ""),
    summary="opencode (OpenAI chat, provider entry): model, small_model, provider_id."))
globals().update(CLIENT.exports())  # FLAVOR, ID, TITLE, …, render, observe, …
