"""Profiles (docs/profiles.md) proven with the real clients: two profiles, each on its own
stand-in gateway (its own port and key), run the same client at the same time through
``taosync exec`` — each request lands at its profile's gateway with its profile's key —
and the user scope's files and state stay byte for byte as they were.

Everything runs through real ``python -m taosync`` processes in a sandbox home, the
clients with ``HOME`` = that home and only 127.0.0.1 to talk to.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import ROOT, binary

CLAUDE = binary("TAOSYNC_TEST_CLAUDE_BIN", "claude")
CODEX = binary("TAOSYNC_TEST_CODEX_BIN", "codex")

KEY_WORK = "sk-test-WORKKEY-0123456789abcdef"
KEY_HOME = "sk-test-HOMEKEY-fedcba9876543210"


def _env(home: Path) -> dict[str, str]:
    """A clean environment: the sandbox home, both keys, nothing that moves a client."""
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(home), "TERM": "dumb", "NO_COLOR": "1", "PYTHONPATH": str(ROOT),
            "KEY_WORK": KEY_WORK, "KEY_HOME": KEY_HOME,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def _taosync(home: Path, fleet: Path, *args: str, env: dict) -> list[str]:
    return [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(fleet), *args]


def _world(tmp_path: Path, work_root: str, home_root: str, clients: dict) -> tuple[Path, Path]:
    """A sandbox home and a fleet with gateways ``work`` and ``home`` (the stand-ins),
    the user scope on ``work``, profile ``work`` on gateway work (model gw-work) and
    profile ``home`` on gateway home (model gw-home)."""
    home = tmp_path / "home"
    home.mkdir()
    fleet = tmp_path / "fleet.yaml"
    data = {
        "version": 1,
        "gateways": {"work": {"base_url": work_root, "key": "${env:KEY_WORK}"},
                     "home": {"base_url": home_root, "key": "${env:KEY_HOME}"}},
        "default_gateway": "work",
        "models": {"gw-work": {}, "gw-home": {}},
        "routes": {"main": "gw-work"},
        "default_route": "main",
        "clients": clients,
        "profiles": {"work": {"gateway": "work"},
                     "home": {"gateway": "home", "routes": {"main": "gw-home"}}},
    }
    with fleet.open("w") as fh:
        YAML(typ="safe").dump(data, fh)
    return home, fleet


def _snapshot(home: Path) -> dict[str, bytes]:
    """Every file of the user scope (the profiles' roots and state left out)."""
    skip = (home / ".local/share/taosync/profiles", home / ".local/state/taosync/profiles")
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*"))
            if p.is_file() and not any(p.is_relative_to(s) for s in skip)}


def _side_by_side(home: Path, fleet: Path, env: dict, argv: list[str]):
    """``taosync exec work -- argv`` and ``taosync exec home -- argv``, started together:
    both are running before either ends. Returns {profile: completed run}."""
    procs = {}
    for name in ("work", "home"):
        procs[name] = subprocess.Popen(_taosync(home, fleet, "exec", name, "--", *argv, env=env),
                                       cwd=home / "work", env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
    time.sleep(0.5)
    assert all(p.poll() is None for p in procs.values()), "the two runs did not overlap"
    out = {}
    for name, p in procs.items():
        stdout, stderr = p.communicate(timeout=240)
        out[name] = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
    return out


def _prove(tmp_path: Path, client: str, exe: str, argv: list[str], path: str,
           entry: dict) -> None:
    from taosync.stub import Stub

    with Stub(key=KEY_WORK, models=["gw-work", "gw-home"], prefix="/api") as work_gw, \
            Stub(key=KEY_HOME, models=["gw-work", "gw-home"], prefix="/api") as home_gw:
        assert work_gw.port != home_gw.port
        home, fleet = _world(tmp_path, work_gw.root, home_gw.root, {client: entry})
        (home / "work").mkdir()
        env = _env(home)
        run = subprocess.run(_taosync(home, fleet, "apply", "--no-verify", env=env),
                             env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        before = _snapshot(home)
        for name in ("work", "home"):
            run = subprocess.run(_taosync(home, fleet, "--profile", name, "apply",
                                          "--no-verify", env=env),
                                 env=env, capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, run.stdout + run.stderr
        assert _snapshot(home) == before  # applying the profiles left the user scope alone

        done = _side_by_side(home, fleet, env, [exe, *argv])
        for name, gateway, key_seen_by_other in (("work", work_gw, home_gw),
                                                 ("home", home_gw, work_gw)):
            r = done[name]
            assert r.returncode == 0, (name, r.stdout[-1000:], r.stderr[-2000:])
            assert f"gw-{name} answered through the taosync stand-in" in r.stdout + r.stderr
        work_calls = [r for r in work_gw.requests if r.method == "POST" and r.path == path]
        home_calls = [r for r in home_gw.requests if r.method == "POST" and r.path == path]
        # each profile's requests at its own gateway, with its own key, for its own model
        assert work_calls and all(r.auth == "ok" for r in work_calls)
        assert home_calls and all(r.auth == "ok" for r in home_calls)
        assert {r.body.get("model") for r in work_calls} == {"gw-work"}
        assert {r.body.get("model") for r in home_calls} == {"gw-home"}
        assert all(r.auth == "ok" for r in work_gw.requests + home_gw.requests)
        assert _snapshot(home) == before  # nor did running the clients inside them


@pytest.mark.skipif(CLAUDE is None, reason="claude is not installed; set "
                    "TAOSYNC_TEST_CLAUDE_BIN")
def test_real_two_profiles_run_claude_side_by_side(tmp_path):
    """Claude Code twice at once, in profiles work and home (CLAUDE_CONFIG_DIR each):
    each run's Messages requests reach its own profile's gateway with its key."""
    assert CLAUDE is not None
    _prove(tmp_path, "claude-code", CLAUDE, ["-p", "Reply with OK."], "/api/v1/messages",
           {"model": "main"})


@pytest.mark.skipif(CODEX is None, reason="codex is not installed; set TAOSYNC_TEST_CODEX_BIN")
def test_real_two_profiles_run_codex_side_by_side(tmp_path):
    """Codex twice at once, in profiles work and home (CODEX_HOME each): each run's
    Responses requests reach its own profile's gateway with its key."""
    assert CODEX is not None
    _prove(tmp_path, "codex", CODEX, ["exec", "--skip-git-repo-check", "Reply with OK."],
           "/api/v1/responses", {"model": "main"})
