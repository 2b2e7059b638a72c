"""``managed: false`` is hands off everywhere: rollback, redo and destroy never write a
forgotten client's files, whatever the history holds for them, and say so."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, TEST_KEY, snapshot

ROTATED = "sk-test-ROTATEDKEY-9876543210fedcba"
CODEX = (".codex/config.toml", ".codex/auth.json", ".codex/deep.config.toml",
         ".codex/batch.config.toml")


def codex_files(home) -> dict[str, bytes]:
    return {rel: (home / rel).read_bytes() for rel in CODEX}


def destroy_with_codex_set_unmanaged_by_hand(taosync, home, fleet_file):
    """``managed: false`` written into fleet.yaml for codex, then destroy: codex's files
    must come out byte for byte as they were, and destroy must say it skipped them."""
    fleet_file.write_text(fleet_file.read_text().replace(
        "codex: {model: fast,", "codex: {managed: false, model: fast,"))
    kept = codex_files(home)
    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert codex_files(home) == kept
    assert "skipped codex (managed: false)" in r.out
    return r


def rotate_and_apply(taosync, monkeypatch) -> None:
    """apply #1 with the old key, apply #2 with a new one: rolling back #2 would put
    the pre-rotation key back."""
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.setenv("TAOTOKEN_API_KEY", ROTATED)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "applied #2" in r.out, r.both


def test_rollback_and_redo_leave_a_forgotten_clients_files_alone(taosync, home, fleet_file,
                                                                 monkeypatch):
    rotate_and_apply(taosync, monkeypatch)
    assert taosync("forget", "codex").rc == 0
    kept = codex_files(home)
    assert ROTATED.encode() in kept[".codex/auth.json"]

    r = taosync("rollback", "--restore-secrets")  # the old key back, where managed
    assert r.rc == 0, r.both
    assert codex_files(home) == kept  # not the pre-rotation key, not anything
    assert TEST_KEY.encode() in (home / ".claude/settings.json").read_bytes()  # others did
    line = next(x for x in r.out.splitlines() if x.startswith("skipped codex"))
    assert line == ("skipped codex (managed: false): ~/.codex/auth.json, "
                    "~/.codex/config.toml left as they are"), r.out
    assert "restore ~/.codex" not in r.out and TEST_KEY not in r.both and ROTATED not in r.both

    r = taosync("rollback", "--redo")
    assert r.rc == 0, r.both
    assert codex_files(home) == kept
    assert ROTATED.encode() in (home / ".claude/settings.json").read_bytes()
    assert "skipped codex (managed: false)" not in r.out  # the rollback left codex out

    r = taosync("rollback", "--to", "1", "--json")
    assert r.rc == 0, r.both
    assert set(json.loads(r.out)["skipped"]["codex"]) == {str(home / p) for p in CODEX}
    assert codex_files(home) == kept


def test_destroy_leaves_a_forgotten_clients_files_alone_and_names_them(taosync, home,
                                                                       fleet_file, monkeypatch):
    rotate_and_apply(taosync, monkeypatch)
    assert taosync("forget", "codex").rc == 0
    kept = codex_files(home)
    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert codex_files(home) == kept
    assert any(x.startswith("skipped codex (managed: false): ~/.codex/auth.json, "
                            "~/.codex/batch.config.toml, ~/.codex/config.toml, "
                            "~/.codex/deep.config.toml left as they are")
               for x in r.out.splitlines()), r.out
    assert not (home / ".claude/settings.json").exists()  # everything else was given back
    r = taosync("rollback")  # and rolling the destroy back leaves codex alone too
    assert r.rc == 0 and codex_files(home) == kept, r.both
    assert (home / ".claude/settings.json").exists()


def test_managed_false_by_hand_is_hands_off_before_any_apply(taosync, home, fleet_file):
    """Set in fleet.yaml, not applied yet: the state still owns the files; rollback and
    destroy skip them all the same, and the state forgets them."""
    assert taosync("apply", "--no-verify").rc == 0
    destroy_with_codex_set_unmanaged_by_hand(taosync, home, fleet_file)
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert state["files"] == {} and state["forgotten"] == ["codex"]


def test_a_broken_fleet_still_keeps_hands_off_what_the_state_forgot(home, fleet_file,
                                                                    taosync, monkeypatch):
    """rollback must work with a fleet.yaml that does not load: the state remembers
    which clients were forgotten. Through a real process."""
    rotate_and_apply(taosync, monkeypatch)
    assert taosync("forget", "codex").rc == 0
    kept = codex_files(home)
    fleet_file.write_text(fleet_file.read_text() + "\nnot: [valid\n")
    before = snapshot(home / ".claude")
    r = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                        str(fleet_file), "rollback", "--restore-secrets"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "skipped codex (managed: false): ~/.codex/auth.json, ~/.codex/config.toml" in r.stdout
    assert codex_files(home) == kept
    assert snapshot(home / ".claude") != before  # the rollback itself happened
    assert TEST_KEY not in r.stdout + r.stderr and ROTATED not in r.stdout + r.stderr


def test_rollback_warns_of_replaced_edits_only_in_files_it_writes(taosync, home, fleet_file):
    """A file the user already put back by hand is not touched by the rollback: no
    warning that its edits were replaced. A file it does rewrite still gets one."""
    assert taosync("apply", "--no-verify").rc == 0
    config = home / ".codex/config.toml"
    first = config.read_bytes()
    fleet_file.write_text(fleet_file.read_text().replace(
        "codex: {model: fast,", "codex: {model: balanced,").replace(
        "shell-gpt: {model: fast}", "shell-gpt: {model: balanced}"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "applied #2" in r.out, r.both
    config.write_bytes(first)  # put back by hand (git checkout of the dotfiles)
    sgptrc = home / ".config/shell_gpt/.sgptrc"
    sgptrc.write_text(sgptrc.read_text() + "CODE_THEME=dracula\n")  # edited, and rolled back
    r = taosync("rollback", "--yes")
    assert r.rc == 0, r.both
    assert config.read_bytes() == first
    assert "config.toml was edited" not in r.err, r.err
    assert "~/.config/shell_gpt/.sgptrc was edited after taosync wrote it; the rollback " \
           "replaced those edits too" in r.err, r.err
    js = json.loads(taosync("rollback", "--redo", "--dry-run", "--json").out)
    assert js["edited_since_apply"] == []


def test_redo_of_a_rollback_made_before_forget_leaves_the_client_alone(taosync, home,
                                                                      fleet_file, monkeypatch):
    rotate_and_apply(taosync, monkeypatch)
    assert taosync("rollback", "--restore-secrets").rc == 0  # all back on the old key
    assert TEST_KEY.encode() in (home / ".codex/auth.json").read_bytes()
    assert taosync("forget", "codex").rc == 0
    kept = codex_files(home)
    r = taosync("rollback", "--redo")
    assert r.rc == 0, r.both
    assert codex_files(home) == kept
    assert "skipped codex (managed: false): ~/.codex/auth.json, ~/.codex/config.toml" in r.out
    assert ROTATED.encode() in (home / ".claude/settings.json").read_bytes()


def test_destroy_with_only_a_forgotten_client_left_says_so(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify", "--only", "codex").rc == 0
    r = destroy_with_codex_set_unmanaged_by_hand(taosync, home, fleet_file)
    assert "nothing to do: taosync owns nothing here but the files of clients set " \
           "managed: false, left as they are" in r.out
    assert "owns nothing in this home" not in r.out


def test_a_rollback_with_only_a_forgotten_clients_files_restores_nothing_and_says_why(
        taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace(
        "codex: {model: fast,", "codex: {model: balanced,"))
    assert taosync("apply", "--no-verify").rc == 0  # #2 touched codex only
    assert taosync("forget", "codex").rc == 0
    kept = codex_files(home)
    r = taosync("rollback")
    assert r.rc == 0, r.both
    assert codex_files(home) == kept
    assert "skipped codex (managed: false): ~/.codex/config.toml left as it is" in r.out
    assert "nothing to do: its files are those of clients set managed: false (apply #2)" \
        in r.out, r.out
    assert "already as they were" not in r.out
