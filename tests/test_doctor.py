"""`taosync doctor`: runtimes per backend label, env overrides, proxies, DNS (loopback only)."""

from __future__ import annotations

import json
import socket

import pytest
from conftest import TEST_KEY

from taosync.stub import Stub

EXAMPLE_ROOT = "https://taotoken.net/api"
PROXY_VARS = ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"]
OVERRIDES = ["ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
             "OPENAI_BASE_URL", "CODEX_API_KEY"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def clean(monkeypatch, tmp_path, fleet_file):
    """No proxy or override in the environment; fake runtimes on PATH; the fleet's gateway on
    localhost (so DNS never leaves the machine)."""
    for var in PROXY_VARS + OVERRIDES:
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Fake GPU (UUID: GPU-1)'\n")
    (bin_dir / "nvcc").write_text("#!/bin/sh\necho 'nvcc fatal: no driver' >&2\nexit 3\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))  # sycl-ls is not installed
    fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT,
                                                         f"http://localhost:{free_port()}"))
    return fleet_file


def checks(r) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(r.out)["checks"]}


def test_runtimes_missing_is_not_a_failure(taosync, clean):
    r = taosync("doctor", "--json")
    assert r.rc == 0, r.both
    c = checks(r)
    assert c["cuda: nvidia-smi"]["status"] == "ok"
    assert "Fake GPU" in c["cuda: nvidia-smi"]["detail"]
    assert c["cuda: nvcc"]["status"] == "warn" and "exit 3" in c["cuda: nvcc"]["detail"]
    assert c["oneapi: sycl-ls"]["status"] == "missing"
    assert c["oneapi: sycl-ls"]["detail"].startswith("not installed")
    assert c["localhost"]["status"] == "ok"
    assert c["gateway.key"]["status"] == "ok" and TEST_KEY not in r.out
    human = taosync("doctor")
    assert human.rc == 0 and "not installed" in human.out
    assert "nothing definitely broken" in human.out


def test_env_overrides_are_explained_and_keys_redacted(taosync, clean, monkeypatch):
    other = "sk-other-key-abcdefghijklmnop"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://elsewhere.example/api")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", other)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://elsewhere.example/v1")
    monkeypatch.setenv("CODEX_API_KEY", other)
    monkeypatch.setenv("CODEX_HOME", "/somewhere/codex")
    r = taosync("doctor", "--json")
    assert r.rc == 0
    c = checks(r)
    assert c["ANTHROPIC_BASE_URL"]["status"] == "warn"
    assert "settings.json env value beats" in c["ANTHROPIC_BASE_URL"]["detail"]
    assert "the fleet's key" in c["ANTHROPIC_AUTH_TOKEN"]["detail"]
    assert c["ANTHROPIC_API_KEY"]["status"] == "warn"
    assert "x-api-key" in c["ANTHROPIC_API_KEY"]["detail"]
    assert "Codex ignores OPENAI_BASE_URL" in c["OPENAI_BASE_URL"]["detail"]
    assert "auth.json" in c["CODEX_API_KEY"]["detail"]
    assert "/somewhere/codex" in c["CODEX_HOME"]["detail"]
    human = taosync("doctor")
    for text in (r.out, r.err, human.out, human.err):
        assert TEST_KEY not in text and other not in text
    assert "sk-…mnop" in human.out


def test_reference_mode_shell_token_beats_the_key_helper(taosync, clean, monkeypatch):
    clean.write_text(clean.read_text().replace("secrets: inline", "secrets: reference"))
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "sk-stale-token-000000000000")
    c = checks(taosync("doctor", "--json"))
    assert c["ANTHROPIC_AUTH_TOKEN"]["status"] == "warn"
    assert "apiKeyHelper" in c["ANTHROPIC_AUTH_TOKEN"]["detail"]


