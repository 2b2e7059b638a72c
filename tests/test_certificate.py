"""One truth across commands (issue 22): the no-op fast path replays only what the full
path certified, so whatever one command leaves, the next one reads right — through real
``python -m taosync`` processes, the only place the fast path runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TEST_KEY, snapshot
from test_routing_failover import BACKUP, MODELS, PREFERRED, BALANCED_FILES, choosing_fleet, \
    files_naming

STATE = ".local/state/taosync"


def cli(home: Path, fleet: Path, *args: str, env: dict | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """A real process, as a shell runs taosync (the fast path answers only there)."""
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], capture_output=True, text=True,
                          env=full_env, timeout=120, cwd=cwd or ROOT)


def certified(home: Path) -> dict:
    return json.loads((home / STATE / "certificate.json").read_text())


# -- a route moved by verify ------------------------------------------------------------

def test_a_route_verify_moved_is_seen_by_apply_status_and_plan_from_a_shell(home, fleet_file):
    """verify's history moves a candidate route (the preferred model fails): the next
    apply, status and plan --check from a shell see the move (they said "nothing to do"
    when the fast path had no route choice), and apply writes the backup model."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert cli(home, fleet_file, "apply").returncode == 0
        assert files_naming(home, PREFERRED) >= BALANCED_FILES
        again = cli(home, fleet_file, "apply")  # the certified no-op
        assert again.returncode == 0 and again.stdout.startswith("nothing to do"), again

        stub.add_fault(f"server_error@{PREFERRED}")
        verified = cli(home, fleet_file, "verify")
        assert verified.returncode == 1, verified.stdout + verified.stderr

        check = cli(home, fleet_file, "plan", "--check")
        assert check.returncode == 1, check.stdout + check.stderr
        assert f"route balanced → {BACKUP}" in check.stdout
        status = cli(home, fleet_file, "status")
        assert status.returncode == 1 and "nothing to do" not in status.stdout, status.stdout
        applied = cli(home, fleet_file, "apply", "--no-verify")
        assert applied.returncode == 0, applied.stderr
        assert "nothing to do" not in applied.stdout
        on_backup = files_naming(home, BACKUP)
        assert on_backup >= BALANCED_FILES, on_backup

        # and back: the preferred one recovers; verify says so; apply moves back
        stub.clear_faults()
        assert cli(home, fleet_file, "verify").returncode == 0
        assert cli(home, fleet_file, "plan", "--check").returncode == 1
        assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
        assert files_naming(home, PREFERRED) >= BALANCED_FILES


def test_a_route_choice_certified_from_the_clock_expires_with_it(home, fleet_file):
    """A choice read from the probe history hangs on the clock (a probe ages past
    max_age): the certificate says until when it holds, and past that it is not used."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert cli(home, fleet_file, "apply").returncode == 0  # verifies: history now
        assert cli(home, fleet_file, "apply").returncode == 0
    cert = certified(home)
    assert cert["until"] is not None and "file:" + str(home / STATE / "history.jsonl") \
        in cert["inputs"]
    path = home / STATE / "certificate.json"
    cert["until"] = 1.0  # as if that moment had passed
    path.write_text(json.dumps(cert))
    from taosync.fastpath import answer

    assert answer(["--home", str(home), "-c", str(fleet_file), "status"]) is None


# -- an include named by a variable -----------------------------------------------------

TEAM_BASE = """\
version: 1
gateway:
  base_url: http://127.0.0.1:9/api
  key: ${{env:TAOTOKEN_API_KEY}}
models:
  gpt-4o-mini: {{}}
  {model}: {{}}
routes:
  fast: gpt-4o-mini
  balanced: {model}
default_route: balanced
"""

LOCAL_FLEET = """\
include: [$TEAM/base.yaml]
clients:
  claude-code: {model: balanced}
