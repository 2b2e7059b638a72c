"""Running a real client against the stand-in gateway, with only taosync's files in its home.

A test names the binary through ``TAOSYNC_TEST_<CLIENT>_BIN`` (else the client's command
on ``PATH``: :func:`binary`, :func:`binary_or_skip`, from conftest) and skips when it is
absent — fails, with ``TAOSYNC_REAL_CLIENTS=required`` (CI's real-client step). :func:`stand_in` starts a loopback
:class:`~taosync.stub.Stub`; :meth:`StandIn.apply` writes the example fleet with the
gateway at the stub and one client, and applies it into the sandbox home;
:meth:`StandIn.run` runs the binary with ``HOME`` = that home and an environment holding
only ``PATH``, ``TERM``, ``NO_COLOR`` and what the test adds, so the files taosync wrote
are all the client has. :func:`run_real_client` does both once, for a client's one-shot
mode. Nothing but 127.0.0.1 is contacted. (gptme and Vibe, which would look beyond it,
run in a loopback-only network namespace instead: ``real_client.py``.)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, TEST_KEY, binary, binary_or_skip  # noqa: F401


@dataclass
class StandIn:
    """A running stand-in gateway and the sandbox home a real client is run in."""

    taosync: object  # conftest's in-process runner
    fleet_file: Path
    home: Path
    stub: object  # taosync.stub.Stub

    def apply(self, client_id: str, entry: dict, *, secrets: str = "inline",
              gateway: dict | None = None, **top) -> dict:
        """The example fleet with the gateway at the stand-in (and ``gateway``'s other
        keys), ``client_id`` its only client and ``top`` replacing top-level keys,
        written and applied; returns it."""
        yaml = YAML(typ="safe")
        data = yaml.load(EXAMPLE_FLEET.read_text())
        data["gateway"].update(base_url=self.stub.root, **(gateway or {}))
        data.update(clients={client_id: entry}, secrets=secrets, **top)
        with self.fleet_file.open("w") as fh:
            yaml.dump(data, fh)
        r = self.taosync("apply", "--no-verify")
        assert r.rc == 0, r.both
        return data

    def run(self, argv: list[str], *, env: dict | None = None, cwd: Path | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess:
        """The client run in the sandbox home, stdin closed, with ``env`` added."""
        base = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
                "HOME": str(self.home), "TERM": "dumb", "NO_COLOR": "1"}
        return subprocess.run(argv, cwd=cwd or self.home, env={**base, **(env or {})},
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)


@contextlib.contextmanager
def stand_in(taosync, fleet_file: Path, home: Path, **stub_options) -> Iterator[StandIn]:
    """A :class:`StandIn` around a Stub holding the test key (``stub_options``: models,
    prefix, faults), stopped on the way out."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, **stub_options) as stub:
        yield StandIn(taosync, fleet_file, home, stub)


def run_real_client(taosync, fleet_file: Path, home: Path, exe: str, args: list[str],
                    client_id: str, entry: dict, *, secrets: str = "inline",
                    env: dict | None = None, headers: dict | None = None,
                    timeout: float = 180, key: str | None = None):
    """Apply a fleet pointing ``client_id`` at a stand-in gateway (root under /api, also
    the Gemini root; models gw-main and gw-fast on routes main and fast; no MCP server,
    which would make the client start npx; ``key``: gateway.key when not the example's),
    then run the client once in ``~/work``.
    Returns (completed process, the stand-in's recorded requests)."""
    with stand_in(taosync, fleet_file, home, models=["gw-main", "gw-fast"],
                  prefix="/api") as s:
        s.apply(client_id, entry, secrets=secrets,
                gateway={"gemini_base_url": s.stub.root, "headers": headers or {},
                         **({"key": key} if key else {})},
                models={"gw-main": {}, "gw-fast": {}},
                routes={"main": "gw-main", "fast": "gw-fast"}, default_route="main",
                mcp_servers={})
        work = home / "work"
        work.mkdir(exist_ok=True)
        done = s.run([exe, *args], env=env, cwd=work, timeout=timeout)
        return done, list(s.stub.requests)


def assert_answered(proc: subprocess.CompletedProcess, stub, model: str) -> None:
    """One chat completion for ``model`` with the fleet's key, and the reply printed."""
    posts = stub.posts("/v1/chat/completions")
    assert [p.body.get("model") for p in posts] == [model], (posts, proc.stdout, proc.stderr)
    assert posts[0].auth == "ok", posts[0]
    assert f"{model} answered through the taosync stand-in gateway" in proc.stdout, \
        proc.stdout + proc.stderr
    assert TEST_KEY not in proc.stdout + proc.stderr


#: tests/clients/echo_mcp.py: an MCP server that records the environment it was given
ECHO_MCP = Path(__file__).resolve().with_name("echo_mcp.py")


def echo_mcp_server(out: Path, env: dict[str, str]) -> dict:
    """fleet.yaml's ``mcp_servers`` entry for :data:`ECHO_MCP` with ``env``: run through a
    client, it writes the environment the client handed it to ``out`` (read it with
    :func:`mcp_env_seen`)."""
    import sys

    return {"command": sys.executable, "args": [str(ECHO_MCP), str(out)], "env": env}


def mcp_env_seen(out: Path) -> dict[str, str] | None:
    """The environment the echo MCP server was started with, None if it never started."""
    import json

    return json.loads(out.read_text()) if out.exists() else None
