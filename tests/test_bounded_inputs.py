"""Bounded inputs (issue 23, Build 5): no input taosync reads can hang it or fill its
memory. A FIFO, a device or a socket where a key file, a client file or fleet.yaml
should be is a one-line error naming the path (exit 2, nothing written); a key file
over 64 KiB, a client file over 256 MiB and a fleet.yaml over 1 MB are refused before
they are read; a key command's output is read in bounded chunks under its timeout;
damaged lines of history.jsonl are skipped.

Every case runs a real ``python -m taosync`` process with a timeout, so a hang fails
the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY

#: a hang fails the test after this many seconds (a run takes about one)
HANG = 60


def cli(home: Path, fleet: Path, *args: str, env: dict | None = None,
        timeout: float = HANG) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=str(ROOT), TAOTOKEN_API_KEY=TEST_KEY)
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], capture_output=True, text=True,
                          env=environ, timeout=timeout, cwd=str(home))


def snapshot(root: Path) -> dict[str, str]:
    """Path → bytes of each regular file under ``root``, and what else is there (the
    FIFOs these tests plant must not be opened by the test either)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath, name)
            out[str(p)] = p.read_bytes() if p.is_file() else "not a file"
    return out


def with_key(fleet_file: Path, ref: str) -> Path:
    text = fleet_file.read_text()
    fleet_file.write_text(text.replace("${env:TAOTOKEN_API_KEY}", ref, 1))
    return fleet_file


