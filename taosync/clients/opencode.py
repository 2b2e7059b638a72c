"""opencode (``opencode-ai`` 1.18.33): ``~/.config/opencode/opencode.json`` (JSONC).

Facts (clients.md §6) and everything the fork Kilo shares: :mod:`opencode_family`.
opencode also merges ``$OPENCODE_CONFIG`` and ``$OPENCODE_CONFIG_CONTENT`` over the
global file (then project files), so taosync warns when either is set.
"""

from __future__ import annotations

import sys
from pathlib import Path

from taosync.clients import opencode_family as family
from taosync.clients.base import ClientEnv, Observation, OnDisk, Patch, ProbeSpec
from taosync.fleet.secrets import Secret

FLAVOR = family.Flavor(
    id="opencode", title="opencode", version="`opencode-ai` 1.18.33", dirname="opencode",
    files=("opencode.jsonc", "opencode.json"), schema_url="https://opencode.ai/config.json",
    overrides=("OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT"))

ID = FLAVOR.id
TITLE = FLAVOR.title
SUMMARY = "opencode (OpenAI chat, provider entry): model, small_model, provider_id."
LOCATION_VARS = ("XDG_CONFIG_HOME",)
BINARY = "opencode"  # taosync doctor shows its --version
OPTIONS = family.options()
TARGETS = family.targets(FLAVOR)
#: README's "Files taosync owns" rows (python -m taosync.clients.readme)
OWNED_FILES = family.owned_files(FLAVOR)


def locations(env: ClientEnv) -> tuple[list[Path], list[Path]]:
    """(directories, single files) this client's files may be in (rollback/recovery)."""
    return family.locations(FLAVOR, env)


def render(fleet, key: Secret, env: ClientEnv) -> list[Patch]:
    return family.render(FLAVOR, fleet, key, env)


def probes(fleet, key: Secret, env: ClientEnv) -> list[ProbeSpec]:
    return family.probes(FLAVOR, fleet, key, env)


def on_disk(fleet, key: Secret, env: ClientEnv) -> OnDisk:
    return family.on_disk(FLAVOR, sys.modules[__name__], fleet, key, env)


def observe(env: ClientEnv) -> Observation:
    return family.observe(FLAVOR, env)
