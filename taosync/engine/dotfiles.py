"""The dotfiles guard: say so when a file that will hold a secret lives in a git work tree.

People keep client configs in a dotfiles repo and symlink them into place
(``~/.claude/settings.json → ~/dotfiles/claude/settings.json``). taosync follows the
link and writes the real file, so an inline key would land in the repo and be one
``git commit -a`` away from a public push. ``plan`` and ``apply`` warn once per such file,
with the fix, and never refuse: the user decides.

A work tree is found by walking up from the path and from its real path looking for
``.git`` (a directory, or the file a linked worktree or submodule has), standard library
only, up to the filesystem root. Only when one is found is ``git check-ignore`` asked
(one short process) whether the file is ignored there, which quiets the warning; without
git, or when it fails, the warning stands.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

CHECK_IGNORE_TIMEOUT = 5.0


def work_tree(path: Path, seen: dict | None = None) -> Path | None:
    """The root of the git work tree holding ``path`` (which need not exist yet), or
    None. Walks up the parents to the filesystem root; ``seen`` (directory → whether it
    holds a ``.git``) spares the parents many targets share a second look."""
    from taosync.engine.system import current  # read through it: a certified input

    system = current()
    seen = {} if seen is None else seen
    for parent in Path(os.path.abspath(path)).parents:
        if parent not in seen:
            seen[parent] = system.lexists(parent / ".git")
        if seen[parent]:
            return parent
    return None


def is_ignored(path: Path, tree: Path) -> bool:
    """Whether git ignores ``path`` in the work tree ``tree`` (False when git cannot
    say: not installed, not a repository after all, too slow)."""
    import subprocess

    try:
        proc = subprocess.run(["git", "-C", str(tree), "check-ignore", "-q", "--",
                               str(path)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=CHECK_IGNORE_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def exposed(path: Path, real_path: Path, seen: dict | None = None) -> Path | None:
    """The work tree that would hold the secret written to ``path`` (following the
    symlink to ``real_path``), unless git ignores the file there; None when none does."""
    for candidate in dict.fromkeys((Path(real_path), Path(path))):
        tree = work_tree(candidate, seen)
        if tree is not None and not is_ignored(candidate, tree):
            return tree
    return None


def warnings(files: Iterable, display: Callable[[Path], str]) -> list[str]:
    """One warning per file of a plan that will hold a secret inside a git work tree.

    ``files`` are the plan's FilePlans (``path``, ``real_path``, ``secret``,
    ``new_text``); ``display`` shows a path (``~/…``)."""
    out: list[str] = []
    seen: dict = {}
    for fp in files:
        if not fp.secret or fp.new_text is None:
            continue
        tree = exposed(fp.path, fp.real_path, seen)
        if tree is None:
            continue
        shown = display(fp.path)
        if Path(fp.real_path) != Path(os.path.abspath(fp.path)):
            shown += f" → {display(fp.real_path)}"
        out.append(f"{shown} is in a git work tree ({display(tree)}) and will hold a "
                   f"secret: set `secrets: reference`, or ignore the file in git")
    return out