"""


def test_an_include_path_variable_is_an_input(tmp_path, home):
    """``include: [$TEAM/base.yaml]``: pointing $TEAM at another team's fleet changes
    what plan, status and apply say — the fast path's answer and the full path's."""
    for team, model in (("blue", "claude-sonnet-4-20250514"), ("red", "gpt-4.1")):
        (tmp_path / team).mkdir()
        (tmp_path / team / "base.yaml").write_text(TEAM_BASE.format(model=model))
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(LOCAL_FLEET)
    blue, red = {"TEAM": str(tmp_path / "blue")}, {"TEAM": str(tmp_path / "red")}
    assert cli(home, fleet, "apply", "--no-verify", env=blue).returncode == 0
    assert cli(home, fleet, "plan", "--check", env=blue).returncode == 0
    settings = home / ".claude/settings.json"
    assert "claude-sonnet-4-20250514" in settings.read_text()

    check = cli(home, fleet, "plan", "--check", env=red)
    assert check.returncode == 1 and "nothing to do" not in check.stdout, check.stdout
    assert cli(home, fleet, "status", env=red).returncode == 1
    assert cli(home, fleet, "apply", "--no-verify", env=red).returncode == 0
    assert "gpt-4.1" in json.loads(settings.read_text())["env"]["ANTHROPIC_MODEL"]
    assert cli(home, fleet, "plan", "--check", env=red).returncode == 0


def test_the_full_path_renders_again_when_an_include_variable_moves(tmp_path, home, capsys):
    """The render cache (in-process: the full path itself) counts $TEAM too."""
    from taosync.cli import run

    for team, model in (("blue", "claude-sonnet-4-20250514"), ("red", "gpt-4.1")):
        (tmp_path / team).mkdir()
        (tmp_path / team / "base.yaml").write_text(TEAM_BASE.format(model=model))
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(LOCAL_FLEET)
    argv = ["--home", str(home), "-c", str(fleet)]
    os.environ["TEAM"] = str(tmp_path / "blue")
    try:
        assert run([*argv, "apply", "--no-verify"]) == 0
        os.environ["TEAM"] = str(tmp_path / "red")
        capsys.readouterr()
        assert run([*argv, "plan", "--check"]) == 1
        assert "nothing to do" not in capsys.readouterr().out
    finally:
        del os.environ["TEAM"]


# -- a damaged state or certificate -----------------------------------------------------

@pytest.fixture
def applied(home, fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace("https://taotoken.net/api",
                                                         "http://127.0.0.1:9/api"))
    assert cli(home, fleet_file, "apply", "--no-verify").returncode == 0
    return home


@pytest.mark.parametrize("text", ["{", "", "{} x", "[1,]", "\x00", '{"version": 1,'])
@pytest.mark.parametrize("command", [("status",), ("plan", "--check"), ("apply",)])
def test_a_damaged_state_json_is_reported_not_a_traceback(applied, fleet_file, text, command):
    """The fast path crashed with a SystemError traceback on Python 3.11 (the C JSON
    scanner needs json.decoder to report an error); now the full path reports it."""
    (applied / STATE / "state.json").write_text(text)
    r = cli(applied, fleet_file, *command)
    assert "Traceback" not in r.stderr and "SystemError" not in r.stderr, r.stderr
    assert r.returncode == 2, r.stderr
    assert "state.json is damaged" in r.stderr and "move it away" in r.stderr


@pytest.mark.parametrize("text", ["{", "", '{"format": 1', "[1,]", "\x00", '{"answers": 7}'])
def test_a_damaged_certificate_is_only_a_miss(applied, fleet_file, text):
    (applied / STATE / "certificate.json").write_text(text)
    r = cli(applied, fleet_file, "status")
    assert r.returncode == 0 and r.stdout.startswith("nothing to do"), r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_malformed_json_never_raises_a_system_error():
    """certificate.loads on the C scanner alone, in a process that never imported json."""
    code = ("from taosync.engine.certificate import loads\n"
            "import sys\n"
            "assert 'json' not in sys.modules\n"
            "for text in ['{', '', '[1,]', '{\"a\": }', 'nul']:\n"
            "    try:\n"
            "        loads(text)\n"
            "    except ValueError:\n"
            "        continue\n"
            "    raise SystemExit('accepted ' + text)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert r.returncode == 0, r.stderr


# -- read-only commands over an interrupted apply ----------------------------------------

def test_read_only_commands_report_an_interrupted_apply_and_write_nothing(applied,
                                                                          fleet_file):
    """apply --dry-run and plan/status (with or without --no-key) are documented as never
    writing: over a journal they say that an apply was interrupted and what recovers it,
    and leave every file — client files, state, journal — as it is."""
    journal = applied / STATE / "journal.json"
    backup = applied / STATE / "backups" / "9"
    backup.mkdir(parents=True)
    (backup / "000-config.toml").write_text('model = "from-the-backup"\n')
    codex = applied / ".codex/config.toml"
    journal.write_text(json.dumps({"apply_id": 9, "backup_dir": "backups/9", "files": [
        {"path": str(codex), "real_path": str(codex), "backup": "000-config.toml",
         "mode": 0o600}]}))
    before = snapshot(applied)
    for args in (("apply", "--dry-run"), ("apply", "--dry-run", "--no-key"),
                 ("plan",), ("plan", "--no-key"), ("plan", "--check"),
                 ("status",), ("status", "--no-key")):
        r = cli(applied, fleet_file, *args, env={"TAOTOKEN_API_KEY": "" if "--no-key" in args
                                                  else TEST_KEY})
        assert "Traceback" not in r.stderr, (args, r.stderr)
        assert "an apply was interrupted" in r.stderr and "journal.json" in r.stderr, args
        assert f"`taosync --home {applied} -c {fleet_file} apply`" in r.stderr, (args, r.stderr)
        assert "recovered" not in r.stderr, (args, r.stderr)
        assert snapshot(applied) == before, f"{args} wrote something"

    r = cli(applied, fleet_file, "apply", "--no-verify", "--yes")  # the command that recovers
    assert r.returncode == 0 and "recovered from an interrupted apply" in r.stderr, r.stderr
    assert not journal.exists()


# -- what the certificate holds ---------------------------------------------------------

def test_the_certificate_holds_no_secret_and_every_value_is_hashed(tmp_path, home, fleet_file):
    """The key, an MCP secret and every environment value appear only as keyed hashes."""
    token = "ghp_" + "M" * 36
    text = fleet_file.read_text().replace("https://taotoken.net/api", "http://127.0.0.1:9/api")
    if "mcp_servers:" not in text:
        text += ("mcp_servers:\n  github:\n    command: npx\n"
                 "    env: {GITHUB_TOKEN: '${env:MCP_GH_TOKEN}'}\n")
    fleet_file.write_text(text)
    env = {"MCP_GH_TOKEN": token}
    assert cli(home, fleet_file, "apply", "--no-verify", env=env).returncode == 0
    assert cli(home, fleet_file, "apply", env=env).stdout.startswith("nothing to do")
    raw = (home / STATE / "certificate.json").read_text()
    assert TEST_KEY not in raw and token not in raw
    state = (home / STATE / "state.json").read_text()
    assert TEST_KEY not in state and token not in state
    cert = json.loads(raw)
    for name, value in cert["inputs"].items():
        if name.startswith("env:") and value is not None:
            assert len(value) == 32 and int(value, 16) >= 0, name  # a keyed hash
    assert oct((home / STATE / "certificate.json").stat().st_mode & 0o777) == "0o600"


def test_a_client_file_edited_after_the_apply_is_not_in_sync(applied, fleet_file):
    """A client file's bytes are an input the full path read: an edit is seen."""
    path = applied / ".claude/settings.json"
    data = json.loads(path.read_text())
    data["env"]["ANTHROPIC_MODEL"] = "my-own"
    path.write_text(json.dumps(data, indent=2))
    r = cli(applied, fleet_file, "status")
    assert r.returncode == 1 and "drift" in r.stdout, r.stdout