def test_local_proxy_in_the_way_and_not_listening_is_broken(taosync, fleet_file, clean,
                                                            monkeypatch):
    fleet_file.write_text(fleet_file.read_text().replace("http://localhost:", "https://gw."
                                                         "example.invalid:"))
    port = free_port()
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{port}")
    r = taosync("doctor", "--json")
    assert r.rc == 1
    c = checks(r)
    (proxy,) = [v for k, v in c.items() if k.startswith("gw.example.invalid via")]
    assert proxy["status"] == "fail"
    assert f"local proxy failed — nothing listens on 127.0.0.1:{port}" in proxy["detail"]
    assert c["gw.example.invalid"]["detail"] == "resolved by the proxy, not here"
    assert "pw" not in c["HTTPS_PROXY"]["detail"]
    with Stub() as listening:
        monkeypatch.setenv("HTTPS_PROXY", listening.root)
        r = taosync("doctor", "--json")
    assert r.rc == 0


def test_no_proxy_bypass(taosync, fleet_file, clean, monkeypatch):
    fleet_file.write_text(fleet_file.read_text().replace("http://localhost:", "http://"
                                                         "gw.example.invalid:"))
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("NO_PROXY", ".example.invalid")
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: real("localhost", *a, **k)
                        if host == "gw.example.invalid" else real(host, *a, **k))
    r = taosync("doctor", "--json")
    assert r.rc == 0
    assert not any(" via " in name for name in checks(r))


def test_gateway_host_that_does_not_resolve_is_broken(taosync, fleet_file, clean, monkeypatch):
    fleet_file.write_text(fleet_file.read_text().replace("http://localhost:", "http://"
                                                         "gw.example.invalid:"))
    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host == "gw.example.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    r = taosync("doctor")
    assert r.rc == 1
    assert "does not resolve" in r.out


def test_unresolvable_key_is_broken(taosync, clean, monkeypatch):
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    r = taosync("doctor", "--json")
    assert r.rc == 1
    assert checks(r)["gateway.key"]["status"] == "fail"
    assert "TAOTOKEN_API_KEY" in checks(r)["gateway.key"]["detail"]


def test_invalid_fleet_still_checks_the_environment(taosync, clean, monkeypatch):
    clean.write_text("version: 1\ngateway: {}\n")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://x.example/v1")
    r = taosync("doctor", "--json")
    assert r.rc == 2
    c = checks(r)
    assert any(v["section"] == "fleet" and v["status"] == "fail" for v in c.values())
    assert "OPENAI_BASE_URL" in c


def test_unknown_backend_label(taosync, clean):
    clean.write_text(clean.read_text().replace("backend: oneapi", "backend: tpu"))
    c = checks(taosync("doctor", "--json"))
    assert c["tpu"]["status"] == "info" and "no local check" in c["tpu"]["detail"]


# -- sections: each finds its problem in a prepared home, and is quiet on a healthy one -----

def by_section(r) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for c in json.loads(r.out)["checks"]:
        out.setdefault(c["section"], []).append(c)
    return out


def bad(r, section: str) -> list[dict]:
    return [c for c in by_section(r).get(section, []) if c["status"] in ("warn", "fail")]


@pytest.fixture
def applied(taosync, clean, home):
    assert taosync("apply", "--no-verify").rc == 0
    return home


def test_healthy_home_is_quiet_in_every_section(taosync, applied):
    r = taosync("doctor", "--json")
    assert r.rc == 0, r.out
    for section in ("state", "targets", "overrides", "proxy", "clients"):
        assert bad(r, section) == [], (section, r.out)
    sections = by_section(r)
    assert any(c["name"] == "last apply" and c["status"] == "ok" for c in sections["state"])
    assert all(c["status"] == "ok" for c in sections["targets"]) and sections["targets"]
    human = taosync("doctor")
    assert human.rc == 0
    assert any(line.startswith("ok      targets") for line in human.out.splitlines())


def test_doctor_writes_nothing(taosync, applied):
    from conftest import snapshot

    (applied / ".codex" / "auth.json").chmod(0o644)
    before = snapshot(applied)
    modes = {p: p.stat().st_mode for p in applied.rglob("*")}
    assert taosync("doctor").rc == 0
    assert snapshot(applied) == before
    assert {p: p.stat().st_mode for p in applied.rglob("*")} == modes


