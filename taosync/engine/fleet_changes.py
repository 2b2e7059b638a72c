"""Which fleet.yaml keys an apply changed, for ``taosync log``.

The state keeps a snapshot of the fleet as the last apply record saw it: every fleet key
(``gateway.base_url``, ``clients.codex.options.x``; a whole entry for ``models.*``,
``routes.*`` and ``mcp_servers.*``) → the keyed hash (HMAC, the state's ``hmac.key``) of
its value — never a value, so no secret is stored and none can be shown. The next apply
compares its own snapshot with it and records the names of the keys that differ. The
resolved key is one more entry, shown as "key rotated" when it changes while its
reference stays. Standard library only.
"""

from __future__ import annotations

from typing import Any

#: the snapshot's entry for the resolved key (its reference is ``gateway.key``)
RESOLVED_KEY = "(key)"
#: fleet sections whose entries are one unit each: a route, a model, an MCP server
UNITS = ("models", "routes", "mcp_servers")


def snapshot(data: dict, *, key_value: str | None, key_literal: bool,
             hmac_key: bytes) -> dict[str, str]:
    """Fleet key → keyed hash of its value, in document order. ``data`` is the checked
    fleet (includes merged); a literal key is left out under ``gateway.key`` (the
    resolved-key entry covers it)."""
    from taosync.fleet.secrets import value_hash

    out: dict[str, str] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        unit = len(path) == 2 and path[0] in UNITS
        if isinstance(node, dict) and node and not unit:
            for k, v in node.items():
                walk(v, (*path, str(k)))
            return
        if path == ("gateway", "key") and key_literal:
            return
        out[".".join(path)] = value_hash(hmac_key, node)

    walk(data, ())
    if key_value is not None:
        out[RESOLVED_KEY] = value_hash(hmac_key, key_value)
    return out


def changes(before: dict[str, str] | None, after: dict[str, str]) -> list[str] | None:
    """The fleet keys that differ, as ``log`` shows them: ``routes.deep``,
    ``mcp_servers.y (added)``, ``models.z (removed)``, ``key rotated``. None when there is
    no earlier snapshot to compare with (the first apply, or a state from before taosync
    kept one)."""
    if not before:
        return None
    out: list[str] = []
    for name, digest in after.items():
        if name == RESOLVED_KEY:
            continue
        if name not in before:
            out.append(f"{name} (added)")
        elif before[name] != digest:
            out.append(name)
    out += [f"{name} (removed)" for name in before if name not in after and name != RESOLVED_KEY]
    if RESOLVED_KEY in before and RESOLVED_KEY in after \
            and before[RESOLVED_KEY] != after[RESOLVED_KEY]:
        out.append("key rotated")
    return out
