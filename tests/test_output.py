"""Honest output: drift is never overwritten silently (the prompt is driven through a
real pseudo-terminal), a no-op plan is one line, paths under --home, colour switches,
the lock holder's pid."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, TEST_KEY

pty = pytest.importorskip("pty")

CLAUDE = Path(".claude/settings.json")
FLEET_MODEL = '"ANTHROPIC_MODEL": "claude-sonnet-4-20250514"'
MY_MODEL = '"ANTHROPIC_MODEL": "my-own-model"'


def child_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TAOSYNC_", "CODEX_", "XDG_", "CLINE", "CONTINUE", "CLAUDE"))}
    env.update(TAOTOKEN_API_KEY=TEST_KEY, NO_COLOR="1", PYTHONPATH=str(ROOT), **extra)
    return env


def run_in_pty(args: list[str], answers: list[tuple[str, str]], timeout: float = 60,
               arrivals: list | None = None):
    """Run ``python -m taosync ARGS`` on a pseudo-terminal; each time the output shows
    ``wait_for`` (in order), type ``send``. Returns (exit code, everything printed).
    ``arrivals`` gets (monotonic time, bytes printed so far) at each read."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "taosync", *args], stdin=slave,
                            stdout=slave, stderr=slave, env=child_env(), close_fds=True)
    os.close(slave)
    output, seen_up_to, pending = b"", 0, list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                output += data
                if arrivals is not None:
                    arrivals.append((time.monotonic(), len(output)))
            if pending and pending[0][0].encode() in output[seen_up_to:]:
                seen_up_to = len(output)
                os.write(master, pending.pop(0)[1].encode() + b"\n")
            elif not ready and proc.poll() is not None:
                break
        rc = proc.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return rc, output.decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture
def drifted(taosync, home, fleet_file):
    """An applied home whose Claude Code model the user then changed by hand."""
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / CLAUDE
    settings.write_text(settings.read_text().replace(FLEET_MODEL, MY_MODEL))
    return settings


def cli_args(home, fleet_file, *more):
    return ["--home", str(home), "-c", str(fleet_file), *more]


def test_tty_apply_asks_and_skip_keeps_the_edit(drifted, home, fleet_file):
    (home / ".codex/config.toml").unlink()  # something else to write, so the apply runs
    rc, out = run_in_pty(cli_args(home, fleet_file, "apply", "--no-verify"),
                         [("[q]uit", "d"), ("[q]uit", "s")])
    assert rc == 0, out
    assert "~/.claude/settings.json: edited since the last apply" in out
    assert "env.ANTHROPIC_MODEL: you set 'my-own-model'" in out
    assert '-    "ANTHROPIC_MODEL": "my-own-model",' in out  # the diff answer
    assert MY_MODEL in drifted.read_text()  # skipped: the edit stays
    assert (home / ".codex/config.toml").exists()  # the rest was applied
    assert TEST_KEY not in out


def test_tty_apply_overwrite_and_quit(drifted, home, fleet_file):
    before = drifted.read_bytes()
    rc, out = run_in_pty(cli_args(home, fleet_file, "apply", "--no-verify"), [("[q]uit", "q")])
    assert rc == 1 and "nothing was written" in out, out
    assert drifted.read_bytes() == before
    rc, out = run_in_pty(cli_args(home, fleet_file, "apply", "--no-verify"), [("[q]uit", "o")])
    assert rc == 0, out
    assert FLEET_MODEL in drifted.read_text()


def test_non_tty_apply_names_each_overwritten_key(drifted, taosync):
    """Without a terminal a hand edit is named and kept unless --yes (taosync/confirm.py)."""
    before = drifted.read_bytes()
    r = taosync("apply", "--no-verify")
    assert r.rc == 1 and "pass --yes" in r.err, r.both
    assert ("warning: apply would overwrite your edit of ~/.claude/settings.json "
            "env.ANTHROPIC_MODEL: you set 'my-own-model'; fleet.yaml has "
            "'claude-sonnet-4-20250514'") in r.err
    assert drifted.read_bytes() == before
    r = taosync("apply", "--no-verify", "--yes")
    assert r.rc == 0, r.both
    assert ("warning: overwriting your edit of ~/.claude/settings.json env.ANTHROPIC_MODEL: "
            "you set 'my-own-model'; fleet.yaml has 'claude-sonnet-4-20250514'") in r.err
    assert FLEET_MODEL in drifted.read_text()


