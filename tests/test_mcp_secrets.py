"""Secret references in ``mcp_servers.*.env`` / ``.headers`` (issue 10, build item 4 and
"Bad input"): resolved like ``gateway.key`` into every client's MCP file (0600), never in
the state or the render cache, passed by reference where the client can read it itself,
and an unresolvable one is a located error with nothing written."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib

import pytest
from ruamel.yaml import YAML

from conftest import TEST_KEY, snapshot

TOKEN = "ghp_MCPsecretTOKEN0123456789abcdefXYZ"

FLEET = """\
version: 1
gateway:
  base_url: https://gw.example
  key: ${env:TAOTOKEN_API_KEY}
  gemini_base_url: https://gw.example
models:
  m1: {}
routes:
  fast: m1
default_route: fast
secrets: MODE
clients:
  claude-code: {}
  codex: {}
  cline: {}
  continue: {}
  qwen-code: {}
  gemini-cli: {}
mcp_servers:
  github:
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    env:
      GITHUB_TOKEN: GITHUB_VALUE
      LOG_LEVEL: debug
  remote:
    url: https://mcp.example/mcp
    headers:
      Authorization: Bearer ${env:GITHUB_TOKEN}
      X-Team: platform
"""
#: 1-based line and column of the value of mcp_servers.github.env.GITHUB_TOKEN
VALUE_AT = "24:21"


@pytest.fixture
def mcp_fleet(tmp_path, monkeypatch):
    """Write the fleet (``secrets`` mode, the GITHUB_TOKEN value) and return its path."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    path = tmp_path / "mcp-fleet.yaml"

    def write(mode: str = "inline", value: str = "${env:GITHUB_TOKEN}"):
        path.write_text(FLEET.replace("MODE", mode).replace("GITHUB_VALUE", value))
        return path

    return write


def mcp_files(home):
    """Each client's MCP file: (path, the GITHUB_TOKEN value there, the Authorization)."""
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]
    codex = tomllib.loads((home / ".codex/config.toml").read_text())["mcp_servers"]
    cline = json.loads((home / ".cline/data/settings/cline_mcp_settings.json").read_text())
    cline = {n: e["transport"] for n, e in cline["mcpServers"].items()}
    cont = YAML(typ="safe").load((home / ".continue/config.yaml").read_text())
    cont = {e["name"]: e for e in cont["mcpServers"]}
    return {
        ".claude.json": (claude["github"]["env"].get("GITHUB_TOKEN"),
                         claude["remote"]["headers"].get("Authorization")),
        ".codex/config.toml": (codex["github"].get("env", {}).get("GITHUB_TOKEN"),
                               codex["remote"].get("http_headers", {}).get("Authorization")),
        ".cline/data/settings/cline_mcp_settings.json": (
            cline["github"]["env"].get("GITHUB_TOKEN"),
            cline["remote"]["headers"].get("Authorization")),
        ".continue/config.yaml": (cont["github"]["env"].get("GITHUB_TOKEN"),
                                  cont["remote"]["requestOptions"]["headers"].get("Authorization")),
    }


def state_text(home) -> str:
    return (home / ".local/state/taosync/state.json").read_text()


def test_env_reference_is_written_into_every_client_0600_and_never_stored(
        taosync, home, mcp_fleet):
    fleet = mcp_fleet()
    applied = taosync("apply", "--no-verify", config=fleet)
    assert applied.rc == 0, applied.both
    for rel, (env_value, auth) in mcp_files(home).items():
        assert env_value == TOKEN, rel
        assert auth == f"Bearer {TOKEN}", rel
        assert stat.S_IMODE((home / rel).stat().st_mode) == 0o600, rel
    # the plain values beside it are untouched
    assert json.loads((home / ".claude.json").read_text()
                      )["mcpServers"]["github"]["env"]["LOG_LEVEL"] == "debug"
    raw = state_text(home)
    assert TOKEN not in raw and TEST_KEY not in raw
    # the render cache keeps the reference, not the value
    assert "${env:GITHUB_TOKEN}" in json.dumps(json.loads(raw)["inputs"])
    outputs = [applied]
    for args in (("plan",), ("plan", "--json"), ("status",), ("status", "--json"),
                 ("apply", "--no-verify", "-v")):
        r = taosync(*args, config=fleet)
        assert r.rc == 0, (args, r.both)
        outputs.append(r)
    for r in outputs:
        assert TOKEN not in r.both and TOKEN[4:] not in r.both


