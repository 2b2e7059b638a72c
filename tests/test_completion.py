"""Shell completion through click's environment-variable protocol, in a real subprocess
(as the shell calls it), and ``taosync completion SHELL``'s scripts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLE_FLEET, ROOT


def taosync_process(*args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAOSYNC", "_TAOSYNC"))}
    env.update(PYTHONPATH=str(ROOT), **env_extra)
    return subprocess.run([sys.executable, "-m", "taosync", *args], capture_output=True,
                          text=True, env=env, timeout=60, cwd=ROOT / "tests")


def complete(line: str, shell: str = "bash") -> list[str]:
    """What the shell would offer after ``line`` (a trailing space: a new word)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {"_TAOSYNC_COMPLETE": f"{shell}_complete", "COMP_WORDS": line,
           "COMP_CWORD": str(cword), "TAOSYNC_CONFIG": str(EXAMPLE_FLEET)}
    if shell == "powershell":
        env.update(COMP_LINE=line, COMP_INCOMPLETE="" if line.endswith(" ") else words[-1])
    r = taosync_process(**env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    return [item.split(",", 1)[1] for item in lines] if shell == "bash" else lines


@pytest.mark.parametrize("line, expected", [
    ("taosync plan --only c", ["claude-code", "codex", "cline", "continue", "cursor",
                               "claude-desktop"]),
    ("taosync apply --only cl", ["claude-code", "cline", "claude-desktop"]),
    ("taosync forget co", ["codex", "continue"]),
    ("taosync verify --route ", ["fast", "balanced", "deep", "batch"]),
    ("taosync route b", ["balanced", "batch"]),
    ("taosync stats --model nvidia/", ["nvidia/deepseek-r1"]),
    ("taosync stub --model gpt", ["gpt-4o-mini"]),
    ("taosync env --shell ", ["sh", "fish", "powershell"]),
    ("taosync watch --drift ", ["fix", "warn"]),
    ("taosync completion ", ["bash", "zsh", "fish", "powershell"]),
    ("taosync forg", ["forget"]),
])
def test_bash_completes(line, expected):
    assert complete(line) == expected


def test_completion_reads_the_fleet_named_on_the_command_line():
    line = f"taosync -c {EXAMPLE_FLEET} verify --route d"
    env = {"_TAOSYNC_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": "5"}
    assert taosync_process(**env).stdout.splitlines() == ["plain,deep"]


def test_zsh_and_powershell_complete_client_ids():
    env = {"_TAOSYNC_COMPLETE": "zsh_complete", "COMP_WORDS": "taosync plan --only co",
           "COMP_CWORD": "3"}
    out = taosync_process(**env).stdout
    assert "codex" in out and "continue" in out and "cline" not in out
    assert complete("taosync plan --only co", shell="powershell") == ["codex", "continue"]


@pytest.mark.parametrize("shell, marker", [
    ("bash", "complete -o nosort -F _taosync_completion taosync"),
    ("zsh", "#compdef taosync"),
    ("fish", "complete --no-files --command taosync"),
    ("powershell", "Register-ArgumentCompleter -Native -CommandName taosync"),
])
def test_completion_prints_the_script(shell, marker):
    r = taosync_process("completion", shell)
    assert r.returncode == 0 and marker in r.stdout, r.stdout + r.stderr
    assert "_TAOSYNC_COMPLETE" in r.stdout


def test_completion_help_has_install_lines(run):
    r = run("completion", "--help")
    assert r.rc == 0
    assert "taosync completion bash > ~/.local/share/bash-completion/completions/taosync" in r.out
    assert "Invoke-Expression" in r.out


def test_unknown_shell_and_mistyped_command(run):
    r = run("completion", "tcsh")
    assert r.rc == 2 and "tcsh" in r.both
    r = run("aply")
    assert r.rc == 2 and "Did you mean 'apply'?" in r.both and "Traceback" not in r.both


@pytest.mark.skipif(not __import__("shutil").which("bash"), reason="no bash")
def test_the_bash_script_completes_in_a_real_bash(tmp_path):
    """The printed script, sourced by bash, completes through the installed entry point."""
    import shutil

    script = tmp_path / "taosync.bash"
    script.write_text(taosync_process("completion", "bash").stdout)
    shim = tmp_path / "bin" / "taosync"  # ``taosync`` on PATH, as pip installs it
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m taosync "$@"\n')
    shim.chmod(0o755)
    env = {"PATH": f"{shim.parent}:{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT),
           "HOME": str(tmp_path),
           "TAOSYNC_CONFIG": str(EXAMPLE_FLEET)}
    r = subprocess.run([shutil.which("bash"), "--norc", "--noprofile", "-c",
                        f'source "{script}"; COMP_WORDS=(taosync verify --route b); '
                        'COMP_CWORD=3; _taosync_completion taosync; echo "${COMPREPLY[*]}"'],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.strip() == "balanced batch", r.stdout + r.stderr
