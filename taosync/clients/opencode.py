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
    summary="opencode (OpenAI chat, provider entry): model, small_model, provider_id."))
FLAVOR = CLIENT.flavor
ID, TITLE, SUMMARY, BINARY, LOCATION_VARS, OPTIONS, TARGETS, OWNED_FILES = CLIENT.constants()

#: README "Secrets": how `secrets: reference` keeps the key off disk
KEY_REFERENCE = (
    "`options.apiKey: \"{env:NAME}\"` for `${env:NAME}`, `\"{file:/abs/path}\"` for "
    "`${file:PATH}` (the client substitutes them); `${cmd:}`/`${shell:}` fall back to "
    "inline (0600) with a warning.")
#: README "MCP secrets": how `secrets: reference` writes MCP secrets
MCP_REFERENCE = (
    "`${env:NAME}` → `{env:NAME}`, `${file:PATH}` → `{file:/abs/path}` anywhere in the "
    "value (the client substitutes them in its whole file), and `${gateway.key}` → the "
    "key's own reference; `${cmd:}`/`${shell:}` inline (0600), with a warning.")
#: the real client this module was proven with: (registry, package spec, note)
INSTALL = ("npm", "opencode-ai@1.18.33", "")
render, probes, on_disk, observe, locations = CLIENT.functions()
