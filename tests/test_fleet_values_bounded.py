"""Values fleet.yaml may hold are values every client file can hold (issue #23): an
integer past 2^53−1 (a 401-digit ``context_window`` was written into Codex's TOML, which
then refused it), a context window past 100 M tokens, and control characters — NUL,
CR/LF, ESC, bidi overrides — in model ids, route names, MCP servers and other values
(written into files as is) are refused at validate time with file:line:col, exit 2,
nothing written, no traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY, snapshot

EXAMPLE = EXAMPLE_FLEET.read_text()
HUGE = "9" * 401


def edited(old: str, new: str) -> str:
    assert old in EXAMPLE, old
    return EXAMPLE.replace(old, new, 1)


#: name → (fleet text, the line:col the error must name, words the message must hold)
CASES = {
    "401-digit context_window": (
        edited("  gpt-4o-mini: {}", f"  gpt-4o-mini: {{context_window: {HUGE}}}"),
        "12:33", "this integer (401 digits) is larger than a client file can hold"),
    "negative 401-digit integer": (
        edited("  gpt-4o-mini: {}", f"  gpt-4o-mini: {{retries: -{HUGE}}}"),
        "12:26", "401 digits"),
    "integer Python will not read": (
        edited("  gpt-4o-mini: {}", f"  gpt-4o-mini: {{context_window: {'9' * 5000}}}"),
        "12:33", "this integer (5000 digits)"),
    "context_window past 100 M tokens": (
        edited("  gpt-4o-mini: {}", "  gpt-4o-mini: {context_window: 150000000}"),
        "12:33", "must be at most 100000000"),
    "NUL in a model id": (
        edited("  gpt-4o-mini: {}", '  "gpt-4o-mini\\0": {}'),
        "12:3", "the key holds NUL at character 12"),
    "CR/LF in a model id a route names": (
        edited("  fast: gpt-4o-mini", '  fast: "gpt-4o-mini\\r\\nX-Injected: 1"'),
        "18:9", "the value holds a carriage return (CR) at character 12"),
    "bidi override in a route name": (
        edited("  batch: intel/llama-7b", '  "ba\\u202Etch": intel/llama-7b'),
        "21:3", "U+202E (RIGHT-TO-LEFT OVERRIDE"),
    "ESC in an MCP server name": (
        edited("  taotoken-router:", '  "router\\e]52;c;eA==\\a":'),
        "42:3", "the key holds ESC at character 7"),
    "NUL in an MCP command": (
        edited("    command: npx", '    command: "npx\\0"'),
        "43:14", "the value holds NUL"),
    "LF in an MCP argument": (
        edited('args: [-y, "@taotoken/mcp-router"]', 'args: [-y, "@taotoken/mcp-router\\n--evil"]'),
        "44:16", "a line feed (LF)"),
    "tab in an MCP command": (
        edited("    command: npx", '    command: "npx\\t-y"'),
        "43:14", "a tab"),
    "C1 control in a client slot": (
        edited("  llm: {model: fast}", '  llm: {model: "fast\\x9b"}'),
        "34:16", "the control character U+009B"),
    "tab in a backend label": (
        edited("{backend: cuda}", '{backend: "cu\\tda"}'),
        "14:33", "a tab"),
}


def _run(home: Path, fleet: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


@pytest.mark.parametrize("name", list(CASES))
def test_refused_with_a_located_error_and_nothing_written(taosync, home, tmp_path, name):
    text, where, words = CASES[name]
    fleet = tmp_path / "bad.yaml"
    fleet.write_text(text)
    before = snapshot(home)
    r = taosync("validate", config=fleet)
    assert r.rc == 2, r.both
    assert f"{fleet}:{where}: " in r.err, r.err
    assert words in r.err
    assert "Traceback" not in r.both
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", r.both)
    r = taosync("apply", config=fleet)
    assert r.rc == 2 and f"{fleet}:{where}: " in r.err, r.both
    assert snapshot(home) == before


def test_apply_in_a_real_process_writes_nothing(home, tmp_path):
    """The real CLI (no fast path can write a file past a refused value either)."""
    import os

    env = {**os.environ, "TAOTOKEN_API_KEY": TEST_KEY}
    good = tmp_path / "good.yaml"
    good.write_text(EXAMPLE)
    assert subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(good), "apply", "--no-verify"], capture_output=True,
                          env=env, cwd=ROOT, timeout=120).returncode == 0
    before = snapshot(home)
    for name in ("401-digit context_window", "NUL in a model id",
                 "CR/LF in a model id a route names"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(CASES[name][0])
        proc = _run(home, bad, "apply", "--no-verify")
        assert proc.returncode == 2, proc.stderr
        assert f"{bad}:{CASES[name][1]}: " in proc.stderr
        assert snapshot(home) == before
        assert "model_context_window = 9999" not in (home / ".codex" / "config.toml").read_text()


def test_json_validate_locates_the_value(taosync, tmp_path):
    import json

    fleet = tmp_path / "bad.yaml"
    fleet.write_text(CASES["401-digit context_window"][0])
    r = taosync("validate", "--json", config=fleet)
    assert r.rc == 2
    problem = json.loads(r.out)["problems"][0]
    assert (problem["line"], problem["column"]) == (12, 33)
    assert problem["path"] == "models.gpt-4o-mini.context_window"


def test_the_largest_integers_clients_hold_still_pass_where_the_field_allows(taosync,
                                                                            tmp_path):
    fleet = tmp_path / "ok.yaml"
    fleet.write_text(edited("  gpt-4o-mini: {}", "  gpt-4o-mini: {context_window: 100000000}"))
    assert taosync("validate", config=fleet).rc == 0


def test_a_prompt_may_span_lines(taosync, tmp_path):
    """verify.prompt is free text sent inside JSON: its newline and tab are its own."""
    fleet = tmp_path / "ok.yaml"
    fleet.write_text(edited('prompt: "Reply with OK."', 'prompt: "Reply\\twith\\nOK."'))
    r = taosync("validate", config=fleet)
    assert r.rc == 0, r.both


def test_a_tab_may_stand_in_an_mcp_servers_arguments_and_environment(taosync, tmp_path):
    """A program's argument or environment value may hold a tab (written escaped into
    every client format); never a newline."""
    fleet = tmp_path / "ok.yaml"
    fleet.write_text(edited('args: [-y, "@taotoken/mcp-router"]',
                            'args: [-y, "@taotoken/mcp-router", "a\\tb"]')
                     .replace("TAOTOKEN_MODEL: ${routes.balanced}",
                              'TAOTOKEN_MODEL: ${routes.balanced}\n      SEP: "\\t"'))
    r = taosync("validate", config=fleet)
    assert r.rc == 0, r.both


def test_a_float_context_window_is_written_as_an_integer(taosync, home, tmp_path):
    """``2.0e5`` is an integer to the schema; Codex's TOML gets 200000, not 200000.0
    (a float Codex refuses for model_context_window)."""
    fleet = tmp_path / "f.yaml"
    fleet.write_text(edited("  gpt-4o-mini: {}", "  gpt-4o-mini: {context_window: 2.0e5}"))
    r = taosync("apply", "--no-verify", "--only", "codex", config=fleet)
    assert r.rc == 0, r.both
    toml = (home / ".codex" / "config.toml").read_text()
    assert "model_context_window = 200000\n" in toml, toml


def test_an_included_base_fleet_is_located_in_its_own_file(taosync, tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(f"models:\n  gpt-4o-mini: {{context_window: {HUGE}}}\n")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(EXAMPLE.replace("version: 1\n", "version: 1\ninclude: [base.yaml]\n", 1))
    r = taosync("validate", config=fleet)
    assert r.rc == 2 and f"{base}:2:33: " in r.err, r.err
