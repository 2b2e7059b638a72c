"""Pi: the contract, its two files, the protocol it speaks, the key by ``!command``,
auth.json winning over models.json, import, and the real ``pi`` 0.73.1."""

from __future__ import annotations

import json
import re

import pytest

from conftest import TEST_KEY
from contract import check_contract
from helpers import KEY, KEY_ONE, MINI, RAW, ROOT, SONNET, V1, fleet, imported, write
from real import binary_or_skip, stand_in
from taosync.clients import pi
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret
from taosync.formats.base import Match

P = ("providers", "taotoken")


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "pi", {"model": "balanced"},
                   reference_off_disk=True)


# -- render


def test_pi_writes_a_provider_and_the_default(clients_env, tmp_path):
    f = fleet(clients__pi={"model": "fast"}, gateway__headers={"X-Team": "core"},
              models={MINI: {"context_window": 128000}, SONNET: {}})
    models, settings = pi.render(f, KEY, clients_env)
    assert models.path == tmp_path / ".pi" / "agent" / "models.json"
    assert models.format == "jsonc" and models.secret
    assert settings.path == tmp_path / ".pi" / "agent" / "settings.json"
    assert settings.format == "json" and not settings.secret
    headers = models.values.pop(P + ("headers",))
    assert {name: value.reveal() for name, value in headers.items()} == {"X-Team": "core"}
    assert models.values == {
        P + ("baseUrl",): V1, P + ("api",): "openai-completions", P + ("apiKey",): KEY,
        P + ("models", Match("id", MINI), "name"): MINI,
        P + ("models", Match("id", MINI), "contextWindow"): 128000,
        P + ("models", Match("id", SONNET), "name"): SONNET,
    }
    assert settings.values == {("defaultProvider",): "taotoken", ("defaultModel",): MINI}
    assert clients_env.warnings == []


@pytest.mark.parametrize("api, base, protocol, path, auth", [
    ("openai-completions", V1, "openai-chat", "/chat/completions", "bearer"),
    ("openai-responses", V1, "openai-responses", "/responses", "bearer"),
    ("anthropic-messages", ROOT, "anthropic-messages", "/v1/messages", "x-api-key"),
])
def test_pi_protocol_sets_api_the_base_url_and_the_probe(clients_env, api, base, protocol,
                                                        path, auth):
    f = fleet(clients__pi={"model": "balanced", "protocol": protocol})
    models, _ = pi.render(f, KEY, clients_env)
    assert models.values[P + ("baseUrl",)] == base and models.values[P + ("api",)] == api
    assert pi.probes(f, KEY, clients_env) == [
        ProbeSpec("pi", "balanced", SONNET, protocol, base, base + path, auth)]


@pytest.mark.parametrize("reference, written", [
    ("${env:GW_KEY}", "!printenv GW_KEY"),
    ("${file:~/keys/gw key}", "!cat '{home}/keys/gw key'"),
    ("${cmd:pass show gw/key}", "!pass show gw/key"),
    ("${cmd:vault read 'a b'}", "!vault read 'a b'"),
    ("${shell:op read op://gw/key | tr -d x}", "!op read op://gw/key | tr -d x"),
])
def test_pi_reference_is_a_command_pi_runs(clients_env, reference, written):
    f = fleet(secrets="reference", gateway__key=reference)
    models, _ = pi.render(f, KEY, clients_env)
    assert models.values[P + ("apiKey",)] == written.format(home=clients_env.home)
    assert not models.secret and RAW not in json.dumps(
        {str(k): str(v) for k, v in models.values.items()})
    assert clients_env.warnings == []


def test_pi_warns_of_a_header_it_would_run(clients_env):
    pi.render(fleet(gateway__headers={"X-Note": "!important", "X-Team": "core"}), KEY,
              clients_env)
    assert clients_env.warnings == ["pi: gateway.headers X-Note starts with '!', which Pi "
                                    "runs as a shell command instead of sending it"]


