"""The 22 common mistakes of docs/troubleshooting.md, each made and run (issue 29).

The page is the table: each ``### N. …`` section holds the change (a ``diff`` block:
the file after ``---``, ``-`` lines replaced by ``+`` lines) and the exact message
(a ``text`` block). Each case applies the example fleet for real in a temp home, makes
the change, runs ``python -m taosync apply`` again in a subprocess (a no-op apply may be
answered by the fast path, so only a real process proves what a user sees) and checks:
exit 2, the message exactly as documented (right line, column and fix), no traceback,
and nothing written. For fleet.yaml, ``validate`` says the same.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY, client_location_vars

PAGE = ROOT / "docs" / "troubleshooting.md"
TAB = "→"  # the page's stand-in for a tab character


def cases() -> dict[str, tuple[str, list[str], list[str], str]]:
    """id → (file, old lines, new lines, message), in the page's order."""
    text = PAGE.read_text(encoding="utf-8")
    out = {}
    for match in re.finditer(r"^### (\d+)\. (.+?)\n(.*?)(?=^##|\Z)", text, re.M | re.S):
        number, title, body = match.groups()
        diff = re.search(r"```diff\n(.*?)```", body, re.S)
        message = re.search(r"```text\n(.*?)```", body, re.S)
        assert diff and message, f"section {number} needs a diff and a text block"
        lines = diff.group(1).splitlines()
        assert lines[0].startswith("--- "), f"section {number}: the diff names its file"
        old = [ln[1:] for ln in lines[1:] if ln.startswith("-")]
        new = [ln[1:].replace(TAB, "\t") for ln in lines[1:] if ln.startswith("+")]
        (shown,) = message.group(1).strip().splitlines()
        out[f"{number}-{title}"] = (lines[0][4:].strip(), old, new, shown)
    return out


CASES = cases()


def test_the_page_names_22_mistakes_numbered_in_order():
    numbers = [int(case.split("-", 1)[0]) for case in CASES]
    assert numbers == list(range(1, 23)), numbers


def test_readme_links_the_page():
    assert "docs/troubleshooting.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def replace_lines(path: Path, old: list[str], new: list[str]) -> None:
    text = path.read_text(encoding="utf-8")
    block = "\n" + "\n".join(old) + "\n"
    assert ("\n" + text).count(block) == 1, (path, old)
    path.write_text(("\n" + text).replace(block, "\n" + "\n".join(new) + "\n", 1)[1:],
                    encoding="utf-8")


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``: its bytes and mode (nothing written means none moved)."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath, name)
            out[str(p.relative_to(root))] = (p.read_bytes(), p.stat().st_mode)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_each_mistake_names_its_line_and_fix_and_writes_nothing(case, tmp_path):
    target, old, new, shown = CASES[case]
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(EXAMPLE_FLEET, tmp_path / "fleet.yaml")
    env = {k: v for k, v in os.environ.items()
           if k not in {*client_location_vars(), "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                        "TAOSYNC_CONFIG", "CODEX_API_KEY", "NO_COLOR"}}
    env["TAOTOKEN_API_KEY"] = TEST_KEY
    env["PYTHONPATH"] = str(ROOT)  # this checkout's taosync, run from the temp directory

    def taosync(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                               "fleet.yaml", *argv], cwd=tmp_path, env=env, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=120)

    first = taosync("apply", "--no-verify")
    assert first.returncode == 0, first.stderr
    path = home / target[2:] if target.startswith("~/") else tmp_path / target
    replace_lines(path, old, new)
    before = files(home)

    r = taosync("apply", "--no-verify")
    err = r.stderr.replace(str(home), "~")
    assert r.returncode == 2, (r.returncode, r.stdout, err)
    assert "Traceback" not in err
    assert files(home) == before  # nothing written: no client file, not the state
    if target == "fleet.yaml":
        assert r.stdout == ""
        assert err.splitlines()[0] == shown, err
        assert err.splitlines()[-1].endswith("nothing was written"), err
        v = taosync("validate")
        assert v.returncode == 2 and v.stderr.splitlines()[0] == shown, v.stderr
    else:
        assert shown in err.splitlines(), err