def test_force_overwrites_without_asking_on_a_tty(drifted, home, fleet_file):
    rc, out = run_in_pty(cli_args(home, fleet_file, "apply", "--no-verify", "--force"), [])
    assert rc == 0, out
    assert "[q]uit" not in out and "overwriting your edit of ~/.claude/settings.json" in out
    assert FLEET_MODEL in drifted.read_text()


def test_overwritten_secret_is_redacted(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / CLAUDE
    settings.write_text(settings.read_text().replace(TEST_KEY, "sk-mine-PRIVATE-9999999999"))
    r = taosync("apply", "--no-verify")  # refused without --yes: named, hidden
    assert r.rc == 1 and "env.ANTHROPIC_AUTH_TOKEN" in r.err, r.both
    assert "PRIVATE" not in r.both and TEST_KEY not in r.both
    r = taosync("apply", "--no-verify", "--yes")
    assert r.rc == 0 and "env.ANTHROPIC_AUTH_TOKEN" in r.err, r.both
    assert "PRIVATE" not in r.both and TEST_KEY not in r.both


def test_noop_plan_is_one_line(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("plan")
    header = f"home: {home}  (--home; ~/ below means this directory)\n"
    assert r.rc == 0 and r.out == header + "nothing to do: 25 files match fleet.yaml\n", r.out
    r = taosync("plan", "-v")
    assert "~/.codex/config.toml" in r.out and r.out.endswith("nothing to do: 25 files match fleet.yaml\n")


def test_home_header_relative_to_the_current_directory(taosync, home, monkeypatch):
    monkeypatch.chdir(home.parent)
    r = taosync("plan")
    assert r.out.splitlines()[0] == "home: ./home  (--home; ~/ below means this directory)"
    assert "create    ~/.claude/settings.json" in r.out


HOLD_LOCK = """
import sys, time
from pathlib import Path
import click
from taosync.engine.system import RealSystem
with click.Context(click.Command("watch"), info_name="watch"):
    with RealSystem().lock(Path(sys.argv[1]), 5):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
"""


def hold_lock(lock: Path, seconds: float) -> subprocess.Popen:
    """A real second process holding taosync's lock, as a running command would."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock), str(seconds)],
                            stdout=subprocess.PIPE, text=True, env=child_env())
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_held_lock_names_its_holder(taosync, home, fleet_file, monkeypatch):
    monkeypatch.setattr("taosync.engine.system.LOCK_NOTICE_AFTER", 0.05)  # 0.5 s for users
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                         "fast: intel/llama-7b"))
    holder = hold_lock(home / ".local/state/taosync/lock", 0.5)
    try:
        r = taosync("apply", "--no-verify")
    finally:
        holder.wait(timeout=30)
    assert r.rc == 0, r.both
    assert f"taosync: waiting for the lock held by pid {holder.pid} (watch)" in r.err
    assert (home / ".local/state/taosync/lock").read_text().split()[1:] == ["apply"]


def test_color_switches(taosync, monkeypatch):
    r = taosync("--color", "always", "plan")
    assert "\x1b[" in r.out
    r = taosync("--color", "never", "plan")
    assert "\x1b[" not in r.out
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in taosync("plan").out
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "")  # empty: no opinion (no-color.org)
    from taosync.settings import color_wanted

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert color_wanted("auto") is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert color_wanted("auto") is False
    assert color_wanted("always") is True


def test_verify_shows_live_progress_on_a_terminal_only(taosync, home, fleet_file):
    rc, out = run_in_pty(cli_args(home, fleet_file, "verify", "--stub"), [])
    assert rc == 0, out
    assert "probing 15 backends…" in out and "\x1b[K" in out  # drawn, then erased
    assert "15/15 backends pass" in out
    r = taosync("verify", "--stub")
    assert r.rc == 0 and "backends…" not in r.both and "\x1b[" not in r.both


def test_tty_all_overwrites_the_rest_and_still_names_them(drifted, home, fleet_file):
    codex = home / ".codex/config.toml"
    codex.write_text(codex.read_text().replace('model = "gpt-4o-mini"', 'model = "mine"'))
    rc, out = run_in_pty(cli_args(home, fleet_file, "apply", "--no-verify"), [("[q]uit", "a")])
    assert rc == 0, out
    assert out.count("[q]uit") == 1  # asked once
    assert "overwriting your edit of ~/.codex/config.toml model: you set 'mine'" in out
    assert FLEET_MODEL in drifted.read_text() and 'model = "gpt-4o-mini"' in codex.read_text()


def test_dry_run_names_the_edits_apply_would_overwrite(drifted, taosync):
    before = drifted.read_bytes()
    r = taosync("apply", "--dry-run")
    assert r.rc == 0, r.both
    assert ("warning: apply would overwrite your edit of ~/.claude/settings.json "
            "env.ANTHROPIC_MODEL: you set 'my-own-model'") in r.err
    assert drifted.read_bytes() == before


SLOW = "intel/llama-7b"


def test_verify_prints_each_row_as_its_probe_finishes_on_a_terminal(taosync, home,
                                                                      fleet_file):
    from taosync.stub import Stub

    models = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", SLOW]
    example = fleet_file.read_text()
    # 1.8 s: long enough for the live line to count "2 s" (it rounds from 1.5 s)
    with Stub(key=TEST_KEY, models=models, faults=[f"delay=1.8@{SLOW}"]) as stub:
        fleet_file.write_text(example.replace("https://taotoken.net/api", stub.root))
        arrivals: list = []
        rc, out = run_in_pty(cli_args(home, fleet_file, "verify", "--desired"), [],
                             arrivals=arrivals)
    assert rc == 0, out
    raw = out.encode()

    def printed_at(text: str) -> float:
        """When the first line holding ``text`` had been printed whole."""
        start = raw.index(text.encode())
        end = raw.index(b"\n", start)
        return next(t for t, size in arrivals if size > end)

    lines = [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in out.splitlines()]
    rows = [line for line in lines if "✓" in line]
    header = next(i for i, line in enumerate(lines) if line.startswith("CLIENT"))
    assert len(rows) == 15 and SLOW in rows[-1]  # the slow probe's rows come last
    fast = rows[0]
    assert SLOW not in fast and lines.index(fast) > header
    # the fast row was on the screen well before the slow probe answered
    assert printed_at(SLOW + " ") - printed_at(fast) > 1.2, out
    assert "probing 15 backends… 1 still running, 2 s" in out  # the live line …
    assert out.endswith("\r\x1b[K15/15 backends pass\n")  # … erased before the summary
    # every column lines up under the header fixed before the first probe was sent
    col = lines[header].index("LATENCY")
    assert lines[header][col - 4:col - 2] == "OK"  # every column has a label
    assert all(row[col - 4] == "✓" for row in rows), rows

    # without a terminal: the table at the end, in probe order, nothing live (the slow
    # probe still answers last; a shorter delay proves that as well)
    with Stub(key=TEST_KEY, models=models, faults=[f"delay=0.3@{SLOW}"]) as stub:
        fleet_file.write_text(example.replace("https://taotoken.net/api", stub.root))
        r = taosync("verify", "--desired")
        assert r.rc == 0 and "\x1b[" not in r.both and "still running" not in r.both
        table = r.out.splitlines()
        assert table[0].startswith("CLIENT") and len(table) == 1 + 15 + 1
        order = [res["model"]
                 for res in json.loads(taosync("verify", "--desired", "--json").out)["results"]]
        assert order == [next(m for m in models if f" {m} " in row) for row in table[1:16]]
