"""Project scope with the real clients (issue #26, Build 3; docs/project.md).

A user-level apply points every client at stand-in A (key A, model gw-a); a project overlay
(``taosync.yaml`` in a git repository) points it at stand-in B (another port, key B, model
gw-b) and ``taosync apply --project --trust`` renders it into the clients' project files.
Each project-capable client run in the repository lands at B, and run outside it at A:
the request shows which file won. Codex and gptme take only the model from a project, so
run in it they ask A for the project's model. The key is written inline, into files git
ignores (``.git/info/exclude``), as docs/project.md says; every run has only taosync's
files in its home and 127.0.0.1 to talk to.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, ROOT, binary_or_skip
from one_shot import BY_CLIENT, OneShot

KEY_A = "sk-test-userAAAA-0123456789abcdef"
KEY_B = "sk-test-projBBBB-fedcba9876543210"
#: the clients that take a project's gateway, and those that take only its model
GATEWAY = ["claude-code", "opencode", "kilo", "qwen-code", "aider", "gemini-cli"]
MODEL_ONLY = ["codex", "gptme"]
#: the project files that hold the key inline: git must ignore them (docs/project.md)
IGNORED = [".claude/settings.local.json", "opencode.json", "kilo.json", ".qwen/settings.json",
           ".aider.conf.yml", ".gemini/.env", ".mcp.json"]


def _dump(path: Path, data: dict) -> None:
    yaml = YAML(typ="safe")
    with path.open("w") as fh:
        yaml.dump(data, fh)


def _taosync(home: Path, fleet: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**env, "A_KEY": KEY_A, "B_KEY": KEY_B,
                                            "PYTHONPATH": str(ROOT)})


def _setup(tmp_path: Path, run: OneShot, a, b) -> tuple[Path, Path, Path]:
    """(home, the user's fleet, the repository), both scopes applied."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".git" / "info" / "exclude").write_text("\n".join(IGNORED) + "\n")
    fleet = tmp_path / "fleet.yaml"
    yaml = YAML(typ="safe")
    data = yaml.load(EXAMPLE_FLEET.read_text())
    data["gateway"] = {"base_url": a.root, "key": "${env:A_KEY}", "gemini_base_url": a.root}
    data.update(clients={run.client: run.entry}, secrets="inline", mcp_servers={},
                models={"gw-a": {}}, routes={"main": "gw-a"}, default_route="main")
    _dump(fleet, data)
    _dump(repo / "taosync.yaml", {
        "version": 1,
        "gateway": {"base_url": b.root, "key": "${env:B_KEY}", "gemini_base_url": b.root},
        "models": {"gw-b": {}}, "routes": {"main": "gw-b"}})
    if run.prepare is not None:
        run.prepare(home, ["gw-a", "gw-b"])
    user = _taosync(home, fleet, "apply", "--no-verify", cwd=home / "work")
    assert user.returncode == 0, user.stderr
    project = _taosync(home, fleet, "apply", "--project", "--trust", "--yes", "--no-verify",
                       cwd=repo)
    assert project.returncode == 0, project.stderr
    assert KEY_B not in project.stdout + project.stderr
    return home, fleet, repo


def _run(exe: str, run: OneShot, home: Path, cwd: Path, *, inside: bool):
    args = list(run.args)
    if inside and run.client == "gemini-cli":  # trusted by --trust: its project settings apply
        args.remove("--skip-trust")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb", "NO_COLOR": "1",
           **run.env}
    try:
        return subprocess.run([exe, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{run.binary} did not finish: {exc.stdout!r} {exc.stderr!r}")


def _posts(stub, run: OneShot) -> list:
    return [r for r in stub.requests if r.method == "POST" and run.protocol_path in r.path]


def _exe(run: OneShot) -> str:
    return binary_or_skip(f"TAOSYNC_TEST_{run.binary.upper()}_BIN", run.binary)


def _b_inside_a_outside(exe: str, run: OneShot, home: Path, repo: Path, a, b) -> None:
    """Run in the repository the client lands at B (the project's gateway, key B) and
    nowhere else; run outside it, at A with key A; neither key printed."""
    inside = _run(exe, run, home, repo, inside=True)
    said = inside.stdout + inside.stderr
    assert inside.returncode == 0, said[-3000:]
    assert "gw-b answered through the taosync stand-in" in inside.stdout, said[-3000:]
    assert _posts(b, run) and {r.auth for r in _posts(b, run)} == {"ok"}
    assert not _posts(a, run), "run in the project, it still went to the user's gateway"
    outside = _run(exe, run, home, home / "work", inside=False)
    said = outside.stdout + outside.stderr
    assert outside.returncode == 0, said[-3000:]
    assert "gw-a answered through the taosync stand-in" in outside.stdout, said[-3000:]
    assert _posts(a, run) and {r.auth for r in _posts(a, run)} == {"ok"}
    assert KEY_A not in said and KEY_B not in said


@pytest.mark.parametrize("client", GATEWAY)
def test_real_project_gateway_wins_inside_the_project_only(client, tmp_path):
    from taosync.stub import Stub

    run = BY_CLIENT[client]
    exe = _exe(run)
    with Stub(key=KEY_A, models=["gw-a"], prefix="/api") as a, \
            Stub(key=KEY_B, models=["gw-b"], prefix="/api") as b:
        home, _fleet, repo = _setup(tmp_path, run, a, b)
        _b_inside_a_outside(exe, run, home, repo, a, b)


@pytest.mark.parametrize("client", MODEL_ONLY)
def test_real_project_model_only_clients_take_the_projects_model(client, tmp_path):
    from taosync.stub import Stub

    run = BY_CLIENT[client]
    exe = _exe(run)
    # A serves both models: these clients keep the user's gateway and key in a project
    with Stub(key=KEY_A, models=["gw-a", "gw-b"], prefix="/api") as a, \
            Stub(key=KEY_B, models=["gw-b"], prefix="/api") as b:
        home, _fleet, repo = _setup(tmp_path, run, a, b)
        inside = _run(exe, run, home, repo, inside=True)
        said = inside.stdout + inside.stderr
        assert inside.returncode == 0, said[-3000:]
        assert "gw-b answered through the taosync stand-in" in inside.stdout, said[-3000:]
        assert _posts(a, run) and {r.auth for r in _posts(a, run)} == {"ok"}
        assert not _posts(b, run)
        a.requests.clear()
        outside = _run(exe, run, home, home / "work", inside=False)
        said = outside.stdout + outside.stderr
        assert outside.returncode == 0, said[-3000:]
        assert "gw-a answered through the taosync stand-in" in outside.stdout, said[-3000:]


def test_real_project_mistral_vibe(tmp_path):
    """Vibe reads a project's ``.vibe/config.toml`` only in a folder the user trusted (apply
    prints the line to add; taosync does not own one element of its list) and takes the
    project's key from the variable the file names (``${env:B_KEY}``): run there it lands
    at B with key B, outside at A. Not installable by the CI's installer (Python 3.12 and a
    certifi pin this registry lacks): run it with a ``vibe`` on PATH (docs/project.md)."""
    from taosync.stub import Stub

    run = BY_CLIENT["mistral-vibe"]
    exe = _exe(run)
    with Stub(key=KEY_A, models=["gw-a"], prefix="/api") as a, \
            Stub(key=KEY_B, models=["gw-b"], prefix="/api") as b:
        home, _fleet, repo = _setup(tmp_path, run, a, b)
        assert (repo / ".vibe/config.toml").exists()
        (home / ".vibe/trusted_folders.toml").write_text(
            f'trusted = ["{repo.resolve()}"]\nuntrusted = []\n')
        run = dataclasses.replace(run, env={**run.env, "B_KEY": KEY_B})
        _b_inside_a_outside(exe, run, home, repo, a, b)
