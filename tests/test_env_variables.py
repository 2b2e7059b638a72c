"""``taosync env --with-key`` exports every variable taosync's files leave a secret to, and
apply/plan/status/verify say once what a shell must still export — or that it exports a
stale key (issue #25, Build 4).

The variables a client file refers to are read here from the files themselves, in each
client's own syntax (below), not from taosync's list (taosync/clients/variables.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY

GH = "ghp_0123456789abcdefghijklmnop"
REMOTE = "remote-token-0123456789abcdef"

#: how a client's file names a variable it reads a secret from, in the client's syntax
NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
REFERENCES = [
    rf"printenv {NAME}",  # Claude Code's apiKeyHelper
    rf'\benv_key = "{NAME}"',  # Codex
    rf'\bbearer_token_env_var = "{NAME}"',  # Codex MCP
    rf'"envKey": "{NAME}"',  # Qwen Code
    rf'\bapi_key_env(?:_var)? = "{NAME}"',  # gptme, Mistral Vibe
    rf"\$\{{\{{ secrets\.{NAME} \}}\}}",  # Continue
    rf"(?<![$\w])\{{env:{NAME}\}}",  # opencode, Kilo
    rf"(?<!\$)\$\{{{NAME}\}}",  # Gemini CLI, Qwen Code MCP (settings.json)
    rf"(?m)^\s*key_env: {NAME}$",  # Hermes Agent (config.yaml)
]
#: variables a client reads before the file that also holds the key under that name
READ_FIRST = {".gemini/.env": "GEMINI_API_KEY", ".config/shell_gpt/.sgptrc": "OPENAI_API_KEY"}


def referenced(home: Path) -> set[str]:
    """Every variable the client files under ``home`` refer to (taosync's state aside)."""
    found: set[str] = set()
    for path in home.rglob("*"):
        rel = path.relative_to(home).as_posix()
        if not path.is_file() or rel.startswith(".local/"):
            continue
        text = path.read_text(errors="replace")
        for pattern in REFERENCES:
            found.update(re.findall(pattern, text))
        codex_vars = re.findall(r"\benv_vars = \[([^\]]*)\]", text)
        found.update(v for group in codex_vars for v in re.findall(r'"([^"]+)"', group))
        if rel in READ_FIRST and re.search(rf"^{READ_FIRST[rel]}=", text, re.M):
            found.add(READ_FIRST[rel])
        if rel == ".aider.conf.yml" and "openai-api-key" not in text:
            found.add("OPENAI_API_KEY")  # aider's fallback when its file holds no key
    return found


def every_client(fleet_file: Path, secrets: str = "reference", key: str = "${env:GW_KEY}",
                 **top) -> None:
    from taosync.clients.registry import ids

    yaml = YAML(typ="safe")
    data = yaml.load(EXAMPLE_FLEET.read_text())
    data["gateway"]["key"] = key
    data["clients"] = {client_id: data["clients"].get(client_id, {}) for client_id in ids()}
    data["secrets"] = secrets
    data["mcp_servers"] = {
        "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${env:GH_TOK}"}},
        "remote": {"url": "https://mcp.example/mcp",
                   "headers": {"Authorization": "Bearer ${env:REMOTE_TOK}"}}}
    data.update(top)
    with fleet_file.open("w") as fh:
        yaml.dump(data, fh)


def exports(text: str) -> dict[str, str]:
    return dict(re.findall(r"^export ([A-Z0-9_]+)='([^']*)'$", text, re.M))


@pytest.fixture
def secrets_env(monkeypatch):
    monkeypatch.setenv("GW_KEY", TEST_KEY)
    monkeypatch.setenv("GH_TOK", GH)
    monkeypatch.setenv("REMOTE_TOK", REMOTE)
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("secrets", ["reference", "inline"])
def test_env_with_key_exports_exactly_what_the_files_refer_to(taosync, home, fleet_file,
                                                              secrets_env, secrets):
    every_client(fleet_file, secrets)
    assert taosync("apply", "--no-verify").rc == 0
    named = referenced(home)
    if secrets == "reference":  # the example: every kind of reference is there
        assert {"GW_KEY", "OPENAI_API_KEY", "GH_TOK", "REMOTE_TOK"} <= named
    baseline = set(exports(taosync("env", "--with-key", config=_no_clients(fleet_file)).out))
    out = exports(taosync("env", "--with-key").out)
    assert named <= set(out), named - set(out)
    assert set(out) - baseline == named - baseline
    values = {GH: "GH_TOK", REMOTE: "REMOTE_TOK"}
    for var, value in out.items():  # the key, or the MCP secret the variable holds
        assert value == (TEST_KEY if var not in values.values() else
                         {v: k for k, v in values.items()}[var]) or var.startswith(
            ("TAOTOKEN_BASE", "TAOTOKEN_OPENAI", "TAOTOKEN_ANTHROPIC", "TAOTOKEN_MODEL",
             "GOOGLE_GEMINI")), var
    plain = taosync("env").out  # never a secret without --with-key
    assert TEST_KEY not in plain and GH not in plain and REMOTE not in plain