def test_state_drift_and_stale_journal(taosync, applied):
    settings = applied / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["env"]["ANTHROPIC_DEFAULT_HAIKU_MODEL"] = "something-else"
    settings.write_text(json.dumps(data))
    state_dir = next(p.parent for p in applied.rglob("state.json"))
    (state_dir / "journal.json").write_text("{}")
    r = taosync("doctor", "--json")
    problems = {c["name"]: c for c in bad(r, "state")}
    drift = problems["drift ~/.claude/settings.json"]
    assert "env.ANTHROPIC_DEFAULT_HAIKU_MODEL" in drift["detail"]
    assert "interrupted apply" in problems["journal"]["detail"]


def test_state_lock_held_by_another_process(taosync, applied):
    import subprocess
    import sys

    lock = next(p.parent for p in applied.rglob("state.json")) / "lock"
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl,os,sys,time;fd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT);"
                               "fcntl.flock(fd,fcntl.LOCK_EX);print('held',flush=True);time.sleep(60)",
                               str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = taosync("doctor", "--json")
        assert "is held" in {c["name"]: c for c in bad(r, "state")}["lock"]["detail"]
    finally:
        holder.kill()
        holder.wait()
    assert not any(c["name"] == "lock" for c in bad(taosync("doctor", "--json"), "state"))


def test_targets_unparseable_open_mode_and_doubled_v1(taosync, applied):
    (applied / ".codex" / "config.toml").write_text('model = "x"\n[broken\n')
    (applied / ".codex" / "auth.json").chmod(0o644)
    settings = applied / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    root = data["env"]["ANTHROPIC_BASE_URL"]
    data["env"]["ANTHROPIC_BASE_URL"] = root + "/v1"
    settings.write_text(json.dumps(data))
    r = taosync("doctor", "--json")
    assert r.rc == 1
    found = {c["name"]: c for c in bad(r, "targets")}
    assert found["~/.codex/config.toml"]["status"] == "fail"
    assert ":2:" in found["~/.codex/config.toml"]["detail"]
    assert found["~/.codex/auth.json"]["status"] == "warn"
    assert "0644" in found["~/.codex/auth.json"]["detail"]
    # a promise apply keeps (tests/test_bounded_inputs.py: a 0644 key file is drift)
    assert "`taosync apply` takes group and other access away" in \
        found["~/.codex/auth.json"]["detail"]
    assert "/v1 is doubled" in found["~/.claude/settings.json"]["detail"]
    assert f"the fleet renders {root} there" in found["~/.claude/settings.json"]["detail"]
    human = taosync("doctor")
    assert TEST_KEY not in human.out + human.err
    assert any(line.startswith("error   targets   ~/.codex/config.toml")
               for line in human.out.splitlines()), human.out


