"""Password store references (issue 27): ``${keyring:SERVICE/USER}``, ``${op://…}`` and
``${pass:PATH}``, each read against a real backend — the ``keyring`` library with a real
file backend (keyrings.alt), ``pass`` with a throwaway GnuPG home and store, and a
stand-in ``op`` (tests/op_stand_in.py) that logs its calls — once per run, every
1Password reference in one call, values never in state or the render cache; handed to a
client that runs a command for its key under ``secrets: reference``; each failure a
located error, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY, binary_or_skip, keyring_or_skip, snapshot

OP_STAND_IN = Path(__file__).resolve().with_name("op_stand_in.py")
OTHER = "ghp_STOREDtoken0123456789abcdefXYZ"

FLEET = """\
version: 1
gateway:
  base_url: https://gw.example
  key: KEY
  headers:
    X-Team: HEADER
models:
  m1: {}
routes:
  fast: m1
default_route: fast
secrets: MODE
clients:
  claude-code: {}
  pi: {}
mcp_servers:
  github:
    command: npx
    args: [-y, server-github]
    env:
      GITHUB_TOKEN: MCP
  again:
    command: npx
    args: [-y, other]
    env:
      GITHUB_TOKEN: MCP
"""
#: line:column of gateway.key's value and of the first MCP value in FLEET
KEY_AT, MCP_AT = "4:8", "21:21"


def write_fleet(path: Path, key: str, *, mcp: str = "plain", header: str = "core",
                mode: str = "inline") -> Path:
    path.write_text(FLEET.replace("KEY", key).replace("MCP", mcp).replace("HEADER", header)
                    .replace("MODE", mode))
    return path


def state_dir(home: Path) -> Path:
    return home / ".local/state/taosync"


def refused(taosync, home: Path, fleet: Path, at: str = KEY_AT) -> str:
    """``apply`` of ``fleet`` is bad input located at ``at`` (line:column), with no
    traceback and nothing written; returns what it printed."""
    before = snapshot(home)
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 2, r.both
    assert f"fleet.yaml:{at}" in r.both, r.both
    assert "Traceback" not in r.both
    assert snapshot(home) == before
    return r.both


def nothing_stored(home: Path, *values: str) -> None:
    """No value is in any file of taosync's state (state, render cache, certificate)."""
    for path in state_dir(home).rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in values:
                assert value.encode() not in data, path


# -- the OS keyring, through a real file backend ------------------------------------------

