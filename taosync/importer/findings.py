"""What ``taosync import`` reports (findings, the proposal) and the small helpers its
merge uses: URL roots, route names for slots, strings inside values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from taosync.fleet.secrets import Secret


DEFAULT_KEY_ENV = "TAOTOKEN_API_KEY"
#: a slot → the route name it suggests (the last segment otherwise)
ROUTE_NAME = {"model": "main"}
_SLOT_LIST = re.compile(r"^([A-Za-z_]+)\[(.+)\]$")


@dataclass
class Finding:
    kind: str  # conflict | problem | note
    topic: str  # gateway | key | provider | mcp | headers | models | file | secret | …
    message: str
    #: side by side: {client, value, file, key}
    items: list[dict] = field(default_factory=list)
    chosen: str | None = None  # what the proposal uses, said in words

    def to_json(self) -> dict:
        return {"kind": self.kind, "topic": self.topic, "message": self.message,
                "items": self.items, "chosen": self.chosen}


@dataclass
class Proposal:
    data: dict | None  # the proposed fleet as plain data; None when nothing to propose
    text: str  # the proposed fleet.yaml ("" when data is None)
    findings: list[Finding]
    read: list[dict]  # every owned value read: {client, what, value, file, key}
    sources: dict[str, list[str]]  # client → files read
    key: dict  # {reference, env, found: [{client, file, key, redacted}], export_hint}
    gateway: dict  # {base_url, clients, others}
    #: each MCP secret made a reference: {server, key, env, reference, client, file,
    #: redacted, export_hint, already_set}
    mcp_secrets: list[dict] = field(default_factory=list)
    #: every literal key found, so output can be scrubbed of them (a safety net: nothing
    #: here is meant to print one)
    secrets: list[Secret] = field(default_factory=list, repr=False)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = secret.scrub(text)
        return text

    @property
    def conflicts(self) -> list[Finding]:
        return [f for f in self.findings if f.kind in ("conflict", "problem")]

    @property
    def exit_code(self) -> int:
        if self.data is None:
            return 1
        return 1 if self.conflicts else 0


# -- small helpers ----------------------------------------------------------------


def url_root(value: str, protocol: str) -> tuple[str | None, str]:
    """(gateway root or None, the URL without trailing slashes).

    None means an OpenAI-shaped URL that does not end in /v1: the gateway does not follow
    root + /v1, so the fleet needs ``openai_base_url`` with it exactly.
    """
    clean = value.strip().rstrip("/")
    if clean.endswith("/v1"):
        return clean[:-3], clean
    if protocol == "anthropic":
        return clean, clean
    return None, clean


def _route_name_for(slot: str) -> str:
    m = _SLOT_LIST.match(slot)
    if m:
        return m.group(2)
    last = slot.rsplit(".", 1)[-1]
    return ROUTE_NAME.get(last, last)


def _set_slot(cfg: dict, slot: str, route: str) -> None:
    m = _SLOT_LIST.match(slot)
    if m:
        items = cfg.setdefault(m.group(1), [])
        if route not in items:
            items.append(route)
    elif "." in slot:
        head, sub = slot.split(".", 1)
        cfg.setdefault(head, {})[sub] = route
    else:
        cfg[slot] = route


def _strings(value: Any, path: tuple = ()) -> Iterable[tuple[tuple, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, path + (i,))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, path + (k,))
