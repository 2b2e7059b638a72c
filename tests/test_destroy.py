"""destroy: give back everything taosync owns; the home ends byte-identical to before."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from on_a_terminal import run_on_a_terminal
from test_apply import CLAUDE_JSON, CLAUDE_SETTINGS, CODEX_CONFIG, CONTINUE_CONFIG, write

STATE = ".local/state/taosync"

CLINE_GLOBAL_STATE = """{
  "telemetrySetting": "disabled",
  "planModeApiProvider": "anthropic"
}
"""


def tree(root: Path, skip: str | None = None) -> dict[str, tuple]:
    """Every file and directory under root: (kind, mode, bytes) — the round trip's yardstick."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if skip and (rel == skip or rel.startswith(skip + "/")):
                continue
            st = p.lstat()
            out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                        p.read_bytes() if p.is_file() else None)
    return out


def user_home(home: Path) -> None:
    """User files with user keys and comments in every client."""
    write(home / ".claude/settings.json", CLAUDE_SETTINGS)
    write(home / ".claude.json", CLAUDE_JSON)
    write(home / ".codex/config.toml", CODEX_CONFIG)
    write(home / ".continue/config.yaml", CONTINUE_CONFIG)
    write(home / ".cline/data/globalState.json", CLINE_GLOBAL_STATE)
    (home / ".codex/config.toml").chmod(0o640)
    (home / ".claude/settings.json").chmod(0o644)
    (home / ".claude").chmod(0o750)


def owned_files(home: Path) -> int:
    """How many files the state says taosync owns (what destroy gives back)."""
    import json

    return len(json.loads((home / ".local/state/taosync/state.json").read_text())["files"])


def two_applies(taosync, fleet_file) -> None:
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: intel/llama-7b"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "applied #2" in r.out, r.both


def test_destroy_purge_leaves_the_home_byte_identical_to_before_the_first_apply(
        taosync, home, fleet_file):
    user_home(home)
    before = tree(home)
    two_applies(taosync, fleet_file)
    assert tree(home) != before
    n = owned_files(home)
    r = taosync("destroy", "--yes", "--purge")
    assert r.rc == 0, r.both
    assert f"destroyed: {n} files given back" in r.out and "state purged" in r.out
    assert tree(home) == before  # contents, modes, and no directory left behind


def test_destroy_keeps_its_state_and_rollback_undoes_it(taosync, home, fleet_file):
    user_home(home)
    before = tree(home)
    two_applies(taosync, fleet_file)
    applied = tree(home, skip=".local")
    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert "recorded as #3" in r.out
    assert tree(home, skip=".local") == before
    assert (home / STATE / "state.json").exists()
    assert json.loads((home / STATE / "state.json").read_text())["files"] == {}
    assert taosync("rollback").rc == 0  # the destroy is a step like an apply
    assert tree(home, skip=".local") == applied
    assert taosync("status").rc == 0


def test_destroy_gives_keys_back_one_by_one_around_a_users_later_edit(taosync, home, fleet_file):
    """A file the user edited since taosync wrote it is not restored from its backup:
    each owned key is given back and the user's own edit stays."""
    user_home(home)
    two_applies(taosync, fleet_file)
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace('approval_policy = "on-request"',
                                           'approval_policy = "never"'))
    r = taosync("destroy", "--yes", "--purge")
    assert r.rc == 0, r.both
    assert cfg.read_text() == CODEX_CONFIG.replace('approval_policy = "on-request"',
                                                   'approval_policy = "never"')
    assert not (home / ".codex/auth.json").exists()


def test_destroy_dry_run_and_json_write_nothing(taosync, home, fleet_file):
    user_home(home)
    two_applies(taosync, fleet_file)
    applied = tree(home)
    r = taosync("destroy", "--dry-run")
    assert r.rc == 0 and "dry run: nothing was written" in r.out
    assert "-model = \"intel/llama-7b\"" in r.out  # the diff, as plan shows it
    assert "sk-test-SECRETKEY" not in r.both
    js = json.loads(taosync("destroy", "--dry-run", "--json").out)
    assert js["dry_run"] and js["changed"] == owned_files(home)
    assert str(home / ".codex/config.toml") in js["exact"]
    assert tree(home) == applied


def test_destroy_without_a_terminal_needs_yes(taosync, home, fleet_file):
    """The confirm rule (taosync/confirm.py): nobody to ask and no --yes writes nothing,
    exit 1 as answering no does (it was 2, "bad input", before the rule was one)."""
    two_applies(taosync, fleet_file)
    applied = tree(home)
    r = taosync("destroy")
    assert r.rc == 1 and "--yes" in r.err and "Traceback" not in r.both
    assert tree(home) == applied