def test_pi_dir_moves_with_pi_coding_agent_dir(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"PI_CODING_AGENT_DIR": str(tmp_path / "pi")})
    models, settings = pi.render(fleet(), KEY, env)
    assert models.path == tmp_path / "pi" / "models.json"
    assert settings.path == tmp_path / "pi" / "settings.json"
    assert pi.locations(env) == ([tmp_path / "pi"], [])


def test_pi_has_no_mcp(taosync, home, fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace(
        "kilo: {model: balanced, small_model: fast}", "kilo: {model: balanced, small_model: "
        "fast}\n  pi: {model: balanced}"))
    r = taosync("plan")  # an info line on stderr, no -v needed (docs/secrets.md)
    assert "info: aider, llm, shell-gpt, pi have no MCP support" in r.err, r.both
    assert taosync("apply", "--no-verify").rc == 0
    assert "mcp" not in (home / ".pi" / "agent" / "models.json").read_text().lower()
    assert pi.MCP is False


# -- the user's own providers and settings


USER_MODELS = """{
  // my local models
  "providers": {
    "ollama": {
      "baseUrl": "http://localhost:11434/v1",
      "api": "openai-completions",
      "apiKey": "ollama",
      "models": [{"id": "llama3.1:8b"}],
    },
  },
}
"""
def pi_json(text: str):
    """models.json read as Pi 0.73.1 reads it (``stripJsonComments``: ``//`` comments and
    trailing commas dropped outside strings, then JSON.parse)."""
    string = r'"(?:\\.|[^"\\])*"'
    text = re.sub(string + r"|//[^\n]*", lambda m: m[0] if m[0][0] == '"' else "", text)
    text = re.sub(string + r"|,(\s*[}\]])", lambda m: m[0] if m[1] is None else m[1], text)
    return json.loads(text)


USER_SETTINGS = '{\n    "theme": "dark",\n    "defaultThinkingLevel": "low"\n}\n'


def test_pi_keeps_the_users_providers_and_settings(taosync, home, fleet_file):
    agent = home / ".pi" / "agent"
    write(agent / "models.json", USER_MODELS)
    write(agent / "settings.json", USER_SETTINGS)
    _applied(taosync, fleet_file, {"model": "fast"})
    data = pi_json((agent / "models.json").read_text())
    assert data["providers"]["ollama"] == {
        "baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
        "apiKey": "ollama", "models": [{"id": "llama3.1:8b"}]}
    assert json.loads((agent / "settings.json").read_text()) == {
        "theme": "dark", "defaultThinkingLevel": "low", "defaultProvider": "taotoken",
        "defaultModel": MINI}
    _applied(taosync, fleet_file, {"enabled": False})
    assert (agent / "models.json").read_text() == USER_MODELS
    assert (agent / "settings.json").read_text() == USER_SETTINGS


def test_pi_a_field_the_user_adds_to_a_listed_model_stays(taosync, home, fleet_file):
    _applied(taosync, fleet_file, {"model": "fast"})
    models = home / ".pi" / "agent" / "models.json"
    data = json.loads(models.read_text())
    listed = data["providers"]["taotoken"]["models"]
    next(m for m in listed if m["id"] == MINI)["reasoning"] = True
    models.write_text(json.dumps(data, indent=2))
    assert taosync("plan", "--check").rc == 0
    _applied(taosync, fleet_file, {"model": "balanced"})
    assert {"id": MINI, "name": MINI, "reasoning": True} in \
        json.loads(models.read_text())["providers"]["taotoken"]["models"]


# -- verify: what the files make Pi send


