"""Small hardening cases from issue 11: what a hostile or unlucky input must not do."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from taosync.fleet.secrets import Reference, SecretError, resolve


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_until_gone(pid: int, within: float = 5.0) -> bool:
    """Poll (bounded) until ``pid`` is gone: SIGKILL is delivered asynchronously."""
    deadline = time.monotonic() + within
    while is_running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- a key command that times out --------------------------------------------------------


def test_timed_out_key_command_takes_its_children_with_it(tmp_path):
    pidfile = tmp_path / "child.pid"
    ref = Reference("shell", f"sleep 30 & echo $! > {pidfile}; sleep 30")
    started = time.monotonic()
    try:
        with pytest.raises(SecretError, match=r"did not finish within 1\.5 s"):
            resolve(ref, environ={"PATH": os.environ["PATH"]}, timeout=1.5)
        assert time.monotonic() - started < 5
        child = int(pidfile.read_text())
        assert wait_until_gone(child), f"the key command's child {child} is still running"
    finally:
        if pidfile.exists() and is_running(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), 9)


def test_cmd_key_command_that_forks_is_killed_as_a_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "forker.sh"
    script.write_text(f"#!/bin/sh\nsleep 30 &\necho $! > {pidfile}\nwait\n")
    script.chmod(0o755)
    try:
        with pytest.raises(SecretError, match="did not finish"):
            resolve(Reference("cmd", str(script)), environ={"PATH": os.environ["PATH"]},
                    timeout=1.5)
        assert wait_until_gone(int(pidfile.read_text()))
    finally:
        if pidfile.exists() and is_running(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), 9)


def test_key_command_that_finishes_still_gives_its_output():
    secret = resolve(Reference("shell", "echo sk-fine-0123456789"),
                     environ={"PATH": os.environ["PATH"]})
    assert secret.reveal() == "sk-fine-0123456789"