def test_destroy_with_nothing_owned_says_so(taosync, home):
    r = taosync("destroy", "--yes")
    assert r.rc == 0 and "nothing to do: taosync owns nothing" in r.out
    assert tree(home) == {}


def test_destroy_asks_on_a_terminal(taosync, home, fleet_file):
    user_home(home)
    before = tree(home, skip=".local")
    two_applies(taosync, fleet_file)
    applied = tree(home)
    args = ["--home", str(home), "-c", str(fleet_file), "destroy"]
    rc, out = run_on_a_terminal(args, b"n\n")
    assert rc == 1 and "nothing was written" in out, out[-2000:]
    assert tree(home) == applied
    n = owned_files(home)
    rc, out = run_on_a_terminal(args, b"y\n")
    assert rc == 0 and f"destroyed: {n} files given back" in out, out[-2000:]
    assert tree(home, skip=".local") == before


def test_a_key_the_user_added_survives_destroy_after_an_apply_that_left_the_file_alone(
        taosync, home, fleet_file):
    """An apply that does not write a file must not take the user's later edit of it for
    taosync's own bytes: destroy then put the pre-taosync backup back whole and lost the
    key the user had added in between (found by the stateful test)."""
    settings = home / ".claude/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "dark"}\n')
    assert taosync("apply", "--no-verify").rc == 0
    doc = json.loads(settings.read_text())
    doc["myOwn"] = "keep me"
    settings.write_text(json.dumps(doc, indent=2) + "\n")
    fleet_file.write_text(fleet_file.read_text().replace(
        "codex: {model: fast,", "codex: {model: deep,"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and ".claude/settings.json" not in r.out, r.both
    assert taosync("destroy", "--yes").rc == 0
    assert json.loads(settings.read_text()) == {"theme": "dark", "myOwn": "keep me"}


def test_destroy_writes_the_plan_it_showed_unless_something_moved_meanwhile(
        taosync, home, fleet_file, monkeypatch):
    """The plan shown before the question is the one written when, under the lock, the
    state and every planned file are still the bytes it was made from (planning a big
    home twice was half a destroy's time); a file the user edits while the question
    waits is planned again, so the key they changed stays theirs."""
    from taosync.commands import destroy as command
    from taosync.engine import destroy as engine

    assert taosync("apply", "--no-verify").rc == 0
    plans = []
    real_plan = engine.plan_destroy
    monkeypatch.setattr(engine, "plan_destroy", lambda *a, **k: plans.append(1) or real_plan(*a, **k))
    snapshot_before = tree(home)
    assert taosync("destroy", "--yes").rc == 0
    assert len(plans) == 1

    assert taosync("rollback", "--yes").rc == 0
    assert tree(home, skip=".local") == {k: v for k, v in snapshot_before.items()
                                         if not k.startswith(".local")}
    settings = home / ".claude/settings.json"
    real_confirm = command._confirm

    def edit_while_asked(*args, **kwargs):
        doc = json.loads(settings.read_text())
        doc["env"]["ANTHROPIC_MODEL"] = "my-own-model"
        settings.write_text(json.dumps(doc, indent=2) + "\n")
        return real_confirm(*args, **kwargs)

    monkeypatch.setattr(command, "_confirm", edit_while_asked)
    plans.clear()
    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert len(plans) == 2
    assert json.loads(settings.read_text()) == {"env": {"ANTHROPIC_MODEL": "my-own-model"}}


def test_a_comment_the_user_wrote_in_a_file_taosync_made_stays(taosync, home, fleet_file):
    """A file taosync created goes with its keys, but not a comment the user wrote in it
    since: that file stays, holding the comment (not the blank lines taosync's tables
    left above it). With nothing of the user's in it, it goes."""
    assert taosync("apply", "--no-verify").rc == 0
    codex, opencode = home / ".codex/config.toml", home / ".config/opencode/opencode.json"
    with codex.open("a") as f:
        f.write("# my note: try the deep route\n")
    opencode.write_text("// mine\n" + opencode.read_text())
    assert taosync("destroy", "--yes").rc == 0
    assert codex.read_text() == "# my note: try the deep route\n"
    assert "// mine" in opencode.read_text() and "taotoken" not in opencode.read_text()
    assert not (home / ".claude/settings.json").exists()
