"""Property: whatever a person does to the example fleet — delete keys, change types, add
junk keys, swap values, truncate it, put tabs in it — taosync answers with exit 0 or 2,
never a traceback, and every problem has a line and column.

Also checks, on the same inputs, the two shortcuts validate takes for speed: the fast
schema check agrees with jsonschema, and whatever passes the schema passes pydantic.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_FLEET
from taosync.fleet import load as load_mod
from taosync.fleet import schema as schema_mod
from taosync.fleet.load import FleetInvalid, load_fleet

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_TEXT = EXAMPLE_FLEET.read_text(encoding="utf-8")
LINES = EXAMPLE_TEXT.splitlines(keepends=True)
KEY = "sk-test-SECRETKEY-0123456789abcdef"
ENV = {"TAOTOKEN_API_KEY": KEY, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
WORK = HOME = Path("/nonexistent")  # set per module run by the fixture below


@pytest.fixture(scope="module", autouse=True)
def _work_dir(tmp_path_factory):
    """One directory for every example (hypothesis shares no function-scoped fixture),
    under pytest's temporary root so it is cleaned up like the rest."""
    global WORK, HOME
    WORK = tmp_path_factory.mktemp("prop")
    HOME = WORK / "home"
    HOME.mkdir()
SCHEMA = schema_mod.load()

SETTINGS = settings(max_examples=120, deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# values a person (or a bad merge) might put anywhere
JUNK_VALUES = ["", "1", "-1", "0", "3.5", "1e999", ".nan", "true", "null", "~", "[]", "{}",
               "[a, b]", "{x: 1}", "'quoted'", '"dq"', "2024-01-01", "!!binary aGk=", "!tag x",
               "*nope", "&a x", "${env:NOPE}", "${routes.nope}", "${gateway.key}",
               "https://x.example/v1", "ftp://x", "openai", "auto", "[code, vscode]",
               "balanced", "fast", "gpt-4o-mini", "|\n  block", ">-", "@at", "`tick`", "- item",
               "? complex", ": colon", "#comment", "a: b: c", "{", "[", "]", "}", "'", '"',
               "\t", "\\", "%", "!!", "&", "*"]
JUNK_KEYS = ["junk", "version", "gateway", "models", "routes", "clients", "codex", "key",
             "base_url", "model", "enabled", "command", "url", "<<", "1", "true", "~", "-",
             "claude-code", "mcp_servers", "profiles", "roles", "chat", "a b", "ключ"]
text_junk = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]),
                    max_size=12)


@st.composite
def text_mutation(draw, text: str) -> str:
    lines = text.splitlines(keepends=True) or [""]
    op = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "tab", "junk_key",
                               "value", "char", "indent", "dedent"]))
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    line = lines[i]
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(j, line)
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "truncate":
        cut = draw(st.integers(0, len(text)))
        return text[:cut]
    elif op == "tab":
        k = draw(st.integers(0, len(line)))
        lines[i] = line[:k] + "\t" + line[k:]
    elif op == "junk_key":
        indent = " " * draw(st.sampled_from([0, 2, 4, 6, 1, 3]))
        key = draw(st.sampled_from(JUNK_KEYS) | text_junk)
        value = draw(st.sampled_from(JUNK_VALUES) | text_junk)
        lines.insert(i, f"{indent}{key}: {value}\n")
    elif op == "value":
        if ":" in line:
            head = line.split(":", 1)[0]
            value = draw(st.sampled_from(JUNK_VALUES) | text_junk)
            lines[i] = f"{head}: {value}\n"
    elif op == "char":
        if line:
            k = draw(st.integers(0, len(line) - 1))
            lines[i] = line[:k] + draw(st.characters(codec="utf-8",
                                                     exclude_categories=["Cs"])) + line[k + 1:]
    elif op == "indent":
        lines[i] = "  " + line
    elif op == "dedent":
        lines[i] = line[2:] if line.startswith("  ") else line
    return "".join(lines)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False,
                                                                    allow_infinity=False)
    | st.sampled_from(["", "fast", "balanced", "gpt-4o-mini", "auto", "inline", "reference",
                       "openai", "https://x.example", "${routes.fast}", "x"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(JUNK_KEYS), children, max_size=3),
    max_leaves=6)


