"""apply under SIGKILL and under concurrency: every file is its old or its new content."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
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


#: run an apply in a real second process that SIGKILLs itself at its KILL_AT-th atomic
#: write (journal, backups, client files, state — in the order apply makes them),
#: KILL_WHEN "before" the rename (the temp file is complete, the target still old) or
#: "after" it; it reports on stderr how many atomic writes it made when not killed
KILL_AT_WRITE = textwrap.dedent("""
    import os, signal, sys
    import taosync.engine.system as system

    n, when = int(os.environ["KILL_AT"]), os.environ["KILL_WHEN"]
    real, calls = system.atomic_write, [0]

    def atomic_write(path, data, mode, before_replace=None):
        calls[0] += 1
        mine = calls[0] == n

        def check():
            if before_replace is not None:
                before_replace()
            if mine and when == "before":
                os.kill(os.getpid(), signal.SIGKILL)

        real(path, data, mode, check)
        if mine and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    system.atomic_write = atomic_write
    from taosync.cli import run
    code = run(sys.argv[1:])
    print(f"atomic writes: {calls[0]}", file=sys.stderr)
    sys.exit(code)
""")


def apply_killed_at(home: Path, n: int, when: str) -> subprocess.CompletedProcess:
    argv = apply_cmd(home)[3:]  # the CLI arguments after "python -m taosync"
    return subprocess.run([sys.executable, "-c", KILL_AT_WRITE, *argv],
                          env=dict(env(), KILL_AT=str(n), KILL_WHEN=when),
                          capture_output=True, text=True, timeout=120)


def test_sigkill_at_every_kind_of_write_never_leaves_a_partial_file(tmp_path):
    """Killed before or after the rename of the journal, the first and a middle client
    file, the last client file and the state: every file is its old or its new content,
    and the next apply recovers and finishes."""
    reference = tmp_path / "reference"
    seed(reference)
    whole = apply_killed_at(reference, 0, "never")
    assert whole.returncode == 0, whole.stderr
    writes = int(whole.stderr.rsplit("atomic writes: ", 1)[1])
    assert writes >= 5, whole.stderr
    new = {rel: (reference / rel).read_text() for rel in ORIGINALS}

    points = sorted({1, 2, writes // 2, writes - 1, writes})
    for n in points:
        for when in ("before", "after"):
            home = tmp_path / f"h{n}-{when}"
            seed(home)
            killed = apply_killed_at(home, n, when)
            assert killed.returncode == -signal.SIGKILL, (n, when, killed.stderr)
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
