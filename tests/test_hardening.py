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
        with pytest.raises(SecretError, match=r"did not finish within 0\.8 s"):
            resolve(ref, environ={"PATH": os.environ["PATH"]}, timeout=0.8)
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
                    timeout=0.8)
        assert wait_until_gone(int(pidfile.read_text()))
    finally:
        if pidfile.exists() and is_running(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), 9)


def test_key_command_that_finishes_still_gives_its_output():
    secret = resolve(Reference("shell", "echo sk-fine-0123456789"),
                     environ={"PATH": os.environ["PATH"]})
    assert secret.reveal() == "sk-fine-0123456789"


# -- a fleet.yaml nested 1,000 levels deep ------------------------------------------------

DEEP_FLEETS = {
    "flow lists": "version: 1\nmodels: " + "[" * 1000 + "]" * 1000 + "\n",
    "flow mappings": "version: 1\nmodels: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n",
    "block mappings": "version: 1\nmodels:\n" + "".join(" " * i + "a:\n" for i in range(1, 200)),
}
#: where the 65th level starts: the 65th ``[``; the key of the 64th ``{``; the 65th key
WHERE = {"flow lists": (2, 9 + 64), "flow mappings": (2, 9 + 63 * 4 + 1),
         "block mappings": (66, 65)}


@pytest.mark.parametrize("shape", DEEP_FLEETS)
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_deeply_nested_fleet_is_rejected_fast_and_located(taosync, fleet_file, home,
                                                          shape, command):
    fleet_file.write_text(DEEP_FLEETS[shape])
    started = time.perf_counter()
    r = taosync(command)
    took = time.perf_counter() - started
    assert r.rc == 2, r.both
    line, col = WHERE[shape]
    assert f"fleet.yaml:{line}:{col}: nested deeper than 64 levels" in r.err
    assert "Traceback" not in r.both and "RecursionError" not in r.both
    assert took < 1.0, f"{took:.2f} s"  # ~10 ms unloaded; the bound leaves room for load
    assert not any(home.iterdir()), "nothing is written"


def test_two_kilobytes_of_brackets_is_what_the_issue_measured():
    assert 2000 <= len(DEEP_FLEETS["flow lists"].encode()) <= 2100


def test_nesting_up_to_the_limit_still_parses(tmp_path):
    from taosync.fleet.load import MAX_DEPTH, FleetInvalid, load_fleet

    path = tmp_path / "fleet.yaml"
    # 64 levels below the top: the schema rejects the shape, but not the depth
    path.write_text("version: 1\nx: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")
    with pytest.raises(FleetInvalid) as info:
        load_fleet(path, home=tmp_path, environ={})
    assert not any("nested deeper" in p.message for p in info.value.all())


# -- a TOML target with a UTF-8 BOM --------------------------------------------------------


def test_toml_target_with_a_bom_is_refused_by_name(taosync, home):
    from conftest import snapshot

    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(b"\xef\xbb\xbf" + b'model = "gpt-4o"\n[tui]\nnotifications = true\n')
    before = snapshot(home)
    for command in ("plan", "apply"):
        r = taosync(command)
        assert r.rc == 2, r.both
        assert "config.toml:1:1" in r.err
        assert "a byte order mark (BOM) is not allowed in TOML" in r.err
        assert "Empty key" not in r.both and "Traceback" not in r.both
        assert snapshot(home) == before, f"{command} wrote something"


def test_toml_editor_names_the_bom():
    from taosync.formats.base import FormatError
    from taosync.formats.toml import EDITOR

    with pytest.raises(FormatError) as err:
        EDITOR.parse('\ufeffmodel = "x"\n')
    assert (err.value.line, err.value.column) == (1, 1)
    assert err.value.message == "a byte order mark (BOM) is not allowed in TOML"
