"""A TOML file whose tables tomlkit cannot edit in place is refused, not rewritten.

Valid TOML that tomlkit reads fine but cannot write back as it was: a ``[[…]]`` list
split by other tables in one table (it merges the parts on parse), an ``[[…]]`` list
between the tables of one header (it moves the later one up), and a list whose parts sit
in several tables (an element added to or deleted from its merged copy never reaches the
text — before this, ``apply`` said it wrote an MCP server that was not there). Reading
such a file is fine; editing it stops with the line of the table that would move (or of
the list), exit 2, nothing written — the user puts the tables together."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY, snapshot
from taosync.formats.base import FormatError, Match
from taosync.formats.toml import EDITOR as E

#: a [[…]] list split by another table in one table: tomlkit merges the parts on parse
MERGED = '''[[models]]
name = "a"  # mine
# about other
[other]
y = 1
[[models]]
name = "b"
'''
#: a [[…]] list between two tables under one header: tomlkit moves [mcp.s2] up
BETWEEN = '''[mcp.s1]
x = 1
[[srv]]
name = "n1"
[mcp.s2]
x = 2
'''
#: a [[…]] list in two parts of one out-of-order table: walked as a merged copy
PARTS = '''[[a.list]]
name = "p"
[b]
y = 1
[[a.list]]
name = "q"  # mine
'''


def test_tomlkit_still_cannot_keep_these_layouts():
    """Why the refusals exist: if a tomlkit upgrade keeps them, the guard can go."""
    import tomlkit

    assert tomlkit.parse(MERGED).as_string() != MERGED
    assert tomlkit.parse(BETWEEN).as_string() != BETWEEN
    assert tomlkit.parse(PARTS).as_string() == PARTS  # this one renders; its copy does not


#: each refusal in a CRLF file too, with the same table and line (a header without a
#: comment was once not found there: the error named no table and no line)
NEWLINES = pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])


@NEWLINES
@pytest.mark.parametrize("text, line, moved", [
    (MERGED, 6, "would move [[models]] up after [[models]] (line 1)"),
    (BETWEEN, 5, "would move [mcp.s2] up after [mcp.s1] (line 1)"),
])
def test_an_edit_tomlkit_would_move_tables_for_is_refused_at_the_moving_table(text, line, moved, newline):
    text = text.replace("\n", newline)
    doc = E.parse(text)
    assert E.get(doc, ()) == tomllib.loads(text)  # reading is fine
    for edit in (lambda: E.set(doc, ("new",), 1), lambda: E.delete(doc, ("other" if "other" in text else "srv",))):
        with pytest.raises(FormatError) as exc:
            edit()
        assert (exc.value.line, exc.value.column) == (line, 1)
        assert moved in exc.value.message and "put those tables together" in exc.value.message
    assert E.delete(doc, ("absent",)) is False  # nothing to delete: no edit, no error
    assert E.dump(doc) == text


@pytest.mark.parametrize("edit", [
    lambda doc: E.set(doc, ("a", "list", Match("name", "r")), {"v": 1}),
    lambda doc: E.delete(doc, ("a", "list", Match("name", "q"))),
    lambda doc: E.delete(doc, ("a", "list", Match("name", "p"))),
    lambda doc: E.delete(doc, ("a", "list")),
    lambda doc: E.set(doc, ("a", "list"), [{"name": "r"}]),
], ids=["add", "delete-last", "delete-first", "delete-list", "replace-list"])
@NEWLINES
def test_adding_or_removing_an_element_of_a_list_in_parts_is_refused(edit, newline):
    text = PARTS.replace("\n", newline)
    doc = E.parse(text)
    with pytest.raises(FormatError) as exc:
        edit(doc)
    assert exc.value.line == 5
    assert exc.value.message.startswith(
        "the [[a.list]] tables are split by other tables (lines 1 and 5): ")
    assert E.dump(doc) == text


def test_what_tomlkit_can_do_in_such_files_is_still_done():
    doc = E.parse(PARTS)  # an element's own keys are the text's own tables
    E.set(doc, ("a", "list", Match("name", "q"), "v"), 2)
    E.set(doc, ("b", "z"), 3)
    assert E.dump(doc) == PARTS.replace("y = 1\n", "y = 1\nz = 3\n") + "v = 2\n"
    together = MERGED.replace('[other]\ny = 1\n[[models]]\nname = "b"\n',
                              '[[models]]\nname = "b"\n[other]\ny = 1\n')
    doc = E.parse(together)  # the user's fix: one run of [[models]] tables
    assert E.delete(doc, ("models", Match("name", "a")))
    assert tomllib.loads(E.dump(doc)) == {"models": [{"name": "b"}], "other": {"y": 1}}
    assert "# mine" in E.dump(doc)


# -- through the CLI: exit 2, the file and line, nothing written ------------------------------

FLEET = """\
version: 1
gateway:
  base_url: http://127.0.0.1:9/api
  key: ${env:TAOTOKEN_API_KEY}
