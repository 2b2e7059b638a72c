"""Files taosync creates are built as plain data and written by the format's writer
(no tomlkit, no ruamel emitter): same promises as the editors, same text as the editor
would give."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_FLEET, TEST_KEY
from plain_model import play
from taosync.formats import toml_writer, yaml_writer
from taosync.formats.base import MISSING, FormatError, Match
from taosync.formats.registry import editor_for
from taosync.formats.new_file import NewFileEditor

TOML = editor_for("toml")
NEW = editor_for("toml", new=True)
YAML_EDITOR = editor_for("yaml")
NEW_YAML = editor_for("yaml", new=True)

MCP_VARIANTS = """
mcp_servers:
  local:
    command: my server
    args: ["--port", "8080", 'quote"d', "back\\\\slash"]
    env: {"A B": "1", LEVEL: "debug\\ttab"}
    cwd: /srv/mcp
  remote:
    url: https://mcp.example/mcp
    headers: {Authorization: "Bearer t", X-Trace: "on"}
  docs:
    url: https://mcp.example/sse
    transport: sse
"""


def fleet_variants(tmp_path: Path) -> dict[str, Path]:
    base = EXAMPLE_FLEET.read_text()
    head = base.split("\nmcp_servers:", 1)[0]
    tail = "\nverify:" + base.split("\nverify:", 1)[1]
    texts = {
        "example": base,
        "reference": base.replace("secrets: inline", "secrets: reference"),
        "mcp": head + MCP_VARIANTS + tail,
        "context": base.replace("gpt-4o-mini: {}", "gpt-4o-mini: {context_window: 128000}"),
        "no-mcp": head + tail,
    }
    out = {}
    for name, text in texts.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(text)
    return out


def apply(home: Path, fleet: Path) -> None:
    from taosync.cli import run

    assert run(["--home", str(home), "-c", str(fleet), "apply", "--no-verify", "-q"]) == 0


def toml_yaml_files(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): p.read_text() for p in sorted(home.rglob("*"))
            if p.suffix in (".toml", ".yaml") and ".local" not in p.parts}


def test_new_codex_and_continue_files_match_what_the_editor_writes(tmp_path, monkeypatch):
    """Each fleet applied into a home without Codex and Continue files (written from
    plain data) and into one where they exist but are empty (written by tomlkit and
    ruamel): same bytes."""
    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    for name, fleet in fleet_variants(tmp_path).items():
        fresh, empty = tmp_path / name / "fresh", tmp_path / name / "empty"
        apply(fresh, fleet)
        created = toml_yaml_files(fresh)
        assert any(rel.endswith(".yaml") for rel in created), name
        assert any(rel.endswith(".toml") for rel in created), name
        for rel in created:
            (empty / rel).parent.mkdir(parents=True, exist_ok=True)
            (empty / rel).write_text("")
        apply(empty, fleet)
        assert toml_yaml_files(empty) == created, name


def test_cold_plan_imports_neither_tomlkit_nor_the_yaml_editor(tmp_path):
    env = {**os.environ, "TAOTOKEN_API_KEY": TEST_KEY}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "taosync", "--home",
                           str(tmp_path), "-c", str(EXAMPLE_FLEET), "plan"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "config.toml" in proc.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "taosync.formats.yaml_writer" in imported
    assert not imported & {"tomlkit", "taosync.formats.toml", "taosync.formats.yaml"}


def test_writer_layout():
    text = toml_writer.write({
        "model": "m", "n": 3, "on": True, "x": 1.5,
        "model_providers": {"tao": {"name": "gw", "base_url": "https://h/v1"}},
        "mcp_servers": {"s": {"command": "npx", "args": ["-y", "@a/b"], "env": {"K": "v"}}},
        "inline": [{"a": 1}, []],
        "odd key": {"": "empty key"},
    })
    assert text == (
        'model = "m"\nn = 3\non = true\nx = 1.5\ninline = [{ a = 1 }, []]\n'
        '\n[model_providers.tao]\nname = "gw"\nbase_url = "https://h/v1"\n'
        '\n[mcp_servers.s]\ncommand = "npx"\nargs = ["-y", "@a/b"]\n'
        '\n[mcp_servers.s.env]\nK = "v"\n'
        '\n["odd key"]\n"" = "empty key"\n')


def test_writer_escapes_and_special_floats():
    text = toml_writer.write({"s": 'q"b\\t\tn\nc\x01d\x7fé', "f": [float("inf"), -float("inf"), 1e16]})
    assert text == 's = "q\\"b\\\\t\\tn\\nc\\u0001d\\u007fé"\nf = [inf, -inf, 1e+16]\n'
    assert tomllib.loads(text)["s"] == 'q"b\\t\tn\nc\x01d\x7fé'


def test_no_null_in_toml():
    doc = NEW.parse("")
    with pytest.raises(FormatError, match="TOML has no null"):
        NEW.set(doc, ("a", "b"), {"c": None})
    assert NEW.get(doc, ()) == {}


def test_new_file_editor_only_starts_files():
    with pytest.raises(ValueError):
        NEW.parse("a = 1\n")
    assert isinstance(NEW, NewFileEditor)


def test_match_segments():
    doc = NEW.parse("")
    assert NEW.set(doc, ("models", Match("name", "a"), "roles"), ["chat"]) == [
        ("models",), ("models", Match("name", "a"))]
    NEW.set(doc, ("models", Match("name", "b")), {"provider": "openai"})
    NEW.set(doc, ("models", Match("name", "a"), "apiBase"), "u")
    assert NEW.get(doc, ("models",)) == [
        {"name": "a", "roles": ["chat"], "apiBase": "u"}, {"name": "b", "provider": "openai"}]
    assert NEW.get(doc, ("models", Match("name", "c"))) is MISSING
    with pytest.raises(FormatError, match="is not a list"):
        NEW.set(doc, ("models", Match("name", "a"), "apiBase", Match("x", "y")), {})
    assert NEW.delete(doc, ("models", Match("name", "a")))
    assert not NEW.delete(doc, ("models", Match("name", "a")))
    assert NEW.get(doc, ("models",)) == [{"name": "b", "provider": "openai"}]


@pytest.mark.parametrize("paths", [
    # a list found by name is an array of tables, first in the file or after a key
    [("providers", Match("name", "gw"), "api_base"), ("models", Match("alias", "a"), "name"),
     ("models", Match("alias", "b"), "name"), ("top",)],
    [("top",), ("models", Match("alias", "a"), "env", "K"), ("models", Match("alias", "b"),
                                                            "name")],
    # under a table that exists already (how gptme's [mcp] is set: enabled first; the
    # other order gives the editor's text no blank line before [[mcp.servers]])
    [("mcp", "enabled"), ("mcp", "servers", Match("name", "s"), "args"),
     ("mcp", "servers", Match("name", "t"), "url")],
])
def test_named_lists_are_arrays_of_tables_as_the_editor_writes_them(paths):
    fresh, edited = NEW.parse(""), TOML.parse("")
    for n, path in enumerate(paths):
        value = ["x", str(n)] if path[-1] == "args" else f"v{n}"
        assert NEW.set(fresh, path, value) == TOML.set(edited, path, value)
    text = NEW.dump(fresh)
    assert text == TOML.dump(edited)
    assert "[[" in text and "= [{" not in text
    assert tomllib.loads(text) == NEW.get(fresh, ())


# -- properties ----------------------------------------------------------------------------

keys = st.sampled_from(["a", "b", "model", "x.y", "/p q", "k-1", ""])
scalars = st.one_of(st.booleans(), st.integers(-(10**12), 10**12), st.text(max_size=8),
                    st.floats(allow_nan=False))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
paths = st.lists(keys, min_size=1, max_size=3).map(tuple)
ops_strategy = st.lists(st.one_of(st.tuples(st.just("set"), paths, values),
                                  st.tuples(st.just("delete"), paths, st.none())), max_size=8)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops_strategy)
def test_property_keeps_the_editor_promises(ops):
    """Any sets and deletes: the same answers as the plain model every editor is held
    to, and text that TOML parsers and the round-trip editor read back as that model."""
    model: dict = {}
    doc = NEW.parse("")
    for kind, path, value in ops:
        created = play(NEW, doc, model, kind, path, value)
        if created is None:
            continue
        assert created[1] == created[0]
        assert NEW.get(doc, ()) == model
    text = NEW.dump(doc)
    assert tomllib.loads(text) == model
    assert TOML.get(TOML.parse(text), ()) == model


def set_once(new_editor, editor, ops):
    """Each path set once, none inside another (how a new file is planned), both through
    the new-file editor and through the round-trip editor, which must report the same
    created parents. Returns (the new file's document, the round-trip one)."""
    fresh, edited, done = new_editor.parse(""), editor.parse(""), []
    for path, value in ops:
        if any(path[:len(q)] == q or q[:len(path)] == path for q in done):
            continue
        done.append(path)
        try:
            created = editor.set(edited, path, value)
        except FormatError:
            continue
        assert new_editor.set(fresh, path, value) == created
    return fresh, edited


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(paths, values), max_size=6))
def test_property_same_text_as_the_editor_for_keys_set_once(ops):
    """How a new file is planned — each owned key set once — gives the text tomlkit
    would give. (On other sequences the editor adds blank lines or moves a table that
    replaced a value; the writer's text then differs but still holds the same data.)"""
    fresh, edited = set_once(NEW, TOML, ops)
    if NEW.get(fresh, ()):
        assert NEW.dump(fresh) == TOML.dump(edited)


