"""Exit codes stay honest (issue 22, build items 4 and 7; "Crashes that read as answers",
"Small lies"): a crash is exit 70 with one line, never 1 ("changes pending" to
``plan --check``) nor a traceback, and a crash of the no-op fast path hands over to the
full path; ``--no-key`` and ``doctor`` treat an MCP secret as they treat the key; a
shell-style variable (``$NAME``, ``${NAME}``, ``{env:NAME}``) as the key or an MCP secret
is a located error, not a literal key in every client.

Every run here is a real ``python -m taosync`` process (the fast path runs only there),
in a temporary ``--home``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY, snapshot

TOKEN = "ghp_MCPsecretTOKEN0123456789abcdefXYZ"

FLEET = """\
version: 1
gateway:
  base_url: http://127.0.0.1:9/api
  key: KEY
models:
  m1: {}
routes:
  fast: m1
default_route: fast
clients:
  claude-code: {}
  codex: {}
mcp_servers:
  github:
    command: npx
    args: [-y, "--token-file=$HOME/x"]
    env:
      GITHUB_TOKEN: ${env:GITHUB_TOKEN}
      HOME_DIR: ${HOME}
  remote:
    url: https://mcp.example/mcp
    headers:
      Authorization: Bearer ${env:GITHUB_TOKEN}
"""
#: line:column of mcp_servers.github.env.GITHUB_TOKEN's value, and of the header's
GITHUB_AT, HEADER_AT = "18:21", "23:22"


def taosync(home: Path, fleet: Path, *args: str, env: dict | None = None,
            script: str | None = None) -> subprocess.CompletedProcess:
    """``python -m taosync --home HOME -c FLEET ARGS`` (or ``script``, run as the entry
    point with those arguments) from this checkout, in ``env``."""
    argv = ["--home", str(home), "-c", str(fleet), *args]
    cmd = [sys.executable, "-c", script, *argv] if script else \
        [sys.executable, "-m", "taosync", *argv]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def env(home):
    """The environment a run gets: the key and the MCP token set (a test unsets them)."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    out.update(TAOTOKEN_API_KEY=TEST_KEY, GITHUB_TOKEN=TOKEN, NO_COLOR="1")
    return out


@pytest.fixture
def fleet(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET.replace("KEY", "${env:TAOTOKEN_API_KEY}"))
    return path


def no_secret(*texts: str) -> None:
    for text in texts:
        assert TEST_KEY not in text and TOKEN not in text, text


