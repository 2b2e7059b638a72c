"""The no-op fast path (taosync/fastpath.py) answers exactly as the full path does, or not
at all: same stdout, stderr and exit code on the same home."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import TEST_KEY

COMMANDS = [("apply",), ("apply", "--no-verify"), ("plan", "--check"), ("plan",), ("status",),
            ("-q", "status"), ("apply", "-q"), ("diff", "--check")]
#: a closed port: an apply the fast path wrongly skipped would verify here and fail at once
LOCAL_GATEWAY = "http://127.0.0.1:9/api"


def fast(capsys, argv):
    from taosync.fastpath import answer

    capsys.readouterr()
    rc = answer(list(argv))
    out = capsys.readouterr()
    return None if rc is None else (rc, out.out, out.err)


def full(capsys, argv):
    from taosync.cli import run

    capsys.readouterr()
    rc = run(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def argv_for(home, fleet_file, *args):
    return ["--home", str(home), "-c", str(fleet_file), *args]


@pytest.fixture
def applied(taosync, home, fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace("https://taotoken.net/api",
                                                         LOCAL_GATEWAY))
    assert taosync("apply", "--no-verify").rc == 0
    return home


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_an_unchanged_home_is_answered_as_the_full_path_answers(applied, fleet_file, capsys,
                                                                 args):
    argv = argv_for(applied, fleet_file, *args)
    answered = fast(capsys, argv)
    assert answered is not None, "nothing changed: the fast path should answer"
    assert answered == full(capsys, argv)


def test_global_options_after_the_command_and_warnings_agree(applied, fleet_file, capsys,
                                                             monkeypatch):
    # a location variable pointing outside --home is ignored with a warning (stderr)
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", "/nonexistent-outside-home")
    argv = argv_for(applied, fleet_file, "apply", "--no-verify")
    full(capsys, argv)  # the render with the warning is the cached one now
    argv = ["plan", "--check", "--home", str(applied), "-c", str(fleet_file)]
    answered = fast(capsys, argv)
    assert answered is not None and "warning:" in answered[2]
    assert answered == full(capsys, argv)


@pytest.mark.parametrize("args", [("apply", "--json"), ("apply", "-v"), ("plan", "--no-key"),
                                  ("apply", "--only", "codex"), ("apply", "--dry-run"),
                                  ("status", "--check"), ("verify",), ("plan", "--home")])
def test_other_command_lines_fall_through(applied, fleet_file, capsys, args):
    assert fast(capsys, argv_for(applied, fleet_file, *args)) is None


def test_a_journal_falls_through_to_recovery(applied, fleet_file, capsys):
    (applied / ".local/state/taosync/journal.json").write_text("{}")
    assert fast(capsys, argv_for(applied, fleet_file, "status")) is None


def test_a_damaged_state_falls_through(applied, fleet_file, capsys):
    path = applied / ".local/state/taosync/state.json"
    state = json.loads(path.read_text())
    state["applies"][0]["id"] = "one"
    path.write_text(json.dumps(state))
    argv = argv_for(applied, fleet_file, "status")
    assert fast(capsys, argv) is None
    assert full(capsys, argv)[0] == 2


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4), max_leaves=12)


@settings(max_examples=100, deadline=None)
@given(value=JSON_VALUES, key=st.binary(min_size=0, max_size=80),
       data=st.binary(max_size=300))
def test_json_and_hashes_agree_with_the_modules_they_stand_for(value, key, data):
    """The certificate's JSON reading and keyed hashing (built on the C parts, without
    importing json or hashlib) give exactly what json and hmac give."""
    import hmac
    from hashlib import sha256

    from taosync.engine.certificate import Hmac, loads

    assert Hmac(key)(data) == hmac.new(key, data, sha256).hexdigest()[:32]
    text = json.dumps(value, indent=1, ensure_ascii=False)
    assert json.dumps(loads(" \n" + text + "\n"), sort_keys=True) == \
        json.dumps(json.loads(text), sort_keys=True)


@pytest.mark.parametrize("text", ["", "{", "{} x", "[1,]", "nul", '{"a": 1}}', '"x', "\x00"])
def test_malformed_json_is_refused_as_json_refuses_it(text):
    from taosync.engine.certificate import loads

    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads(text)


def test_what_is_at_a_path_is_read_alike(tmp_path):
    from taosync.engine import certificate, system

    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "p")
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    for name in ("f", "d", "p", "link", "nothing"):
        assert certificate.path_kind(str(tmp_path / name)) == system.path_kind(tmp_path / name)


EDITS = ["fleet-comment", "fleet-model", "key", "key-same", "target-space", "target-value",
         "target-gone", "client-env", "unrelated-env", "home", "platform", "version",
         "key-file", "git-home", "git-client-dir", "file-read-later"]


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(edits=st.sets(st.sampled_from(EDITS), max_size=3),
       args=st.sampled_from(COMMANDS))
def test_fast_and_full_paths_agree_whatever_changed(applied, fleet_file, tmp_path, capsys,
                                                    edits, args):
    """Over edits to fleet.yaml, the key, a target file, an environment variable a
    client consults, --home, and the platform/version in the cache entry: whenever the
    fast path answers, the full path answers the same; with no edit it does answer."""
    template = tmp_path / "template"
    if not template.exists():
        shutil.copytree(applied, template, symlinks=True)
        shutil.copyfile(fleet_file, tmp_path / "fleet.template")
    shutil.rmtree(applied)
    shutil.copytree(template, applied, symlinks=True)
    shutil.copyfile(tmp_path / "fleet.template", fleet_file)
    saved = dict(os.environ)
    try:
        home = _edit(applied, fleet_file, tmp_path, edits)
        argv = argv_for(home, fleet_file, *args)
        answered = fast(capsys, argv)
        # "key-same" (the same key, with a newline) is a variable the run read with
        # another value: the certificate holds the variable, not what the key made of it
        if not edits or edits <= {"unrelated-env"}:
            assert answered is not None, "nothing that matters changed"
        if answered is not None:
            assert answered == full(capsys, argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _edit(home: Path, fleet_file: Path, tmp_path: Path, edits: set[str]) -> Path:
    """Make the edits; return the home to run with."""
    state_path = home / ".local/state/taosync/state.json"
    if "fleet-comment" in edits:
        fleet_file.write_text(fleet_file.read_text() + "# a comment\n")
    if "fleet-model" in edits:
        fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                             "fast: intel/llama-7b"))
    if "key" in edits:
        os.environ["TAOTOKEN_API_KEY"] = "sk-rotated-0000000000000000"
    if "key-same" in edits:
        os.environ["TAOTOKEN_API_KEY"] = TEST_KEY + "\n"  # stripped: the same key
    if "key-file" in edits:
        (home / "key.txt").write_text(TEST_KEY + "\n")
        fleet_file.write_text(fleet_file.read_text().replace("${env:TAOTOKEN_API_KEY}",
                                                             "${file:~/key.txt}"))
    if "target-space" in edits:
        path = home / ".codex/config.toml"
        path.write_text(path.read_text() + "\n")
    if "target-value" in edits:
        path = home / ".claude/settings.json"
        data = json.loads(path.read_text())
        data["env"]["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9/elsewhere"
        path.write_text(json.dumps(data, indent=2) + "\n")
    if "target-gone" in edits:
        (home / ".continue/config.yaml").unlink()
    if "client-env" in edits:
        os.environ["CODEX_HOME"] = str(home / "codex-elsewhere")
    if "file-read-later" in edits:  # Kilo reads this after kilo.json: the target moves
        (home / ".config/kilo/opencode.json").write_text("{}\n")
    if "git-home" in edits:  # every target now in a work tree: the dotfiles guard speaks
        (home / ".git").mkdir(exist_ok=True)
    if "git-client-dir" in edits:  # one client's directory only (a worktree's .git file)
        (home / ".codex/.git").write_text("gitdir: /elsewhere\n")
    if "unrelated-env" in edits:
        os.environ["SOMETHING_NO_CLIENT_READS"] = "1"
    if "platform" in edits or "version" in edits:
        state = json.loads(state_path.read_text())
        fp = state["inputs"]["fingerprint"]
        if "platform" in edits:
            fp["platform"] = "plan9" if sys.platform != "plan9" else "linux"
        if "version" in edits:
            fp["taosync"] = "0.0.0-older"
        state_path.write_text(json.dumps(state, indent=1))
    if "home" in edits:
        other = tmp_path / "other-home"
        if other.exists():
            shutil.rmtree(other)
        shutil.copytree(home, other, symlinks=True)
        return other
    return home


def test_a_colour_terminal_gets_the_same_colours(applied, fleet_file, capsys, monkeypatch):
    """On a terminal without NO_COLOR, plan dims the --home header as click.style does
    (a no-op plan prints no "unchanged" rows since issue 17: one line, after the header)."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    argv = argv_for(applied, fleet_file, "plan")
    answered = fast(capsys, argv)
    assert answered is not None and answered[1].startswith("\x1b[90mhome: ")
    assert answered == full(capsys, argv)