def test_an_environment_variable_a_client_looks_at_is_an_input(applied, fleet_file):
    r = cli(applied, fleet_file, "plan", "--check",
            env={"CODEX_HOME": str(applied / "codex-elsewhere")})
    assert r.returncode == 1 and "nothing to do" not in r.stdout, r.stdout


def test_every_form_is_certified_after_an_apply(applied, fleet_file):
    cert = certified(applied)
    assert set(cert["answers"]) == {
        "apply", "apply -q", "apply --no-verify", "apply --no-verify -q", "plan", "plan -q",
        "plan --check", "plan --check -q", "status", "status -q"}


def test_a_read_around_the_system_leaves_a_form_uncertified(applied, fleet_file):
    """The dotfiles guard asks git (a process, not a read through the System) when a
    target holding a secret is in a work tree: such an answer is not certified, and
    the full path answers it every time."""
    (applied / ".git").mkdir()
    r = cli(applied, fleet_file, "apply", "--no-verify")
    assert r.returncode == 0
    path = applied / STATE / "certificate.json"
    assert not path.exists() or "plan" not in certified(applied)["answers"]
    again = cli(applied, fleet_file, "plan")
    assert "is in a git work tree" in again.stderr


def test_a_key_command_is_run_again_and_its_output_is_an_input(home, fleet_file, capsys,
                                                                monkeypatch):
    """``${cmd:…}``: the certificate holds the keyed hash of what the command printed;
    the fast path runs it again (through fleet.secrets) and answers only while it agrees."""
    from taosync.cli import run
    from taosync.fastpath import answer

    text = fleet_file.read_text().replace("https://taotoken.net/api", "http://127.0.0.1:9/api")
    fleet_file.write_text(text.replace("${env:TAOTOKEN_API_KEY}",
                                       "${shell:printf %s \"$MY_KEY_SOURCE\"}"))
    monkeypatch.setenv("MY_KEY_SOURCE", TEST_KEY)
    argv = ["--home", str(home), "-c", str(fleet_file)]
    assert run([*argv, "apply", "--no-verify"]) == 0
    cert = certified(home)
    assert any(k.startswith("ran:${shell:") for k in cert["inputs"]), list(cert["inputs"])
    assert TEST_KEY not in json.dumps(cert)
    capsys.readouterr()
    assert answer([*argv, "status"]) == 0
    assert capsys.readouterr().out.startswith("nothing to do")
    monkeypatch.setenv("MY_KEY_SOURCE", "sk-rotated-0000000000000000")
    assert answer([*argv, "status"]) is None  # the key moved: the full path answers
    assert run([*argv, "status"]) == 1


