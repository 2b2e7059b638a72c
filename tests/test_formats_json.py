"""The strict JSON editor: byte preservation, edits, errors, speed, and properties."""

from __future__ import annotations

import json
import re
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taosync.formats.base import MISSING, FormatError, Match
from taosync.formats.registry import editor_for
from plain_model import play, play_both
from taosync.formats.json_ import EDITOR as E
from taosync.formats.json_ import _scan_items, decoded_layout


def _scan_end(text: str, start: int) -> int:
    return json.JSONDecoder().raw_decode(text, start)[1]


def vars_(item):
    return (item.key, item.key_start, item.key_end, item.start, item.end)

CLAUDE = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": [
      "Bash(npm run lint)",
      "Bash(git diff:*)",
      "Read(~/.zshrc)"
    ],
    "deny": [
      "Bash(curl:*)"
    ],
    "defaultMode": "acceptEdits"
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          { "type": "command", "command": "prettier --write \\"$FILE\\"" }
        ]
      }
    ]
  },
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh", "padding": 0},
  "enabledPlugins": {
    "formatter@acme-tools": true,
    "deployer@acme-tools": false
  },
  "env": {
    "DISABLE_TELEMETRY": "1",
    "HTTPS_PROXY": "http://proxy:8080"
  },
  "model": "claude-sonnet-4-5",
  "cleanupPeriodDays": 20
}
"""


def edit(text, *ops):
    doc = E.parse(text)
    for op in ops:
        if op[0] == "set":
            E.set(doc, op[1], op[2])
        else:
            E.delete(doc, op[1])
    return E.dump(doc)


# -- round trip ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        CLAUDE,
        "",
        "   \n\n",
        "{}",
        "{}\n",
        '{"a":1,"b":[1,2,{"c":null}]}',
        '{\r\n  "a": 1,\r\n  "b": "x"\r\n}\r\n',
        '{\n\t"a": {\n\t\t"b": true\n\t}\n}',
        '  {  "a"  :  1  ,  "b" : [ ]  }  \n\n',
        '{"\\u00e9\\n": "caf\\u00e9 \\"q\\" \\\\ /", "é": 1.50e3}',
    ],
)
def test_round_trip_is_exact(text):
    assert E.dump(E.parse(text)) == text


def test_editor_for_finds_it():
    assert editor_for("json") is E


# -- get ---------------------------------------------------------------------------------


def test_get_returns_plain_values():
    doc = E.parse(CLAUDE)
    assert E.get(doc, ("env",)) == {"DISABLE_TELEMETRY": "1", "HTTPS_PROXY": "http://proxy:8080"}
    assert E.get(doc, ("permissions", "deny")) == ["Bash(curl:*)"]
    assert E.get(doc, ("enabledPlugins", "formatter@acme-tools")) is True
    assert E.get(doc, ("cleanupPeriodDays",)) == 20
    assert E.get(doc, ("nope",)) is MISSING
    assert E.get(doc, ("model", "deeper")) is MISSING  # through a scalar
    assert E.get(doc, ("hooks", "PostToolUse", Match("matcher", "Edit|Write"), "hooks")) == [
        {"type": "command", "command": 'prettier --write "$FILE"'}
    ]
    assert E.get(E.parse(""), ("a",)) is MISSING


def test_keys_are_literal_segments():
    text = '{\n  "projects": {\n    "/home/u/proj": {"allowedTools": []},\n    "a.b": 1\n  }\n}\n'
    doc = E.parse(text)
    assert E.get(doc, ("projects", "/home/u/proj", "allowedTools")) == []
    assert E.get(doc, ("projects", "a.b")) == 1
    assert E.get(doc, ("projects", "a", "b")) is MISSING
    E.set(doc, ("projects", "/home/u/other proj", "trust"), True)
    assert json.loads(E.dump(doc))["projects"]["/home/u/other proj"] == {"trust": True}


def test_duplicate_keys_last_one_counts():
    text = '{\n  "a": 1,\n  "b": 0,\n  "a": 2\n}\n'
    doc = E.parse(text)
    assert E.get(doc, ("a",)) == 2
    E.set(doc, ("a",), 3)
    assert E.dump(doc) == '{\n  "a": 1,\n  "b": 0,\n  "a": 3\n}\n'
    assert E.delete(doc, ("a",)) is True
    assert E.dump(doc) == '{\n  "b": 0\n}\n'
    assert E.get(doc, ("a",)) is MISSING


# -- set: replacing ----------------------------------------------------------------------


def test_replace_scalar_changes_only_its_span():
    out = edit(CLAUDE, ("set", ("model",), "tao/claude-opus"))
    assert out == CLAUDE.replace('"claude-sonnet-4-5"', '"tao/claude-opus"')


def test_equal_value_leaves_text_identical():
    doc = E.parse(CLAUDE)
    assert E.set(doc, ("env",), {"HTTPS_PROXY": "http://proxy:8080", "DISABLE_TELEMETRY": "1"}) == []
    E.set(doc, ("statusLine",), {"type": "command", "command": "~/.claude/statusline.sh", "padding": 0})
    E.set(doc, ("cleanupPeriodDays",), 20)
    E.set(doc, ("enabledPlugins", "deployer@acme-tools"), False)
    E.set(doc, ("permissions", "allow"), ["Bash(npm run lint)", "Bash(git diff:*)", "Read(~/.zshrc)"])
    assert E.dump(doc) == CLAUDE


def test_type_changes_are_changes():
    assert edit('{"a": 1}', ("set", ("a",), True)) == '{"a": true}'
    assert edit('{"a": 1}', ("set", ("a",), 1.0)) == '{"a": 1.0}'
    assert edit('{"a": 0}', ("set", ("a",), None)) == '{"a": null}'
    assert edit('{"a": "1"}', ("set", ("a",), 1)) == '{"a": 1}'


def test_strings_are_json_dumped_without_ascii_escaping():
    out = edit('{\n  "a": 1\n}', ("set", ("a",), 'café "q" \\ \n'))
    assert out == '{\n  "a": "café \\"q\\" \\\\ \\n"\n}'
    assert json.loads(out)["a"] == 'café "q" \\ \n'


def test_dict_over_object_updates_member_by_member():
    out = edit(CLAUDE, ("set", ("env",), {"DISABLE_TELEMETRY": "1", "ANTHROPIC_BASE_URL": "https://t"}))
    assert out == CLAUDE.replace(
        '    "DISABLE_TELEMETRY": "1",\n    "HTTPS_PROXY": "http://proxy:8080"\n',
        '    "DISABLE_TELEMETRY": "1",\n    "ANTHROPIC_BASE_URL": "https://t"\n',
    )


def test_replace_with_nested_value_is_reindented():
    out = edit(CLAUDE, ("set", ("permissions", "deny"), {"x": [1, {"y": 2}]}))
    assert out == CLAUDE.replace(
        '    "deny": [\n      "Bash(curl:*)"\n    ],\n',
        '    "deny": {\n      "x": [\n        1,\n        {\n          "y": 2\n        }\n      ]\n    },\n',
    )


def test_replace_in_one_line_object_stays_inline():
    out = edit(CLAUDE, ("set", ("statusLine", "padding"), [1, 2]))
    assert out == CLAUDE.replace('"padding": 0}', '"padding": [1, 2]}')


# -- set: inserting ----------------------------------------------------------------------


def test_new_member_goes_last_with_sibling_indentation():
    doc = E.parse(CLAUDE)
    assert E.set(doc, ("env", "ANTHROPIC_BASE_URL"), "https://gw.example/anthropic") == []
    assert E.dump(doc) == CLAUDE.replace(
        '    "HTTPS_PROXY": "http://proxy:8080"\n',
        '    "HTTPS_PROXY": "http://proxy:8080",\n    "ANTHROPIC_BASE_URL": "https://gw.example/anthropic"\n',
    )


def test_new_nested_path_creates_parents_and_reports_them():
    doc = E.parse(CLAUDE)
    created = E.set(doc, ("a", "b", "c"), {"k": [1]})
    assert created == [("a",), ("a", "b")]
    assert E.dump(doc) == CLAUDE.replace(
        '  "cleanupPeriodDays": 20\n}',
        '  "cleanupPeriodDays": 20,\n  "a": {\n    "b": {\n      "c": {\n        "k": [\n'
        "          1\n        ]\n      }\n    }\n  }\n}",
    )


def test_one_line_object_gets_inline_member():
    assert edit('{"a": 1}', ("set", ("b",), {"c": [1, 2]})) == '{"a": 1, "b": {"c": [1, 2]}}'
    assert edit('{"a":1,"b":2}', ("set", ("c",), 3)) == '{"a":1,"b":2,"c":3}'
    out = edit(CLAUDE, ("set", ("statusLine", "x"), 1))
    assert out == CLAUDE.replace('"padding": 0}', '"padding": 0, "x": 1}')


def test_empty_object_is_expanded():
    assert edit("{}", ("set", ("a",), 1)) == '{\n  "a": 1\n}'
    assert edit("{}\n", ("set", ("a",), {"b": 1})) == '{\n  "a": {\n    "b": 1\n  }\n}\n'
    assert edit('{\n  "x": {},\n  "y": 1\n}\n', ("set", ("x", "k"), "v")) == (
        '{\n  "x": {\n    "k": "v"\n  },\n  "y": 1\n}\n'
    )
    assert edit('{\n  "x": { }\n}', ("set", ("x", "k"), 1)) == '{\n  "x": {\n    "k": 1\n  }\n}'
    # an empty object inside a one-line object stays one line
    assert edit('{"x": {}, "y": 1}', ("set", ("x", "k"), 1)) == '{"x": {"k": 1}, "y": 1}'


def test_empty_text_gets_a_formatted_document():
    for text in ("", "  \n"):
        doc = E.parse(text)
        assert E.get(doc, ("a",)) is MISSING
        assert E.set(doc, ("env", "K"), "v") == [("env",)]
        assert E.dump(doc) == '{\n  "env": {\n    "K": "v"\n  }\n}\n'


def test_indent_unit_is_detected():
    four = '{\n    "a": {\n        "b": 1\n    }\n}\n'
    assert edit(four, ("set", ("c", "d"), 1)) == (
        '{\n    "a": {\n        "b": 1\n    },\n    "c": {\n        "d": 1\n    }\n}\n'
    )
    tabs = '{\n\t"a": 1\n}'
    assert edit(tabs, ("set", ("b", "c"), [1])) == '{\n\t"a": 1,\n\t"b": {\n\t\t"c": [\n\t\t\t1\n\t\t]\n\t}\n}'
    # the unit comes from a nested level when the top level has no members yet
    assert edit('{}', ("set", ("b",), {"c": 1})) == '{\n  "b": {\n    "c": 1\n  }\n}'


def test_crlf_is_kept_in_new_lines():
    text = '{\r\n  "a": 1\r\n}\r\n'
    out = edit(text, ("set", ("b", "c"), 2))
    assert out == '{\r\n  "a": 1,\r\n  "b": {\r\n    "c": 2\r\n  }\r\n}\r\n'
    assert "\n" not in out.replace("\r\n", "")


def test_missing_trailing_newline_stays_missing():
    text = '{\n  "a": 1\n}'
    assert edit(text, ("set", ("b",), 2)) == '{\n  "a": 1,\n  "b": 2\n}'


def test_parent_that_is_not_an_object_is_an_error():
    doc = E.parse('{\n  "model": "x",\n  "l": [1]\n}')
    with pytest.raises(FormatError) as err:
        E.set(doc, ("model", "sub"), 1)
    assert (err.value.line, err.value.column) == (2, 12)
    assert "model" in err.value.message
    with pytest.raises(FormatError):
        E.set(doc, ("l", "k"), 1)
    with pytest.raises(FormatError):
        E.set(doc, ("model", Match("name", "x")), {})


def test_values_json_cannot_hold_are_refused():
    doc = E.parse("{}")
    with pytest.raises(ValueError):
        E.set(doc, ("a",), float("nan"))
    assert E.dump(doc) == "{}"


# -- Match segments --------------------------------------------------------------------

LIST = """{
  "servers": [
    {
      "name": "a",
      "url": "http://a"
    },
    {
      "name": "b",
      "url": "http://b"
    }
  ]
}
"""


def test_match_selects_and_edits_one_element():
    doc = E.parse(LIST)
    assert E.get(doc, ("servers", Match("name", "b"), "url")) == "http://b"
    assert E.set(doc, ("servers", Match("name", "b"), "url"), "http://B") == []
    assert E.dump(doc) == LIST.replace('"http://b"', '"http://B"')


def test_match_miss_appends_an_element():
    doc = E.parse(LIST)
    created = E.set(doc, ("servers", Match("name", "c"), "url"), "http://c")
    assert created == [("servers", Match("name", "c"))]
    assert E.dump(doc) == LIST.replace(
        '      "url": "http://b"\n    }\n',
        '      "url": "http://b"\n    },\n    {\n      "name": "c",\n      "url": "http://c"\n    }\n',
    )
    assert E.delete(doc, ("servers", Match("name", "c"))) is True
    assert E.dump(doc) == LIST


def test_match_creates_the_list():
    doc = E.parse('{\n  "x": 1\n}\n')
    created = E.set(doc, ("servers", Match("name", "a"), "url"), "u")
    assert created == [("servers",), ("servers", Match("name", "a"))]
    assert json.loads(E.dump(doc)) == {"x": 1, "servers": [{"name": "a", "url": "u"}]}
    assert E.set(doc, ("servers", Match("name", "b")), {"url": "v"}) == []
    assert E.get(doc, ("servers",)) == [{"name": "a", "url": "u"}, {"name": "b", "url": "v"}]


def test_match_element_must_be_a_mapping():
    doc = E.parse(LIST)
    for target in (Match("name", "a"), Match("name", "new")):
        with pytest.raises(FormatError):
            E.set(doc, ("servers", target), "not a mapping")
    assert E.set(doc, ("servers", Match("name", "a")), {"url": "http://A"}) == []
    assert E.get(doc, ("servers", Match("name", "a"))) == {"name": "a", "url": "http://A"}


def test_match_in_one_line_list():
    text = '{"l": [{"name": "a"}, {"name": "b"}]}'
    assert edit(text, ("set", ("l", Match("name", "c"), "v"), 1)) == (
        '{"l": [{"name": "a"}, {"name": "b"}, {"name": "c", "v": 1}]}'
    )
    assert edit(text, ("delete", ("l", Match("name", "a")))) == '{"l": [{"name": "b"}]}'


# -- delete ------------------------------------------------------------------------------


def test_delete_removes_member_comma_and_line():
    doc = E.parse(CLAUDE)
    assert E.delete(doc, ("env", "DISABLE_TELEMETRY")) is True
    assert E.dump(doc) == CLAUDE.replace('    "DISABLE_TELEMETRY": "1",\n', "")
    doc = E.parse(CLAUDE)
    E.delete(doc, ("env", "HTTPS_PROXY"))
    assert E.dump(doc) == CLAUDE.replace(',\n    "HTTPS_PROXY": "http://proxy:8080"', "")
    doc = E.parse(CLAUDE)
    E.delete(doc, ("cleanupPeriodDays",))
    assert E.dump(doc) == CLAUDE.replace(',\n  "cleanupPeriodDays": 20', "")
    doc = E.parse(CLAUDE)
    E.delete(doc, ("permissions", "deny", "x"))  # through a list: nothing
    E.delete(doc, ("permissions", "deny"))
    assert E.dump(doc) == CLAUDE.replace('    "deny": [\n      "Bash(curl:*)"\n    ],\n', "")


def test_delete_last_member_leaves_empty_object_and_never_prunes():
    doc = E.parse('{\n  "env": {\n    "K": "v"\n  }\n}\n')
    assert E.delete(doc, ("env", "K")) is True
    assert E.dump(doc) == '{\n  "env": {}\n}\n'
    assert E.delete(doc, ("env", "K")) is False
    assert E.delete(doc, ("env",)) is True
    assert E.dump(doc) == "{}\n"


def test_delete_inline():
    assert edit('{"a": 1, "b": 2, "c": 3}', ("delete", ("b",))) == '{"a": 1, "c": 3}'
    assert edit('{"a": 1, "b": 2, "c": 3}', ("delete", ("c",))) == '{"a": 1, "b": 2}'
    assert edit('{"a": 1, "b": 2, "c": 3}', ("delete", ("a",))) == '{"b": 2, "c": 3}'


def test_delete_missing_is_false():
    doc = E.parse(CLAUDE)
    assert E.delete(doc, ("nope", "x")) is False
    assert E.delete(doc, ("model", "x")) is False
    assert E.delete(E.parse(""), ("a",)) is False
    assert E.dump(doc) == CLAUDE


def test_set_then_delete_and_prune_restores_bytes():
    doc = E.parse(CLAUDE)
    values = {
        ("env", "ANTHROPIC_BASE_URL"): "https://gw",
        ("env", "ANTHROPIC_AUTH_TOKEN"): "sk-x",
        ("apiKeyHelper",): "echo hi",
        ("tao", "routes", "main"): {"model": "x"},
    }
    created = []
    for path, value in values.items():
        created += E.set(doc, path, value)
    assert created == [("tao",), ("tao", "routes")]
    for path in values:
        E.delete(doc, path)
    for path in reversed(created):
        if E.get(doc, path) == {}:
            E.delete(doc, path)
    assert E.dump(doc) == CLAUDE


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, line, column, word",
    [
        ('{\n  // a comment\n  "a": 1\n}', 2, 3, "comment"),
        ('{\n  "a": 1 /* c */\n}', 2, 10, "comment"),
        ('{\n  "a": 1,\n}', 2, 9, "trailing comma"),
        ('{"a": [1, 2,]}', 1, 12, "trailing comma"),
        # the comma is missing after line 2's value: named there, not on line 3 (issue 29)
        ('{\n  "a": 1\n  "b": 2\n}', 2, 9, "missing ','"),
        ('{\n  "a": tru\n}', 2, 8, "value"),
        ('{\n  "a": "x\n"}', 2, 8, "string is not closed"),  # at its opening quote
        ("{'a': 1}", 1, 2, "double quotes"),
        ('{"a": 1}\n{"b": 2}', 2, 1, "Extra data"),
        ('{"a": 1', 1, 8, "add the missing '}'"),
        ("[1, 2]", 1, 1, "object"),
        ('  "x"', 1, 3, "object"),
        ("null", 1, 1, "object"),
        ('{"a": NaN}', 1, 7, "NaN"),
        ("\ufeff{}", 1, 1, "BOM"),
    ],
)
def test_errors_carry_line_and_column(text, line, column, word):
    with pytest.raises(FormatError) as err:
        E.parse(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert word.lower() in err.value.message.lower()


# -- speed ---------------------------------------------------------------------------------


def test_large_file_edits_are_fast():
    projects = {
        f"/home/u/project-{i}": {
            "allowedTools": [],
            "history": [{"display": "x" * 200, "pastedContents": {}} for _ in range(5)],
            "hasTrustDialogAccepted": True,
        }
        for i in range(800)
    }
    text = json.dumps({"numStartups": 3, "projects": projects, "userID": "abc"}, indent=2)
    assert len(text) > 1_000_000
    t0 = time.perf_counter()
    doc = E.parse(text)
    for i in range(30):
        E.set(doc, ("projects", f"/home/u/project-{i * 7}", "hasTrustDialogAccepted"), False)
        E.set(doc, ("env", f"K{i}"), str(i))
    E.delete(doc, ("userID",))
    out = E.dump(doc)
    assert time.perf_counter() - t0 < 3.0
    data = json.loads(out)
    assert data["projects"]["/home/u/project-7"]["hasTrustDialogAccepted"] is False
    assert data["env"]["K29"] == "29" and "userID" not in data


# -- properties ----------------------------------------------------------------------------

keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=8))
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=12,
)
documents = st.dictionaries(keys, plain, max_size=5)
indents = st.sampled_from([None, 1, 2, 4, "\t"])
small_keys = st.sampled_from(["a", "b", "c", "x.y", "/p q"])
paths = st.lists(small_keys, min_size=1, max_size=3).map(tuple)
ops = st.lists(
    st.one_of(st.tuples(st.just("set"), paths, plain), st.tuples(st.just("delete"), paths, st.none())),
    max_size=8,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=st.one_of(plain, documents), indent=indents)
def test_property_round_trip(x, indent):
    text = json.dumps({"k": x, "n": [1.5, -0.0, 1e300]}, indent=indent, ensure_ascii=False)
    assert E.dump(E.parse(text)) == text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=documents, indent=indents, ops=ops)
def test_property_edits_match_a_plain_model(x, indent, ops):
    text = json.dumps(x, indent=indent, ensure_ascii=False)
    doc = E.parse(text)
    model = json.loads(text)
    for kind, path, value in ops:
        created = play(E, doc, model, kind, path, value)
        if created is None:
            continue
        assert created[1] == created[0]
        if kind == "set":
            assert E.get(doc, path) == value
        else:
            assert E.get(doc, path) is MISSING
    out = E.dump(doc)
    assert json.loads(out) == model
    for start, (end, items, _) in decoded_layout(doc).items():  # the span cache matches a rescan
        assert [vars_(i) for i in items] == [vars_(i) for i in _scan_items(out, start)]
        assert out[end - 1] in "}]"
    if indent is not None and (x or indent == 2):
        # appended members and re-rendered values follow the file's own layout exactly
        assert out == json.dumps(model, indent=indent, ensure_ascii=False)
    for path in {p for _, p, _ in ops}:
        got = E.get(doc, path)
        cur = model
        for key in path:
            cur = cur.get(key, MISSING) if isinstance(cur, dict) else MISSING
        assert got == cur or (got is MISSING and cur is MISSING)


# -- linear edits on large objects ----------------------------------------------------------

def big_servers_text(n: int) -> str:
    servers = {f"srv-{i:03d}": {"command": "npx", "args": ["-y", f"@s/{i}"], "env": {"I": str(i)}}
               for i in range(n)}
    return json.dumps({"numStartups": 3, "mcpServers": servers, "tail": [1, 2]}, indent=2)


def random_edit(rng, names: list[str], step: int):
    """One edit of the kinds the planner makes on ``mcpServers``: add, replace, update a
    member key by key (dict over dict), delete (first, middle, last), a nested set."""
    kind = rng.choice(["add", "add", "replace", "update", "delete", "nested", "array"])
    if kind == "add" or not names:
        name = f"new-{step:04d}"
        names.append(name)
        return "set", ("mcpServers", name), {"url": f"https://m{step}.example/mcp"}
    name = rng.choice([names[0], names[-1], rng.choice(names)])
    if kind == "replace":
        return "set", ("mcpServers", name), [step, "list"]
    if kind == "update":
        return "set", ("mcpServers", name), {"command": "uvx", "cwd": f"/srv/{step}"}
    if kind == "delete":
        names.remove(name)
        return "delete", ("mcpServers", name), None
    if kind == "nested":
        return "set", ("mcpServers", name, "env", f"K{step}"), str(step)
    return "set", ("tail", Match("n", str(step % 7))), {"v": step}


def assert_cache_matches_a_rescan(doc, text: str) -> int:
    """The layout cache, decoded to absolute offsets, is what a rescan of ``text``
    finds: each cached container's end and items, and its key index once built. How
    many key indexes were checked."""
    indexed = 0
    for start, (end, items, index) in decoded_layout(doc).items():
        assert text[start] in "{[" and _scan_end(text, start) == end
        assert [vars_(i) for i in items] == [vars_(i) for i in _scan_items(text, start)]
        if index is not None:
            indexed += 1
            assert {k: [vars_(i) for i in v] for k, v in index.items()} == \
                {k: [vars_(i) for i in items if i.key == k] for k in {i.key for i in items}}
    return indexed


def test_edits_on_a_large_object_give_the_text_a_fresh_parse_gives():
    """The cached layout (offsets shifted, items added and removed in place, members
    indexed by key) edits exactly as a fresh parse of the text before every step would,
    which is what the editor did before it kept anything between edits."""
    import random

    rng = random.Random(16)
    text = big_servers_text(500)
    doc = E.parse(text)
    names = [f"srv-{i:03d}" for i in range(500)]
    for step in range(300):
        kind, path, value = random_edit(rng, names, step)
        fresh = E.parse(text)
        if not play_both(E, doc, fresh, kind, path, value):
            continue
        text = E.dump(fresh)
        assert E.dump(doc) == text, f"step {step}: {kind} {path}"
        assert E.get(doc, ("mcpServers",)) == json.loads(text)["mcpServers"]
    assert_cache_matches_a_rescan(doc, text)


def test_duplicate_keys_stay_last_one_wins_through_the_index():
    doc = E.parse('{"a": 1, "b": 2, "a": 3}')
    assert E.get(doc, ("a",)) == 3
    E.set(doc, ("a",), 4)
    assert E.dump(doc) == '{"a": 1, "b": 2, "a": 4}'
    E.set(doc, ("c",), 5)
    assert E.delete(doc, ("a",)) is True
    assert E.dump(doc) == '{"b": 2, "c": 5}'
    assert E.get(doc, ("a",)) is MISSING
    E.set(doc, ("a",), 6)
    assert E.get(doc, ("a",)) == 6 and E.dump(doc) == '{"b": 2, "c": 5, "a": 6}'


def test_delete_removes_every_occurrence_without_walking_again_after_the_last(monkeypatch):
    """Deleting a duplicated key removes each occurrence (JSON.parse keeps the last, so
    the file must not keep any); once the object's key index holds no more, the delete
    ends without walking the path again. In JSONC a last member after a member with its
    own comment restructures the object: its index is gone, so it walks once more."""
    for editor, text, path, out, walked in [
        (E, '{"x": {"a": 1, "b": 2, "a": 3, "a": 4}, "y": [1]}', ("x", "a"), '{"x": {"b": 2}, "y": [1]}', 3),
        (E, '{"x": {"a": 1, "b": 2}}', ("x", "b"), '{"x": {"a": 1}}', 1),
        (JC, '{\n  "a": 1,\n  "a": 0,\n  "b": 2, // mine\n  "a": 3\n}\n', ("a",),
         '{\n  "b": 2, // mine\n}\n', 3),
        (JC, '{\n  "b": 2, // mine\n  "a": 3\n}\n', ("a",), '{\n  "b": 2, // mine\n}\n', 2),
    ]:
        doc = editor.parse(text)
        walks = []
        real = type(editor)._walk
        monkeypatch.setattr(type(editor), "_walk", lambda self, d, p: walks.append(p) or real(self, d, p))
        assert editor.delete(doc, path) is True
        monkeypatch.undo()
        assert len(walks) == walked, text
        assert editor.dump(doc) == out and editor.get(doc, path) is MISSING
        assert editor.delete(doc, path) is False


def test_a_run_of_inserts_scans_the_object_once(monkeypatch):
    """Cost linear in the edits: adding 500 members to a 500-member object, each looked
    up first as the planner does, scans that object once, not once per edit."""
    from taosync.formats import json_

    scanned = []
    real = json_._scan_items
    monkeypatch.setattr(json_, "_scan_items", lambda text, start: scanned.append(start) or
                        real(text, start))
    text = big_servers_text(500)
    servers_at = text.index("{", text.index('"mcpServers"'))  # no edit comes before it
    doc = E.parse(text)
    scanned.clear()  # parse scans the root once to find the indent unit
    for i in range(500):
        assert E.get(doc, ("mcpServers", f"added-{i}")) is MISSING
        E.set(doc, ("mcpServers", f"added-{i}"), {"url": f"https://a{i}.example/mcp"})
        E.set(doc, ("mcpServers", f"srv-{i:03d}", "env", "I"), "changed")
    for i in range(0, 500, 2):
        E.delete(doc, ("mcpServers", f"added-{i}"))
    out = json.loads(E.dump(doc))
    assert len(out["mcpServers"]) == 750 and out["mcpServers"]["srv-007"]["env"] == {"I": "changed"}
    assert scanned.count(servers_at) == 1
    assert len(scanned) <= 2 + 2 * 500  # root, mcpServers, each server and its env once


# -- long runs of deletes and sets: the cache against a fresh parse at every step ------------

def big_models_text(n: int, comments: bool) -> str:
    """opencode's shape: ``n`` models of a few keys each under ``provider.gw.models``, MCP
    servers and a list; with ``comments``, JSONC with the user's comments (a header, in
    and between models, a member's own comment after its comma) and trailing commas."""
    lines = ["{", '  "$schema": "https://opencode.ai/config.json",', '  "provider": {', '    "gw": {',
             '      "npm": "@ai-sdk/openai-compatible",', '      "models": {']
    for i in range(n):
        mine = f" // model {i}" if comments and i % 7 == 3 else ""
        inner = f" /* {i} */" if comments and i % 11 == 5 else ""
        last = "," if i < n - 1 or (comments and i % 2) else ""
        lines += [f'        "m{i:03d}": {{', f'          "id": "m{i:03d}",{inner}',
                  f'          "limit": {{"context": {1000 + i}, "output": 8}}' + ("," if comments else ""),
                  f"        }}{last}{mine}"]
        if comments and i % 13 == 0:
            lines.append(f"        // after m{i:03d}")
    lines += ["      }", "    }", "  },", '  "mcp": {']
    lines += [f'    "s{i}": {{"type": "local", "command": ["npx", "s{i}"]}}' + ("," if i < 9 else "")
              for i in range(10)]
    lines += ["  },", '  "theme": "x"' + (", // mine" if comments else ""), "}", ""]
    return ("// the user's header\n" if comments else "") + "\n".join(lines)


