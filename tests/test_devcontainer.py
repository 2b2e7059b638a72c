"""The devcontainer feature ``taosync`` (devcontainer/src/taosync, docs/system.md).

``install.sh`` is run as the devcontainer CLI runs it: the options as upper-case
environment variables, in a clean environment, installing taosync from this checkout (the
``package`` option) into a venv of its own under a temporary prefix (the test-only
``TAOSYNC_FEATURE_PREFIX``/``TAOSYNC_FEATURE_BIN``). Then the lifecycle command, exactly
as devcontainer-feature.json spells it, runs in a workspace holding a fleet, as a user
with a temporary HOME and the key only in the environment (a container secret).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import TEST_KEY, snapshot

ROOT = Path(__file__).resolve().parent.parent
FEATURE = ROOT / "devcontainer" / "src" / "taosync"


def feature() -> dict:
    return json.loads((FEATURE / "devcontainer-feature.json").read_text())


def test_feature_metadata_follows_the_spec():
    """id = its directory, a semver version, typed options with defaults, the lifecycle
    hooks, and no mount (the host's home, and its keys, never enter the container)."""
    data = feature()
    assert data["id"] == FEATURE.name
    assert all(part.isdigit() for part in data["version"].split("."))
    for name, opt in data["options"].items():
        assert opt["type"] in ("string", "boolean"), name
        assert "default" in opt and opt.get("description"), name
        if "enum" in opt:
            assert opt["default"] in opt["enum"]
    assert {"version", "fleet", "apply", "package"} <= set(data["options"])
    assert data["postCreateCommand"] == "taosync-devcontainer create"
    assert data["postStartCommand"] == "taosync-devcontainer start"
    assert "mounts" not in data
    install = FEATURE / "install.sh"
    assert os.access(install, os.X_OK)
    assert subprocess.run(["sh", "-n", str(install)]).returncode == 0


def _clean_env(home: Path, **more: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "LANG": "C.UTF-8", **{k: v for k, v in os.environ.items()
                                  if k.startswith("PIP_")}, **more}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """install.sh run once with the options as the spec passes them."""
    if shutil.which("python3") is None:
        pytest.skip("python3 is not on PATH")
    base = tmp_path_factory.mktemp("feature")
    prefix, bindir, roothome = base / "prefix", base / "bin", base / "root-home"
    roothome.mkdir()
    # a copy of the checkout: pip builds in the source tree (build/, *.egg-info), and two
    # workers building in the same one race
    source = base / "taosync-src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "*.egg-info", "__pycache__", "tests", "bench", ".ci"))
    env = _clean_env(roothome, VERSION="0.1.0", PACKAGE=str(source), FLEET=".devcontainer/fleet.yaml",
                     APPLY="start", ONLY="", VERIFY="false",
                     TAOSYNC_FEATURE_PREFIX=str(prefix), TAOSYNC_FEATURE_BIN=str(bindir))
    r = subprocess.run(["sh", str(FEATURE / "install.sh")], env=env, cwd=base,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "installed taosync, version 0.1.0" in r.stdout
    return prefix, bindir


def _workspace(where: Path) -> Path:
    ws = where / "workspace"
    (ws / ".devcontainer").mkdir(parents=True)
    with (ws / ".devcontainer" / "fleet.yaml").open("w") as out:  # closed: libyaml buffers
        YAML(typ="safe").dump({
            "version": 1,
            "gateway": {"base_url": "https://gw.example.com/api",
                        "key": "${env:TAOTOKEN_API_KEY}"},
            "models": {"gw-main": {}}, "routes": {"main": "gw-main"}, "default_route": "main",
            "secrets": "reference",
            "clients": {"claude-code": {"model": "main"}, "codex": {"model": "main"}}}, out)
    return ws


def _lifecycle(hook: str, bindir: Path, ws: Path, home: Path, **env: str):
    """The feature's lifecycle command, as devcontainer-feature.json spells it, in the
    workspace folder (where the devcontainer CLI runs it)."""
    argv = shlex.split(feature()[hook])
    full = _clean_env(home, **env)
    full["PATH"] = f"{bindir}{os.pathsep}{full['PATH']}"
    return subprocess.run(argv, env=full, cwd=ws, capture_output=True, text=True, timeout=300)


def test_lifecycle_applies_the_workspace_fleet_and_a_second_start_is_a_no_op(installed,
                                                                              tmp_path):
    prefix, bindir = installed
    home = tmp_path / "vscode"
    home.mkdir()
    ws = _workspace(tmp_path)
    # apply: start — postCreate does nothing, postStart applies
    created = _lifecycle("postCreateCommand", bindir, ws, home, TAOTOKEN_API_KEY=TEST_KEY)
    assert created.returncode == 0, created.stderr
    assert not any(home.iterdir())
    first = _lifecycle("postStartCommand", bindir, ws, home, TAOTOKEN_API_KEY=TEST_KEY)
    assert first.returncode == 0, first.stdout + first.stderr
    settings = json.loads((home / ".claude/settings.json").read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "https://gw.example.com/api"
    assert settings["apiKeyHelper"] == "printenv TAOTOKEN_API_KEY"
    assert 'env_key = "TAOTOKEN_API_KEY"' in (home / ".codex/config.toml").read_text()
    # the key is nowhere on disk (secrets: reference), nor in the output
    for path in home.rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path
    assert TEST_KEY not in first.stdout + first.stderr
    # a second start: nothing to do, not a byte written
    before = snapshot(home)
    second = _lifecycle("postStartCommand", bindir, ws, home, TAOTOKEN_API_KEY=TEST_KEY)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "nothing to do" in (second.stdout + second.stderr).lower()
    assert snapshot(home) == before


def test_lifecycle_without_the_secret_fails_and_writes_nothing(installed, tmp_path):
    """The container's secret is missing: taosync's located message, exit 2, no file."""
    prefix, bindir = installed
    home = tmp_path / "vscode"
    home.mkdir()
    ws = _workspace(tmp_path)
    r = _lifecycle("postStartCommand", bindir, ws, home)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "TAOTOKEN_API_KEY" in r.stderr and "Traceback" not in r.stderr
    assert not (home / ".claude").exists() and not (home / ".codex").exists()


def test_install_rejects_a_bad_option(tmp_path):
    env = _clean_env(tmp_path, APPLY="always", TAOSYNC_FEATURE_PREFIX=str(tmp_path / "p"),
                     TAOSYNC_FEATURE_BIN=str(tmp_path / "b"))
    r = subprocess.run(["sh", str(FEATURE / "install.sh")], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "apply must be start, create or never" in r.stderr
    assert not (tmp_path / "p").exists()
