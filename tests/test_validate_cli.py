"""`taosync validate` through the real CLI: every bad input of issue 2 is reported as
``FILE:LINE:COL: …`` with exit 2 and nothing written; the example is OK; global options
work before and after the command; the key is never printed; imports stay lazy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET
from taosync.cli import run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = EXAMPLE_FLEET
EXAMPLE_TEXT = EXAMPLE.read_text(encoding="utf-8")
KEY = "sk-test-SECRETKEY-0123456789abcdef"
TAOSYNC = Path(sys.executable).with_name("taosync")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """(home, fleet path): an empty home, a key in the environment, no config overrides."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TAOTOKEN_API_KEY", KEY)
    for var in ("TAOSYNC_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    return home, tmp_path / "fleet.yaml"


def cli(capsys, *argv: str):
    rc = run(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def edit(old: str, new: str) -> str:
    assert EXAMPLE_TEXT.count(old) == 1, old
    return EXAMPLE_TEXT.replace(old, new)


KEY_LINE = "key: ${env:TAOTOKEN_API_KEY}"

# id → (file content: str or bytes, "LINE:COL", a fragment of the message)
BAD_INPUT = {
    # the unclosed [ is on line 18, where it opens, not where ruamel gives up (issue 29)
    "yaml-syntax-error": (edit("  fast: gpt-4o-mini", "  fast: [gpt-4o-mini"), "18:9",
                          "the [ opened here is not closed; add ']' at the end of line 18"),
    "tab-indent": (edit("  fast: gpt-4o-mini", "\tfast: gpt-4o-mini"), "18:1",
                   "YAML indents with spaces"),
    "duplicate-keys": (edit("  deep: nvidia/deepseek-r1\n",
                            "  deep: nvidia/deepseek-r1\n  fast: intel/llama-7b\n"),
                       "21:3", "duplicate key 'fast' (first at line 18)"),
    "wrong-type": (edit("max_tokens: 16", "max_tokens: many"), "50:48",
                   "verify.max_tokens: expected an integer, got the string 'many'"),
    "wrong-type-list": (edit("profiles: [deep, batch]", "profiles: deep"), "28:34",
                        "clients.codex.profiles: expected a list"),
    "unknown-key": (edit("  base_url:", "  bse_url:"), "7:3",
                    "gateway.bse_url: unknown key 'bse_url'; did you mean 'base_url'?"),
    "unknown-top-level-key": (edit("default_route:", "default_rout:"), "22:1",
                              "did you mean 'default_route'?"),
    "empty-file": ("", "1:1", "the file is empty"),
    "comments-only": ("# nothing yet\n", "1:1", "the file is empty"),
    "top-level-list": ("- version: 1\n- gateway: {}\n", "1:1", "the top level is a list"),
    "top-level-scalar": ("just some text\n", "1:1", "the top level is a single value"),
    "version-missing": (edit("version: 1\n", ""), "5:1", "version is missing"),
    "version-unsupported": (edit("version: 1", "version: 2"), "4:10",
                            "unsupported version 2: this taosync reads version 1"),
    "route-unknown-model": (edit("fast: gpt-4o-mini", "fast: gpt-4o-mni"), "18:9",
                            "routes.fast: route 'fast' names 'gpt-4o-mni', which is not in "
                            "models; did you mean 'gpt-4o-mini'?"),
    "slot-unknown-route": (edit("haiku: fast", "haiku: fsat"), "27:41",
                           "clients.claude-code.haiku: 'fsat' is neither a route nor a "
                           "catalogue model; did you mean 'fast'?"),
    "slot-unknown-model": (edit("profiles: [deep, batch]", "profiles: [deep, intel/llama-8b]"),
                           "28:41", "clients.codex.profiles[1]: 'intel/llama-8b' is neither"),
    "unknown-client": (edit("  cline: {model", "  clin: {model"), "29:3",
                       "clients.clin: unknown client 'clin'; did you mean 'cline'?"),
    "default-route-unknown": (edit("default_route: balanced", "default_route: balancd"),
                              "22:16", "'balancd' is not a route; did you mean 'balanced'?"),
    "missing-key-file": (edit(KEY_LINE, "key: ${file:~/.config/taotoken/key}"), "8:8",
                         "cannot resolve ${file:~/.config/taotoken/key}: key file"),
    "failing-key-command": (edit(KEY_LINE, "key: ${cmd:false}"), "8:8",
                            "cannot resolve ${cmd:false}: key command exited 1"),
    "unknown-key-command": (edit(KEY_LINE, "key: ${cmd:no-such-program-xyz}"), "8:8",
                            "key command not found: no-such-program-xyz"),
    "non-http-base-url": (edit("  base_url: https://", "  base_url: ftp://"), "7:13",
                          "gateway.base_url: must be an http:// or https:// URL"),
    "base-url-no-scheme": (edit("  base_url: https://", "  base_url: "), "7:13",
                           "no scheme: add https://"),
    "not-utf8": (edit("Reply with OK.", "Reply with OK\u00e9.").encode("utf-8")
                 .replace(b"\xc3\xa9", b"\xe9"), "50:32", "not valid UTF-8 (byte 0xe9)"),
    "utf16": (EXAMPLE_TEXT.encode("utf-16"), "1:1", "UTF-16"),
    "mcp-unknown-reference": (edit("${routes.balanced}", "${routes.balancd}"), "48:23",
                              "unknown reference ${routes.balancd}; did you mean "
                              "${routes.balanced}?"),
    # a key that looks like neither kind's (`cmd:` now gets "did you mean 'command'")
    "mcp-neither-stdio-nor-http": (edit("    command: npx\n", "    program: npx\n"), "42:3",
                                   "needs 'command' (a stdio server) or 'url' (an http server)"),
    # did-you-mean in every mapping (issue 29), at the mistyped key's own line
    "mcp-command-typo": (edit("    command: npx\n", "    comand: npx\n"), "43:5",
                         "mcp_servers.taotoken-router.comand: unknown key 'comand'; did you "
                         "mean 'command'? (this entry needs 'command' (a stdio server) or "
                         "'url' (an http server))"),
    "mcp-url-typo": (edit("verify:", "  docs:\n    ulr: https://mcp.example/x\n\nverify:"),
                     "51:5", "mcp_servers.docs.ulr: unknown key 'ulr'; did you mean 'url'?"),
    "mcp-args-typo": (edit("    args: [", "    arg: ["), "44:5",
                      "mcp_servers.taotoken-router.arg: unknown key 'arg'; did you mean 'args'?"),
    "mcp-headers-typo": (edit("verify:", "  docs:\n    url: https://mcp.example/x\n"
                              "    header: {X-Team: a}\n\nverify:"), "52:5",
                         "mcp_servers.docs.header: unknown key 'header'; did you mean "
                         "'headers'?"),
    "client-option-typo": (edit("weak_model: fast", "weakmodel: fast"), "33:28",
                           "clients.aider.weakmodel: unknown key 'weakmodel'; did you mean "
                           "'weak_model'?"),
    "codex-provider-openai": (edit("profiles: [deep, batch]}",
                                   "profiles: [deep, batch], provider_id: openai}"),
                              "28:62", "Codex reserves it"),
    "control-character": (edit("Reply with OK.", "Reply \x01 OK."), "50:25",
                          "character 0x01 is not allowed"),
    # issue 29: parser errors in the user's words, on the line they got wrong
    "no-space-after-colon": (edit("  fast: gpt-4o-mini", "  fast:gpt-4o-mini"), "18:7",
                             "no space after ':' — YAML reads 'fast:gpt-4o-mini' as one word; "
                             "write fast: gpt-4o-mini"),
    "missing-colon-on-a-parent": (edit("gateway:\n", "gateway\n"), "6:8",
                                  "missing ':' after 'gateway'; write gateway:"),
    "value-with-colon": (edit("default_route: balanced", "default_route: balanced: x"), "22:24",
                         "the value of 'default_route' holds ': ', which YAML reads as another "
                         "key; quote the value: default_route: \"balanced: x\""),
    "bracket-closed-with-brace": (edit("profiles: [deep, batch]}", "profiles: [deep, batch}"),
                                  "28:46", "the [ opened at column 34 is closed with '}'; "
                                  "close it with ']'"),
    # did-you-mean knows other tools' words for a key, and a name the key begins
    "mcp-environment": (edit("    env:\n", "    environment:\n"), "45:5",
                        "mcp_servers.taotoken-router.environment: unknown key 'environment'; "
                        "did you mean 'env'?"),
    "mcp-only-client-option-typo": (edit("  kilo: {model: balanced, small_model: fast}",
                                         "  kilo: {model: balanced, small_model: fast}\n"
                                         "  claude-desktop: {mpc: false}"), "40:20",
                                    "clients.claude-desktop.mpc: unknown key 'mpc'; did you "
                                    "mean 'mcp'?"),
    "key-kind-in-capitals": (edit(KEY_LINE, "key: ${ENV:TAOTOKEN_API_KEY}"), "8:8",
                             "not a key reference taosync knows; did you mean "
                             "${env:TAOTOKEN_API_KEY}?"),
    "key-variable-near-a-set-one": (edit(KEY_LINE, "key: ${env:TAOTOKEN_API_KYE}"), "8:8",
                                    "TAOTOKEN_API_KYE is not set (did you mean "
                                    "TAOTOKEN_API_KEY, which is set?)"),
    "doubled-v1": (edit("  base_url: https://taotoken.net/api ",
                        "  base_url: https://taotoken.net/api/v1/v1 "), "7:13",
                   "doubles /v1; give the gateway root: base_url: https://taotoken.net/api"),
}


# a required key mistyped: one problem, the unknown key with "did you mean" — not also
# the entry "missing" the key the user did write (issue 29)
REQUIRED_TYPOS = {
    "gateway-base-url": (edit("  base_url: https://", "  base_ur: https://"), "7:3",
                         "gateway.base_ur: unknown key 'base_ur'; did you mean 'base_url'?"),
    "route-candidates": (edit("  deep: nvidia/deepseek-r1", "  deep: {candiates: [nvidia/deepseek-r1]}"),
                         "20:10", "routes.deep.candiates: unknown key 'candiates'; did you mean "
                         "'candidates'?"),
    "mcp-command": (edit("    command: npx\n", "    comand: npx\n"), "43:5",
                    "did you mean 'command'?"),
}


@pytest.mark.parametrize("case", list(REQUIRED_TYPOS))
def test_a_mistyped_required_key_is_one_problem_with_did_you_mean(case, sandbox, capsys):
    home, fleet = sandbox
    content, where, fragment = REQUIRED_TYPOS[case]
    write(fleet, content)
    rc, out, err = cli(capsys, "--home", str(home), "-c", str(fleet), "validate")
    assert rc == 2, err
    assert err.splitlines() == [f"{fleet}:{where}: {err.splitlines()[0].split(': ', 1)[1]}",
                                f"error: {fleet}: 1 problem"], err
    assert fragment in err, err
    assert "missing required" not in err and "needs" not in err.split("(this entry")[0]


def write(path: Path, content) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_located_exit_2_nothing_written(case, sandbox, capsys):
    home, fleet = sandbox
    content, where, fragment = BAD_INPUT[case]
    write(fleet, content)
    rc, out, err = cli(capsys, "--home", str(home), "-c", str(fleet), "validate")
    assert rc == 2, err
    assert out == ""
    assert f"{fleet}:{where}: " in err, err
    assert fragment in err, err
    assert "Traceback" not in err
    assert err.rstrip().splitlines()[-1].startswith("error: ")
    assert list(home.iterdir()) == []  # nothing written
    assert KEY not in err


def test_unset_env_var(sandbox, capsys, monkeypatch):
    home, fleet = sandbox
    write(fleet, EXAMPLE_TEXT)
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 2
    assert (f"{fleet}:8:8: gateway.key: cannot resolve ${{env:TAOTOKEN_API_KEY}}: "
            "environment variable TAOTOKEN_API_KEY is not set") in err
    assert list(home.iterdir()) == []


def test_hanging_key_command_times_out_naming_it(sandbox, capsys, monkeypatch):
    from taosync.fleet import secrets

    monkeypatch.setattr(secrets, "CMD_TIMEOUT", 0.5)
    home, fleet = sandbox
    write(fleet, edit(KEY_LINE, "key: ${cmd:sleep 30}"))
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 2
    assert f"{fleet}:8:8: gateway.key: cannot resolve ${{cmd:sleep 30}}" in err
    assert "did not finish within 0.5 s" in err
    assert list(home.iterdir()) == []


def test_ten_megabyte_file_is_refused_without_parsing(sandbox, capsys):
    home, fleet = sandbox
    fleet.write_bytes(b"# padding\n" * (1024 * 1024))
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 2
    assert f"{fleet}:1:1: the file is 10.5 MB; a fleet.yaml is at most 1 MB" in err
    assert list(home.iterdir()) == []


def test_missing_file_names_it_and_what_to_do(sandbox, capsys):
    home, fleet = sandbox
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 2
    assert f"{fleet}: no such file. Pass -c PATH or set $TAOSYNC_CONFIG" in err


def test_every_problem_in_one_run_sorted_by_line(sandbox, capsys):
    home, fleet = sandbox
    text = (EXAMPLE_TEXT.replace("version: 1", "version: 3")
            .replace("fast: gpt-4o-mini", "fast: gpt-4o-mni")
            .replace("haiku: fast", "haiku: fsat")
            .replace("  base_url:", "  bse_url:")
            .replace("max_tokens: 16", "max_tokens: -1"))
    write(fleet, text)
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln.startswith(str(fleet) + ":")]
    located = [tuple(int(x) for x in ln[len(str(fleet)) + 1:].split(":")[:2]) for ln in lines]
    assert located == sorted(located)
    # `bse_url:` is one problem at line 7 (did you mean 'base_url'?), no longer also
    # "gateway: missing required key 'base_url'" at line 6 (issue 29)
    assert [ln for ln, _ in located] == [4, 7, 18, 27, 50]
    assert "must be greater than 0, got -1" in err
    assert err.rstrip().endswith("5 problems")


def test_example_is_ok_one_line(sandbox, capsys):
    home, fleet = sandbox
    write(fleet, EXAMPLE_TEXT)
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 0
    assert out == f"OK: {fleet} — 4 models, 4 routes, 13 clients, 1 MCP server\n"
    assert err == ""
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("order", ["before", "after", "mixed", "json-before", "json-after"])
def test_global_options_before_or_after_the_command(order, sandbox, capsys):
    home, fleet = sandbox
    write(fleet, EXAMPLE_TEXT)
    h, c = str(home), str(fleet)
    argv = {
        "before": ["--home", h, "-c", c, "validate"],
        "after": ["validate", "--home", h, "-c", c],
        "mixed": ["--home", h, "validate", "-c", c],
        "json-before": ["--json", "-c", c, "validate", "--home", h],
        "json-after": ["validate", "-c", c, "--home", h, "--json"],
    }[order]
    rc, out, err = cli(capsys, *argv)
    assert rc == 0, err
    if order.startswith("json"):
        data = json.loads(out)
        assert data["ok"] is True and data["models"] == 4 and data["errors"] == 0
        assert data["key"] == {"reference": "${env:TAOTOKEN_API_KEY}", "resolved": True,
                               "redacted": "sk-…cdef"}
    else:
        assert out.startswith("OK: ")


def test_json_lists_problems_with_positions(sandbox, capsys):
    home, fleet = sandbox
    write(fleet, edit("haiku: fast", "haiku: fsat").replace(
        "  base_url: https://taotoken.net/api", "  base_url: https://taotoken.net/api/v1"))
    rc, out, err = cli(capsys, "validate", "--json", "--home", str(home), "-c", str(fleet))
    assert rc == 2
    data = json.loads(out)
    assert data["ok"] is False and data["file"] == str(fleet)
    assert data["errors"] == 1 and data["warnings"] == 1
    assert data["problems"] == [
        {"file": str(fleet), "line": 7, "column": 13, "path": "gateway.base_url",
         "message": data["problems"][0]["message"], "severity": "warning"},
        {"file": str(fleet), "line": 27, "column": 41, "path": "clients.claude-code.haiku",
         "message": "'fsat' is neither a route nor a catalogue model; did you mean 'fast'?",
         "severity": "error"},
    ]
    assert "normalised https://taotoken.net/api/v1 to https://taotoken.net/api" in \
        data["problems"][0]["message"]


def test_warning_goes_to_stderr_before_ok(sandbox, capsys):
    home, fleet = sandbox
    write(fleet, edit("  base_url: https://taotoken.net/api",
                      "  base_url: https://taotoken.net/api/v1/"))
    rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet))
    assert rc == 0
    assert out.startswith("OK: ")
    assert err.startswith(f"{fleet}:7:13: gateway.base_url: warning: normalised "
                          "https://taotoken.net/api/v1/ to https://taotoken.net/api")
    assert "adds /v1" in err


