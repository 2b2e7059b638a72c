"""How much hand code the clients' render/read/import still takes (issue #24: at most half).

    .venv/bin/python bench/client_code.py [--base REV]

Measured in the 13 client modules of issue #24 (not declare.py, base.py, plugin.py,
registry.py, readme.py: the shared machinery) as the lines of every top-level ``def``
and ``class`` and of the ``CLIENT = …`` statement, from ``ast`` (``lineno`` to
``end_lineno``), ``doctor`` left out (it is doctor's check, not render/read/import).
Two counts, each applied alike to ``--base`` (default: the commit before #24's
declarations, the parent of the first commit that touched declare.py) and to the
working tree:

* ``code``: only lines of code — blank lines, comment lines and docstrings do not
  count, so neither deleting documentation nor spacing moves the figure;
* ``span``: every line from ``def`` to the end (the count #24's figures were first
  given in: 2,544 before).

The goal is ``code`` ≤ half of the base's; ``span`` is printed beside it.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("aider", "claude_code", "cline", "codex", "continue_", "gemini_cli", "gptme",
           "kilo", "llm", "mistral_vibe", "opencode", "opencode_family", "qwen_code",
           "shell_gpt")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def base_rev() -> str:
    """The parent of the first commit that touched taosync/clients/declare.py."""
    first = git("log", "--format=%H", "--reverse", "--", "taosync/clients/declare.py")
    return git("rev-parse", first.split()[0] + "^").strip()


def source(module: str, rev: str | None) -> str | None:
    path = f"taosync/clients/{module}.py"
    if rev is None:
        file = ROOT / path
        return file.read_text(encoding="utf-8") if file.is_file() else None
    done = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True,
                          text=True)
    return done.stdout if done.returncode == 0 else None


def _counted(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name != "doctor"
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == "CLIENT"
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def _docstrings(node: ast.AST) -> set[int]:
    """The line numbers of every docstring inside ``node``."""
    out: set[int] = set()
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            out.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return out


def measure(text: str) -> tuple[int, int]:
    """(code, span) of one module's text."""
    lines = text.splitlines()
    code = span = 0
    for node in ast.parse(text).body:
        if not _counted(node):
            continue
        numbers = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        span += len(numbers)
        docs = _docstrings(node)
        code += sum(1 for n in numbers if n not in docs and lines[n - 1].strip()
                    and not lines[n - 1].strip().startswith("#"))
    return code, span


def totals(rev: str | None) -> dict[str, tuple[int, int]]:
    out = {}
    for module in MODULES:
        text = source(module, rev)
        if text is not None:
            out[module] = measure(text)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None, help="the revision to compare with")
    args = parser.parse_args()
    rev = args.base or base_rev()
    before, now = totals(rev), totals(None)
    print(f"{'module':<18}{'code':>12}{'span':>12}   (base {rev[:10]} → now)")
    for module in MODULES:
        b, n = before.get(module, (0, 0)), now.get(module, (0, 0))
        print(f"{module:<18}{b[0]:>5} → {n[0]:<5}{b[1]:>5} → {n[1]:<5}")
    code = (sum(v[0] for v in before.values()), sum(v[0] for v in now.values()))
    span = (sum(v[1] for v in before.values()), sum(v[1] for v in now.values()))
    print(f"{'total':<18}{code[0]:>5} → {code[1]:<5}{span[0]:>5} → {span[1]:<5}")
    print(f"code: {code[1]}/{code[0]} = {code[1] / code[0]:.0%} (goal ≤ 50%: ≤ "
          f"{code[0] // 2}); span: {span[1]}/{span[0]} = {span[1] / span[0]:.0%}")


if __name__ == "__main__":
    main()