def sweep_edits(rng, names: list[str], steps: int):
    """Edits as a destroy and an apply make them, in runs: each model's keys, then its
    ``limit``, then the model, first to last, last to first or at random; models added
    key by key; keys set or replaced inside models; members added and removed elsewhere."""
    at = ("provider", "gw", "models")
    made = 0
    while steps > 0:
        run = rng.choice(["forward", "backward", "random", "add", "mixed"])
        for _ in range(rng.randint(3, 12)):
            steps -= 1
            if run == "add" or not names or (run == "mixed" and rng.random() < 0.4):
                made += 1
                name = f"new{made:03d}"
                names.insert(rng.randint(0, len(names)), name)
                yield "set", at + (name, "id"), name
                yield "set", at + (name, "limit", "context"), made
                continue
            pick = {"forward": 0, "backward": -1}.get(run)
            name = names[pick] if pick is not None else rng.choice(names)
            kind = rng.random()
            if kind < 0.15:
                yield "set", at + (name, "limit", "output"), rng.choice([16, [1, 2], {"x": made}])
                continue
            if kind < 0.2:
                yield "set", ("mcp", f"s{rng.randint(0, 12)}"), rng.choice([None, {"command": ["uvx"]}])
                yield "delete", ("mcp", f"s{rng.randint(0, 12)}"), None
                continue
            names.remove(name)
            yield "delete", at + (name, "id"), None
            yield "delete", at + (name, "limit", "context"), None
            yield "delete", at + (name, "limit"), None
            yield "delete", at + (name,), None


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("jsonc", [False, True], ids=["json", "jsonc"])
def test_runs_of_deletes_and_sets_give_the_text_a_fresh_parse_gives(jsonc, seed):
    """The layout cache (items relative to their container on either side of its split,
    containers after the last splice relative to the text's end) edits exactly as a
    fresh parse of the text before every step would, over long runs of deletes first to
    last, last to first and at random, and of sets between them; after every step the
    cache, decoded, is what a rescan finds."""
    import random

    editor = JC if jsonc else E
    rng = random.Random(seed)
    text = big_models_text(100, comments=jsonc)
    comments = comments_in(text)  # the user's: every one stays, whatever is removed
    doc = editor.parse(text)
    names = [f"m{i:03d}" for i in range(100)]
    indexed = 0

    def step(n: int, kind: str, path: tuple, value) -> None:
        nonlocal text, indexed
        fresh = editor.parse(text)
        if not play_both(editor, doc, fresh, kind, path, value):
            return
        text = editor.dump(fresh)
        assert editor.dump(doc) == text, f"step {n}: {kind} {path}"
        assert comments_in(text) == comments, f"step {n}: a comment lost or added"
        indexed += assert_cache_matches_a_rescan(doc, doc.text)

    for n, (kind, path, value) in enumerate(sweep_edits(rng, names, 120)):
        step(n, kind, path, value)
    model = json.loads(blank(text))["provider"]["gw"]["models"]
    assert sorted(model) == sorted(names)
    # then a destroy of what is left, first to last, down to the empty object
    at = ("provider", "gw", "models")
    for name in names[::2] + names[1::2]:
        for keys in (("id",), ("limit", "context"), ("limit",), ()):
            step(-1, "delete", at + (name,) + keys, None)
    assert indexed > 100  # the key indexes were checked too
    assert json.loads(blank(text))["provider"]["gw"]["models"] == {}
    if jsonc:
        assert text.startswith("// the user's header\n") and '"theme": "x", // mine' in text