def _nodes(value, path=()):
    """Every (path, value) of a JSON document, the root's children first."""
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield path + (k,), v
        yield from _nodes(v, path + (k,))


def test_any_node_of_the_state_given_another_type_is_answered_as_the_full_path_does(
        applied, fleet_file, capsys):
    """Each node of a real state.json in turn replaced by a value of another type: the
    fast path either falls through, or answers what the full path answers."""
    path = applied / ".local/state/taosync/state.json"
    original = path.read_text()
    state = json.loads(original)
    answered_some = 0
    first_file = next(iter(state["files"]))
    for n, (where, value) in enumerate(list(_nodes(state))):
        if len(where) > 4 and where[0] == "inputs":
            continue  # deep inside the cached render: the render-cache tests cover it
        if where[0] == "files" and len(where) > 2 and where[1] != first_file:
            continue  # every file entry has the same shape: one of them in full
        broken = json.loads(original)
        parent = broken
        for k in where[:-1]:
            parent = parent[k]
        parent[where[-1]] = 7 if not isinstance(value, int) or isinstance(value, bool) else "7"
        path.write_text(json.dumps(broken))
        argv = argv_for(applied, fleet_file, *(("status",) if n % 2 else ("plan", "--check")))
        answered = fast(capsys, argv)
        if answered is not None:
            answered_some += 1
            assert answered == full(capsys, argv), where
        path.write_text(original)
    # state.json's bytes are an input of the certificate: any change is the full path's
    assert answered_some == 0


def test_realpath_with_a_memo_is_realpath(tmp_path):
    """certificate.realpath resolves each parent once; it must give os.path.realpath's
    answer through links, dangling links, loops and missing parts."""
    from taosync.engine.certificate import realpath

    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "a/b/f").write_text("x")
    (tmp_path / "la").symlink_to(tmp_path / "a")
    (tmp_path / "rel").symlink_to("a/b")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    memo: dict = {}
    for rel in ("a/b/f", "la/b/f", "rel/f", "dangling/x", "loop1/x", "missing/f", "la",
                "a/../la/b", "a/./b"):
        path = str(tmp_path / rel)
        assert realpath(path, memo) == os.path.realpath(path), rel
