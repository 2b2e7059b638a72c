"""``profiles:`` — isolated instances of the fleet (docs/profiles.md).

A profile is an overlay: ``profiles: {NAME: {gateway, routes, default_route, clients,
mcp_servers, …}}``. A run under ``--profile NAME`` merges the entry onto the fleet's data
before the schema and the cross-checks see it, key by key as ``include:`` merges a base
fleet (mappings merge deeply, anything else is replaced), so everything after the load —
render, plan, verify — sees one ordinary fleet. ``gateway: NAME`` picks one of the
fleet's gateways (the single ``gateway:`` is the one named ``default``) and becomes the
fleet's ``default_gateway``: every client that names no gateway of its own talks to it.

Only the names are known here; where a profile's files go is the clients' business
(taosync/clients/isolation.py), what chooses one the settings' (``--profile``).
"""

from __future__ import annotations

import re
from typing import Any

from taosync.errors import BadInput

#: a profile's name is a directory name (its root and state live under it) and a suffix
#: of a shell alias (``claude-work``)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)
#: the fleet keys a profile may set (the model's Profile has the same fields)
OVERLAY_KEYS = ("gateway", "models", "routes", "default_route", "secrets", "clients",
                "mcp_servers", "verify", "routing")


def check_name(name: str, where: str) -> None:
    """Bad input unless ``name`` may name a profile (it becomes a directory name)."""
    if not _NAME.match(name):
        raise BadInput(f"{where}: {name!r} is no profile name (letters, digits, '-' and '_', "
                       "starting with a letter or digit, at most 64)")


def declared(data: dict) -> list[str]:
    """The profile names a fleet's data declares, in file order."""
    profiles = data.get("profiles")
    return list(profiles) if isinstance(profiles, dict) else []


def gateway_names(data: dict) -> list[str]:
    """The gateways a profile may name: ``default`` (the single ``gateway:``) and each of
    ``gateways:`` (fleet/gateways.py)."""
    from taosync.fleet.gateways import named

    return list(named(data))


def overlay(data: dict, name: str, report, merge) -> dict:
    """``data`` with profile ``name`` merged onto it (in place; also returned).

    ``report(path, message)`` reports a located error; ``merge(into, over, path)`` is the
    include merge (fleet/includes.py). An unknown profile or gateway is reported and the
    data is left as it was.
    """
    names = declared(data)
    if name not in names:
        listed = ", ".join(names) if names else "none (add a profiles: section)"
        report(("profiles",) if "profiles" in data else (),
               f"no profile {name!r} in this fleet (--profile, $TAOSYNC_PROFILE); its "
               f"profiles: {listed}")
        return data
    entry: Any = data["profiles"][name]
    if entry is None:
        return data
    if not isinstance(entry, dict):
        return data  # the schema says what is wrong with it
    entry = dict(entry)
    gateway = entry.pop("gateway", None)
    if gateway is not None:
        known = gateway_names(data)
        if not isinstance(gateway, str) or gateway not in known:
            report(("profiles", name, "gateway"),
                   f"profile {name!r} names gateway {gateway!r}, which this fleet does not "
                   f"have; its gateways: {', '.join(known) or 'none'}")
            return data
        data["default_gateway"] = gateway  # clients naming no gateway of their own
    unknown = [k for k in entry if k not in OVERLAY_KEYS]
    if unknown:
        return data  # the schema names them, located in the profile
    merge(data, entry, ())
    return data


def written_at(entry: dict, name: str, path: tuple) -> tuple:
    """Where ``path`` of the merged fleet was written: under ``profiles.NAME`` when the
    profile's entry set it (the whole path, or a prefix that replaced what was below),
    else ``path`` itself."""
    node: Any = entry
    for i, part in enumerate(path):
        if not isinstance(node, dict) or part not in node or (i == 0 and part == "gateway"):
            return path
        node = node[part]
        if not isinstance(node, dict):  # a value the profile replaced whole
            return ("profiles", name, *path)
    return ("profiles", name, *path)
