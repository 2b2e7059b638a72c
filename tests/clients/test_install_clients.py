"""``python -m taosync.dev install-clients`` (taosync/clients/install.py), without the
network: the pins it reads from every module's ``INSTALL``, when it reuses an install, how
it reports each client and the env file the tests read; and the tests' side of it —
``TAOSYNC_REAL_CLIENTS=required`` turns a missing binary into a failure, except for a
binary the installer named not installable here."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import conftest
from conftest import ROOT, binary, binary_or_skip
from taosync.clients import install, registry


def fake_binary(path: Path, rc: int = 0) -> Path:
    """An executable answering ``--version`` with exit code ``rc``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'fake 1.0'\nexit {rc}\n")
    path.chmod(0o755)
    return path


def module(client_id="toy", install_=("npm", "toy@1.0.0", ""), binary_name="toy"):
    return types.SimpleNamespace(ID=client_id, INSTALL=install_, BINARY=binary_name)


# -- the pins -------------------------------------------------------------------------

def test_every_registered_client_pins_what_npm_or_pip_installs():
    pinned, none = install.pins(registry.all().values())
    assert [p.id for p in pinned] + none and set([p.id for p in pinned] + none) == \
        set(registry.ids())
    for pin in pinned:
        assert pin.registry in install.REGISTRIES and pin.binary, pin
        client = pin.requirements[0]
        assert ("==" if pin.registry == "pypi" else "@") in client.lstrip("@"), pin


def test_a_spec_may_name_what_the_client_needs_beside_it():
    pin = install.pin_of(registry.get("shell-gpt"))
    assert pin.requirements == ["shell-gpt==1.5.1", "click"]
    assert install.by_hand(pin) == (
        "python3 -m venv DIR && DIR/bin/pip install shell-gpt==1.5.1 click", "DIR/bin/sgpt")


def test_the_by_hand_line_quotes_what_a_shell_would_expand():
    pin = install.Pin("hermes", "pypi", "hermes-agent[anthropic,mcp]==0.19.0", "", "hermes")
    assert install.by_hand(pin)[0] == \
        "python3 -m venv DIR && DIR/bin/pip install 'hermes-agent[anthropic,mcp]==0.19.0'"
    npm = install.Pin("pi", "npm", "@mariozechner/pi-coding-agent@0.73.1", "", "pi")
    assert install.by_hand(npm) == (
        "npm install --prefix DIR @mariozechner/pi-coding-agent@0.73.1",
        "DIR/node_modules/.bin/pi")


def test_an_app_with_no_binary_is_passed_over_by_name():
    pinned, none = install.pins([module(), module("cursor", None, "")])
    assert [p.id for p in pinned] == ["toy"] and none == ["cursor"]


@pytest.mark.parametrize("install_, binary_name, says", [
    (("brew", "toy", ""), "toy", "registry 'brew' is none of npm, pypi"),
    (("npm", "  ", ""), "toy", "names no package"),
    (("npm", "toy@1"), "toy", "must be (registry, spec, note) strings or None"),
    (("npm", "toy@1", ""), "", "INSTALL without BINARY"),
])
def test_a_malformed_install_is_named_with_its_client(install_, binary_name, says):
    with pytest.raises(ValueError, match=r"client 'toy': .*" + says.replace("(", r"\(")
                       .replace(")", r"\)")):
        install.pin_of(module(install_=install_, binary_name=binary_name))


# -- the cache ------------------------------------------------------------------------

def test_the_cache_slot_changes_with_the_spec_and_the_python():
    root = Path("/cache")
    pin = install.Pin("llm", "pypi", "llm==0.36", "", "llm")
    same = install.slot(root, pin, "3.11.7")
    assert same == install.slot(root, install.Pin("llm", "pypi", "llm==0.36", "x", "llm"),
                                "3.11.7")  # the note is not part of what is installed
    assert same.name.startswith("llm-") and same.parent == root
    assert len({same, install.slot(root, pin, "3.12.1"),
                install.slot(root, install.Pin("llm", "pypi", "llm==0.37", "", "llm"),
                             "3.11.7")}) == 3


def test_an_install_whose_binary_runs_is_reused(tmp_path):
    pin = install.Pin("toy", "npm", "toy@1.0.0", "", "toy")
    exe = fake_binary(install.executable(install.slot(tmp_path, pin), pin))
    outcome = install.install_one(pin, tmp_path, [sys.executable])
    assert (outcome.status, outcome.binary) == ("cached", exe)
    assert outcome.line().split() == ["toy", "toy@1.0.0", "cached"]


