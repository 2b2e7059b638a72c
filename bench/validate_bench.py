"""How long `taosync validate` takes on the example fleet, next to a bare interpreter.

    python bench/validate_bench.py            # 20 rounds
    python bench/validate_bench.py -n 50

Runs ``python -c pass`` and ``python -m taosync validate -c fleet.yaml --home <tmp>``
alternately (so both see the same machine load), with a dummy key in the environment
and no network, and prints the medians, their difference and ratio, and a line ready to
paste into the README. One warm-up run of each first; bytecode writing is left on for
the children (as after a normal ``pip install``), even if PYTHONDONTWRITEBYTECODE is set
here.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--rounds", type=int, default=20)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter to measure (default: this one)")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TAOTOKEN_API_KEY"] = "sk-bench-0000000000000000dummy"
    env.pop("TAOSYNC_CONFIG", None)
    with tempfile.TemporaryDirectory(prefix="taosync-bench-") as home:
        bare = [args.python, "-c", "pass"]
        validate = [args.python, "-m", "taosync", "validate", "-q",
                    "-c", str(ROOT / "fleet.yaml"), "--home", home]
        timed(bare, env, ROOT)
        timed(validate, env, ROOT)
        t_bare, t_validate = [], []
        for _ in range(args.rounds):
            t_bare.append(timed(bare, env, ROOT))
            t_validate.append(timed(validate, env, ROOT))

    b = statistics.median(t_bare) * 1000
    v = statistics.median(t_validate) * 1000
    print(f"python -c pass            median {b:7.1f} ms  (min {min(t_bare) * 1000:.1f})")
    print(f"taosync validate example  median {v:7.1f} ms  (min {min(t_validate) * 1000:.1f})")
    print(f"difference {v - b:.1f} ms, ratio {v / b:.2f}x  ({args.rounds} rounds, alternating)")
    goal = "met" if v - b <= 150 else "NOT met"
    print(f"goal (validate within 150 ms of the bare interpreter): {goal}")
    print()
    print("README line:")
    print(f"`taosync validate` on the example fleet: median {v:.0f} ms vs {b:.0f} ms for "
          f"`python -c pass` (+{v - b:.0f} ms, {v / b:.1f}x; {args.rounds} alternating runs, "
          f"Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"`python bench/validate_bench.py`).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
