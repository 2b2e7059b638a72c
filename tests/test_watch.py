"""taosync watch: real watchdog observers on a sandbox home, real files, real saves.

The Watcher runs in threads inside the test; one test runs the real command in a
subprocess and stops it with SIGTERM. Verification is off, or goes to the in-process
stand-in gateway. Every wait polls with a timeout; nothing sleeps for long.
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

from conftest import EXAMPLE_FLEET, TEST_KEY
from conftest import wait_until as _wait_until

from taosync.settings import Settings
from taosync.watch import Event, Options, Watcher

BASE = "https://taotoken.net/api"
TIMEOUT = 10.0


def wait_until(pred, timeout: float = TIMEOUT, what: str = "condition"):
    return _wait_until(pred, timeout, what)


class Harness:
    """A Watcher in threads, its events collected."""

    def __init__(self, home: Path, fleet: Path, **options) -> None:
        self.home, self.fleet = home, fleet
        self.events: list[Event] = []
        self._lock = threading.Lock()
        settings = Settings(config=fleet, home=home, color=False)
        self.watcher = Watcher(settings, Options(**{"verify": False, **options}),
                               on_event=self._record)

    def _record(self, event: Event) -> None:
        json.dumps(event.to_dict(), default=str)  # every event is printable as JSON
        with self._lock:
            self.events.append(event)

    def of(self, kind: str) -> list[Event]:
        with self._lock:
            return [e for e in self.events if e.kind == kind]

    def wait_event(self, kind: str, count: int = 1, pred=None, timeout: float = TIMEOUT) -> Event:
        def found():
            hits = [e for e in self.of(kind) if pred is None or pred(e)]
            return hits[count - 1] if len(hits) >= count else None
        return wait_until(found, timeout, f"{count} {kind!r} event(s); got "
                          f"{[(e.kind, e.message) for e in self.events]}")

    def settle(self) -> None:
        """Let every pending event arrive and every cycle finish."""
        time.sleep(0.05)
        assert self.watcher.idle(TIMEOUT), "watcher did not go idle"
        time.sleep(0.05)
        assert self.watcher.idle(TIMEOUT), "watcher did not go idle"

    def problems(self) -> list[str]:
        return [f"{e.kind}: {e.message}" for e in self.events
                if e.kind in ("error", "recovered")]


@pytest.fixture
def watch(home, fleet_file):
    """``watch(**options)`` → a started Harness that has done its first apply."""
    made: list[Harness] = []

    def start(settle: bool = True, **options) -> Harness:
        h = Harness(home, fleet_file, **options)
        made.append(h)
        h.watcher.start()
        h.wait_event("watching")
        if settle:
            h.settle()
        return h

    yield start
    for h in made:
        h.watcher.stop()
        assert not h.problems(), h.problems()


def codex_model(home: Path) -> str:
    return tomllib.loads((home / ".codex/config.toml").read_text())["model"]


def fleet_text(**subs) -> str:
    text = EXAMPLE_FLEET.read_text()
    for old, new in subs.items():
        text = text.replace(old.replace("_", " "), new) if " " in old else text.replace(old, new)
    return text


def with_fast(model: str) -> str:
    return EXAMPLE_FLEET.read_text().replace("fast: gpt-4o-mini", f"fast: {model}")


def with_base(url: str) -> str:
    return EXAMPLE_FLEET.read_text().replace(BASE, url)


def identity(path: Path) -> tuple:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, path.read_bytes()


def target_files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file() and ".local" not in p.parts)


# --------------------------------------------------------------------- editor saves

def save_rename_over(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_truncate_write(path: Path, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def save_via_backup(path: Path, text: str) -> None:
    """vim's backupcopy=no: move the original aside, write a new file, drop the backup."""
    backup = path.with_name(path.name + "~")
    os.replace(path, backup)
    path.write_text(text)
    backup.unlink()


def save_two_chunks(path: Path, text: str) -> None:
    """One open, two writes with a pause longer than the debounce in between: the first
    half alone is an invalid fleet, which must never be acted on."""
    cut = text.index("routes:")
    with open(path, "w") as fh:
        fh.write(text[:cut])
        fh.flush()
        time.sleep(0.3)
        fh.write(text[cut:])


@pytest.mark.parametrize("save", [save_rename_over, save_truncate_write, save_via_backup,
                                  save_two_chunks])
def test_editor_save_patterns_are_applied_once(watch, home, fleet_file, save):
    h = watch()
    assert codex_model(home) == "gpt-4o-mini"
    assert len(h.of("applied")) == 1
    save(fleet_file, with_fast("intel/llama-7b"))
    h.wait_event("applied", 2)
    h.settle()
    assert codex_model(home) == "intel/llama-7b"
    # our own writes came back as events and ended at the byte-identical fast path
    assert len(h.of("applied")) == 2
    assert not h.of("invalid") and not h.of("missing") and not h.of("drift")
    changed = h.of("changed")
    assert changed and all(e.data["source"] == "fleet" for e in changed)