def _no_clients(fleet_file: Path) -> Path:
    yaml = YAML(typ="safe")
    data = yaml.load(fleet_file.read_text())
    data["clients"] = {}
    path = fleet_file.with_name("none.yaml")
    with path.open("w") as fh:
        yaml.dump(data, fh)
    return path


def test_apply_says_once_what_the_shell_must_export(taosync, home, fleet_file, secrets_env):
    every_client(fleet_file)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    lines = [line for line in r.err.splitlines() if "read the key from a variable" in line]
    assert lines == [
        "warning: secrets: reference: these clients read the key from a variable that is not "
        "set here: OPENAI_API_KEY (aider); add `eval \"$(taosync env --with-key)\"` to your "
        "shell start-up (it exports each), or export it where the clients run"], r.err
    assert "aider reads the key from OPENAI_API_KEY" not in r.err  # not once per client
    os.environ["OPENAI_API_KEY"] = TEST_KEY  # what the eval exports: nothing left to do
    try:
        again = taosync("plan")
    finally:
        del os.environ["OPENAI_API_KEY"]
    assert "read the key from a variable" not in again.both and TEST_KEY not in again.both


# -- a stale exported key, through the real command (and its no-op fast path) -------------

OLD = "sk-old-ROTATED-AWAY-0000000000000000"


def cli(home: Path, fleet_file: Path, *argv: str, env: dict) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if k not in ("TAOTOKEN_API_KEY", "OPENAI_API_KEY", "GW_KEY")}
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet_file), *argv], cwd=ROOT, capture_output=True, text=True,
                          env={**base, **env}, timeout=120)


def test_a_stale_exported_key_is_named_by_status_and_verify(tmp_path):
    """After a rotation the fleet's key (a file) is K2; a shell that still exports the old
    key under the variable gptme and Vibe read before their files is named by status —
    on the full path and when the fast path replays — and by verify, with the clients,
    never the value."""
    from taosync.stub import Stub

    home = tmp_path / "home"
    home.mkdir()
    (home / "gw.key").write_text(TEST_KEY + "\n")
    fleet_file = tmp_path / "fleet.yaml"
    yaml = YAML(typ="safe")
    data = yaml.load(EXAMPLE_FLEET.read_text())
    with Stub(key=TEST_KEY, models=list(data["models"])) as stub:
        data["gateway"].update(base_url=stub.root, key="${file:~/gw.key}")
        data["clients"] = {"gptme": {"model": "fast"}, "mistral-vibe": {"model": "fast"},
                           "codex": {"model": "fast"}}
        data["mcp_servers"] = {}
        with fleet_file.open("w") as fh:
            yaml.dump(data, fh)
        assert cli(home, fleet_file, "apply", "--no-verify", env={}).returncode == 0
        clean = cli(home, fleet_file, "status", env={})
        assert clean.returncode == 0 and "TAOTOKEN_API_KEY" not in clean.stderr, clean.stderr
        stale = {"TAOTOKEN_API_KEY": OLD}
        want = ("warning: TAOTOKEN_API_KEY is set in this environment to another key than "
                "the fleet's (${file:~/gw.key}): Mistral Vibe and gptme read it before their "
                "files and would send it; unset it, or export the current key: "
                "eval \"$(taosync env --with-key)\"")
        timed = {**stale, "PYTHONPROFILEIMPORTTIME": "1"}
        r = cli(home, fleet_file, "status", env=timed)  # the full path: another environment
        assert re.search(r"\| +click$", r.stderr, re.M)
        assert r.returncode == 0 and want in r.stderr.splitlines(), r.stderr
        assert OLD not in r.stdout + r.stderr and TEST_KEY not in r.stdout + r.stderr
        applied = cli(home, fleet_file, "apply", "--no-verify", env=stale)
        assert want in applied.stderr.splitlines(), applied.stderr
        # certified in that shell: the no-op answer is replayed (click is never imported)
        r = cli(home, fleet_file, "status", env=timed)
        assert not re.search(r"\| +click$", r.stderr, re.M), "not the fast path"
        assert want in r.stderr.splitlines(), r.stderr
        assert OLD not in r.stdout + r.stderr
        same = cli(home, fleet_file, "status", env={"TAOTOKEN_API_KEY": TEST_KEY})
        assert "TAOTOKEN_API_KEY" not in same.stderr, same.stderr  # the current key: fine
        v = cli(home, fleet_file, "verify", env=stale)
        assert want in v.stderr.splitlines(), v.stderr
        assert OLD not in v.stdout + v.stderr