def comments_in(text: str) -> Counter:
    """The comments of a JSON or JSONC text (none in strict JSON), counted."""
    return Counter(m.group(0) for m in re.finditer(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/',
                                                   text, re.S) if m.group(0)[0] == "/")


# -- JSONC (opencode, Kilo): the same editor on a shadow with comments blanked ---------------

from taosync.formats.jsonc import EDITOR as JC  # noqa: E402
from taosync.formats.jsonc import blank  # noqa: E402

OPENCODE = """{
  // my providers
  "provider": {
    "local": {"options": {"baseURL": "http://127.0.0.1:11434/v1",},}, /* "quoted" */
  },
  "url": "http://a//b /* not a comment */",
  "theme": "x", // trailing comment
}
"""


def test_jsonc_blank_keeps_offsets_and_strings():
    shadow = blank(OPENCODE)
    assert len(shadow) == len(OPENCODE) and shadow.count("\n") == OPENCODE.count("\n")
    assert json.loads(shadow)["url"] == "http://a//b /* not a comment */"
    assert "//" not in shadow.replace("http://", "").replace("a//b", "")


def test_jsonc_edits_keep_comments_and_trailing_commas():
    doc = JC.parse(OPENCODE)
    assert JC.get(doc, ("provider", "local", "options")) == {
        "baseURL": "http://127.0.0.1:11434/v1"}
    JC.set(doc, ("provider", "gw", "options", "baseURL"), "https://gw/v1")
    JC.set(doc, ("model",), "gw/m")
    JC.set(doc, ("theme",), "y")
    out = JC.dump(doc)
    for kept in ("// my providers", '/* "quoted" */', "// trailing comment",
                 '"url": "http://a//b /* not a comment */"', '{"baseURL": "http://127.0.0.1:11434/v1",},}'):
        assert kept in out
    assert json.loads(blank(out)) == {
        "provider": {"local": {"options": {"baseURL": "http://127.0.0.1:11434/v1"}},
                     "gw": {"options": {"baseURL": "https://gw/v1"}}},
        "url": "http://a//b /* not a comment */", "theme": "y", "model": "gw/m"}
    doc = JC.parse(out)
    assert JC.delete(doc, ("provider", "gw")) and JC.delete(doc, ("model",))
    JC.set(doc, ("theme",), "x")
    assert JC.dump(doc) == OPENCODE  # set, then delete: the user's bytes come back


