"""How long `taosync plan` and a no-op `taosync apply` take, next to a bare interpreter.

    python bench/plan_bench.py            # 20 rounds
    python bench/plan_bench.py -n 50

In one run, alternating so every command sees the same machine load, with a dummy key
and no network, it times:

* ``python -c pass`` — the floor;
* ``plan`` on an empty home (cold: fleet.yaml loaded, checked, rendered, every file planned);
* ``plan`` after an apply (the no-op path: cached render, files hashed, nothing parsed);
* ``apply --no-verify`` after an apply (the same no-op path, plus the state read).

Prints medians, differences and ratios to the bare interpreter, and README-ready lines.
Bytecode writing is left on for the children, as after a normal ``pip install``.
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

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict, ok=(0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--rounds", type=int, default=20)
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TAOTOKEN_API_KEY"] = "sk-bench-0000000000000000dummy"
    for var in ("TAOSYNC_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME",
                "CLAUDE_CONFIG_DIR", "CLINE_DIR", "CLINE_DATA_DIR", "CONTINUE_GLOBAL_DIR"):
        env.pop(var, None)
    py = sys.executable
    fleet = str(ROOT / "fleet.yaml")
    with tempfile.TemporaryDirectory(prefix="taosync-bench-") as tmp:
        empty, applied = Path(tmp, "empty"), Path(tmp, "applied")
        applied.mkdir()

        def taosync(home: Path, *cmd: str) -> list[str]:
            return [py, "-m", "taosync", "--home", str(home), "-c", fleet, *cmd, "-q"]

        timed(taosync(applied, "apply", "--no-verify"), env)
        runs = {
            "python -c pass": [py, "-c", "pass"],
            "plan, empty home (cold)": taosync(empty, "plan"),
            "plan, after apply (no-op)": taosync(applied, "plan"),
            "apply, after apply (no-op)": taosync(applied, "apply", "--no-verify"),
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for argv in runs.values():  # warm-up (bytecode, page cache)
            timed(argv, env)
        for _ in range(args.rounds):
            for name, argv in runs.items():
                if name.startswith("plan, empty"):
                    shutil.rmtree(empty, ignore_errors=True)
                times[name].append(timed(argv, env))
                if list(empty.glob("*")):
                    sys.exit("plan wrote into the home")

    med = {name: statistics.median(t) * 1000 for name, t in times.items()}
    bare = med["python -c pass"]
    for name, m in med.items():
        extra = "" if name == "python -c pass" else f"  +{m - bare:6.1f} ms  {m / bare:4.1f}x"
        print(f"{name:<28} median {m:7.1f} ms{extra}")
    print(f"({args.rounds} alternating rounds, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores)")
    noop = med["plan, after apply (no-op)"]
    print(f"goal (plan within 200 ms of the bare interpreter): no-op "
          f"{'met' if noop - bare <= 200 else 'NOT met'}, cold "
          f"{'met' if med['plan, empty home (cold)'] - bare <= 200 else 'NOT met'}")
    print()
    print("README lines:")
    for name in list(med)[1:]:
        print(f"| {name} | {med[name]:.0f} ms | +{med[name] - bare:.0f} ms | "
              f"{med[name] / bare:.1f}x |")
    print(f"| python -c pass | {bare:.0f} ms | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
