"""Project scope per client, as data: where each client reads a project's own files, what
it honours there, and the trust entry that makes it read them (clients.md §18.0 items 2
and 3, each verified by running the client). Shared code below turns a user-level render
into the project's files; no client module holds code for it.

A client not in :data:`FILES` has no project scope (Cline, Continue, llm, shell-gpt, …):
a profile (an isolated config root through direnv) is the way to give it one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from taosync.engine.patch import Patch
from taosync.formats.base import KeyPath

#: stands for the project's absolute root in a trust entry's key path
ROOT = "<root>"


@dataclass(frozen=True)
class ProjectFile:
    """One project file of a client: made from the user-level file the client renders
    under the name ``user`` (its location variables followed), at ``project`` (relative
    to the project's root), with only the key paths under ``keep`` (None: all)."""

    user: str
    project: str
    keep: tuple[KeyPath, ...] | None = None


@dataclass(frozen=True)
class Trust:
    """The entry that makes a client read a project's files: in ``file``, beside the user
    file named ``beside``, ``key`` (:data:`ROOT` replaced) set to ``value``."""

    beside: str
    file: str
    format: str
    key: KeyPath
    value: Any
    #: when the client asks for it (said without --trust)
    when: str = "until the folder is trusted"


#: client id → its project files (clients.md §18.0 item 2)
FILES: dict[str, tuple[ProjectFile, ...]] = {
    # the personal file (wins over the committed .claude/settings.json); .mcp.json servers
    "claude-code": (ProjectFile("settings.json", ".claude/settings.local.json"),
                    ProjectFile(".claude.json", ".mcp.json", (("mcpServers",),))),
    # a project may change the model and MCP servers, never the endpoint or the key
    "codex": (ProjectFile("config.toml", ".codex/config.toml", (("model",), ("mcp_servers",))),),
    "opencode": (ProjectFile("opencode.json", "opencode.json"),),
    "kilo": (ProjectFile("kilo.json", "kilo.json"),),
    # read from the directory qwen starts in only
    "qwen-code": (ProjectFile("settings.json", ".qwen/settings.json"),),
    # settings.json from the start directory only; .gemini/.env is found walking up
    "gemini-cli": (ProjectFile("settings.json", ".gemini/settings.json"),
                   ProjectFile(".env", ".gemini/.env")),
    "aider": (ProjectFile(".aider.conf.yml", ".aider.conf.yml"),),
    # keys come only from $VIBE_HOME/.env or the environment: no project .env
    "mistral-vibe": (ProjectFile("config.toml", ".vibe/config.toml"),),
    # the model (a project cannot define providers) and MCP servers; gptme 0.35.1 reads
    # gptme.local.toml only beside an existing gptme.toml (its config/project.py), so the
    # project file is gptme.toml itself
    "gptme": (ProjectFile("config.toml", "gptme.toml", (("env", "MODEL"), ("mcp",))),),
}

#: clients that take only the model (and MCP servers) from a project
MODEL_ONLY = ("codex", "gptme")

#: clients whose project file names the key only by an environment variable: a project
#: key that is not ``${env:NAME}`` would make them send the variable the user's render
#: named (the user's key) to the project's gateway, so nothing is written for them then
KEY_BY_NAME = ("mistral-vibe",)

#: client id → (a key path of its project file, a step the user takes when it is written)
APPROVAL: dict[str, tuple[KeyPath, str]] = {
    "qwen-code": (("mcpServers",), "starts a project's MCP servers only once approved: run "
                  "`qwen mcp approve --all` in the project"),
}

#: client id → its trust entry (clients.md §18.0 item 3); written only with --trust
TRUST: dict[str, Trust] = {
    "codex": Trust("config.toml", "config.toml", "toml", ("projects", ROOT, "trust_level"),
                   "trusted"),
    "gemini-cli": Trust("settings.json", "trustedFolders.json", "json", (ROOT,),
                        "TRUST_FOLDER"),
    "qwen-code": Trust("settings.json", "trustedFolders.json", "json", (ROOT,), "TRUST_FOLDER",
                       when="when you turned its folder trust on, until the folder is trusted"),
}

#: trust a client needs that taosync cannot own (one element of a list of strings)
TRUST_BY_HAND: dict[str, str] = {
    "mistral-vibe": 'add "{root}" to trusted = [...] in $VIBE_HOME/trusted_folders.toml',
}


@dataclass
class Rendered:
    """A user-level render turned into a project's: the patches, the notes to print, and
    the trust entries (each as shown)."""

    patches: list[Patch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trust: list[str] = field(default_factory=list)
    #: (client, project file) of each file that would hold a secret
    secret_files: list[tuple[str, Path]] = field(default_factory=list)


def _kept(path: KeyPath, keep: tuple[KeyPath, ...] | None) -> bool:
    return keep is None or any(path[:len(k)] == k for k in keep)


def _holds_secret(patch: Patch) -> bool:
    from taosync.fleet.logic import secret_parts

    return any(secret_parts(v) for part in (patch.values, patch.skeleton, patch.volatile)
               for v in part.values())


def project_render(patches: list[Patch], root: Path, clients, *, trust: bool,
                   key_kind: str = "env") -> Rendered:
    """The project's patches from ``patches`` (every enabled client's user-level render;
    ``clients``: the enabled client ids), with the trust entries when ``trust``;
    ``key_kind``: how the key in effect is referenced (env, file, cmd, …)."""
    out = Rendered()
    if key_kind != "env":
        skipped = [c for c in clients if c in KEY_BY_NAME]
        clients = [c for c in clients if c not in KEY_BY_NAME]
        for c in skipped:
            out.notes.append(f"info: {c}: nothing written: it reads a project's key only by "
                             "variable name, so the gateway's key must be ${env:NAME} (else "
                             "it would send your own key there)")
    by_client: dict[str, list[Patch]] = {}
    for patch in patches:
        by_client.setdefault(patch.client, []).append(patch)
    for client in clients:
        mine = by_client.get(client, [])
        files = FILES.get(client)
        if files is None:
            continue
        for pf in files:
            for patch in mine:
                if patch.path.name != pf.user:
                    continue
                values = {k: v for k, v in patch.values.items() if _kept(k, pf.keep)}
                if not values:
                    continue
                made = replace(patch, path=root / pf.project, values=values,
                               skeleton={k: v for k, v in patch.skeleton.items()
                                         if _kept(k, pf.keep)},
                               volatile={k: v for k, v in patch.volatile.items()
                                         if _kept(k, pf.keep)},
                               lead=tuple(k for k in patch.lead if _kept(k, pf.keep)))
                approval = APPROVAL.get(client)
                if approval is not None and any(k[:len(approval[0])] == approval[0]
                                                for k in values):
                    out.notes.append(f"info: {client} {approval[1]}")
                made.secret = _holds_secret(made)
                if made.secret:
                    out.secret_files.append((client, made.path))
                out.patches.append(made)
        entry = TRUST.get(client)
        beside = [p for p in mine if entry is not None and p.path.name == entry.beside]
        if entry is not None and beside:
            where = beside[0].path.parent / entry.file
            key = tuple(str(root) if part == ROOT else part for part in entry.key)
            if trust:
                out.patches.append(Patch(where, entry.format, {key: entry.value}, client))
            shown = ".".join(f'"{k}"' if "/" in str(k) or "." in str(k) else str(k) for k in key)
            out.trust.append(f"{client}: {where} {shown} = {entry.value!r}")
    enabled = list(clients)
    none = [c for c in enabled if c not in FILES]
    if none:
        out.notes.append(
            f"info: {', '.join(none)} {'has' if len(none) == 1 else 'have'} no project scope: "
            "nothing is written for " + ("it" if len(none) == 1 else "them")
            + "; a profile gives one per directory (`taosync env --profile NAME` in the "
            "project's .envrc, docs/project.md)")
    only = [c for c in MODEL_ONLY if c in enabled]
    if only:
        out.notes.append(f"info: {', '.join(only)} take{'s' if len(only) == 1 else ''} only "
                         "the model and MCP servers from a project; the gateway and key stay "
                         "your user-level ones")
    untrusted = [c for c in enabled if c in TRUST]
    if untrusted and not trust:
        out.notes.append(
            "info: " + "; ".join(f"{c} ignores these project files {TRUST[c].when}"
                                 for c in untrusted)
            + f": {_again_trust()} writes their trust entries (shown first)")
    for client, how in TRUST_BY_HAND.items():
        if client in enabled:
            out.notes.append(f"info: {client} reads its project file only in a trusted "
                             f"folder: {how.format(root=root)}")
    if "mistral-vibe" in enabled:
        out.notes.append("info: mistral-vibe reads the project's key only from $VIBE_HOME/.env "
                         "or the environment (a project .env is not read): export it")
    return out


def _again_trust() -> str:
    from taosync.hints import again

    return f"`{again('apply --trust')}`"


def ignored(root: Path, path: Path) -> bool | None:
    """Does git ignore ``path`` in the work tree at ``root``? None: not in a work tree."""
    import subprocess

    try:
        inside = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=10,
                                stdin=subprocess.DEVNULL)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        done = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", "--",
                               os.path.relpath(path, root)],
                              capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode == 0


def gateway_clients(fleet, only=()) -> list[str]:
    """The enabled clients (of ``only``, when given) that take a project's gateway: what
    ``verify --project`` probes."""
    return [c for c in fleet.enabled_clients() if c in FILES and c not in MODEL_ONLY
            and (not only or c in only)]
