"""codex: exact patches and probes, import, the contract every client keeps, and the real
``codex``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import TEST_KEY
from helpers import (
    KEY, KEY_ONE, LLAMA, MINI, R1, ROUTER_ARGS, ROUTER_ENV, V1, by_path, fleet, imported,
    populate, round_trip)
from real import binary, run_real_client
from contract import check_contract
from taosync.clients import codex
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "codex", {"model": "fast", "profiles": ["deep"]},
                   reference_off_disk=True)


# -- render and probes

PROV = ("model_providers", "taotoken")


def test_codex_inline(clients_env, tmp_path):
    patches = by_path(codex.render(fleet(), KEY, clients_env))
    home = tmp_path / ".codex"
    config = patches[home / "config.toml"]
    assert config.format == "toml" and config.secret
    assert config.values == {
        ("model",): MINI,
        ("model_provider",): "taotoken",
        PROV + ("base_url",): V1,
        PROV + ("wire_api",): "responses",
        PROV + ("requires_openai_auth",): True,
        ("mcp_servers", "taotoken-router"): {"command": "npx", "args": ROUTER_ARGS,
                                             "env": ROUTER_ENV},
    }
    # the provider's display name is only filled in when missing: the user may rename it
    assert config.skeleton == {PROV + ("name",): "taosync gateway"}
    auth = patches[home / "auth.json"]
    assert auth.format == "json" and auth.secret
    assert auth.values == {("auth_mode",): "apikey", ("OPENAI_API_KEY",): KEY}
    assert patches[home / "deep.config.toml"].values == {
        ("model",): R1, ("model_provider",): "taotoken"}
    assert patches[home / "batch.config.toml"].values == {
        ("model",): LLAMA, ("model_provider",): "taotoken"}
    assert len(patches) == 4 and clients_env.warnings == []


def test_codex_reference_env_key(clients_env, tmp_path):
    f = fleet(secrets="reference", clients__codex={"model": "fast", "provider_id": "gw",
                                                   "mcp": False})
    patches = codex.render(f, KEY, clients_env)
    assert [p.path for p in patches] == [tmp_path / ".codex" / "config.toml"]
    assert patches[0].values == {
        ("model",): MINI, ("model_provider",): "gw",
        ("model_providers", "gw", "base_url"): V1,
        ("model_providers", "gw", "wire_api"): "responses",
        ("model_providers", "gw", "env_key"): "TAOTOKEN_API_KEY",
    }
    assert not patches[0].secret and clients_env.warnings == []


@pytest.mark.parametrize("ref", ["${file:~/k}", "${cmd:pass show tao}", "${shell:echo k}",
                                 "sk-literal-0123456789abcdef"])
def test_codex_reference_fallback_inline(clients_env, ref):
    f = fleet(gateway__key=ref, secrets="reference")
    patches = codex.render(f, KEY, clients_env)
    assert patches[0].values[PROV + ("requires_openai_auth",)] is True
    assert PROV + ("env_key",) not in patches[0].values
    assert patches[1].values[("OPENAI_API_KEY",)] == KEY
    (warning,) = clients_env.warnings
    assert "inline" in warning and "auth.json" in warning and "sk-literal" not in warning


def test_codex_warns_about_codex_api_key(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CODEX_API_KEY": "x"})
    codex.render(fleet(), KEY, env)
    assert any("CODEX_API_KEY" in w for w in env.warnings)


def test_codex_headers_and_mcp_shapes(clients_env):
    f = fleet(gateway__headers={"X-Team": "core"}, mcp_servers={
        "local": {"command": "srv", "cwd": "/srv"},
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
    })
    values = codex.render(f, KEY, clients_env)[0].values
    assert values[PROV + ("http_headers",)] == {"X-Team": Secret("core")}
    assert values[("mcp_servers", "local")] == {"command": "srv", "cwd": "/srv"}
    assert values[("mcp_servers", "remote")] == {"url": "https://mcp.example/mcp",
                                                 "http_headers": {"A": "b"}}
    assert values[("mcp_servers", "old")] == {"url": "https://mcp.example/sse"}
    (warning,) = clients_env.warnings
    assert "'old'" in warning and "sse" in warning
    assert codex.probes(f, KEY, clients_env)[0].headers == (("X-Team", Secret("core")),)


def test_codex_profile_names_sanitized(clients_env, tmp_path):
    f = fleet(clients__codex={"profiles": ["deep", R1, "nvidia.deepseek-r1", "deep"]})
    patches = codex.render(f, KEY, clients_env)
    profiles = [p for p in patches if p.path.name.endswith(".config.toml")
                and p.path.name != "config.toml"]
    assert [p.path for p in profiles] == [tmp_path / ".codex" / "deep.config.toml",
                                          tmp_path / ".codex" / "nvidia-deepseek-r1.config.toml"]
    assert profiles[1].values[("model",)] == R1
    assert any("codex -p nvidia-deepseek-r1" in w for w in clients_env.warnings)
    assert any("'nvidia.deepseek-r1'" in w and "skipped" in w for w in clients_env.warnings)


def test_codex_home(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"CODEX_HOME": str(tmp_path / "cx")}, sandboxed=True)
    assert {p.path.parent for p in codex.render(fleet(), KEY, env)} == {tmp_path / "cx"}
    outside = ClientEnv(home=tmp_path / "h", environ={"CODEX_HOME": "/etc/codex"},
                        sandboxed=True)
    assert {p.path.parent for p in codex.render(fleet(), KEY, outside)} == {
        tmp_path / "h" / ".codex"}
    assert any("CODEX_HOME" in w for w in outside.warnings)


def test_codex_probes(clients_env):
    assert codex.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("codex", route, model, "openai-responses", V1, V1 + "/responses", "bearer")
        for route, model in (("fast", MINI), ("deep", R1), ("batch", LLAMA))
    ]
    f = fleet(clients__codex={"model": MINI, "profiles": ["fast", LLAMA]})
    assert [(p.route, p.model) for p in codex.probes(f, KEY, clients_env)] == [
        (None, MINI), ("fast", MINI), (None, LLAMA)]


# -- Cline ---------------------------------------------------------------------------


# -- import

def test_codex_round_trip_with_auth_json_and_profiles(run, home, tmp_path, monkeypatch):
    populate(home, "codex")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["gateway"]["base_url"] == "https://gw.example.com/api"
    assert fleet["clients"]["codex"] == {"model": "main", "profiles": ["deep"],
                                         "provider_id": "taogw"}
    assert fleet["routes"] == {"main": "gpt-4o-mini", "deep": "nvidia/deepseek-r1"}
    # the profile on another provider is left alone, and said so
    assert "llama3.1:8b" not in fleet["models"]
    assert any("local.config.toml" in f["message"] for f in data["findings"])
    # what plan may add are keys the file did not have (wire_api, provider name)
    config_changes = {k for (f, k) in changes if f == "~/.codex/config.toml"}
    assert config_changes <= {"model_providers.taogw.name", "model_providers.taogw.wire_api",
                              "model_providers.taogw.requires_openai_auth"}
    assert not any(f["display"] == "~/.codex/auth.json" and f["changes"] for f in plan["files"])


def test_codex_env_key_becomes_the_fleet_reference(run, home, tmp_path, monkeypatch):
    populate(home, "codex-env")
    monkeypatch.delenv("TAO_API_KEY", raising=False)
    r, data = imported(run)
    assert r.rc == 0
    assert data["fleet"]["gateway"]["key"] == "${env:TAO_API_KEY}"
    assert data["fleet"]["clients"]["codex"]["secrets"] == "reference"
    assert data["key"]["found"] == []
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE,
                                     allow={("~/.codex/config.toml", "model_providers.tao.base_url")})
    # the trailing slash is the only thing about the URL that changes, and import said so
    url = changes.get(("~/.codex/config.toml", "model_providers.tao.base_url"))
    assert url is None or url["old"].rstrip("/") == url["new"]
    assert any("trailing slash" in f["message"] for f in data["findings"])
    assert ("~/.codex/config.toml", "model_providers.tao.env_key") not in changes
    assert not (Path(str(tmp_path)) / "home" / ".codex" / "auth.json").exists()


# -- the real client

CODEX = binary("TAOSYNC_TEST_CODEX_BIN", "codex")


@pytest.mark.skipif(CODEX is None, reason="codex (@openai/codex 0.171.0) is not installed; "
                    "set TAOSYNC_TEST_CODEX_BIN")
@pytest.mark.parametrize("secrets", ["inline", "reference"])
def test_real_codex_answers_through_the_stand_in(taosync, home, fleet_file, secrets):
    """``codex exec`` with only taosync's ~/.codex files: Responses API under the root's
    /v1, the fleet's key (auth.json inline; the environment variable by reference)."""
    done, seen = run_real_client(
        taosync, fleet_file, home, CODEX, ["exec", "--skip-git-repo-check", "Reply with OK."],
        "codex", {"model": "main"}, secrets=secrets, headers={"X-Team": "core"},
        env={"TAOTOKEN_API_KEY": TEST_KEY} if secrets == "reference" else None)
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert "gw-main answered through the taosync stand-in" in done.stdout + done.stderr
    calls = [r for r in seen if r.method == "POST"]
    assert calls and all(r.path == "/api/v1/responses" and r.auth == "ok"
                         and r.body["model"] == "gw-main" for r in calls)
    assert all(r.headers.get("x-team") == "core" for r in calls)  # http_headers
    ours = [home / ".codex" / name for name in ("config.toml", "auth.json")]
    on_disk = "".join(p.read_text() for p in ours if p.exists())
    assert (TEST_KEY in on_disk) == (secrets == "inline")