def test_a_save_caught_half_way_is_read_again_not_reported(watch, home, fleet_file):
    """An editor that truncates, then writes: a cycle that read the empty file in
    between loads it again a debounce later instead of reporting it invalid."""
    from taosync.watch.events import digest

    h = watch(debounce=0.3)
    fleet_file.write_text("")  # the truncate, seen as its own closed write
    # a cycle has read the file empty (and put off judging it for a debounce)
    wait_until(lambda: h.watcher._failed_read == digest(b""), what="a cycle to read it empty")
    fleet_file.write_text(with_fast("intel/llama-7b"))
    h.wait_event("applied", 2)
    h.settle()
    assert not h.of("invalid")
    assert codex_model(home) == "intel/llama-7b"


def test_invalid_saves_write_nothing_then_a_valid_one_applies(watch, home, fleet_file):
    h = watch()
    before = {p: identity(p) for p in target_files(home)}
    save_truncate_write(fleet_file, "version: 1\ngateway: {base_url: [\n")  # syntax
    e1 = h.wait_event("invalid")
    save_rename_over(fleet_file, with_fast("no-such-model"))  # cross-check
    e2 = h.wait_event("invalid", 2)
    h.settle()
    assert {p: identity(p) for p in target_files(home)} == before
    assert any(f"{fleet_file}:" in p for p in e1.data["problems"]), e1.data
    assert any("no-such-model" in p for p in e2.data["problems"]), e2.data
    assert "keeping the last good state" in e2.message
    # a drift while the fleet is invalid is held to the last good fleet
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace('model = "gpt-4o-mini"', 'model = "o3"'))
    h.wait_event("drift")
    h.settle()
    assert codex_model(home) == "gpt-4o-mini"

    save_rename_over(fleet_file, with_fast("intel/llama-7b"))
    h.wait_event("applied", 2)
    h.settle()
    assert codex_model(home) == "intel/llama-7b"


def test_200_rapid_saves_end_consistent_with_bounded_runs(watch, home, fleet_file):
    h = watch(verify=True, stub=True)
    h.wait_event("verified")
    h.settle()
    applies0, verifies0 = len(h.of("applied")), h.watcher.counts["verifies"]
    for i in range(200):
        (save_rename_over if i % 2 else save_truncate_write)(
            fleet_file, with_base(f"https://gw{i}.example/api"))
        time.sleep(0.002)
    last = "https://gw199.example/api"

    def synced():
        return all(last in (home / f).read_text() for f in
                   (".claude/settings.json", ".codex/config.toml", ".continue/config.yaml",
                    ".cline/data/globalState.json"))
    wait_until(synced, what="the last save in every file")
    h.settle()
    applies = len(h.of("applied")) - applies0
    verifies = h.watcher.counts["verifies"] - verifies0
    assert 1 <= applies <= 6, applies
    assert 1 <= verifies <= applies, (verifies, applies)
    assert all(e.data["ok"] for e in h.of("verified")), \
        [e.message for e in h.events if e.kind in ("verified", "probe", "warning", "error")]
    assert not h.of("invalid")
    assert synced()  # nothing came after and undid it


def test_owned_key_drift_is_reasserted_and_other_keys_kept(watch, home):
    h = watch()
    cfg = home / ".codex/config.toml"
    text = cfg.read_text()
    assert 'model = "gpt-4o-mini"' in text
    cfg.write_text('approval_policy = "never"\n'
                   + text.replace('model = "gpt-4o-mini"', 'model = "o3"'))
    e = h.wait_event("drift")
    h.settle()
    assert e.data["action"] == "reasserted"
    assert [c["key"] for c in e.data["changes"]] == ["model"]
    doc = tomllib.loads(cfg.read_text())
    assert doc["model"] == "gpt-4o-mini" and doc["approval_policy"] == "never"
    assert len(h.of("drift")) == 1  # the re-assert itself did not come back as drift


def test_a_program_fighting_over_an_owned_key_is_reported_not_looped(watch, home):
    from taosync.watch import FIGHT_LIMIT

    h = watch()
    cfg = home / ".codex/config.toml"
    stop = threading.Event()

    def fighter():  # resets the key every time taosync puts it back
        while not stop.is_set():
            text = cfg.read_text()
            if 'model = "gpt-4o-mini"' in text:
                cfg.write_text(text.replace('model = "gpt-4o-mini"', 'model = "o3"'))
            time.sleep(0.02)

    thread = threading.Thread(target=fighter, daemon=True)
    thread.start()
    try:
        h.wait_event("fight", timeout=20)
        h.settle()
        reasserts = [e for e in h.of("drift") if e.data["action"] == "reasserted"]
        assert len(reasserts) == FIGHT_LIMIT[0]
        time.sleep(0.3)
        h.settle()
        assert len([e for e in h.of("drift") if e.data["action"] == "reasserted"]) == \
            FIGHT_LIMIT[0]
        assert codex_model(home) == "o3"
    finally:
        stop.set()
        thread.join(2)


