"""aider: exact patches and probes, import, the contract, and the real aider 0.86.2."""

from __future__ import annotations

import json

from conftest import TEST_KEY
from contract import check_contract
from helpers import KEY, KEY_ONE, MINI, R1, SONNET, V1, fleet, imported, round_trip, write
from real import assert_answered, binary_or_skip, stand_in
from taosync.clients import aider
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret
from taosync.formats.base import Match
from ruamel.yaml import YAML

UA = (("User-Agent", "OpenAI/Python 2.20.0"),)


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "aider",
                   {"model": "balanced", "weak_model": "fast"}, reference_off_disk=True)


# -- render and probes

def test_aider_inline(clients_env, tmp_path):
    f = fleet(clients__aider={"model": "balanced", "weak_model": "fast", "editor_model": "deep"})
    (conf,) = aider.render(f, KEY, clients_env)
    assert conf.path == tmp_path / ".aider.conf.yml" and conf.format == "yaml"
    assert conf.values == {
        ("model",): "openai/" + SONNET, ("weak-model",): "openai/" + MINI,
        ("editor-model",): "openai/" + R1, ("openai-api-base",): V1,
        ("openai-api-key",): KEY,
    }
    assert clients_env.warnings == []


def test_aider_writes_no_preferences_and_no_unset_slots(clients_env):
    (conf,) = aider.render(fleet(clients__aider={}), KEY, clients_env)
    assert set(conf.values) == {("model",), ("openai-api-base",), ("openai-api-key",)}
    assert conf.values[("model",)] == "openai/" + SONNET  # default_route


def test_aider_reference_reads_openai_api_key(clients_env):
    f = fleet(secrets="reference", gateway__key="${env:OPENAI_API_KEY}")
    (conf,) = aider.render(f, KEY, clients_env)
    assert ("openai-api-key",) not in conf.values and not conf.secret
    assert clients_env.warnings == []
    other = ClientEnv(home=clients_env.home, environ={})
    f = fleet(secrets="reference")
    aider.render(f, KEY, other)
    assert other.warnings == []  # what to export is said once, for every client
    assert aider.CLIENT.key_variables(f, other) == {"OPENAI_API_KEY": True}


def test_aider_reference_to_a_file_key_goes_inline_with_a_warning(clients_env):
    f = fleet(secrets="reference", gateway__key="${file:~/key}")
    (conf,) = aider.render(f, KEY, clients_env)
    assert conf.values[("openai-api-key",)] == KEY
    assert "the key will be written inline into ~/.aider.conf.yml" in clients_env.warnings[0]


def test_aider_sends_headers_through_its_model_settings(clients_env):
    """gateway.headers: one .aider.model.settings.yml entry per catalogue model, named as
    aider is given the model (openai/<id>), owning extra_params.extra_headers only."""
    f = fleet(gateway__headers={"X-Team": "core"})
    conf, settings = aider.render(f, KEY, clients_env)
    assert clients_env.warnings == []
    assert settings.path == clients_env.home / ".aider.model.settings.yml"
    assert settings.format == "yaml"
    assert {k: {n: v.reveal() for n, v in h.items()} for k, h in settings.values.items()} == {
        (Match("name", f"openai/{m}"), "extra_params", "extra_headers"): {"X-Team": "core"}
        for m in (MINI, SONNET, R1, "intel/llama-7b")}
    assert [p.path.name for p in aider.render(fleet(), KEY, clients_env)] == [".aider.conf.yml"]
    (probe, *_) = aider.probes(f, KEY, clients_env)
    assert dict(probe.headers)["X-Team"].reveal() == "core"


def test_aider_model_settings_keep_the_users_entries(taosync, home, fleet_file):
    """The user's own entries, and their own fields of taosync's, stay; verify reads the
    headers back from the entry of the model aider uses."""
    write(home / ".aider.model.settings.yml",
          "# mine\n- name: openai/my-local\n  edit_format: diff\n"
          f"- name: openai/{SONNET}\n  extra_params:\n    top_p: 0.5\n")
    fleet_file.write_text(fleet_file.read_text().replace(
        "gateway:\n", "gateway:\n  headers: {X-Team: core}\n"))
    assert taosync("apply", "--no-verify").rc == 0
    text = (home / ".aider.model.settings.yml").read_text()
    assert (home / ".aider.model.settings.yml").stat().st_mode & 0o777 == 0o600  # a header
    assert text.startswith("# mine\n- name: openai/my-local\n  edit_format: diff\n")
    data = YAML(typ="safe").load(text)
    by_name = {e["name"]: e for e in data}
    assert by_name[f"openai/{SONNET}"]["extra_params"] == {"top_p": 0.5,
                                                           "extra_headers": {"X-Team": "core"}}
    assert by_name["openai/my-local"] == {"name": "openai/my-local", "edit_format": "diff"}
    obs = aider.observe(ClientEnv(home=home, environ={}))
    assert obs.headers[0].value == {"X-Team": "core"}
    assert taosync("plan", "--check").rc == 0


def test_aider_probes(clients_env):
    f = fleet(clients__aider={"model": "balanced", "weak_model": "fast",
                              "editor_model": "balanced"})
    assert aider.probes(f, KEY, clients_env) == [
        ProbeSpec("aider", route, model, "openai-chat", V1, V1 + "/chat/completions",
                  "bearer", headers=UA)
        for route, model in (("balanced", SONNET), ("fast", MINI))]


# -- what is on disk, and import