def test_literal_key_warns_and_is_never_printed(sandbox, capsys):
    home, fleet = sandbox
    literal = "sk-literal-abcdefghijklmnop1234"
    write(fleet, edit(KEY_LINE, f"key: {literal}"))
    for extra in ([], ["-v"], ["--json"]):
        rc, out, err = cli(capsys, "validate", "--home", str(home), "-c", str(fleet), *extra)
        assert rc == 0
        assert literal not in out + err
        assert "a literal key in fleet.yaml" in (err if extra != ["--json"] else out)


def test_verbose_shows_the_key_redacted_only(sandbox, capsys):
    home, fleet = sandbox
    write(fleet, EXAMPLE_TEXT)
    rc, out, err = cli(capsys, "validate", "-v", "--home", str(home), "-c", str(fleet))
    assert rc == 0
    assert "key: ${env:TAOTOKEN_API_KEY} → sk-…cdef" in out
    assert KEY not in out + err


def test_quiet_prints_nothing_on_success(sandbox, capsys):
    home, fleet = sandbox
    write(fleet, EXAMPLE_TEXT)
    assert cli(capsys, "-q", "validate", "--home", str(home), "-c", str(fleet)) == (0, "", "")


def test_no_key_skips_resolution_but_checks_the_rest(sandbox, capsys, monkeypatch):
    home, fleet = sandbox
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    write(fleet, EXAMPLE_TEXT)
    rc, out, err = cli(capsys, "validate", "--no-key", "--home", str(home), "-c", str(fleet))
    assert rc == 0 and out.startswith("OK: ")
    write(fleet, edit("haiku: fast", "haiku: fsat"))
    rc, out, err = cli(capsys, "validate", "--no-key", "--home", str(home), "-c", str(fleet))
    assert rc == 2 and "fsat" in err and "TAOTOKEN_API_KEY" not in err


