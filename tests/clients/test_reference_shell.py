"""``eval "$(taosync env --with-key)"`` in a shell start-up is all a reference-mode client
needs beside taosync's files (issue #25, Build 4).

Each real client (skipped only where its binary is absent) runs against the stand-in with
only taosync's files in its home (``secrets: reference``, the key ``${env:GW_KEY}``), in a
shell whose one line of start-up evals ``taosync env --with-key``: GW_KEY is there only
for taosync to resolve the key and is unset before the eval, so every variable the client
reads comes from that output. The environment besides holds PATH, HOME, TERM and the
user's own offline switches (tests/clients/one_shot.py), nothing with a key.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY, binary_or_skip
from one_shot import RUNS, OneShot

MODELS = ["gw-main", "gw-fast"]
#: the shell start-up under test, then the client (its argv follows ``sh -c … sh``)
START_UP = ('out="$(cd "$TAOSYNC_ROOT" && "$TAOSYNC_PYTHON" -m taosync --home "$HOME" '
            '-c "$TAOSYNC_FLEET" env --with-key)" || exit 97\n'
            'unset GW_KEY TAOSYNC_ROOT TAOSYNC_PYTHON TAOSYNC_FLEET\n'
            'eval "$out"\n'
            'cd "$HOME/work" && exec "$@"\n')


@pytest.mark.parametrize("run", RUNS, ids=[r.client for r in RUNS])
def test_real_client_in_a_shell_that_only_evals_taosync_env(run: OneShot, tmp_path):
    from taosync.stub import Stub

    exe = binary_or_skip(f"TAOSYNC_TEST_{run.binary.upper()}_BIN", run.binary)
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    fleet_file = tmp_path / "fleet.yaml"
    with Stub(key=TEST_KEY, models=MODELS, prefix="/api") as stub:
        yaml = YAML(typ="safe")
        data = yaml.load(EXAMPLE_FLEET.read_text())
        data["gateway"].update(base_url=stub.root, key="${env:GW_KEY}",
                               gemini_base_url=stub.root)
        data.update(clients={run.client: run.entry}, secrets="reference", mcp_servers={},
                    models={m: {} for m in MODELS}, routes={"main": "gw-main", "fast": "gw-fast"},
                    default_route="main")
        with fleet_file.open("w") as fh:
            yaml.dump(data, fh)
        if run.prepare is not None:
            run.prepare(home, MODELS)
        taosync_env = {k: v for k, v in os.environ.items()
                       if k not in ("TAOTOKEN_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")}
        applied = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                                  str(fleet_file), "apply", "--no-verify"], cwd=ROOT,
                                 env={**taosync_env, "GW_KEY": TEST_KEY}, capture_output=True,
                                 text=True, timeout=120)
        assert applied.returncode == 0, applied.stderr
        shell = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb",
                 "NO_COLOR": "1", **run.env, "GW_KEY": TEST_KEY,
                 "TAOSYNC_ROOT": str(ROOT), "TAOSYNC_PYTHON": sys.executable,
                 "TAOSYNC_FLEET": str(fleet_file)}
        try:
            done = subprocess.run(["sh", "-c", START_UP, "sh", exe, *run.args], env=shell,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=240)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{run.binary} did not finish: {exc.stdout!r} {exc.stderr!r}")
        posts = [r for r in stub.requests if r.method == "POST" and run.protocol_path in r.path]
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "answered through the taosync stand-in" in done.stdout, said[-3000:]
    assert posts and {r.auth for r in posts} == {"ok"}, [(r.path, r.auth) for r in posts]
    assert TEST_KEY not in said