def test_rendered_mcp_secrets_are_secret_objects(home, mcp_fleet):
    """The contract with the redactor and the engine: a resolved MCP value in the
    patches is a Secret (revealed only on write, its key path marked secret)."""
    from taosync import pipeline
    from taosync.settings import Settings
    from taosync.fleet.secrets import Secret

    ctx = pipeline.prepare(Settings(config=mcp_fleet(), home=home), use_cache=False)
    found = []

    def walk(value):
        if isinstance(value, Secret):
            found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        else:
            assert TOKEN not in str(value)

    for patch in ctx.patches:
        walk(list(patch.values.values()))
    revealed = {s.reveal() for s in found}
    assert TOKEN in revealed and f"Bearer {TOKEN}" in revealed
    assert all(TOKEN not in repr(s) and TOKEN not in str(s) for s in found)


def test_reference_mode_passes_env_references_where_the_client_can(taosync, home, mcp_fleet):
    applied = taosync("apply", "--no-verify", config=mcp_fleet("reference"))
    assert applied.rc == 0, applied.both
    codex_text = (home / ".codex/config.toml").read_text()
    assert TOKEN not in codex_text
    codex = tomllib.loads(codex_text)["mcp_servers"]
    assert codex["github"]["env_vars"] == ["GITHUB_TOKEN"]
    assert codex["github"]["env"] == {"LOG_LEVEL": "debug"}
    assert codex["remote"]["bearer_token_env_var"] == "GITHUB_TOKEN"
    assert codex["remote"]["http_headers"] == {"X-Team": "platform"}
    cont_text = (home / ".continue/config.yaml").read_text()
    assert TOKEN not in cont_text
    files = mcp_files(home)
    assert files[".continue/config.yaml"] == ("${{ secrets.GITHUB_TOKEN }}",
                                              "Bearer ${{ secrets.GITHUB_TOKEN }}")
    # Claude Code's ~/.claude.json expands no ${VAR}, Cline's MCP file neither: inline, 0600
    for rel in (".claude.json", ".cline/data/settings/cline_mcp_settings.json"):
        assert files[rel] == (TOKEN, f"Bearer {TOKEN}")
        assert stat.S_IMODE((home / rel).stat().st_mode) == 0o600
    assert "claude-code: secrets: reference cannot keep the MCP secret GITHUB_TOKEN" \
        in applied.err
    assert "cline: secrets: reference cannot keep the MCP secret Authorization" in applied.err
    assert TOKEN not in applied.both and TOKEN not in state_text(home)


def test_codex_inlines_what_it_cannot_read_from_its_environment(taosync, home, mcp_fleet,
                                                                tmp_path):
    token_file = home / "gh-token"
    token_file.write_text(TOKEN + "\n")
    applied = taosync("apply", "--no-verify", config=mcp_fleet("reference", "${file:~/gh-token}"))
    assert applied.rc == 0, applied.both
    codex = tomllib.loads((home / ".codex/config.toml").read_text())["mcp_servers"]
    assert codex["github"]["env"]["GITHUB_TOKEN"] == TOKEN
    assert stat.S_IMODE((home / ".codex/config.toml").stat().st_mode) == 0o600
    assert "codex: secrets: reference cannot keep the MCP secret GITHUB_TOKEN of server " \
           "'github' off disk" in applied.err


@pytest.mark.parametrize("value", ["${file:~/gh-token}", "${cmd:cat gh-token}",
                                   "${shell:cat gh-token | tr -d ' '}"])
def test_file_cmd_and_shell_references(taosync, home, mcp_fleet, value, monkeypatch):
    (home / "gh-token").write_text(f"  {TOKEN}\n")
    monkeypatch.chdir(home)
    applied = taosync("apply", "--no-verify", config=mcp_fleet(value=value))
    assert applied.rc == 0, applied.both
    assert {v[0] for v in mcp_files(home).values()} == {TOKEN}
    assert TOKEN not in state_text(home)