# -- YAML -------------------------------------------------------------------------------


def editor_text(data: dict) -> str:
    """What the YAML editor writes for ``data`` set key by key on an empty document."""
    edited = YAML_EDITOR.parse("")
    for key, value in data.items():
        YAML_EDITOR.set(edited, (key,), value)
    return YAML_EDITOR.dump(edited)


def test_yaml_writer_layout_and_quoting():
    data = {
        "name": "Local Config", "version": "1.0.0", "n": 3, "on": True, "yes": "no",
        "models": [{"name": "m", "roles": ["chat", "edit"], "empty": {}, "none": []}],
        "args": ["-y", "@taotoken/mcp-router", "it's", "a: b", "1.0", "", "x #y", "tab\there"],
    }
    text = yaml_writer.write(data)
    assert text == (
        "name: Local Config\nversion: 1.0.0\nn: 3\non: true\nyes: 'no'\n"
        "models:\n  - name: m\n    roles:\n      - chat\n      - edit\n    empty: {}\n"
        "    none: []\n"
        "args:\n  - -y\n  - '@taotoken/mcp-router'\n  - it's\n  - 'a: b'\n  - '1.0'\n"
        "  - ''\n  - 'x #y'\n  - \"tab\\there\"\n")
    assert YAML(typ="safe", pure=True).load(text) == data
    assert editor_text(data) == text


