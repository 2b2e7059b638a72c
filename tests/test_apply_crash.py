"""apply under SIGKILL and under concurrency: every file is its old or its new content."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, TEST_KEY

CLAUDE_SETTINGS = '{\n  "permissions": {"allow": ["Bash(ls)"]},\n  "env": {"KEEP": "1"}\n}\n'
CODEX_CONFIG = '# mine\nmodel = "o3"\n\n[projects."/w"]\ntrust_level = "trusted"\n'
CONTINUE_CONFIG = "name: Mine\nversion: 0.0.1\nschema: v1\nmodels: []\n"

ORIGINALS = {
    ".claude/settings.json": CLAUDE_SETTINGS,
    ".codex/config.toml": CODEX_CONFIG,
    ".continue/config.yaml": CONTINUE_CONFIG,
}


def seed(home: Path) -> None:
    for rel, text in ORIGINALS.items():
        p = home / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def env() -> dict:
    e = dict(os.environ)
    e["TAOTOKEN_API_KEY"] = TEST_KEY
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLINE_DIR", "CLINE_DATA_DIR",
                "CONTINUE_GLOBAL_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        e.pop(var, None)
    return e


def apply_cmd(home: Path) -> list[str]:
    return [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(EXAMPLE_FLEET),
            "apply", "--no-verify", "-q"]


def parse(rel: str, text: str):
    if rel.endswith(".json"):
        return json.loads(text)
    if rel.endswith(".toml"):
        return tomllib.loads(text)
    return YAML(typ="safe").load(text)


def assert_old_or_new(home: Path, new: dict[str, str]) -> None:
    """Each seeded file is byte-identical to its original or to the applied result;
    every other client file is absent or complete and parseable."""
    for rel, original in ORIGINALS.items():
        text = (home / rel).read_text()
        assert text in (original, new[rel]), f"{rel} is partial:\n{text}"
    for p in home.rglob("*"):
        if p.is_file() and ".local/state" not in str(p) and p.suffix in (".json", ".toml", ".yaml"):
            parse(p.name, p.read_text())  # raises on a torn file


def test_sigkill_at_random_points_never_leaves_a_partial_file(tmp_path):
    reference = tmp_path / "reference"
    seed(reference)
    subprocess.run(apply_cmd(reference), env=env(), check=True, timeout=120)
    new = {rel: (reference / rel).read_text() for rel in ORIGINALS}
    start = time.monotonic()
    subprocess.run(apply_cmd(tmp_path / "timing"), env=env(), check=True, timeout=120)
    duration = time.monotonic() - start

    rng = random.Random(1234)
    iterations = int(os.environ.get("TAOSYNC_KILL_ITERATIONS", "25"))
    killed_mid_way = 0
    for i in range(iterations):
        home = tmp_path / f"h{i}"
        seed(home)
        proc = subprocess.Popen(apply_cmd(home), env=env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait()
        killed_mid_way += rc == -signal.SIGKILL
        assert_old_or_new(home, new)
        # the next apply recovers (puts back an interrupted transaction) and finishes
        done = subprocess.run(apply_cmd(home), env=env(), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        for rel in ORIGINALS:
            assert (home / rel).read_text() == new[rel]
        leftovers = [p for p in home.rglob("*.tmp") if ".local/state" not in str(p)]
        assert not leftovers, f"temp files left after recovery: {leftovers}"
        status = subprocess.run(apply_cmd(home)[:-3] + ["status"], env=env(),
                                capture_output=True, text=True, timeout=120)
        assert status.returncode == 0, status.stdout + status.stderr
    assert killed_mid_way > 0


def test_two_applies_at_once_both_finish_consistently(tmp_path):
    home = tmp_path / "home"
    seed(home)
    procs = [subprocess.Popen(apply_cmd(home), env=env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        results = [p.communicate(timeout=60) + (p.returncode,) for p in procs]
    finally:
        for p in procs:  # a hung apply must not outlive the test
            if p.poll() is None:
                p.kill()
                p.communicate()
    for out, err, rc in results:
        assert rc == 0, err
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert len(state["applies"]) == 1, "the second apply should have found nothing to do"
    status = subprocess.run(apply_cmd(home)[:-3] + ["status"], env=env(),
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stdout
