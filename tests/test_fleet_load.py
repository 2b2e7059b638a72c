"""load_fleet: the API other commands build on — what a good file gives, how every kind
of problem is located and worded, secrets handling, and the small helpers."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET
from taosync.fleet import load as load_mod
from taosync.fleet.load import (FleetInvalid, Loaded, Problem, did_you_mean, fast_valid,
                                format_path, load_fleet)
from taosync.fleet.secrets import Reference, Secret

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = EXAMPLE_FLEET
EXAMPLE_TEXT = EXAMPLE.read_text(encoding="utf-8")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fleet"
KEY = "sk-test-SECRETKEY-0123456789abcdef"
ENV = {"TAOTOKEN_API_KEY": KEY}


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def write(tmp_path):
    def _write(text, name="fleet.yaml") -> Path:
        p = tmp_path / name
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
        return p
    return _write


def problems(path: Path, home: Path, environ=ENV, **kw) -> list[Problem]:
    with pytest.raises(FleetInvalid) as info:
        load_fleet(path, home=home, environ=environ, **kw)
    assert info.value.exit_code == 2
    return info.value.problems


def messages(path, home, **kw) -> list[str]:
    return [p.format() for p in problems(path, home, **kw)]


# -- a good file ---------------------------------------------------------------------


def test_example_loads_into_a_typed_fleet(home):
    from taosync.schema_build import Fleet
    from taosync.fleet.view import FleetView

    loaded = load_fleet(EXAMPLE, home=home, environ=ENV)
    assert isinstance(loaded, Loaded)
    assert loaded.path == EXAMPLE
    assert loaded.text == EXAMPLE_TEXT
    assert loaded.sha256 == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert isinstance(loaded.fleet, FleetView)  # the run-time view of the checked data
    assert loaded.fleet.plain() == Fleet.model_validate(loaded.data).model_dump(by_alias=True)
    assert loaded.fleet.model_for("deep") == "nvidia/deepseek-r1"
    assert loaded.fleet.openai_url == "https://taotoken.net/api/v1"
    assert isinstance(loaded.key, Secret) and loaded.key.reveal() == KEY
    assert loaded.key_ref == Reference("env", "TAOTOKEN_API_KEY")
    assert loaded.warnings == []
    assert loaded.data["clients"]["claude-code"]["opus"] == "deep"
    assert KEY not in repr(loaded)


def test_model_false_skips_pydantic_and_no_key_skips_resolution(home):
    loaded = load_fleet(EXAMPLE, home=home, environ={}, resolve_key=False, model=False)
    assert loaded.fleet is None and loaded.key is None
    assert loaded.key_ref == Reference("env", "TAOTOKEN_API_KEY")


def test_fixtures_that_must_load(home):
    minimal = load_fleet(FIXTURES / "minimal.yaml", home=home, environ=ENV)
    assert minimal.fleet.model_for(None) == "gpt-4o-mini"
    assert minimal.fleet.enabled_clients() == {}

    loaded = load_fleet(FIXTURES / "anchors.yaml", home=home, environ=ENV)
    fleet = loaded.fleet
    assert fleet.models["claude-sonnet-4-20250514"].context_window == 128000  # merged
    assert fleet.models["claude-sonnet-4-20250514"].backend == "cloud"
    assert fleet.clients.cline.model == "balanced" and fleet.clients.cline.secrets == "inline"
    assert set(fleet.enabled_clients()) == {"claude-code", "codex", "continue"}
    docs = fleet.mcp_servers_expanded(loaded.key)["docs"]
    assert docs.headers["Authorization"] == f"Bearer {KEY}"
    router = fleet.mcp_servers_expanded(loaded.key)["router"]
    assert router.env == {"ROUTER_URL": "https://gateway.example.com/llm/openai/v1",
                          "HOME_DIR": "${HOME}"}


def test_many_problems_fixture_every_marked_line_and_no_other(home):
    path = FIXTURES / "many-problems.yaml"
    expected = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if "# expect: " in line and not line.startswith("#"):
            expected[n] = line.split("# expect: ", 1)[1].strip()
    found = problems(path, home)
    by_line: dict[int, list[str]] = {}
    for p in found:
        by_line.setdefault(p.line, []).append(p.message)
    assert set(by_line) == set(expected), (by_line, expected)
    for line, fragment in expected.items():
        assert any(fragment in m for m in by_line[line]), (line, fragment, by_line[line])


def test_crlf_and_bom_are_fine(home, write):
    text = "version: 1\ngateway:\n  base_url: https://x.example\n  key: ${env:K}\nmodels:\n  m: {bad: 1}\n"
    path = write(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    (p,) = problems(path, home, environ={"K": "sk-aaaaaaaaaaaaaaaaaaaa"})
    assert (p.line, p.column, p.yaml_path) == (6, 7, "models.m.bad")


# -- base_url ------------------------------------------------------------------------


@pytest.mark.parametrize("given, root", [
    ("https://taotoken.net/api/v1", "https://taotoken.net/api"),
    ("https://taotoken.net/api/v1/", "https://taotoken.net/api"),
    ("https://taotoken.net/api/", "https://taotoken.net/api"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
])
def test_base_url_is_normalised_with_a_located_warning(given, root, home, write):
    path = write(EXAMPLE_TEXT.replace("  base_url: https://taotoken.net/api", "  base_url: " + given))
    loaded = load_fleet(path, home=home, environ=ENV)
    assert loaded.fleet.gateway.base_url == root
    assert loaded.data["gateway"]["base_url"] == root
    assert loaded.fleet.openai_url == root + "/v1"
    (w,) = loaded.warnings
    assert (w.line, w.column, w.severity, w.yaml_path) == (7, 13, "warning", "gateway.base_url")
    assert f"normalised {given} to {root}" in w.message
    assert w.format().startswith(f"{path}:7:13: gateway.base_url: warning: normalised")


def test_url_overrides_are_checked_but_kept_as_written(home, write):
    text = EXAMPLE_TEXT.replace(
        "  key: ${env:TAOTOKEN_API_KEY}",
        "  key: ${env:TAOTOKEN_API_KEY}\n  openai_base_url: https://x.example/v1/\n"
        "  anthropic_base_url: file:///etc/passwd")
    msgs = messages(write(text), home)
    assert msgs == [f"{write(text)}:10:23: gateway.anthropic_base_url: must be an http:// or "
                    "https:// URL, got 'file:///etc/passwd'"]
    loaded = load_fleet(write(text.replace("file:///etc/passwd", "https://a.example")),
                        home=home, environ=ENV)
    assert loaded.fleet.openai_url == "https://x.example/v1/"
    assert loaded.warnings == []


def test_credentials_in_a_url_are_not_echoed(home, write):
    path = write(EXAMPLE_TEXT.replace("  base_url: https://taotoken.net/api",
                                      "  base_url: ftp://user:hunter2@taotoken.net/api"))
    (msg,) = messages(path, home)
    assert "hunter2" not in msg and "ftp://…@taotoken.net/api" in msg


# -- YAML-level problems -------------------------------------------------------------


def test_all_duplicate_keys_in_one_run(home, write):
    text = EXAMPLE_TEXT.replace("  fast: gpt-4o-mini\n", "  fast: gpt-4o-mini\n  fast: x\n")
    text = text.replace("secrets: inline ", "secrets: inline\nsecrets: reference ")
    text = text.replace("{model: balanced, haiku: fast,", "{model: balanced, model: fast,")
    found = problems(write(text), home)
    assert [(p.line, p.column) for p in found] == [(19, 3), (26, 1), (29, 34)]
    assert [p.message.split(";")[0] for p in found] == [
        "duplicate key 'fast' (first at line 18)", "duplicate key 'secrets' (first at line 25)",
        "duplicate key 'model' (first at line 29)"]


def test_syntax_error_mentions_the_opening(home, write):
    (msg,) = messages(write("version: 1\nmodels: {a: [1, 2}\n"), home)
    assert re.search(r":2:18: the \[ opened at column 13 is closed with '}'; close it "
                     r"with '\]'", msg), msg


def test_unsupported_yaml_values_are_located_once(home, write):
    text = (EXAMPLE_TEXT.replace("timeout: 20", "timeout: .inf")
            .replace("max_tokens: 16", "max_tokens: !!binary aGk=")
            .replace("prompt: \"Reply with OK.\"", "prompt: !custom hi"))
    msgs = messages(write(text), home)
    assert len(msgs) == 3, msgs
    assert any("verify.timeout: inf is not a finite number" in m for m in msgs)
    assert any("verify.max_tokens: a !!binary value is not supported" in m for m in msgs)
    assert any("verify.prompt: the YAML tag !custom is not supported" in m for m in msgs)


def test_dates_are_taken_as_the_text_written(home, write):
    loaded = load_fleet(write(EXAMPLE_TEXT.replace('"Reply with OK."', "2024-01-02")),
                        home=home, environ=ENV)
    assert loaded.fleet.verify.prompt == "2024-01-02"


def test_merge_keys_read_in_the_round_trip_order(home, write):
    """The safe loader puts merged keys first, the round-trip one after the mapping's
    own: a fleet with ``<<`` is read the round-trip way (one order for every run)."""
    text = EXAMPLE_TEXT.replace("  taotoken-router:\n", "  taotoken-router: &router\n")
    text = text.replace("\nverify:", "  second:\n    <<: *router\n    cwd: /srv\n\nverify:")
    loaded = load_fleet(write(text), home=home, environ=ENV)
    assert list(loaded.data["mcp_servers"]["second"]) == ["cwd", "command", "args", "env"]


def test_timestamps_read_as_the_round_trip_loader_writes_them(home, write):
    loaded = load_fleet(write(EXAMPLE_TEXT.replace('"Reply with OK."', "2001-12-14t21:59:43.10-05:00")),
                        home=home, environ=ENV)
    assert loaded.fleet.verify.prompt == "2001-12-14T21:59:43.100000-05:00"


def test_non_string_keys(home, write):
    text = EXAMPLE_TEXT.replace("  gpt-4o-mini: {}", "  gpt-4o-mini: {}\n  3.5: {}")
    (msg,) = messages(write(text), home)
    assert ":13:3: models: the key 3.5 is not a string; quote it" in msg


def test_alias_bomb_stops(home, write):
    text = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    for i, name in enumerate("bcdef"):
        prev = "abcde"[i]
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]\n"
    (p,) = problems(write(text), home)
    assert (p.line, p.column) == (1, 1) and "more than 100000 values" in p.message


def test_directory_and_missing_file(home, tmp_path):
    (p,) = problems(tmp_path, home)
    assert p.line == 0 and p.format() == f"{tmp_path}: is a directory, not a fleet.yaml " \
        "file; pass -c PATH/fleet.yaml"
    (p,) = problems(tmp_path / "nope.yaml", home)
    assert p.format().startswith(f"{tmp_path / 'nope.yaml'}: no such file.")


# -- schema-level wording ------------------------------------------------------------


@pytest.mark.parametrize("old, new, where, message", [
    ("version: 1", "version: \"1\"", "4:10",
     "version: unsupported version '1': this taosync reads version 1"),
    ("cline: {model: balanced}", "cline: {model: balanced, editors: vscode}", "29:37",
     "clients.cline.editors: must be 'auto', got the string 'vscode'"),
    ("cline: {model: balanced}", "cline: {model: balanced, editors: [vscode]}", "29:38",
     "clients.cline.editors[0]: the string 'vscode' is not allowed here; did you mean "
     "'code'?"),
    ("cline: {model: balanced}", "cline: {model: balanced, editors: 3}", "29:37",
     "clients.cline.editors: expected a list or 'auto', got the number 3"),
    ("  gpt-4o-mini: {}", "  gpt-4o-mini:", "12:3",
     "models.gpt-4o-mini: expected a mapping, got nothing (an empty value); write {} "
     "for an empty mapping"),
    ("timeout: 20", "timeout: 1e3", "50:61", "verify.timeout: must be at most 600, got 1000.0"),
    ("    command: npx\n", "    command: ''\n", "43:14",
     "mcp_servers.taotoken-router.command: must not be empty"),
    ("    command: npx\n", "    command: npx\n    transport: sse\n", "44:5",
     "mcp_servers.taotoken-router.transport: unknown key 'transport'"),
    ("profiles: [deep, batch]}", "profiles: [deep, batch], provider_id: 'my provider'}",
     "28:62", "clients.codex.provider_id: may only hold letters, digits, _ and -"),
    ("  fast: gpt-4o-mini\n", "", "12:3",
     "clients.claude-code.haiku: 'fast' is neither"),
])
def test_schema_messages(old, new, where, message, home, write):
    assert EXAMPLE_TEXT.count(old) == 1
    path = write(EXAMPLE_TEXT.replace(old, new))
    msgs = messages(path, home)
    if old == "  fast: gpt-4o-mini\n":  # removing a route breaks every slot that used it
        assert any(message in m for m in msgs), msgs
        return
    assert f"{path}:{where}: {message}" in msgs[0], msgs


def test_nothing_is_a_wall_of_any_of(home, write):
    text = (EXAMPLE_TEXT.replace("    command: npx\n", "    url: 5\n")
            .replace("cline: {model: balanced}", "cline: {model: [balanced]}"))
    for msg in messages(write(text), home):
        assert "is not valid under any of the given schemas" not in msg


def test_empty_client_is_a_warning_not_an_error(home, write):
    loaded = load_fleet(write(EXAMPLE_TEXT.replace("  cline: {model: balanced}", "  cline:")),
                        home=home, environ=ENV)
    (w,) = loaded.warnings
    assert (w.line, w.column, w.yaml_path) == (29, 3, "clients.cline")
    assert "write `cline: {}`" in w.message
    assert "cline" not in loaded.fleet.enabled_clients()


def test_null_optional_values_are_fine(home, write):
    loaded = load_fleet(write(EXAMPLE_TEXT.replace("default_route: balanced", "default_route:")),
                        home=home, environ=ENV)
    assert loaded.fleet.default_route is None


# -- keys and secrets ----------------------------------------------------------------


def test_literal_key_is_a_warning_and_never_printed(home, write):
    literal = "sk-literal-0123456789abcdefXYZ"
    text = EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}  ", literal, 1)
    loaded = load_fleet(write(text), home=home, environ={})
    assert loaded.key.reveal() == literal and loaded.key_ref.kind == "literal"
    (w,) = loaded.warnings
    assert (w.line, w.column) == (8, 8) and "a literal key in fleet.yaml" in w.message
    assert literal not in w.format()
    # a message that would quote it is scrubbed
    bad = text.replace("fast: gpt-4o-mini", f"fast: {literal}")
    for p in problems(write(bad), home, environ={}):
        assert literal not in p.format()
    assert any("sk-…WXYZ"[:3] in p.message for p in problems(write(bad), home, environ={}))


def test_malformed_reference_is_an_error_not_a_literal(home, write):
    path = write(EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}  ", "${vault:prod/key}"))
    (msg,) = messages(path, home)
    assert ":8:8: gateway.key: not a key reference taosync knows" in msg


def test_file_reference_uses_the_given_home(home, write):
    (home / "k").write_text(KEY + "\n")
    path = write(EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}", "${file:~/k}"))
    assert load_fleet(path, home=home, environ={}).key.reveal() == KEY


def test_shell_and_cmd_references(home, write):
    path = write(EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}", "${cmd:echo sk-from-cmd-0123456789}"))
    assert load_fleet(path, home=home, environ={"PATH": "/usr/bin:/bin"}).key.reveal() == \
        "sk-from-cmd-0123456789"
    path = write(EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}",
                                      "${shell:echo sk-shell-$((40+2))-abcdefgh}"))
    assert load_fleet(path, home=home, environ={"PATH": "/usr/bin:/bin"}).key.reveal() == \
        "sk-shell-42-abcdefgh"


def test_failing_command_never_shows_its_output(home, write):
    path = write(EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}",
                                      "${shell:echo sk-leaked-0123456789; exit 3}"))
    (msg,) = messages(path, home, environ={"PATH": "/usr/bin:/bin"})
    assert "exited 3" in msg and "sk-leaked" not in msg.split("exited")[1]


def test_hanging_command_uses_key_timeout(home, write):
    path = write(EXAMPLE_TEXT.replace("${env:TAOTOKEN_API_KEY}", "${cmd:sleep 20}"))
    (msg,) = messages(path, home, environ={"PATH": "/usr/bin:/bin"}, key_timeout=0.3)
    assert "did not finish within 0.3 s: ${cmd:sleep 20}" in msg


def test_key_problems_come_with_the_other_problems(home, write):
    path = write(EXAMPLE_TEXT.replace("haiku: fast", "haiku: fsat"))
    found = problems(path, home, environ={})
    assert [(p.line, p.yaml_path) for p in found] == [(8, "gateway.key"),
                                                      (27, "clients.claude-code.haiku")]


# -- shapes and helpers --------------------------------------------------------------


def test_problem_format_and_json():
    p = Problem("fleet.yaml", 3, 5, "clients.codex.profiles[1]", "bad")
    assert p.format() == "fleet.yaml:3:5: clients.codex.profiles[1]: bad"
    assert Problem("f", 1, 1, "", "m", "warning").format() == "f:1:1: warning: m"
    assert Problem("f", 0, 0, "", "m").format() == "f: m"
    assert p.to_json() == {"file": "fleet.yaml", "line": 3, "column": 5,
                           "path": "clients.codex.profiles[1]", "message": "bad",
                           "severity": "error"}


def test_fleet_invalid_sorts_and_carries_details():
    a = Problem("f", 9, 1, "", "late")
    b = Problem("f", 2, 4, "", "early")
    w = Problem("f", 5, 1, "", "meh", "warning")
    exc = FleetInvalid("f", [a, b], [w])
    assert exc.problems == [b, a] and exc.warnings == [w]
    assert exc.all() == [b, w, a]
    assert exc.details == ["f:2:4: early", "f:5:1: warning: meh", "f:9:1: late"]
    assert exc.message == "f: 2 problems; nothing was written"


def test_format_path():
    assert format_path(()) == ""
    assert format_path(("clients", "codex", "profiles", 1)) == "clients.codex.profiles[1]"
    assert format_path(("models", "nvidia/deepseek-r1")) == "models.nvidia/deepseek-r1"
    assert format_path(("models", "gpt-4.1", "backend")) == 'models["gpt-4.1"].backend'


def test_did_you_mean():
    assert did_you_mean("Codex", ["codex", "cline"]) == "; did you mean 'codex'?"
    assert did_you_mean("claud-code", ["claude-code", "codex"]) == \
        "; did you mean 'claude-code'?"
    assert did_you_mean("zzz", ["codex"]) == ""
    assert did_you_mean(5, ["codex"]) == ""


def test_mirrors_of_the_model_stay_equal():
    from taosync import schema_build
    from taosync.fleet import model

    assert load_mod.SUPPORTED_VERSIONS == model.SUPPORTED_VERSIONS
    from taosync.fleet.logic import CLIENT_ATTRS

    names = {info.alias or name for name, info in schema_build.Clients.model_fields.items()}
    assert set(load_mod.KNOWN_CLIENTS) == names
    assert CLIENT_ATTRS == {info.alias or name: name
                            for name, info in schema_build.Clients.model_fields.items()}


def test_reference_names_are_what_the_model_resolves(home):
    loaded = load_fleet(EXAMPLE, home=home, environ=ENV)
    fleet = loaded.fleet
    known = load_mod.fleet_reference_names(fleet.models, fleet.routes)
    for name in known:
        fleet.reference_value(name, loaded.key)  # never raises
    for name in ("routes.nope", "models.nope", "gateway.nope"):
        assert name not in known
        with pytest.raises(KeyError):
            fleet.reference_value(name, loaded.key)


def test_fast_validator_refuses_keywords_it_does_not_know():
    with pytest.raises(load_mod.Unsupported):
        fast_valid({"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1})
    with pytest.raises(load_mod.Unsupported):
        fast_valid({"$ref": "https://example.com/x.json"}, {})
    assert fast_valid({"type": "integer"}, 3.0) is True
    assert fast_valid({"const": 1}, True) is False
    assert fast_valid({"enum": [[1, 2]]}, [1, 2]) is True
