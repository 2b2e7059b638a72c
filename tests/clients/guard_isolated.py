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

from ruamel.yaml import YAML

KEEP = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")


def run_isolated(fleet_file: Path, home: Path, key: str, argv: list[str],
                 files: dict[str, str], *, env: dict[str, str] | None = None,
                 timeout: float = 180) -> dict:
    job = {"fleet": str(fleet_file), "home": str(home), "argv": argv, "env": env or {},
           "files": files, "timeout": timeout}
    r = subprocess.run(["unshare", "-n", sys.executable, __file__, json.dumps(job)],
                       capture_output=True, text=True, timeout=timeout + 120,
                       env={**os.environ, "TAOSYNC_STUB_KEY": key})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1])


def _seen(stub) -> list[dict]:
    return [{"method": s.method, "path": s.path, "auth": s.auth,
             "model": s.body.get("model") if isinstance(s.body, dict) else None}
            for s in stub.requests]


def _main(job: dict) -> dict:
    from taosync.stub import Stub

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    key = os.environ.pop("TAOSYNC_STUB_KEY")
    yaml = YAML(typ="safe")
    fleet_path = Path(job["fleet"])
    data = yaml.load(fleet_path.read_text())
    models = list(data["models"])
    home = Path(job["home"])
    work = home / "work"
    with Stub(key=key, models=models) as a, Stub(key=key, models=models, prefix="/b") as b:
        data["gateway"]["base_url"] = a.root
        with fleet_path.open("w") as fh:
            yaml.dump(data, fh)
        taosync_env = {**os.environ, "TAOTOKEN_API_KEY": key}
        applied = subprocess.run([sys.executable, "-m", "taosync", "apply", "--no-verify",
                                  "--home", str(home), "-c", str(fleet_path)],
                                 capture_output=True, text=True, env=taosync_env)
        if applied.returncode != 0:
            return {"apply": applied.stdout + applied.stderr}
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        for name, text in job["files"].items():
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{B}", b.root))
        guard = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                                str(fleet_path), "doctor", "--project", str(work), "--json"],
                               capture_output=True, text=True, env=taosync_env)
        client_env = {name: os.environ[name] for name in KEEP if name in os.environ}
        client_env.update(HOME=str(home), **job["env"])
        try:
            ran = subprocess.run(job["argv"], capture_output=True, text=True, env=client_env,
                                 cwd=work, timeout=job["timeout"], stdin=subprocess.DEVNULL)
            rc, out, err = ran.returncode, ran.stdout, ran.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
        return {"apply": "ok", "guard_rc": guard.returncode,
                "guard": json.loads(guard.stdout) if guard.stdout.strip() else guard.stderr,
                "rc": rc, "out": out, "err": err, "a": _seen(a), "b": _seen(b),
                "b_root": b.root}


if __name__ == "__main__":
    print(json.dumps(_main(json.loads(sys.argv[1]))))
