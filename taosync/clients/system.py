"""The managed (system) scope, ``taosync --system``: each client's policy files, as data,
and the step that moves a user-scope render onto them (docs/system.md).

A client's managed file is read by every user's client and beats their own files, so an
admin's gateway wins while users keep writable files of their own. Only a client listed
in :data:`MANAGED` is written at this scope; each of its file roles (the names of its
``declare.File`` table) maps to one managed file per platform, or is left out with the
reason. Facts (clients.md §1, §2, and the shipped binaries):

* Claude Code 2.1.332 reads ``managed-settings.json`` from ``/etc/claude-code`` (Linux,
  WSL), ``/Library/Application Support/ClaudeCode`` (macOS), ``C:\\Program Files\\ClaudeCode``
  (Windows); managed settings come first in its precedence (code.claude.com/docs/en/settings).
  Its ``managed-mcp.json`` takes *exclusive* control of MCP servers (users' own are then
  ignored), so taosync does not write MCP servers at this scope.
* Codex 0.171 reads ``/etc/codex/managed_config.toml`` (Unix; on Windows the legacy file
  is only warned about) above every other layer, CLI flags aside; ``/etc/codex/config.toml``
  sits *below* the user's file and ``requirements.toml`` only constrains (approval,
  sandbox, allowed values), so neither makes the admin's gateway win. ``auth.json`` and
  profile files have no managed counterpart.
* Qwen Code 0.24.4 reads ``/etc/qwen-code/settings.json`` (macOS ``/Library/Application
  Support/QwenCode``, Windows ``C:\\ProgramData\\qwen-code``), which overrides user and
  project settings.
* opencode 1.18.33 reads ``opencode.json``/``opencode.jsonc`` in ``/etc/opencode`` (macOS
  ``/Library/Application Support/opencode``, Windows ``%ProgramData%\\opencode``) after the
  user's and the project's files; Kilo 7.7.7 the same in ``/etc/kilo`` (``kilo.json``).

Secrets: a managed file is world-readable by design (every user's client reads it), so
a key is never written into one — the render must reference it (Claude's ``apiKeyHelper``,
Codex's ``env_key``), else the run is refused before anything is written.

``TAOSYNC_SYSTEM_ROOT`` (tests and image builds only, not for production use) names a
directory that stands for ``/``: the managed files and root's system state (settings.py)
go under it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Mapping

#: tests and image builds only: a directory standing for "/" (module doc)
ROOT_VAR = "TAOSYNC_SYSTEM_ROOT"

_CLAUDE_DIRS = {"linux": "/etc/claude-code",
                "darwin": "/Library/Application Support/ClaudeCode",
                "win32": "C:/Program Files/ClaudeCode"}

#: client id → {file role → {platform → managed file}}; a role missing here is left out
#: at this scope, for the reason in :data:`LEFT_OUT`
MANAGED: dict[str, dict[str, dict[str, str]]] = {
    "claude-code": {"settings": {p: d + "/managed-settings.json" for p, d in _CLAUDE_DIRS.items()}},
    "codex": {"config": {"linux": "/etc/codex/managed_config.toml",
                         "darwin": "/etc/codex/managed_config.toml"}},
    # Qwen Code 0.24.4: the system settings file overrides user and project settings
    # (its getSystemSettingsPath; QWEN_CODE_SYSTEM_SETTINGS_PATH moves it)
    "qwen-code": {"settings": {"linux": "/etc/qwen-code/settings.json",
                               "darwin": "/Library/Application Support/QwenCode/settings.json",
                               "win32": "C:/ProgramData/qwen-code/settings.json"}},
    # opencode 1.18.33: opencode.json(c) in its managed config directory, merged after the
    # user's and the project's (its managedConfigDir)
    "opencode": {"config": {"linux": "/etc/opencode/opencode.json",
                            "darwin": "/Library/Application Support/opencode/opencode.json",
                            "win32": "C:/ProgramData/opencode/opencode.json"}},
    # Kilo CLI 7.7.7 (an opencode fork): its own managed directory, "higher precedence"
    "kilo": {"config": {"linux": "/etc/kilo/kilo.json",
                        "darwin": "/Library/Application Support/kilo/kilo.json",
                        "win32": "C:/ProgramData/kilo/kilo.json"}},
}
#: client id → {file role (or "*" for any other file) → why it is not written at this scope}
LEFT_OUT: dict[str, dict[str, str]] = {
    "claude-code": {"state": "its MCP servers are not written at system scope: Claude Code's "
                             "managed-mcp.json would take exclusive control and hide every "
                             "user's own servers"},
    "codex": {"auth": "auth.json has no managed counterpart (the key must be an env_key "
                      "reference at system scope)",
              "*": "profile files have no managed counterpart at system scope"},
}
#: client id → file roles left out that hold the key itself: a secret there is refused too
#: (the managed file would otherwise point every user at a key file of their own)
KEY_FILES: dict[str, set[str]] = {"codex": {"auth"}}
#: what a client without a managed file gets (docs/system.md says what each one offers)
NO_SCOPE = ("has no managed-policy file taosync writes (docs/system.md); left out at "
            "system scope")


def _under(base: Path, spelled: str) -> Path:
    """``spelled`` (an absolute path as the client documents it) under ``base``."""
    if base == Path("/"):
        return Path(spelled)
    drive, _, rest = spelled.partition(":") if ":" in spelled[:3] else ("", "", spelled)
    return base.joinpath(*([drive] if drive else []), *PurePosixPath(rest).parts[1:])


def managed_file(client: str, role: str, env) -> Path | None:
    """Where ``client``'s ``role`` file goes at system scope on ``env``'s platform."""
    spelled = MANAGED.get(client, {}).get(role, {}).get(env.platform)
    if spelled is None:
        return None
    return _under(root_of(env), spelled)


def root_of(env) -> Path:
    """The directory standing for ``/`` (``$TAOSYNC_SYSTEM_ROOT``, else ``/``), read through
    the client environment (so a cached render knows it read it)."""
    value = env.getenv(ROOT_VAR)
    return Path(value) if value else Path("/")


def locations(env, client: str | None = None) -> list[Path]:
    """The directories of every managed file (of ``client`` alone) on this platform:
    where a system-scope run may write, put back and give back files."""
    out: list[Path] = []
    for name, roles in MANAGED.items():
        if client is not None and name != client:
            continue
        for role in roles:
            path = managed_file(name, role, env)
            if path is not None and path.parent not in out:
                out.append(path.parent)
    return out


def has_secret(value: Any) -> bool:
    """``value`` holds a secret (the key, an MCP secret) anywhere inside it."""
    from taosync.fleet.secrets import Secret

    if isinstance(value, Secret):
        return True
    if isinstance(value, dict):
        return any(has_secret(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_secret(v) for v in value)
    return False


def to_system(patches: list, env, registry: Mapping[str, Any]) -> list:
    """The patches of a user-scope render moved onto the managed files: a file role with
    a managed file keeps its owned keys there; any other file is left out with a warning
    (once per client and reason). Raises BadInput, naming the client and the fix, when a
    file that goes to a managed file would hold a secret: a managed file is world-readable."""
    from dataclasses import replace

    from taosync.errors import BadInput

    out: list = []
    said: set[tuple[str, str]] = set()
    # what a client left out entirely said while rendering is moot here (its key going
    # inline, say): only the reason it is left out is printed
    unscoped = {p.client for p in patches if p.client not in MANAGED}
    env.warnings[:] = [w for w in env.warnings
                       if getattr(w, "client", str(w).partition(":")[0]) not in unscoped]

    def leave_out(client: str, why: str) -> None:
        if (client, why) not in said:
            said.add((client, why))
            env.warnings.append(f"{client}: {why}")

    for patch in patches:
        client = patch.client
        if client not in MANAGED:
            leave_out(client, NO_SCOPE)
            continue
        declared = registry[client].CLIENT  # a declared client (clients/declare.py)
        role = next((r for r in declared.files if declared.file(r, env) == patch.path), None)
        target = managed_file(client, role, env) if role is not None else None
        if (target is not None or role in KEY_FILES.get(client, ())) and (
                patch.secret or any(has_secret(v) for v in (*patch.values.values(),
                                                            *patch.volatile.values()))):
            raise BadInput(
                f"{client}: the key (or an MCP secret) would be written into "
                f"{target or env.shown(patch.path)}, where a managed policy cannot keep it "
                f"private (every user's client reads the managed file); at system scope set "
                f"`secrets: reference` with `gateway.key: ${{env:NAME}}` (each user's "
                f"client then reads the key from its own environment), or disable "
                f"{client} in the fleet applied with --system; nothing was written")
        if target is None:
            reasons = LEFT_OUT.get(client, {})
            why = reasons.get(role or "*") or reasons.get("*") or (
                f"{env.shown(patch.path)} has no managed counterpart on {env.platform}")
            leave_out(client, why)
            continue
        out.append(replace(patch, path=target))
    return out
