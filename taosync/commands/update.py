"""``taosync update``: ``git pull --ff-only`` the repository holding fleet.yaml and each
one holding a file it ``include:``s (each repository once), show what came in, then apply.

chezmoi's ``update`` for a team fleet kept in git. Safe by construction: every repository
is checked before any is pulled — one with local changes (or no upstream) stops the
update with the command that fixes it, nothing pulled; only fast-forwards are taken
(never a merge of the user's commits); a fleet that no longer validates after the pull
is exit 2 with nothing applied, and the command that steps the pull back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from taosync.confirm import APPLY_ASKS, yes_option
from taosync.errors import TaosyncError
from taosync.settings import common_options, current

#: seconds one git command may take (a pull over a slow network) before update gives up
GIT_TIMEOUT = 300.0


@click.command("update", epilog="""\b
Examples:
  taosync update                # pull fleet.yaml's repository and its includes', then apply
  taosync update --no-verify    # the same, without the verification requests
  taosync update -m "team fleet: new deep route"
""")
@common_options
@click.option("--no-verify", is_flag=True, help="Do not send the verification requests.")
@click.option("--stub", is_flag=True,
              help="Verify against a stand-in gateway on loopback instead of the real one.")
@click.option("-m", "--message", metavar="TEXT",
              help="The note taosync log shows for the apply (default: the commits pulled).")
@yes_option(APPLY_ASKS)
def update(no_verify, stub, message, yes):
    """Pull the fleet's git repositories (fast-forward only), then apply.

    The repository holding fleet.yaml and each one holding a file it include:s are
    pulled once each with git pull --ff-only, after checking that none has local
    changes (one that has stops the update before anything is pulled: commit or stash
    them). The commits and files that came in are shown, then the fleet is applied as
    taosync apply does (it asks before overwriting your hand edits). A fleet that no
    longer validates after the pull is exit 2: nothing is applied.
    """
    from taosync import ui
    from taosync.commands.apply import apply, checked_message
    from taosync.errors import BadInput

    message = checked_message(message)
    s = current()
    fleet = Path(s.config_path()).absolute()
    if not fleet.exists():
        raise BadInput(f"{shown(fleet)}: no such file (taosync where says which fleet.yaml "
                       "is in effect; taosync init writes one)")
    git = _git_binary()
    files = [fleet, *_includes(s, fleet, strict=False)]
    repos = _repos(git, files)
    _check_clean(git, repos)
    for repo in repos:
        _pull(git, repo)
    # an include the pull added may live in a repository not pulled yet: pull it too
    try:
        more = _includes(s, fleet, strict=True)
    except TaosyncError as exc:
        return _invalid_after_pull(exc, repos)
    added = [r for r in _repos(git, [f for f in more if f not in files], required=False)
             if r.root not in {x.root for x in repos}]
    _check_clean(git, added)
    for repo in added:
        _pull(git, repo)
    repos += added
    if added:  # the fleet as it will be applied (else as loaded just above)
        try:
            _includes(s, fleet, strict=True)
        except TaosyncError as exc:
            return _invalid_after_pull(exc, repos)
    pulled = [r.to_json() for r in repos]
    if not s.json:
        for repo in repos:
            _show(git, repo)
    moved = [r for r in repos if r.before != r.after]
    if message is None and moved:
        message = "update: " + ", ".join(f"{shown(r.root)} {r.before[:7]}..{r.after[:7]}"
                                         for r in moved)
    ui.detail("applying the fleet as pulled")
    ctx = click.get_current_context()
    return ctx.invoke(apply, only=(), dry_run=False, no_verify=no_verify, stub=stub, yes=yes,
                      force=False, no_key=False, release_moved=False, message=message,
                      pulled=pulled)


@dataclass
class Repo:
    root: Path
    files: list[Path] = field(default_factory=list)  # the fleet files it holds
    before: str = ""
    after: str = ""

    def to_json(self) -> dict:
        return {"repository": str(self.root), "files": [str(f) for f in self.files],
                "before": self.before, "after": self.after,
                "changed": self.before != self.after}


def shown(path) -> str:
    from taosync.paths import display_path

    return display_path(str(path), current().home_dir)


def _git_binary() -> str:
    import shutil

    from taosync.errors import BadInput

    git = shutil.which("git")
    if git is None:
        raise BadInput("git is not installed (or not on PATH): taosync update pulls the "
                       "fleet's git repositories with it; install git, or edit the files "
                       "and run taosync apply")
    return git


def _run(git: str, root: Path, *args: str) -> tuple[int, str]:
    """``git -C root ARGS``: (exit code, stdout + stderr). Never prompts (no terminal
    asked for a password: a pull that needs one fails and says so)."""
    import os
    import subprocess

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run([git, "-C", str(root), *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, timeout=GIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        return 124, f"git {' '.join(args)} took more than {GIT_TIMEOUT:.0f} s"
    except OSError as exc:
        return 127, str(exc)
    return done.returncode, (done.stdout + done.stderr).rstrip()


def _includes(s, fleet: Path, *, strict: bool) -> list[Path]:
    """The files fleet.yaml include:s (transitively), read without the key. Not
    ``strict``: a fleet that does not load yet has none (the pull may fix it)."""
    from taosync.errors import TaosyncError
    from taosync.fleet.load import load_fleet

    try:
        loaded = load_fleet(fleet, home=s.home_dir, environ=s.client_env().environ,
                            resolve_key=False, model=False)
    except TaosyncError:
        if strict:
            raise
        return []
    return [Path(p) for p, _sha in loaded.sources[1:]]


def _repos(git: str, files: list[Path], *, required: bool = True) -> list[Repo]:
    """The git repositories holding ``files``, each once, in the files' order; a file in
    no repository is named and left alone; none at all is bad input when ``required``
    (the first look; an include the pull added may well be outside any)."""
    from taosync import ui
    from taosync.errors import BadInput

    repos: dict[Path, Repo] = {}
    outside = []
    for f in files:
        rc, out = _run(git, f.parent, "rev-parse", "--show-toplevel")
        if rc != 0 or not out:
            outside.append(f)
            continue
        root = Path(out.splitlines()[-1]).resolve()
        repos.setdefault(root, Repo(root)).files.append(f)
    if required and not repos and files:
        raise BadInput(f"{shown(files[0])} is in no git repository"
                       + (" (nor is any file it includes)" if len(files) > 1 else "")
                       + ": taosync update pulls the fleet's repositories; run taosync "
                       "apply after changing the files yourself")
    for f in outside:
        ui.warn(f"{shown(f)} is in no git repository: left as it is")
    return list(repos.values())


def _check_clean(git: str, repos: list[Repo]) -> None:
    """Refuse (exit 2, nothing pulled) a repository with uncommitted changes to tracked
    files, or one whose branch follows no upstream — with the command that fixes it."""
    from taosync.errors import BadInput

    problems = []
    for repo in repos:
        rc, out = _run(git, repo.root, "status", "--porcelain", "--untracked-files=no")
        if rc != 0:
            problems.append(f"{shown(repo.root)}: git status failed: {out}")
            continue
        if out:
            changed = [line[3:] for line in out.splitlines()]
            problems.append(
                f"{shown(repo.root)} has local changes ({', '.join(changed[:5])}"
                f"{', …' if len(changed) > 5 else ''}): commit them "
                f"(git -C {shown(repo.root)} commit -am '…') or stash them "
                f"(git -C {shown(repo.root)} stash), then run taosync update again")
            continue
        rc, out = _run(git, repo.root, "rev-parse", "--abbrev-ref", "--symbolic-full-name",
                       "@{upstream}")
        if rc != 0:
            problems.append(f"{shown(repo.root)}: its branch follows no upstream, so there "
                            f"is nothing to pull from; set one (git -C {shown(repo.root)} "
                            "branch --set-upstream-to origin/main) or leave it to apply")
    if problems:
        raise BadInput("nothing was pulled:\n  " + "\n  ".join(problems))


def _head(git: str, root: Path) -> str:
    rc, out = _run(git, root, "rev-parse", "HEAD")
    return out if rc == 0 else ""


def _pull(git: str, repo: Repo) -> None:
    """``git pull --ff-only``; a failure (diverged history, no network) is exit 1 and
    names what was pulled before it."""
    repo.before = _head(git, repo.root)
    rc, out = _run(git, repo.root, "pull", "--ff-only", "--quiet")
    repo.after = _head(git, repo.root)
    if rc != 0:
        detail = "\n    ".join(out.splitlines()[-6:]) or f"git exit {rc}"
        hint = (f"; your branch and its upstream have diverged: merge or rebase them in "
                f"{shown(repo.root)} yourself, then run taosync update again"
                if "ff-only" in out or "fast-forward" in out or "diverg" in out else "")
        raise PullFailed(f"git pull --ff-only in {shown(repo.root)} failed{hint}; nothing "
                         f"was applied:\n    {detail}")


class PullFailed(TaosyncError):
    """A pull git refused (a diverged branch, no network): a problem found, exit 1."""

    exit_code = 1


def _invalid_after_pull(exc, repos: list[Repo]) -> int:
    """The fleet's own problems (located), then that the pull is done, nothing applied,
    and how to step the pull back; the exit code (2)."""
    from taosync import ui
    from taosync.commands.validate import report_invalid
    from taosync.fleet.load import FleetInvalid

    if not isinstance(exc, FleetInvalid):
        ui.fail(exc)
    else:
        report_invalid(exc)
    moved = [r for r in repos if r.before != r.after]
    back = "; ".join(f"git -C {shown(r.root)} reset --keep {r.before[:12]}" for r in moved)
    ui.problem("the pull is done but the fleet does not validate: fix it"
               + (f" or go back to what you had ({back})" if back else "")
               + "; nothing was applied")
    return exc.exit_code


def _show(git: str, repo: Repo) -> None:
    """What came in: the commits (oneline) and the files (--stat) of before..after."""
    from taosync import ui

    if repo.before == repo.after:
        ui.out(f"{shown(repo.root)}: already up to date ({repo.after[:7]})")
        return
    _rc, commits = _run(git, repo.root, "log", "--oneline", "--no-decorate",
                        f"{repo.before}..{repo.after}")
    lines = commits.splitlines()
    ui.out(f"{shown(repo.root)}: {len(lines)} new commit{'s' if len(lines) != 1 else ''} "
           f"({repo.before[:7]}..{repo.after[:7]})")
    for line in lines[:20]:
        ui.out(f"  {line}")
    if len(lines) > 20:
        ui.out(f"  … and {len(lines) - 20} more (git -C {shown(repo.root)} log)")
    _rc, stat = _run(git, repo.root, "diff", "--stat", f"{repo.before}..{repo.after}")
    for line in stat.splitlines():
        ui.out(f"  {line.strip()}")
