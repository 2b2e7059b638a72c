"""The write path under the ways real machines fail (issue 11): a full or unwritable
state directory, umask 000, sudo on a user's home, another program writing a target at
the same moment, read-only and hard-linked targets. Real files, a real tmpfs, real
ownership and a real second process wherever the machine allows it."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import TEST_KEY, snapshot
from test_apply import CLAUDE_SETTINGS, CODEX_CONFIG, write

NOBODY = 65534
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def state_dir(home: Path) -> Path:
    return home / ".local/state/taosync"


def client_files(home: Path) -> dict[str, str]:
    """Every file under home except taosync's own state."""
    return {k: v for k, v in snapshot(home).items() if not k.startswith(".local/state")}


def error_lines(err: str) -> list[str]:
    """What the run printed on stderr besides warnings and info lines (the clients
    without MCP are named on every plain run since the quiet-output work)."""
    return [line for line in err.splitlines() if not line.startswith(("warning: ", "info: "))]


def assert_one_clear_line(r, *words: str) -> None:
    assert r.rc == 3, r.both
    lines = error_lines(r.err)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.err
    assert "Traceback" not in r.both and TEST_KEY not in r.both
    for word in words:
        assert word in lines[0], lines[0]


def user_files(home: Path) -> None:
    write(home / ".claude/settings.json", CLAUDE_SETTINGS)
    write(home / ".codex/config.toml", CODEX_CONFIG)


# ------------------------------------------------------------ state dir full / unwritable

@pytest.fixture
def small_state_fs(home, monkeypatch):
    """A 1 MiB tmpfs as the home's ~/.local/state; ``fill()`` uses up its space.

    Without the right to mount (not root), the full disk is injected instead: every
    write of a taosync-owned file fails with ENOSPC after ``fill()``."""
    root = home / ".local/state"
    root.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs",
                              str(root)], capture_output=True).returncode == 0

    def fill():
        if not mounted:
            from taosync.engine import apply, state

            def full(path, data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

            monkeypatch.setattr(apply, "write_private", full)
            monkeypatch.setattr(state, "write_private", full)
            return
        # unbuffered: a buffered file would raise ENOSPC once more when closed, with what
        # it still held (how much depends on where the free space ends)
        with open(root / "filler", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    yield root, fill
    if mounted:
        subprocess.run(["umount", "-l", str(root)], check=True)


def test_full_state_dir_before_the_backups_changes_no_client_file(taosync, home, fleet_file,
                                                                 small_state_fs):
    root, fill = small_state_fs
    user_files(home)
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                         "fast: intel/llama-7b"))
    before = client_files(home)
    state_before = (root / "taosync/state.json").read_bytes()
    fill()
    r = taosync("apply", "--no-verify")
    assert_one_clear_line(r, "no client file was changed")
    assert "No space left on device" in r.err
    assert client_files(home) == before
    assert (root / "taosync/state.json").read_bytes() == state_before
    assert not (root / "taosync/journal.json").exists()
    assert not (root / "taosync/backups/2").exists()


def test_full_state_dir_on_the_first_apply_changes_no_client_file(taosync, home,
                                                                 small_state_fs):
    _root, fill = small_state_fs
    user_files(home)
    before = client_files(home)
    fill()
    r = taosync("apply", "--no-verify")
    assert_one_clear_line(r, "no client file was changed")
    assert client_files(home) == before


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
def test_journal_that_cannot_be_written_changes_no_client_file(taosync, home, monkeypatch,
                                                              code):
    from taosync.engine import apply

    user_files(home)
    before = client_files(home)
    real = apply.write_private

    def failing(path, data):
        if path.name == "journal.json":
            raise OSError(code, os.strerror(code), str(path))
        real(path, data)

    monkeypatch.setattr(apply, "write_private", failing)
    r = taosync("apply", "--no-verify")
    assert_one_clear_line(r, os.strerror(code), "no client file was changed")
    assert client_files(home) == before
    assert not (state_dir(home) / "journal.json").exists()
    assert not (state_dir(home) / "backups/1").exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
def test_state_that_cannot_be_saved_after_the_writes_puts_every_file_back(
        taosync, home, fleet_file, monkeypatch, code):
    """The files are written, then state.json fails: they are put back, exit 3."""
    from taosync.engine.state import StateStore

    user_files(home)
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                         "fast: intel/llama-7b"))
    before = client_files(home)
    state_before = (state_dir(home) / "state.json").read_bytes()
    saves = []
    real_save = StateStore.save

    def failing_save(self, state):
        saves.append(state)
        raise OSError(code, os.strerror(code), str(self.state_path))

    monkeypatch.setattr(StateStore, "save", failing_save)
    r = taosync("apply", "--no-verify")
    assert saves, "the apply never reached the state save"
    assert_one_clear_line(r, "cannot save taosync's state", os.strerror(code),
                          "every file was put back as it was")
    assert client_files(home) == before
    assert (state_dir(home) / "state.json").read_bytes() == state_before
    assert not (state_dir(home) / "journal.json").exists()
    monkeypatch.setattr(StateStore, "save", real_save)
    assert taosync("apply", "--no-verify").rc == 0  # the next apply just works
    assert "intel/llama-7b" in (home / ".codex/config.toml").read_text()