def test_aider_on_disk_reads_the_file_and_the_environment(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    f, key = fleet(), Secret(TEST_KEY)
    env = ClientEnv(home=home, environ={})
    disk = aider.on_disk(f, key, env)
    assert disk.problems == [] and disk.drift == []
    assert [(p.model, p.url, p.secret.reveal()) for p in disk.probes] == [
        (SONNET, V1 + "/chat/completions", TEST_KEY), (MINI, V1 + "/chat/completions",
                                                       TEST_KEY)]
    write(home / ".aider.conf.yml", f"model: openai/{SONNET}\nopenai-api-base: {V1}\n")
    disk = aider.on_disk(f, key, ClientEnv(home=home, environ={"OPENAI_API_KEY": KEY_ONE}))
    assert disk.probes[0].secret.reveal() == KEY_ONE
    disk = aider.on_disk(f, key, ClientEnv(home=home, environ={}))
    assert disk.probes == [] and "OPENAI_API_KEY" in disk.problems[0]


def test_aider_import_round_trip(run, home, tmp_path, monkeypatch):
    write(home / ".aider.conf.yml", f"""# mine
dark-mode: true
model: openai/{SONNET}
weak-model: openai/{MINI}
openai-api-base: https://gw.example.com/api/v1
openai-api-key: {KEY_ONE}
""")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["fleet"]["gateway"]["base_url"] == "https://gw.example.com/api"
    entry = data["fleet"]["clients"]["aider"]
    assert data["fleet"]["routes"][entry["model"]] == SONNET
    assert data["fleet"]["routes"][entry["weak_model"]] == MINI


def test_aider_import_reference_and_other_provider(run, home):
    write(home / ".aider.conf.yml", f"model: openai/{SONNET}\nopenai-api-base: {V1}\n")
    r, data = imported(run, "--from", "aider")
    assert r.rc == 0
    assert data["fleet"]["clients"]["aider"]["secrets"] == "reference"
    assert data["fleet"]["gateway"]["key"] == "${env:OPENAI_API_KEY}"
    write(home / ".aider.conf.yml", "model: sonnet\n")
    obs = aider.observe(ClientEnv(home=home, environ={}))
    assert obs.provider is not None and "sonnet" in obs.provider.value


# -- the real aider

AIDER_QUIET = ["--no-check-update", "--no-show-model-warnings", "--analytics-disable",
               "--no-git", "--yes-always", "--no-pretty", "--no-stream"]


def _offline(home) -> dict:
    """The user's side of running aider offline (clients.md §9): LiteLLM's local price
    map and model metadata, so aider looks nothing up on the network."""
    write(home / ".aider.model.metadata.json", json.dumps({
        f"openai/{m}": {"max_input_tokens": 8192, "max_output_tokens": 1024,
                        "input_cost_per_token": 0, "output_cost_per_token": 0,
                        "litellm_provider": "openai", "mode": "chat"} for m in (SONNET, MINI)}))
    return {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_real_aider_sends_the_gateway_headers(taosync, home, fleet_file):
    """gateway.headers reach the stand-in from aider's own model settings file."""
    exe = binary_or_skip("TAOSYNC_TEST_AIDER_BIN", "aider")
    work = home / "work"
    work.mkdir()
    with stand_in(taosync, fleet_file, home) as s:
        s.apply("aider", {"model": "balanced", "weak_model": "fast"},
                gateway={"headers": {"X-Team": "core", "Helicone-Auth": "Bearer hh-0123456789"}})
        proc = s.run([exe, *AIDER_QUIET, "--message", "Reply with OK."], cwd=work,
                     env=_offline(home))
        assert_answered(proc, s.stub, SONNET)
        (post,) = s.stub.posts("/v1/chat/completions")
        sent = {name.lower(): value for name, value in post.headers.items()}
        assert (sent.get("x-team"), sent.get("helicone-auth")) == ("core", "Bearer hh-0123456789")


def test_real_aider_inline_and_reference(taosync, home, fleet_file):
    exe = binary_or_skip("TAOSYNC_TEST_AIDER_BIN", "aider")
    work = home / "work"
    work.mkdir()
    with stand_in(taosync, fleet_file, home) as s:
        s.apply("aider", {"model": "balanced", "weak_model": "fast"})
        env = _offline(home)
        proc = s.run([exe, *AIDER_QUIET, "--message", "Reply with OK."], cwd=work, env=env)
        assert_answered(proc, s.stub, SONNET)
        s.stub.requests.clear()
        s.apply("aider", {"model": "fast"}, secrets="reference")
        assert TEST_KEY not in (home / ".aider.conf.yml").read_text()
        proc = s.run([exe, *AIDER_QUIET, "--message", "Reply with OK."], cwd=work,
                     env={**env, "OPENAI_API_KEY": TEST_KEY})
        assert_answered(proc, s.stub, MINI)


# -- no MCP: said once, as information

def test_clients_without_mcp_are_named_once_as_info(taosync, fleet_file):
    r = taosync("plan")  # a note on stderr, shown without -v (README says plan says so)
    note = "info: aider, llm, shell-gpt have no MCP support; mcp_servers are not written for them"
    assert r.err.count(note) == 1 and "MCP" not in r.out, r.both
    assert "MCP" not in taosync("plan", "-q").both  # -q: only problems
    fleet_file.write_text(fleet_file.read_text().replace(
        "llm: {model: fast}", "llm: {model: fast, mcp: false}").replace(
        "shell-gpt: {model: fast}", "shell-gpt: {model: fast, enabled: false}"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0 and "info: aider has no MCP support; mcp_servers are not written for it" \
        in r.err, r.both
    assert "warning" not in r.err
    again = taosync("apply", "--no-verify")  # from the render cache: still said once
    assert again.err.count("info: aider has no MCP support") == 1, again.both