def test_cached_render_resolves_the_mcp_secret_again(taosync, home, mcp_fleet, monkeypatch):
    from taosync import pipeline
    from taosync.settings import Settings

    fleet = mcp_fleet()
    assert taosync("apply", "--no-verify", config=fleet).rc == 0
    rotated = "ghp_ROTATEDtoken9876543210zyxwvu"
    monkeypatch.setenv("GITHUB_TOKEN", rotated)
    ctx = pipeline.prepare(Settings(config=fleet, home=home))
    assert ctx.loaded is None, "an unchanged fleet should come from the cache"
    claude = next(p for p in ctx.patches if p.path == home / ".claude.json")
    assert claude.values[("mcpServers", "github")]["env"]["GITHUB_TOKEN"].reveal() == rotated
    # (the diff of a changed secret is hidden by the shared redactor, issue 10 item 1)
    assert taosync("plan", "--check", config=fleet).rc == 1
    assert taosync("apply", "--no-verify", config=fleet).rc == 0
    assert mcp_files(home)[".claude.json"][0] == rotated
    assert rotated not in state_text(home)
    # unset: the cache misses and the full load says where
    monkeypatch.delenv("GITHUB_TOKEN")
    r = taosync("plan", config=fleet)
    assert r.rc == 2 and f"{fleet}:{VALUE_AT}:" in r.err and "Traceback" not in r.both


UNRESOLVABLE = {
    "unset-env": ("${env:NO_SUCH_TOKEN_VAR}", "environment variable NO_SUCH_TOKEN_VAR is not set"),
    "missing-file": ("${file:~/no-such-token}", "does not exist"),
    "whitespace-file": ("${file:~/blank-token}", "is empty"),
    "cmd-fails": ("${cmd:false}", "key command exited 1"),
    "cmd-prints-nothing": ("${cmd:true}", "key command printed nothing"),
    "empty-cmd": ("${cmd:}", "key command is empty"),
    "shell-prints-blank": ("${shell:printf '  \\n'}", "key command printed nothing"),
}


@pytest.mark.parametrize("command", ["validate", "plan", "apply"])
@pytest.mark.parametrize("case", sorted(UNRESOLVABLE))
def test_unresolvable_mcp_reference_is_located(taosync, home, mcp_fleet, case, command):
    value, reason = UNRESOLVABLE[case]
    (home / "blank-token").write_text(" \n\t\n")
    before = snapshot(home)
    fleet = mcp_fleet(value=value)
    r = taosync(command, config=fleet)
    assert r.rc == 2, r.both
    assert f"{fleet}:{VALUE_AT}: mcp_servers.github.env.GITHUB_TOKEN: cannot resolve" in r.err
    assert reason in r.err
    assert "Traceback" not in r.both and "gateway.key" not in r.err
    assert snapshot(home) == before


GATEWAY_KEY_BAD = {
    "whitespace-file": ("${file:~/blank-key}", "is empty"),
    "cmd-prints-nothing": ("${cmd:true}", "key command printed nothing"),
    "unset-env": ("${env:NO_SUCH_GATEWAY_KEY}", "is not set"),
}


@pytest.mark.parametrize("command", ["validate", "apply"])
@pytest.mark.parametrize("case", sorted(GATEWAY_KEY_BAD))
def test_unresolvable_gateway_key_is_located(taosync, home, mcp_fleet, case, command):
    value, reason = GATEWAY_KEY_BAD[case]
    (home / "blank-key").write_text("   \n")
    before = snapshot(home)
    fleet = mcp_fleet()
    fleet.write_text(fleet.read_text().replace("${env:TAOTOKEN_API_KEY}", value))
    r = taosync(command, config=fleet)
    assert r.rc == 2, r.both
    assert f"{fleet}:4:8: gateway.key: cannot resolve" in r.err and reason in r.err
    assert "Traceback" not in r.both
    assert snapshot(home) == before


@pytest.mark.parametrize("value, message", [
    ("${env:A}${env:B}", "holds 2 key references; a value may hold one"),
    ("${gateway.base_url}/${env:GITHUB_TOKEN}", "mixes a key reference with a fleet reference"),
    ("x ${env:GITHUB_TOKEN", "a key reference that is not closed"),
])
def test_values_that_cannot_hold_a_reference_are_located(taosync, home, mcp_fleet, value,
                                                         message):
    before = snapshot(home)
    fleet = mcp_fleet(value=json.dumps(value))
    r = taosync("validate", "--no-key", config=fleet)
    assert r.rc == 2 and f"{fleet}:{VALUE_AT}:" in r.err and message in r.err, r.both
    assert snapshot(home) == before


