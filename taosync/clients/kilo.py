"""Kilo CLI (``@kilocode/cli`` 7.7.7, an opencode fork): ``~/.config/kilo/kilo.json`` (JSONC),
or the file of its directory Kilo reads last.

Facts (clients.md §8): opencode's schema, ``{env:}``/``{file:}``, ``<provider>/<id>``
naming and ``mcp`` block (:mod:`opencode_family`), but its own directory: Kilo does not
read ``~/.config/opencode/opencode.json`` (alone, it uses Kilo's own gateway and hangs).
In its own directory it reads, lowest first, ``config.json``, ``kilo.json``, ``kilo.jsonc``,
``opencode.json``, ``opencode.jsonc`` (proven with 7.7.7: a model set in a later one wins),
so taosync writes into the last of those the user has (clients.md §8 says only "kilo.json
or opencode.json").
On its first run it adds ``$schema`` and ``permission`` ("migrated bash permission"):
neither is owned. ``$KILO_CONFIG`` and ``$KILO_CONFIG_CONTENT`` are merged over the
global file, so taosync warns when either is set.
"""

from __future__ import annotations

from taosync.clients.opencode_family import Family, Flavor

CLIENT = Family.of(Flavor(
    id="kilo", title="Kilo CLI", version="`@kilocode/cli` 7.7.7", dirname="kilo",
    files=("opencode.jsonc", "opencode.json", "kilo.jsonc", "kilo.json"),
    schema_url="https://app.kilo.ai/config.json",
    overrides=("KILO_CONFIG", "KILO_CONFIG_CONTENT"), binary="kilo",
    install=("npm", "@kilocode/cli@7.7.7", ""),
    summary="Kilo CLI (opencode fork; OpenAI chat): model, small_model, provider_id."))
globals().update(CLIENT.exports())  # FLAVOR, ID, TITLE, …, render, observe, …
