"""Team fleets: ``include: [PATH, …]`` merges base fleets under the local file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taosync.fleet.load import load_fleet
from taosync.fleet.problems import FleetInvalid

TEAM = """\
version: 1
gateway:
  base_url: https://team.example/api
  key: ${env:TAOTOKEN_API_KEY}
  headers: {X-Team: blue}
models:
  gpt-4o-mini: {}
  claude-sonnet-4-20250514: {}
routes:
  fast: gpt-4o-mini
  balanced: claude-sonnet-4-20250514
default_route: balanced
clients:
  codex: {model: fast}
mcp_servers:
  team-docs: {command: npx, args: [-y, team-docs]}
"""

LOCAL = """\
include: [team/base.yaml]
version: 1
gateway:
  base_url: https://mine.example/api
routes:
  fast: claude-sonnet-4-20250514
clients:
  claude-code: {model: balanced}
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def load(path, home):
    return load_fleet(path, home=home, environ={"TAOTOKEN_API_KEY": "sk-test-key-0123456789"})


def problems(path, home) -> list[str]:
    """The formatted problems loading ``path`` reports (it must report some)."""
    with pytest.raises(FleetInvalid) as exc_info:
        load(path, home)
    return [p.format() for p in exc_info.value.problems]


def test_local_file_wins_per_key_and_mappings_merge(tmp_path, home):
    write(tmp_path / "team" / "base.yaml", TEAM)
    local = write(tmp_path / "fleet.yaml", LOCAL)
    loaded = load(local, home)
    fleet = loaded.fleet
    assert fleet.gateway.base_url == "https://mine.example/api"
    assert fleet.gateway.headers == {"X-Team": "blue"}  # merged, not replaced
    assert fleet.routes["fast"] == "claude-sonnet-4-20250514"
    assert fleet.routes["balanced"] == "claude-sonnet-4-20250514"
    assert set(fleet.enabled_clients()) == {"codex", "claude-code"}
    assert "team-docs" in loaded.data["mcp_servers"]
    assert "include" not in loaded.data
    base = str((tmp_path / "team" / "base.yaml").resolve())
    assert [p for p, _ in loaded.sources] == [str(local), base]
    assert loaded.origin_of(("gateway", "base_url")) == str(local)
    assert loaded.origin_of(("gateway", "headers", "X-Team")) == base
    assert loaded.origin_of(("routes", "balanced")) == base
    assert loaded.origin_of(("routes", "fast")) == str(local)


def test_lists_are_replaced_not_appended(tmp_path, home):
    write(tmp_path / "team" / "base.yaml", TEAM.replace("codex: {model: fast}",
                                                       "codex: {model: fast, profiles: [fast, balanced]}"))
    local = write(tmp_path / "fleet.yaml", LOCAL.replace("claude-code: {model: balanced}",
                                                         "codex: {profiles: [balanced]}"))
    assert load(local, home).data["clients"]["codex"] == {"model": "fast",
                                                          "profiles": ["balanced"]}


def test_later_include_wins_over_earlier_and_tilde_is_the_home(tmp_path, home):
    write(tmp_path / "team" / "base.yaml", TEAM)
    write(home / "personal.yaml", "routes: {balanced: gpt-4o-mini}\n")
    local = write(tmp_path / "fleet.yaml",
                  "include: [team/base.yaml, ~/personal.yaml]\nversion: 1\n")
    loaded = load(local, home)
    assert loaded.fleet.routes["balanced"] == "gpt-4o-mini"
    # named as written: ~/… for a file in the home, never made absolute (issue 29)
    assert loaded.origin_of(("routes", "balanced")) == "~/personal.yaml"


def test_nested_include_is_relative_to_its_own_file(tmp_path, home):
    write(tmp_path / "team" / "models.yaml", "models: {gpt-4o-mini: {}}\n")
    write(tmp_path / "team" / "base.yaml",
          "include: [models.yaml]\nversion: 1\ngateway: {base_url: https://t.example/api, "
          "key: '${env:TAOTOKEN_API_KEY}'}\nroutes: {fast: gpt-4o-mini}\n")
    local = write(tmp_path / "fleet.yaml", "include: [team/base.yaml]\n"
                  "clients: {codex: {model: fast}}\n")
    loaded = load(local, home)
    assert loaded.fleet.models.keys() == {"gpt-4o-mini"}
    assert len(loaded.sources) == 3