def test_a_reference_outside_env_and_headers_is_refused(taosync, home, mcp_fleet):
    fleet = mcp_fleet()
    fleet.write_text(fleet.read_text().replace('args: [-y, "@modelcontextprotocol/server-github"]',
                                               'args: [-y, "--token=${env:GITHUB_TOKEN}"]'))
    r = taosync("validate", config=fleet)
    assert r.rc == 2
    assert f"{fleet}:22:16: mcp_servers.github.args[1]: a key reference works only in env " \
           "and headers values" in r.err, r.err


def test_validate_no_key_does_not_resolve_mcp_references(taosync, home, mcp_fleet,
                                                         monkeypatch):
    fleet = mcp_fleet()
    monkeypatch.delenv("GITHUB_TOKEN")
    assert taosync("validate", "--no-key", config=fleet).rc == 0
    assert taosync("validate", config=fleet).rc == 2


def test_a_partial_reference_keeps_its_text(taosync, home, mcp_fleet):
    assert taosync("apply", "--no-verify",
                   config=mcp_fleet(value='"token ${env:GITHUB_TOKEN} (ro)"')).rc == 0
    assert mcp_files(home)[".codex/config.toml"][0] == f"token {TOKEN} (ro)"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_plain_mcp_value_leaves_the_file_mode_alone(taosync, home, mcp_fleet):
    fleet = mcp_fleet(value="not-a-secret")
    fleet.write_text(fleet.read_text().replace("Bearer ${env:GITHUB_TOKEN}", "Bearer public"))
    (home / ".claude.json").write_text("{}")
    os.chmod(home / ".claude.json", 0o644)
    assert taosync("apply", "--no-verify", config=fleet).rc == 0
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o644


# ------------------------------------------------------------------ import (item 5)

IMPORT_FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "import"
PAT = "ghp_IMPORTEDpat0123456789abcdefABCDEF"
SLACK = "xoxb-1111-2222-IMPORTEDslack"


def _claude_home_with_tokens(home):
    import shutil

    shutil.copytree(IMPORT_FIXTURES / "claude", home, dirs_exist_ok=True)
    path = home / ".claude.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["github"] = {
        "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": PAT, "GITHUB_TOOLSETS": "repos,issues"}}
    data["mcpServers"]["search"]["headers"]["Authorization"] = f"Bearer {PAT}"
    data["mcpServers"]["docs"]["env"]["NOTIFY"] = SLACK  # a token by its value alone
    path.write_text(json.dumps(data, indent=2))


def test_import_never_copies_an_mcp_secret(taosync, home, tmp_path, monkeypatch):
    _claude_home_with_tokens(home)
    text = taosync("import")
    as_json = taosync("import", "--json")
    for r in (text, as_json):
        assert r.rc == 0, r.both
        for value in (PAT, SLACK, PAT[4:]):
            assert value not in r.both
    fleet = json.loads(as_json.out)["fleet"]
    servers = fleet["mcp_servers"]
    assert servers["github"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_PERSONAL_ACCESS_TOKEN}",
        "GITHUB_TOOLSETS": "repos,issues"}
    assert servers["search"]["headers"] == {"X-Client": "me",
                                            "Authorization": "Bearer ${env:SEARCH_AUTHORIZATION}"}
    assert servers["docs"]["env"] == {"DOCS_DIR": "/srv/docs", "NOTIFY": "${env:NOTIFY}"}
    # stderr says what to export, reading the value from the file, never printing it
    hint = ("export GITHUB_PERSONAL_ACCESS_TOKEN=\"$(jq -r '.mcpServers.github | "
            "(.transport // .) | .env[\"GITHUB_PERSONAL_ACCESS_TOKEN\"]' ~/.claude.json)\"")
    assert hint in text.err
    assert "mcp: github env.GITHUB_PERSONAL_ACCESS_TOKEN references " \
           "${env:GITHUB_PERSONAL_ACCESS_TOKEN}" in text.err
    assert "export GITHUB_PERSONAL_ACCESS_TOKEN; the value is never copied here" in text.out

    # the export lines work: run them (jq reads the file) and the proposal applies back
    # the very values import read
    import shutil
    import subprocess

    if shutil.which("jq") is None:
        pytest.skip("jq not installed")  # pragma: no cover - the CI image has jq
    found = json.loads(as_json.out)["mcp_secrets"]
    assert {f["env"] for f in found} == {"GITHUB_PERSONAL_ACCESS_TOKEN", "SEARCH_AUTHORIZATION",
                                         "NOTIFY"}
    for f in found:
        script = f["export_hint"].replace("~/", f"{home}/") + f'; printf %s "${f["env"]}"'
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
        monkeypatch.setenv(f["env"], out.stdout)
    assert os.environ["SEARCH_AUTHORIZATION"] == PAT
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(text.out)
    assert taosync("apply", "--no-verify", "--only", "claude-code", config=proposal).rc == 0
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert claude["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"] == PAT
    assert claude["search"]["headers"]["Authorization"] == f"Bearer {PAT}"
    assert PAT not in state_text(home)