def test_targets_symlink_into_a_git_work_tree(taosync, clean, home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    (dotfiles / ".git").mkdir(parents=True)
    (dotfiles / "auth.json").write_text("{}\n")
    (home / ".codex").mkdir()
    (home / ".codex" / "auth.json").symlink_to(dotfiles / "auth.json")
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("doctor", "--json")
    (check,) = [c for c in bad(r, "targets") if c["name"] == "~/.codex/auth.json"]
    assert f"git work tree {dotfiles}" in check["detail"] and "symlink" in check["detail"]
    assert TEST_KEY not in r.out


def test_clients_binary_version_against_the_proven_one(taosync, clean, tmp_path, monkeypatch):
    from taosync.clients import codex
    from taosync.doctor.checks import proven_version

    assert proven_version(codex) == "0.171.0"  # from README's OWNED_FILES row
    bin_dir = tmp_path / "bin"
    fake = bin_dir / "codex"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.150.2'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(codex, "BINARY", "codex", raising=False)
    r = taosync("doctor", "--json")
    (check,) = [c for c in by_section(r)["clients"] if "codex" in c["name"]]
    assert check["status"] == "warn"
    assert "0.150.2 installed" in check["detail"] and "proven with 0.171.0" in check["detail"]
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.171.0'\n")
    (check,) = [c for c in by_section(taosync("doctor", "--json"))["clients"]
                if "codex" in c["name"]]
    assert check["status"] == "ok"
    fake.unlink()
    (check,) = [c for c in by_section(taosync("doctor", "--json"))["clients"]
                if "codex" in c["name"]]
    assert check["status"] == "missing"


def test_clients_binary_version_printed_on_stderr(taosync, clean, tmp_path, fleet_file):
    """Pi 0.73.1 prints ``pi --version`` on stderr (its stdout is empty)."""
    fleet_file.write_text(fleet_file.read_text().replace(
        "kilo: {model: balanced, small_model: fast}", "pi: {model: balanced}"))
    fake = tmp_path / "bin" / "pi"
    fake.write_text("#!/bin/sh\necho 0.73.1 >&2\n")
    fake.chmod(0o755)
    (check,) = [c for c in by_section(taosync("doctor", "--json"))["clients"]
                if "(pi)" in c["name"]]
    assert check["status"] == "ok", check
    assert check["detail"] == "0.73.1, the version taosync is proven with"


def test_claude_overrides_top_level_model_and_key_helper(taosync, clean, home, monkeypatch):
    clean.write_text(clean.read_text().replace("secrets: inline", "secrets: reference"))
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    assert data["apiKeyHelper"] == "printenv TAOTOKEN_API_KEY"
    r = taosync("doctor", "--json")
    assert bad(r, "overrides") == []
    data["model"] = "opus"
    del data["env"]["ANTHROPIC_MODEL"]
    data["apiKeyHelper"] = "printenv TEAM_GATEWAY_KEY"
    settings.write_text(json.dumps(data))
    r = taosync("doctor", "--json")
    assert r.rc == 1
    found = {c["name"]: c for c in bad(r, "overrides")}
    model = found["~/.claude/settings.json model"]
    assert model["status"] == "warn" and "'opus' is what Claude Code uses" in model["detail"]
    helper = found["~/.claude/settings.json apiKeyHelper"]
    assert helper["status"] == "fail" and "TEAM_GATEWAY_KEY, which is unset" in helper["detail"]
    monkeypatch.setenv("TEAM_GATEWAY_KEY", "sk-team-0123456789abcdef")
    r = taosync("doctor", "--json")
    assert "~/.claude/settings.json apiKeyHelper" not in {c["name"] for c in bad(r, "overrides")}


def test_loopback_gateway_not_in_no_proxy(taosync, clean, monkeypatch):
    with Stub() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.root)
        r = taosync("doctor", "--json")
        (check,) = [c for c in bad(r, "proxy") if c["name"] == "localhost not in NO_PROXY"]
        assert "add localhost to NO_PROXY" in check["detail"]
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        assert bad(taosync("doctor", "--json"), "proxy") == []


def test_runtimes_only_for_a_local_gateway_or_with_local(taosync, clean, monkeypatch):
    clean.write_text(clean.read_text().replace("http://localhost:", "http://127.0.0.2:"))
    assert "cuda: nvidia-smi" in checks(taosync("doctor", "--json"))  # loopback: checked
    clean.write_text(clean.read_text().replace("http://127.0.0.2:", "https://8.8.8.8:"))
    r = taosync("doctor", "--json")
    c = checks(r)
    assert "cuda: nvidia-smi" not in c
    assert "--local" in c["local runtimes"]["detail"]
    assert "cuda: nvidia-smi" in checks(taosync("doctor", "--json", "--local"))
    human = taosync("doctor")
    assert "nvidia-smi" not in human.out


def test_private_hosts():
    from taosync.doctor.network import is_private_host

    for host in ("localhost", "127.0.0.1", "10.1.2.3", "192.168.1.9", "[::1]", "gpu-box",
                 "gw.internal", "nas.local"):
        assert is_private_host(host), host
    for host in ("8.8.8.8", "gateway.example.com", ""):
        assert not is_private_host(host), host


def test_fleet_editor_schema_missing_stale_and_current(taosync, clean):
    clean.write_text("# yaml-language-server: $schema=./fleet.schema.json\n" + clean.read_text())
    r = taosync("doctor", "--json")
    assert r.rc == 0  # a warning, not an error
    assert checks(r)["editor schema"]["status"] == "warn"
    assert "cannot be read" in checks(r)["editor schema"]["detail"]
    (clean.parent / "fleet.schema.json").write_text("{}\n")
    assert "not this taosync's schema" in checks(taosync("doctor", "--json"))[
        "editor schema"]["detail"]
    assert taosync("schema", "--write").rc == 0
    assert checks(taosync("doctor", "--json"))["editor schema"]["status"] == "ok"