def test_jsonc_untouched_text_is_byte_for_byte():
    doc = JC.parse(OPENCODE)
    JC.set(doc, ("theme",), "x")  # the same value: no edit
    assert JC.dump(doc) == OPENCODE


def test_jsonc_comment_only_file_keeps_its_comment():
    doc = JC.parse("// written by hand\n")
    JC.set(doc, ("model",), "gw/m")
    out = JC.dump(doc)
    assert out.startswith("// written by hand\n{") and json.loads(blank(out)) == {"model": "gw/m"}


def test_jsonc_errors_are_located():
    with pytest.raises(FormatError) as exc:
        JC.parse('{\n  "a": 1 /* open\n}')
    assert "never closed" in exc.value.message and (exc.value.line, exc.value.column) == (2, 10)
    with pytest.raises(FormatError) as exc:
        JC.parse('{\n  "a": 1\n  "b": 2\n}')
    assert exc.value.line == 2 and "missing ','" in exc.value.message
    assert editor_for("jsonc") is JC


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=documents, indent=indents, ops=ops)
def test_property_jsonc_edits_match_the_model_and_keep_outer_comments(x, indent, ops):
    """Comments around the document survive any edits; without comments, JSONC edits are
    exactly the strict editor's."""
    body = json.dumps(x, indent=indent, ensure_ascii=False)
    text = f"// head\n/* block\n   comment */\n{body}\n// tail\n"
    doc, plain_doc = JC.parse(text), E.parse(body)
    model = json.loads(body)
    for kind, path, value in ops:
        created = play(JC, doc, model, kind, path, value)
        plain_model = json.loads(E.dump(plain_doc))
        play(E, plain_doc, plain_model, kind, path, value)
        if created is not None:
            assert created[1] == created[0]
    out = JC.dump(doc)
    assert json.loads(blank(out)) == model
    assert out.startswith("// head\n/* block\n   comment */\n") and out.endswith("\n// tail\n")
    assert out[len("// head\n/* block\n   comment */\n"):-len("\n// tail\n")] == E.dump(plain_doc)


