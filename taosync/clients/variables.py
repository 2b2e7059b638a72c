"""The environment variables taosync's files leave the key (and MCP secrets) to.

Under ``secrets: reference`` most clients read the key from a variable when they run
(Codex's ``env_key``, gptme's ``api_key_env``, Claude Code's ``apiKeyHelper`` printing it,
aider's ``OPENAI_API_KEY``), and some read a variable before the key their files hold
(gptme's and Vibe's in inline mode, Gemini CLI's ``GEMINI_API_KEY``). Each client declares
which (``key_variables``: from its :class:`~taosync.clients.declare.KeyRule` and bindings);
this module gathers them over the enabled clients, once, for two uses:

* :func:`notes` — what ``apply``, ``plan``, ``status`` and ``verify`` say: one line naming
  every variable a client needs that is not set here (what the user must do, once,
  grouped), and one per variable set here to another key than the fleet's (a stale
  export after a rotation: the clients named would send it). Values are never shown;
  they are compared in constant time (:func:`~taosync.clients.base.same_key`).
* :func:`exported` — what ``taosync env --with-key`` exports so that
  ``eval "$(taosync env --with-key)"`` in a shell start-up makes every client work: the key
  under each of those variables, and each MCP secret a client's files refer to by name.
"""

from __future__ import annotations

from typing import Any

from taosync.clients.base import ClientEnv, same_key

#: how the user puts every variable right at once
FIX = 'eval "$(taosync env --with-key)"'


def gather(fleet: Any, env: ClientEnv, key: Any = None,
           keys: dict[str, Any] | None = None) -> dict[str, dict[str, bool]]:
    """variable → {client title: True when its files leave the key to the variable,
    False when the variable, set, wins over the key its files hold}. Each client is
    asked on its own gateway; ``keys`` (given) gets variable → the key of the first
    client reading it (``key`` is the default gateway's)."""
    from taosync.clients.registry import get

    out: dict[str, dict[str, bool]] = {}
    for client_id in fleet.enabled_clients():
        module = get(client_id)
        for var, needs in module.key_variables(fleet.for_client(client_id), env).items():
            out.setdefault(var, {})[module.TITLE] = needs
            if keys is not None:
                keys.setdefault(var, fleet.key_for(client_id, key))
    return out


def _real(key: Any) -> bool:
    """Whether ``key`` is the fleet's resolved key (not ``--no-key``'s or a stand-in's)."""
    from taosync.fleet.secrets import STAND_IN

    return key is not None and getattr(key, "source", None) not in ("--no-key", STAND_IN)


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def notes(fleet: Any, key: Any, env: ClientEnv) -> list[str]:
    """The warnings (whole lines) about the variables the clients read the key from."""
    if not _real(key):
        return []
    from taosync.fleet.secrets import parse_reference

    ref = parse_reference(fleet.gateway.key)
    missing: dict[str, list[str]] = {}
    stale: dict[str, list[str]] = {}
    keys: dict[str, Any] = {}
    for var, clients in gather(fleet, env, key, keys).items():
        value = env.getenv(var)
        if value is not None and value.strip() and not same_key(value, keys[var]):
            stale[var] = list(clients)
        elif not (value or "").strip():
            needing = [title for title, needs in clients.items() if needs]
            if needing:
                missing[var] = needing
    out = []
    if missing:
        listed = "; ".join(f"{var} ({', '.join(titles)})" for var, titles in missing.items())
        some = "it" if len(missing) == 1 else "them"
        out.append(f"warning: secrets: reference: these clients read the key from a variable "
                   f"that is not set here: {listed}; add `{FIX}` to your shell start-up "
                   f"(it exports each), or export {some} where the clients run")
    for var, titles in stale.items():
        verb = "reads" if len(titles) == 1 else "read"
        out.append(f"warning: {var} is set in this environment to another key than the "
                   f"fleet's ({ref.describe()}): {_names(titles)} {verb} it before "
                   f"{'its' if len(titles) == 1 else 'their'} files and would send it; unset "
                   f"it, or export the current key: {FIX}")
    return out


def exported(fleet: Any, key: Any, env: ClientEnv) -> dict[str, str]:
    """variable → value for ``taosync env --with-key``: the key under each variable a
    client reads it from, and each MCP secret ``${env:NAME}`` a client's files name
    instead of holding its value."""
    import dataclasses

    from taosync.clients.registry import get
    from taosync.fleet.logic import McpSecret

    keys: dict[str, Any] = {}
    out = {var: keys[var].reveal() for var in gather(fleet, env, key, keys)}
    secrets = [value for server in fleet.mcp_servers_expanded(key).values()
               for value in (server.env if server.kind == "stdio" else server.headers).values()
               if isinstance(value, McpSecret) and value.ref.kind == "env"]
    if not secrets:
        return out
    for client_id in fleet.enabled_clients():
        quiet = dataclasses.replace(env, warnings=[], consulted={}, probed={})
        written = [v for patch in get(client_id).render(fleet.for_client(client_id),
                                                        fleet.key_for(client_id, key), quiet)
                   for v in patch.values.values()]
        for secret in secrets:
            inner = secret.reveal()[len(secret.prefix):len(secret.reveal()) - len(secret.suffix)]
            if not any(inner in text for text in _texts(written)) and \
                    any(secret.ref.arg in text for text in _texts(written)):
                out[secret.ref.arg] = inner
    return out


def _texts(value: Any) -> list[str]:
    """Every string in a rendered value (its secrets revealed: what the file holds)."""
    from taosync.engine.plan import materialize

    plain = materialize(value)[0]
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)

    walk(plain)
    return out
