"""Save-to-synced latency of `taosync watch`: from writing fleet.yaml to every target
file holding the new value, debounce included.

    python bench/watch_bench.py              # 50 edits, default debounce (100 ms)
    python bench/watch_bench.py -n 100 --debounce 0.05

Runs a real ``taosync watch --no-verify --json`` on a sandbox home (dummy key, no
network). Each edit changes ``gateway.base_url`` (which lands in most client files),
saved the way editors save: a temporary file renamed over fleet.yaml. The clock starts
when the rename returns and stops when this process sees the new URL in every file that
holds it (polled every millisecond by inode and mtime, then read). Edits are spaced so
each is measured alone. Prints median, p95, min and max, and a README-ready line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "https://taotoken.net/api"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def save(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.bench-swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def wait_synced(files: list[Path], needle: str, timeout: float = 10.0) -> float | None:
    """Monotonic time at which every file holds ``needle``; None on timeout."""
    deadline = time.monotonic() + timeout
    pending = {f: None for f in files}  # path → (ino, mtime_ns) last read
    while time.monotonic() < deadline:
        for f in list(pending):
            try:
                st = f.stat()
            except FileNotFoundError:
                continue
            sig = (st.st_ino, st.st_mtime_ns, st.st_size)
            if sig == pending[f]:
                continue
            pending[f] = sig
            try:
                if needle in f.read_text():
                    del pending[f]
            except OSError:
                pass
        if not pending:
            return time.monotonic()
        time.sleep(0.001)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--edits", type=int, default=50)
    parser.add_argument("--debounce", type=float, default=0.1)
    parser.add_argument("--gap", type=float, default=0.4,
                        help="quiet seconds between edits (default 0.4)")
    args = parser.parse_args()

    env = dict(os.environ, TAOTOKEN_API_KEY="sk-bench-0000000000000000dummy",
               PYTHONUNBUFFERED="1")
    for var in ("TAOSYNC_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME",
                "CLAUDE_CONFIG_DIR", "CLINE_DIR", "CLINE_DATA_DIR", "CONTINUE_GLOBAL_DIR"):
        env.pop(var, None)
    template = (ROOT / "fleet.yaml").read_text()
    assert BASE in template
    with tempfile.TemporaryDirectory(prefix="taosync-watch-bench-") as tmp:
        home, fleet = Path(tmp, "home"), Path(tmp, "fleet.yaml")
        home.mkdir()
        start_url = "https://gw-start.example/api"
        fleet.write_text(template.replace(BASE, start_url))
        proc = subprocess.Popen(
            [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(fleet), "watch",
             "--no-verify", "--json", "--debounce", str(args.debounce)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        events: list[dict] = []
        reader = threading.Thread(
            target=lambda: [events.append(json.loads(line)) for line in proc.stdout],
            daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 30
            while not any(e["event"] == "applied" for e in events):
                if time.monotonic() > deadline or proc.poll() is not None:
                    sys.exit(f"watch did not start:\n{proc.stderr.read()}")
                time.sleep(0.01)
            time.sleep(args.gap)
            files = sorted(p for p in home.rglob("*") if p.is_file()
                           and ".local" not in p.parts and start_url in p.read_text())
            latencies = []
            for i in range(args.edits):
                url = f"https://gw{i}.example/api"
                text = template.replace(BASE, url)
                save(fleet, text)
                t0 = time.monotonic()
                t1 = wait_synced(files, url)
                if t1 is None:
                    sys.exit(f"edit {i} never synced; events: {events[-5:]}")
                latencies.append((t1 - t0) * 1000)
                time.sleep(args.gap)
            errors = [e for e in events if e["event"] in ("error", "invalid", "drift")]
        finally:
            proc.send_signal(__import__("signal").SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        applies = sum(1 for e in events if e["event"] == "applied")

    med, p95 = statistics.median(latencies), percentile(latencies, 0.95)
    print(f"taosync watch: {args.edits} edits of gateway.base_url, {len(files)} files each, "
          f"debounce {args.debounce * 1000:g} ms, {applies} applies, "
          f"{len(errors)} errors/drift events")
    print(f"  save → synced: median {med:.0f} ms, p95 {p95:.0f} ms, "
          f"min {min(latencies):.0f} ms, max {max(latencies):.0f} ms "
          f"(goal: median < 150, p95 < 300)")
    cpu = os.cpu_count()
    print()
    print("README:")
    print(f"| `taosync watch` save → every file synced ({args.edits} edits, debounce "
          f"{args.debounce * 1000:g} ms included) | median {med:.0f} ms · p95 {p95:.0f} ms "
          f"| {cpu} cores, Python {platform.python_version()} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