def test_key_file_under_home(sandbox, capsys):
    home, fleet = sandbox
    (home / ".config" / "taotoken").mkdir(parents=True)
    (home / ".config" / "taotoken" / "key").write_text(KEY + "\n")
    write(fleet, edit(KEY_LINE, "key: ${file:~/.config/taotoken/key}"))
    rc, out, err = cli(capsys, "validate", "-v", "--home", str(home), "-c", str(fleet))
    assert rc == 0, err
    assert "sk-…cdef" in out and KEY not in out


def test_config_from_environment(sandbox, capsys, monkeypatch):
    home, fleet = sandbox
    write(fleet, EXAMPLE_TEXT)
    monkeypatch.setenv("TAOSYNC_CONFIG", str(fleet))
    rc, out, err = cli(capsys, "validate", "--home", str(home))
    assert rc == 0 and str(fleet) in out


def test_schema_command_prints_the_committed_schema(capsys):
    rc, out, err = cli(capsys, "schema")
    assert rc == 0
    assert out == (ROOT / "schemas" / "fleet.schema.json").read_text(encoding="utf-8")


# -- the installed console script, as a user runs it ----------------------------------


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TAOSYNC_CONFIG", "XDG_CONFIG_HOME", "NO_COLOR")}
    env["TAOTOKEN_API_KEY"] = KEY
    return env


