"""The gateway's other credentials are secrets (issue 23, "Other gateway credentials"):
a password in ``gateway.base_url`` (``https://user:pass@…``) and every ``gateway.headers``
value (Helicone-Auth, CF-Access-Client-Secret) are never printed, written only into files
of mode 0600, never kept in state.json or the no-op certificate; ``${env:…}``,
``${file:…}`` and ``${cmd:…}`` in a header resolve as in MCP headers; and a control
character in a header name or value (or in a URL) is refused with its line and column
before anything is written (a CR/LF would smuggle a header of its own into every
request Claude Code sends).

Every command runs as a real ``python -m taosync`` subprocess (the no-op fast path
included), against real files in a temporary home; verify sends real HTTP to the
loopback stand-in gateway.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY, client_location_vars, snapshot

PASSWORD = "Pa55wordOfAlice-9f3b2c"
USERINFO = f"alice:{PASSWORD}"
HELICONE = "sk-helicone-LITERALhdr-0123456789abcd"
CF_SECRET = "cfAccessSecretFROMenv-8a7b6c5d4e3f"
FILE_SECRET = "fileHeaderSecret-5e6f7a8b9c0d1e2f"
SECRETS = (PASSWORD, HELICONE, CF_SECRET, FILE_SECRET)

#: every client that takes the gateway's headers or its URL
CLIENTS = ("claude-code", "codex", "cline", "continue", "qwen-code", "gemini-cli", "opencode",
           "kilo", "llm", "mistral-vibe", "gptme", "aider", "shell-gpt")

FLEET = """\
version: 1
gateway:
  base_url: BASE
  key: ${env:TAOTOKEN_API_KEY}
  gemini_base_url: BASE
  headers:
    Helicone-Auth: Bearer HELICONE
    CF-Access-Client-Secret: ${env:CF_SECRET}
    X-Secret-File: ${file:~/hdr.secret}
    X-Team: platform
models:
  m1: {}
routes:
  fast: m1
