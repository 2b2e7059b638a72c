"""taosync route / env for scripts, and shell completion through the real entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET, TEST_KEY

ROOT = Path(__file__).resolve().parent.parent
ENTRY = Path(sys.executable).parent / "taosync"

#: routes whose names and model ids need care in every shell
ODD_FLEET = """version: 1
gateway:
  base_url: https://gw.example.com/api/
  key: ${env:TAOTOKEN_API_KEY}
models:
  gpt-4o-mini: {}
  "it's-$HOME-`id`-\\\\-\\"q\\"": {backend: cuda}
  nvidia/deepseek-r1: {}
routes:
  fast-lane: gpt-4o-mini
  odd.one: "it's-$HOME-`id`-\\\\-\\"q\\""
  deep: nvidia/deepseek-r1
default_route: deep
"""
ODD_MODEL = "it's-$HOME-`id`-\\-\"q\""


@pytest.fixture
def odd_fleet(tmp_path) -> Path:
    path = tmp_path / "odd.yaml"
    path.write_text(ODD_FLEET)
    return path


# --------------------------------------------------------------------------- route


def test_route_known_task_prints_only_the_model(taosync):
    r = taosync("route", "fast")
    assert (r.rc, r.out, r.err) == (0, "gpt-4o-mini\n", "")


def test_route_unknown_task_with_default_falls_back_to_the_default_with_a_warning(taosync):
    r = taosync("route", "fas", "--default")
    assert r.rc == 0
    assert r.out == "claude-sonnet-4-20250514\n"
    assert "no route 'fas'" in r.err and "did you mean fast" in r.err and "balanced" in r.err


def test_route_json(taosync):
    data = json.loads(taosync("route", "--json", "deep").out)
    assert data == {"ok": True, "exit_code": 0, "format_version": 1, "task": "deep", "route": "deep", "known": True,
                    "model": "nvidia/deepseek-r1", "backend": "cuda",
                    "urls": {"anthropic": "https://taotoken.net/api",
                             "openai": "https://taotoken.net/api/v1"}}
    unknown = json.loads(taosync("route", "--json", "--default", "nope").out)
    assert unknown["route"] == "balanced" and unknown["known"] is False


def test_route_uses_overrides_and_never_needs_the_key(taosync, fleet_file, monkeypatch):
    text = fleet_file.read_text().replace(
        "  key: ${env:TAOTOKEN_API_KEY}",
        "  key: ${env:TAOTOKEN_API_KEY}\n  openai_base_url: https://gw.example.com/oai")
    fleet_file.write_text(text)
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    data = json.loads(taosync("route", "--json", "fast").out)
    assert data["urls"]["openai"] == "https://gw.example.com/oai"
    assert data["urls"]["anthropic"] == "https://taotoken.net/api"


def test_route_without_a_task_lists_the_table(taosync):
    r = taosync("route")
    assert r.rc == 0
    assert "balanced  claude-sonnet-4-20250514  (default)" in r.out
    rows = json.loads(taosync("route", "--json").out)["routes"]
    assert [row["route"] for row in rows] == ["fast", "balanced", "deep", "batch"]


def test_route_invalid_fleet_exits_2(taosync, fleet_file):
    fleet_file.write_text("version: 1\ngateway: {base_url: https://x}\nmodels: {}\n")
    r = taosync("route", "fast")
    assert r.rc == 2 and r.out == ""
    assert "fleet.yaml:" in r.err


def test_route_imports_neither_pydantic_nor_httpx(fleet_file, home):
    code = ("import sys; from taosync.cli import run; "
            f"rc = run(['--home', {str(home)!r}, '-c', {str(fleet_file)!r}, 'route', 'fast']); "
            "print(sorted(m for m in ('pydantic', 'httpx', 'jsonschema', 'tomlkit') "
            "if m in sys.modules), rc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip().endswith("[] 0"), out


# ----------------------------------------------------------------------------- env


def test_env_prints_exports_without_the_key(taosync):
    r = taosync("env")
    assert r.rc == 0
    assert "export TAOTOKEN_BASE_URL='https://taotoken.net/api'" in r.out
    assert "export TAOTOKEN_OPENAI_BASE_URL='https://taotoken.net/api/v1'" in r.out
    assert "export TAOTOKEN_MODEL_FAST='gpt-4o-mini'" in r.out
    assert "export TAOTOKEN_MODEL='claude-sonnet-4-20250514'" in r.out
    assert "TAOTOKEN_API_KEY" not in r.out and TEST_KEY not in r.both
    assert f"export TAOTOKEN_API_KEY='{TEST_KEY}'" in taosync("env", "--with-key").out


def test_env_with_key_needs_a_resolvable_key(taosync, monkeypatch):
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    assert taosync("env").rc == 0
    r = taosync("env", "--with-key")
    assert r.rc == 2 and "TAOTOKEN_API_KEY is not set" in r.err


def expected(with_key: bool) -> dict[str, str]:
    out = {
        "TAOTOKEN_BASE_URL": "https://gw.example.com/api",
        "TAOTOKEN_OPENAI_BASE_URL": "https://gw.example.com/api/v1",
        "TAOTOKEN_ANTHROPIC_BASE_URL": "https://gw.example.com/api",
        "TAOTOKEN_MODEL_FAST_LANE": "gpt-4o-mini",
        "TAOTOKEN_MODEL_ODD_ONE": ODD_MODEL,
        "TAOTOKEN_MODEL_DEEP": "nvidia/deepseek-r1",
        "TAOTOKEN_MODEL": "nvidia/deepseek-r1",
    }
    if with_key:
        out["TAOTOKEN_API_KEY"] = TEST_KEY
    return out


def tao_vars(nul_separated: bytes) -> dict[str, str]:
    out = {}
    for item in nul_separated.split(b"\0"):
        name, _, value = item.decode().partition("=")
        if name.startswith("TAOTOKEN_"):
            out[name] = value
    return out


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TAOTOKEN_")}


@pytest.mark.parametrize("with_key", [False, True])
def test_env_sourced_by_a_real_sh(taosync, odd_fleet, with_key):
    args = ["env"] + (["--with-key"] if with_key else [])
    r = taosync(*args, config=odd_fleet)
    assert r.rc == 0, r.err
    assert "warning" in r.err  # the trailing slash of base_url, said on stderr only
    proc = subprocess.run(["sh", "-c", 'eval "$EXPORTS" && env -0'],
                          env={**clean_env(), "EXPORTS": r.out}, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert tao_vars(proc.stdout) == expected(with_key)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed here")
def test_env_sourced_by_fish(taosync, odd_fleet):  # pragma: no cover - needs fish
    r = taosync("env", "--shell", "fish", "--with-key", config=odd_fleet)
    proc = subprocess.run(["fish", "--no-config", "-c", "source; and env -0"], input=r.out.encode(),
                          env=clean_env(), capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert tao_vars(proc.stdout) == expected(True)


@pytest.mark.skipif(shutil.which("pwsh") is None, reason="PowerShell (pwsh) is not installed here")
def test_env_sourced_by_powershell(taosync, odd_fleet, tmp_path):  # pragma: no cover
    r = taosync("env", "--shell", "powershell", "--with-key", config=odd_fleet)
    script = tmp_path / "env.ps1"
    script.write_text(r.out + "\nGet-ChildItem env:TAOTOKEN_* | ForEach-Object "
                      "{ [Console]::Out.Write($_.Name + '=' + $_.Value + [char]0) }\n")
    proc = subprocess.run(["pwsh", "-NoProfile", "-File", str(script)], capture_output=True,
                          env=clean_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert tao_vars(proc.stdout) == expected(True)


def test_env_quoting_per_shell():
    from taosync.commands.env import line

    assert line("X", "a'b", "sh") == "export X='a'\\''b'"
    assert line("X", "a'b\\c", "fish") == "set -gx X 'a\\'b\\\\c'"
    assert line("X", "a'b", "powershell") == "$env:X = 'a''b'"
    assert line("X", "$(x)", "powershell") == "$env:X = '$(x)'"


def test_env_json_and_route_name_collisions(taosync, fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace(
        "  batch: intel/llama-7b", "  batch: intel/llama-7b\n  Fast: intel/llama-7b"))
    r = taosync("env", "--json")
    data = json.loads(r.out)
    assert data["TAOTOKEN_MODEL_FAST"] == "gpt-4o-mini"
    assert "routes 'fast' and 'Fast' both become TAOTOKEN_MODEL_FAST" in r.err
    assert "TAOTOKEN_API_KEY" not in data


# ----------------------------------------------------------------------- completion


def complete(words: str, cword: int, shell: str = "bash") -> subprocess.CompletedProcess:
    env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword),
           "_TAOSYNC_COMPLETE": f"{shell}_complete"}
    return subprocess.run([str(ENTRY)], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_generates(shell):
    proc = subprocess.run([str(ENTRY)], env={**os.environ, "_TAOSYNC_COMPLETE": f"{shell}_source"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "_taosync_completion" in proc.stdout
    assert "_TAOSYNC_COMPLETE" in proc.stdout


def test_completion_of_ap_offers_apply():
    proc = complete("taosync ap", 1)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["plain,apply"]


def test_completion_of_options_and_values(tmp_path):
    assert "plain,--from" in complete("taosync import --f", 2).stdout.split()
    assert complete("taosync import --from co", 3).stdout.split() == [
        "plain,codex", "plain,continue"]
    assert complete("taosync env --shell p", 3).stdout.split() == ["plain,powershell"]


def test_completion_of_route_names_from_the_fleet(tmp_path):
    proc = subprocess.run([str(ENTRY)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COMP_WORDS": "taosync route ba", "COMP_CWORD": "2",
                               "_TAOSYNC_COMPLETE": "bash_complete", "TAOSYNC_CONFIG": str(EXAMPLE_FLEET)})
    assert proc.stdout.split() == ["plain,balanced", "plain,batch"]


def test_completion_in_bash_itself():
    """The generated bash script, loaded into a real bash, completes `taosync ap`."""
    if shutil.which("bash") is None:  # pragma: no cover
        pytest.skip("bash is not installed here")
    script = subprocess.run([str(ENTRY)], env={**os.environ, "_TAOSYNC_COMPLETE": "bash_source"},
                            capture_output=True, text=True, timeout=60).stdout
    probe = (script + "\nCOMP_WORDS=(taosync ap); COMP_CWORD=1; "
             "_taosync_completion taosync; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    env = {**os.environ, "PATH": f"{ENTRY.parent}:{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["apply"]