def taosync_process(*args: str, input: str | None = None, env: dict | None = None):
    return subprocess.run([sys.executable, "-m", "taosync", *args], input=input,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_secret_set_stores_in_the_keyring_and_prints_the_reference(file_keyring, tmp_path,
                                                                   taosync, home):
    done = taosync_process("secret", "set", "gateway", "--service", "work",
                           input=TEST_KEY + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "${keyring:work/gateway}"
    assert TEST_KEY not in done.stdout + done.stderr
    import keyring

    assert keyring.get_password("work", "gateway") == TEST_KEY
    fleet = write_fleet(tmp_path / "fleet.yaml", "${keyring:work/gateway}")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    assert TEST_KEY in (home / ".claude/settings.json").read_text()  # inline mode
    assert TEST_KEY not in r.both
    nothing_stored(home, TEST_KEY)
    # a no-op apply on the fast path resolves it again and finds nothing to do
    again = taosync_process("--home", str(home), "-c", str(fleet), "apply", "--no-verify")
    assert again.returncode == 0, again.stderr
    assert "nothing to do" in again.stdout + again.stderr


def test_secret_get_refuses_a_terminal_and_prints_to_a_pipe(file_keyring):
    file_keyring("taosync", "gw", TEST_KEY)
    piped = taosync_process("secret", "get", "${keyring:taosync/gw}")
    assert piped.returncode == 0 and piped.stdout == TEST_KEY + "\n", piped.stderr
    import pty

    leader, follower = pty.openpty()
    try:
        tty = subprocess.run([sys.executable, "-m", "taosync", "secret", "get",
                              "${keyring:taosync/gw}"], stdout=follower, stderr=subprocess.PIPE,
                             text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
        os.close(follower)
        shown = b""
        try:
            while chunk := os.read(leader, 4096):
                shown += chunk
        except OSError:
            pass
    finally:
        os.close(leader)
    assert tty.returncode == 2, tty.stderr
    assert "terminal" in tty.stderr and TEST_KEY.encode() not in shown
    assert TEST_KEY not in tty.stderr


def test_secret_set_with_nothing_to_store_is_bad_input(file_keyring):
    done = taosync_process("secret", "set", "gw", input="\n")
    assert done.returncode == 2 and "empty" in done.stderr and "Traceback" not in done.stderr


def test_keyring_missing_item_is_located_and_nothing_is_written(file_keyring, tmp_path,
                                                                taosync, home):
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml",
                                              "${keyring:taosync/absent}"))
    assert "no password for service 'taosync', user 'absent'" in said
    assert "taosync secret set absent" in said


def test_keyring_reference_handed_to_claude_and_pi_as_a_command(file_keyring, tmp_path,
                                                                taosync, home):
    file_keyring("taosync", "gw", TEST_KEY)
    fleet = write_fleet(tmp_path / "fleet.yaml", "${keyring:taosync/gw}", mode="reference")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    helper = json.loads((home / ".claude/settings.json").read_text())["apiKeyHelper"]
    assert helper == f"{sys.executable} -m taosync secret get '${{keyring:taosync/gw}}'"
    models = json.loads((home / ".pi/agent/models.json").read_text())
    assert models["providers"]["taotoken"]["apiKey"] == "!" + helper
    for rel in (".claude/settings.json", ".pi/agent/models.json"):
        assert TEST_KEY not in (home / rel).read_text()
    # the command prints the key in the client's shell
    ran = subprocess.run(["/bin/sh", "-c", helper], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.stdout.strip() == TEST_KEY, ran.stderr
    # status reads the command back as the reference: in sync
    status = taosync("status", config=fleet)
    assert status.rc == 0, status.both


def test_keyring_not_installed_is_located_with_the_install_line(tmp_path, home):
    """A ``keyring`` that cannot be imported (a module on PYTHONPATH that raises what a
    missing one does): the install line, exit 2, nothing written."""
    shadow = tmp_path / "shadow" / "keyring"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'keyring'\")\n")
    fleet = write_fleet(tmp_path / "fleet.yaml", "${keyring:taosync/gw}")
    before = snapshot(home)
    done = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), "apply", "--no-verify"], capture_output=True, text=True,
                          timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path / 'shadow'}:{ROOT}"})
    assert done.returncode == 2, done.stderr
    assert f"fleet.yaml:{KEY_AT}" in done.stderr
    assert "taosync[keyring]" in done.stderr and "Traceback" not in done.stderr
    assert snapshot(home) == before


def test_locked_keyring_is_located_and_says_how_to_unlock(tmp_path, home):
    """A backend that is locked (tests/locked_keyring.py raises the library's own
    KeyringLocked, as Secret Service does for a locked collection)."""
    keyring_or_skip()
    fleet = write_fleet(tmp_path / "fleet.yaml", "${keyring:taosync/gw}")
    before = snapshot(home)
    done = taosync_process("--home", str(home), "-c", str(fleet), "apply", "--no-verify",
                           env={"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}",
                                "PYTHON_KEYRING_BACKEND": "locked_keyring.LockedKeyring"})
    assert done.returncode == 2, done.stderr
    assert f"fleet.yaml:{KEY_AT}" in done.stderr
    assert "the keyring is locked" in done.stderr and "unlock" in done.stderr
    assert "sk-locked" not in done.stderr  # the backend's own message, redacted
    assert "Traceback" not in done.stderr
    assert snapshot(home) == before
    # doctor: the keyring is there, and locked
    doctor = taosync_process("--home", str(home), "-c", str(fleet), "doctor",
                             env={"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}",
                                  "PYTHON_KEYRING_BACKEND": "locked_keyring.LockedKeyring"})
    line = next(line for line in doctor.stdout.splitlines() if "${keyring:taosync/gw}" in line
                and line.split()[1] == "secrets")
    assert line.split()[0] == "error" and "locked" in line and "unlock" in line, line
    assert doctor.returncode == 1 and "sk-locked" not in doctor.stdout + doctor.stderr


# -- 1Password, through a stand-in op that logs its calls -------------------------------------

