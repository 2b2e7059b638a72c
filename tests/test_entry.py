"""The process entry point ends the process itself after the command (no interpreter
teardown): exit codes, piped output and other code's atexit handlers must survive that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import EXAMPLE_FLEET, TEST_KEY

ROOT = Path(__file__).resolve().parent.parent


def entry(*args: str, home: Path, prelude: str = "", **kw) -> subprocess.CompletedProcess:
    """Run the real entry point in a child, after ``prelude`` (code run before it)."""
    code = prelude + textwrap.dedent(f"""
        import sys
        sys.argv = ["taosync", *{list(args)!r}]
        from taosync.__main__ import main
        sys.exit(main())
    """)
    # this checkout's taosync, not whichever one the interpreter has installed (cwd is
    # the home, so the checkout is not on the path by itself)
    env = {**os.environ, "TAOTOKEN_API_KEY": TEST_KEY, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=home, env=env,
                          capture_output=True, text=True, timeout=60, **kw)


def test_exit_codes_survive(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    base = ["--home", str(home), "-c", str(EXAMPLE_FLEET)]
    assert entry(*base, "validate", "-q", home=home).returncode == 0
    assert entry(*base, "plan", "--check", "-q", home=home).returncode == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("gateway: [\n")
    proc = entry("--home", str(home), "-c", str(bad), "plan", home=home)
    assert proc.returncode == 2
    assert "bad.yaml:" in proc.stderr and "Traceback" not in proc.stderr


def test_piped_output_is_complete(tmp_path):
    """A large stdout through a pipe is flushed in full before the process ends."""
    proc = entry("schema", home=tmp_path)
    assert proc.returncode == 0
    from taosync.fleet.schema import load

    assert json.loads(proc.stdout) == load()


def test_other_atexit_handlers_still_run(tmp_path):
    """A handler registered before taosync started (coverage, a sitecustomize) runs,
    and what it prints is not lost."""
    marker = tmp_path / "marker"
    prelude = textwrap.dedent(f"""
        import atexit
        def done():
            open({str(marker)!r}, "w").write("ran")
            print("handler output")
        atexit.register(done)
    """)
    proc = entry("--home", str(tmp_path), "-c", str(EXAMPLE_FLEET), "plan", "--check", "-q",
                 home=tmp_path, prelude=prelude)
    assert proc.returncode == 1
    assert marker.read_text() == "ran"
    assert proc.stdout.endswith("handler output\n")


def test_running_thread_is_waited_for(tmp_path):
    """A non-daemon thread still running means a normal exit, which waits for it."""
    marker = tmp_path / "marker"
    prelude = textwrap.dedent(f"""
        import threading, time
        def late():
            time.sleep(0.3)
            open({str(marker)!r}, "w").write("finished")
        threading.Thread(target=late).start()
    """)
    proc = entry("--version", home=tmp_path, prelude=prelude)
    assert proc.returncode == 0
    assert marker.read_text() == "finished"


def test_in_process_call_returns(capsys):
    """Called with arguments (tests, embedding), main returns instead of exiting."""
    from taosync.__main__ import main

    assert main(["--version"]) == 0
    assert "taosync" in capsys.readouterr().out