def test_a_venv_install_is_reused_for_the_same_python_only(tmp_path):
    pin = install.Pin("toy", "pypi", "toy==1.0", "", "toy")
    version = install.python_version(sys.executable)
    exe = fake_binary(install.executable(install.slot(tmp_path, pin, version), pin))
    assert exe == install.slot(tmp_path, pin, version) / "bin" / "toy"
    assert install.install_one(pin, tmp_path, [sys.executable]).status == "cached"


def test_a_venv_made_by_a_later_interpreter_is_found_before_installing(tmp_path):
    """Vibe, say, installed by python3.12 after this Python was refused: the next run
    reuses it without asking pip again (nothing is installed here: no network needed)."""
    newer = tmp_path / "python3.99"
    newer.write_text("#!/bin/sh\necho 3.99.0\n")
    newer.chmod(0o755)
    pin = install.Pin("toy", "pypi", "toy==1.0", "", "toy")
    exe = fake_binary(install.executable(install.slot(tmp_path, pin, "3.99.0"), pin))
    outcome = install.install_one(pin, tmp_path, [sys.executable, str(newer)])
    assert (outcome.status, outcome.binary) == ("cached", exe)


def test_why_an_install_is_no_cache_hit_is_said(tmp_path, monkeypatch):
    assert install.version_problem(tmp_path / "absent") == "not there"
    assert install.version_problem(fake_binary(tmp_path / "bad", rc=3)) == \
        "--version exited 3"
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    monkeypatch.setattr(install, "VERSION_TIMEOUT", 0.2)
    assert install.version_problem(slow) == "--version did not answer in 0 s"
    pin = install.Pin("toy", "npm", "toy@1.0.0", "", "toy")
    line = install.Outcome(pin, "installed", "replaced toy-0123 (--version exited 3)",
                           binary=slow, seconds=12).line()
    assert line.endswith("installed: replaced toy-0123 (--version exited 3) (12 s)")


def test_the_version_check_writes_nothing_into_the_users_home(tmp_path, monkeypatch):
    """shell-gpt writes its config (and asks for a key) on any start, --version too."""
    writer = tmp_path / "writer"
    writer.write_text('#!/bin/sh\n[ -n "$OPENAI_API_KEY" ] || exit 9\n'
                      'mkdir -p "$HOME/.config/toy" && echo k > "$HOME/.config/toy/rc"\n')
    writer.chmod(0o755)
    user_home = tmp_path / "home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert install.version_problem(writer) == ""
    assert list(user_home.iterdir()) == []


def test_a_broken_leftover_is_removed_and_installed_afresh(tmp_path, monkeypatch):
    """A leftover whose binary fails ``--version`` is no cache hit: it is removed and npm
    is run (absent here: the install FAILS, saying so, and leaves nothing behind)."""
    pin = install.Pin("toy", "npm", "toy@1.0.0", "", "toy")
    place = install.slot(tmp_path, pin)
    fake_binary(install.executable(place, pin), rc=1)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    outcome = install.install_one(pin, tmp_path, [sys.executable])
    assert outcome.status == "FAILED" and outcome.why.startswith("npm install: npm:"), outcome
    assert not place.exists()
    assert outcome.line().endswith("FAILED: " + outcome.why)


