"""Import hygiene: a no-op ``apply`` loads only the standard library's cheapest modules
and taosync's fast path, so a new top-level import there fails CI instead of quietly
costing every shell start-up its milliseconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

#: what a no-op apply may load beyond what the interpreter had at start-up
ALLOWED = {
    "taosync", "taosync.__main__", "taosync.fastpath", "taosync.engine",
    "taosync.engine.certificate", "taosync.bounded",
    "_json", "_sha2", "_sha256",  # the C parts only: json and hashlib cost a start-up each
}
#: never, whoever loaded them (the interpreter's start-up does not)
BANNED = {"dataclasses", "difflib", "locale", "datetime", "click", "pydantic", "ruamel",
          "ruamel.yaml", "tomlkit", "jsonschema", "httpx", "inspect", "typing", "subprocess",
          "threading"}

# The console script's own entry, reporting the modules loaded before it and at exit (an
# atexit handler: the full path ends the process with os._exit after running them).
WRAPPER = """
import atexit, sys
before = set(sys.modules)

def report():
    after = sorted(sys.modules)
    import json
    print(json.dumps({"before": sorted(before), "after": after}), file=sys.stderr)

atexit.register(report)
from taosync.__main__ import main
sys.exit(main())
"""


def run_wrapper(home, fleet_file, *args):
    """Run a real process the way the console script does; the report is stderr's last line."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", WRAPPER, "--home", str(home), "-c",
                           str(fleet_file), *args], capture_output=True, text=True, env=env,
                          timeout=60)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return proc, dict(report, rc=proc.returncode)


@pytest.mark.parametrize("args, said", [(("apply",), "nothing to do: "),
                                        (("plan", "--check"), "home: "),  # --home: the header, then "nothing to do: …"
                                        (("status",), "nothing to do: ")])
def test_a_no_op_loads_only_the_allowed_modules(taosync, home, fleet_file, args, said):
    assert taosync("apply", "--no-verify").rc == 0
    proc, report = run_wrapper(home, fleet_file, *args)
    assert report["rc"] == 0
    assert proc.stdout.startswith(said), proc.stdout
    loaded = set(report["after"]) - set(report["before"])
    assert loaded - ALLOWED == set(), "a no-op apply imported more than it may"
    assert BANNED & set(report["after"]) == set()


def test_the_guard_sees_the_full_path(home, fleet_file):
    """Without an earlier apply the full path runs: the same check then sees click (so
    the test above would notice a fast path that silently stopped answering)."""
    proc, report = run_wrapper(home, fleet_file, "plan", "--check")
    assert report["rc"] == 1
    assert "click" in report["after"]