def test_drift_warn_only_reports(watch, home):
    h = watch(drift="warn")
    cfg = home / ".claude/settings.json"
    data = json.loads(cfg.read_text())
    data["env"]["ANTHROPIC_MODEL"] = "my-own-model"
    cfg.write_text(json.dumps(data, indent=2))
    e = h.wait_event("drift")
    h.settle()
    assert e.data["action"] == "reported" and e.level == "problem"
    assert json.loads(cfg.read_text())["env"]["ANTHROPIC_MODEL"] == "my-own-model"
    assert len(h.of("applied")) == 1
    # the same drift touched again is not reported again
    os.utime(cfg)
    cfg.write_text(cfg.read_text())
    h.settle()
    assert len(h.of("drift")) == 1


def test_client_rewriting_other_keys_is_left_alone_without_a_write(watch, home):
    h = watch()
    state_file = home / ".local/state/taosync/state.json"
    applies_before = len(json.loads(state_file.read_text())["applies"])
    path = home / ".claude.json"
    data = json.loads(path.read_text())
    data.update(numStartups=7, projects={"/src/x": {"allowedTools": []}})
    for n in range(3):  # the client rewrites its whole file, compactly, a few times
        data["numStartups"] = 7 + n
        path.write_text(json.dumps(data))
    h.wait_event("kept")
    h.settle()
    after = identity(path)
    h.settle()
    assert identity(path) == after  # not written by taosync, then or later
    assert json.loads(path.read_text())["numStartups"] == 9
    assert len(h.of("applied")) == 1 and not h.of("drift")
    assert len(json.loads(state_file.read_text())["applies"]) == applies_before


def test_a_file_the_render_looked_for_appearing_moves_the_target(watch, home):
    """Kilo reads ~/.config/kilo/opencode.json after kilo.json: once the user creates it,
    watch re-renders at once and taosync's keys move there (kilo.json is given back)."""
    h = watch()
    folder = home / ".config/kilo"
    assert (folder / "kilo.json").is_file()
    mine = folder / "opencode.json"
    mine.write_text('{"model": "taotoken/intel/llama-7b", "theme": "mine"}\n')
    h.wait_event("applied", 2)
    h.settle()
    data = json.loads(mine.read_text())
    assert data["theme"] == "mine" and data["model"] != "taotoken/intel/llama-7b"
    assert not (folder / "kilo.json").exists()
    changed = [e for e in h.of("changed") if e.data["source"] == "input"]
    assert [e.data["path"] for e in changed] == [str(mine)]
    # touching it again (a client's own rewrite) is a target's business, not a re-render
    mine.write_text(mine.read_text())
    h.settle()
    assert len(h.of("applied")) == 2


def test_fleet_deleted_then_recreated(watch, home, fleet_file):
    h = watch()
    fleet_file.unlink()
    e = h.wait_event("missing")
    assert "keeping the last good state" in e.message
    h.settle()
    assert codex_model(home) == "gpt-4o-mini"  # nothing removed
    fleet_file.write_text(with_fast("intel/llama-7b"))
    h.wait_event("applied", 2)
    h.settle()
    assert codex_model(home) == "intel/llama-7b"


def test_vanished_target_directory_is_survived_and_rewatched(watch, home):
    import shutil

    h = watch()
    shutil.rmtree(home / ".codex")
    wait_until(lambda: (home / ".codex/config.toml").exists()
               and codex_model(home) == "gpt-4o-mini", what="~/.codex re-created")
    h.settle()
    # the new directory is watched: a drift inside it is caught again
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace('model = "gpt-4o-mini"', 'model = "o3"'))
    wait_until(lambda: h.of("drift") and codex_model(home) == "gpt-4o-mini"
               and any("model" in [c["key"] for c in e.data["changes"]]
                       for e in h.of("drift")), what="drift in the re-created directory")


@pytest.mark.parametrize("client_dir", [".codex", ".config/shell_gpt"])
def test_a_client_directory_renamed_away_is_noticed(watch, home, client_dir):
    """``mv ~/.codex ~/.codex.old`` takes every file in it away, as deleting them does
    (issue 23): the watch puts them back and says so — whether or not the directory
    above (~ or ~/.config) was watched already."""
    h = watch()
    files = [p for p in target_files(home) if (home / client_dir) in p.parents]
    assert files
    before = len(h.of("drift"))
    os.rename(home / client_dir, home / (client_dir + ".old"))
    wait_until(lambda: all(p.exists() for p in files), what=f"~/{client_dir} re-created")
    h.settle()
    assert len(h.of("drift")) > before
    assert (home / (client_dir + ".old")).is_dir()  # the user's copy is left alone


