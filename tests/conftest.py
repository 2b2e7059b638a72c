"""Shared test fixtures: a sandbox home, the example fleet, and an in-process CLI runner.

Everything runs against real files in a temporary home (``--home``); nothing outside
it is read or written.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the fleet the suite runs on: its own copy of the example (tests/fixtures/fleet/example.yaml),
#: so tests may pin its lines, counts and clients while the shipped one changes freely
EXAMPLE_FLEET = ROOT / "tests" / "fixtures" / "fleet" / "example.yaml"
#: the example fleet.yaml shipped at the repo root (README's quick start applies it): tests
#: of it derive what they count from it and from the registry (tests/test_example_fleet.py)
SHIPPED_EXAMPLE = ROOT / "fleet.yaml"
TEST_KEY = "sk-test-SECRETKEY-0123456789abcdef"


def pytest_configure(config):
    """Temporary homes go to memory (/dev/shm) when the user has not said where: every
    apply fsyncs each file and directory it writes, and on a disk those waits were
    ~7 s of the serial suite. The files are as real; only the disk is faster. TMPDIR
    (or --basetemp) set by the user wins."""
    import tempfile

    shm = Path("/dev/shm")
    if (config.option.basetemp or os.environ.get("TMPDIR")
            or not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK))):
        return
    free = shutil.disk_usage(shm).free
    if free > 512 * 2**20:  # the suite writes a few MiB; leave a small /dev/shm alone
        os.environ["TMPDIR"] = str(shm)  # and every process a test starts
        tempfile.tempdir = None


#: ``required`` (CI's real-client step): a real client's missing binary fails its test
REAL_CLIENTS_VAR = "TAOSYNC_REAL_CLIENTS"
#: binaries the installer found not installable here (comma-separated): skipped even then
UNAVAILABLE_VAR = "TAOSYNC_REAL_CLIENTS_UNAVAILABLE"


def real_clients_required() -> bool:
    return os.environ.get(REAL_CLIENTS_VAR) == "required"


def not_installable(name: str) -> bool:
    """Whether ``python -m taosync.dev install-clients`` reported ``name`` not installable
    here (its env file names it)."""
    return name in os.environ.get(UNAVAILABLE_VAR, "").split(",")


def binary(var: str, name: str) -> str | None:
    """A real client's executable: ``$var`` (e.g. TAOSYNC_TEST_GEMINI_BIN), else ``name`` on
    ``PATH``; None when neither (for ``pytest.mark.skipif``). With
    ``TAOSYNC_REAL_CLIENTS=required`` a missing one fails instead — the test, or the
    collection of a module that asks at import — unless the installer reported it not
    installable here: a real-client run cannot pass by proving nothing."""
    path = os.environ.get(var) or shutil.which(name)
    if path and os.access(path, os.X_OK):
        return path
    if real_clients_required() and not not_installable(name):
        pytest.fail(f"{name} is not installed and {REAL_CLIENTS_VAR}=required: run "
                    f"`python -m taosync.dev install-clients` and source its env file, or set "
                    f"{var}", pytrace=False)
    return None


def binary_or_skip(var: str, name: str) -> str:
    """:func:`binary`, or skip the running test (naming why)."""
    path = binary(var, name)
    if path is None:
        why = "is not installable here" if not_installable(name) else "is not installed"
        pytest.skip(f"{name} {why} (set {var})")
    return path


def wait_until(pred, timeout: float = 10.0, what: str = "condition"):
    """Poll ``pred`` until it returns something true (returned), or fail after ``timeout``
    seconds naming ``what``: tests wait only as long as their proof needs."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


@dataclass
class Run:
    rc: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err


def client_location_vars() -> list[str]:
    """Every variable a client module declares as moving its files (from the registry)."""
    from taosync.clients.registry import all as all_clients

    return [var for mod in all_clients().values()
            for var in (*mod.LOCATION_VARS, *getattr(mod, "LOCATION_FILES", ()))]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty sandbox home, with a key in the environment and no location overrides."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    for var in (*client_location_vars(), "XDG_CONFIG_HOME",
                "XDG_STATE_HOME", "TAOSYNC_CONFIG", "CODEX_API_KEY", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    return h


def every_client_fleet(where: Path) -> Path:
    """The suite's example fleet with every registered client it does not name added with
    its defaults (``{}``), written to ``where``/every-client.yaml: for a test that renders
    every registered client, so that a new one is rendered too."""
    from ruamel.yaml import YAML

    from taosync.clients.registry import ids

    yaml = YAML(typ="safe")
    data = yaml.load(EXAMPLE_FLEET.read_text())
    for client_id in ids():
        data["clients"].setdefault(client_id, {})
    path = where / "every-client.yaml"
    with path.open("w") as fh:
        yaml.dump(data, fh)
    return path


@pytest.fixture
def fleet_file(tmp_path) -> Path:
    """A copy of the suite's example fleet (``EXAMPLE_FLEET``) that a test may edit."""
    dst = tmp_path / "fleet.yaml"
    shutil.copyfile(EXAMPLE_FLEET, dst)
    return dst


@pytest.fixture
def taosync(home, fleet_file, capsys):
    """Run the CLI in-process: ``taosync("apply")`` → Run(rc, out, err)."""

    def run(*args: str, config: Path | None = None) -> Run:
        from taosync.cli import run as cli_run

        argv = ["--home", str(home), "-c", str(config or fleet_file), *args]
        rc = cli_run(argv)
        captured = capsys.readouterr()
        return Run(rc, captured.out, captured.err)

    return run


def snapshot(root: Path) -> dict[str, str]:
    """Path → sha256 of every file under root (to prove nothing was written)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath, name)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def run(taosync):
    """``run("import")`` etc.; the runner of conftest (sandbox home, -c the example)."""
    return taosync


@pytest.fixture
def clients_env(tmp_path):
    """Where client files live for a renderer test: the tmp dir, no environment, Linux."""
    from taosync.clients.base import ClientEnv

    return ClientEnv(home=tmp_path, environ={}, platform="linux")


# -- a real keyring backend (issue 27: ${keyring:…} references) -----------------------------

def keyring_or_skip():
    """The keyring library (the ``test`` extra installs it); a missing one skips, naming
    why, unless real backends are required."""
    try:
        import keyring
        import keyrings.alt.file  # noqa: F401
    except ImportError:
        if real_clients_required():
            pytest.fail("keyring and keyrings.alt are not installed: pip install -e '.[test]'")
        pytest.skip("keyring/keyrings.alt are not installed (pip install -e '.[test]')")
    return keyring


@pytest.fixture
def file_keyring(tmp_path, monkeypatch):
    """A real keyring backend (keyrings.alt's plaintext file) whose file is outside the
    home, chosen for this process and every process it starts; returns a setter."""
    keyring = keyring_or_skip()
    from keyrings.alt.file import PlaintextKeyring

    data = tmp_path / "keyring-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    previous = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    yield lambda service, user, value: keyring.set_password(service, user, value)
    keyring.set_keyring(previous)


def said_where(out: str, code: str, where: str) -> bool:
    """verify names ``where`` for a failure ``code``: inline for one probe
    (``✗ cline balanced: path: WHERE: …``), on the ``in:`` line under a cause shared by
    several (``✗ 3 probes: path: …`` then ``in: A; B``)."""
    return bool(re.search(rf"^✗ [^:\n]*: {code}: {re.escape(where)}: ", out, re.M)) or bool(re.search(
        rf"✗ \d+ probes: {code}: .*\n\s+in: (?:.*; )?{re.escape(where)}(?:;|\n)", out))