def test_console_script_on_the_example(tmp_path):
    """The shipped example (not the suite's copy): its counts are read from it, so a
    client added to it changes nothing here."""
    from ruamel.yaml import YAML

    from conftest import SHIPPED_EXAMPLE

    data = YAML(typ="safe").load(SHIPPED_EXAMPLE.read_text())
    counts = ", ".join(f"{len(data[key])} {name}{'' if len(data[key]) == 1 else 's'}"
                       for key, name in (("models", "model"), ("routes", "route"),
                                         ("clients", "client"), ("mcp_servers", "MCP server")))
    proc = subprocess.run([str(TAOSYNC), "validate", "-c", str(SHIPPED_EXAMPLE), "--home",
                           str(tmp_path)], capture_output=True, text=True, env=_env(tmp_path),
                          timeout=120)
    assert proc.returncode == 0
    assert proc.stdout == f"OK: {SHIPPED_EXAMPLE} — {counts}\n"
    assert proc.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_console_script_bad_input_no_traceback(tmp_path):
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(edit("  fast: gpt-4o-mini", "\tfast: gpt-4o-mini"))
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run([str(TAOSYNC), "--home", str(home), "validate", "-c", "fleet.yaml"],
                          capture_output=True, text=True, env=_env(home), cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("fleet.yaml:18:1: ")  # the path as the user gave it
    assert "Traceback" not in proc.stderr
    assert list(home.iterdir()) == []


def test_validate_imports_neither_pydantic_nor_jsonschema(tmp_path):
    """Start-up: a valid fleet is checked without pydantic, jsonschema, httpx, tomlkit."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "taosync", "validate",
                           "-c", str(EXAMPLE), "--home", str(tmp_path)],
                          capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert proc.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0]
                for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "ruamel" in imported
    assert not imported & {"pydantic", "pydantic_core", "jsonschema", "httpx", "tomlkit",
                           "watchdog"}


def test_schema_command_imports_no_pydantic(tmp_path):
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "taosync", "schema"],
                          capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["title"] == "taosync fleet"
    assert "pydantic" not in proc.stderr and "jsonschema" not in proc.stderr


def test_command_list_matches_each_command():
    """`taosync --help` lists commands without importing them; the list must say what
    each command's own help says."""
    from taosync.cli import COMMANDS, HELP, main

    for name in COMMANDS:
        command = main.get_command(None, name)
        assert command is not None, name
        if name not in ("diff", "source-path"):
            assert HELP[name] == command.help.strip().splitlines()[0], name
