"""History that respects the user (issue 23, Build 4a): a redo warns about hand edits
like a rollback and is itself undoable; a rollback never silently puts back a rotated
key; ``taosync prune`` drops backups holding old secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
            "replace those edits too (taosync rollback brings them back)") in r.err
    assert cfg.read_text() == mine  # a dry run
    js = json.loads(taosync("rollback", "--redo", "--dry-run", "--json").out)
    assert js["edited_since_apply"] == [str(cfg)]
    r = taosync("rollback", "--redo")
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
