"""The Ansible collection taosync.fleet (ansible/): built with ``ansible-galaxy collection
build``, installed into a temporary ANSIBLE_COLLECTIONS_PATH, and run by a real
``ansible-playbook`` — the example of docs/ansible.md — on eleven local hosts, one home
each: ten good ones (one verifying against the stand-in gateway on 127.0.0.1) and one
whose fleet is invalid.

Nothing leaks into the machine's home: HOME, ANSIBLE_LOCAL_TEMP and ANSIBLE_REMOTE_TEMP
are temporary directories. The key reaches taosync as an ``${env:…}`` reference, from the
environment ansible-playbook runs in; a test-only callback (tests/ansible_callbacks/)
records every task result as JSON for the assertions, while the default callback's output
(``-v``, ``-vvv``, ``--diff``) is searched for the key."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, snapshot

BIN = Path(sys.executable).parent
ANSIBLE_PLAYBOOK = BIN / "ansible-playbook"
GALAXY = BIN / "ansible-galaxy"


@pytest.fixture(autouse=True)
def ansible_core(request):
    """ansible-core beside this Python (the ``test`` extra pins it): a test that runs
    Ansible skips without it, naming why — and fails under CI, where it must be there."""
    if request.node.name.startswith("test_plan_json") or ANSIBLE_PLAYBOOK.exists():
        return
    why = "ansible-core is not installed here: pip install -e '.[test]' (it pins 2.17.14)"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)

KEY = "sk-7f3a9c2e5b1d40685e0c4a9d"
#: any run of 8 characters of the key past its prefix would be a leak (the redacted
#: form keeps the last 4)
KEY_PIECES = [KEY[i:i + 8] for i in range(3, len(KEY) - 7)]
GOOD = ["alice-laptop", "bob-devbox", "carol-gpu", "host04", "host05", "host06", "host07",
        "host08", "host09", "stub-box"]
BAD = "bad-box"
#: the user's own files in every home, before taosync: given back byte for byte
USER_FILES = {
    ".claude/settings.json": '{\n  "theme": "dark",\n  "permissions": {"allow": ["Bash(ls)"]}\n}\n',
    ".aider.conf.yml": "# my aider settings\ndark-mode: true\n",
}
DOC = ROOT / "docs" / "ansible.md"


def doc_files() -> dict[str, str]:
    """The example's files, from docs/ansible.md's ```LANG title="NAME"``` blocks."""
    text = DOC.read_text(encoding="utf-8")
    return dict(re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```', text, re.S | re.M))


def no_secret(text: str, where: str) -> None:
    for piece in KEY_PIECES:
        assert piece not in text, f"{where} holds part of the key: {piece!r}"


class World:
    """The controller's project: the example's files, a test inventory, the installed
    collection, an environment of its own; ``play`` runs ansible-playbook once."""

    def __init__(self, tmp: Path, stub_root: str):
        self.tmp = tmp
        self.project = tmp / "project"
        self.homes = {h: tmp / "homes" / h for h in [*GOOD, BAD]}
        self.runs = 0
        for name, text in doc_files().items():
            path = self.project / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for home in self.homes.values():
            for rel, text in USER_FILES.items():
                (home / rel).parent.mkdir(parents=True, exist_ok=True)
                (home / rel).write_text(text, encoding="utf-8")
        for d in ("ctl-home", "local-tmp", "remote-tmp", "collections", "dist"):
            (tmp / d).mkdir()
        hosts = {}
        for h, home in self.homes.items():
            hosts[h] = {"taosync_home": str(home), "taosync_verify": False}
        hosts["alice-laptop"]["taosync_on_drift"] = "overwrite"
        hosts["bob-devbox"]["taosync_on_drift"] = "keep"
        hosts["carol-gpu"]["taosync_on_drift"] = "fail"
        hosts["stub-box"].update(taosync_verify=True, taosync_host_fleet={
            "gateway": {"base_url": stub_root}})
        hosts[BAD]["taosync_host_fleet"] = {"routes": {"fast": "no-such-model"}}
        inventory = {"devboxes": {
            "hosts": hosts,
            "vars": {"ansible_connection": "local",
                     "ansible_python_interpreter": sys.executable}}}
        (self.project / "test-hosts.yml").write_text(json.dumps(inventory, indent=1))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("ANSIBLE_", "XDG_", "TAOSYNC_"))}
        self.env.update(
            HOME=str(tmp / "ctl-home"), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
            TAOTOKEN_API_KEY=KEY, ANSIBLE_LOCAL_TEMP=str(tmp / "local-tmp"),
            ANSIBLE_REMOTE_TEMP=str(tmp / "remote-tmp"),
            ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"),
            ANSIBLE_CONFIG=str(tmp / "no-ansible.cfg"), ANSIBLE_NOCOLOR="1",
            ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "tests" / "ansible_callbacks"),
            ANSIBLE_CALLBACKS_ENABLED="taosync_record", ANSIBLE_FORKS="6",
            ANSIBLE_RETRY_FILES_ENABLED="0", LC_ALL="C.UTF-8")
        self.env.pop("NO_COLOR", None)

    def install(self) -> None:
        build = subprocess.run([str(GALAXY), "collection", "build", str(ROOT / "ansible"),
                                "--output-path", str(self.tmp / "dist")],
                               env=self.env, capture_output=True, text=True, timeout=120)
        assert build.returncode == 0, build.stdout + build.stderr
        tarball = self.tmp / "dist" / "taosync-fleet-0.1.0.tar.gz"
        assert tarball.is_file(), build.stdout
        inst = subprocess.run([str(GALAXY), "collection", "install", str(tarball),
                               "-p", str(self.tmp / "collections")],
                              env=self.env, capture_output=True, text=True, timeout=120)
        assert inst.returncode == 0, inst.stdout + inst.stderr
        assert (self.tmp / "collections" / "ansible_collections" / "taosync" / "fleet" /
                "plugins" / "modules" / "apply.py").is_file()
        for module in ("apply", "status"):  # docs/ansible.md sends readers to ansible-doc
            doc = subprocess.run([str(BIN / "ansible-doc"), f"taosync.fleet.{module}"],
                                 env=self.env, capture_output=True, text=True, timeout=120)
            assert doc.returncode == 0 and "secret_env" in doc.stdout, doc.stdout + doc.stderr

    def play(self, *args: str) -> "Play":
        self.runs += 1
        record = self.tmp / f"record-{self.runs}.jsonl"
        env = dict(self.env, TAOSYNC_ANSIBLE_RECORD=str(record))
        started = time.monotonic()
        proc = subprocess.run(
            [str(ANSIBLE_PLAYBOOK), "-i", "inventory.ini", "-i", "test-hosts.yml",
             "site.yml", *args], cwd=self.project, env=env, capture_output=True,
            text=True, timeout=300, stdin=subprocess.DEVNULL)
        output = proc.stdout + proc.stderr
        print(f"ansible-playbook {' '.join(args)}: {time.monotonic() - started:.1f} s")
        no_secret(output, f"ansible-playbook {' '.join(args)}")
        lines = record.read_text().splitlines() if record.exists() else []
        no_secret("\n".join(lines), "the recorded results")
        return Play(proc.returncode, output, [json.loads(line) for line in lines])

    def trees(self) -> dict[str, dict[str, str]]:
        return {h: snapshot(home) for h, home in self.homes.items()}


class Play:
    def __init__(self, rc: int, output: str, records: list[dict]):
        self.rc, self.output, self.records = rc, output, records
        self.recap = {m[0]: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m[1])}
                      for m in re.findall(r"^(\S+)\s+: (ok=.*)$", output, re.M)}

    def result(self, host: str, action: str = "taosync.fleet.apply") -> dict:
        found = [r for r in self.records if r["host"] == host and r["action"] == action]
        assert len(found) == 1, (host, action, self.output[-3000:])
        return found[0]


def without_certificate(trees: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {h: {f: d for f, d in t.items() if f != ".local/state/taosync/certificate.json"}
            for h, t in trees.items()}


def files_of(home: Path) -> dict[str, bytes]:
    return {rel: (home / rel).read_bytes() for rel in snapshot(home)}


def test_the_docs_example_on_eleven_hosts(tmp_path):
    from taosync.stub import Stub

    with Stub(key=KEY, models=["gpt-4o-mini", "claude-sonnet-4-20250514"]) as stub:
        w = World(tmp_path, stub.root)
        w.install()
        before = w.trees()

        # check mode: nothing written anywhere, no request, redacted diffs of what would change
        check = w.play("--check", "--diff", "-v")
        assert w.trees() == before, "check mode wrote something"
        assert not stub.requests, "check mode sent a request"
        assert check.rc == 2, check.output[-3000:]  # the bad host failed; nothing else
        for h in GOOD:
            r = check.result(h)
            assert r["status"] == "ok" and r["result"]["changed"] is True, (h, r)
            shown = {d["after_header"]: d for d in r["result"]["diff"]}
            settings = shown["~/.claude/settings.json"]
            assert '"theme": "dark"' in settings["before"]
            assert "ANTHROPIC_AUTH_TOKEN" in settings["after"]
            assert re.search(r'"ANTHROPIC_AUTH_TOKEN": "sk-…\w{4}"', settings["after"])
            assert "~/.codex/auth.json" in shown and shown["~/.codex/auth.json"]["before"] == ""
            assert {f["display"] for f in r["result"]["files"] if f["changed"]} == set(shown)
        assert "ANTHROPIC_AUTH_TOKEN" in check.output  # the diff shows on the terminal
        bad = check.result(BAD)
        assert bad["status"] == "failed"
        assert re.search(r"fleet\.yaml:\d+:\d+: routes\.fast: route 'fast' names "
                         r"'no-such-model', which is not in models", bad["result"]["msg"])
        assert bad["result"]["problems"][0]["file"] == "fleet.yaml"

        # the real run: every good host changes, the bad one fails alone and stays as it was
        real = w.play("--diff", "-v")
        assert real.rc == 2
        after = w.trees()
        assert after[BAD] == before[BAD]
        for h in GOOD:
            assert real.recap[h]["changed"] == 1 and real.recap[h]["failed"] == 0, h
            assert after[h] != before[h]
            home = w.homes[h]
            settings = json.loads((home / ".claude/settings.json").read_text())
            assert settings["theme"] == "dark" and settings["permissions"]  # the user's keys
            assert settings["env"]["ANTHROPIC_AUTH_TOKEN"] == KEY
            assert (home / ".codex/auth.json").stat().st_mode & 0o777 == 0o600
            assert (home / ".aider.conf.yml").read_text().startswith("# my aider settings\n")
        assert real.recap[BAD]["failed"] == 1
        fast = {h: (w.homes[h] / ".codex/config.toml").read_text() for h in GOOD}
        assert 'model = "qwen2.5-coder-32b"' in fast["carol-gpu"]  # the host override
        assert 'model = "gpt-4o-mini"' in fast["alice-laptop"]
        assert "llm.example.com" in fast["alice-laptop"] and stub.root in fast["stub-box"]
        verified = real.result("stub-box")["result"]
        assert verified["verify"]["passed"] and not verified["verify"]["failed"], verified
        assert stub.posts(), "verify: true sent no request to the stand-in"
        assert "verify" not in real.result("host04")["result"]

        # idempotent: a second run changes nothing on any host (-vvv: still no secret)
        again = w.play("--diff", "-vvv")
        # byte for byte, but for the no-op certificate a first no-op run leaves so that the
        # next one takes taosync's fast path (docs/performance.md)
        assert without_certificate(w.trees()) == without_certificate(after)
        for h in GOOD:
            assert again.recap[h]["changed"] == 0 and again.recap[h]["failed"] == 0, h
            assert again.result(h)["result"]["changed"] is False

        # hand edits on three hosts: the health report names them, then each on_drift
        for h in ("alice-laptop", "bob-devbox", "carol-gpu"):
            cfg = w.homes[h] / ".codex/config.toml"
            cfg.write_text(re.sub(r'^model = ".*"$', 'model = "mine"', cfg.read_text(),
                                  count=1, flags=re.M))
        edited = w.trees()
        health = w.play("--tags", "health", "-v")
        assert health.rc == 2 and w.trees() == edited
        for h in ("alice-laptop", "bob-devbox", "carol-gpu"):
            facts = health.result(h, "taosync.fleet.status")["result"]["taosync_status"]
            states = {f["display"]: f["state"] for f in facts["files"]}
            assert states["~/.codex/config.toml"] == "drift" and facts["in_sync"] is False
            assert states["~/.claude/settings.json"] == "in_sync"
        facts = health.result("host04", "taosync.fleet.status")["result"]["taosync_status"]
        assert facts["in_sync"] is True and facts["summary"]["drift"] == 0
        routes = health.result("stub-box", "taosync.fleet.status")["result"][
            "taosync_status"]["routes"]
        assert routes and all(r["last_ok"] for r in routes.values()), routes

        drift = w.play("--diff", "-v")
        alice = drift.result("alice-laptop")["result"]
        assert drift.recap["alice-laptop"]["changed"] == 1
        assert [d["key"] for d in alice["drift"]] == ["model"]
        alice_cfg = w.homes["alice-laptop"] / ".codex/config.toml"
        assert 'model = "gpt-4o-mini"' in alice_cfg.read_text()  # overwrite
        bob = drift.result("bob-devbox")["result"]
        assert drift.recap["bob-devbox"]["changed"] == 0 and drift.recap["bob-devbox"]["failed"] == 0
        assert "~/.codex/config.toml" in bob["kept"] and "~/.codex/auth.json" in bob["kept"]
        kept = without_certificate(w.trees())["bob-devbox"]
        assert kept == without_certificate(edited)["bob-devbox"]  # keep
        carol = drift.result("carol-gpu")
        assert carol["status"] == "failed" and "on_drift=fail" in carol["result"]["msg"]
        assert "~/.codex/config.toml model" in carol["result"]["msg"]
        assert w.trees()["carol-gpu"] == edited["carol-gpu"]  # fail: nothing written
        for h in GOOD[3:]:
            assert drift.recap[h]["changed"] == 0 and drift.recap[h]["failed"] == 0, h

        # state: absent gives every file back: the user's files byte for byte, and with
        # purge nothing else is left (a hand-edited file keeps the edit, and only it)
        gone = w.play("-e", "taosync_state=absent", "-e", "taosync_purge=true", "--diff", "-v")
        final = w.trees()
        for h in GOOD:
            assert gone.recap[h]["changed"] == 1 and gone.recap[h]["failed"] == 0, h
            if h in ("bob-devbox", "carol-gpu"):
                left = files_of(w.homes[h])
                assert left.pop(".codex/config.toml").startswith(b'model = "mine"\n')
                assert left == {rel: text.encode() for rel, text in USER_FILES.items()}
            else:
                assert final[h] == before[h], h
        assert final[BAD] == before[BAD]


def take_lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_plan_json_gives_redacted_whole_texts(home, fleet_file):
    """plan --json's before/after (what the collection's --diff shows): the whole texts,
    the key redacted on both sides; an unchanged file has neither."""
    from conftest import TEST_KEY

    (home / ".claude").mkdir()
    user_token = "ghp_UserOwnToken0123456789abcdefXYZ"  # the user's, far from taosync's keys
    (home / ".claude/settings.json").write_text(json.dumps(
        {"env": {"ANTHROPIC_AUTH_TOKEN": TEST_KEY}, "theme": "dark",
         **{f"k{i}": i for i in range(20)}, "mcpServers": {"gh": {"env": {
             "GITHUB_TOKEN": user_token}}}}, indent=2))
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "taosync", *a, "--json", "--home", str(home), "-c",
         str(fleet_file), "--only", "claude-code"], capture_output=True, text=True)
    plan = json.loads(run("plan").stdout)
    f = next(f for f in plan["files"] if f["display"] == "~/.claude/settings.json")
    assert f["action"] == "update"
    assert '"theme": "dark"' in f["before"] and '"theme": "dark"' in f["after"]
    assert "ANTHROPIC_AUTH_TOKEN" in f["before"] and "ANTHROPIC_BASE_URL" in f["after"]
    for side in (f["before"], f["after"]):
        assert TEST_KEY not in side and TEST_KEY[3:11] not in side
        assert '"GITHUB_TOKEN"' in side and user_token[4:12] not in side
    assert run("apply", "--no-verify", "--yes").returncode == 0
    plan = json.loads(run("plan").stdout)
    assert all("before" not in f and "after" not in f for f in plan["files"])


def test_the_install_role_pins_taosync_into_a_venv(tmp_path):
    """The role taosync.fleet.install, from the local checkout (taosync_pip_spec): a venv
    whose taosync says the pinned version, linked where taosync_link says; a second run
    keeps the link; a wrong pin fails the play."""
    w = World(tmp_path, "http://127.0.0.1:9")
    w.install()
    venv, link = tmp_path / "opt-taosync", tmp_path / "bin" / "taosync"
    link.parent.mkdir()
    (w.project / "install.yml").write_text(json.dumps([{
        "hosts": "localhost", "gather_facts": False,
        "roles": [{"role": "taosync.fleet.install", "vars": {
            "taosync_pip_spec": str(ROOT), "taosync_venv": str(venv),
            "taosync_link": str(link), "taosync_python": sys.executable}}]}]))

    def play(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(ANSIBLE_PLAYBOOK), "-i", "localhost,", "-c", "local", "-e",
             f"ansible_python_interpreter={sys.executable}", "install.yml", *extra],
            cwd=w.project, env=dict(w.env, TAOSYNC_ANSIBLE_RECORD=str(tmp_path / "r.jsonl")),
            capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)

    done = play()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == "taosync, version 0.1.0"
    assert os.path.realpath(link) == str(venv / "bin" / "taosync")
    wrong = play("-e", "taosync_version=9.9.9")
    assert wrong.returncode == 2 and "Check the installed version" in wrong.stdout


SMALL_FLEET = {"version": 1, "gateway": {"base_url": "https://llm.example.com",
                                        "key": "${env:TAOTOKEN_API_KEY}"},
               "models": {"m": {}}, "routes": {"fast": "m"}, "default_route": "fast",
               "clients": {"claude-code": {"model": "fast"}, "codex": {"model": "fast"}}}


def run_module(tmp_path: Path, name: str, params: dict, env: dict | None = None,
               check: bool = False) -> tuple[dict, str]:
    """One module of the collection run as Ansible runs it on a node (its arguments in a
    file), from ansible/ itself: its result, and all it printed."""
    done = subprocess.run(**module_call(tmp_path, name, params, env, check),
                          capture_output=True, text=True, timeout=120)
    printed = done.stdout + done.stderr
    no_secret(printed, f"the {name} module's output")
    return json.loads(done.stdout), printed


def node_tmp(tmp_path: Path) -> Path:
    """The managed node's TMPDIR in the module tests (to see the module leave none)."""
    (tmp_path / "node-tmp").mkdir(exist_ok=True)
    return tmp_path / "node-tmp"


