"""The contract of a client module, as a type: what the engine, import, verify and doctor
may read from any client the registry names.

Every member is required — there are no optional hooks to look for with ``getattr``: a
client with nothing to say to ``doctor`` says so with :func:`no_findings`, one with no MCP
sets ``MCP = False``. ``tests/clients/test_registry_contract.py`` holds every registered
module to it at run time; the type checker holds the code that uses it.
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
    MCP: bool
    #: fleet keys the client cannot work without, with why (checked where it is enabled)
    REQUIRES: Mapping[str, str]

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list[Patch]: ...

    def probes(self, fleet: Any, key: Any, env: ClientEnv) -> list[ProbeSpec]: ...

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk: ...

    def observe(self, env: ClientEnv) -> Observation: ...

    def locations(self, env: ClientEnv) -> tuple[list[Path], list[Path]]: ...

    def doctor(self, fleet: Any, key: Any, environ: Mapping[str, str]) -> list[Finding]: ...


#: every member a client module must define (tests compare modules against it)
MEMBERS = tuple(sorted(name for name in ClientPlugin.__annotations__) + sorted(
    ("render", "probes", "on_disk", "observe", "locations", "doctor")))


def no_findings(fleet: Any, key: Any, environ: Mapping[str, str]) -> list[Finding]:
    """``doctor`` of a client with no environment pitfalls of its own."""
    return []
