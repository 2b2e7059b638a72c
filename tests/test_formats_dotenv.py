"""The .env editor: records kept byte for byte, quoting, errors, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taosync.formats.base import MISSING, FormatError
from taosync.formats.registry import editor_for
from taosync.formats.dotenv import EDITOR as E

ENV = """# Continue secrets (https://docs.continue.dev)
export OPENAI_API_KEY=sk-old   # rotated monthly

ANTHROPIC_API_KEY='sk-ant-123'
  GEMINI_API_KEY = "gm-456"
MULTI="line one
line two"
EMPTY=
HASHED=abc#def
# TAO_OLD=commented-out
"""


def edit(text, *ops):
    doc = E.parse(text)
    for op in ops:
        if op[0] == "set":
            E.set(doc, (op[1],), op[2])
        else:
            E.delete(doc, (op[1],))
    return E.dump(doc)


@pytest.mark.parametrize(
    "text",
    [ENV, "", "\n\n", "A=1", "A=1\r\nB='2'\r\n", "# only a comment", "export A=1 # c\n   \n", 'A="x\r\ny"\r\n'],
)
def test_round_trip_is_exact(text):
    assert E.dump(E.parse(text)) == text


def test_editor_for_finds_it():
    assert editor_for("dotenv") is E


def test_get_unquotes():
    doc = E.parse(ENV)
    assert E.get(doc, ("OPENAI_API_KEY",)) == "sk-old"
    assert E.get(doc, ("ANTHROPIC_API_KEY",)) == "sk-ant-123"
    assert E.get(doc, ("GEMINI_API_KEY",)) == "gm-456"
    assert E.get(doc, ("MULTI",)) == "line one\nline two"
    assert E.get(doc, ("EMPTY",)) == ""
    assert E.get(doc, ("HASHED",)) == "abc"  # npm dotenv: '#' starts a comment
    assert E.get(doc, ("TAO_OLD",)) is MISSING
    assert E.get(E.parse('A="a\\nb\\"c\\\\"\nB=`x"y\'`\n'), ("A",)) == 'a\nb"c\\'
    assert E.get(E.parse("B=`x\"y'`\n"), ("B",)) == "x\"y'"


def test_set_existing_changes_only_the_value():
    out = edit(ENV, ("set", "OPENAI_API_KEY", "sk-new"))
    assert out == ENV.replace("OPENAI_API_KEY=sk-old   #", "OPENAI_API_KEY=sk-new   #")
    # the line's quotes are kept when they can hold the value
    out = edit(ENV, ("set", "ANTHROPIC_API_KEY", "sk-x"), ("set", "GEMINI_API_KEY", "g 2"))
    assert out == ENV.replace("'sk-ant-123'", "'sk-x'").replace('"gm-456"', '"g 2"')


def test_equal_value_is_byte_identical():
    doc = E.parse(ENV)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MULTI", "EMPTY", "HASHED"):
        assert E.set(doc, (key,), E.get(doc, (key,))) == []
    assert E.dump(doc) == ENV


def test_new_key_is_appended():
    out = edit(ENV, ("set", "TAO_API_KEY", "sk-tao_1"), ("set", "TAO_BASE", "https://gw.example/v1"))
    assert out == ENV + "TAO_API_KEY=sk-tao_1\nTAO_BASE=https://gw.example/v1\n"


def test_quoting_rules():
    assert edit("", ("set", "A", "plain-./:@+=,%~_9")) == "A=plain-./:@+=,%~_9\n"
    assert edit("", ("set", "A", "has space")) == 'A="has space"\n'
    assert edit("", ("set", "A", "")) == "A=\n"
    assert edit("", ("set", "A", "${HOME}")) == "A='${HOME}'\n"
    assert edit("", ("set", "A", 'say "hi"')) == "A='say \"hi\"'\n"
    assert edit("", ("set", "A", "C:\\x")) == "A='C:\\x'\n"
    assert edit("", ("set", "A", "a'b\"c")) == 'A="a\'b\\"c"\n'
    assert edit("", ("set", "A", "l1\nl2")) == 'A="l1\\nl2"\n'
    assert edit("", ("set", "A", "x#y")) == 'A="x#y"\n'
    assert edit("", ("set", "A", 8080), ("set", "B", True), ("set", "C", 1.5)) == "A=8080\nB=true\nC=1.5\n"


def test_crlf_and_missing_final_newline():
    assert edit("A=1\r\n", ("set", "B", "2")) == "A=1\r\nB=2\r\n"
    assert edit("A=1", ("set", "B", "2")) == "A=1\nB=2"
    assert edit("A=1\nB=2", ("delete", "B")) == "A=1"
    assert edit("A=1", ("set", "B", "2"), ("delete", "B")) == "A=1"
    assert edit("A=1\nB=2\n", ("delete", "A")) == "B=2\n"


def test_delete_removes_every_occurrence_and_keeps_the_rest():
    doc = E.parse("A=1\n# keep\nA=2\nB=3\n")
    assert E.get(doc, ("A",)) == "2"  # the last one counts
    E.set(doc, ("A",), "9")
    assert E.dump(doc) == "A=1\n# keep\nA=9\nB=3\n"
    assert E.delete(doc, ("A",)) is True
    assert E.dump(doc) == "# keep\nB=3\n"
    assert E.delete(doc, ("A",)) is False
    doc = E.parse(ENV)
    assert E.delete(doc, ("MULTI",)) is True
    assert E.dump(doc) == ENV.replace('MULTI="line one\nline two"\n', "")


def test_set_then_delete_restores_bytes():
    doc = E.parse(ENV)
    E.set(doc, ("TAO_API_KEY",), "secret value")
    E.delete(doc, ("TAO_API_KEY",))
    assert E.dump(doc) == ENV


def test_bad_paths_and_values():
    doc = E.parse("")
    with pytest.raises(FormatError):
        E.set(doc, ("A", "B"), "x")
    with pytest.raises(FormatError):
        E.set(doc, ("1A",), "x")
    with pytest.raises(FormatError):
        E.set(doc, ("A",), {"x": 1})
    with pytest.raises(FormatError):
        E.set(doc, ("A",), None)
    assert E.dump(doc) == ""


@pytest.mark.parametrize(
    "text, line, column",
    [
        ("A=1\njust words\n", 2, 1),
        ("A=1\n\nexport\n", 3, 1),
        ("=1\n", 1, 1),
        ('A="open\nB=2\n', 1, 3),
        ("A='x' trailing\n", 1, 6),
        ("A B=1\n", 1, 1),
    ],
)
def test_errors_carry_lines(text, line, column):
    with pytest.raises(FormatError) as err:
        E.parse(text)
    assert (err.value.line, err.value.column) == (line, column)


names = st.sampled_from(["A", "B", "TAO_KEY", "x.y", "_Z-1"])
values = st.one_of(st.text(max_size=12), st.from_regex(r"[A-Za-z0-9_./:-]{0,10}", fullmatch=True))
lines = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", names, st.from_regex(r"[A-Za-z0-9_./:-]{0,8}", fullmatch=True)),
    st.builds(lambda k, v: f"export {k}='{v}'", names, st.from_regex(r"[^'\n\r]{0,8}", fullmatch=True)),
    st.from_regex(r"#[^\n\r]{0,10}", fullmatch=True),
    st.just(""),
    st.just("   "),
)


@settings(max_examples=100, deadline=None)
@given(body=st.lists(lines, max_size=8), nl=st.sampled_from(["\n", "\r\n"]), final=st.booleans())
def test_property_round_trip(body, nl, final):
    text = nl.join(body) + (nl if final and body else "")
    assert E.dump(E.parse(text)) == text


@settings(max_examples=100, deadline=None)
@given(
    body=st.lists(lines, max_size=6),
    ops=st.lists(st.tuples(st.booleans(), names, values), max_size=8),
)
def test_property_edits_read_back(body, ops):
    text = "\n".join(body) + "\n"
    doc = E.parse(text)
    model = {}
    for line in body:
        if "=" in line and not line.startswith("#"):
            key, _, val = line.removeprefix("export ").partition("=")
            model[key] = val.strip("'")
    for is_set, key, value in ops:
        if is_set:
            E.set(doc, (key,), value)
            model[key] = value
        else:
            assert E.delete(doc, (key,)) == (key in model)
            model.pop(key, None)
    again = E.parse(E.dump(doc))
    for key in ["A", "B", "TAO_KEY", "x.y", "_Z-1"]:
        assert E.get(again, (key,)) == model.get(key, MISSING)