@pytest.fixture
def op_vault(tmp_path, monkeypatch):
    """The stand-in ``op`` first on PATH, its vault and its call log; returns
    (vault dict to fill, a function giving the calls logged so far)."""
    bin_dir = tmp_path / "op-bin"
    bin_dir.mkdir()
    op = bin_dir / "op"
    op.write_text(f"#!/bin/sh\nexec {sys.executable} {OP_STAND_IN} \"$@\"\n")
    op.chmod(0o755)
    vault: dict[str, str] = {}
    vault_file, log = tmp_path / "op-vault.json", tmp_path / "op-calls.jsonl"
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("OP_STAND_IN_VAULT", str(vault_file))
    monkeypatch.setenv("OP_STAND_IN_LOG", str(log))
    monkeypatch.delenv("OP_SERVICE_ACCOUNT_TOKEN", raising=False)

    def calls() -> list[list[str]]:
        vault_file.write_text(json.dumps(vault))
        return [json.loads(line) for line in log.read_text().splitlines()]

    def save() -> None:
        vault_file.write_text(json.dumps(vault))

    vault_file.write_text("{}")
    return vault, calls, save


def test_every_1password_reference_of_a_run_is_read_in_one_call(op_vault, tmp_path,
                                                                 taosync, home):
    vault, calls, save = op_vault
    vault.update({"op://Private/gateway/credential": TEST_KEY,
                  "op://Private/github/token": OTHER,
                  "op://Private/team/header": "core-team"})
    save()
    fleet = write_fleet(tmp_path / "fleet.yaml", "${op://Private/gateway/credential}",
                        mcp="${op://Private/github/token}",
                        header="${op://Private/team/header}")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    assert calls() == [["inject"]]  # key, two MCP values (one reference), a header: one call
    mcp = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert mcp["github"]["env"]["GITHUB_TOKEN"] == OTHER == mcp["again"]["env"]["GITHUB_TOKEN"]
    assert TEST_KEY in (home / ".claude/settings.json").read_text()
    nothing_stored(home, TEST_KEY, OTHER)
    assert TEST_KEY not in r.both and OTHER not in r.both
    status = taosync("status", config=fleet)
    assert status.rc == 0, status.both
    assert calls() == [["inject"], ["inject"]]  # one more run, one more call
    # a no-op apply in a process of its own (the fast path checks the certificate's
    # inputs, the key and the MCP secret among them): one call again
    again = taosync_process("--home", str(home), "-c", str(fleet), "apply", "--no-verify")
    assert again.returncode == 0 and "nothing to do" in again.stdout + again.stderr, \
        again.stderr
    assert calls() == [["inject"]] * 3


def test_1password_reference_handed_to_claude_and_pi_as_op_read(op_vault, tmp_path,
                                                                taosync, home):
    vault, calls, save = op_vault
    vault["op://Private/gateway/credential"] = TEST_KEY
    save()
    fleet = write_fleet(tmp_path / "fleet.yaml", "${op://Private/gateway/credential}",
                        mode="reference")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    helper = json.loads((home / ".claude/settings.json").read_text())["apiKeyHelper"]
    assert helper == "op read op://Private/gateway/credential"
    models = json.loads((home / ".pi/agent/models.json").read_text())
    assert models["providers"]["taotoken"]["apiKey"] == "!" + helper
    assert TEST_KEY not in json.dumps(snapshot(home)) and not any(
        TEST_KEY.encode() in p.read_bytes() for p in home.rglob("*") if p.is_file())
    # status reads the command back as the reference: through the run's one call, not
    # by running `op read` once per client
    before = len(calls())
    status = taosync("status", config=fleet)
    assert status.rc == 0, status.both
    assert calls()[before:] == [["inject"]]
    # the command the clients run prints the key
    ran = subprocess.run(["/bin/sh", "-c", helper], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == TEST_KEY


def test_import_reads_a_store_command_back_as_its_reference(taosync, home):
    """An apiKeyHelper taosync wrote for a store is proposed as that store's reference."""
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(json.dumps({
        "env": {"ANTHROPIC_BASE_URL": "https://gw.example", "ANTHROPIC_MODEL": "gw-main"},
        "apiKeyHelper": "op read op://Private/gateway/credential"}))
    r = taosync("import")
    assert 'key: "${op://Private/gateway/credential}"' in r.out, r.both
    assert "${shell:" not in r.out


def test_1password_sign_in_without_a_terminal_is_located(op_vault, tmp_path, taosync, home,
                                                        monkeypatch):
    monkeypatch.setenv("OP_STAND_IN_SIGNED_OUT", "1")
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml",
                                              "${op://Private/gateway/credential}"))
    assert "sign in" in said and "op signin" in said
    assert len(op_vault[1]()) == 1


