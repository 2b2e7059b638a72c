"""A new client is its module, one registry line and its test file (+ the files one
command regenerates): CONTRIBUTING.md's recipe, followed word for word in a copy of this
checkout, gives a client the registry-wide contracts and the generated files accept."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: CONTRIBUTING.md's blocks a contributor copies: ``<!-- recipe: WHERE -->`` then the code
RECIPE = re.compile(r"<!-- recipe: (\S+) -->\n```python\n(.*?)```", re.S)
#: what the one command may rewrite
GENERATED = {"README.md", "docs/fleet.md", "docs/secrets.md", "docs/clients.md",
             "docs/development.md", "schemas/fleet.schema.json",
             "taosync/schemas/fleet.schema.json", "taosync/engine/location_vars.py"}
SKIP = shutil.ignore_patterns(".git", "__pycache__", ".venv", "*.egg-info", ".pytest_cache",
                              ".hypothesis", ".mypy_cache", "sandbox")


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *argv], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_documented_recipe_adds_a_client(tmp_path):
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT, copy, ignore=SKIP)
    blocks = dict(RECIPE.findall((copy / "CONTRIBUTING.md").read_text(encoding="utf-8")))
    assert set(blocks) == {"taosync/clients/example_agent.py", "registry",
                           "tests/clients/test_example_agent.py"}
    before = _digests(copy)

    for where, text in blocks.items():  # the three files a contributor writes
        if where == "registry":
            registry = copy / "taosync" / "clients" / "registry.py"
            source = registry.read_text(encoding="utf-8")
            head, sep, tail = source.partition("CLIENTS: dict[str, str] = {\n")
            registry.write_text(head + sep + text + tail, encoding="utf-8")
        else:
            (copy / where).write_text(text, encoding="utf-8")
    written = {path for path, digest in _digests(copy).items() if before.get(path) != digest}
    assert written == {"taosync/clients/example_agent.py", "taosync/clients/registry.py",
                       "tests/clients/test_example_agent.py"}

    stale = _run(copy, "-m", "taosync.dev", "check")
    assert stale.returncode == 1 and "README.md" in stale.stderr, stale.stderr
    done = _run(copy, "-m", "taosync.dev", "regenerate")
    assert done.returncode == 0, done.stderr
    regenerated = {path for path, digest in _digests(copy).items()
                   if before.get(path) != digest} - written
    assert regenerated <= GENERATED and "README.md" in regenerated, regenerated
    assert "Example Agent" in (copy / "README.md").read_text(encoding="utf-8")  # the intro
    docs = "".join(p.read_text(encoding="utf-8") for p in sorted((copy / "docs").glob("*.md")))
    assert "Example Agent" in docs and "example-agent@1.0.0" in docs

    suite = _run(copy, "-m", "pytest", "-x", "-p", "no:cacheprovider",
                 "tests/clients/test_example_agent.py",
                 "tests/clients/test_registry_contract.py",
                 "tests/clients/test_plugin_contract.py", "tests/test_readme_generated.py",
                 "tests/test_schema.py", "tests/test_layers.py", "tests/test_one_home.py",
                 "tests/test_clients_render.py",
                 "-k", "example or not test_registry_contract")
    assert suite.returncode == 0, suite.stdout[-3000:] + suite.stderr[-2000:]
    ran = re.search(r"(\d+) passed", suite.stdout)
    assert ran and int(ran.group(1)) > 20, suite.stdout[-500:]
