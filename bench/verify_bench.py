"""verify's total time for N backends each delayed D, as a ratio to a single probe.

    .venv/bin/python bench/verify_bench.py [--backends 100] [--delay 0.3] [--repeat 7]

Runs the real runner (one shared httpx client, asyncio) against the stand-in gateway on
loopback — ``taosync stub`` in its own process, as a gateway would be — every model delayed
D seconds. Single and N-backend runs alternate, so both see the same machine; the medians
are compared. Goal: ratio ≤ 1.5 at 100 backends (the total stays close to the slowest
single probe: the probes are spread over connection pools of verify/runner.py POOL_SIZE,
so httpcore's per-pool scans stay short). Prints a README-ready line last.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taosync.clients.base import ProbeSpec  # noqa: E402
from taosync.fleet.model import Verify  # noqa: E402
from taosync.fleet.secrets import Secret  # noqa: E402
from taosync.stub import Stub  # noqa: E402
from taosync.verify.runner import run  # noqa: E402

KEY = "sk-bench-0123456789abcdef"
GOAL = 1.5  # total / a single probe
SHAPES = [  # a mix, as a real fleet has: Claude Code, Codex, Cline/Continue
    ("claude-code", "anthropic-messages", "", "/v1/messages?beta=true"),
    ("codex", "openai-responses", "/v1", "/responses"),
    ("cline", "openai-chat", "/v1", "/chat/completions"),
]


def specs(root: str, n: int) -> list[ProbeSpec]:
    out = []
    for i in range(n):
        client, protocol, base_tail, path = SHAPES[i % len(SHAPES)]
        base = root + base_tail
        url = base + (path if protocol != "anthropic-messages" else path)
        out.append(ProbeSpec(client, f"r{i}", f"model-{i:02d}", protocol, base, url, "bearer"))
    return out


@contextlib.contextmanager
def stand_in(models: list[str], delay: float, in_process: bool):
    """The stand-in gateway's root URL: `taosync stub` in its own process, like a gateway."""
    if in_process:
        with Stub(key=KEY, models=models, faults=[f"delay={delay}"]) as stub:
            yield stub.root
        return
    argv = [sys.executable, "-m", "taosync", "stub", "--key-env", "BENCH_KEY",
            "--fault", f"delay={delay}", "-c", os.devnull]
    for m in models:
        argv += ["--model", m]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "BENCH_KEY": KEY})
    try:
        root = proc.stdout.readline().strip()
        if not root.startswith("http://127.0.0.1:"):
            raise SystemExit("the stand-in did not start")
        yield root
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def timed(probes: list[ProbeSpec], verify: Verify) -> float:
    t = time.perf_counter()
    results = run(probes, Secret(KEY), verify)
    elapsed = time.perf_counter() - t
    bad = [r for r in results if not r.ok]
    if bad:
        raise SystemExit(f"bench probe failed: {bad[0].diagnosis}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", type=int, default=100)
    ap.add_argument("--delay", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--in-process", action="store_true",
                    help="run the stand-in in this process (it then competes with the probes "
                         "for the GIL; a real gateway is another process)")
    args = ap.parse_args()
    models = [f"model-{i:02d}" for i in range(args.backends)]
    verify = Verify(timeout=30, retries=0)
    with stand_in(models, args.delay, args.in_process) as root:
        one, many = specs(root, 1), specs(root, args.backends)
        timed(one, verify)  # warm-up: imports, TLS context, the stub's first thread
        timed(many, verify)
        singles, alls = [], []
        for _ in range(args.repeat):
            singles.append(timed(one, verify))
            alls.append(timed(many, verify))
    single, total = statistics.median(singles), statistics.median(alls)
    ratio = total / single
    sequential = args.backends * single
    print(f"single probe    median {single * 1000:7.1f} ms  (min {min(singles) * 1000:.1f})")
    print(f"{args.backends} backends     median {total * 1000:7.1f} ms  (min {min(alls) * 1000:.1f})"
          f"   sequential would be ≈ {sequential * 1000:.0f} ms")
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"ratio {ratio:.2f} ({verdict} the ≤ {GOAL} goal)")
    cpus = os.cpu_count()
    print(f"\nverify, {args.backends} backends each delayed {args.delay * 1000:.0f} ms (stand-in "
          f"gateway, loopback): {total:.2f} s total = {ratio:.2f}× a single probe "
          f"({single:.2f} s); sequential ≈ {sequential:.1f} s. Median of {args.repeat}"
          f"{', stand-in in-process' if args.in_process else ''}, "
          f"Python {platform.python_version()}, {cpus} CPU{'s' if cpus != 1 else ''}.")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