def test_state_that_cannot_be_saved_on_the_first_apply_removes_the_new_files(
        taosync, home, monkeypatch):
    from taosync.engine.state import StateStore

    user_files(home)
    before = client_files(home)

    def failing_save(self, state):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(StateStore, "save", failing_save)
    r = taosync("apply", "--no-verify")
    assert_one_clear_line(r, "every file was put back as it was")
    assert client_files(home) == before  # .codex/auth.json & co. are gone again
    assert not (state_dir(home) / "journal.json").exists()


# -------------------------------------------------------------------------- umask 000

@pytest.fixture
def umask_000():
    old = os.umask(0)
    yield
    os.umask(old)


def test_umask_000_never_widens_what_taosync_creates(taosync, home, umask_000):
    write(home / ".codex/config.toml", CODEX_CONFIG)
    os.chmod(home / ".codex/config.toml", 0o644)
    os.chmod(home / ".codex", 0o755)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    state = state_dir(home)
    for dirpath, dirs, files in os.walk(home):
        for name in dirs:
            d = Path(dirpath, name)
            if d == state or state in d.parents:  # the state dir, backups/, backups/1
                assert mode(d) == 0o700, d
            else:
                assert mode(d) & ~0o755 == 0, (d, oct(mode(d)))
        for name in files:
            f = Path(dirpath, name)
            limit = 0o600 if state in f.parents or TEST_KEY in f.read_text() else 0o644
            assert mode(f) & ~limit == 0, (f, oct(mode(f)))
    assert (state / "backups/1").is_dir()
    # the parents of a deep new directory too, not only its last part
    for rel in (".cline", ".cline/data", ".cline/data/settings"):
        assert mode(home / rel) & ~0o755 == 0, rel


# ---------------------------------------------------------------- sudo on a user's home

@pytest.fixture
def reachable(home):
    """The directories above ``home`` searchable by its owner-to-be, as a real home's
    are: as root on a user's home taosync acts with the user's rights
    (tests/test_root_links.py), and pytest's base directory is root's alone (0700)."""
    above = [p for p in home.parents if not p.stat().st_mode & 0o001]
    modes = {p: p.stat().st_mode & 0o7777 for p in above}
    for p in above:
        os.chmod(p, modes[p] | 0o001)
    yield home
    for p in above:
        os.chmod(p, modes[p])


@pytest.mark.skipif(not IS_ROOT, reason="changing a file's owner needs root")
def test_root_applying_in_a_users_home_keeps_the_users_ownership(taosync, home, reachable):
    user_files(home)
    os.chmod(home / ".claude/settings.json", 0o640)
    for dirpath, dirs, files in os.walk(home):
        for name in dirs + files:
            os.chown(Path(dirpath, name), NOBODY, NOBODY)
    os.chown(home, NOBODY, NOBODY)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert r.err.count("running as root in") == 1, r.err
    settings = home / ".claude/settings.json"
    assert TEST_KEY in settings.read_text()  # rewritten...
    st = settings.stat()
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)  # ...and still the user's
    assert mode(settings) == 0o600  # the key: group access removed
    for rel in (".codex/config.toml", ".codex/auth.json", ".cline", ".cline/data",
                ".cline/data/settings", ".cline/data/secrets.json", ".continue/config.yaml",
                ".claude.json"):
        st = (home / rel).stat()
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), rel
    assert mode(home / ".codex/auth.json") == 0o600  # so its owner, the user, reads it
    # taosync's own files too: the user's next apply (without sudo) can still run
    for dirpath, dirs, files in os.walk(home / ".local"):
        for name in dirs + files:
            st = Path(dirpath, name).stat()
            assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), Path(dirpath, name)
    assert (state_dir(home) / "backups/1").is_dir() and (state_dir(home) / "lock").exists()


def test_no_ownership_warning_in_ones_own_home(taosync, home):
    os.chown(home, os.geteuid(), os.getegid())
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "running as root" not in r.err


# --------------------------------------------------------------- a concurrent writer

OTHER_WRITER = """
import sys
path, n = sys.argv[1], sys.argv[2]
with open(path, "a") as fh:
    fh.write(f"# written by the other program, time {n}\\n")
"""


