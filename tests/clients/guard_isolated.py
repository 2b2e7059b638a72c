"""The guard's real-client proof for a client that looks beyond loopback by itself (Droid):
``real_client.py``'s run, in a loopback-only network namespace, with a second stand-in.

:func:`run_isolated` re-runs this file under ``unshare -n``: there it starts stand-in A (the
fleet's gateway) and stand-in B (the repository's), applies the fleet at A into the home,
writes the repository's files (``{B}`` in their text: B's root) into ``~/work`` (a git work
tree), asks ``taosync doctor --project`` about it, runs the client there, and returns the
guard's answer and what each stand-in saw, as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from real_client import apply_at, in_namespace, isolated, run_client


def run_isolated(fleet_file: Path, home: Path, key: str, argv: list[str],
                 files: dict[str, str], *, env: dict[str, str] | None = None,
                 timeout: float = 180) -> dict:
    job = {"fleet": str(fleet_file), "home": str(home), "argv": argv, "env": env or {},
           "files": files, "timeout": timeout}
    return isolated(__file__, job, key, timeout + 120)


def _seen(stub) -> list[dict]:
    return [{"method": s.method, "path": s.path, "auth": s.auth,
             "model": s.body.get("model") if isinstance(s.body, dict) else None}
            for s in stub.requests]


def _main(job: dict) -> dict:
    from taosync.stub import Stub

    fleet_path = Path(job["fleet"])
    key, data = in_namespace(fleet_path)
    models = list(data["models"])
    home = Path(job["home"])
    work = home / "work"
    with Stub(key=key, models=models) as a, Stub(key=key, models=models, prefix="/b") as b:
        failed = apply_at(fleet_path, data, a.root, str(home), key)
        if failed is not None:
            return {"apply": failed}
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        for name, text in job["files"].items():
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{B}", b.root))
        guard = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                                str(fleet_path), "doctor", "--project", str(work), "--json"],
                               capture_output=True, text=True,
                               env={**os.environ, "TAOTOKEN_API_KEY": key})
        rc, out, err = run_client(job, str(home), work)
        return {"apply": "ok", "guard_rc": guard.returncode,
                "guard": json.loads(guard.stdout) if guard.stdout.strip() else guard.stderr,
                "rc": rc, "out": out, "err": err, "a": _seen(a), "b": _seen(b),
                "b_root": b.root}


if __name__ == "__main__":
    print(json.dumps(_main(json.loads(sys.argv[1]))))