default_route: fast
clients:
CLIENTS
"""


def fleet_text(base: str = f"https://{USERINFO}@gw.example/api",
               clients=CLIENTS) -> str:
    return (FLEET.replace("BASE", base).replace("HELICONE", HELICONE)
            .replace("CLIENTS", "\n".join(f"  {c}: {{}}" for c in clients)))


@pytest.fixture
def env(home):
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST", "COV")) and k not in client_location_vars()
           and k not in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "TAOSYNC_CONFIG")}
    out.update(TAOTOKEN_API_KEY=TEST_KEY, CF_SECRET=CF_SECRET, NO_COLOR="1")
    (home / "hdr.secret").write_text(FILE_SECRET + "\n")
    return out


@pytest.fixture
def fleet(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text(fleet_text())
    return path


def taosync(home: Path, fleet: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)


def leaks(text: str) -> list[str]:
    """Each secret (or a telling piece of one) found in ``text``."""
    found = []
    for secret in SECRETS:
        for piece in (secret, secret[:12], secret[-12:]):
            if piece.lower() in text.lower():
                found.append(piece)
    return found


def assert_no_leak(r: subprocess.CompletedProcess, what: str) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    both = r.stdout + r.stderr
    assert not leaks(both), f"{what} printed {leaks(both)}:\n{both}"
    assert TEST_KEY not in both


def files_with_secrets(root: Path) -> dict[Path, list[str]]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath, name)
            found = leaks(path.read_bytes().decode("utf-8", "replace"))
            if found:
                out[path] = found
    return out


# -- nothing printed ---------------------------------------------------------------------

def test_no_command_prints_a_gateway_credential(home, fleet, env):
    """plan, plan --json, apply -v, status (full and fast path), rollback --dry-run, log,
    validate --explain, env, doctor, verify --stub: the URL's password and every header
    value stay hidden."""
    for args in (("validate",), ("validate", "--explain"), ("plan",), ("plan", "--json"),
                 ("plan", "-v"), ("apply", "-v", "--no-verify"), ("status",),
                 ("status", "--json"), ("plan",), ("apply", "--no-verify"),
                 ("rollback", "--dry-run"), ("rollback", "--dry-run", "--json"), ("log",),
                 ("env",), ("env", "--json"), ("doctor",), ("verify", "--stub"),
                 ("verify", "--stub", "--json", "-v")):
        r = taosync(home, fleet, env, *args)
        assert r.returncode in (0, 1), (args, r.stdout, r.stderr)
        assert_no_leak(r, " ".join(args))


def test_the_text_around_a_credential_stays_readable(home, fleet, env):
    """Only the secret is hidden: a header's name, a URL's host and path stay readable."""
    r = taosync(home, fleet, env, "plan")
    assert r.returncode == 0, r.stderr
    assert_no_leak(r, "plan")
    assert '"ANTHROPIC_BASE_URL": "https://(sensitive value)@gw.example/api"' in r.stdout
    assert ('"ANTHROPIC_CUSTOM_HEADERS": "Helicone-Auth: (sensitive value)\\n'
            'CF-Access-Client-Secret: (sensitive value)') in r.stdout
    assert 'CF-Access-Client-Secret = "(sensitive value)"' in r.stdout  # Codex's TOML
    assert 'base_url = "https://(sensitive value)@gw.example/api/v1"' in r.stdout


def test_a_changed_header_shows_that_it_changed_never_what_it_was(home, fleet, env):
    assert taosync(home, fleet, env, "apply", "--no-verify").returncode == 0
    env = dict(env, CF_SECRET="cfAccessSecretROTATED-0000111122223333")
    r = taosync(home, fleet, env, "plan", "-v")
    assert r.returncode == 0, r.stderr
    assert_no_leak(r, "plan after a rotation")
    assert "ROTATED" not in r.stdout + r.stderr
    assert "(sensitive value)" in r.stdout


def test_a_literal_credential_is_warned_about_as_a_literal_key_is(home, fleet, env):
    r = taosync(home, fleet, env, "validate")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert any(":3:13: gateway.base_url: warning: a literal password in fleet.yaml" in line
               for line in lines), r.stderr
    assert any(":7:20: gateway.headers.Helicone-Auth: warning: a literal secret in "
               "fleet.yaml" in line for line in lines), r.stderr
    # a reference, and a value that is no credential, are not warned about
    assert "CF-Access-Client-Secret: warning" not in r.stderr
    assert "X-Team: warning" not in r.stderr


# -- on disk -------------------------------------------------------------------------------

def test_every_file_that_receives_a_credential_is_0600(home, fleet, env):
    # a client file the user made 0644 before taosync writes a header into it
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text('model = "o3"\n')
    os.chmod(home / ".codex/config.toml", 0o644)
    r = taosync(home, fleet, env, "apply", "--no-verify")
    assert r.returncode == 0, r.stderr
    found = files_with_secrets(home)
    assert found, "no client file received the gateway's credentials"
    written = {p.relative_to(home).as_posix() for p in found}
    for expected in (".claude/settings.json", ".codex/config.toml",
                     ".cline/data/globalState.json", ".vibe/config.toml",
                     ".config/io.datasette.llm/extra-openai-models.yaml",
                     ".config/gptme/config.toml"):
        assert expected in written, (expected, sorted(written))
    for path in found:
        if path.name == "hdr.secret":
            continue  # the user's own secret file
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == 0o600, f"{path} holds {found[path]} with mode {mode:04o}"


def test_headers_resolve_as_mcp_headers_do(home, fleet, env):
    """${env:…} and ${file:…} are written resolved (never the reference's characters)."""
    assert taosync(home, fleet, env, "apply", "--no-verify").returncode == 0
    codex = (home / ".codex/config.toml").read_text()
    assert CF_SECRET in codex and FILE_SECRET in codex and HELICONE in codex
    assert "${env:" not in codex and "${file:" not in codex
    claude = json.loads((home / ".claude/settings.json").read_text())["env"]
    assert claude["ANTHROPIC_CUSTOM_HEADERS"].splitlines() == [
        f"Helicone-Auth: Bearer {HELICONE}", f"CF-Access-Client-Secret: {CF_SECRET}",
        f"X-Secret-File: {FILE_SECRET}", "X-Team: platform"]
    assert claude["ANTHROPIC_BASE_URL"] == f"https://{USERINFO}@gw.example/api"


def test_state_certificate_and_history_hold_no_credential(home, fleet, env):
    assert taosync(home, fleet, env, "apply", "--no-verify").returncode == 0
    assert taosync(home, fleet, env, "status").returncode == 0  # the fast path's answer
    state_dir = home / ".local/state/taosync"
    assert (state_dir / "state.json").exists()
    for name in ("state.json", "certificate.json", "history.jsonl"):
        path = state_dir / name
        if path.exists():
            assert not leaks(path.read_text()), f"{name} holds {leaks(path.read_text())}"


def test_a_reference_only_fleet_keeps_its_render_cache_without_the_secret(home, tmp_path, env):
    """With only references (no literal header value, no password in a URL) the render is
    cached, each header stored as its reference and resolved again on load: a changed
    secret is picked up. (A literal value is a secret the state must not hold: such a
    fleet renders afresh each time, as one with a literal key does.)"""
    path = tmp_path / "refs.yaml"
    path.write_text(fleet_text(base="https://gw.example/api").replace(
        f"Bearer {HELICONE}", "Bearer ${env:HELICONE}").replace("    X-Team: platform\n", ""))
    env = dict(env, HELICONE=HELICONE)
    assert taosync(home, path, env, "apply", "--no-verify").returncode == 0
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert state["inputs"].get("patches"), "the render was not cached"
    assert not leaks(json.dumps(state))
    env = dict(env, CF_SECRET="cfAccessSecretROTATED-0000111122223333")
    r = taosync(home, path, env, "apply", "--no-verify")
    assert r.returncode == 0, r.stderr
    assert "ROTATED" not in r.stdout + r.stderr
    assert "cfAccessSecretROTATED" in (home / ".codex/config.toml").read_text()


# -- bad input -------------------------------------------------------------------------------

def test_a_header_that_cannot_be_resolved_is_a_located_error(home, fleet, env):
    env = {k: v for k, v in env.items() if k != "CF_SECRET"}
    before = snapshot(home)
    r = taosync(home, fleet, env, "apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    assert (f"{fleet}:8:30: gateway.headers.CF-Access-Client-Secret: cannot resolve "
            "${env:CF_SECRET}: environment variable CF_SECRET is not set") in r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(home) == before
    # --no-key treats it as it treats MCP secrets: not resolved, a placeholder
    r = taosync(home, fleet, env, "plan", "--no-key")
    assert r.returncode == 0, r.stderr
    assert_no_leak(r, "plan --no-key")


@pytest.mark.parametrize("line, where, what", [
    ('    X-Evil: "a\\r\\nX-Injected: 1"\n', "11:13", "U+000D"),
    ('    X-Evil: "a\\nb"\n', "11:13", "U+000A"),
    ('    X-Evil: "a\\0b"\n', "11:13", "U+0000"),
    ('    X-Evil: "a\\x7fb"\n', "11:13", "U+007F"),
    ('    X-Evil: "a\\x85b"\n', "11:13", "U+0085"),
    ('    "X-Evil\\r\\nX-Injected": a\n', "11:5", "not an HTTP header name"),
    ('    "X Evil": a\n', "11:5", "not an HTTP header name"),
    ('    "": a\n', "11:5", "not an HTTP header name"),
])
def test_control_characters_in_a_header_are_refused_where_they_are(home, tmp_path, env,
                                                                   line, where, what):
    path = tmp_path / "bad.yaml"
    text = fleet_text(base="https://gw.example/api")
    path.write_text(text.replace("    X-Team: platform\n", "    X-Team: platform\n" + line))
    before = snapshot(home)
    for args in (("validate",), ("apply", "--no-verify"), ("plan",)):
        r = taosync(home, path, env, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert f"{path}:{where}: gateway.headers" in r.stderr, r.stderr
        assert what in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        assert "\r" not in r.stderr and "\x00" not in r.stderr
    assert snapshot(home) == before


def test_a_resolved_header_holding_a_newline_is_refused(home, fleet, env):
    env = dict(env, CF_SECRET="abc\r\nX-Injected: 1")
    before = snapshot(home)
    r = taosync(home, fleet, env, "apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    assert (f"{fleet}:8:30: gateway.headers.CF-Access-Client-Secret: ${{env:CF_SECRET}} "
            "gives a value holding the control character U+000D") in r.stderr, r.stderr
    assert snapshot(home) == before


@pytest.mark.parametrize("url", ['"https://alice:pa\\r\\nss@gw.example/api"',
                                 '"https://gw.example/a\\0pi"'])
def test_control_characters_in_the_url_are_refused(home, tmp_path, env, url):
    path = tmp_path / "bad.yaml"
    path.write_text(fleet_text(base=url))
    before = snapshot(home)
    r = taosync(home, path, env, "apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{path}:3:13: gateway.base_url: " in r.stderr and "so it is refused" in r.stderr
    assert "pa\r" not in r.stderr and "alice" not in r.stderr
    assert snapshot(home) == before


# -- verify ----------------------------------------------------------------------------------

def test_verify_sends_the_resolved_headers_to_the_gateway(home, tmp_path, env):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=["m1"]) as stub:
        path = tmp_path / "stub.yaml"
        path.write_text(fleet_text(base=stub.root,
                                   clients=("claude-code", "codex", "opencode", "llm")))
        r = taosync(home, path, env, "verify", "--desired")
        assert r.returncode == 0, r.stdout + r.stderr
        assert_no_leak(r, "verify")
        seen = [req for req in stub.requests if req.method == "POST"]
    assert seen
    for req in seen:
        assert req.headers.get("helicone-auth") == f"Bearer {HELICONE}", req.headers
        assert req.headers.get("cf-access-client-secret") == CF_SECRET
        assert req.headers.get("x-secret-file") == FILE_SECRET
        assert req.headers.get("x-team") == "platform"
        assert req.auth == "ok"


def test_reference_mode_writes_headers_resolved_and_says_so(home, tmp_path, env):
    """No client reads a gateway header from its environment in every place it sends one,
    so ``secrets: reference`` keeps only the key off disk; the headers are written resolved
    (0600) and the run says so once, at gateway.headers."""
    path = tmp_path / "ref.yaml"
    path.write_text(fleet_text(base="https://gw.example/api").replace(
        "default_route: fast\n", "default_route: fast\nsecrets: reference\n"))
    r = taosync(home, path, env, "apply", "--no-verify")
    assert r.returncode == 0, r.stderr
    assert (f"{path}:6:3: gateway.headers: warning: secrets: reference keeps the key off "
            "disk, not gateway.headers: CF-Access-Client-Secret, X-Secret-File are written "
            "resolved into each client's file (mode 0600)") in r.stderr, r.stderr
    assert_no_leak(r, "apply in reference mode")
    codex = home / ".codex/config.toml"
    assert CF_SECRET in codex.read_text() and TEST_KEY not in codex.read_text()
    assert stat.S_IMODE(codex.stat().st_mode) == 0o600


def test_a_rotated_header_secret_is_seen_by_the_no_op_fast_path(home, tmp_path, env):
    """The no-op answer (certificate) is replayed only while the header's secret is the
    one it was made with: a rotated ${env:…} header makes ``plan --check`` fail, and the
    new value reaches the file on the next apply. (Only a fleet whose render is cached is
    certified: one with a ${file:…} header, a literal header value or a URL password
    takes the full path every time, as one with a literal key does.)"""
    path = tmp_path / "refs.yaml"
    path.write_text(fleet_text(base="https://gw.example/api", clients=("codex", "claude-code"))
                    .replace(f"Bearer {HELICONE}", "Bearer ${env:HELICONE}")
                    .replace("    X-Secret-File: ${file:~/hdr.secret}\n", "")
                    .replace("    X-Team: platform\n", ""))  # a literal is never cached
    env = dict(env, HELICONE=HELICONE)
    assert taosync(home, path, env, "apply", "--no-verify").returncode == 0
    assert (home / ".local/state/taosync/certificate.json").exists()
    assert taosync(home, path, env, "plan", "--check").returncode == 0
    rotated = dict(env, CF_SECRET="cfAccessSecretROTATED-0000111122223333")
    r = taosync(home, path, rotated, "plan", "--check")
    assert r.returncode == 1, r.stdout + r.stderr
    assert_no_leak(r, "plan --check after a rotation")
    assert "ROTATED" not in r.stdout + r.stderr
    assert taosync(home, path, rotated, "apply", "--no-verify").returncode == 0
    assert "cfAccessSecretROTATED" in (home / ".codex/config.toml").read_text()


def test_a_cached_render_never_writes_a_header_that_turned_into_two(home, tmp_path, env):
    """The render cache resolves a header's ${env:…} again on each run: a value that now
    holds CR/LF misses the cache, and the full load refuses it at its line and column."""
    path = tmp_path / "refs.yaml"
    path.write_text(fleet_text(base="https://gw.example/api", clients=("codex", "claude-code"))
                    .replace(f"Bearer {HELICONE}", "Bearer ${env:HELICONE}")
                    .replace("    X-Secret-File: ${file:~/hdr.secret}\n", "")
                    .replace("    X-Team: platform\n", ""))
    env = dict(env, HELICONE=HELICONE)
    assert taosync(home, path, env, "apply", "--no-verify").returncode == 0
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert state["inputs"].get("patches"), "the render was not cached"
    before = snapshot(home)
    evil = dict(env, CF_SECRET="abc\r\nX-Injected: 1")
    for args in (("apply", "--no-verify"), ("plan",), ("status",)):
        r = taosync(home, path, evil, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "gateway.headers.CF-Access-Client-Secret: ${env:CF_SECRET} gives a value " \
               "holding the control character U+000D" in r.stderr, r.stderr
    assert snapshot(home) == before