def test_1password_missing_item_is_located_at_its_reference(op_vault, tmp_path, taosync,
                                                             home):
    vault, calls, save = op_vault
    vault["op://Private/gateway/credential"] = TEST_KEY
    save()
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml",
                                              "${op://Private/gateway/credential}",
                                              mcp="${op://Private/nothing/token}"), MCP_AT)
    assert "could not find item nothing in vault Private" in said and TEST_KEY not in said
    # the key, read in the same failed call, says so where it stands
    assert f"fleet.yaml:{KEY_AT}" in said and "one 1Password call failed on" in said
    assert calls() == [["inject"]]


def test_1password_message_is_redacted(op_vault, tmp_path, taosync, home):
    """A store's own message is shown with token-looking values hidden (an item named
    after a key is still a key on screen)."""
    leaked = "sk-proj-LEAKEDinITEMname0123456789"
    fleet = write_fleet(tmp_path / "fleet.yaml", f"${{op://Private/{leaked}/credential}}")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 2, r.both
    assert "could not find item" in r.both and leaked not in r.both


def test_op_not_installed_says_how_to_install(tmp_path, taosync, home, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml",
                                              "${op://Private/gateway/credential}"))
    assert "`op` is not installed" in said and "developer.1password.com" in said


def test_1password_sdk_with_a_service_account():
    """The SDK path (``OP_SERVICE_ACCOUNT_TOKEN``): runs only where a service account and a
    reference it can read are configured (TAOSYNC_TEST_OP_REFERENCE), as in a CI with
    1Password; nowhere else can it prove anything."""
    token, ref = os.environ.get("OP_SERVICE_ACCOUNT_TOKEN"), \
        os.environ.get("TAOSYNC_TEST_OP_REFERENCE")
    if not (token and ref):
        pytest.skip("no 1Password service account configured (set OP_SERVICE_ACCOUNT_TOKEN "
                    "and TAOSYNC_TEST_OP_REFERENCE=op://vault/item/field)")
    pytest.importorskip("onepassword", reason="onepassword-sdk is not installed "
                        "(pip install 'taosync[1password]')")
    from taosync.fleet import stores
    from taosync.fleet.secrets import parse_reference, resolve

    stores.forget()
    secret = resolve(parse_reference("${" + ref + "}"), environ=os.environ)
    assert secret.reveal() and secret.source == "${" + ref + "}"


# -- pass, with a throwaway GnuPG home and store ------------------------------------------------

@pytest.fixture
def pass_store(tmp_path, monkeypatch):
    """A real password store: a new GnuPG home with a key without passphrase, ``pass
    init`` with it, PASSWORD_STORE_DIR and GNUPGHOME set; returns an inserter."""
    pass_bin = binary_or_skip("TAOSYNC_TEST_PASS_BIN", "pass")
    binary_or_skip("TAOSYNC_TEST_GPG_BIN", "gpg")
    gnupg = Path(tempfile.mkdtemp(prefix="gpg"))  # short: gpg-agent's socket path is bounded
    gnupg.chmod(0o700)
    store = tmp_path / "password-store"
    env = {**os.environ, "GNUPGHOME": str(gnupg), "PASSWORD_STORE_DIR": str(store)}
    subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key",
                    "taosync test <test@taosync.invalid>", "default", "default", "never"],
                   env=env, check=True, capture_output=True, timeout=120)
    subprocess.run([pass_bin, "init", "test@taosync.invalid"], env=env, check=True,
                   capture_output=True, timeout=60)
    monkeypatch.setenv("GNUPGHOME", str(gnupg))
    monkeypatch.setenv("PASSWORD_STORE_DIR", str(store))

    def insert(path: str, text: str) -> None:
        subprocess.run([pass_bin, "insert", "--multiline", path], input=text, env=env,
                       check=True, capture_output=True, text=True, timeout=60)

    yield insert
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, capture_output=True)
    shutil.rmtree(gnupg, ignore_errors=True)


def test_real_pass_reference_reads_the_first_line(pass_store, tmp_path, taosync, home):
    pass_store("ai/gateway", f"{TEST_KEY}\nuser: me\nurl: https://gw.example\n")
    pass_store("ai/github", f"{OTHER}\n")
    fleet = write_fleet(tmp_path / "fleet.yaml", "${pass:ai/gateway}", mcp="${pass:ai/github}")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    settings = json.loads((home / ".claude/settings.json").read_text())
    assert settings["env"]["ANTHROPIC_AUTH_TOKEN"] == TEST_KEY
    assert json.loads((home / ".claude.json").read_text()
                      )["mcpServers"]["github"]["env"]["GITHUB_TOKEN"] == OTHER
    nothing_stored(home, TEST_KEY, OTHER)
    assert TEST_KEY not in r.both