def test_certifying_never_waits_at_a_prompt(applied, fleet_file):
    """A hand edit left in place (the user skipped the file at apply's prompt): the
    certifying runs of apply would ask again on a terminal; they must not wait for one
    — run under a pseudo-terminal, the apply finishes, and apply is left uncertified."""
    import pty

    path = applied / ".claude/settings.json"
    data = json.loads(path.read_text())
    data["env"]["ANTHROPIC_MODEL"] = "my-own"
    path.write_text(json.dumps(data, indent=2))
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin and stdout a terminal; answers "s" (skip) once
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "taosync", "--home", str(applied),
                                  "-c", str(fleet_file), "apply", "--no-verify"])
    import select
    import time

    seen, deadline, answered = b"", time.monotonic() + 60, False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if not answered and b"[q]uit" in seen:
                os.write(fd, b"s\n")
                answered = True
    else:
        os.kill(pid, 9)
        pytest.fail(f"apply waited: {seen.decode(errors='replace')}")
    _, status = os.waitpid(pid, 0)
    assert answered and os.WEXITSTATUS(status) == 0, seen.decode(errors="replace")
    assert json.loads(path.read_text())["env"]["ANTHROPIC_MODEL"] == "my-own"
    cert = certified(applied)
    assert "apply" not in cert["answers"] and "status" in cert["answers"]


def test_a_variable_a_client_looks_at_is_never_kept_in_plain_text(home, fleet_file, monkeypatch):
    """Codex looks at CODEX_API_KEY (a key of the user's own): the render cache kept every
    variable a client looked at as it was, so that key landed in state.json."""
    from taosync.cli import run

    own = "sk-users-own-codex-key-0123456789"
    monkeypatch.setenv("CODEX_API_KEY", own)
    fleet_file.write_text(fleet_file.read_text().replace("https://taotoken.net/api",
                                                         "http://127.0.0.1:9/api"))
    assert run(["--home", str(home), "-c", str(fleet_file), "apply", "--no-verify"]) in (0, 1)
    for path in (home / STATE).rglob("*.json"):
        assert own not in path.read_text(), path.name


def test_the_full_path_checks_its_certificate_through_the_system(applied, fleet_file):
    """After an apply, certify first asks whether the certificate on disk still holds:
    it reads the certificate and measures every input through the System in effect, as
    the runs it certified read them (root on a user's home: with the owner's rights)."""
    from taosync.engine import certificate
    from taosync.engine.system import RealSystem, using
    from taosync.settings import Settings

    class Seeing(RealSystem):
        def __init__(self):
            super().__init__()
            self.seen: set[str] = set()

        def read_bytes(self, path, *args):
            self.seen.add(f"file:{path}")
            return super().read_bytes(path, *args)

        def kind(self, path):
            self.seen.add(f"kind:{path}")
            return super().kind(path)

    cert = certified(applied)
    settings = Settings(config=fleet_file, home=applied)
    with using(Seeing()) as system:
        assert certificate.certify(settings, run=None)  # still holds: nothing run again
    read = {k for k in cert["inputs"] if k.startswith(("file:", "kind:"))}
    assert read and read <= system.seen
    assert f"file:{applied / STATE / certificate.FILE}" in system.seen
