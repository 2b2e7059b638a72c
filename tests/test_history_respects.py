"""History that respects the user (issue 23, Build 4a): a redo warns about hand edits
like a rollback and is itself undoable; a rollback never silently puts back a rotated
key; ``taosync prune`` drops backups holding old secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import TEST_KEY

STATE = ".local/state/taosync"
ROOT = Path(__file__).resolve().parent.parent
NEW_KEY = "sk-rotated-NEWKEY-99999999999999ab12"


def test_redo_warns_about_hand_edits_and_a_rollback_gives_them_back(taosync, home):
    """apply, rollback, a hand edit, redo: the redo warns as a rollback does, and a
    rollback right after it puts the hand-edited file back byte for byte."""
    assert taosync("apply", "--no-verify").rc == 0
    assert taosync("rollback").rc == 0
    cfg = home / ".codex/config.toml"
    assert not cfg.exists()  # apply #1 created it
    mine = '# my own codex settings\nmodel = "o3"\n\n[tui]\nnotifications = true\n'
    cfg.write_text(mine)
    r = taosync("rollback", "--redo", "--dry-run")
    assert r.rc == 0, r.both
    assert ("~/.codex/config.toml was edited after taosync wrote it; the redo would "
            "replace those edits too (taosync --home ") in r.err  # the hint: this home
    assert " rollback brings them back)" in r.err
    assert cfg.read_text() == mine  # a dry run
    js = json.loads(taosync("rollback", "--redo", "--dry-run", "--json").out)
    assert js["edited_since_apply"] == [str(cfg)]
    r = taosync("rollback", "--redo")  # a script needs --yes to replace the edit
    assert r.rc == 1 and "--yes" in r.err and cfg.read_text() == mine, r.both
    r = taosync("rollback", "--redo", "--yes")
    assert r.rc == 0, r.both
    assert "~/.codex/config.toml was edited after taosync wrote it" in r.err
    assert "took back rollback #2" in r.out and cfg.read_text() != mine
    r = taosync("rollback")  # undoes the redo: the files as they were just before it
    assert r.rc == 0, r.both
    assert "backup of #3" in r.out
    assert cfg.read_bytes() == mine.encode()
    assert taosync("rollback", "--redo").rc == 0  # and forward again
    assert cfg.read_text() != mine and "taotoken" in cfg.read_text()


def test_a_redo_with_no_edit_since_the_rollback_warns_nothing(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                         "fast: intel/llama-7b"))
    assert taosync("apply", "--no-verify").rc == 0
    assert taosync("rollback").rc == 0
    r = taosync("rollback", "--redo")
    assert r.rc == 0, r.both
    assert "edited after taosync wrote it" not in r.err


def rotate_between_two_applies(taosync, home, fleet_file, monkeypatch) -> None:
    """Apply #1 with the test key; then the key is rotated and the fast route gets
    another model: apply #2."""
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.setenv("TAOTOKEN_API_KEY", NEW_KEY)
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                         "fast: intel/llama-7b"))
    assert taosync("apply", "--no-verify").rc == 0
    assert NEW_KEY in (home / ".codex/auth.json").read_text()