def test_key_file_change_reapplies_and_never_prints_the_key(watch, home, fleet_file):
    key_file = home / ".config/taotoken/key"
    key_file.parent.mkdir(parents=True)
    key_file.write_text(TEST_KEY + "\n")
    fleet_file.write_text(EXAMPLE_FLEET.read_text().replace(
        "${env:TAOTOKEN_API_KEY}", "${file:~/.config/taotoken/key}"))
    h = watch()
    secrets = home / ".cline/data/secrets.json"
    assert TEST_KEY in secrets.read_text()
    new_key = "sk-test-ROTATED-9876543210fedcba"
    save_rename_over(key_file, new_key + "\n")
    h.wait_event("applied", 2)
    h.settle()
    assert new_key in secrets.read_text() and TEST_KEY not in secrets.read_text()
    printed = "\n".join(json.dumps(e.to_dict(), default=str, ensure_ascii=False)
                        for e in h.events)
    assert TEST_KEY not in printed and new_key not in printed
    assert "…" in printed  # redacted forms shown instead


def test_change_during_a_run_causes_exactly_one_follow_up(watch, home, fleet_file, monkeypatch):
    from taosync import pipeline

    h = watch()
    gate, entered = threading.Event(), threading.Event()
    real_commit = pipeline.commit

    def slow_commit(*args, **kwargs):
        entered.set()
        gate.wait(TIMEOUT)
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(pipeline, "commit", slow_commit)
    save_rename_over(fleet_file, with_fast("intel/llama-7b"))
    wait_until(entered.is_set, what="the run to start")
    for model in ("nvidia/deepseek-r1", "intel/llama-7b", "claude-sonnet-4-20250514"):
        last_save = time.monotonic()
        save_rename_over(fleet_file, with_fast(model))
    # an event of the last save has arrived: the follow-up is pending, not running
    wait_until(lambda: h.watcher._pending.fleet and h.watcher._pending.last >= last_save,
               what="the last save to be pending")
    gate.set()
    h.wait_event("applied", 3)
    h.settle()
    fleet_runs = [e for e in h.of("changed") if e.data["source"] == "fleet"]
    assert len(fleet_runs) == 2  # the blocked run and exactly one follow-up
    assert len(h.of("applied")) == 3  # the first apply, the blocked one, the follow-up
    assert codex_model(home) == "claude-sonnet-4-20250514"


def test_verification_is_one_at_a_time_and_coalesced(watch, home, fleet_file, monkeypatch):
    import taosync.verify.session as verify_mod

    in_flight, peak, calls = [0], [0], []
    lock, gate = threading.Lock(), threading.Event()

    def held_verify(fleet, key, env, *, only=None, **kw):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            calls.append(sorted(only))
        gate.wait(TIMEOUT)  # the first run stays in flight until the applies are done
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return verify_mod.Report()

    monkeypatch.setattr(verify_mod, "verify_fleet", held_verify)
    h = watch(verify=True, settle=False)
    wait_until(lambda: calls, what="the first verification")
    for n, model in enumerate(("intel/llama-7b", "nvidia/deepseek-r1", "gpt-4o-mini",
                               "intel/llama-7b"), start=2):
        save_rename_over(fleet_file, with_fast(model))
        h.wait_event("applied", n)
    gate.set()
    h.settle()
    assert peak[0] == 1
    assert len(calls) == 2, calls  # 5 applies: the run in flight and one merged follow-up
    # only the clients whose files changed (routes.fast feeds these)
    assert calls[-1] == ["aider", "claude-code", "codex", "continue", "gemini-cli", "kilo", "llm",
                         "opencode", "shell-gpt"]


def test_sigterm_stops_a_real_watch_within_a_second(home, fleet_file, tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(fleet_file),
         "watch", "--no-verify", "--json", "--debounce", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[dict] = []

    def read():
        for line in proc.stdout:
            lines.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(e["event"] == "applied" for e in lines), 20, "first apply")
        # a burst of saves, then SIGTERM in the middle of whatever is running
        for i in range(20):
            save_rename_over(fleet_file, with_base(f"https://gw{i}.example/api"))
            time.sleep(0.01)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(5)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(2)
    assert rc == 0, proc.stderr.read()
    assert took < 1.0, took
    assert lines[-1]["event"] == "stopped"
    assert all({"time", "event", "message", "level"} <= set(e) for e in lines)
    leftovers = [p for p in home.rglob("*") if ".tmp" in p.name]
    assert not leftovers, leftovers
    assert not (home / ".local/state/taosync/journal.json").exists()
    for path in target_files(home):  # every file whole (parses)
        if path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".toml":
            tomllib.loads(path.read_text())
