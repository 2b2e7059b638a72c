"""Named gateways with the real binaries (issue 26, build 1): Claude Code on gateway A and
Codex on gateway B — two stand-ins on different ports, each accepting only its own key —
each real client's requests land at its own gateway with its own key; then
``taosync use B`` and Claude Code's next request lands at B, with B's key.

Only taosync's files in a temporary HOME, only 127.0.0.1 (clients.md §1: Claude Code's
non-essential traffic off)."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from clients.real import StandIn
from conftest import binary

CLAUDE = binary("TAOSYNC_TEST_CLAUDE_BIN", "claude")
CODEX = binary("TAOSYNC_TEST_CODEX_BIN", "codex")

KEY_A = "sk-real-gw-a-0123456789abcdef01"
KEY_B = "sk-real-gw-b-0123456789abcdef02"
CLAUDE_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def two_gateway_fleet(a, b) -> dict:
    return {
        "version": 1,
        "gateway": {"base_url": a.root, "key": "${env:GW_A_KEY}"},
        "gateways": {"work": {"base_url": b.root, "key": "${env:GW_B_KEY}"}},
        "models": {"gw-main": {}},
        "routes": {"main": "gw-main"},
        "default_route": "main",
        "clients": {"claude-code": {"model": "main", "haiku": "main"},
                    "codex": {"model": "main", "gateway": "work"}},
    }


def posts(stub, path: str) -> list:
    return [r for r in stub.requests if r.method == "POST" and r.path.startswith(path)]


@pytest.mark.skipif(CLAUDE is None or CODEX is None,
                    reason="claude and codex are not installed; set TAOSYNC_TEST_CLAUDE_BIN "
                    "and TAOSYNC_TEST_CODEX_BIN")
def test_real_clients_on_two_gateways_then_use_switches_claude(taosync, home, fleet_file,
                                                               monkeypatch):
    from taosync.stub import Stub

    monkeypatch.setenv("GW_A_KEY", KEY_A)
    monkeypatch.setenv("GW_B_KEY", KEY_B)
    with Stub(key=KEY_A, models=["gw-main"], prefix="/api") as a, \
            Stub(key=KEY_B, models=["gw-main"], prefix="/api") as b:
        assert a.root != b.root
        yaml = YAML(typ="safe")
        with fleet_file.open("w") as fh:
            yaml.dump(two_gateway_fleet(a, b), fh)
        applied = taosync("apply", "--no-verify")
        assert applied.rc == 0, applied.both
        work = home / "work"
        work.mkdir()
        run = StandIn(taosync, fleet_file, home, a).run

        # Claude Code on A, with A's key
        done = run([CLAUDE, "-p", "Reply with OK."], env=CLAUDE_ENV, cwd=work)
        assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
        assert "answered through the taosync stand-in" in done.stdout
        at_a = posts(a, "/api/v1/messages")
        assert at_a and all(r.auth == "ok" for r in at_a)  # A's key, which A accepts
        assert not posts(b, "/api/v1/messages")

        # Codex on B (work), with B's key
        done = run([CODEX, "exec", "--skip-git-repo-check", "Reply with OK."], cwd=work)
        assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
        at_b = posts(b, "/api/v1/responses")
        assert at_b and all(r.auth == "ok" and r.body["model"] == "gw-main" for r in at_b)
        assert not posts(a, "/api/v1/responses")

        # taosync use work: Claude Code now lands at B, with B's key
        switched = taosync("use", "work", "--no-verify", "--yes")
        assert switched.rc == 0, switched.both
        assert "switch: default gateway default → work (claude-code now on work)" in switched.out
        for key in (KEY_A, KEY_B):
            assert key not in switched.both
        before_a = len(posts(a, "/api/v1/messages"))
        done = run([CLAUDE, "-p", "Reply with OK."], env=CLAUDE_ENV, cwd=work)
        assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
        now_b = posts(b, "/api/v1/messages")
        assert now_b and all(r.auth == "ok" for r in now_b)
        assert len(posts(a, "/api/v1/messages")) == before_a  # nothing more at A
