"""The managed (system) scope with the real clients: ``taosync apply --system`` writes
Claude Code's ``/etc/claude-code/managed-settings.json`` and Codex's
``/etc/codex/managed_config.toml``, and the real binaries obey them over a conflicting
user file (docs/system.md).

``/etc`` is not writable here (nor in CI, which runs these tests as root of a user
namespace), so each step runs in a private mount namespace (``unshare --mount``, with
``--map-root-user`` when not root) where a directory of this test is bind-mounted over
``/etc``: it holds a link to every entry of the real ``/etc`` (bound beside it) plus the
``claude-code`` and ``codex`` directories taosync writes. The directory outlives each
namespace, so taosync and each client see the same managed files, and the test reads them
from outside. Where no mount namespace can be made the test skips, saying why — and fails
under ``TAOSYNC_REAL_CLIENTS=required``.

Two stand-in gateways: A, where the user's own files (a user-scope apply) point, and B,
the admin's, where the managed files point. The request must land at B.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import TEST_KEY, binary, real_clients_required
from one_shot import NODE_OFFLINE
from real import stand_in

CLAUDE = binary("TAOSYNC_TEST_CLAUDE_BIN", "claude")
CODEX = binary("TAOSYNC_TEST_CODEX_BIN", "codex")
QWEN = binary("TAOSYNC_TEST_QWEN_BIN", "qwen")
OPENCODE = binary("TAOSYNC_TEST_OPENCODE_BIN", "opencode")
KILO = binary("TAOSYNC_TEST_KILO_BIN", "kilo")
MANAGED = ("claude-code", "codex", "qwen-code", "opencode", "kilo")  # the /etc directories bound in the namespace

#: runs "$@" with the test's directory over /etc: $1 = the real /etc's mount point, $2 = it
NS_SCRIPT = """set -e
real=$1; over=$2; shift 2
mount --rbind /etc "$real"
mount --bind "$over" /etc
exec "$@"
"""


def _unshare() -> list[str]:
    return ["unshare", "--mount", "--propagation", "private",
            *(() if os.geteuid() == 0 else ("--map-root-user",))]


def _namespaces_or_skip() -> None:
    """Skip (fail, under TAOSYNC_REAL_CLIENTS=required) where no mount namespace can be
    made, or a bind mount is refused in it."""
    why = None
    if shutil.which("unshare") is None:
        why = "unshare (util-linux) is not installed"
    else:
        r = subprocess.run([*_unshare(), "sh", "-c", "mount -t tmpfs none /mnt"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            why = f"no private mount namespace here ({' '.join(_unshare())}: {r.stderr.strip()})"
    if why is not None:
        if real_clients_required():
            pytest.fail(f"{why}, and TAOSYNC_REAL_CLIENTS=required", pytrace=False)
        pytest.skip(why)


class FakeEtc:
    """The directory bound over /etc: links to the real entries, real managed dirs."""

    def __init__(self, base: Path) -> None:
        self.real = base / "real-etc"
        self.over = base / "etc"
        self.real.mkdir()
        self.over.mkdir()
        for entry in os.listdir("/etc"):
            if entry not in MANAGED:
                (self.over / entry).symlink_to(self.real / entry)
        for name in MANAGED:
            (self.over / name).mkdir(mode=0o755)
        self.script = base / "ns.sh"
        self.script.write_text(NS_SCRIPT)

    def run(self, argv: list[str], env: dict, cwd: Path, timeout: float = 180):
        return subprocess.run([*_unshare(), "sh", str(self.script), str(self.real),
                               str(self.over), *argv], env=env, cwd=cwd,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)


def _fleet(path: Path, root: str, model: str, secrets: str) -> None:
    yaml = YAML(typ="safe")
    with path.open("w") as out:  # closed before taosync reads it (libyaml's emitter buffers)
        yaml.dump({"version": 1,
                   "gateway": {"base_url": root, "key": "${env:TAOTOKEN_API_KEY}"},
                   "models": {"gw-user": {}, "gw-admin": {}},
                   "routes": {"main": model}, "default_route": "main", "secrets": secrets,
                   "clients": {"claude-code": {"model": "main"}, "codex": {"model": "main"},
                               "qwen-code": {"model": "main"}, "opencode": {"model": "main"},
                               "kilo": {"model": "main"}}}, out)


RUNS = {
    "claude-code": (CLAUDE, ["-p", "Reply with OK."],
                    {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}, "/api/v1/messages"),
    "codex": (CODEX, ["exec", "--skip-git-repo-check", "Reply with OK."], {},
              "/api/v1/responses"),
    "qwen-code": (QWEN, ["Reply with OK"], {}, "/api/v1/chat/completions"),
    "opencode": (OPENCODE, ["run", "Reply with OK."], NODE_OFFLINE, "/api/v1/chat/completions"),
    "kilo": (KILO, ["run", "Reply with OK."], NODE_OFFLINE, "/api/v1/chat/completions"),
}
#: the managed file of each client (under the directory bound over /etc)
MANAGED_FILE = {"claude-code": "claude-code/managed-settings.json",
                "codex": "codex/managed_config.toml", "qwen-code": "qwen-code/settings.json",
                "opencode": "opencode/opencode.json", "kilo": "kilo/kilo.json"}
ENV_VAR = {"claude-code": "CLAUDE", "codex": "CODEX", "qwen-code": "QWEN",
           "opencode": "OPENCODE", "kilo": "KILO"}


@pytest.mark.parametrize("client", list(RUNS))
def test_real_client_obeys_the_managed_file_over_the_users(client, taosync, home,
                                                           fleet_file, tmp_path):
    """The user's file (a user-scope apply, key inline) points at stand-in A with model
    gw-user; ``taosync apply --system`` (key by reference) points the managed file at
    stand-in B with model gw-admin. The real client's request lands at B, for gw-admin,
    and the user's file is left as it was."""
    exe, args, extra, path = RUNS[client]
    if exe is None:
        pytest.skip(f"{client} is not installed (set TAOSYNC_TEST_{ENV_VAR[client]}_BIN)")
    _namespaces_or_skip()
    etc = FakeEtc(tmp_path)
    with stand_in(taosync, fleet_file, home, models=["gw-user", "gw-admin"],
                  prefix="/api") as a, \
            stand_in(taosync, fleet_file, home, models=["gw-user", "gw-admin"],
                     prefix="/api") as b:
        # the user's own privacy switch (Qwen looks nothing up beyond loopback)
        (home / ".qwen").mkdir()
        (home / ".qwen/settings.json").write_text(
            '{"privacy": {"usageStatisticsEnabled": false}}')
        _fleet(fleet_file, a.stub.root, "gw-user", "inline")
        r = taosync("apply", "--no-verify")
        assert r.rc == 0, r.both
        users = {p: p.read_bytes() for p in home.rglob("*")
                 if p.is_file() and "taosync" not in p.parts}
        assert users, "the user-scope apply wrote nothing"

        system_fleet = tmp_path / "system.yaml"
        _fleet(system_fleet, b.stub.root, "gw-admin", "reference")
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                "TERM": "dumb", "NO_COLOR": "1", "TAOTOKEN_API_KEY": TEST_KEY}
        done = etc.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                        str(system_fleet), "apply", "--system", "--no-verify"],
                       {**base, "PYTHONPATH": os.pathsep.join(sys.path)}, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        managed = etc.over / MANAGED_FILE[client]
        text = managed.read_text()
        assert b.stub.root in text and a.stub.root not in text and TEST_KEY not in text
        assert managed.stat().st_mode & 0o777 == 0o644  # every user's client reads it
        assert managed.parent.stat().st_mode & 0o777 == 0o755
        # the user's own files are theirs: not a byte changed by the system scope
        assert {p: p.read_bytes() for p in users} == users

        work = home / "work"
        work.mkdir()
        ran = etc.run([exe, *args], {**base, **extra}, work)
        assert ran.returncode == 0, ran.stdout[-1000:] + ran.stderr[-2000:]
        to_b = [r for r in b.stub.requests if r.method == "POST" and r.path.startswith(path)]
        to_a = [r for r in a.stub.requests if r.method == "POST"]
        assert to_b and not to_a, (to_a, to_b, ran.stderr[-2000:])
        assert all(r.auth == "ok" for r in to_b)
        assert "gw-admin" in {r.body.get("model") for r in to_b}
        assert {r.body.get("model") for r in to_b} == {"gw-admin"}
        assert TEST_KEY not in ran.stdout + ran.stderr
        users = {p: p.read_bytes() for p in users}  # as the client left them (Qwen migrates)

        # and the system scope keeps its own state: status --system is in sync, the user
        # scope's status is unaffected, destroy --system gives the managed file back
        st = etc.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                      str(system_fleet), "--json", "status", "--system"],
                     {**base, "PYTHONPATH": os.pathsep.join(sys.path)}, tmp_path)
        assert st.returncode == 0, st.stdout + st.stderr
        assert json.loads(st.stdout)
        gone = etc.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                        str(system_fleet), "destroy", "--system", "--yes"],
                       {**base, "PYTHONPATH": os.pathsep.join(sys.path)}, tmp_path)
        assert gone.returncode == 0, gone.stdout + gone.stderr
        # given back: gone, or (Qwen adds its own "$version" to every settings file it
        # reads, the system one too when it may write it) none of taosync's keys left
        assert not managed.exists() or b.stub.root not in managed.read_text()
        if client != "qwen-code":
            assert not managed.exists()
        assert {p: p.read_bytes() for p in users} == users