def _applied(taosync, fleet_file, entry: dict, secrets: str = "inline"):
    """The example fleet with Pi in Kilo's place (``entry``), applied; as a Fleet."""
    text = fleet_file.read_text()
    start = text.index("  kilo: ") if "  kilo: " in text else text.index("  pi: ")
    end = text.index("\n", start)
    fleet_file.write_text((text[:start] + f"  pi: {json.dumps(entry)}" + text[end:]).replace(
        "secrets: inline", f"secrets: {secrets}"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    return fleet(clients__pi=entry, secrets=secrets)


def test_pi_on_disk_follows_the_files_api(taosync, home, fleet_file):
    f = _applied(taosync, fleet_file, {"model": "fast"})
    env = ClientEnv(home=home, environ={})
    disk = pi.on_disk(f, Secret(TEST_KEY), env)
    assert disk.problems == [] and disk.drift == []
    (probe,) = disk.probes
    assert (probe.model, probe.url, probe.auth, probe.protocol, probe.secret.reveal()) == (
        MINI, V1 + "/chat/completions", "bearer", "openai-chat", TEST_KEY)
    models = home / ".pi" / "agent" / "models.json"
    data = json.loads(models.read_text())
    data["providers"]["taotoken"].update(api="anthropic-messages", baseUrl=ROOT)
    models.write_text(json.dumps(data))
    disk = pi.on_disk(f, Secret(TEST_KEY), env)
    (probe,) = disk.probes
    assert (probe.url, probe.auth, probe.protocol) == (ROOT + "/v1/messages", "x-api-key",
                                                       "anthropic-messages")
    assert any("providers.taotoken.api" in line for line in disk.drift), disk.drift
    data["providers"]["taotoken"]["api"] = "google-generative-ai"
    models.write_text(json.dumps(data))
    disk = pi.on_disk(f, Secret(TEST_KEY), env)
    assert disk.probes == [] and "api is none of" in disk.problems[0]


def test_pi_on_disk_resolves_the_key_as_pi_does(taosync, home, fleet_file):
    f = _applied(taosync, fleet_file, {"model": "fast"}, secrets="reference")
    models = home / ".pi" / "agent" / "models.json"
    assert json.loads(models.read_text())["providers"]["taotoken"]["apiKey"] == \
        "!printenv TAOTOKEN_API_KEY"
    disk = pi.on_disk(f, Secret(TEST_KEY), ClientEnv(home=home,
                                                     environ={"TAOTOKEN_API_KEY": TEST_KEY}))
    assert disk.problems == [] and disk.probes[0].secret.reveal() == TEST_KEY
    unset = pi.on_disk(f, Secret(TEST_KEY), ClientEnv(home=home, environ={}))
    assert unset.probes == [] and unset.problems == [
        "~/.pi/agent/models.json providers.taotoken.apiKey: TAOTOKEN_API_KEY is not set, "
        "so Pi has no key"]
    # a bare name is read from the environment too (and sent as itself when unset)
    data = json.loads(models.read_text())
    data["providers"]["taotoken"]["apiKey"] = "GW_KEY"
    models.write_text(json.dumps(data))
    disk = pi.on_disk(f, Secret(TEST_KEY), ClientEnv(home=home, environ={"GW_KEY": KEY_ONE}))
    assert disk.probes[0].secret.reveal() == KEY_ONE
    assert "GW_KEY is not set" in pi.on_disk(f, Secret(TEST_KEY),
                                             ClientEnv(home=home, environ={})).problems[0]
    data["providers"]["taotoken"]["apiKey"] = "!echo " + KEY_ONE
    models.write_text(json.dumps(data))
    disk = pi.on_disk(f, Secret(TEST_KEY), ClientEnv(home=home, environ={"PATH": "/usr/bin:/bin"}))
    assert disk.probes[0].secret.reveal() == KEY_ONE


def test_pi_auth_json_key_beats_models_json_and_is_named(taosync, home, fleet_file):
    f = _applied(taosync, fleet_file, {"model": "fast"})
    write(home / ".pi" / "agent" / "auth.json",
          json.dumps({"taotoken": {"type": "api_key", "key": KEY_ONE}}))
    disk = pi.on_disk(f, Secret(TEST_KEY), ClientEnv(home=home, environ={}))
    (probe,) = disk.probes
    assert probe.secret.reveal() == KEY_ONE
    assert "~/.pi/agent/auth.json taotoken.key" in [o.where for o in probe.origins]
    assert disk.drift == ["~/.pi/agent/auth.json taotoken.key overrides models.json's apiKey: "
                          "Pi sends that key, not the fleet's; remove it (pi's /logout) so "
                          "the fleet's key is used"]
    # verify names the file and fails on the key Pi really sends, never printing it
    r = taosync("verify", "--stub", "--only", "pi")
    assert r.rc == 1, r.both
    assert "auth.json taotoken.key" in r.both and KEY_ONE not in r.both and \
        TEST_KEY not in r.both
    # an OAuth entry (or another provider's key) does not override it
    write(home / ".pi" / "agent" / "auth.json",
          json.dumps({"taotoken": {"type": "oauth"}, "openai": {"type": "api_key",
                                                               "key": KEY_ONE}}))
    disk = pi.on_disk(f, Secret(TEST_KEY), ClientEnv(home=home, environ={}))
    assert disk.drift == [] and disk.probes[0].secret.reveal() == TEST_KEY
    assert taosync("verify", "--stub", "--only", "pi").rc == 0


# -- import


def test_pi_import_of_a_hand_written_provider(run, home):
    write(home / ".pi" / "agent" / "models.json", json.dumps({"providers": {"gw": {
        "baseUrl": "https://gw.example.com/api", "api": "anthropic-messages",
        "apiKey": "!printenv GW_KEY", "headers": {"X-Team": "core"},
        "models": [{"id": SONNET}, {"id": MINI}]}}}))
    write(home / ".pi" / "agent" / "settings.json",
          json.dumps({"defaultProvider": "gw", "defaultModel": SONNET}))
    r, data = imported(run, "--from", "pi")
    assert r.rc == 0, r.both
    proposal = data["fleet"]
    assert proposal["gateway"]["base_url"] == "https://gw.example.com/api"
    assert proposal["gateway"]["key"] == "${env:GW_KEY}"
    entry = proposal["clients"]["pi"]
    assert entry["protocol"] == "anthropic-messages" and entry["secrets"] == "reference"
    assert proposal["routes"][entry["model"]] == SONNET


def test_pi_import_reads_the_auth_json_key_and_another_provider(run, home):
    agent = home / ".pi" / "agent"
    write(agent / "models.json", json.dumps({"providers": {"taotoken": {
        "baseUrl": V1, "api": "openai-completions", "apiKey": "placeholder",
        "models": [{"id": SONNET}]}}}))
    write(agent / "settings.json", json.dumps({"defaultProvider": "taotoken",
                                               "defaultModel": SONNET}))
    write(agent / "auth.json", json.dumps({"taotoken": {"type": "api_key", "key": KEY_ONE}}))
    obs = pi.observe(ClientEnv(home=home, environ={}))
    (seen,) = obs.keys
    assert seen.value.reveal() == KEY_ONE and seen.file == agent / "auth.json"
    assert any("overrides models.json's apiKey" in n for n in obs.notes)
    write(agent / "settings.json", json.dumps({"defaultProvider": "anthropic",
                                               "defaultModel": "claude-opus-4"}))
    obs = pi.observe(ClientEnv(home=home, environ={}))
    assert obs.provider is not None and "'anthropic'" in obs.provider.value


# -- the real pi


def _run_pi(s, exe: str, env: dict | None = None):
    work = s.home / "work"
    work.mkdir(exist_ok=True)
    return s.run([exe, "-p", "Reply with OK."], cwd=work, env={"PI_OFFLINE": "1", **(env or {})})


def _answered(proc, stub, path: str, model: str) -> None:
    posts = stub.posts(path)
    assert [p.body.get("model") for p in posts] == [model], (proc.stdout, proc.stderr)
    assert posts[0].auth == "ok", posts[0]
    assert f"{model} answered through the taosync stand-in gateway" in proc.stdout, \
        proc.stdout + proc.stderr
    assert TEST_KEY not in proc.stdout + proc.stderr


def test_real_pi_inline_and_by_reference(taosync, home, fleet_file):
    exe = binary_or_skip("TAOSYNC_TEST_PI_BIN", "pi")
    with stand_in(taosync, fleet_file, home) as s:
        s.apply("pi", {"model": "fast"}, gateway={"headers": {"X-Team": "core"}})
        proc = _run_pi(s, exe)
        _answered(proc, s.stub, "/v1/chat/completions", MINI)
        assert s.stub.posts()[0].headers.get("x-team") == "core"
        assert taosync("plan", "--check").rc == 0  # pi rewrote neither file

        # by reference: ${env:} as !printenv, Anthropic's protocol at the root
        s.stub.requests.clear()
        s.apply("pi", {"model": "balanced", "protocol": "anthropic-messages"},
                secrets="reference")
        assert TEST_KEY not in (home / ".pi" / "agent" / "models.json").read_text()
        proc = _run_pi(s, exe, {"TAOTOKEN_API_KEY": TEST_KEY})
        _answered(proc, s.stub, "/v1/messages", SONNET)
        # unset, Pi stops with an error and sends nothing (a bare name would be sent)
        s.stub.requests.clear()
        proc = _run_pi(s, exe)
        assert proc.returncode == 1 and "Failed to resolve API key" in proc.stderr, proc.stderr
        assert s.stub.posts() == []

        # by reference to a file: !cat '<path>', the Responses API
        key_file = home / "keys" / "gw key"
        write(key_file, TEST_KEY + "\n")
        s.apply("pi", {"model": "fast", "protocol": "openai-responses"}, secrets="reference",
                gateway={"key": "${file:~/keys/gw key}"})
        proc = _run_pi(s, exe)
        _answered(proc, s.stub, "/v1/responses", MINI)


def test_real_pi_sends_the_auth_json_key_that_verify_names(taosync, home, fleet_file):
    exe = binary_or_skip("TAOSYNC_TEST_PI_BIN", "pi")
    with stand_in(taosync, fleet_file, home) as s:
        s.apply("pi", {"model": "fast"})
        write(home / ".pi" / "agent" / "auth.json",
              json.dumps({"taotoken": {"type": "api_key", "key": KEY_ONE}}))
        proc = _run_pi(s, exe)
        assert proc.returncode == 1 and [p.auth for p in s.stub.posts()] == ["bad"]
        r = taosync("verify", "--only", "pi")
        assert r.rc == 1 and "auth.json taotoken.key" in r.both and KEY_ONE not in r.both


# -- the no-op path knows PI_CODING_AGENT_DIR


def test_moving_pi_coding_agent_dir_is_seen_from_a_shell(home, fleet_file):
    """apply from a shell (where the no-op fast path answers): a second run with the
    variable moved writes the new directory instead of saying "nothing to do"."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    fleet_file.write_text(fleet_file.read_text().replace(
        "kilo: {model: balanced, small_model: fast}", "pi: {model: fast}"))

    def apply(where: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(ROOT), PI_CODING_AGENT_DIR=str(home / where))
        return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                               str(fleet_file), "apply", "--no-verify"], capture_output=True,
                              text=True, env=env, timeout=120, cwd=ROOT)

    assert apply("pi-a").returncode == 0
    assert "nothing to do" in apply("pi-a").stdout
    moved = apply("pi-b")
    assert moved.returncode == 0 and "nothing to do" not in moved.stdout, moved.stdout
    assert json.loads((home / "pi-b" / "settings.json").read_text())["defaultModel"] == MINI
