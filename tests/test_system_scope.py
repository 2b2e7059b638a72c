"""The managed (system) scope, ``taosync --system`` (docs/system.md): the fleet rendered
onto Claude Code's and Codex's managed-policy files, with a state of its own.

The managed files live under ``/`` in production; here ``TAOSYNC_SYSTEM_ROOT`` (a test and
image-build switch) names a directory standing for ``/``. The real clients obeying those
files is proven in tests/clients/test_real_system.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import TEST_KEY, snapshot

SYSTEM_FLEET = {
    "version": 1,
    "gateway": {"base_url": "https://gw.example.com/api", "key": "${env:TAOTOKEN_API_KEY}"},
    "models": {"gw-main": {}}, "routes": {"main": "gw-main"}, "default_route": "main",
    "secrets": "reference",
    "clients": {"claude-code": {"model": "main"}, "codex": {"model": "main"},
                "llm": {"model": "main"}},
}


@pytest.fixture
def sysroot(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "sysroot"
    root.mkdir()
    monkeypatch.setenv("TAOSYNC_SYSTEM_ROOT", str(root))
    return root


def write_fleet(path: Path, **changes) -> Path:
    data = json.loads(json.dumps(SYSTEM_FLEET))
    data.update(changes)
    with path.open("w") as out:  # closed before taosync reads it (libyaml's emitter buffers)
        YAML(typ="safe").dump(data, out)
    return path


def managed(root: Path) -> tuple[Path, Path]:
    return (root / "etc/claude-code/managed-settings.json",
            root / "etc/codex/managed_config.toml")


def test_apply_system_writes_the_managed_files_readable_by_every_user(
        taosync, home, fleet_file, sysroot):
    write_fleet(fleet_file)
    r = taosync("apply", "--system", "--no-verify")
    assert r.rc == 0, r.both
    claude, codex = managed(sysroot)
    settings = json.loads(claude.read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "https://gw.example.com/api"
    assert settings["apiKeyHelper"] == "printenv TAOTOKEN_API_KEY"
    import tomllib

    config = tomllib.loads(codex.read_text())
    assert config["model_provider"] == "taotoken"
    assert config["model_providers"]["taotoken"]["env_key"] == "TAOTOKEN_API_KEY"
    assert config["model_providers"]["taotoken"]["base_url"] == "https://gw.example.com/api/v1"
    for path in (claude, codex):
        assert path.stat().st_mode & 0o777 == 0o644
        assert path.parent.stat().st_mode & 0o777 == 0o755
        assert TEST_KEY not in path.read_text()
    # a client without a managed file is named and left out; nothing lands in the home
    # but taosync's own state, under state_dir()/system
    assert "llm: has no managed-policy file" in r.err
    assert "llm: secrets: reference" not in r.err  # its render warnings are moot here
    in_home = {p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()}
    assert in_home and all(p.startswith(".local/state/taosync/system/") for p in in_home)
    # the user scope knows nothing of it
    user = taosync("status")
    assert "never applied here" in user.both


def test_system_scope_refuses_a_key_in_a_managed_file(taosync, home, fleet_file, sysroot):
    """A managed file is world-readable policy: an inline key is refused, exit 2,
    nothing written anywhere."""
    write_fleet(fleet_file, secrets="inline")
    before = snapshot(home), snapshot(sysroot)
    r = taosync("apply", "--system", "--no-verify")
    assert r.rc == 2, r.both
    assert "managed file" in r.err and "secrets: reference" in r.err and "Traceback" not in r.err
    assert TEST_KEY not in r.both
    assert (snapshot(home), snapshot(sysroot)) == before


def test_system_scope_refuses_codex_inline_key_for_auth_json_too(taosync, home, fleet_file,
                                                                 sysroot):
    write_fleet(fleet_file, clients={"codex": {"model": "main", "secrets": "inline"}})
    r = taosync("apply", "--system", "--no-verify")
    assert r.rc == 2, r.both
    assert "codex:" in r.err and not any(sysroot.rglob("*.toml"))


def test_status_plan_rollback_destroy_work_per_scope(taosync, home, fleet_file, sysroot):
    write_fleet(fleet_file)
    assert taosync("apply", "--system", "--no-verify").rc == 0
    claude, codex = managed(sysroot)
    assert taosync("status", "--system").rc == 0
    assert taosync("plan", "--system", "--check").rc == 0
    # a hand edit of the managed file is drift of the system scope
    data = json.loads(claude.read_text())
    data["env"]["ANTHROPIC_BASE_URL"] = "https://elsewhere.example.com"
    claude.write_text(json.dumps(data))
    st = taosync("status", "--system")
    assert st.rc == 1 and "drift" in st.out and "managed-settings.json" in st.out
    # the next apply re-asserts, rollback puts the hand edit back, its hint keeps --system
    r = taosync("apply", "--system", "--no-verify", "--yes")
    assert r.rc == 0, r.both
    assert "--system rollback" in r.out
    assert json.loads(claude.read_text())["env"]["ANTHROPIC_BASE_URL"] == \
        "https://gw.example.com/api"
    rb = taosync("rollback", "--system", "--yes")
    assert rb.rc == 0, rb.both
    assert json.loads(claude.read_text())["env"]["ANTHROPIC_BASE_URL"] == \
        "https://elsewhere.example.com"
    # destroy gives back what taosync owns: codex's file was all taosync's
    d = taosync("destroy", "--system", "--yes")
    assert d.rc == 0, d.both
    assert not codex.exists()
    # the user scope's state never saw any of it
    assert not (home / ".local/state/taosync/state.json").exists()


def test_user_scope_leaves_the_system_scope_alone(taosync, home, fleet_file, sysroot):
    write_fleet(fleet_file)
    assert taosync("apply", "--system", "--no-verify").rc == 0
    before = snapshot(sysroot)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert (home / ".claude/settings.json").exists()
    d = taosync("destroy", "--yes")
    assert d.rc == 0, d.both
    assert snapshot(sysroot) == before
    assert taosync("status", "--system").rc == 0


def test_root_without_home_keeps_system_state_in_var_lib(tmp_path, sysroot):
    """Root with --system and no --home: the machine's state, /var/lib/taosync (under
    the system root here), not root's home; through a real process."""
    if os.geteuid() != 0:
        pytest.skip("the state directory chosen for root needs root (or a user namespace)")
    home = tmp_path / "roothome"
    home.mkdir()
    fleet = write_fleet(tmp_path / "fleet.yaml")
    env = {**os.environ, "HOME": str(home), "TAOTOKEN_API_KEY": TEST_KEY,
           "TAOSYNC_SYSTEM_ROOT": str(sysroot)}
    env.pop("XDG_STATE_HOME", None)
    r = subprocess.run([sys.executable, "-m", "taosync", "-c", str(fleet), "apply", "--system",
                        "--no-verify"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (sysroot / "var/lib/taosync/state.json").exists()
    assert not (home / ".local/state/taosync").exists()
    assert managed(sysroot)[0].exists()


def test_root_with_a_users_home_still_writes_the_machines_policy(tmp_path, sysroot):
    """``sudo`` keeping a user's HOME: the system scope writes as root (not with that
    user's rights, as a user-scope run would), and the same state serves root's own HOME
    next time (the system scope's state belongs to the machine, not to a home)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    alice = tmp_path / "alice"
    alice.mkdir()
    os.chown(alice, 4242, 4242)
    fleet = write_fleet(tmp_path / "fleet.yaml")
    base = {**os.environ, "TAOTOKEN_API_KEY": TEST_KEY, "TAOSYNC_SYSTEM_ROOT": str(sysroot)}
    base.pop("XDG_STATE_HOME", None)
    argv = [sys.executable, "-m", "taosync", "-c", str(fleet)]
    r = subprocess.run([*argv, "apply", "--system", "--no-verify"],
                       env={**base, "HOME": str(alice)}, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    claude = managed(sysroot)[0]
    assert claude.stat().st_uid == 0 and not any(alice.iterdir())
    roothome = tmp_path / "roothome"
    roothome.mkdir()
    st = subprocess.run([*argv, "status", "--system"], env={**base, "HOME": str(roothome)},
                        capture_output=True, text=True)
    assert st.returncode == 0, st.stdout + st.stderr
    assert "nothing to do" in st.stdout


def test_system_flag_never_gets_the_user_scopes_certified_answer(tmp_path, sysroot):
    """The no-op fast path replays the user scope's answers; ``--system`` must take the
    full path (real processes: the fast path runs only there)."""
    home = tmp_path / "h"
    home.mkdir()
    fleet = write_fleet(tmp_path / "fleet.yaml")
    env = {**os.environ, "TAOTOKEN_API_KEY": TEST_KEY, "TAOSYNC_SYSTEM_ROOT": str(sysroot),
           "HOME": str(home)}
    argv = [sys.executable, "-m", "taosync", "--home", str(home), "-c", str(fleet)]
    assert subprocess.run([*argv, "apply", "--no-verify"], env=env,
                          capture_output=True).returncode == 0
    user = subprocess.run([*argv, "status"], env=env, capture_output=True, text=True)
    assert user.returncode == 0 and "nothing to do" in user.stdout
    system = subprocess.run([*argv, "status", "--system"], env=env, capture_output=True,
                            text=True)
    assert system.returncode == 1, system.stdout + system.stderr
    assert "never applied here" in system.stdout + system.stderr
    assert "--system apply" in system.stdout + system.stderr


def test_verify_system_probes_the_fleets_values(taosync, home, fleet_file, sysroot):
    """The clients' read-back knows their user files, not their policy: under --system
    verify probes what fleet.yaml renders, and says so."""
    write_fleet(fleet_file)
    assert taosync("apply", "--system", "--no-verify").rc == 0
    r = taosync("verify", "--system", "--stub")
    assert r.rc == 0, r.both
    assert "--system: verify probes fleet.yaml's values" in r.err
    assert "claude-code" in r.out and "codex" in r.out


def test_where_names_the_system_state(taosync, home, fleet_file, sysroot):
    write_fleet(fleet_file)
    r = taosync("--json", "where", "--system")
    assert r.rc == 0, r.both
    state = json.loads(r.out)["state"]
    assert state["path"] == str(home / ".local/state/taosync/system")
    assert state["reason"].startswith("--system: system/ in the user's state directory")


def test_a_managed_directory_that_cannot_be_made_is_exit_3_nothing_written(tmp_path, sysroot):
    """Not root (or /etc read-only): the directory of a managed file cannot be made —
    exit 3, a message saying so and what to do, no client file written. The system root
    is made read-only by a bind mount in a private mount namespace (a real process)."""
    import shutil

    unshare = ["unshare", "--mount", *(() if os.geteuid() == 0 else ("--map-root-user",))]
    if shutil.which("unshare") is None or subprocess.run(
            [*unshare, "true"], capture_output=True).returncode != 0:
        pytest.skip("no private mount namespace here (unshare --mount) to make a read-only /")
    home = tmp_path / "h"
    home.mkdir()
    fleet = write_fleet(tmp_path / "fleet.yaml")
    root = str(sysroot)
    script = (f"mount --bind {root} {root} && mount -o remount,bind,ro {root} && "
              f'exec "$@"')
    r = subprocess.run([*unshare, "sh", "-c", script, "sh", sys.executable, "-m", "taosync",
                        "--home", str(home), "-c", str(fleet), "apply", "--system",
                        "--no-verify"],
                       env={**os.environ, "TAOTOKEN_API_KEY": TEST_KEY,
                            "TAOSYNC_SYSTEM_ROOT": root}, capture_output=True, text=True)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "cannot be created" in r.stderr and "run --system as root" in r.stderr
    assert "Traceback" not in r.stderr
    assert not any(sysroot.iterdir())


@pytest.mark.parametrize("platform, claude, codex", [
    ("linux", "/etc/claude-code/managed-settings.json", "/etc/codex/managed_config.toml"),
    ("darwin", "/Library/Application Support/ClaudeCode/managed-settings.json",
     "/etc/codex/managed_config.toml"),
    ("win32", "C:/Program Files/ClaudeCode/managed-settings.json", None),
])
def test_the_managed_files_per_platform(tmp_path, platform, claude, codex):
    """The table (clients/system.py) per platform, and under a system root each path keeps
    its shape below it; Codex on Windows (which ignores the legacy file) is left out."""
    from taosync.clients.base import ClientEnv
    from taosync.clients.system import managed_file

    env = ClientEnv(home=tmp_path, environ={}, platform=platform)
    got = managed_file("claude-code", "settings", env)
    assert got is not None and got.as_posix() == claude
    got_codex = managed_file("codex", "config", env)
    assert (got_codex.as_posix() if got_codex else None) == codex
    rooted = ClientEnv(home=tmp_path, environ={"TAOSYNC_SYSTEM_ROOT": str(tmp_path)},
                       platform=platform)
    under = managed_file("claude-code", "settings", rooted)
    assert under is not None and under.as_posix().startswith(tmp_path.as_posix() + "/")
    assert under.as_posix().endswith("ClaudeCode/managed-settings.json" if platform != "linux"
                                     else "etc/claude-code/managed-settings.json")


def test_what_has_no_managed_counterpart_is_named_and_left_out(taosync, home, fleet_file,
                                                               sysroot):
    """Codex's profile files and Claude Code's MCP servers (managed-mcp.json would hide
    every user's own) are left out with a warning each; Codex's MCP server, in its
    config, goes to the managed file; an MCP secret inline there is refused."""
    server = {"command": "npx", "args": ["-y", "docs-mcp"], "env": {"LEVEL": "1"}}
    write_fleet(fleet_file, clients={"claude-code": {"model": "main"},
                                     "codex": {"model": "main", "profiles": ["main"]}},
                mcp_servers={"docs": server})
    r = taosync("apply", "--system", "--no-verify")
    assert r.rc == 0, r.both
    assert "codex: profile files have no managed counterpart" in r.err
    assert "claude-code: its MCP servers are not written at system scope" in r.err
    claude, codex = managed(sysroot)
    assert "mcpServers" not in json.loads(claude.read_text())
    assert "[mcp_servers.docs]" in codex.read_text()
    assert not (home / ".codex").exists() and not (home / ".claude.json").exists()

    # the key by reference, but an MCP secret under another name: Codex would get it inline
    server["env"] = {"TOKEN": "${env:TAOTOKEN_API_KEY}"}
    write_fleet(fleet_file, clients={"codex": {"model": "main"}}, mcp_servers={"docs": server})
    before = snapshot(sysroot)
    r = taosync("apply", "--system", "--no-verify")
    assert r.rc == 2 and "codex: the key (or an MCP secret)" in r.err, r.both
    assert TEST_KEY not in r.both
    assert snapshot(sysroot) == before