def test_real_pass_reference_handed_to_claude_and_pi_as_pass_show(pass_store, tmp_path,
                                                                   taosync, home):
    pass_store("ai/gateway", f"{TEST_KEY}\nuser: me\n")
    fleet = write_fleet(tmp_path / "fleet.yaml", "${pass:ai/gateway}", mode="reference")
    r = taosync("apply", "--no-verify", config=fleet)
    assert r.rc == 0, r.both
    helper = json.loads((home / ".claude/settings.json").read_text())["apiKeyHelper"]
    assert helper == "pass show ai/gateway | head -n 1"
    assert json.loads((home / ".pi/agent/models.json").read_text()
                      )["providers"]["taotoken"]["apiKey"] == "!" + helper
    assert not any(TEST_KEY.encode() in p.read_bytes() for p in home.rglob("*") if p.is_file())
    ran = subprocess.run(["/bin/sh", "-c", helper], capture_output=True, text=True, timeout=60)
    assert ran.stdout == TEST_KEY + "\n", ran.stderr
    status = taosync("status", config=fleet)
    assert status.rc == 0, status.both


def test_real_pass_missing_entry_is_located(pass_store, tmp_path, taosync, home):
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml", "${pass:ai/absent}"))
    assert "ai/absent is not in the password store" in said and "pass insert" in said


def test_real_pass_without_a_store_says_pass_init(tmp_path, taosync, home, monkeypatch):
    binary_or_skip("TAOSYNC_TEST_PASS_BIN", "pass")
    monkeypatch.setenv("PASSWORD_STORE_DIR", str(tmp_path / "no-store"))
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml", "${pass:ai/gateway}"))
    assert "no password store at" in said and "pass init" in said


# -- doctor --------------------------------------------------------------------------------------

def doctor_lines(taosync, fleet: Path) -> tuple[int, dict[str, str]]:
    """doctor's exit code and its ``secrets`` lines: reference → the whole line."""
    r = taosync("doctor", config=fleet)
    lines = {line.split()[2]: line for line in r.out.splitlines()
             if len(line.split()) > 2 and line.split()[1] == "secrets"}
    return r.rc, lines


def test_doctor_names_the_store_each_reference_needs_and_the_fix(op_vault, file_keyring,
                                                                tmp_path, taosync, home,
                                                                monkeypatch):
    vault, calls, save = op_vault
    vault["op://Private/gateway/credential"] = TEST_KEY
    save()
    file_keyring("taosync", "github", OTHER)
    monkeypatch.setenv("PASSWORD_STORE_DIR", str(tmp_path / "no-store"))
    fleet = write_fleet(tmp_path / "fleet.yaml", "${op://Private/gateway/credential}",
                        mcp="${keyring:taosync/github}", header="${pass:team/header}")
    rc, lines = doctor_lines(taosync, fleet)
    assert rc == 1
    op = lines["${op://Private/gateway/credential}"]
    assert op.split()[0] == "ok" and "needs 1Password" in op
    ring = lines["${keyring:taosync/github}"]
    assert ring.split()[0] == "ok" and "PlaintextKeyring" in ring
    passed = lines["${pass:team/header}"]
    assert passed.split()[0] == "error" and "pass init" in passed, passed
    # no op on PATH: the install line
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}:{os.path.dirname(shutil.which('pass') or '/usr/bin/pass')}")
    rc, lines = doctor_lines(taosync, fleet)
    op = lines["${op://Private/gateway/credential}"]
    assert op.split()[0] == "error" and "`op` is not installed" in op and rc == 1


def test_an_empty_1password_field_is_located(op_vault, tmp_path, taosync, home):
    vault, calls, save = op_vault
    vault.update({"op://Private/gateway/credential": TEST_KEY, "op://Private/github/token": ""})
    save()
    said = refused(taosync, home, write_fleet(tmp_path / "fleet.yaml",
                                              "${op://Private/gateway/credential}",
                                              mcp="${op://Private/github/token}"), MCP_AT)
    assert "empty value" in said and TEST_KEY not in said
