"""Issue #29, Build 5: ``taosync update`` — ``git pull --ff-only`` of the repository holding
fleet.yaml and of each included file's repository (each once), what came in shown, then
apply. Real git repositories in a temp directory (a bare remote, a teammate's clone, the
user's clone) and a real ``python -m taosync``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, snapshot
from git_fleet import GIT_ENV, GitRepo, git

TEAM = """\
version: 1
gateway:
  base_url: https://team.example/api
  key: ${env:TAOTOKEN_API_KEY}
models:
  gpt-4o-mini: {}
  claude-sonnet-4-20250514: {}
routes:
  fast: gpt-4o-mini
  balanced: claude-sonnet-4-20250514
default_route: balanced
clients:
  codex: {model: fast}
"""

MINE = """\
include: [../team/base.yaml]
version: 1
clients:
  claude-code: {model: balanced}
"""


class World:
    def __init__(self, base: Path, home: Path):
        self.home = home
        self.team = GitRepo(base, "team", {"base.yaml": TEAM})
        self.dotfiles = GitRepo(base, "dotfiles", {"fleet.yaml": MINE})
        self.fleet = self.dotfiles.mine / "fleet.yaml"

    def run(self, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "taosync", "--home", str(self.home),
                               "-c", str(self.fleet), *args], cwd=cwd, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env={**os.environ, **GIT_ENV, "PYTHONPATH": str(ROOT)})

    def codex_model(self) -> str:
        return tomllib.loads((self.home / ".codex/config.toml").read_text())["model"]


@pytest.fixture
def world(tmp_path, home) -> World:
    w = World(tmp_path, home)
    r = w.run("apply", "--no-verify")
    assert r.returncode == 0, r.stderr
    return w


def test_update_pulls_the_fleet_and_its_includes_shows_what_came_in_and_applies(world):
    team_commit = world.team.publish("base.yaml", TEAM.replace("fast: gpt-4o-mini",
                                                               "fast: claude-sonnet-4-20250514"),
                                     "fast route on sonnet")
    world.dotfiles.publish("fleet.yaml", MINE.replace("model: balanced", "model: fast"),
                           "claude on the fast route")
    r = world.run("update", "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert world.team.head() == team_commit
    out = r.stdout
    # what came in, before the apply's own lines
    assert "1 new commit" in out and "fast route on sonnet" in out and "base.yaml" in out
    assert "claude on the fast route" in out and "fleet.yaml" in out
    assert out.index("fast route on sonnet") < out.index("applied #")
    assert world.codex_model() == "claude-sonnet-4-20250514"
    newest = json.loads(world.run("log", "--json").stdout)["records"][0]
    assert newest["changes"] == ["routes.fast", "clients.claude-code.model"]
    assert newest["message"].startswith("update: ") and "team" in newest["message"]


def test_each_repository_is_pulled_once(tmp_path, home):
    """fleet.yaml and its include in the same repository: one pull, one report."""
    repo = GitRepo(tmp_path, "dotfiles", {"fleet.yaml": MINE.replace("../team/", ""),
                                         "base.yaml": TEAM})
    w = World.__new__(World)
    w.home, w.fleet = home, repo.mine / "fleet.yaml"
    assert w.run("apply", "--no-verify").returncode == 0
    repo.publish("base.yaml", TEAM.replace("fast: gpt-4o-mini", "fast: claude-sonnet-4-20250514"),
                 "one change")
    r = w.run("update", "--no-verify", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [p["repository"] for p in report["pulled"]] == [str(repo.mine.resolve())]
    assert report["pulled"][0]["changed"] is True and report["apply_id"] == 2


def test_an_include_in_no_repository_is_named_and_left_alone(tmp_path, home):
    """Found by the stateful test: a fleet whose only include is in no repository was
    refused after the pull as if fleet.yaml itself were in none."""
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "base.yaml").write_text(TEAM)
    repo = GitRepo(tmp_path, "dotfiles", {"fleet.yaml": MINE.replace("team/", "loose/")})
    w = World.__new__(World)
    w.home, w.fleet = home, repo.mine / "fleet.yaml"
    assert w.run("apply", "--no-verify").returncode == 0
    repo.publish("fleet.yaml", MINE.replace("team/", "loose/").replace("model: balanced",
                                                                        "model: fast"), "fast")
    r = w.run("update", "--no-verify")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("loose/base.yaml is in no git repository: left as it is") == 1
    assert "applied #2" in r.stdout


def test_local_changes_stop_the_update_before_anything_is_pulled(world):
    world.team.publish("base.yaml", TEAM.replace("fast: gpt-4o-mini",
                                                 "fast: claude-sonnet-4-20250514"), "upstream")
    world.dotfiles.publish("fleet.yaml", MINE + "# upstream\n", "upstream too")
    heads = (world.team.head(), world.dotfiles.head())
    (world.team.mine / "base.yaml").write_text(TEAM + "# my local tweak\n")
    before = snapshot(world.home)
    r = world.run("update", "--no-verify")
    assert r.returncode == 2
    assert "has local changes (base.yaml)" in r.stderr and "stash" in r.stderr
    assert "nothing was pulled" in r.stderr
    assert (world.team.head(), world.dotfiles.head()) == heads  # not even the clean one
    assert (world.team.mine / "base.yaml").read_text().endswith("# my local tweak\n")
    assert snapshot(world.home) == before


def test_a_fleet_that_stops_validating_after_the_pull_applies_nothing(world):
    before_head = world.team.head()
    world.team.publish("base.yaml", TEAM.replace("fast: gpt-4o-mini", "fast: no-such-model"),
                       "a broken route")
    before = snapshot(world.home)
    r = world.run("update", "--no-verify")
    assert r.returncode == 2
    assert "team/base.yaml:9:9: routes.fast" in r.stderr and "no-such-model" in r.stderr
    assert "nothing was applied" in r.stderr.splitlines()[-1]  # the last word
    assert f"reset --keep {before_head[:12]}" in r.stderr
    assert snapshot(world.home) == before
    assert world.codex_model() == "gpt-4o-mini"


def test_a_diverged_branch_is_not_merged(world):
    world.dotfiles.publish("fleet.yaml", MINE + "# theirs\n", "theirs")
    (world.dotfiles.mine / "fleet.yaml").write_text(MINE + "# mine\n")
    git(world.dotfiles.mine, "commit", "-qam", "mine")
    mine = world.dotfiles.head()
    before = snapshot(world.home)
    r = world.run("update", "--no-verify")
    assert r.returncode == 1, r.stderr
    assert "diverged" in r.stderr and "nothing was applied" in r.stderr
    assert world.dotfiles.head() == mine
    assert snapshot(world.home) == before


def test_nothing_new_is_said_and_the_apply_still_runs(world):
    r = world.run("update", "--no-verify")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("already up to date") == 2
    assert "nothing to do" in r.stdout


def test_a_fleet_in_no_repository_is_bad_input(tmp_path, home, fleet_file):
    r = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                        str(fleet_file), "update"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, **GIT_ENV, "PYTHONPATH": str(ROOT),
                            "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert r.returncode == 2
    assert "is in no git repository" in r.stderr and "taosync apply" in r.stderr
    assert "Traceback" not in r.stderr
