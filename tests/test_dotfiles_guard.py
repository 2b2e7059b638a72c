"""The dotfiles guard (issue 10, build item 6): a file that will hold a secret and lives in
(or is a symlink into) a git work tree is warned about once, with the fix; a file git
ignores, or one that holds no secret, is not."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import TEST_KEY
from taosync.engine import dotfiles

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git_init(path):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def link_settings_into(home, repo):
    """~/.claude/settings.json → <repo>/claude/settings.json (the dotfiles layout)."""
    target = repo / "claude" / "settings.json"
    target.parent.mkdir(parents=True)
    target.write_text("{}\n")
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").symlink_to(target)
    return target


def guard_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "is in a git work tree" in line]


@needs_git
def test_a_symlink_into_a_dotfiles_repo_is_warned_once(taosync, home, tmp_path):
    repo = git_init(tmp_path / "dotfiles")
    target = link_settings_into(home, repo)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    lines = guard_lines(r.err)
    assert lines == [f"warning: ~/.claude/settings.json → {target} is in a git work tree "
                     f"({repo}) and will hold a secret: set `secrets: reference`, or ignore "
                     f"the file in git"]
    # taosync followed the link, as it always has: the warning is the only difference
    assert json.loads(target.read_text())["env"]["ANTHROPIC_AUTH_TOKEN"] == TEST_KEY
    assert TEST_KEY not in r.both
    # plan says it too (the file still holds the key), in text and --json modes
    assert len(guard_lines(taosync("plan").err)) == 1
    as_json = taosync("plan", "--json")
    json.loads(as_json.out)
    assert len(guard_lines(as_json.err)) == 1


@needs_git
def test_a_file_git_ignores_is_not_warned_about(taosync, home, tmp_path):
    repo = git_init(tmp_path / "dotfiles")
    link_settings_into(home, repo)
    (repo / ".gitignore").write_text("claude/settings.json\n")
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and guard_lines(r.err) == [], r.err


@needs_git
def test_reference_mode_keeps_the_key_out_of_the_repo_and_the_warning_goes(
        taosync, home, fleet_file, tmp_path):
    repo = git_init(tmp_path / "dotfiles")
    target = link_settings_into(home, repo)
    fleet_file.write_text(fleet_file.read_text().replace("secrets: inline", "secrets: reference"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert guard_lines(r.err) == []
    assert TEST_KEY not in target.read_text()


def test_a_home_that_is_a_work_tree_warns_for_each_secret_file_only(taosync, home):
    (home / ".git").mkdir()  # a home kept in git (no git needed: .git alone marks it)
    r = taosync("plan", "--json")
    assert r.rc == 0, r.both
    plan = json.loads(r.out)
    secret_files = {f["display"] for f in plan["files"] if f["secret"]}
    plain_files = {f["display"] for f in plan["files"] if not f["secret"]}
    assert "~/.codex/deep.config.toml" in plain_files and "~/.claude.json" in secret_files
    warned = [line.split(" is in a git work tree")[0].removeprefix("warning: ")
              for line in guard_lines(r.err)]
    assert sorted(warned) == sorted(secret_files)


def test_without_git_the_warning_stands(taosync, home, tmp_path, monkeypatch):
    repo = tmp_path / "dotfiles"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("claude/settings.json\n")
    link_settings_into(home, repo)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # git cannot be found
    r = taosync("plan")
    assert len(guard_lines(r.err)) == 1


def test_no_work_tree_no_warning(taosync, home):
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and guard_lines(r.err) == []


def test_work_tree_walks_up_to_the_root(tmp_path):
    nested = tmp_path / "a" / "b" / "c" / "settings.json"  # need not exist
    assert dotfiles.work_tree(nested) is None
    (tmp_path / "a" / ".git").mkdir(parents=True)
    assert dotfiles.work_tree(nested) == tmp_path / "a"
    # a linked worktree or submodule has a .git *file*
    (tmp_path / "a" / "b").mkdir(parents=True, exist_ok=True)
    (tmp_path / "a" / "b" / ".git").write_text("gitdir: ../.git/worktrees/b\n")
    assert dotfiles.work_tree(nested) == tmp_path / "a" / "b"
