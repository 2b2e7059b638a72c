"""The one confirm rule (taosync/confirm.py, README "Confirming"): a terminal asks, --yes
skips, a script without --yes writes nothing (exit 1) — but a first apply onto values
the user had proceeds and ends naming them and the rollback command. Terminals are real
pseudo-terminals driving ``python -m taosync`` (tests/on_a_terminal.py)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from conftest import ROOT, TEST_KEY, snapshot
from on_a_terminal import run_on_a_terminal
from test_apply import CODEX_CONFIG, write

#: a Claude Code settings file the user wrote before taosync: their own gateway and token
MINE_TOKEN = "sk-ant-mine-PRIVATE-0123456789abcdef"
MINE = ('{\n  "theme": "dark",\n  "env": {\n'
        '    "ANTHROPIC_BASE_URL": "https://mine.example/api",\n'
        f'    "ANTHROPIC_AUTH_TOKEN": "{MINE_TOKEN}"\n  }}\n}}\n')
SETTINGS = ".claude/settings.json"


def users_home(home):
    """A real home: Claude Code and Codex already set up by hand."""
    write(home / SETTINGS, MINE)
    write(home / ".codex/config.toml", CODEX_CONFIG)


def args(home, fleet_file, *more):
    return ["--home", str(home), "-c", str(fleet_file), *more]


# -- the first apply onto existing values -----------------------------------------------

def test_first_apply_on_a_terminal_shows_the_values_it_replaces_and_no_writes_nothing(
        home, fleet_file):
    users_home(home)
    before = snapshot(home)
    rc, out = run_on_a_terminal(args(home, fleet_file, "apply", "--no-verify"), b"n\n")
    assert rc == 1, out
    assert "Replace these 3 values? [y/N]" in out
    assert "~/.claude/settings.json" in out and "~/.codex/config.toml" in out
    assert ("env.ANTHROPIC_BASE_URL: 'https://mine.example/api' → "
            "'https://taotoken.net/api'") in out
    assert "env.ANTHROPIC_AUTH_TOKEN: (sensitive value) → sk-…cdef" in out
    assert out.index(f"home: {home}") < out.index("~/.claude/settings.json")
    assert "model: 'o3' → 'gpt-4o-mini'" in out
    assert MINE_TOKEN not in out and TEST_KEY not in out and str(home) + "/." not in out
    assert "nothing was written" in out
    assert snapshot(home) == before  # not a client file, not even taosync's state


def test_first_apply_on_a_terminal_answered_yes_writes(home, fleet_file):
    users_home(home)
    rc, out = run_on_a_terminal(args(home, fleet_file, "apply", "--no-verify"), b"y\n")
    assert rc == 0, out
    assert "applied #1" in out
    settings = json.loads((home / SETTINGS).read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "https://taotoken.net/api"
    assert settings["theme"] == "dark"
    assert "you had in" not in out  # the person saw them: no summary line


def test_first_apply_with_yes_on_a_terminal_does_not_ask_and_names_them(home, fleet_file):
    users_home(home)
    rc, out = run_on_a_terminal(args(home, fleet_file, "apply", "--no-verify", "--yes"), None)
    assert rc == 0, out
    lines = out.strip().splitlines()
    assert "replacing 3 values you had in ~/.claude/settings.json, ~/.codex/config.toml" \
        in lines[-1], out
    assert MINE_TOKEN not in out


def test_no_op_apply_never_asks_and_the_fast_path_answers_it_with_yes(home, fleet_file):
    """A first apply is never a no-op; the no-op after it never asks, --yes or not, and
    ``apply --yes`` is answered by the fast path (taosync.cli never imported)."""
    users_home(home)
    rc, out = run_on_a_terminal(args(home, fleet_file, "apply", "--no-verify", "--yes"), None)
    assert rc == 0, out
    for more in ([], ["--yes"], ["-y"]):
        rc, out = run_on_a_terminal(args(home, fleet_file, "apply", *more), None)
        assert rc == 0 and "nothing to do" in out, out
    ran = subprocess.run([sys.executable, "-X", "importtime", "-m", "taosync",
                          *args(home, fleet_file, "apply", "--yes")],
                         cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0 and "nothing to do" in ran.stdout, ran.stderr
    assert " taosync.cli" not in ran.stderr  # the fast path answered


def test_first_apply_without_a_terminal_proceeds_and_ends_with_the_undo(taosync, home,
                                                                        fleet_file):
    users_home(home)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    last = r.err.strip().splitlines()[-1]
    undo = f"taosync --home {home} -c {fleet_file} rollback"
    assert last == (f"warning: apply #1 wrote 25 files, replacing 3 values you had in "
                    f"~/.claude/settings.json, ~/.codex/config.toml; to undo it: {undo}"), last
    assert MINE_TOKEN not in r.both
    # the line's command, run as printed, gives the user's values back
    ran = subprocess.run([sys.executable, "-m", "taosync", *shlex.split(undo)[1:]], cwd=ROOT,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    assert (home / SETTINGS).read_text() == MINE
    assert (home / ".codex/config.toml").read_text() == CODEX_CONFIG


def test_an_apply_over_nothing_of_the_users_has_no_summary_line(taosync, home):
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "you had" not in r.both and "to undo it" not in r.both, r.both


def test_json_lists_the_replaced_values_redacted_and_never_asks(taosync, home, fleet_file):
    users_home(home)
    dry = json.loads(taosync("apply", "--dry-run", "--json").out)
    assert {(r["display"], r["key"]) for r in dry["replaced"]} == {
        ("~/.claude/settings.json", "env.ANTHROPIC_BASE_URL"),
        ("~/.claude/settings.json", "env.ANTHROPIC_AUTH_TOKEN"),
        ("~/.codex/config.toml", "model")}
    token = next(r for r in dry["replaced"] if r["key"] == "env.ANTHROPIC_AUTH_TOKEN")
    assert token["old"] == "(sensitive value)" and token["path"] == str(home / SETTINGS)
    assert token["secret"] and token["new"] == "sk-…cdef"
    rc, out = run_on_a_terminal(args(home, fleet_file, "apply", "--no-verify", "--json"),
                                None)
    assert rc == 0, out
    data = json.loads(out[out.index("{"):])
    assert data["replaced"] == dry["replaced"] and MINE_TOKEN not in out
    assert json.loads(taosync("apply", "--no-verify", "--json").out)["replaced"] == []


def test_a_failed_verify_ends_with_what_was_written_and_the_undo(taosync, home, fleet_file):
    """The gateway answers nothing (a closed loopback port): the probes fail, and the
    last line says what the apply wrote and how to undo it."""
    fleet_file.write_text(fleet_file.read_text().replace("https://taotoken.net/api",
                                                         "http://127.0.0.1:9"))
    r = taosync("apply")
    assert r.rc == 1, r.both
    last = r.err.strip().splitlines()[-1]
    assert last == (f"warning: verify failed: apply #1 wrote 25 files; to undo it: "
                    f"taosync --home {home} -c {fleet_file} rollback"), r.both


# -- the same rule for apply over hand edits, adopt, destroy and rollback ----------------

def hand_edit(home):
    settings = home / SETTINGS
    settings.write_text(settings.read_text().replace('"claude-sonnet-4-20250514"',
                                                     '"gpt-4o-mini"', 1))
    return settings


def test_apply_over_a_hand_edit(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    settings = hand_edit(home)
    edited = settings.read_bytes()
    r = taosync("apply", "--no-verify")
    assert r.rc == 1 and "apply would overwrite 1 owned key" in r.err, r.both
    assert "answer on a terminal, or pass --yes" in r.err and settings.read_bytes() == edited
    r = taosync("apply", "--no-verify", "--json")  # --json never asks either
    assert r.rc == 1 and json.loads(r.out)["exit_code"] == 1 and settings.read_bytes() == edited
    rc, out = run_on_a_terminal(args(home, fleet_file, "apply", "--no-verify"), b"q\n",
                                prompt=b"[q]uit")
    assert rc == 1 and settings.read_bytes() == edited, out
    assert taosync("apply", "--no-verify", "--yes").rc == 0
    assert settings.read_bytes() != edited
    hand_edit(home)
    assert taosync("apply", "--no-verify", "--force").rc == 0  # --force includes --yes
    assert settings.read_bytes() != edited


def test_adopt(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    hand_edit(home)
    fleet = fleet_file.read_bytes()
    r = taosync("adopt")
    assert r.rc == 1 and "adopt would write the values you edited" in r.err and "--yes" in r.err, r.both
    assert fleet_file.read_bytes() == fleet
    rc, out = run_on_a_terminal(args(home, fleet_file, "adopt"), b"\n")  # Enter: no
    assert rc == 1 and "Write this to" in out and "nothing was written" in out, out
    assert fleet_file.read_bytes() == fleet
    rc, out = run_on_a_terminal(args(home, fleet_file, "adopt"), b"y\n")
    assert rc == 0 and "adopted" in out, out
    assert fleet_file.read_bytes() != fleet


def test_adopt_with_yes_in_a_script(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    hand_edit(home)
    r = taosync("adopt", "--yes")
    assert r.rc == 0 and "adopted" in r.out, r.both


def test_rollback_over_hand_edits(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    settings = hand_edit(home)
    edited = settings.read_bytes()
    r = taosync("rollback")
    assert r.rc == 1 and "rollback would replace your edits of 1 file" in r.err, r.both
    assert settings.read_bytes() == edited
    assert taosync("rollback", "--dry-run").rc == 0  # a dry run never asks
    rc, out = run_on_a_terminal(args(home, fleet_file, "rollback"), b"n\n")
    assert rc == 1 and "Replace your edits in this file? [y/N]" in out, out
    assert "~/.claude/settings.json: edited after taosync wrote it" in out
    assert settings.read_bytes() == edited
    rc, out = run_on_a_terminal(args(home, fleet_file, "rollback"), b"y\n")
    assert rc == 0 and not settings.exists(), out  # apply #1 created it
    r = taosync("rollback")  # the redo brings the edit back; nothing edited since
    assert r.rc == 0 and settings.read_bytes() == edited, r.both


def test_rollback_with_yes_in_a_script(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    settings = hand_edit(home)
    r = taosync("rollback", "--yes")
    assert r.rc == 0 and not settings.exists(), r.both


def test_destroy(taosync, home, fleet_file):
    """destroy asks the same question the same way (tests/test_destroy.py has the
    round trips); --json never asks."""
    assert taosync("apply", "--no-verify").rc == 0
    before = snapshot(home)
    r = taosync("destroy")
    assert r.rc == 1 and "destroy would give back everything" in r.err, r.both
    assert "answer on a terminal, or pass --yes" in r.err and snapshot(home) == before
    rc, out = run_on_a_terminal(args(home, fleet_file, "destroy", "--json"), None)
    assert rc == 1 and json.loads(out[out.index("{"):])["exit_code"] == 1, out
    assert snapshot(home) == before
    assert taosync("destroy", "--yes").rc == 0