def test_a_second_run_on_the_same_directory_waits_for_the_first(tmp_path):
    import fcntl
    import threading

    pin = install.Pin("toy", "npm", "toy@1.0.0", "", "toy")
    fake_binary(install.executable(install.slot(tmp_path, pin), pin))
    said: list[str] = []
    with (tmp_path / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the first run, installing
        second = threading.Thread(target=install.install_all,
                                  args=([pin], tmp_path, [sys.executable], 2, said.append))
        second.start()
        second.join(0.5)
        assert second.is_alive() and said == []
    second.join(30)
    assert [line.split()[-1] for line in said] == ["cached"]


def test_an_interpreter_that_does_not_run_is_not_tried(tmp_path):
    shim = fake_binary(tmp_path / "python3.12", rc=127)  # a pyenv shim of an unselected one
    assert install.python_version(str(shim)) is None
    assert install.python_version(str(tmp_path / "nowhere")) is None
    assert install.python_version(sys.executable) == ".".join(map(str, sys.version_info[:3]))


# -- not installable --------------------------------------------------------------------

#: what pip 23.2 prints for mistral-vibe==3.0.3 on Python 3.11 (shortened)
PIP_REFUSED = (
    "ERROR: Ignored the following versions that require a different python version: "
    "1.0.0 Requires-Python >=3.12; 3.0.0 Requires-Python >=3.14; 3.0.1 Requires-Python "
    ">=3.12; 3.0.3 Requires-Python >=3.12\n"
    "ERROR: Could not find a version that satisfies the requirement mistral-vibe==3.0.3 "
    "(from versions: 0.0.0)\nERROR: No matching distribution found for mistral-vibe==3.0.3\n")


def test_a_python_too_old_for_the_pin_is_read_from_pips_refusal():
    vibe = install.Pin("mistral-vibe", "pypi", "mistral-vibe==3.0.3", "", "vibe")
    assert install.needed_python(vibe, PIP_REFUSED) == ">=3.12"
    newest = install.Pin("mistral-vibe", "pypi", "mistral-vibe==3.0.0", "", "vibe")
    assert install.needed_python(newest, PIP_REFUSED) == ">=3.14"
    assert install.needed_python(vibe, "ERROR: connection refused") is None
    assert install.needed_python(vibe, "ERROR: Package 'mistral-vibe' requires a different "
                                       "Python: 3.11.7 not in '>=3.12'") == ">=3.12"


def toy_wheel(where: Path, requires_python: str) -> Path:
    """A wheel of ``toyclient`` 1.0 that pip accepts only on ``requires_python``."""
    import zipfile

    where.mkdir(parents=True, exist_ok=True)
    info = "toyclient-1.0.dist-info"
    files = {"toyclient/__init__.py": "",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: toyclient\nVersion: 1.0\n"
                                 f"Requires-Python: {requires_python}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    wheel = where / "toyclient-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return wheel


def test_a_client_no_python_here_can_run_is_not_installable_by_name(tmp_path, monkeypatch):
    """Real pip, offline (its own environment variables point it at one local wheel):
    the pin needs a Python that neither this interpreter nor any other found is."""
    toy_wheel(tmp_path / "wheels", ">=3.99")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    pin = install.Pin("toy", "pypi", "toyclient==1.0", "", "toy")
    outcome = install.install_one(pin, tmp_path / "cache", [sys.executable, "python3.99"])
    version = install.python_version(sys.executable)
    assert (outcome.status, outcome.why) == (
        "not installable", f"needs Python >=3.99; tried {sys.executable} ({version}); "
                           "python3.99 not found or not running"), outcome
    assert not install.slot(tmp_path / "cache", pin, version).exists()  # nothing left


# -- the report and the env file -------------------------------------------------------------

def test_the_report_says_one_line_per_client():
    pin = install.Pin("mistral-vibe", "pypi", "mistral-vibe==3.0.3", "", "vibe")
    line = install.Outcome(pin, "not installable", "needs Python >=3.12; tried "
                           "/usr/bin/python3 (3.11.7)").line()
    assert line.split(None, 2) == ["mistral-vibe", "mistral-vibe==3.0.3",
                                   "not installable: needs Python >=3.12; tried "
                                   "/usr/bin/python3 (3.11.7)"]
    took = install.Outcome(pin, "installed", binary=Path("/x"), seconds=61.4).line()
    assert took.endswith(" installed (61 s)")


def test_the_env_file_puts_the_clients_first_on_path_and_names_the_unavailable(tmp_path):
    llm = install.Pin("llm", "pypi", "llm==0.36", "", "llm")
    vibe = install.Pin("mistral-vibe", "pypi", "mistral-vibe==3.0.3", "", "vibe")
    stale = tmp_path / "clients" / "bin" / "old-client"
    stale.parent.mkdir(parents=True)
    stale.symlink_to(tmp_path / "gone")
    exe = fake_binary(tmp_path / "venv" / "bin" / "llm")
    outcomes = [install.Outcome(llm, "cached", binary=exe),
                install.Outcome(vibe, "not installable", "needs Python >=3.12")]
    bin_dir = install.link(tmp_path / "clients", outcomes)
    assert sorted(p.name for p in bin_dir.iterdir()) == ["llm"]  # the stale link is gone
    env_file = tmp_path / "clients.env"
    env_file.write_text(install.env_text(bin_dir, outcomes))
    shown = subprocess.run(["bash", "-c", f". {env_file} && command -v llm && llm --version "
                            f"&& echo \"$TAOSYNC_REAL_CLIENTS_UNAVAILABLE\""],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert shown.stdout.split("\n")[:3] == [str(bin_dir / "llm"), "fake 1.0", "vibe"], shown


def test_the_command_reports_each_client_and_writes_the_env_file(tmp_path):
    """The real entry point, offline: llm already installed in the cache dir."""
    pin = install.pin_of(registry.get("llm"))
    version = install.python_version(sys.executable)
    fake_binary(install.executable(install.slot(tmp_path, pin, version), pin))
    env_file = tmp_path / "clients.env"
    done = subprocess.run([sys.executable, "-m", "taosync.dev", "install-clients", "--dir",
                           str(tmp_path), "--only", "llm", "--env", str(env_file)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"installing 1 clients into {tmp_path}",
                                        pin_line(pin, "cached")]
    assert f"export PATH={tmp_path / 'bin'}:\"$PATH\"" in env_file.read_text()


def pin_line(pin, status):
    return install.Outcome(pin, status).line()


def test_the_command_refuses_an_unknown_client(tmp_path):
    done = subprocess.run([sys.executable, "-m", "taosync.dev", "install-clients", "--dir",
                           str(tmp_path), "--only", "nope"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (2, "unknown client id: nope")
    assert not any(tmp_path.iterdir())


# -- the tests' side: TAOSYNC_REAL_CLIENTS=required -----------------------------------------

def test_a_missing_binary_skips_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(conftest.REAL_CLIENTS_VAR, raising=False)
    monkeypatch.delenv("TAOSYNC_TEST_TOY_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert binary("TAOSYNC_TEST_TOY_BIN", "toy") is None
    with pytest.raises(pytest.skip.Exception, match=r"toy is not installed \(set TAOSYNC_"):
        binary_or_skip("TAOSYNC_TEST_TOY_BIN", "toy")


def test_a_missing_binary_fails_when_real_clients_are_required(tmp_path, monkeypatch):
    monkeypatch.setenv(conftest.REAL_CLIENTS_VAR, "required")
    monkeypatch.delenv("TAOSYNC_TEST_TOY_BIN", raising=False)
    monkeypatch.setenv(conftest.UNAVAILABLE_VAR, "vibe,other")
    monkeypatch.setenv("PATH", str(tmp_path))
    for ask in (binary, binary_or_skip):
        with pytest.raises(pytest.fail.Exception,
                           match="toy is not installed and TAOSYNC_REAL_CLIENTS=required"):
            ask("TAOSYNC_TEST_TOY_BIN", "toy")
    exe = fake_binary(tmp_path / "toy")  # on PATH now: found, required or not
    assert binary("TAOSYNC_TEST_TOY_BIN", "toy") == str(exe)


def test_a_client_the_installer_named_not_installable_still_skips(tmp_path, monkeypatch):
    monkeypatch.setenv(conftest.REAL_CLIENTS_VAR, "required")
    monkeypatch.setenv(conftest.UNAVAILABLE_VAR, "vibe")
    monkeypatch.delenv("TAOSYNC_TEST_VIBE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert binary("TAOSYNC_TEST_VIBE_BIN", "vibe") is None
    with pytest.raises(pytest.skip.Exception, match="vibe is not installable here"):
        binary_or_skip("TAOSYNC_TEST_VIBE_BIN", "vibe")


def test_a_module_asking_at_import_fails_its_collection_when_required(tmp_path):
    """The ``X = binary(...)`` + ``skipif(X is None)`` pattern: the module's collection
    fails, naming the client, rather than its tests skipping."""
    test = tmp_path / "test_toy_real.py"
    test.write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                    "import pytest\nfrom conftest import binary\n"
                    "TOY = binary('TAOSYNC_TEST_TOY_BIN', 'toy')\n"
                    "@pytest.mark.skipif(TOY is None, reason='toy is not installed')\n"
                    "def test_real_toy():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAOSYNC_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "no:hypothesispytest", str(test)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**env, "TAOSYNC_REAL_CLIENTS": "required",
                               "PATH": os.path.dirname(sys.executable)})
    assert done.returncode == 2, done.stdout + done.stderr  # 2: a collection error
    assert "ERROR collecting test_toy_real.py" in done.stdout, done.stdout
    assert "toy is not installed and TAOSYNC_REAL_CLIENTS=required" in done.stdout
