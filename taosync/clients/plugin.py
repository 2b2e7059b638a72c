"""The contract of a client module, as a type: what the engine, import, verify and doctor
may read from any client the registry names.

Every member is present on every client the registry hands out — there are no optional
hooks to look for with ``getattr``. A module may leave out only what :data:`DEFAULTS`
gives (no single-file location variables, no required fleet keys, MCP spoken, nothing
for ``doctor``); the registry fills those in when it loads the module, so the defaults
live here, once. ``tests/clients/test_plugin_contract.py`` holds every registered client
to the whole contract; the type checker holds the code that uses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from taosync.clients.base import ClientEnv, Finding, Observation, OnDisk, Option, ProbeSpec
from taosync.engine.patch import Patch


@runtime_checkable
class ClientPlugin(Protocol):
    """One client: its declarations (upper case) and what is derived from them."""

    ID: str
    TITLE: str
    SUMMARY: str
    BINARY: str
    TARGETS: Sequence[str]
    OWNED_FILES: Sequence[tuple[str, str, str]]
    OPTIONS: Sequence[Option]
    LOCATION_VARS: Sequence[str]
    LOCATION_FILES: Sequence[str]
    #: how a profile runs its own instance (docs/profiles.md): variable → the directory it
    #: names under the profile's root (``HOME``: a separate home); empty: no profiles
    ISOLATION: Mapping[str, str]
    MCP: bool
    #: fleet keys the client cannot work without, with why (checked where it is enabled)
    REQUIRES: Mapping[str, str]
    #: README's secrets tables: how ``secrets: reference`` keeps the key off disk, and
    #: writes MCP secrets ("" for a client with no MCP)
    KEY_REFERENCE: str
    MCP_REFERENCE: str
    #: the real client the module was proven with: (npm | pypi, what npm or pip is given
    #: (requirements separated by spaces), note); `python -m taosync.dev install-clients`
    #: installs it for the real-client tests. None for an app proven from its docs
    #: (``SOURCES`` then names them)
    INSTALL: tuple[str, str, str] | None
    #: False for an app that takes no custom gateway, only MCP servers (Cursor): its
    #: fleet entry has no slot and verify has nothing to probe for it
    GATEWAY: bool
    #: (URL, what it says) of each document a client proven from docs follows
    SOURCES: Sequence[tuple[str, str]]

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list[Patch]: ...

    def probes(self, fleet: Any, key: Any, env: ClientEnv) -> list[ProbeSpec]: ...

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk: ...

    def observe(self, env: ClientEnv) -> Observation: ...

    def locations(self, env: ClientEnv) -> tuple[list[Path], list[Path]]: ...

    def doctor(self, fleet: Any, key: Any, environ: Mapping[str, str]) -> list[Finding]: ...

    def key_variables(self, fleet: Any, env: ClientEnv) -> dict[str, bool]: ...


#: every member a client module must define (tests compare modules against it)
MEMBERS = tuple(sorted(name for name in ClientPlugin.__annotations__) + sorted(
    ("render", "probes", "on_disk", "observe", "locations", "doctor", "key_variables")))


def no_findings(fleet: Any, key: Any, environ: Mapping[str, str]) -> list[Finding]:
    """``doctor`` of a client with no environment pitfalls of its own."""
    return []


def no_key_variables(fleet: Any, env: ClientEnv) -> dict[str, bool]:
    """``key_variables`` of a client that reads its key from no environment variable."""
    return {}


#: what a client module may leave out, and what it then means
DEFAULTS: dict[str, Any] = {
    "LOCATION_VARS": (),  # no variable moves its files (they sit under the home)
    "LOCATION_FILES": (),  # no variable names a single file of it
    "ISOLATION": {},  # no way to run an isolated instance: profiles leave it out
    "REQUIRES": {},  # no fleet key beyond the gateway's is needed
    # it reads MCP servers (False: the fleet's are not written for it); a declaration
    # says so itself (no McpShape: no MCP)
    "MCP": True,
    "MCP_REFERENCE": "",  # nothing to say of MCP secrets (a client with no MCP)
    "GATEWAY": True,  # it talks to the gateway (False: an app that takes only MCP servers)
    "SOURCES": (),  # proven by its binary (INSTALL), not from documents
    "doctor": no_findings,  # no environment pitfalls of its own
    # the variables it reads the key from: its declaration's (declare.Declared.key_variables)
    # when it is one, else none
    "key_variables": no_key_variables,
}


def completed(module: Any) -> ClientPlugin:
    """``module`` with :data:`DEFAULTS` filled in where it declares nothing, and what its
    declaration (``CLIENT``, a :class:`~taosync.clients.declare.Declared`) already says
    taken from there: ``TITLE``, ``MCP`` (an McpShape or none), ``key_variables``; a
    module missing anything else is refused by name (TypeError)."""
    declared: Any = getattr(module, "CLIENT", None)
    if not hasattr(module, "key_variables") and hasattr(declared, "key_variables"):
        module.key_variables = declared.key_variables
    if not hasattr(module, "MCP") and hasattr(declared, "mcp"):
        module.MCP = declared.mcp is not None
    if not hasattr(module, "TITLE") and hasattr(declared, "title"):
        module.TITLE = declared.title  # the declaration names the client once
    for name, value in DEFAULTS.items():
        if not hasattr(module, name):
            setattr(module, name, value)
    missing = [name for name in MEMBERS if not hasattr(module, name)]
    if missing:
        raise TypeError(f"client module {getattr(module, '__name__', module)!r} lacks "
                        f"{', '.join(missing)} (see taosync/clients/plugin.py)")
    return module  # checked member by member above
