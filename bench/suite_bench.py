"""The test suite's wall time on this machine, quiet and under load, serially and in parallel.

    .venv/bin/python bench/suite_bench.py [--hogs 2] [--modes serial,parallel]

"Under load" is made here rather than hoped for: ``--hogs N`` busy-loop processes (one
per core on the 2-core CI machine) run for the whole of each loaded run, so the suite
gets about half the CPU it would have alone. Each mode runs quiet, then loaded; the
suite must pass every time (a failure is reported, not timed). Goal (#16): ≤ 100 s on
2 cores under load with README's command (``python -m pytest -n auto``). Takes about as
long as four suite runs. Prints a README-ready line last.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {"serial": [], "parallel": ["-n", "auto"]}
HOG = "while True: pass"


@contextlib.contextmanager
def hogs(count: int):
    """``count`` processes spinning on a core each, stopped on the way out."""
    procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def suite(extra: list[str]) -> tuple[float, str]:
    """(seconds, pytest's last line); raises SystemExit when the suite fails."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra]  # -q: addopts
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - start
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode != 0:
        sys.exit(f"the suite failed ({' '.join(argv[3:])}): {last}\n{proc.stdout[-3000:]}")
    return took, last


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--modes", default="serial,parallel")
    args = parser.parse_args()
    results = []
    for mode in args.modes.split(","):
        quiet, _ = suite(MODES[mode])
        with hogs(args.hogs):
            loaded, last = suite(MODES[mode])
        results.append((mode, quiet, loaded))
        print(f"{mode:<9} quiet {quiet:6.1f} s   with {args.hogs} busy processes "
              f"{loaded:6.1f} s   ({last})", flush=True)
    print(f"suite on Python {platform.python_version()}, {os.cpu_count()} CPUs: " + "; ".join(
        f"{mode} {q:.0f} s quiet / {l:.0f} s with {args.hogs} busy processes"
        for mode, q, l in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