def module_call(tmp_path: Path, name: str, params: dict, env: dict | None = None,
                check: bool = False) -> dict:
    where = tmp_path / "modules"
    if not where.exists():
        (where / "ansible_collections" / "taosync").mkdir(parents=True)
        (where / "ansible_collections" / "taosync" / "fleet").symlink_to(ROOT / "ansible")
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "executable": str(BIN / "taosync"), **params,
        **({"_ansible_check_mode": True} if check else {})}}))
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("XDG_", "TAOSYNC_", "TAOTOKEN_"))}
    return {"args": [sys.executable, "-m",
                     f"ansible_collections.taosync.fleet.plugins.modules.{name}", str(args)],
            "env": dict(base, PYTHONPATH=str(where), PYTHONDONTWRITEBYTECODE="1",
                        TMPDIR=str(node_tmp(tmp_path)), **(env or {})),
            "cwd": tmp_path}


def test_secret_env_is_never_logged_and_a_failed_verify_fails_the_task(tmp_path):
    """The key handed over in ``secret_env`` (no_log) reaches taosync and no output; a
    verify that fails after writing fails the task, saying what was written."""
    from taosync.stub import Stub

    home = tmp_path / "home"
    home.mkdir()
    with Stub(key="sk-another-key-00000000000000", models=["m"]) as stub:
        fleet = dict(SMALL_FLEET, gateway={"base_url": stub.root,
                                           "key": "${env:TAOTOKEN_API_KEY}"})
        result, _ = run_module(tmp_path, "apply", {
            "content": fleet, "home": str(home), "secret_env": {"TAOTOKEN_API_KEY": KEY}})
        assert stub.posts(), "verify sent nothing"
    assert result["failed"] is True and result["changed"] is True, result
    assert "verify failed" in result["msg"] and "taosync rollback" in result["msg"]
    assert "codex (m): the gateway rejected the key" in result["msg"]
    assert result["invocation"]["module_args"]["secret_env"] != {"TAOTOKEN_API_KEY": KEY}
    auth = json.loads((home / ".codex/auth.json").read_text())
    assert auth["OPENAI_API_KEY"] == KEY  # taosync got the key, from secret_env only


