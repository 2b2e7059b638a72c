"""The small formats issue 14 added: a one-value text file (llm's default_model.txt),
literal KEY=VALUE lines (shell-gpt's .sgptrc) and YAML whose top level is a list of
mappings (llm's extra-openai-models.yaml), new or edited."""

from __future__ import annotations

import pytest

from taosync.formats.base import MISSING, FormatError, Match
from taosync.formats.registry import editor_for

TEXT = editor_for("text")
KV = editor_for("keyvalue")
YAML = editor_for("yaml")


# -- text

def test_text_reads_one_value_and_keeps_bytes():
    for raw, value in (("gw-main\n", "gw-main"), ("gw-main", "gw-main"), ("gw\r\n", "gw")):
        doc = TEXT.parse(raw)
        assert TEXT.get(doc, ("text",)) == value
        assert TEXT.get(doc, ()) == {"text": value}
        assert TEXT.dump(doc) == raw
    empty = TEXT.parse("")
    assert TEXT.get(empty, ("text",)) is MISSING and TEXT.get(empty, ()) == {}


def test_text_set_and_delete():
    doc = TEXT.parse("old\r\n")
    TEXT.set(doc, ("text",), "gw-main")
    assert TEXT.dump(doc) == "gw-main\r\n"
    new = TEXT.parse("")
    TEXT.set(new, ("text",), "gw-main")
    assert TEXT.dump(new) == "gw-main\n"
    same = TEXT.parse("gw-main")  # an equal value: not rewritten (no newline added)
    TEXT.set(same, ("text",), "gw-main")
    assert TEXT.dump(same) == "gw-main"
    assert TEXT.delete(doc, ("text",)) is True and TEXT.dump(doc) == ""
    assert TEXT.delete(doc, ("text",)) is False


def test_text_refuses_other_paths_and_multi_line_values():
    doc = TEXT.parse("")
    with pytest.raises(FormatError):
        TEXT.set(doc, ("model",), "x")
    with pytest.raises(FormatError):
        TEXT.set(doc, ("text",), "a\nb")
    with pytest.raises(FormatError):
        TEXT.set(doc, ("text",), 5)


# -- keyvalue (.sgptrc)

SGPTRC = '# mine\nOPENAI_API_KEY="quoted" # kept\nA = spaced  \n\nB=x=y\n'


def test_keyvalue_reads_values_literally_and_keeps_bytes():
    doc = KV.parse(SGPTRC)
    assert KV.dump(doc) == SGPTRC
    assert KV.get(doc, ("OPENAI_API_KEY",)) == '"quoted" # kept'
    assert KV.get(doc, ("A",)) == "spaced"
    assert KV.get(doc, ("B",)) == "x=y"


def test_keyvalue_writes_values_verbatim():
    doc = KV.parse(SGPTRC)
    KV.set(doc, ("API_BASE_URL",), "http://127.0.0.1:8/v1")
    KV.set(doc, ("A",), "has space # and hash")
    assert KV.dump(doc) == ('# mine\nOPENAI_API_KEY="quoted" # kept\nA = has space # and hash  '
                            '\n\nB=x=y\nAPI_BASE_URL=http://127.0.0.1:8/v1\n')
    assert KV.get(KV.parse(KV.dump(doc)), ("A",)) == "has space # and hash"
    with pytest.raises(FormatError):
        KV.set(doc, ("A",), "two\nlines")
    with pytest.raises(FormatError):
        KV.parse("no equals sign\n")


# -- YAML whose top level is a list of mappings

LIST = "# models\n- model_id: other\n  model_name: x   # mine\n\n# tail\n"


def test_yaml_top_level_list_edits_keep_other_lines():
    doc = YAML.parse(LIST)
    assert YAML.dump(doc) == LIST
    at = (Match("model_id", "gw"),)
    YAML.set(doc, at + ("model_name",), "gw")
    YAML.set(doc, at + ("api_base",), "http://h/v1")
    text = YAML.dump(doc)
    assert text.startswith(LIST)
    assert YAML.get(YAML.parse(text), ()) == [
        {"model_id": "other", "model_name": "x"},
        {"model_id": "gw", "model_name": "gw", "api_base": "http://h/v1"}]
    assert YAML.delete(doc, at) is True
    assert YAML.dump(doc) == LIST


def test_yaml_top_level_list_refuses_scalars_and_key_paths():
    with pytest.raises(FormatError) as err:
        YAML.parse("- a: 1\n- 2\n")
    assert (err.value.line, err.value.column) == (2, 1)
    doc = YAML.parse(LIST)
    with pytest.raises(FormatError):
        YAML.set(doc, ("model",), "x")


@pytest.mark.parametrize("start", ["", "# only a comment\n"])
def test_yaml_new_top_level_list_written_alike(start):
    """A new file (the writer) and an empty one (the editor) come out the same."""
    new = editor_for("yaml", new=True) if not start else YAML
    doc = new.parse(start)
    for model in ("gw", "x/y"):
        new.set(doc, (Match("model_id", model), "model_name"), model)
    new.set(doc, (Match("model_id", "gw"), "headers"), {"X-Team": "core"})
    assert new.get(doc, ()) == [{"model_id": "gw", "model_name": "gw",
                                 "headers": {"X-Team": "core"}},
                                {"model_id": "x/y", "model_name": "x/y"}]
    assert new.dump(doc) == start + ("- model_id: gw\n  model_name: gw\n  headers:\n"
                                     "    X-Team: core\n- model_id: x/y\n  model_name: x/y\n")
