"""Real local git repositories for ``taosync update``: a bare "remote" per repository in a
temp directory, an upstream clone that publishes commits to it (a teammate), and the
user's own clone — their dotfiles holding fleet.yaml, and a team fleet it ``include:``s."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: git without the machine's own configuration and with an author for the commits
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "Teammate", "GIT_AUTHOR_EMAIL": "t@example.net",
           "GIT_COMMITTER_NAME": "Teammate", "GIT_COMMITTER_EMAIL": "t@example.net",
           "GIT_TERMINAL_PROMPT": "0"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout.strip()


class GitRepo:
    """One repository: ``remote`` (bare), ``upstream`` (a teammate's clone) and ``mine``
    (the user's clone, where taosync update pulls)."""

    def __init__(self, base: Path, name: str, files: dict[str, str]):
        self.remote = base / "remotes" / f"{name}.git"
        self.upstream = base / "upstream" / name
        self.mine = base / name
        self.remote.parent.mkdir(parents=True, exist_ok=True)
        self.upstream.parent.mkdir(parents=True, exist_ok=True)
        git(base, "init", "-q", "--bare", "-b", "main", str(self.remote))
        git(base, "clone", "-q", str(self.remote), str(self.upstream))
        git(self.upstream, "checkout", "-q", "-b", "main")
        for rel, text in files.items():
            (self.upstream / rel).write_text(text)
        git(self.upstream, "add", "-A")
        git(self.upstream, "commit", "-q", "-m", f"{name}: first")
        git(self.upstream, "push", "-q", "-u", "origin", "main")
        git(base, "clone", "-q", str(self.remote), str(self.mine))

    def publish(self, rel: str, text: str, message: str) -> str:
        """A teammate's commit, pushed to the remote; returns its hash."""
        git(self.upstream, "pull", "-q", "--ff-only")
        (self.upstream / rel).write_text(text)
        git(self.upstream, "add", "-A")
        git(self.upstream, "commit", "-q", "-m", message)
        git(self.upstream, "push", "-q")
        return git(self.upstream, "rev-parse", "HEAD")

    def head(self) -> str:
        return git(self.mine, "rev-parse", "HEAD")

    def text(self, rel: str) -> str:
        """``rel`` as the remote has it now (the user may have pushed since the last
        publish: a stale copy would make publish commit nothing)."""
        git(self.upstream, "pull", "-q", "--ff-only")
        return (self.upstream / rel).read_text()
