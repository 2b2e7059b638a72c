"""A no-op ``taosync apply`` against ``python -c pass`` on the same interpreter.

    .venv/bin/python bench/noop_bench.py [--rounds 40]

Installs taosync the way users get it — ``pip install --no-deps .`` into a fresh venv,
bytecode compiled — and times, interleaved in one run so both see the same machine,
that venv's ``python -c pass`` and its ``taosync apply`` console script on a home where
the example fleet was applied (nothing changed: the fast path, taosync/fastpath.py,
answers). The venv has none of taosync's dependencies: should the fast path fall
through, the run fails loudly instead of timing the wrong thing. Goal: ratio ≤ 1.6.
Prints a README-ready line last.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-bench-0123456789abcdef"


def install(venv: Path) -> Path:
    """A regular (non-editable) install of this checkout, with bytecode; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(ROOT)],
                   check=True)
    subprocess.run([str(python), "-m", "compileall", "-q",
                    *[p for p in map(str, (venv / "lib").glob("python*/site-packages/taosync"))]],
                   check=True)
    return python


def timed(argv: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="taosync-noop-") as tmp:
        tmp = Path(tmp)
        python = install(tmp / "venv")
        taosync = tmp / "venv" / "bin" / "taosync"
        home, fleet = tmp / "home", tmp / "fleet.yaml"
        home.mkdir()
        shutil.copyfile(ROOT / "fleet.yaml", fleet)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "XDG_"))}
        env["TAOTOKEN_API_KEY"] = KEY
        cli = [str(taosync), "--home", str(home), "-c", str(fleet), "apply"]
        # the first apply needs the dependencies: this checkout's interpreter does it
        subprocess.run([sys.executable, "-m", "taosync", *cli[1:], "--no-verify"],
                       env=dict(env, PYTHONPATH=str(ROOT)), check=True,
                       stdout=subprocess.DEVNULL)
        check = subprocess.run(cli, env=env, capture_output=True, text=True)
        if check.returncode != 0 or not check.stdout.startswith("nothing to do"):
            print("the fast path did not answer:", check.stdout, check.stderr, file=sys.stderr)
            return 1
        bare = [str(python), "-c", "pass"]
        for _ in range(3):  # warm the page cache for both
            timed(bare, env), timed(cli, env)
        base, noop = [], []
        for _ in range(args.rounds):
            base.append(timed(bare, env))
            noop.append(timed(cli, env))
    b, n = statistics.median(base), statistics.median(noop)
    print(f"python -c pass  median {b * 1000:6.1f} ms  (min {min(base) * 1000:.1f})")
    print(f"no-op apply     median {n * 1000:6.1f} ms  (min {min(noop) * 1000:.1f})")
    print(f"no-op apply / python -c pass: {n / b:.2f}x (median of {args.rounds} interleaved "
          f"rounds; min/min {min(noop) / min(base):.2f}x; Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