def test_error_in_an_included_file_is_located_there(tmp_path, home):
    base = write(tmp_path / "team" / "base.yaml",
                 TEAM.replace("  fast: gpt-4o-mini", "  fast: gpt-4o-mimi"))
    local = write(tmp_path / "fleet.yaml", LOCAL.replace("  fast: claude-sonnet-4-20250514\n",
                                                         "  deep: nope-model\n"))
    lines = problems(local, home)
    base_line = TEAM.splitlines().index("  fast: gpt-4o-mini") + 1
    assert any(line.startswith(f"{base.resolve()}:{base_line}:9: routes.fast")
               and "gpt-4o-mini" in line for line in lines), lines
    assert any(line.startswith(f"{local}:6:9: routes.deep") for line in lines), lines


def test_syntax_error_in_included_file_is_located_there(tmp_path, home):
    base = write(tmp_path / "team" / "base.yaml", "version: 1\nmodels: [unclosed\n")
    local = write(tmp_path / "fleet.yaml", LOCAL)
    lines = problems(local, home)
    assert lines == [f"{base}:2:9: the [ opened here is not closed; add ']' at the end of "
                     "line 2"], lines


def test_missing_include_and_cycle_are_located_errors(tmp_path, home):
    local = write(tmp_path / "fleet.yaml", "version: 1\ninclude:\n  - nothere.yaml\n"
                  "  - loop.yaml\n")
    loop = write(tmp_path / "loop.yaml", "include: [fleet.yaml]\n")
    lines = problems(local, home)
    assert any(line.startswith(f"{local}:3:5: include[0]: cannot include")
               and "does not exist" in line for line in lines), lines
    assert any(line.startswith(f"{loop}:1:11: include[0]: include cycle") for line in lines), lines


def test_validate_cli_reports_the_included_file_and_writes_nothing(taosync, tmp_path, home):
    write(tmp_path / "team" / "base.yaml", TEAM.replace("base_url: https://team.example/api",
                                                        "base_url: ftp://team.example/api"))
    local = write(tmp_path / "fleet.yaml", LOCAL.replace("  base_url: https://mine.example/api\n",
                                                         "  headers: {X-Me: me}\n"))
    r = taosync("validate", "--json", config=local)
    assert r.rc == 2, r.both
    files = {p["file"] for p in json.loads(r.out)["problems"]}
    assert str((tmp_path / "team" / "base.yaml").resolve()) in files
    r = taosync("apply", "--no-verify", config=local)
    assert r.rc == 2 and "base.yaml:3:" in r.err
    assert not any(home.iterdir())


def test_changing_an_included_file_misses_the_render_cache(taosync, tmp_path, home):
    base = write(tmp_path / "team" / "base.yaml", TEAM)
    local = write(tmp_path / "fleet.yaml", LOCAL)
    assert taosync("apply", "--no-verify", config=local).rc == 0
    assert taosync("plan", "--check", config=local).rc == 0
    base.write_text(TEAM.replace("fast: gpt-4o-mini", "fast: claude-sonnet-4-20250514")
                    .replace("codex: {model: fast}", "codex: {model: gpt-4o-mini}"))
    r = taosync("plan", "--check", config=local)
    assert r.rc == 1, r.both
    assert taosync("apply", "--no-verify", config=local).rc == 0
    import tomllib

    assert tomllib.loads((home / ".codex/config.toml").read_text())["model"] == "gpt-4o-mini"
    assert taosync("plan", "--check", config=local).rc == 0


def test_validate_explain_names_the_file_of_each_value(taosync, tmp_path, home):
    base = write(tmp_path / "team" / "base.yaml", TEAM)
    local = write(tmp_path / "fleet.yaml", LOCAL)
    r = taosync("validate", "--explain", config=local)
    assert r.rc == 0, r.both
    lines = r.out.splitlines()
    assert any("gateway.base_url = 'https://mine.example/api'" in ln and f"({local})" in ln
               for ln in lines), r.out
    assert any("routes.balanced" in ln and f"({base.resolve()})" in ln for ln in lines), r.out
    assert any("gateway.key = 'environment variable TAOTOKEN_API_KEY'" in ln or
               "gateway.key = " in ln and "TAOTOKEN_API_KEY" in ln for ln in lines), r.out
    values = json.loads(taosync("validate", "--json", "--explain", config=local).out)["values"]
    assert {"path": "routes.fast", "value": "claude-sonnet-4-20250514",
            "file": str(local)} in values


GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c",
       "commit.gpgsign=false"]


