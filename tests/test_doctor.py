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