def no_crash(r: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    no_secret(r.stdout, r.stderr)


# ------------------------------------------------------- --no-key with MCP secrets

@pytest.mark.parametrize("args", [("plan", "--check", "--no-key"), ("status", "--no-key"),
                                  ("apply", "--dry-run", "--no-key")], ids=" ".join)
def test_no_key_judges_mcp_secrets_by_the_state_without_resolving_them(home, fleet, env,
                                                                        args):
    """CI without secrets: neither the key nor the MCP token is set. The files hold what
    taosync wrote, so the answer is "in sync" — not a traceback read as "pending"."""
    assert taosync(home, fleet, "apply", "--no-verify", env=env).returncode == 0
    ci = {k: v for k, v in env.items() if k not in ("TAOTOKEN_API_KEY", "GITHUB_TOKEN")}
    before = snapshot(home)
    r = taosync(home, fleet, *args, env=ci)
    no_crash(r)
    assert r.returncode == 0, r.stderr
    assert "(sensitive, unchanged): 6 key-bearing values in 4 files" in r.stdout, r.stdout
    listed = taosync(home, fleet, *args, "-v", env=ci).stdout  # -v names each value
    assert "mcpServers.github: (sensitive, unchanged)" in listed, listed
    assert snapshot(home) == before


def test_no_key_shows_an_edited_mcp_secret_as_differs_and_check_fails(home, fleet, env):
    assert taosync(home, fleet, "apply", "--no-verify", env=env).returncode == 0
    claude = home / ".claude.json"
    claude.write_text(claude.read_text().replace(TOKEN, "ghp_handEDITEDtoken0123456789abcd"))
    ci = {k: v for k, v in env.items() if k != "GITHUB_TOKEN"}
    before = snapshot(home)
    r = taosync(home, fleet, "plan", "--check", "--no-key", env=ci)
    no_crash(r)
    assert r.returncode == 1 and "(sensitive, differs)" in r.stdout, r.stdout + r.stderr
    assert "ghp_handEDITED" not in r.stdout + r.stderr
    s = taosync(home, fleet, "status", "--no-key", "--json", env=ci)
    no_crash(s)
    data = json.loads(s.stdout)
    assert s.returncode == 1 and data["exit_code"] == 1
    assert data["sensitive"][str(claude)]["mcpServers.github"] == "(sensitive, differs)"
    assert snapshot(home) == before


def test_no_key_on_a_home_never_applied_plans_every_file(home, fleet, env):
    ci = {k: v for k, v in env.items() if k not in ("TAOTOKEN_API_KEY", "GITHUB_TOKEN")}
    r = taosync(home, fleet, "plan", "--check", "--no-key", env=ci)
    no_crash(r)
    assert r.returncode == 1 and "files to change" in r.stdout, r.stderr
    assert not any(home.iterdir())


# ------------------------------------------------------------------ doctor

def test_doctor_reports_an_unset_mcp_secret_at_its_line(home, fleet, env):
    del env["GITHUB_TOKEN"]
    r = taosync(home, fleet, "doctor", env=env)
    no_crash(r)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    github = next(line for line in lines if "mcp_servers.github.env.GITHUB_TOKEN" in line)
    assert github.startswith("error") and f"{fleet}:{GITHUB_AT}: cannot resolve " \
        "${env:GITHUB_TOKEN}: environment variable GITHUB_TOKEN is not set" in github
    header = next(line for line in lines if "mcp_servers.remote.headers.Authorization" in line)
    assert f"{fleet}:{HEADER_AT}:" in header
    key = next(line for line in lines if " gateway.key " in line)
    assert key.startswith("ok"), key  # the key itself still resolves, and says so
    assert "never applied here" in r.stdout  # the other sections still ran
    js = taosync(home, fleet, "doctor", "--json", env=env)
    no_crash(js)
    checks = {c["name"]: c for c in json.loads(js.stdout)["checks"]}
    assert js.returncode == 1
    assert checks["mcp_servers.github.env.GITHUB_TOKEN"]["status"] == "fail"
    assert checks["gateway.key"]["status"] == "ok"


def test_doctor_with_neither_secret_reports_both_and_checks_the_files(home, fleet, env):
    assert taosync(home, fleet, "apply", "--no-verify", env=env).returncode == 0
    ci = {k: v for k, v in env.items() if k not in ("TAOTOKEN_API_KEY", "GITHUB_TOKEN")}
    r = taosync(home, fleet, "doctor", env=ci)
    no_crash(r)
    assert r.returncode == 1
    assert f"{fleet}:4:8: cannot resolve ${{env:TAOTOKEN_API_KEY}}" in r.stdout
    assert f"{fleet}:{GITHUB_AT}: cannot resolve ${{env:GITHUB_TOKEN}}" in r.stdout
    assert "~/.claude.json" in r.stdout and "parses, 0600" in r.stdout


# ----------------------------------------------------------- internal error: 70

#: run taosync as its entry point with one internal function made to raise: a bug whose
#: message holds the key and an MCP secret
CRASH = """\
import os, sys
import taosync.pipeline
def broken(*args, **kwargs):
    raise {error}("broken: " + os.environ["TAOTOKEN_API_KEY"] + " " + os.environ["GITHUB_TOKEN"])
taosync.pipeline.make_plan = broken
from taosync.__main__ import main
main()
"""
MESSAGE = ("taosync: internal error: RuntimeError: please report it (run again with -v "
           "for the traceback)")


def test_an_internal_error_exits_70_with_one_line(home, fleet, env):
    r = taosync(home, fleet, "plan", "--check", env=env, script=CRASH.format(error="RuntimeError"))
    no_crash(r)
    assert r.returncode == 70
    assert r.stderr.strip() == MESSAGE and r.stdout == ""


def test_an_internal_error_shows_its_traceback_with_v_redacted(home, fleet, env):
    r = taosync(home, fleet, "plan", "-v", env=env, script=CRASH.format(error="RuntimeError"))
    assert r.returncode == 70
    assert "Traceback (most recent call last)" in r.stderr and "RuntimeError: broken:" in r.stderr
    assert r.stderr.strip().endswith("taosync: internal error: RuntimeError: please report it, "
                                     "with the traceback above")
    no_secret(r.stdout, r.stderr)


def test_an_internal_error_keeps_the_json_contract(home, fleet, env):
    r = taosync(home, fleet, "status", "--json", env=env,
                script=CRASH.format(error="RuntimeError").replace("make_plan", "prepare"))
    no_crash(r)
    data = json.loads(r.stdout)
    assert r.returncode == 70 and data["exit_code"] == 70 and data["ok"] is False
    assert data["error"] == MESSAGE.removeprefix("taosync: ")
    assert [p["message"] for p in data["problems"]] == [data["error"]]


@pytest.mark.parametrize("error, rc", [("KeyboardInterrupt", 130), ("BrokenPipeError", 0)])
def test_interrupt_and_a_closed_pipe_keep_their_codes(home, fleet, env, error, rc):
    r = taosync(home, fleet, "plan", env=env, script=CRASH.format(error=error))
    assert r.returncode == rc
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_every_help_lists_the_internal_error_code(home, fleet, env):
    r = taosync(home, fleet, "plan", "--help", env=env)
    codes = r.stdout.split("Exit codes:")[1].split("Example:")[0]
    assert "  70  internal error" in codes


@pytest.mark.parametrize("args", [("status",), ("plan", "--check"), ("apply", "--no-verify")],
                         ids=" ".join)
def test_a_fast_path_crash_gets_the_full_paths_answer(home, fleet, env, args):
    """The no-op shortcut failing (here: a state.json cut off inside a list, which the C
    JSON scanner of Python 3.11 the fast path drives answers with a SystemError) is no
    answer: the full path gives the real one — state.json is damaged, exit 2."""
    assert taosync(home, fleet, "apply", "--no-verify", env=env).returncode == 0
    state = home / ".local/state/taosync/state.json"
    state.write_text('{"applies": [1, 2')
    r = taosync(home, fleet, *args, env=env)
    no_crash(r)
    assert r.returncode == 2 and f"{state} is damaged" in r.stderr, r.stderr


@pytest.mark.parametrize("value", ['"   "', '"\u00a0"', '"\u2003"'], ids=["spaces", "nbsp", "em-space"])
@pytest.mark.parametrize("command", [("validate",), ("validate", "--json"),
                                     ("apply", "--no-verify")], ids=" ".join)
def test_a_blank_key_is_a_located_error_not_a_crash(home, fleet, env, value, command):
    """A key of only whitespace passes the schema's min_length (a no-break space is one
    character); it used to reach an assertion (exit 70). It is bad input, located."""
    fleet.write_text(FLEET.replace("KEY", value))
    r = taosync(home, fleet, *command, env=env)
    no_crash(r)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the key reference is blank" in r.stdout + r.stderr
    assert not (home / ".claude").exists()


# ----------------------------------------------------------- shell-style variables

@pytest.mark.parametrize("value", ["$TAOTOKEN_API_KEY", "${TAOTOKEN_API_KEY}",
                                   "{env:TAOTOKEN_API_KEY}", "$env:TAOTOKEN_API_KEY"])
@pytest.mark.parametrize("command", [("validate",), ("validate", "--no-key"),
                                     ("apply", "--no-verify")], ids=" ".join)
def test_a_shell_style_key_is_a_located_error(home, fleet, env, value, command):
    fleet.write_text(FLEET.replace("KEY", f'"{value}"'))
    r = taosync(home, fleet, *command, env=env)
    no_crash(r)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{fleet}:4:8: gateway.key: {value} is not expanded" in r.stderr
    assert "did you mean `${env:TAOTOKEN_API_KEY}`?" in r.stderr
    assert not any(home.iterdir())


@pytest.mark.parametrize("field, name, value, at", [
    ("env", "GITHUB_TOKEN", "$GITHUB_TOKEN", GITHUB_AT),
    ("env", "GITHUB_TOKEN", "${GITHUB_TOKEN}", GITHUB_AT),
    ("env", "GITHUB_TOKEN", "{env:GITHUB_TOKEN}", GITHUB_AT),
    ("headers", "GITHUB_TOKEN", "Bearer ${GITHUB_TOKEN}", HEADER_AT),
    ("headers", "GITHUB_TOKEN", "Bearer $GITHUB_TOKEN", HEADER_AT),
    ("headers", "GH", "Bearer {env:GH}", HEADER_AT),  # a secret by the header's name
])
def test_a_shell_style_mcp_secret_is_a_located_error(home, fleet, env, field, name, value, at):
    old = "${env:GITHUB_TOKEN}" if field == "env" else "Bearer ${env:GITHUB_TOKEN}"
    text = FLEET.replace("KEY", "${env:TAOTOKEN_API_KEY}")
    head, tail = text.split(f"    {field}:\n", 1)
    fleet.write_text(head + f"    {field}:\n" + tail.replace(old, f'"{value}"', 1))
    path = ("mcp_servers.github.env.GITHUB_TOKEN" if field == "env"
            else "mcp_servers.remote.headers.Authorization")
    for command in (("validate", "--no-key"), ("apply", "--no-verify")):
        r = taosync(home, fleet, *command, env=env)
        no_crash(r)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"{fleet}:{at}: {path}: reads {name} as a shell would" in r.stderr, r.stderr
        assert f"did you mean `${{env:{name}}}`?" in r.stderr
    assert not any(home.iterdir())


def test_other_dollars_in_mcp_values_are_kept(home, fleet, env):
    """``$`` that is no secret's variable stays as written: ``${HOME}`` under a plain name
    (README: written as it is), ``$HOME`` in args, a literal password holding a ``$``."""
    fleet.write_text(FLEET.replace("KEY", "${env:TAOTOKEN_API_KEY}").replace(
        "      HOME_DIR: ${HOME}\n", "      HOME_DIR: ${HOME}\n      DB_PASSWORD: pa$sw0rd$\n"))
    r = taosync(home, fleet, "apply", "--no-verify", env=env)
    no_crash(r)
    assert r.returncode == 0, r.stderr
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["github"]
    assert server["env"]["HOME_DIR"] == "${HOME}" and server["env"]["DB_PASSWORD"] == "pa$sw0rd$"
    assert server["args"] == ["-y", "--token-file=$HOME/x"]