def test_a_held_lock_is_waited_for_and_check_mode_takes_none(tmp_path):
    """A second taosync on the same home: the module waits for its lock; check mode
    (taosync plan) neither takes the lock nor writes anything."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"TAOTOKEN_API_KEY": KEY}
    params = {"content": SMALL_FLEET, "home": str(home), "verify": False}
    first, _ = run_module(tmp_path, "apply", params, env)
    assert first["changed"] is True
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace('model = "m"', 'model = "mine"'))
    held = take_lock(home / ".local/state/taosync/lock")
    before = snapshot(home)
    # held all along: a check mode that took the lock would wait 60 s, then fail (exit 3)
    checked, _ = run_module(tmp_path, "apply", dict(params, on_drift="overwrite", lock_timeout=0),
                            env, check=True)
    assert checked["changed"] is True and snapshot(home) == before, checked.get("msg")
    waiting = subprocess.Popen(**module_call(tmp_path, "apply",
                                             dict(params, on_drift="overwrite"), env),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    assert waiting.poll() is None, "it did not wait for the lock"
    assert snapshot(home) == before
    os.close(held)
    out, err = waiting.communicate(timeout=120)
    no_secret(out + err, "the apply module's output")
    done = json.loads(out)
    assert done["changed"] is True and done["drift"][0]["key"] == "model"
    assert 'model = "m"' in cfg.read_text()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="acting on another user's home needs root (CI runs as root)")
def test_root_on_a_users_home_leaves_only_the_users_files(tmp_path):
    """The apply module run as root with ``home`` set to another user's home (what a
    play without become_user does): every file and directory taosync and the module
    create there — the client files, taosync's state, the carried fleet — is the user's."""
    import tempfile

    # the user must reach their home: not under pytest's root-only (0700) directories
    outer = Path(tempfile.mkdtemp(prefix="taosync-ansible-home-"))
    outer.chmod(0o755)
    home = outer / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    try:
        _apply_as_root(tmp_path, home)
    finally:
        shutil.rmtree(outer)


def _apply_as_root(tmp_path: Path, home: Path) -> None:
    result, _ = run_module(tmp_path, "apply", {"content": SMALL_FLEET, "home": str(home),
                                               "verify": False},
                           {"TAOTOKEN_API_KEY": KEY})
    assert result["changed"] is True, result.get("msg")
    made = list(home.rglob("*"))
    assert any(p.name == "auth.json" for p in made) and any(p.name == "task.yaml" or
                                                            p.name == "fleet.yaml" for p in made)
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in made} == {(65534, 65534)}, \
        [str(p) for p in made if p.lstat().st_uid != 65534]


def test_config_and_include_paths_on_the_node_and_absent_step_by_step(tmp_path):
    """``config`` and ``include`` as paths on the managed node (a problem in the base
    fleet located there, nothing written); ``state: absent`` in check mode writes
    nothing, then gives every file back, then has nothing left to do."""
    home, nodes = tmp_path / "home", tmp_path / "node"
    home.mkdir()
    nodes.mkdir()
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text("# mine\nmodel_reasoning_effort = \"high\"\n")
    original = snapshot(home)
    team = dict(SMALL_FLEET, routes={"fast": "nope"})
    (nodes / "team.yaml").write_text(json.dumps(team, indent=1))
    (nodes / "fleet.yaml").write_text("routes:\n  fast: m\n")
    env = {"TAOTOKEN_API_KEY": KEY}
    params = {"config": str(nodes / "fleet.yaml"), "include": [str(nodes / "team.yaml")],
              "home": str(home), "verify": False}
    # the host's fleet.yaml mends the route: valid as merged
    done, _ = run_module(tmp_path, "apply", params, env)
    assert done["changed"] is True and snapshot(home) != original
    applied = snapshot(home)
    (nodes / "fleet.yaml").write_text("routes:\n  fast: nope\n")
    bad, _ = run_module(tmp_path, "apply", params, env)
    assert bad["failed"] is True and bad["changed"] is False
    assert re.search(r"fleet\.yaml:2:9: routes\.fast: route 'fast' names 'nope'", bad["msg"])
    assert bad["problems"][0]["line"] == 2 and snapshot(home) == applied

    missing, _ = run_module(tmp_path, "apply", dict(params, config=str(nodes / "gone.yaml")),
                            env)
    assert missing["failed"] is True and str(nodes / "gone.yaml") in missing["msg"], missing
    assert snapshot(home) == applied

    gone = dict(params, state="absent")
    dry, _ = run_module(tmp_path, "apply", gone, env, check=True)
    assert dry["changed"] is True and snapshot(home) == applied
    back, _ = run_module(tmp_path, "apply", dict(gone, purge=True), env)
    assert back["changed"] is True and snapshot(home) == original
    assert sorted(p.name for p in home.iterdir()) == [".codex"]  # no state dirs left
    again, _ = run_module(tmp_path, "apply", dict(gone, purge=True), env)
    assert again["changed"] is False and snapshot(home) == original
    assert sorted(p.name for p in home.iterdir()) == [".codex"]
    assert not list(node_tmp(tmp_path).iterdir()), "a temporary directory was left"
