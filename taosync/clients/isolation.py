"""Profiles' isolated instances: where a profile's client files live and the environment
a client runs with inside one (docs/profiles.md; clients.md §18.0 item 8).

Each client module declares ``ISOLATION`` as data — the variable that moves its whole
configuration (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, …, ``XDG_CONFIG_HOME`` for opencode
and Kilo) → the directory it names under the profile's root; ``{"HOME": "."}`` for a
client no variable moves (aider, shell-gpt, gptme: it runs with the root as its home).
Every directory mirrors where the client keeps its files under a home, so the root reads
like a home of its own: a render with the root as the home and the variables set writes
exactly where the client, started with the same variables, reads.

This module reads those declarations; no client's code knows about profiles.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

#: the variable ``taosync exec`` and ``taosync env --profile`` set, so that a taosync run
#: inside the instance acts on the profile (settings.py reads it)
PROFILE_VAR = "TAOSYNC_PROFILE"


def declarations() -> dict[str, Mapping[str, str]]:
    """client id → its ISOLATION (only clients that have one)."""
    from taosync.clients.registry import all as all_clients

    return {cid: mod.ISOLATION for cid, mod in all_clients().items() if mod.ISOLATION}


def binaries() -> dict[str, str]:
    """client id → its binary, for each client a profile can run."""
    from taosync.clients.registry import all as all_clients

    return {cid: mod.BINARY for cid, mod in all_clients().items() if mod.ISOLATION}


def variables(root: Path, client: str | None = None, *, home: bool = False) -> dict[str, str]:
    """The isolation variables of every client (or of ``client`` alone) → their value
    under ``root``, in registry order; ``HOME`` only when ``home`` (a separate home is
    right for aider, shell-gpt and gptme, not for a shell)."""
    out: dict[str, str] = {}
    for cid, decl in declarations().items():
        if client is not None and cid != client:
            continue
        for var, rel in decl.items():
            if var == "HOME" and not home:
                continue
            out.setdefault(var, os.path.normpath(root / rel))
    return out


def home_clients() -> list[str]:
    """The clients that run with a separate HOME inside a profile."""
    return [cid for cid, decl in declarations().items() if "HOME" in decl]


def moved_vars() -> set[str]:
    """Every variable that moves some client's files (LOCATION_VARS and LOCATION_FILES):
    inside a profile only the profile's own values may stand (a ``CLINE_DATA_DIR`` of the
    user's shell would lead Cline out of it)."""
    from taosync.clients.registry import all as all_clients

    names: set[str] = set()
    for mod in all_clients().values():
        names.update(mod.LOCATION_VARS)
        names.update(mod.LOCATION_FILES)
    return names - {"APPDATA", "LOCALAPPDATA"}


def profile_env(user_env, name: str, root: Path):
    """The :class:`~taosync.clients.base.ClientEnv` of profile ``name``: the root is its
    home (sandboxed: no variable may lead outside it), each isolation variable set."""
    environ = {k: v for k, v in user_env.environ.items() if k not in moved_vars()}
    environ.update(variables(root))
    environ[PROFILE_VAR] = name
    return replace(user_env, home=root, sandboxed=True, environ=environ, warnings=[],
                   consulted={}, probed={})


def client_of(program: str) -> str | None:
    """The client whose binary ``program`` is (a path or a name), if any."""
    base = os.path.basename(program)
    for cid, binary in binaries().items():
        if binary == base:
            return cid
    return None


def exec_environ(environ: Mapping[str, str], name: str, root: Path,
                 program: str) -> dict[str, str]:
    """The environment ``taosync exec NAME -- program …`` runs ``program`` with: the
    caller's, without any variable that would move a client elsewhere, with every
    isolation variable set (so a shell started inside reaches each client's profile
    files), ``HOME`` the root too when ``program`` is a client that needs a separate home,
    and ``TAOSYNC_PROFILE``."""
    out = {k: v for k, v in environ.items() if k not in moved_vars()}
    out.update(variables(root))
    client = client_of(program)
    if client is not None:
        out.update(variables(root, client, home=True))
    out[PROFILE_VAR] = name
    return out