def test_import_names_a_second_different_secret_after_its_server(taosync, home):
    _claude_home_with_tokens(home)
    path = home / ".claude.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["github-work"] = {
        "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_WORKtoken0123456789abcdef"}}
    path.write_text(json.dumps(data))
    r = taosync("import", "--json")
    assert "ghp_WORKtoken0123456789abcdef" not in r.both
    servers = json.loads(r.out)["fleet"]["mcp_servers"]
    assert servers["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"] == \
        "${env:GITHUB_PERSONAL_ACCESS_TOKEN}"
    assert servers["github-work"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"] == \
        "${env:GITHUB_WORK_GITHUB_PERSONAL_ACCESS_TOKEN}"


@pytest.mark.parametrize("mode", ["inline", "reference"])
def test_the_view_and_the_pydantic_model_render_mcp_secrets_alike(home, mcp_fleet, mode,
                                                                  tmp_path):
    """The run-time view (what taosync uses) and the pydantic model (the definition)
    expand MCP secrets the same way, in every client."""
    from taosync.clients.base import ClientEnv
    from taosync.clients.registry import all as all_clients
    from taosync.fleet.load import load_fleet
    from taosync.schema_build import Fleet

    path = mcp_fleet(mode)
    text = path.read_text()  # every registered client, not only the ones FLEET names
    path.write_text(text.replace("clients:\n", "clients:\n" + "".join(
        f"  {c}: {{}}\n" for c in all_clients() if f"\n  {c}: " not in text)))
    loaded = load_fleet(path, home=home)
    model = Fleet.model_validate(loaded.data)
    model.attach_mcp_secrets(loaded.fleet._run_time.mcp_secrets)
    assert set(loaded.fleet.enabled_clients()) >= {"claude-code", "codex", "cline", "continue"}
    for client, module in all_clients().items():
        if client not in loaded.fleet.enabled_clients():  # render is only asked of these
            continue
        env_m = ClientEnv(home=tmp_path, environ={}, platform="linux")
        env_v = ClientEnv(home=tmp_path, environ={}, platform="linux")
        got = [(p.path, p.values, p.secret) for p in module.render(loaded.fleet, loaded.key, env_v)]
        want = [(p.path, p.values, p.secret) for p in module.render(model, loaded.key, env_m)]
        assert got == want, client
        assert env_v.warnings == env_m.warnings


@pytest.mark.parametrize("label, value, secret", [
    ("GITHUB_TOKEN", "0123456789abcdef0123", True),
    ("OPENAI_API_KEY", "abcdefgh12345678", True),
    ("CLIENT_SECRET", "s3cr3t-value-xyz", True),
    ("Authorization", "Bearer abcdefgh12345678", True),
    ("NOTIFY", "xoxb-1-2-slack", True),
    ("REPO", "github_pat_11AAAAAA", True),
    ("TOKEN_LIMIT", "4000", False),
    ("MAX_TOKENS", "abcdefgh12345678", False),
    ("DOCS_DIR", "/srv/docs", False),
    ("GITHUB_TOKEN", "${env:GITHUB_TOKEN}", False),
])
def test_what_import_takes_for_a_secret(label, value, secret):
    from taosync.importer import _looks_secret

    assert _looks_secret(label, value) is secret
