"""Running a real client binary against the stand-in gateway, with only taosync's files.

A test names the binary through ``TAOSYNC_TEST_<CLIENT>_BIN`` (else ``PATH``) and skips
when it is absent. :func:`applied` writes a fleet whose gateway is a loopback
:class:`~taosync.stub.Stub` and applies it into the sandbox home; :func:`run_client`
runs the binary with ``HOME`` = that home and the client's location and key variables
unset, so the files taosync wrote are all it has. Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

import conftest
from conftest import TEST_KEY

#: variables that would point a client elsewhere or hand it a key behind taosync's back
CLEARED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "LLM_USER_PATH",
           "XDG_CONFIG_HOME", "API_BASE_URL", "DEFAULT_MODEL", "AIDER_MODEL")


def binary(client: str, name: str) -> str:
    """The client's executable, or skip the test."""
    var = f"TAOSYNC_TEST_{client.upper().replace('-', '_')}_BIN"
    path = os.environ.get(var) or shutil.which(name)
    if not path or not os.access(path, os.X_OK):
        pytest.skip(f"{name} is not installed (set {var})")
    return path


def applied(taosync, fleet_file: Path, stub, client_id: str, entry: dict, *,
            secrets: str = "inline") -> dict:
    """Apply the example fleet, gateway at ``stub``, with ``client_id`` its only client;
    returns the fleet written."""
    yaml = YAML(typ="safe")
    data = yaml.load(conftest.EXAMPLE_FLEET.read_text())
    data["gateway"]["base_url"] = stub.root
    data["clients"] = {client_id: entry}
    data["secrets"] = secrets
    with fleet_file.open("w") as fh:
        yaml.dump(data, fh)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    return data


def run_client(argv: list[str], home: Path, *, cwd: Path | None = None,
               env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the client in the sandbox home, stdin closed, with ``env`` added."""
    environ = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environ.update({"HOME": str(home), "NO_COLOR": "1", **(env or {})})
    return subprocess.run(argv, cwd=cwd or home, env=environ, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def assert_answered(proc: subprocess.CompletedProcess, stub, model: str) -> None:
    """One chat completion for ``model`` with the fleet's key, and the reply printed."""
    posts = stub.posts("/v1/chat/completions")
    assert [p.body.get("model") for p in posts] == [model], (posts, proc.stdout, proc.stderr)
    assert posts[0].auth == "ok", posts[0]
    assert f"{model} answered through the taosync stand-in gateway" in proc.stdout, \
        proc.stdout + proc.stderr
    assert TEST_KEY not in proc.stdout + proc.stderr