@pytest.mark.parametrize("data", [
    {"f": 1.5}, {"z": None}, {"l": [[1]]}, {"l": [{}]}, {"a\nb": 1}, {"k" * 120: 1},
    {"s": "nel\x85"},
])
def test_yaml_writer_hands_what_it_does_not_know_to_the_editor(data):
    assert yaml_writer.write(data) is None
    doc = NEW_YAML.parse("")
    for key, value in data.items():
        NEW_YAML.set(doc, (key,), value)
    assert NEW_YAML.dump(doc) == editor_text(data)


yaml_keys = st.one_of(st.sampled_from(["a", "model", "x.y", "/p q", "", "yes", "1", "null",
                                       "- x", "#", "a: b"]), st.text(max_size=6))
yaml_scalars = st.one_of(
    st.booleans(), st.integers(-(10**9), 10**9), st.text(max_size=12),
    st.sampled_from(["yes", "no", "1.0", "a: b", "it's", "x #y", "@a/b", "-y", "~", "-",
                     "2001-01-01", " s", "s ", "a\nb", "a\tb", "é", "---", "?x", ":x"]))
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(yaml_keys, inner, max_size=3)),
    max_leaves=8,
)
yaml_paths = st.lists(yaml_keys, min_size=1, max_size=3).map(tuple)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(yaml_paths, yaml_values), max_size=6))
def test_property_yaml_same_text_as_the_editor_for_keys_set_once(ops):
    """Strings of every kind (quotes, indicators, numbers, control characters, YAML 1.1
    booleans): the writer styles them as ruamel does, and the text reads back as the data."""
    fresh, edited = set_once(NEW_YAML, YAML_EDITOR, ops)
    data = NEW_YAML.get(fresh, ())
    if data:
        text = NEW_YAML.dump(fresh)
        assert text == YAML_EDITOR.dump(edited)
        if yaml_writer.write(data) is not None:  # (else it is the editor's text, above)
            assert YAML(typ="safe", pure=True).load(text) == data


