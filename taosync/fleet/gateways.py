"""Named gateways in plain fleet data: ``gateway:`` (the gateway named ``default``),
``gateways: {NAME: …}``, ``default_gateway: NAME`` and ``clients.X.gateway: NAME``.

The loader's checks (fleet/checks.py), the secrets step (fleet/resolve.py), the run-time
view (fleet/view.py) and the editing commands read them through these few answers, so
each means the same thing everywhere. Standard library only.
"""

from __future__ import annotations

from typing import Any

#: the name ``gateway:`` answers to
DEFAULT = "default"


def named(data: Any) -> dict[str, dict]:
    """Every gateway of the fleet by name, as written: ``gateway:`` as ``default``
    first, then ``gateways:`` in file order (a second ``default`` is an error the
    checks report; here ``gateway:`` wins)."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, dict] = {}
    own = data.get("gateway")
    if isinstance(own, dict):
        out[DEFAULT] = own
    more = data.get("gateways")
    if isinstance(more, dict):
        for name, gateway in more.items():
            if isinstance(name, str) and isinstance(gateway, dict):
                out.setdefault(name, gateway)
    return out


def paths(data: Any) -> dict[str, tuple]:
    """Gateway name → the YAML path its fields stand under (for located messages)."""
    out: dict[str, tuple] = {}
    if isinstance(data, dict) and isinstance(data.get("gateway"), dict):
        out[DEFAULT] = ("gateway",)
    more = data.get("gateways") if isinstance(data, dict) else None
    if isinstance(more, dict):
        for name, gateway in more.items():
            if isinstance(name, str) and isinstance(gateway, dict):
                out.setdefault(name, ("gateways", name))
    return out


def default_name(data: Any) -> str | None:
    """The gateway a client that names none uses: ``default_gateway``, else ``default``
    (``gateway:``), else the only named gateway (None: none can be told)."""
    if not isinstance(data, dict):
        return None
    chosen = data.get("default_gateway")
    if isinstance(chosen, str):
        return chosen
    table = named(data)
    if DEFAULT in table:
        return DEFAULT
    return next(iter(table)) if len(table) == 1 else None


def client_gateway(data: Any, client: str) -> str | None:
    """The gateway name client ``client``'s entry uses (its own, else the default)."""
    clients = data.get("clients") if isinstance(data, dict) else None
    entry = clients.get(client) if isinstance(clients, dict) else None
    own = entry.get("gateway") if isinstance(entry, dict) else None
    return own if isinstance(own, str) else default_name(data)


def with_default(data: dict) -> dict:
    """``data`` with ``gateway`` set to the default gateway (``default_gateway``, or the
    only named one when there is no ``gateway:``): a shallow copy; ``data`` itself is
    left as written."""
    name = default_name(data)
    table = named(data)
    if name is None or name not in table or table[name] is data.get("gateway"):
        return data
    return {**data, "gateway": table[name]}


def env_prefix(name: str) -> str:
    """The variable prefix ``taosync env`` exports a gateway other than the default one
    under: ``TAOTOKEN_<NAME>_`` (upper case, ``-`` as ``_``); the default gateway keeps
    the plain ``TAOTOKEN_``."""
    return "TAOTOKEN_" + name.upper().replace("-", "_") + "_"
