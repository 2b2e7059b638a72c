"""opencode (``opencode-ai`` 1.18.33): ``~/.config/opencode/opencode.json`` (JSONC).

Facts (clients.md §6) and everything the fork Kilo shares: :mod:`opencode_family`.
opencode also merges ``$OPENCODE_CONFIG`` and ``$OPENCODE_CONFIG_CONTENT`` over the
global file (then project files), so taosync warns when either is set.
"""

from __future__ import annotations

from taosync.clients import opencode_family as family

CLIENT = family.Family.of(family.Flavor(
    id="opencode", title="opencode", version="`opencode-ai` 1.18.33", dirname="opencode",
    files=("opencode.jsonc", "opencode.json"), schema_url="https://opencode.ai/config.json",
    overrides=("OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT")))
FLAVOR = CLIENT.flavor

ID = CLIENT.id
TITLE = CLIENT.title
SUMMARY = "opencode (OpenAI chat, provider entry): model, small_model, provider_id."
LOCATION_VARS = ("XDG_CONFIG_HOME",)
BINARY = "opencode"  # taosync doctor shows its --version
OPTIONS = family.options()
TARGETS = family.targets(FLAVOR)
#: README's "Files taosync owns" rows (python -m taosync.clients.readme)
OWNED_FILES = family.owned_files(FLAVOR)

render, probes, on_disk, observe, locations = (CLIENT.render, CLIENT.probes, CLIENT.on_disk,
                                               CLIENT.observe, CLIENT.locations)