def _hooks_repo(dst):
    """This checkout's tracked files (edits included) as a one-commit repo, and its rev:
    what a team's .pre-commit-config.yaml names (one install for every run below)."""
    import shutil
    import subprocess

    from conftest import ROOT

    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dst / name)
    subprocess.run([*GIT, "init", "-q"], cwd=dst, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=dst, check=True)
    subprocess.run([*GIT, "commit", "-qm", "hooks"], cwd=dst, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=dst, capture_output=True,
                          text=True, check=True).stdout.strip()


def _pre_commit(repo, hook, env):
    import subprocess

    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    return subprocess.run(["pre-commit", "run", hook, "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


def test_pre_commit_hooks_run_in_a_team_repo(tmp_path, home):
    """The shipped .pre-commit-hooks.yaml, run by pre-commit itself in a temporary git repo
    (installs taosync into pre-commit's own environment: ~20 s)."""
    import os
    import shutil
    import subprocess

    import pytest

    if shutil.which("pre-commit") is None:
        pytest.skip("pre-commit is not installed (pip install pre-commit)")
    repo = tmp_path / "team-repo"
    write(repo / "team" / "base.yaml", TEAM.replace("  balanced: claude-sonnet-4-20250514",
                                                    "  balanced: claude-sonet"))
    write(repo / "fleet.yaml", LOCAL)
    hooks = tmp_path / "taosync-src"
    rev = _hooks_repo(hooks)
    write(repo / ".pre-commit-config.yaml",
          f"repos:\n  - repo: {hooks}\n    rev: {rev}\n"
          "    hooks: [{id: taosync-validate}, {id: taosync-plan-check}]\n")
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    env = {k: v for k, v in os.environ.items() if k != "TAOTOKEN_API_KEY"}  # CI: no secret
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), HOME=str(home))
    bad = _pre_commit(repo, "taosync-validate", env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "team/base.yaml:11:13: routes.balanced" in bad.stdout and "Failed" in bad.stdout
    write(repo / "team" / "base.yaml", TEAM)
    good = _pre_commit(repo, "taosync-validate", env)
    assert good.returncode == 0 and "Passed" in good.stdout, good.stdout + good.stderr
    stale = _pre_commit(repo, "taosync-plan-check", env)
    assert stale.returncode == 1 and "Failed" in stale.stdout, stale.stdout + stale.stderr
    from taosync.cli import run as cli_run

    assert cli_run(["--home", str(home), "-c", str(repo / "fleet.yaml"), "apply",
                    "--no-verify"]) == 0
    synced = _pre_commit(repo, "taosync-plan-check", env)
    assert synced.returncode == 0 and "Passed" in synced.stdout, synced.stdout + synced.stderr


def test_a_missing_include_is_reported_alone_and_as_written(tmp_path, home):
    """Issue 29: the include error came last, after two "missing required key" errors
    its absence caused, and named the file by its absolute path."""
    local = write(tmp_path / "fleet.yaml", "version: 1\ninclude: [~/team/base.yaml]\n"
                  "clients:\n  codex: {model: fast}\n")
    assert problems(local, home) == [
        f"{local}:2:11: include[0]: cannot include ~/team/base.yaml: does not exist; fix the "
        "path (relative paths start at the including file's folder)"]


def test_a_broken_include_is_reported_alone(tmp_path, home):
    write(tmp_path / "team" / "base.yaml", "version: 1\nmodels: {a: {}\n")
    local = write(tmp_path / "fleet.yaml", "include: [team/base.yaml]\n"
                  "clients: {codex: {model: fast}}\n")
    assert problems(local, home) == [
        f"{tmp_path / 'team' / 'base.yaml'}:2:9: the {{ opened here is not closed; add '}}' at "
        "the end of line 2"]


def test_a_cycle_names_the_files_as_included(tmp_path, home, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "fleet.yaml", "include: [team/a.yaml]\nversion: 1\n")
    write(tmp_path / "team" / "a.yaml", "include: [../fleet.yaml]\n")
    assert problems(Path("fleet.yaml"), home) == [
        "team/a.yaml:1:11: include[0]: include cycle: fleet.yaml → team/a.yaml → fleet.yaml; "
        "remove one of these includes"]


def test_an_include_through_an_unset_variable_says_so(tmp_path, home):
    local = write(tmp_path / "fleet.yaml", "version: 1\ninclude: [$TEAM_FLEET/base.yaml]\n")
    with pytest.raises(FleetInvalid) as exc_info:
        load_fleet(local, home=home, environ={"TAOTOKEN_API_KEY": "sk-test-key-0123456789"})
    assert [p.format() for p in exc_info.value.problems] == [
        f"{local}:2:11: include[0]: cannot include $TEAM_FLEET/base.yaml: does not exist; "
        "$TEAM_FLEET is not set: export it, or write the path"]
