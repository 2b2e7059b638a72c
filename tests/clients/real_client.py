"""Run a real client binary against the stand-in gateway, with loopback as the only network.

``run_real_client`` re-runs this file under ``unshare -n`` (a network namespace holding only
loopback, so the client can reach nothing but the stub): there it starts
:class:`taosync.stub.Stub`, points the fleet at it, runs ``taosync apply --home``, runs the
client with ``HOME`` set to that home and returns what the stub saw (method, path, model,
whether the key matched, headers) and the client's output, as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

#: environment variables kept for the client (everything else is dropped)
KEEP = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")


def can_isolate() -> bool:
    """Whether this machine lets us make a loopback-only network namespace (inside
    another one too: CI runs the real-client tests in one). With
    ``TAOSYNC_REAL_CLIENTS=required`` it must: a test that cannot isolate fails."""
    ok = shutil.which("unshare") is not None and shutil.which("ip") is not None and \
        subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    from conftest import real_clients_required  # tests only: this file also runs alone

    if not ok and real_clients_required():
        import pytest

        pytest.fail("`unshare -n` cannot make a loopback-only network namespace here, and "
                    "TAOSYNC_REAL_CLIENTS=required", pytrace=False)
    return ok


def run_real_client(fleet_file: Path, home: Path, key: str, argv: list[str], *,
                    env: dict[str, str] | None = None, timeout: float = 120,
                    faults: tuple[str, ...] = ()) -> dict:
    """What the stub saw while ``argv`` ran against the fleet applied into ``home``
    (``faults``: the stub's, e.g. ``rate_limited@gw-main``)."""
    job = {"fleet": str(fleet_file), "home": str(home), "argv": argv, "env": env or {},
           "timeout": timeout, "faults": list(faults)}
    return isolated(__file__, job, key, timeout + 60)


def isolated(script: str, job: dict, key: str, timeout: float) -> dict:
    """Run ``script`` (a file of this folder) with ``job`` under ``unshare -n``, the key
    handed over in its environment; the JSON its last line prints."""
    r = subprocess.run(["unshare", "-n", sys.executable, script, json.dumps(job)],
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "TAOSYNC_STUB_KEY": key})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1])


def in_namespace(fleet_path: Path) -> tuple[str, dict]:
    """Inside :func:`isolated`'s namespace: loopback up; (the key, the fleet's data)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    return os.environ.pop("TAOSYNC_STUB_KEY"), YAML(typ="safe").load(fleet_path.read_text())


def apply_at(fleet_path: Path, data: dict, root: str, home: str, key: str) -> str | None:
    """The fleet ``data`` with its gateway at ``root``, written and applied into ``home``;
    None, or what a failed apply printed."""
    data["gateway"]["base_url"] = root
    with fleet_path.open("w") as fh:
        YAML(typ="safe").dump(data, fh)
    applied = subprocess.run([sys.executable, "-m", "taosync", "apply", "--no-verify",
                              "--home", home, "-c", str(fleet_path)],
                             capture_output=True, text=True,
                             env={**os.environ, "TAOTOKEN_API_KEY": key})
    return None if applied.returncode == 0 else applied.stdout + applied.stderr


def run_client(job: dict, home: str, cwd: Path | str) -> tuple:
    """(rc or "timeout", stdout, stderr) of the client ``job["argv"]``, run in ``cwd`` with
    ``HOME`` and ``job["env"]`` and nothing else of this environment but :data:`KEEP`."""
    client_env = {name: os.environ[name] for name in KEEP if name in os.environ}
    client_env.update(HOME=home, **job["env"])
    try:
        ran = subprocess.run(job["argv"], capture_output=True, text=True, env=client_env,
                             cwd=cwd, timeout=job["timeout"], stdin=subprocess.DEVNULL)
        return ran.returncode, ran.stdout, ran.stderr
    except subprocess.TimeoutExpired as exc:
        return "timeout", str(exc.stdout or ""), str(exc.stderr or "")


def _main(job: dict) -> dict:
    from taosync.stub import Stub

    fleet_path = Path(job["fleet"])
    key, data = in_namespace(fleet_path)
    with Stub(key=key, models=list(data["models"]), faults=job.get("faults", [])) as stub:
        root = stub.root
        failed = apply_at(fleet_path, data, root, job["home"], key)
        if failed is not None:
            return {"apply": failed}
        rc, out, err = run_client(job, job["home"], job["home"])
        seen = [{"method": s.method, "path": s.path, "auth": s.auth, "status": s.status,
                 "model": s.body.get("model") if isinstance(s.body, dict) else None,
                 "headers": {k.lower(): v for k, v in s.headers.items()
                             if k.lower() not in ("authorization", "x-api-key")}}
                for s in stub.requests]
    return {"apply": "ok", "rc": rc, "out": out, "err": err, "requests": seen,
            "root": root}


if __name__ == "__main__":
    print(json.dumps(_main(json.loads(sys.argv[1]))))
