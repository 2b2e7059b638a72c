"""A running ``taosync watch`` and the one-shot commands that change files without the
fleet asking for it (rollback, redo, destroy, forget, adopt) agree (issue 22, Build 2).

The one-shot command says a watch (its pid) is running and what it will do; the watch
logs the operation, takes the files as they now are as its baseline, and writes again
only after fleet.yaml changes what it asks for. Everything runs as real processes: a
``python -m taosync watch`` subprocess and each command in another. Every wait polls
with a deadline; the only fixed wait is the one proving that nothing happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET, Run, snapshot
from conftest import wait_until as _wait_until

DEBOUNCE = 0.05
#: "clearly longer than watch's debounce": a watch that re-asserts does so well within it
QUIET = 0.6
TIMEOUT = 20.0


def wait_until(pred, timeout: float = TIMEOUT, what: str = "condition"):
    return _wait_until(pred, timeout, what)


def with_fast(model: str) -> str:
    return EXAMPLE_FLEET.read_text().replace("fast: gpt-4o-mini", f"fast: {model}")


def save(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def client_files(home: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(home).items() if not k.startswith(".local/")}


def codex_model(home: Path) -> str:
    return tomllib.loads((home / ".codex/config.toml").read_text())["model"]


def claude_env(home: Path) -> dict:
    return json.loads((home / ".claude/settings.json").read_text())["env"]


class RealWatch:
    """``python -m taosync watch --json`` in a subprocess, its events collected."""

    def __init__(self, home: Path, fleet: Path, *extra: str) -> None:
        self.events: list[dict] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(fleet), "watch",
             "--no-verify", "--json", "--debounce", str(DEBOUNCE), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.pid = self.proc.pid
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def mark(self) -> int:
        return len(self.events)

    def since(self, mark: int, kind: str | None = None) -> list[dict]:
        return [e for e in self.events[mark:] if kind is None or e["event"] == kind]

    def wait_event(self, kind: str, since: int = 0, pred=None) -> dict:
        def found():
            return next((e for e in self.since(since, kind) if pred is None or pred(e)), None)
        return wait_until(found, TIMEOUT, f"a {kind!r} event; got "
                          f"{[(e['event'], e['message']) for e in self.events[since:]]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(2)


@pytest.fixture
def real_watch(home, fleet_file):
    """``real_watch(*extra)`` → a watch subprocess that has done its first apply."""
    made: list[RealWatch] = []

    def start(*extra: str) -> RealWatch:
        w = RealWatch(home, fleet_file, *extra)
        made.append(w)
        w.wait_event("applied")
        return w

    yield start
    for w in made:
        w.stop()
    for w in made:
        assert w.proc.returncode == 0, w.proc.stderr.read()
        bad = [e for e in w.events if e["event"] in ("error", "recovered")]
        assert not bad, bad


@pytest.fixture
def one_shot(home, fleet_file):
    """``one_shot("rollback")`` → (Run, pid): the command in its own process."""

    def run(*args: str) -> tuple[Run, int]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(fleet_file),
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL)
        try:
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        return Run(proc.returncode, out, err), proc.pid

    return run


def apply_through_watch(w: RealWatch, fleet: Path, model: str) -> None:
    mark = w.mark()
    save(fleet, with_fast(model))
    w.wait_event("applied", mark)


def held(w: RealWatch, home: Path, mark: int, op: str, pid: int, what: str = "") -> dict:
    """The watch logged ``op`` by ``pid`` as its new baseline, and then left the files
    exactly as the command did, for clearly longer than its debounce."""
    left = client_files(home)
    time.sleep(QUIET)
    writes = [e["message"] for e in w.since(mark) if e["event"] in ("applied", "drift")]
    assert not writes, writes
    assert client_files(home) == left
    event = w.wait_event("baseline", mark, lambda e: e.get("op") == op)
    assert f"{what or op} by pid {pid}: taken as the new baseline" in event["message"], event
    assert event["pid"] == pid
    return event


def test_rollback_and_redo_are_the_watchs_new_baseline(real_watch, one_shot, home, fleet_file):
    w = real_watch()
    assert codex_model(home) == "gpt-4o-mini"
    apply_through_watch(w, fleet_file, "intel/llama-7b")
    apply_through_watch(w, fleet_file, "nvidia/deepseek-r1")
    assert codex_model(home) == "nvidia/deepseek-r1"

    mark = w.mark()
    r, pid = one_shot("rollback")
    assert r.rc == 0, r.both
    assert f"note: taosync watch (pid {w.pid}) is running" in r.err, r.both
    assert "keeps these files as they are until fleet.yaml changes" in r.err
    assert codex_model(home) == "intel/llama-7b"
    held(w, home, mark, "rollback", pid)

    mark = w.mark()
    r, pid = one_shot("rollback")  # one further back, still held
    assert r.rc == 0 and f"(pid {w.pid})" in r.err, r.both
    assert codex_model(home) == "gpt-4o-mini"
    held(w, home, mark, "rollback", pid)

    mark = w.mark()
    r, pid = one_shot("rollback", "--redo")  # forward to #2, not to what fleet.yaml says
    assert r.rc == 0 and f"(pid {w.pid})" in r.err, r.both
    assert codex_model(home) == "intel/llama-7b"
    held(w, home, mark, "redo", pid)

    # a hand edit while held is left alone too
    codex = home / ".codex/config.toml"
    mark = w.mark()
    codex.write_text(codex.read_text().replace('model = "intel/llama-7b"', 'model = "mine"'))
    time.sleep(QUIET)
    assert codex_model(home) == "mine"
    assert not w.since(mark, "applied") and not w.since(mark, "drift")

    # fleet.yaml changes: the watch applies again
    mark = w.mark()
    save(fleet_file, with_fast("claude-sonnet-4-20250514"))
    w.wait_event("applied", mark)
    assert codex_model(home) == "claude-sonnet-4-20250514"
    assert claude_env(home)["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "claude-sonnet-4-20250514"

    # and it holds owned keys again, as before the rollback
    mark = w.mark()
    codex.write_text(codex.read_text().replace('model = "claude-sonnet-4-20250514"',
                                               'model = "mine"'))
    w.wait_event("drift", mark)
    wait_until(lambda: codex_model(home) == "claude-sonnet-4-20250514", what="re-assert")

    # a stopped watch is no longer announced
    w.stop()
    r, _ = one_shot("rollback")
    assert r.rc == 0, r.both
    assert "taosync watch" not in r.err, r.both


def test_destroy_is_not_undone_until_fleet_yaml_changes(real_watch, one_shot, home, fleet_file):
    w = real_watch()
    assert client_files(home)
    mark = w.mark()
    r, pid = one_shot("destroy", "--yes")
    assert r.rc == 0, r.both
    assert f"note: taosync watch (pid {w.pid}) is running" in r.err, r.both
    assert "until fleet.yaml changes" in r.err
    assert client_files(home) == {}  # the home was empty: every file taosync made goes
    held(w, home, mark, "destroy", pid)
    assert client_files(home) == {}

    # a save that renders the same (a comment) keeps the hold
    mark = w.mark()
    save(fleet_file, fleet_file.read_text() + "# a comment\n")
    w.wait_event("held", mark)
    time.sleep(QUIET)
    assert client_files(home) == {}
    assert not w.since(mark, "applied")

    mark = w.mark()
    save(fleet_file, with_fast("intel/llama-7b"))
    w.wait_event("applied", mark)
    assert codex_model(home) == "intel/llama-7b"
    assert (home / ".claude/settings.json").exists()


def test_forget_is_taken_and_the_forgotten_client_never_written(real_watch, one_shot, home,
                                                                fleet_file):
    w = real_watch()
    codex = home / ".codex/config.toml"
    mark = w.mark()
    r, pid = one_shot("forget", "codex")
    assert r.rc == 0, r.both
    assert f"note: taosync watch (pid {w.pid}) is running" in r.err, r.both
    assert "leaves codex's files alone" in r.err
    held(w, home, mark, "forget", pid, "forget codex")

    # a hand edit of the forgotten client's file: left alone, now and after fleet edits
    codex.write_text(codex.read_text().replace('model = "gpt-4o-mini"', 'model = "mine"'))
    mine = codex.read_bytes()
    time.sleep(QUIET)
    assert codex.read_bytes() == mine

    mark = w.mark()
    save(fleet_file, fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: intel/llama-7b"))
    event = w.wait_event("applied", mark)
    assert "codex" not in event["clients"], event
    assert claude_env(home)["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "intel/llama-7b"
    time.sleep(QUIET)
    assert codex.read_bytes() == mine


CLAUDE_MODEL = '"ANTHROPIC_MODEL": "claude-sonnet-4-20250514"'
CLAUDE_BASE = '"ANTHROPIC_BASE_URL": "https://taotoken.net/api"'


def test_adopt_is_taken_and_what_it_left_is_kept(real_watch, one_shot, home, fleet_file):
    w = real_watch("--drift", "warn")
    settings = home / ".claude/settings.json"
    mark = w.mark()
    # a model picked in the client (adoptable) and a base URL (not a model choice)
    settings.write_text(settings.read_text().replace(CLAUDE_MODEL, '"ANTHROPIC_MODEL": '
                                                     '"gpt-4o-mini"').replace(
        CLAUDE_BASE, '"ANTHROPIC_BASE_URL": "https://elsewhere.example/api"'))
    w.wait_event("drift", mark)

    mark = w.mark()
    r, pid = one_shot("adopt", "--yes")
    assert r.rc == 0, r.both
    assert "claude-code: {model: fast," in fleet_file.read_text()
    assert f"note: taosync watch (pid {w.pid}) is running" in r.err, r.both
    assert "adopted values as the new baseline" in r.err
    held(w, home, mark, "adopt", pid)
    assert claude_env(home)["ANTHROPIC_BASE_URL"] == "https://elsewhere.example/api"

    mark = w.mark()
    save(fleet_file, fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: intel/llama-7b"))
    w.wait_event("applied", mark)
    env = claude_env(home)
    assert env["ANTHROPIC_MODEL"] == "intel/llama-7b"  # the adopted slot follows its route
    assert env["ANTHROPIC_BASE_URL"] == "https://taotoken.net/api"


def test_a_watch_that_died_is_not_announced(one_shot, home, fleet_file):
    """A watch killed without cleaning up (SIGKILL) leaves its registration behind; the
    next command sees the pid is gone and says nothing about it."""
    w = RealWatch(home, fleet_file)
    try:
        w.wait_event("applied")
    finally:
        w.proc.kill()
        w.proc.wait(5)
        w._reader.join(2)
    r, _ = one_shot("rollback")
    assert r.rc == 0, r.both
    assert "taosync watch" not in r.err, r.both


def test_destroy_purge_is_taken_and_the_state_not_recreated(real_watch, one_shot, home,
                                                           fleet_file):
    w = real_watch()
    state_dir = home / ".local/state/taosync"
    mark = w.mark()
    r, _ = one_shot("destroy", "--yes", "--purge")
    assert r.rc == 0, r.both
    assert f"note: taosync watch (pid {w.pid}) is running" in r.err, r.both
    w.wait_event("baseline", mark, lambda e: e["op"].startswith("destroy"))
    time.sleep(QUIET)
    assert not list(home.rglob("*"))  # no client file, and no state (not even a lock)
    assert not w.since(mark, "applied") and not w.since(mark, "drift")

    mark = w.mark()
    save(fleet_file, with_fast("intel/llama-7b"))
    w.wait_event("applied", mark)
    assert codex_model(home) == "intel/llama-7b"
    assert (state_dir / "watch" / f"{w.pid}.json").exists()  # registered again
    r, _ = one_shot("rollback")
    assert f"(pid {w.pid})" in r.err, r.both


def test_a_rollback_landing_while_watch_writes_is_not_overwritten(home, fleet_file, one_shot,
                                                                  monkeypatch):
    """watch planned a fleet change and is about to write it when a rollback takes the
    lock first: under the lock it sees the rollback's record and writes nothing."""
    from test_watch import Harness

    from taosync import pipeline

    h = Harness(home, fleet_file, debounce=DEBOUNCE)
    h.watcher.start()
    try:
        h.wait_event("applied")
        h.settle()
        gate, entered = threading.Event(), threading.Event()
        real_commit = pipeline.commit

        def held_commit(*args, **kwargs):
            entered.set()
            gate.wait(TIMEOUT)
            return real_commit(*args, **kwargs)

        monkeypatch.setattr(pipeline, "commit", held_commit)
        save(fleet_file, with_fast("intel/llama-7b"))
        wait_until(entered.is_set, what="the watch's write to start")
        r, pid = one_shot("rollback")  # back over the first apply: every file goes
        assert r.rc == 0 and f"(pid {os.getpid()})" in r.err, r.both
        assert client_files(home) == {}
        gate.set()
        wait_until(lambda: h.of("baseline") or len(h.of("applied")) > 1, what="the write")
        h.settle()
        assert [e.message for e in h.of("applied")[1:]] == []
        assert client_files(home) == {}
        event = h.wait_event("baseline")
        assert event.data["op"] == "rollback" and event.data["pid"] == pid
    finally:
        if "gate" in locals():
            gate.set()
        h.watcher.stop()
    assert not h.problems(), h.problems()
