"""Quiet, grouped, true output (issue 29, build 3): one phrase for "nothing to do" — the
stdlib fast path's replay included, through real ``python -m taosync`` processes — hints
that repeat the --home and -c in effect, one warning line per cause, and a verify that
says each way its probes failed once, with a fix that names the fleet's own address."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, TEST_KEY

NOTHING = "nothing to do: "


def cli(home: Path, fleet: Path, *args: str, importtime: bool = False):
    """A real process, as a shell runs taosync (the fast path answers only there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAOSYNC_", "XDG_"))}
    env.update(PYTHONPATH=str(ROOT), TAOTOKEN_API_KEY=TEST_KEY, NO_COLOR="1")
    return subprocess.run([sys.executable, *(["-X", "importtime"] if importtime else []),
                           "-m", "taosync", "--home", str(home), "-c", str(fleet), *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` says the process imported."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_every_command_with_nothing_to_do_says_it_alike_the_fast_path_too(home, fleet_file):
    assert cli(home, fleet_file, "rollback").stderr.startswith(
        "error: " + NOTHING + "taosync has not applied anything here yet")
    assert cli(home, fleet_file, "destroy").stdout == NOTHING + \
        "taosync owns nothing in this home\n"
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    for args in (("apply",), ("plan",), ("plan", "--check"), ("status",)):
        r = cli(home, fleet_file, *args, importtime=True)
        assert r.returncode == 0, (args, r.stderr[-2000:])
        assert "click" not in imported(r.stderr), f"{args}: the full path answered"
        said = [line for line in r.stdout.splitlines() if not line.startswith("home: ")]
        assert said[0].startswith(NOTHING + "25 files match fleet.yaml"), (args, r.stdout)
    full = cli(home, fleet_file, "plan", "-v")  # -v: the full path, the same words
    assert full.stdout.rstrip().endswith(NOTHING + "25 files match fleet.yaml")


def test_next_step_hints_repeat_the_home_and_fleet_in_effect(taosync, home, fleet_file):
    r = taosync("apply", "--no-verify")
    assert f"(taosync --home {home} -c {fleet_file} rollback undoes it)" in r.out, r.out
    r = taosync("apply")  # nothing changed: the verify hint keeps them too
    assert f"run taosync --home {home} -c {fleet_file} verify to check anyway" in r.out
    r = taosync("rollback")
    assert f"taosync --home {home} -c {fleet_file} rollback --redo takes it back" in r.out


def test_rollback_header_first_and_one_line_per_file(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("rollback")
    lines = r.out.splitlines()
    assert lines[0].startswith("home: "), r.out
    files = [line for line in lines if line.startswith(("remove ", "restore "))]
    assert len(files) == 25 and len({line.split()[1] for line in files}) == 25, r.out
    assert not any(" 0 keys" in line for line in lines), r.out
    assert "rolled back apply #1: 25 files removed" in r.out, r.out


def test_secrets_reference_warns_once_per_cause_in_the_future_tense(taosync, home,
                                                                    fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace("secrets: inline",
                                                         "secrets: reference"))
    r = taosync("plan")
    assert r.rc == 0, r.both
    warnings = [line for line in r.err.splitlines() if line.startswith("warning: ")]
    mcp = [w for w in warnings if "an MCP server uses ${gateway.key}" in w]
    assert mcp == ["warning: claude-code, codex, continue, mistral-vibe, gptme, qwen-code: an "
                   "MCP server uses ${gateway.key}, so the key will be written into the MCP "
                   "settings (mode 0600) even with secrets: reference"], warnings
    inline = [w for w in warnings if "cannot keep the key off disk" in w]
    assert len(inline) == 1 and inline[0].startswith("warning: cline, llm, shell-gpt: "), inline
    assert str(home) not in r.err and "wrote" not in r.err, r.err  # ~/ paths, future tense
    assert r.out.startswith("home: "), r.out  # the header comes before the first ~/ path


def test_no_key_sums_up_the_unchanged_values(taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    r = taosync("plan", "--no-key")
    assert r.rc == 0, r.both
    assert "(sensitive, unchanged): 25 key-bearing values in 20 files" in r.out, r.out
    assert r.out.count("(sensitive, unchanged)") == 1, r.out
    assert len(r.out.splitlines()) == 3, r.out  # header, the sum, nothing to do


def test_loopback_failures_are_said_once_with_the_fleets_own_address(taosync, home,
                                                                     fleet_file):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    fleet_file.write_text(fleet_file.read_text().replace("https://taotoken.net/api",
                                                         f"http://127.0.0.1:{port}"))
    r = taosync("verify", "--desired")
    assert r.rc == 1
    failed = [line for line in r.out.splitlines() if line.startswith("✗ ")]
    assert failed == [f"✗ 15 probes: proxy: nothing listens on 127.0.0.1:{port}"], r.out
    assert r.out.count("fix: ") == 1 and f"stub --port {port}" in r.out, r.out
    assert "taotoken.net" not in r.out, r.out  # never the vendor's URL to a loopback fleet
    header = r.out.splitlines()[0].split()
    assert header == ["CLIENT", "ROUTE", "MODEL", "BACKEND", "OK", "LATENCY", "TTFB",
                      "TOKENS", "IN/OUT", "ANSWER"], header