def test_match_lookups_by_name_act_as_a_walk_of_the_list():
    """The new-file editor finds list elements by name through an index; a sequence of
    Match edits (adds, renames into duplicates, element and field deletes, a whole list
    replaced) on a 500-element list acts exactly as on a fresh document, whose index is
    built from a walk of the list, after every step."""
    import copy
    import random

    rng = random.Random(16)
    editor = NewFileEditor("yaml", yaml_writer)
    doc = editor.parse("")
    for i in range(500):
        editor.set(doc, ("mcpServers", Match("name", f"s{i}"), "command"), "npx")
    names = [f"s{i}" for i in range(520)]  # some never added, some renamed into others
    for step in range(800):
        name = rng.choice(names)
        element = ("mcpServers", Match("name", name))
        kind, path, value = rng.choice([
            ("set", element + ("command",), f"c{step}"),
            ("set", element, {"url": f"https://{step}.example/mcp"}),
            ("set", element, {"name": rng.choice(names), "url": "u"}),
            ("set", element + ("name",), rng.choice(names)),
            ("delete", element, None),
            ("delete", element + ("name",), None),
            ("get", element, None),
            ("set", element + ("id",), rng.choice(names)),
            ("get", ("mcpServers", Match("id", name)), None),
        ] + ([("set", ("mcpServers",), [{"name": "s1"}, {"name": "s2"}])] if step == 400 else []))
        fresh = editor.parse("")
        fresh.data = copy.deepcopy(doc.data)
        if kind == "set":
            assert editor.set(doc, path, value) == editor.set(fresh, path, value)
        elif kind == "delete":
            assert editor.delete(doc, path) == editor.delete(fresh, path)
        assert doc.data == fresh.data, f"step {step}: {kind} {path} {value}"
        for field in ("name", "id"):  # two fields looked at in one list
            found = next((el for el in doc.data["mcpServers"] if el.get(field) == name), MISSING)
            assert editor.get(doc, ("mcpServers", Match(field, name))) == found


# -- JSON (and JSONC) ----------------------------------------------------------------------

JSON_EDITOR = editor_for("json")
NEW_JSON = editor_for("json", new=True)
json_values = st.recursive(
    st.one_of(st.none(), scalars, st.sampled_from(["é", "a\nb", "\x7f", '"q"', "\\"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
json_paths = st.lists(st.one_of(keys, st.builds(Match, st.sampled_from(["name", "id"]),
                                                st.sampled_from(["a", "b"]))),
                      min_size=1, max_size=3).map(tuple)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(st.tuples(st.just("set"), json_paths, json_values),
                              st.tuples(st.just("delete"), json_paths, st.none())), max_size=10),
       fmt=st.sampled_from(["json", "jsonc"]))
def test_property_json_writer_gives_the_editors_text(ops, fmt):
    """A new JSON or JSONC file is built as plain data and written once (the editor's
    splices copy the whole text per key: quadratic in opencode's model list). Any sets
    and deletes — not only each key once — give the bytes the editor gives, and both
    refuse the same sets."""
    new, editor = editor_for(fmt, new=True), editor_for(fmt)
    fresh, edited = new.parse(""), editor.parse("")
    for kind, path, value in ops:
        if kind == "delete":
            assert new.delete(fresh, path) == editor.delete(edited, path)
            continue
        try:
            created = editor.set(edited, path, value)
        except (FormatError, ValueError, TypeError) as refused:  # inf/nan: ValueError
            with pytest.raises(type(refused)):
                new.set(fresh, path, value)
            continue
        assert new.set(fresh, path, value) == created
        assert new.get(fresh, ()) == editor.get(edited, ())
    if new.get(fresh, ()):
        assert new.dump(fresh) == editor.dump(edited)


def test_json_writer_refuses_as_the_editor_does():
    for path, value, error in [((Match("name", "a"),), {"x": 1}, FormatError),
                               (("a",), float("nan"), ValueError),
                               (("a",), {1, 2}, TypeError)]:
        with pytest.raises(error) as expected:
            JSON_EDITOR.set(JSON_EDITOR.parse(""), path, value)
        with pytest.raises(error) as got:
            NEW_JSON.set(NEW_JSON.parse(""), path, value)
        assert str(got.value) == str(expected.value)
    assert NEW_JSON.dump(NEW_JSON.parse("")) == JSON_EDITOR.dump(JSON_EDITOR.parse("")) == ""


_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                       st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))
_JSON_VALUE = st.recursive(_JSON_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3), st.booleans()), inner,
                    max_size=3)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _JSON_VALUE, min_size=1, max_size=4))
def test_json_writer_text_is_json_dumps(data):
    """json_writer spells the document itself (strings by json's C function) instead of
    json's indented encoder, which runs in Python: the same text, or json's own error."""
    import json

    from taosync.formats import json_writer

    try:
        expected = json.dumps(data, indent="  ", ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)):
            json_writer.write(data)
        return
    assert json_writer.write(data) == expected