def one_line_error(proc, *words: str) -> None:
    """Exit 2, no traceback, and ``words`` all in one line of stderr."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if all(w in ln for w in words)]
    assert lines, proc.stderr


# -- key files -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "plan", "apply", "status"])
def test_a_fifo_as_the_key_file_is_refused_not_waited_on(home, fleet_file, command):
    fifo = home / "key.fifo"
    os.mkfifo(fifo)
    with_key(fleet_file, "${file:~/key.fifo}")
    before = snapshot(home)
    proc = cli(home, fleet_file, command)
    one_line_error(proc, str(fifo), "FIFO", "not a regular file")
    assert snapshot(home) == before


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_the_key_file_is_refused_unread(home, fleet_file, device):
    with_key(fleet_file, "${file:%s}" % device)
    before = snapshot(home)
    proc = cli(home, fleet_file, "apply", "--no-verify")
    one_line_error(proc, device, "character device")
    assert snapshot(home) == before


def test_a_socket_as_the_key_file_is_refused(home, fleet_file, tmp_path):
    path = tmp_path / "s.sock"  # AF_UNIX paths are short: tmp_path, not deep in home
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with_key(fleet_file, "${file:%s}" % path)
        proc = cli(home, fleet_file, "validate")
    finally:
        sock.close()
    one_line_error(proc, str(path), "a socket, not a regular file")


def test_a_key_file_over_64_kib_is_refused(home, fleet_file):
    key = home / "key"
    key.write_text("k" * (64 * 1024 + 1))
    with_key(fleet_file, "${file:~/key}")
    before = snapshot(home)
    proc = cli(home, fleet_file, "apply", "--no-verify")
    one_line_error(proc, str(key), "64 KiB")
    assert snapshot(home) == before


def test_a_key_file_of_64_kib_is_still_a_key(home, fleet_file):
    key = home / "key"
    key.write_text(TEST_KEY + "\n" + " " * (64 * 1024 - len(TEST_KEY) - 1))
    with_key(fleet_file, "${file:~/key}")
    assert cli(home, fleet_file, "validate").returncode == 0


# -- key commands ---------------------------------------------------------------------------


def test_a_key_command_that_never_stops_printing_is_cut_at_the_cap(home, fleet_file):
    with_key(fleet_file, "${cmd:yes}")
    before = snapshot(home)
    started = time.monotonic()
    proc = cli(home, fleet_file, "validate")
    one_line_error(proc, "key command", "64 KiB")
    assert time.monotonic() - started < 20  # not the 10 s timeout plus gigabytes
    assert snapshot(home) == before


# -- client files ---------------------------------------------------------------------------


def _target(home: Path) -> Path:
    """A client file the example fleet writes (Codex's TOML)."""
    return home / ".codex" / "config.toml"


@pytest.mark.parametrize("command", ["plan", "apply", "status"])
def test_a_fifo_as_a_client_file_is_refused_not_waited_on(home, fleet_file, command):
    target = _target(home)
    target.parent.mkdir(parents=True)
    os.mkfifo(target)
    before = snapshot(home)
    proc = cli(home, fleet_file, command, *(["--no-verify"] if command == "apply" else []))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert any(str(target) in ln and "FIFO" in ln for ln in proc.stderr.splitlines()), \
        proc.stderr
    assert snapshot(home) == before


def test_a_fifo_put_in_place_of_an_applied_file_is_refused_by_the_fast_path(home, fleet_file):
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    target = _target(home)
    target.unlink()
    os.mkfifo(target)
    for command in ("apply", "status", "plan"):
        proc = cli(home, fleet_file, command)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "FIFO" in proc.stderr and str(target) in proc.stderr


def test_a_fifo_as_taosyncs_own_hmac_key_or_journal_is_no_crash(home, fleet_file):
    """taosync's own files are read bounded too: a FIFO as ``hmac.key`` is an I/O
    failure naming it (exit 3, never a hang or exit 70); one as ``journal.json`` is no
    journal taosync wrote — set aside with a warning, and the run goes on."""
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    state = home / ".local/state/taosync"
    files = snapshot(home / ".claude")
    (state / "hmac.key").unlink()
    os.mkfifo(state / "hmac.key")
    for command in ("apply", "status", "plan"):
        proc = cli(home, fleet_file, command)
        assert proc.returncode == 3, (command, proc.stdout, proc.stderr)
        assert f"cannot read {state / 'hmac.key'}: a FIFO" in proc.stderr, proc.stderr
    (state / "hmac.key").unlink()
    os.mkfifo(state / "journal.json")
    proc = cli(home, fleet_file, "apply", "--no-verify")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "journal.json is not a journal taosync wrote (a FIFO" in proc.stderr
    assert (state / "journal.json.rejected").exists() and not (state / "journal.json").exists()
    assert snapshot(home / ".claude") == files


def test_a_client_file_over_256_mib_is_refused_unread(home, fleet_file):
    target = _target(home)
    target.parent.mkdir(parents=True)
    with open(target, "wb") as fh:  # sparse: no disk, no memory, 257 MiB by stat
        fh.truncate(257 << 20)
    proc = cli(home, fleet_file, "plan")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert any(str(target) in ln and "256 MiB" in ln for ln in proc.stderr.splitlines()), \
        proc.stderr


# -- fleet.yaml -----------------------------------------------------------------------------


def test_a_fifo_as_fleet_yaml_is_refused(home, tmp_path):
    fleet = tmp_path / "fifo.yaml"
    os.mkfifo(fleet)
    for command in ("validate", "plan"):
        one_line_error(cli(home, fleet, command), str(fleet), "FIFO")


def test_a_fifo_as_an_included_fleet_is_refused(home, fleet_file, tmp_path):
    base = tmp_path / "base.yaml"
    os.mkfifo(base)
    fleet_file.write_text(f"include: [{base}]\n" + fleet_file.read_text())
    one_line_error(cli(home, fleet_file, "validate"), str(base), "not a regular file")


# -- history.jsonl --------------------------------------------------------------------------


def test_bad_bytes_in_history_are_skipped(home, fleet_file, tmp_path):
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    assert cli(home, fleet_file, "verify", "--stub").returncode == 0
    history = home / ".local" / "state" / "taosync" / "history.jsonl"
    good = history.read_bytes()
    history.write_bytes(b'{"model": "\xff\xfe marker-q7", "ok": true}\n' + b"\x80\x81\n" +
                        b'{"model": "m", "ts": 5, "ok": "yes", "latency_ms": "x"}\n' + good)
    for command in (["plan"], ["status"], ["route"], ["stats"], ["stats", "--json"]):
        proc = cli(home, fleet_file, *command)
        assert proc.returncode in (0, 1), (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    stats = json.loads(cli(home, fleet_file, "stats", "--json", "--include-stub").stdout)
    assert "marker-q7" not in json.dumps(stats) and stats  # the good lines still count


# -- a byte-order mark in a KEY=VALUE file ---------------------------------------------------


def _with_bom(path: Path) -> None:
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())


def test_a_bom_in_sgptrc_is_named_with_its_fix(home, fleet_file):
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    sgptrc = home / ".config" / "shell_gpt" / ".sgptrc"
    _with_bom(sgptrc)
    before = snapshot(home)
    for command in ("plan", "apply", "status"):
        proc = cli(home, fleet_file, command)
        one_line_error(proc, f"{sgptrc}:1:1", "byte-order mark", "shell-gpt",
                       "UTF-8 without a BOM")
        assert "expected KEY=VALUE" not in proc.stderr
    assert snapshot(home) == before


def test_a_bom_in_a_dotenv_file_is_read_past_and_kept(home, fleet_file):
    """npm dotenv (Gemini CLI) and python-dotenv (Mistral Vibe) both read past it."""
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    dotenv = home / ".gemini" / ".env"
    _with_bom(dotenv)
    assert cli(home, fleet_file, "plan", "--check").returncode == 0  # nothing to change
    text = dotenv.read_bytes().replace(b"GOOGLE_GEMINI_BASE_URL=", b"GOOGLE_GEMINI_BASE_URL=x")
    dotenv.write_bytes(text)
    proc = cli(home, fleet_file, "apply", "--no-verify", "--yes")
    assert proc.returncode == 0, proc.stderr
    after = dotenv.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") and after.count(b"\xef\xbb\xbf") == 1
    assert b"GOOGLE_GEMINI_BASE_URL=https://" in after and b"=xhttps" not in after


# -- a file holding the key, readable by others ----------------------------------------------


def test_a_key_file_made_0644_is_drift_apply_fixes(home, fleet_file):
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    auth = home / ".codex" / "auth.json"
    assert auth.stat().st_mode & 0o777 == 0o600
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0  # certified no-op
    auth.chmod(0o644)
    plan = cli(home, fleet_file, "plan", "--check")
    assert plan.returncode == 1, plan.stdout
    assert "chmod" in plan.stdout and "0644 → 0600" in plan.stdout
    status = cli(home, fleet_file, "status")
    assert status.returncode == 1 and "0644 → 0600" in status.stdout
    proc = cli(home, fleet_file, "apply", "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert "nothing to do" not in proc.stdout
    assert auth.stat().st_mode & 0o777 == 0o600
    again = cli(home, fleet_file, "apply", "--no-verify")
    assert "nothing to do" in again.stdout
    assert cli(home, fleet_file, "status").returncode == 0
    # rolling the chmod back never gives the key back to others, nor says it would
    for args in (("rollback", "--dry-run"), ("rollback",)):
        back = cli(home, fleet_file, *args)
        assert back.returncode == 0, back.stderr
        assert "0644" not in back.stdout + back.stderr, back.stdout
    assert auth.stat().st_mode & 0o777 == 0o600


def test_a_read_only_key_file_loses_only_group_and_other_bits(home, fleet_file):
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    dotenv = home / ".gemini" / ".env"
    before = dotenv.read_bytes()
    dotenv.chmod(0o444)
    proc = cli(home, fleet_file, "apply", "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert dotenv.stat().st_mode & 0o777 == 0o400  # still read-only, as the user chose
    assert dotenv.read_bytes() == before


def test_capping_history_drops_a_line_of_bad_bytes_rather_than_mending_it(tmp_path):
    """The cap rewrites the file: a damaged line must not come back as a record (it was
    decoded with U+FFFD replacements, which made it valid JSON)."""
    from taosync.engine.system import current
    from taosync.verify import history

    target = tmp_path / history.FILE
    good = json.dumps({"model": "m", "ok": True, "t": 1.0}).encode()
    target.write_bytes(b'{"model": "\xff marker-q7", "ok": true}\n' + (good + b"\n") * 50)
    history._cap(current(), target, keep=20, max_bytes=100)
    assert b"marker-q7" not in target.read_bytes()
    assert [r["model"] for r in history.read(tmp_path)] == ["m"] * 50