def files_holding(root: Path, needle: str, state: bool = False) -> list[str]:
    """Files under ``root`` holding ``needle``: the clients' (or only taosync's state's)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and needle.encode() in p.read_bytes()
                  and str(p.relative_to(root)).startswith(STATE) == state)


def test_a_rollback_keeps_the_rotated_key_and_says_so(taosync, home, fleet_file,
                                                      monkeypatch):
    rotate_between_two_applies(taosync, home, fleet_file, monkeypatch)
    r = taosync("rollback", "--dry-run")
    assert r.rc == 0, r.both
    assert ("~/.codex/auth.json: the rollback would put back an older secret (sensitive "
            "value) at OPENAI_API_KEY in place of the one in use now (sk-…ab12)") in r.err
    assert "would keep the secrets in use now (--restore-secrets puts" in r.err
    r = taosync("rollback")  # no terminal: the key in use stays, the model goes back
    assert r.rc == 0, r.both
    assert "kept the secrets in use now" in r.err
    assert TEST_KEY not in r.both and NEW_KEY not in r.both
    assert files_holding(home, TEST_KEY) == [], "the old key came back"
    assert 'model = "gpt-4o-mini"' in (home / ".codex/config.toml").read_text()
    assert NEW_KEY in (home / ".codex/auth.json").read_text()
    r = taosync("rollback", "--redo")  # forward again: nothing older to warn about
    assert r.rc == 0 and "older secret" not in r.err
    assert 'model = "intel/llama-7b"' in (home / ".codex/config.toml").read_text()


def test_restore_secrets_puts_the_old_key_back(taosync, home, fleet_file, monkeypatch):
    rotate_between_two_applies(taosync, home, fleet_file, monkeypatch)
    r = taosync("rollback", "--restore-secrets", "--json")
    assert r.rc == 0, r.both
    js = json.loads(r.out)
    assert {"path": str(home / ".codex/auth.json"), "keys": ["OPENAI_API_KEY"],
            "kept": False} in js["older_secrets"]
    assert TEST_KEY not in r.both and NEW_KEY not in r.both
    assert TEST_KEY in (home / ".codex/auth.json").read_text()
    assert files_holding(home, NEW_KEY) == []
    r = taosync("rollback", "--keep-secrets", "--restore-secrets")
    assert r.rc == 2 and "do not go together" in r.err


USER_KEY = "sk-user-OWNKEY-5555555555555555cd34"


def test_prune_drops_the_backups_holding_a_rotated_key(taosync, home, fleet_file,
                                                       monkeypatch):
    rotate_between_two_applies(taosync, home, fleet_file, monkeypatch)
    assert files_holding(home, TEST_KEY, state=True)  # the backups of #2
    r = taosync("prune", "--dry-run")
    assert r.rc == 0, r.both
    assert "would drop" in r.out and "#2" in r.out and TEST_KEY not in r.both
    assert files_holding(home, TEST_KEY, state=True)  # a dry run
    r = taosync("prune")
    assert r.rc == 0, r.both
    assert "record #2 is no longer restorable" in r.out, r.out
    assert files_holding(home, TEST_KEY, state=True) == []
    assert files_holding(home, NEW_KEY, state=True) == []  # in use: never in the state
    log = taosync("log")
    line = next(l for l in log.out.splitlines() if "#2 " in l)
    assert "not restorable: backups dropped by taosync prune" in line
    js = json.loads(taosync("log", "--json").out)
    assert [r["restorable"] for r in js["records"]] == [False, True]
    r = taosync("rollback")  # back over #2 needs the dropped backups
    assert r.rc == 2 and "cannot roll back past #2" in r.err and "taosync prune" in r.err
    assert NEW_KEY in (home / ".codex/auth.json").read_text()  # nothing was restored
    r = taosync("prune")
    assert r.rc == 0 and "nothing to prune" in r.out
    # a later step still rolls back: its backups hold only the key in use
    fleet_file.write_text(fleet_file.read_text().replace("fast: intel/llama-7b",
                                                         "fast: nvidia/deepseek-r1"))
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("rollback")
    assert r.rc == 0, r.both
    assert 'model = "intel/llama-7b"' in (home / ".codex/config.toml").read_text()


def test_prune_secrets_drops_your_own_earlier_key_too(taosync, home, fleet_file,
                                                      monkeypatch):
    auth = home / ".codex/auth.json"
    auth.parent.mkdir()
    auth.write_text(json.dumps({"OPENAI_API_KEY": USER_KEY}) + "\n")
    rotate_between_two_applies(taosync, home, fleet_file, monkeypatch)
    assert files_holding(home, USER_KEY, state=True)  # priors.json and #1's backup
    r = taosync("prune")  # your own key stays: destroy gives it back
    assert r.rc == 0, r.both
    assert files_holding(home, TEST_KEY, state=True) == []
    assert files_holding(home, USER_KEY, state=True)
    r = taosync("prune", "--secrets", "--dry-run", "--json")
    js = json.loads(r.out)
    assert js["priors_dropped"] == 1 and {"record": 1, "path": str(auth)} in js["dropped"]
    r = taosync("prune", "--secrets")
    assert r.rc == 0, r.both
    assert "priors.json: 1 earlier value(s) of yours" in r.out
    for secret in (USER_KEY, TEST_KEY, NEW_KEY):
        assert files_holding(home, secret, state=True) == [], secret
    assert USER_KEY not in r.both
    # hashes stay (output still hides the old keys), values are gone: destroy leaves
    # the key taosync took over as it is instead of giving back a value it no longer has
    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert USER_KEY not in auth.read_text()


def on_a_terminal(home: Path, fleet_file: Path, args: list[str], answer: bytes,
                  env: dict) -> tuple[int, str]:
    """Run ``python -m taosync`` with stdin and stderr on a pseudo-terminal, answer the
    first ``[Y/n]`` prompt with ``answer``; (exit code, everything the terminal saw)."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                             str(fleet_file), *args], cwd=ROOT, stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE, env=env)
    os.close(slave)
    seen, answered = b"", False
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"no prompt: {seen!r}")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other side closed: the run is over
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"[Y/n]" in seen:
            os.write(master, answer)
            answered = True
    out = proc.stdout.read()
    rc = proc.wait(timeout=60)
    os.close(master)
    return rc, (seen + out).decode("utf-8", "replace")


def test_a_terminal_asks_and_no_puts_the_old_key_back(taosync, home, fleet_file,
                                                      monkeypatch):
    rotate_between_two_applies(taosync, home, fleet_file, monkeypatch)
    env = {**os.environ, "TAOTOKEN_API_KEY": NEW_KEY}
    rc, seen = on_a_terminal(home, fleet_file, ["rollback"], b"n\n", env)
    assert rc == 0, seen
    assert "Keep the secrets in use now and roll back everything else? [Y/n]" in seen
    assert "put back the older secrets (--keep-secrets keeps the ones in use now)" in seen
    assert TEST_KEY not in seen and NEW_KEY not in seen
    assert TEST_KEY in (home / ".codex/auth.json").read_text()


def test_a_terminal_keeps_the_key_in_use_by_default(taosync, home, fleet_file,
                                                    monkeypatch):
    rotate_between_two_applies(taosync, home, fleet_file, monkeypatch)
    env = {**os.environ, "TAOTOKEN_API_KEY": NEW_KEY}
    rc, seen = on_a_terminal(home, fleet_file, ["rollback"], b"\n", env)
    assert rc == 0, seen
    assert "kept the secrets in use now" in seen
    assert NEW_KEY in (home / ".codex/auth.json").read_text()
    assert 'model = "gpt-4o-mini"' in (home / ".codex/config.toml").read_text()


def test_completion_offers_prune_and_the_secret_flags():
    from tests.test_completion import complete

    assert "prune" in complete("taosync pr")
    assert {"--keep-secrets"} <= set(complete("taosync rollback --ke"))
    assert {"--restore-secrets", "--redo"} <= set(complete("taosync rollback --re"))
    assert {"--secrets", "--dry-run"} <= set(complete("taosync prune --"))