@pytest.fixture
def other_program(monkeypatch):
    """Another program (a real second process) that rewrites ``target`` each time taosync
    is about to replace it, up to ``times`` times; returns the list of its writes."""
    from taosync.engine import apply

    def arm(target: Path, times: int) -> list[int]:
        writes: list[int] = []
        real_check = apply.check_unchanged

        def racing_check(path, seen):
            if Path(path) == target.resolve() and len(writes) < times:
                writes.append(len(writes) + 1)
                subprocess.run([sys.executable, "-c", OTHER_WRITER, str(path),
                                str(len(writes))], check=True, timeout=60)
            real_check(path, seen)

        monkeypatch.setattr(apply, "check_unchanged", racing_check)
        return writes

    return arm


def test_a_target_rewritten_during_the_apply_is_planned_again_and_both_writes_kept(
        taosync, home, other_program):
    user_files(home)
    target = home / ".codex/config.toml"
    writes = other_program(target, times=1)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert writes == [1]
    text = target.read_text()
    assert "# written by the other program, time 1" in text  # its write survived
    config = tomllib.loads(text)
    assert config["model"] == "gpt-4o-mini" and config["approval_policy"] == "on-request"
    assert taosync("status").rc == 0  # and taosync's state matches what is on disk


def test_a_target_that_keeps_moving_stops_the_apply_with_every_file_put_back(
        taosync, home, other_program):
    from taosync.pipeline import MOVED_RETRIES

    user_files(home)
    target = home / ".codex/config.toml"
    before = client_files(home)
    writes = other_program(target, times=100)
    r = taosync("apply", "--no-verify")
    assert_one_clear_line(r, str(target), "kept being changed by another program",
                          "every file was put back as it was")
    assert len(writes) == MOVED_RETRIES + 1
    after = client_files(home)
    text = target.read_text()
    assert text.startswith(CODEX_CONFIG)  # the other program's writes, on the user's text
    assert text.count("# written by the other program") == len(writes)
    del after[".codex/config.toml"], before[".codex/config.toml"]
    assert after == before  # every other file as it was (new ones removed)
    assert not (state_dir(home) / "journal.json").exists()


# ------------------------------------------------------------------- modes kept

def test_a_read_only_target_is_refused_unless_forced_and_stays_read_only(taosync, home):
    user_files(home)
    cfg = home / ".codex/config.toml"
    os.chmod(cfg, 0o400)
    before = client_files(home)
    r = taosync("apply", "--no-verify")
    assert_one_clear_line(r, ".codex/config.toml", "read-only", "--force")
    assert client_files(home) == before
    assert not (state_dir(home) / "journal.json").exists()

    r = taosync("apply", "--no-verify", "--force")
    assert r.rc == 0, r.both
    assert tomllib.loads(cfg.read_text())["model"] == "gpt-4o-mini"
    assert mode(cfg) == 0o400  # no write bit added back
    assert "--force" in taosync("apply", "--help").out


def test_modes_the_user_chose_are_kept_minus_group_and_other_for_the_key(taosync, home,
                                                                         fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace(
        "      TAOTOKEN_API_KEY: ${gateway.key}\n", ""))  # config.toml without the key
    user_files(home)
    settings = home / ".claude/settings.json"  # will hold the key
    cfg = home / ".codex/config.toml"  # will not
    os.chmod(settings, 0o664)
    os.chmod(cfg, 0o604)
    auth = write(home / ".codex/auth.json", '{"OPENAI_API_KEY": "old"}\n')
    os.chmod(auth, 0o400)  # read-only and about to hold the key
    assert taosync("apply", "--no-verify", "--force").rc == 0
    assert mode(settings) == 0o600
    assert mode(cfg) == 0o604
    assert mode(auth) == 0o400 and TEST_KEY in auth.read_text()


# ------------------------------------------------------------------ hard links

def test_a_hard_linked_target_is_written_in_place_and_stays_linked(taosync, home, tmp_path):
    dotfile = write(tmp_path / "dotfiles/claude-settings.json", CLAUDE_SETTINGS)
    target = home / ".claude/settings.json"
    target.parent.mkdir(parents=True)
    os.link(dotfile, target)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert os.path.samefile(dotfile, target) and target.stat().st_nlink == 2
    assert json.loads(dotfile.read_text())["env"]["ANTHROPIC_AUTH_TOKEN"] == TEST_KEY
    assert mode(dotfile) == 0o600
    assert not list(target.parent.glob(".*.tmp"))

    assert taosync("rollback").rc == 0
    assert os.path.samefile(dotfile, target)
    assert dotfile.read_text() == CLAUDE_SETTINGS
