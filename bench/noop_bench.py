"""A no-op ``taosync apply`` against ``python -c pass`` on the same interpreter.

    .venv/bin/python bench/noop_bench.py [--rounds 40]

Installs taosync the way users get it — ``pip install --no-deps .`` into a fresh venv,
bytecode compiled — and times, interleaved in one run so all see the same machine,
that venv's ``python -c pass`` and ``taosync apply`` on a home where the example fleet
was applied (nothing changed: the fast path, taosync/fastpath.py, answers), started two
ways: through the console script pip wrote, and through the same script as uv writes it
(uv dropped the wrapper's ``import re``, astral-sh/uv#10627; pip's still has it, and on
this machine kind ``re`` alone costs about half a ``python -c pass``). The venv has none of taosync's dependencies: should the fast path fall
through, the run fails loudly instead of timing the wrong thing. Goal: ratio ≤ 1.6 (taosync's own share: the uv-style wrapper).
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
#: the console script uv writes (pip's is the same plus ``import re`` for argv[0])
UV_WRAPPER = """#!{python}
# -*- coding: utf-8 -*-
import sys
from taosync.__main__ import main
if __name__ == "__main__":
    if sys.argv[0].endswith("-script.pyw"):
        sys.argv[0] = sys.argv[0][:-11]
    elif sys.argv[0].endswith(".exe"):
        sys.argv[0] = sys.argv[0][:-4]
    sys.exit(main())
"""


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
        uv_style = tmp / "venv" / "bin" / "taosync-uv"
        uv_style.write_text(UV_WRAPPER.format(python=python))
        uv_style.chmod(0o755)
        runs = {"python -c pass": [str(python), "-c", "pass"],
                "apply (pip's script)": cli,
                "apply (uv-style script)": [str(uv_style), *cli[1:]]}
        for _ in range(3):  # warm the page cache for all
            for argv in runs.values():
                timed(argv, env)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, argv in runs.items():
                times[name].append(timed(argv, env))
    base = statistics.median(times["python -c pass"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<24} median {median * 1000:6.1f} ms  (min {min(values) * 1000:.1f})"
              f"  {median / base:.2f}x")
    ratio = statistics.median(times["apply (uv-style script)"]) / base
    pip_ratio = statistics.median(times["apply (pip's script)"]) / base
    print(f"no-op apply / python -c pass: {ratio:.2f}x ({pip_ratio:.2f}x through pip's "
          f"console script, which imports re); median of {args.rounds} interleaved rounds, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
