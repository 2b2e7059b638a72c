"""The real Continue CLI (``cn``, @continuedev/cli 1.5.47) follows a route's failover and
recovery: it asks the stand-in gateway for whichever model taosync chose. Skipped unless
the binary is found (``TAOSYNC_TEST_CN_BIN``, else ``cn`` on PATH)."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import TEST_KEY, binary, client_location_vars
from test_routing_failover import BACKUP, MODELS, PREFERRED, choosing_fleet

CN = binary("TAOSYNC_TEST_CN_BIN", "cn")
pytestmark = pytest.mark.skipif(CN is None, reason="cn is not installed (TAOSYNC_TEST_CN_BIN)")


def ask_cn(home, stub) -> tuple[str, list]:
    """Run ``cn -p`` in ``home``; its output and the requests the stub saw meanwhile."""
    before = len(stub.requests)
    env = {k: v for k, v in os.environ.items()
           if k not in client_location_vars() and k != "CONTINUE_GLOBAL_DIR"}
    env["HOME"] = str(home)
    done = subprocess.run([CN, "-p", "Reply with OK."], env=env, capture_output=True,
                          text=True, timeout=120, cwd=home)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, [s for s in stub.requests[before:] if s.method == "POST"]


def test_cn_follows_failover_and_recovery(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS, faults=[f"server_error@{PREFERRED}"]) as stub:
        choosing_fleet(fleet_file, stub.root)
        text = fleet_file.read_text()  # no MCP server: cn -p fails when one cannot start
        fleet_file.write_text(text[:text.index("mcp_servers:")] + text[text.index("verify:"):])
        assert taosync("apply").rc == 1  # the preferred candidate fails its probe
        out, seen = ask_cn(home, stub)
        assert [(s.path, s.auth, s.body.get("model")) for s in seen] == [
            ("/v1/chat/completions", "ok", BACKUP)]
        assert f"{BACKUP} answered through the taosync stand-in" in out

        stub.clear_faults()
        assert taosync("verify").rc == 0
        assert taosync("apply").rc == 0
        out, seen = ask_cn(home, stub)
        assert [s.body.get("model") for s in seen] == [PREFERRED]
        assert f"{PREFERRED} answered through the taosync stand-in" in out
