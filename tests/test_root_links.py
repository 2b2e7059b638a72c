"""Root never follows a user's links (issue 23, Build 1).

``sudo taosync apply --home /home/alice`` on a home alice owns: alice may have linked a
client file to a file of root's (``default_model.txt`` → ``/etc/shadow``, ``.gemini/.env``
→ ``/etc/environment``) or to a place only root may write. Root must neither overwrite
nor read it. Each test runs a real ``python -m taosync`` as root on a home owned by
``nobody``, with stand-ins for root's files in the test's own temporary tree, and checks
root's files byte for byte, that their text shows up nowhere, the exit code and the one
line that names the link. taosync runs from a copy only root can read, so an import made
while acting with nobody's rights would fail these tests (not only a real install's).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import EXAMPLE_FLEET, TEST_KEY

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="acting for another user's home needs root")

NOBODY = 65534
SHADOW = "root:$6$SHADOW-ROOT-ONLY-HASH$abcdef:19000:0:99999:7:::\n"
ENVIRONMENT = 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"\nENV_ROOT_ONLY=1\n'
VAULT = "VAULT-ROOT-ONLY-CONTENT\n"


class World:
    """A temporary tree: ``home`` (nobody's), ``etc`` (root's stand-ins for /etc/shadow
    0640 and /etc/environment 0644), ``vault`` (a root-only 0700 directory), fleet.yaml,
    and a root-only copy of taosync to run."""

    def __init__(self, base: Path):
        self.base = base
        os.chmod(base, 0o755)  # nobody may walk to its home
        self.home = base / "home"
        self.etc = base / "etc"
        self.vault = base / "vault"
        self.home.mkdir()
        self.etc.mkdir(mode=0o755)
        self.vault.mkdir(mode=0o700)
        self.shadow = self.etc / "shadow"
        self.environment = self.etc / "environment"
        self.shadow.write_text(SHADOW)
        os.chmod(self.shadow, 0o640)
        self.environment.write_text(ENVIRONMENT)
        os.chmod(self.environment, 0o644)
        (self.vault / "secret").write_text(VAULT)
        self.fleet = base / "fleet.yaml"
        shutil.copyfile(EXAMPLE_FLEET, self.fleet)
        lib = base / "lib"
        lib.mkdir(mode=0o700)
        import taosync

        shutil.copytree(Path(taosync.__file__).parent, lib / "taosync",
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.lib = lib

    def link(self, rel: str, to: Path) -> Path:
        """``~/rel`` as a symlink to ``to``, made by nobody (its directories nobody's)."""
        path = self.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(to)
        self.give_home_to_nobody()
        return path

    def give_home_to_nobody(self) -> None:
        for dirpath, dirs, files in os.walk(self.home):
            for name in dirs + files:
                os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)
        os.chown(self.home, NOBODY, NOBODY)

    def run(self, *args: str, env: dict | None = None, config: bool = True,
            sandboxed: bool = True) -> subprocess.CompletedProcess:
        """``python -m taosync --home HOME -c fleet.yaml ARGS`` as root (``config``
        False: no ``-c``, the home's ``~/.config/taosync/fleet.yaml``; ``sandboxed``
        False: no ``--home`` but ``HOME=HOME``, as ``sudo -E`` runs it)."""
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("XDG_", "CODEX", "CLAUDE", "TAOSYNC"))}
        environ.update(TAOTOKEN_API_KEY=TEST_KEY, PYTHONPATH=str(self.lib),
                       HOME="/root" if sandboxed else str(self.home),
                       PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", **(env or {}))
        fleet = ["-c", str(self.fleet)] if config else []
        home = ["--home", str(self.home)] if sandboxed else []
        return subprocess.run([sys.executable, "-m", "taosync", *home, *fleet, *args], env=environ, cwd=self.base if config else "/",
                              capture_output=True, text=True, timeout=120)

    def roots_files(self) -> dict[str, tuple]:
        """Every file and directory of root's stand-ins: bytes, mode, owner."""
        out = {}
        for top in (self.etc, self.vault):
            for dirpath, dirs, files in os.walk(top):
                for name in dirs + files:
                    path = os.path.join(dirpath, name)
                    st = os.lstat(path)
                    data = b"" if name in dirs else Path(path).read_bytes()
                    out[path] = (hashlib.sha256(data).hexdigest(), st.st_mode, st.st_uid,
                                 st.st_gid, st.st_mtime_ns)
        return out

    def home_bytes(self) -> dict[str, bytes]:
        """Every regular file under the home (not through links) → its bytes."""
        out = {}
        for dirpath, dirs, files in os.walk(self.home):
            for name in files:
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    out[os.path.relpath(path, self.home)] = Path(path).read_bytes()
        return out


@pytest.fixture
def world():
    base = Path(tempfile.mkdtemp(prefix="taosync-rootlinks-"))
    try:
        yield World(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def assert_roots_text_nowhere(world: World, r: subprocess.CompletedProcess) -> None:
    """Root's files were not read into anything: not the output, not a file in the home
    (client files, backups, the state)."""
    for text in (SHADOW, ENVIRONMENT, VAULT):
        marker = text.split("\n")[0][-12:]
        assert marker not in r.stdout + r.stderr
        for rel, data in world.home_bytes().items():
            assert marker.encode() not in data, rel


@pytest.mark.parametrize("rel, to, why", [
    (".config/io.datasette.llm/default_model.txt", "shadow", "outside the home"),
    (".gemini/.env", "environment", "outside the home"),
    (".codex/config.toml", "vault/config.toml", "outside the home"),  # dangling, root-only dir
])
def test_apply_as_root_refuses_a_users_link_out_of_the_home(world, rel, to, why):
    target = {"shadow": world.shadow, "environment": world.environment}.get(
        to, world.base / to)
    link = world.link(rel, target)
    roots, home = world.roots_files(), world.home_bytes()
    r = world.run("apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    line = next(x for x in r.stderr.splitlines() if "refused as root" in x)
    assert f"{link} is a symlink to {target}, {why}" in line
    assert "Remove the link, or run taosync as the home's owner (sudo -u nobody" in line
    assert "taosync changed nothing" in line
    assert "Traceback" not in r.stderr and TEST_KEY not in r.stdout + r.stderr
    assert world.roots_files() == roots  # byte-identical, same mode, owner and mtime
    assert not (world.vault / "config.toml").exists()
    after = world.home_bytes()
    assert {k: v for k, v in after.items() if not k.startswith(".local/state")} == home
    assert not any(k.startswith(".local/state/taosync/backups") for k in after)
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert_roots_text_nowhere(world, r)


def test_plan_and_status_as_root_refuse_the_link_too(world):
    """Reading through the link is a leak as well (a diff of /etc/shadow)."""
    world.link(".config/io.datasette.llm/default_model.txt", world.shadow)
    roots = world.roots_files()
    for args in (("plan",), ("status",), ("plan", "--json"), ("apply", "--dry-run", "-v")):
        r = world.run(*args)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        assert "refused as root" in r.stdout + r.stderr and "Traceback" not in r.stderr
        assert_roots_text_nowhere(world, r)
    assert world.roots_files() == roots


def test_a_link_to_a_file_of_roots_inside_the_home_is_refused(world):
    """Inside the home but root's: the link leads to another owner's file."""
    theirs = world.home / "roots-file"
    theirs.write_text("ROOTS-OWN-FILE-IN-THE-HOME\n")
    os.chmod(theirs, 0o644)
    link = world.link(".gemini/.env", theirs)
    os.chown(theirs, 0, 0)
    r = world.run("apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{link} is a symlink to {theirs}, owned by uid 0, not by the home's owner " \
           f"(uid {NOBODY} (nobody))" in r.stderr
    assert theirs.read_text() == "ROOTS-OWN-FILE-IN-THE-HOME\n" and os.stat(theirs).st_uid == 0
    assert "ROOTS-OWN" not in r.stdout + r.stderr
    assert_roots_text_nowhere(world, r)


def test_a_directory_link_out_of_the_home_is_refused(world):
    """A link higher up (``~/.gemini`` itself → a directory of root's)."""
    (world.etc / "gemini").mkdir()
    (world.etc / "gemini" / ".env").write_text(ENVIRONMENT)
    link = world.link(".gemini", world.etc / "gemini")
    roots = world.roots_files()
    r = world.run("apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{link} is a symlink to {world.etc / 'gemini'}" in r.stderr
    assert world.roots_files() == roots
    assert_roots_text_nowhere(world, r)


def test_the_kernel_refuses_what_the_check_does_not_cover(world):
    """Defense in depth: taosync's own state directory linked into a root-only directory
    (the link check is for client files): every state write is made with nobody's
    rights, so the kernel says no — exit 3, nothing in root's directory, no client file
    written."""
    world.link(".local/state/taosync", world.vault)
    roots, home = world.roots_files(), world.home_bytes()
    r = world.run("apply", "--no-verify")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "Permission denied" in r.stderr and "Traceback" not in r.stderr
    assert world.roots_files() == roots
    assert sorted(os.listdir(world.vault)) == ["secret"]
    assert world.home_bytes() == home
    assert_roots_text_nowhere(world, r)


def test_a_key_file_in_the_home_linked_to_roots_file_is_not_read(world):
    """``${file:~/…}`` names a file in the home: read with the owner's rights, so a link
    to /etc/shadow gives "cannot be read", never the shadow's text as the key."""
    world.fleet.write_text(world.fleet.read_text().replace(
        "key: ${env:TAOTOKEN_API_KEY}", "key: ${file:~/.config/taotoken/key}"))
    world.link(".config/taotoken/key", world.shadow)
    r = world.run("apply", "--no-verify")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot be read: Permission denied" in r.stderr
    assert_roots_text_nowhere(world, r)
    assert not any(k.startswith(".c") and "claude" in k for k in world.home_bytes())


def test_the_invokers_own_key_file_is_still_read_as_root(world):
    """A key file outside the home (root's own, 0600 in a root-only directory) is the
    invoker's: read with root's rights, the apply works."""
    key = world.vault / "key"
    key.write_text(TEST_KEY + "\n")
    os.chmod(key, 0o600)
    world.fleet.write_text(world.fleet.read_text().replace(
        "key: ${env:TAOTOKEN_API_KEY}", f"key: ${{file:{key}}}"))
    os.chmod(world.fleet, 0o600)  # root's fleet.yaml: nobody cannot read it
    world.give_home_to_nobody()
    r = world.run("apply", "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert TEST_KEY.encode() in (world.home / ".codex/auth.json").read_bytes()


def test_links_inside_the_home_to_the_users_own_files_still_work(world):
    """The documented decision (follow a link to the real file) holds as root for the
    user's own links: written with the user's rights, owned by the user, still a link."""
    dotfiles = world.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "gemini.env").write_text("MY_OWN=1\n")
    link = world.link(".gemini/.env", dotfiles / "gemini.env")
    r = world.run("apply", "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "with uid 65534's rights" in r.stderr
    assert os.path.islink(link)
    text = (dotfiles / "gemini.env").read_text()
    assert "MY_OWN=1" in text and "GEMINI_API_KEY" in text
    for dirpath, dirs, files in os.walk(world.home):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            assert os.lstat(path).st_uid == NOBODY, path
    # a second apply finds nothing to do, and rollback puts the user's text back
    assert world.run("apply", "--no-verify").returncode == 0
    r = world.run("rollback")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dotfiles / "gemini.env").read_text() == "MY_OWN=1\n"
    assert os.path.islink(link)


def test_the_kernel_refuses_a_write_into_roots_file_with_no_link_on_the_way(world):
    """A hard link of root's world-readable file in the home (no symlink for the check
    to see): the plan reads it with nobody's rights, the write is made with them too and
    refused by the kernel — exit 3, root's file as it was, the home as it was."""
    (world.home / ".gemini").mkdir(parents=True)
    os.link(world.environment, world.home / ".gemini/.env")
    world.give_home_to_nobody()
    os.chown(world.environment, 0, 0)  # give_home_to_nobody went through the hard link
    roots = world.roots_files()
    home = {k: v for k, v in world.home_bytes().items()}
    r = world.run("apply", "--no-verify")
    assert r.returncode == 3, r.stdout + r.stderr
    assert ".gemini/.env: cannot write (" in r.stderr and "put back" in r.stderr
    assert "Traceback" not in r.stderr and TEST_KEY not in r.stdout + r.stderr
    assert world.roots_files() == roots
    after = world.home_bytes()
    assert {k: v for k, v in after.items() if not k.startswith(".local/state")} == home


def test_a_fleet_in_the_home_is_the_homes_its_key_command_runs_as_the_owner(world):
    """No -c: root uses the home's own ~/.config/taosync/fleet.yaml. It is the user's
    file, so its ${shell:} key command runs as the user, never as root."""
    ran = world.base / "ran"
    ran.mkdir(mode=0o777)
    os.chmod(ran, 0o777)
    fleet = world.home / ".config/taosync/fleet.yaml"
    fleet.parent.mkdir(parents=True)
    fleet.write_text(EXAMPLE_FLEET.read_text().replace(
        "key: ${env:TAOTOKEN_API_KEY}",
        f"key: ${{shell:id -u >> {ran}/uids; echo sk-uid$(id -u)-0123456789abcdef}}"))
    world.give_home_to_nobody()
    for _ in range(2):  # the second from the cached render
        r = world.run("apply", "--no-verify", config=False)
        assert r.returncode == 0, r.stdout + r.stderr
    assert b"sk-uid65534-0123456789abcdef" in (world.home / ".codex/auth.json").read_bytes()
    uids = (ran / "uids").read_text().split()
    assert len(uids) >= 2 and set(uids) == {str(NOBODY)}


def test_a_fleet_in_the_home_linked_to_roots_file_is_not_read(world):
    """The home's fleet.yaml as a link to /etc/shadow: read with the owner's rights,
    so "Permission denied", and not a line of the shadow in a parse error."""
    world.link(".config/taosync/fleet.yaml", world.shadow)
    roots = world.roots_files()
    for args in (("validate",), ("apply", "--no-verify"), ("plan",)):
        r = world.run(*args, config=False)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        assert "ermission denied" in r.stdout + r.stderr and "Traceback" not in r.stderr
        assert_roots_text_nowhere(world, r)
        assert "SHADOW" not in r.stdout + r.stderr
    assert world.roots_files() == roots


def test_every_command_runs_as_root_on_the_users_home(world):
    """The commands that read a home's files around the System (import's read-back,
    doctor, managed, log) work as root acting for its owner, and destroy gives every
    file back with the owner's rights."""
    world.give_home_to_nobody()
    assert world.run("apply", "--no-verify").returncode == 0
    for args, codes in [(("plan",), {0}), (("status",), {0}), (("managed",), {0}),
                        (("log",), {0}), (("doctor",), {0, 1}), (("import",), {0, 1}),
                        (("managed", "--json"), {0}), (("destroy", "--yes"), {0})]:
        r = world.run(*args)
        assert r.returncode in codes, (args, r.stdout + r.stderr)
        assert "internal error" not in r.stderr and "Traceback" not in r.stderr, args
        assert TEST_KEY not in r.stdout + r.stderr
    for dirpath, dirs, files in os.walk(world.home):
        for name in dirs + files:
            assert os.lstat(os.path.join(dirpath, name)).st_uid == NOBODY


def test_init_and_forget_write_a_fleet_in_the_home_as_its_owner(world):
    """fleet.yaml in the home is the home's: ``init`` through a dangling link into a
    root-only directory and ``forget`` through a link to /etc/shadow are refused by the
    kernel (nobody's rights) — nothing created or changed in root's files, no text of
    them printed. ``init`` of a path of root's own still works (the invoker's file)."""
    link = world.link(".config/taosync/fleet.yaml", world.vault / "fleet.yaml")
    roots = world.roots_files()
    r = world.run("init", str(link), config=False)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "Permission denied" in r.stderr and "Traceback" not in r.stderr
    assert world.roots_files() == roots and not (world.vault / "fleet.yaml").exists()
    link.unlink()
    link.symlink_to(world.shadow)
    r = world.run("forget", "codex", config=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "ermission denied" in r.stderr and "Traceback" not in r.stderr
    assert world.roots_files() == roots
    assert_roots_text_nowhere(world, r)
    mine = world.vault / "mine" / "fleet.yaml"
    r = world.run("init", str(mine), config=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert mine.is_file() and os.stat(mine).st_uid == 0


def test_sudo_keeping_the_users_HOME_acts_for_that_user_too(world):
    """``sudo -E taosync apply`` (HOME is alice's, no --home): the same refusal, and a
    location variable pointing out of the home at a directory of the user's own is
    written as the user; one of root's the user cannot even look into: "cannot be
    read", exit 2, nothing written."""
    world.link(".gemini/.env", world.environment)
    roots = world.roots_files()
    r = world.run("apply", "--no-verify", sandboxed=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refused as root" in r.stderr and "outside the home" in r.stderr
    assert world.roots_files() == roots
    (world.home / ".gemini/.env").unlink()
    elsewhere = world.base / "alice-codex"
    elsewhere.mkdir()
    os.chown(elsewhere, NOBODY, NOBODY)
    r = world.run("apply", "--no-verify", sandboxed=False, env={"CODEX_HOME": str(elsewhere)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.stat(elsewhere / "config.toml").st_uid == NOBODY
    assert world.roots_files() == roots
    r = world.run("apply", "--no-verify", sandboxed=False, env={"CODEX_HOME": str(world.vault)})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "config.toml: cannot be read (Permission denied)" in r.stderr
    assert "Traceback" not in r.stderr
    assert world.roots_files() == roots and sorted(os.listdir(world.vault)) == ["secret"]
