"""Issue #29, Build 5: ``taosync edit [--apply]`` — fleet.yaml opened in $VISUAL/$EDITOR (a
small script that edits the file), checked when the editor exits, the editor offered
again on a terminal (a real pty), the user's edit never lost and an invalid fleet never
left silently, ``--apply`` applying once valid. Real ``python -m taosync`` runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, snapshot
from on_a_terminal import run_on_a_terminal

BREAK = "s/fast: gpt-4o-mini/fast: no-such-model/"
FIX = "s/fast: no-such-model/fast: intel\\/llama-7b/"
VALID = "s/fast: gpt-4o-mini/fast: intel\\/llama-7b/"


def editor(tmp_path: Path, *seds: str, rc: int = 0) -> Path:
    """An editor script: its n-th run applies the n-th sed expression to the file (the
    last one again after that), counting its runs in a file beside it."""
    script = tmp_path / "ed.sh"
    count = tmp_path / "ed.count"
    cases = "\n".join(f"  {n}) sed -i '{expr}' \"$1\" ;;" for n, expr in enumerate(seds, 1))
    script.write_text(f"""#!/bin/sh
n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))
echo $n > {count}
case $n in
{cases}
  *) sed -i '{seds[-1] if seds else "s/^//"}' "$1" ;;
esac
exit {rc}
""")
    script.chmod(0o755)
    return script


def runs(tmp_path: Path) -> int:
    count = tmp_path / "ed.count"
    return int(count.read_text()) if count.exists() else 0


def taosync(home, fleet, *args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR")}
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL,
                          env={**base, "PYTHONPATH": str(ROOT), **(env or {})})


def codex_model(home: Path) -> str | None:
    cfg = home / ".codex/config.toml"
    return tomllib.loads(cfg.read_text()).get("model") if cfg.exists() else None


def test_a_valid_edit_is_saved_and_not_applied_without_apply(tmp_path, home, fleet_file):
    r = taosync(home, fleet_file, "edit", env={"EDITOR": str(editor(tmp_path, VALID))})
    assert r.returncode == 0, r.stderr
    assert "fast: intel/llama-7b" in fleet_file.read_text()
    assert "saved and valid" in r.stdout and "taosync apply" in r.stdout
    assert not (home / ".codex").exists()


def test_edit_apply_applies_the_valid_edit(tmp_path, home, fleet_file):
    r = taosync(home, fleet_file, "edit", "--apply", "--no-verify",
                env={"EDITOR": str(editor(tmp_path, VALID))})
    assert r.returncode == 0, r.stderr
    assert "applied #1" in r.stdout
    assert codex_model(home) == "intel/llama-7b"


def test_an_invalid_edit_without_a_terminal_is_kept_located_and_exit_2(tmp_path, home,
                                                                      fleet_file):
    before = snapshot(home)
    r = taosync(home, fleet_file, "edit", "--apply",
                env={"EDITOR": str(editor(tmp_path, BREAK))})
    assert r.returncode == 2
    assert runs(tmp_path) == 1  # no terminal: not asked, not re-opened
    assert "fast: no-such-model" in fleet_file.read_text()  # the edit is never lost
    assert f"{fleet_file}:18:9: routes.fast" in r.stderr and "no-such-model" in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "your edit is kept" in last and "nothing was applied" in last
    assert "taosync edit" in last
    assert snapshot(home) == before
    assert "Traceback" not in r.stderr


def test_visual_wins_over_editor_and_editor_takes_arguments(tmp_path, home, fleet_file):
    script = editor(tmp_path, VALID)
    r = taosync(home, fleet_file, "edit",
                env={"VISUAL": f"sh {script}", "EDITOR": "/nonexistent/editor"})
    assert r.returncode == 0, r.stderr
    assert "fast: intel/llama-7b" in fleet_file.read_text()


def test_without_visual_or_editor_a_fallback_is_named(tmp_path, home, fleet_file):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    editor(tmp_path, VALID).rename(bin_dir / "nano")
    for tool in ("sed", "cat"):  # what the script needs; no editor, no vi on this PATH
        (bin_dir / tool).symlink_to(shutil.which(tool))
    r = taosync(home, fleet_file, "edit", env={"PATH": str(bin_dir)})
    assert r.returncode == 0, r.stderr
    assert "neither $VISUAL nor $EDITOR is set: opening nano" in r.stderr
    assert "fast: intel/llama-7b" in fleet_file.read_text()


def test_an_unchanged_file_applies_nothing(tmp_path, home, fleet_file):
    r = taosync(home, fleet_file, "edit", "--apply", env={"EDITOR": "true"})
    assert r.returncode == 0, r.stderr
    assert "not changed; nothing applied" in r.stdout
    assert not (home / ".codex").exists()


def test_an_editor_that_fails_stops_with_nothing_applied(tmp_path, home, fleet_file):
    r = taosync(home, fleet_file, "edit", "--apply",
                env={"EDITOR": str(editor(tmp_path, VALID, rc=3))})
    assert r.returncode == 1
    assert "exited with 3" in r.stderr and "nothing was checked or applied" in r.stderr
    assert not (home / ".codex").exists()


def test_an_editor_that_is_not_there_is_bad_input(home, fleet_file):
    r = taosync(home, fleet_file, "edit", env={"EDITOR": "/nonexistent/editor"})
    assert r.returncode == 2
    assert "cannot start the editor" in r.stderr and "EDITOR" in r.stderr


def test_a_missing_fleet_is_bad_input(tmp_path, home):
    r = taosync(home, tmp_path / "nope.yaml", "edit", env={"EDITOR": "true"})
    assert r.returncode == 2 and "taosync init" in r.stderr


def on_pty(args: list[str], env: dict, answers: list[bytes]) -> tuple[int, str]:
    """Run taosync on a pseudo-terminal, answering each "edit again?" in turn."""
    return run_on_a_terminal(args, answers, prompt=b"edit again?", unset=("VISUAL", "EDITOR"),
                             env={"PYTHONPATH": str(ROOT), **env}, timeout=90)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_on_a_terminal_an_invalid_edit_reopens_the_editor_until_valid_then_applies(
        tmp_path, home, fleet_file):
    script = editor(tmp_path, BREAK, FIX)
    rc, out = on_pty(["--home", str(home), "-c", str(fleet_file), "edit", "--apply",
                      "--no-verify"], {"EDITOR": str(script)}, [b"y\n"])
    assert rc == 0, out
    assert runs(tmp_path) == 2
    assert "no-such-model" in out and "edit again? [Y/n]" in out
    assert "saved and valid" in out and "applied #1" in out
    assert codex_model(home) == "intel/llama-7b"


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_on_a_terminal_declining_keeps_the_edit_and_exits_2(tmp_path, home, fleet_file):
    script = editor(tmp_path, BREAK)
    rc, out = on_pty(["--home", str(home), "-c", str(fleet_file), "edit", "--apply"],
                     {"EDITOR": str(script)}, [b"n\n"])
    assert rc == 2, out
    assert runs(tmp_path) == 1
    assert "your edit is kept" in out and "nothing was applied" in out
    assert "fast: no-such-model" in fleet_file.read_text()
    assert not (home / ".codex").exists()