models:
  m1: {}
routes:
  fast: m1
default_route: fast
clients:
  mistral-vibe: {}
  gptme: {}
mcp_servers:
  files:
    command: npx
    args: [-y, files-mcp]
"""

VIBE_SPLIT = '''active_model = "mine"

[[models]]
name = "mine"
provider = "mistral"
alias = "mine"

[tools.bash]
permission = "ask"

[[models]]
name = "other"
provider = "mistral"
alias = "other"
'''

GPTME_PARTS = '''[[mcp.servers]]
name = "mine"
command = "my-mcp"

[env]
OTHER = "1"

[[mcp.servers]]
name = "theirs"
command = "their-mcp"
'''

VIBE_TOGETHER = VIBE_SPLIT.replace('[tools.bash]\npermission = "ask"\n\n', "") + \
    '\n[tools.bash]\npermission = "ask"\n'
GPTME_TOGETHER = GPTME_PARTS.replace('[env]\nOTHER = "1"\n\n', "") + '\n[env]\nOTHER = "1"\n'


def cli(home: Path, fleet: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    env.update(TAOTOKEN_API_KEY=TEST_KEY, NO_COLOR="1")
    for var in ("VIBE_HOME", "XDG_CONFIG_HOME"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("rel, text, where, says, together", [
    (".vibe/config.toml", VIBE_SPLIT, "11:1",
     "taosync's TOML library would move [[models]] up after [[models]] (line 3)",
     VIBE_TOGETHER),
    (".config/gptme/config.toml", GPTME_PARTS, "8:1",
     "the [[mcp.servers]] tables are split by other tables (lines 1 and 8)", GPTME_TOGETHER),
], ids=["vibe-models-merged", "gptme-servers-in-parts"])
def test_apply_stops_at_the_split_list_and_writes_nothing(tmp_path, home, rel, text, where, says,
                                                         together):
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    target = home / rel
    target.parent.mkdir(parents=True)
    target.write_text(text)
    before = snapshot(home)
    for args in (("plan",), ("apply", "--no-verify")):
        r = cli(home, fleet, *args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"error: {target}:{where}: {says}" in r.stderr, r.stderr  # the file's place, no key's
        assert "Traceback" not in r.stderr
        assert ("taosync changed nothing" in r.stderr) == (args[0] == "apply")  # plan writes none
        assert snapshot(home) == before

    # the user puts the tables together: apply goes through and keeps what is theirs
    target.write_text(together)
    r = cli(home, fleet, "apply", "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    data = tomllib.loads(target.read_text())
    if "vibe" in rel:
        assert {"mine", "other", "m1"} <= {m.get("alias") for m in data["models"]}
        assert data["tools"] == {"bash": {"permission": "ask"}}
    else:
        assert {"mine", "theirs", "files"} <= {s["name"] for s in data["mcp"]["servers"]}
        assert data["env"]["OTHER"] == "1"