@st.composite
def data_mutation(draw) -> str:
    """Mutate the example as data (delete a key, change a type, add a key, swap two
    values) and write it back as YAML."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    doc = yaml.load(EXAMPLE_TEXT)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        op = draw(st.sampled_from(["delete", "retype", "add", "swap"]))
        if op == "delete":
            del parent[last]
        elif op == "retype":
            parent[last] = draw(json_values)
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(JUNK_KEYS))] = draw(json_values)
        elif op == "swap":
            other = draw(st.sampled_from(paths))
            oparent = doc
            try:
                for part in other[:-1]:
                    oparent = oparent[part]
                parent[last], oparent[other[-1]] = oparent[other[-1]], parent[last]
            except (KeyError, IndexError, TypeError):
                pass
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


@st.composite
def mutated_fleet(draw) -> str:
    if draw(st.booleans()):
        return draw(data_mutation())
    text = EXAMPLE_TEXT
    for _ in range(draw(st.integers(1, 3))):
        text = draw(text_mutation(text))
    return text


def _write(text: str) -> Path:
    path = WORK / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _check_located(exc: FleetInvalid, path: Path) -> None:
    assert exc.problems, "FleetInvalid without a problem"
    for p in exc.all():
        assert p.line >= 1 and p.column >= 1, p
        assert p.format().startswith(f"{path}:{p.line}:{p.column}: "), p.format()
        assert p.message
        assert KEY not in p.format()


@SETTINGS
@given(mutated_fleet())
def test_cli_never_tracebacks_and_always_locates(text):
    from taosync.cli import run

    path = _write(text)
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, {"TAOTOKEN_API_KEY": KEY}), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run(["validate", "--json", "-c", str(path), "--home", str(HOME)])
    assert rc in (0, 2), err.getvalue()
    data = json.loads(out.getvalue())
    assert data["ok"] is (rc == 0)
    for p in data["problems"]:
        assert p["line"] >= 1 and p["column"] >= 1, p
    if rc == 2:
        assert any(p["severity"] == "error" for p in data["problems"])
    assert "Traceback" not in err.getvalue()
    assert KEY not in out.getvalue() + err.getvalue()
    assert list(HOME.iterdir()) == []


def _outcome(path: Path):
    try:
        loaded = load_fleet(path, home=HOME, environ=ENV, key_timeout=1)
    except FleetInvalid as exc:
        return "invalid", [p.format() for p in exc.problems]
    return "ok", loaded.data, [w.format() for w in loaded.warnings]


@SETTINGS
@given(mutated_fleet())
def test_safe_loader_shortcut_changes_no_outcome(text):
    """Reading with the safe loader first (no positions) gives exactly what reading
    with the round-trip loader gives: same data, same problems at the same places."""
    path = _write(text)
    shortcut = _outcome(path)
    real = load_mod.YamlSource.parse_safe
    try:
        def never(self, text):
            raise load_mod._NotFast
        load_mod.YamlSource.parse_safe = never
        assert _outcome(path) == shortcut
    finally:
        load_mod.YamlSource.parse_safe = real


@SETTINGS
@given(mutated_fleet())
def test_shortcuts_agree_with_the_full_checks(text):
    """fast_valid == jsonschema; schema-valid ⇒ pydantic-valid; model=True and
    model=False agree on every fleet; the view equals the pydantic model."""
    from jsonschema.validators import Draft202012Validator

    path = _write(text)
    findings = load_mod.Findings()
    source = load_mod.YamlSource(path, findings)
    try:
        source.read()
        data = source.parse(fast=False)
    except load_mod._Stop:
        data = None
    if data is not None and not findings.errors:
        try:
            fast = load_mod.fast_valid(SCHEMA, data)
        except load_mod.Unsupported:  # pragma: no cover - the schema uses none
            fast = None
        assert fast == Draft202012Validator(SCHEMA).is_valid(data), data

    try:
        quick = load_fleet(path, home=HOME, environ=ENV, model=False, key_timeout=1)
    except FleetInvalid as exc:
        _check_located(exc, path)
        quick = None
    try:
        full = load_fleet(path, home=HOME, environ=ENV, model=True, key_timeout=1)
    except FleetInvalid as exc:
        _check_located(exc, path)
        assert quick is None, [p.format() for p in exc.problems]
        full = None
    if quick is None:
        assert full is None
    else:
        assert full is not None and full.fleet is not None
        assert full.data == quick.data
        # schema-valid ⇒ pydantic-valid, and the run-time view reads it as pydantic does
        from taosync.schema_build import Fleet

        model = Fleet.model_validate(full.data)
        assert full.fleet.plain() == model.model_dump(by_alias=True)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
@example(b"=")  # a top-level tagged scalar ruamel gives no position
def test_arbitrary_bytes(raw):
    path = WORK / "fleet.yaml"
    path.write_bytes(raw)
    try:
        load_fleet(path, home=HOME, environ=ENV, key_timeout=1)
    except FleetInvalid as exc:
        _check_located(exc, path)