ZED = """// Zed settings
{
  "theme": "One Dark", // my theme
  "context_servers": {
    "mine": {"command": "my-server", "args": []}, // my own server
  },
  "vim_mode": true, /* vim! */
}
"""


def test_jsonc_a_comment_after_the_last_member_stays_beside_it():
    """Zed's settings: a member added after a commented last member goes below the
    comment, which stays with the member it was written for; removing it gives the
    user's bytes back."""
    doc = JC.parse(ZED)
    JC.set(doc, ("context_servers", "ours"), {"command": "npx"})
    JC.set(doc, ("zz",), 1)
    out = JC.dump(doc)
    assert ('"mine": {"command": "my-server", "args": []}, // my own server\n'
            '    "ours": {\n      "command": "npx"\n    }\n  },') in out
    assert '"vim_mode": true, /* vim! */\n  "zz": 1\n}' in out
    assert json.loads(blank(out))["context_servers"] == {
        "mine": {"command": "my-server", "args": []}, "ours": {"command": "npx"}}
    doc = JC.parse(out)
    assert JC.delete(doc, ("zz",)) and JC.delete(doc, ("context_servers", "ours"))
    assert JC.dump(doc) == ZED
    crlf = ZED.replace("\n", "\r\n")
    doc = JC.parse(crlf)
    JC.set(doc, ("zz",), 1)
    assert '"vim_mode": true, /* vim! */\r\n  "zz": 1\r\n}' in JC.dump(doc)


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        # issue 29: what is wrong and the fix, where the user slipped
        ("{\n  'a': 1\n}", 2, 3, "JSON strings take double quotes"),
        ('{\n  a: 1\n}', 2, 3, 'a key is a string in double quotes in JSON; write "a"'),
        ('{"a": \'x\'}', 1, 7, "JSON strings take double quotes"),
        ('{\n  "a": 1,\n}', 2, 9, "trailing comma is not allowed in strict JSON; remove it"),
        ('{\n  // note\n  "a": 1\n}', 2, 3, "comments are not allowed in strict JSON; remove"),
    ],
)
def test_errors_say_the_fix(text, line, column, words):
    with pytest.raises(FormatError) as err:
        E.parse(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert words in err.value.message


@pytest.mark.parametrize("text, edit, out", [
    # the only member: its comment opens the empty object
    ('{\n  // mine\n  "a": 1\n}\n', "-a", '{\n  // mine\n}\n'),
    # a comment above the next member, or after the removed one's comma
    ('{\n  "a": 1,\n  // about b\n  "b": 2\n}\n', "-a", '{\n  // about b\n  "b": 2\n}\n'),
    ('{\n  "a": 1, // note\n  "b": 2\n}\n', "-a", '{\n  // note\n  "b": 2\n}\n'),
    # the last member: comments above it stay; what followed it on its line moves down
    ('{\n  "a": 1,\n  // about b\n  "b": 2\n}\n', "-b", '{\n  "a": 1\n  // about b\n}\n'),
    ('{\n  "a": 1,\n  /* x */ "b": 2 // tail\n}\n', "-b",
     '{\n  "a": 1\n  /* x */\n  // tail\n}\n'),
    ('{\n  "a": 1, // c\n  // about b\n  "b": 2\n}\n', "-b",
     '{\n  "a": 1\n  // c\n  // about b\n}\n'),
    # on one line, side by side
    ('{"a": 1 /* x */, "b": 2}\n', "-a", '{/* x */ "b": 2}\n'),
    ('{"a": 1, /* x */ "b": 2}\n', "-b", '{"a": 1 /* x */}\n'),
    # comments inside a removed or rewritten value go where it was, or above its member
    ('{\n  "x": {\n    // in x\n    "y": 1\n  },\n  "z": 2\n}\n', "-x",
     '{\n  // in x\n  "z": 2\n}\n'),
    ('{\n  "m": [\n    "p", // first\n    "q"\n  ]\n}\n', "m=[\"q\"]",
     '{\n  // first\n  "m": [\n    "q"\n  ]\n}\n'),
    ('{\n  "o": {"a": 1 /* c */}\n}\n', "o={\"b\": 2}", '{\n  "o": {"b": 2 /* c */}\n}\n'),
    # an empty object's own comment opens its body when a member comes in
    ('{\n  "mcp": { // my servers\n  }\n}\n', "mcp.x=1",
     '{\n  "mcp": {\n    // my servers\n    "x": 1\n  }\n}\n'),
    ('{"mcp": {/* c */}}\n', "mcp.x=1", '{"mcp": {/* c */ "x": 1}}\n'),
])
def test_jsonc_removing_or_rewriting_a_value_keeps_the_comments_in_it(text, edit, out):
    """A comment is the user's (taosync writes none): whatever taosync removes or writes
    anew, every comment in that text stays, on a line of its own where it was."""
    doc = JC.parse(text)
    if edit.startswith("-"):
        assert JC.delete(doc, tuple(edit[1:].split(".")))
    else:
        path, value = edit.split("=")
        JC.set(doc, tuple(path.split(".")), json.loads(value))
    assert JC.dump(doc) == out
    assert comments_in(out) == comments_in(text)
    JC.parse(out)  # still JSONC


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("editor", [E, JC], ids=["json", "jsonc"])
def test_named_elements_are_found_as_a_walk_finds_them(editor, seed):
    """A Match finds its element through the list's name index (each element decoded
    once, and again after an edit inside it): over runs of renames, duplicates, elements
    added and removed, keys set and deleted inside them, by two fields, every get and
    edit answers as on a fresh parse of the text."""
    import random

    rng = random.Random(seed)
    names = [f"m{i:02d}" for i in range(30)]
    elements = [{"name": n, "id": f"id-{n}", "provider": "p"} for n in names]
    elements[5:5] = [7, {"name": 3}, {"name": "m03", "dup": True}, ["m04"]]
    text = json.dumps({"models": elements, "other": {"name": "m01"}}, indent=2) + "\n"
    doc = editor.parse(text)
    for n in range(250):
        field = rng.choice(["name", "name", "id"])
        pick = rng.choice(names + ["new-" + str(rng.randint(0, 9))])
        value = pick if field == "name" else f"id-{pick}"
        at = ("models", Match(field, value))
        fresh = editor.parse(text)
        assert editor.get(doc, at) == editor.get(fresh, at), f"step {n}: get {at}"
        kind, path, new = rng.choice([
            ("set", at + ("provider",), rng.choice(["p", "q", {"x": 1}])),
            ("set", at + ("name",), rng.choice(names)),  # a rename, maybe to a taken name
            ("set", at + ("id",), f"id-{rng.choice(names)}"),
            ("set", at, {"name": pick, "fresh": n}),
            ("delete", at, None), ("delete", at + ("provider",), None),
            ("set", ("other", "name"), rng.choice(names)),
        ])
        if play_both(editor, doc, fresh, kind, path, new):
            text = editor.dump(fresh)
            assert editor.dump(doc) == text, f"step {n}: {kind} {path}"


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("text, edit, out", [
    # a kept // comment ends before its line break: no "\r" of its own (no "\r\r\n")
    ('{\n  "a": 1, // x\n  "b": 2\n}\n', "-a", '{\n  // x\n  "b": 2\n}\n'),
    ('{\n  "mcp": { // x\n  }\n}\n', "mcp.k=1", '{\n  "mcp": {\n    // x\n    "k": 1\n  }\n}\n'),
    ('{\n  "m": [ // x\n    1\n  ]\n}\n', "m=[2]", '{\n  // x\n  "m": [\n    2\n  ]\n}\n'),
    # a rewritten value's member not first on its line: a // comment never goes side by
    # side (it would swallow the rest of the line), a /* */ one may
    ('{"a": [1, // x\n 2]}\n', "a=[3]", '{\n// x\n"a": [\n 3\n]}\n'),
    ('{\n  /* k */ "a": [ // x\n    1\n  ]\n}\n', "a=2", '{\n  // x\n  /* k */ "a": 2\n}\n'),
    ('{\n  "x": 1, "a": [ // c\n    1\n  ]\n}\n', "a=2", '{\n  "x": 1,\n  // c\n  "a": 2\n}\n'),
    ('{"x": 1, "a": [1 /* c */]}\n', "a=2", '{"x": 1, /* c */ "a": 2}\n'),
    # the last member after a commented one: what follows it on its line stays on a line
    # of its own, never after the comment (a "}" there was commented out)
    ('{"a": 1, // x\n "b": 2}\n', "-b", '{"a": 1, // x\n }\n'),
    ('{\n  "a": {"k": 1}, // a\n  "b": {"k": 2} // b\n}\n', "-b",
     '{\n  "a": {"k": 1}, // a\n  // b\n}\n'),
    # ... and a comment inside it stays too
    ('{\n  "a": 1, // x\n  "b": [ // y\n    2\n  ]\n}\n', "-b", '{\n  "a": 1\n  // x\n  // y\n}\n'),
    # a /* */ comment after a comma is the line's only when nothing but it follows
    ('{\n  "a": 1, /* x */ "b": 2 /* y */\n}\n', "-b", '{\n  "a": 1 /* x */ /* y */\n}\n'),
    ('{\n  "c": {\n    "a": 1, /* c9 */ } /* c10 */\n}\n', 'c={"b": null}',
     '{\n  "c": {\n    "b": null, /* c9 */ } /* c10 */\n}\n'),
    # a comment before a removed key stays on its line, without the blanks after it
    ('{\n  /* k */ "a": 1, // x\n  "b": 2\n}\n', "-a", '{\n  /* k */\n  // x\n  "b": 2\n}\n'),
])
def test_jsonc_comments_kept_by_an_edit_break_no_line(text, edit, out, crlf):
    """A comment kept by a removal or a rewrite never swallows what follows it, nor
    gains a line break of its own: LF or CRLF, the text keeps the file's line breaks."""
    if crlf:
        text, out = text.replace("\n", "\r\n"), out.replace("\n", "\r\n")
    doc = JC.parse(text)
    path, _, value = edit.lstrip("-").partition("=")
    path = tuple(path.split("."))
    if edit.startswith("-"):
        assert JC.delete(doc, path)
        want = MISSING
    else:
        want = json.loads(value)
        JC.set(doc, path, want)
    assert JC.dump(doc) == out
    assert comments_in(out) == comments_in(text) and "\r\r" not in out
    assert JC.get(JC.parse(out), path) == want


def test_jsonc_an_edit_that_loses_its_alignment_is_a_format_error(monkeypatch):
    """Nothing but a FormatError escapes an edit, even a bug's: here the regex that
    took ``/* x */ } /* y */`` for one comment, so a member went in after the ``}``
    and the shadow no longer scanned."""
    import taosync.formats.jsonc as jsonc

    monkeypatch.setattr(jsonc, "_COMMENTED", re.compile(
        r"[ \t]*(,)[ \t]*(?://[^\r\n]*|/\*[^\r\n]*?\*/)[ \t]*"))
    doc = JC.parse('{\n  "c": {\n    "a": 1, /* x */ } /* y */\n}\n')
    with pytest.raises(FormatError, match="internal error"):
        JC.set(doc, ("c",), {"b": None})


def commented_text(rng, value: dict, newline: str) -> str:
    """``value`` as JSONC laid out at random: containers on one line or several, some
    members on a line after another (a key not first on its line), trailing commas, and
    numbered comments in every gap between tokens — ``/* */`` ones (some over two lines)
    and ``//`` ones, which end their line (a last member's too)."""
    count = 0

    def comment(p: float, indent: str) -> str:
        nonlocal count
        if rng.random() >= p:
            return rng.choice(["", " "])
        count += 1
        kind = rng.random()
        if kind < 0.4:
            return f" /* c{count} */ "
        if kind < 0.5:
            return f" /* c{count}{newline}   */ "
        return f" // c{count}{newline}{indent}"

    def render(v, indent: str) -> str:
        if not isinstance(v, (dict, list)):
            return json.dumps(v)
        opener, closer = "{}" if isinstance(v, dict) else "[]"
        items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
        inner, multiline = indent + "  ", rng.random() < 0.7
        out = opener
        for i, (key, x) in enumerate(items):
            if multiline and (i == 0 or rng.random() < 0.75):
                out += newline + inner
            out += comment(0.25, inner)
            if key is not None:
                out += json.dumps(key) + comment(0.1, inner) + ":" + comment(0.15, inner) + " "
            out += render(x, inner) + comment(0.15, inner)
            if i < len(items) - 1 or rng.random() < 0.3:  # a trailing comma, too
                out += "," + comment(0.35, inner)
        out += comment(0.3, indent)
        return out + (newline + indent if multiline else "") + closer

    return comment(0.3, "") + render(value, "") + newline


small_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(small_keys, inner, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=st.dictionaries(small_keys, small_values, max_size=4), ops=ops,
       layout=st.randoms(use_true_random=False), crlf=st.booleans())
def test_property_jsonc_edits_keep_every_comment_wherever_it_is(x, ops, layout, crlf):
    """Comments anywhere (between members, inside values, after a last member, before a
    key not first on its line), LF or CRLF: after every edit the text parses, holds the
    edit, has each comment of the input as often as before (taosync writes none and
    drops none: removed or rewritten text leaves its comments) and the file's line
    breaks only (no "\\r\\r", no lone "\\n" in a CRLF file)."""
    newline = "\r\n" if crlf else "\n"
    text = commented_text(layout, x, newline)
    comments = comments_in(text)
    doc = JC.parse(text)
    model = json.loads(blank(text))
    assert model == x
    for n, (kind, path, value) in enumerate(ops):
        if play(JC, doc, model, kind, path, value) is None:
            continue
        out = JC.dump(doc)
        again = JC.parse(out)
        assert JC.get(again, path) == (value if kind == "set" else MISSING), f"step {n}"
        assert json.loads(blank(out)) == model, f"step {n}"
        assert comments_in(out) == comments, f"step {n}: a comment lost or added"
        assert "\r\r" not in out and not (crlf and re.search(r"(?<!\r)\n", out)), f"step {n}"


@pytest.mark.parametrize("text, edit, out", [
    ('{\n\t"a": 1, // e\n\t"b" /* c */ : 2\n}', ("delete", ("b",)), '{\n\t"a": 1\n\t// e\n\t/* c */\n}'),
    ('{\n\t"a": 1,\n\t"b" /* c */ : 2\n}', ("delete", ("b",)), '{\n\t"a": 1\n\t/* c */\n}'),
    ('{\n\t"a": { /* c */\n\t}\n}', ("set", ("a", "k"), 1), '{\n\t"a": {\n\t\t/* c */\n\t\t"k": 1\n\t}\n}'),
])
def test_jsonc_comments_kept_in_a_tab_indented_file(text, edit, out):
    """The shadow of kept comments keeps the tabs around them, as the file's own shadow
    does (they were once blanked to spaces: the edit failed as 'lost its alignment')."""
    doc = JC.parse(text)
    getattr(JC, edit[0])(doc, *edit[1:])
    assert JC.dump(doc) == out
