"""llm: the whole catalogue, keys.json, default_model.txt; import; the real llm 0.36."""

from __future__ import annotations

from conftest import TEST_KEY
from contract import COMMENT, USER_VALUE, check_contract
from helpers import KEY, KEY_ONE, LLAMA, MINI, R1, SONNET, V1, fleet, round_trip, write
from real import assert_answered, binary_or_skip, stand_in
from taosync.clients import llm
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret
from taosync.formats.base import Match

UA = {"User-Agent": "OpenAI/Python 3.57.0"}
CATALOGUE = (MINI, SONNET, R1, LLAMA)


def test_contract(taosync, home, fleet_file):
    seed = (f"# {COMMENT}\n- model_id: {USER_VALUE}\n  model_name: {USER_VALUE}\n", True)
    check_contract(taosync, home, fleet_file, "llm", {"model": "fast"},
                   reference_off_disk=False, seeds={"extra-openai-models.yaml": seed})


# -- render and probes

def E(model):
    return (Match("model_id", model),)


def test_llm_registers_the_whole_catalogue(clients_env, tmp_path):
    models, keys, default = llm.render(fleet(clients__llm={"model": "deep"}), KEY, clients_env)
    home = tmp_path / ".config" / "io.datasette.llm"
    assert (models.path, models.format) == (home / "extra-openai-models.yaml", "yaml")
    assert models.values == {
        E(m) + (k,): v for m in CATALOGUE
        for k, v in (("model_name", m), ("api_base", V1), ("api_key_name", "taotoken"))}
    assert (keys.path, keys.format, keys.values, keys.secret) == (
        home / "keys.json", "json", {("taotoken",): KEY}, True)
    assert (default.path, default.format, default.values) == (
        home / "default_model.txt", "text", {("text",): R1})
    assert clients_env.warnings == []


def test_llm_headers_and_user_path(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"LLM_USER_PATH": str(tmp_path / "l")},
                    sandboxed=True)
    models, keys, default = llm.render(fleet(gateway__headers={"X-Team": "core"}), KEY, env)
    assert {p.path.parent for p in (models, keys, default)} == {tmp_path / "l"}
    assert models.values[E(MINI) + ("headers",)] == {"X-Team": Secret("core")}
    assert default.values == {("text",): MINI}  # the example fleet's llm: {model: fast}
    mac = ClientEnv(home=tmp_path, environ={}, platform="darwin")
    assert llm.render(fleet(), KEY, mac)[0].path.parent == \
        tmp_path / "Library" / "Application Support" / "io.datasette.llm"


def test_llm_reference_writes_the_key_with_a_warning(clients_env, tmp_path):
    keys = llm.render(fleet(secrets="reference"), KEY, clients_env)[1]
    assert keys.values == {("taotoken",): KEY}
    assert clients_env.warnings == [
        "llm: secrets: reference cannot keep the key off disk (the client reads it from no "
        "variable or helper); the key from ${env:TAOTOKEN_API_KEY} will be written inline "
        "(mode 0600)"]


def test_llm_probes(clients_env):
    f = fleet(clients__llm={"model": "fast"}, gateway__headers={"X-Team": "core"})
    assert llm.probes(f, KEY, clients_env) == [
        ProbeSpec("llm", "fast", MINI, "openai-chat", V1, V1 + "/chat/completions", "bearer",
                  headers=tuple({**UA, "X-Team": Secret("core")}.items()))]


# -- on disk, import

def test_llm_on_disk_follows_the_default_model(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    env = ClientEnv(home=home, environ={})
    disk = llm.on_disk(fleet(), Secret(TEST_KEY), env)
    assert disk.problems == [] and disk.drift == []
    assert [(p.model, p.url, p.secret.reveal()) for p in disk.probes] == [
        (MINI, V1 + "/chat/completions", TEST_KEY)]
    (home / ".config/io.datasette.llm/default_model.txt").write_text("gpt-4o\n")
    disk = llm.on_disk(fleet(), Secret(TEST_KEY), env)
    assert disk.probes == [] and "gpt-4o" in disk.problems[0]
    assert any("default_model.txt differs" in d for d in disk.drift)


def test_llm_import_round_trip(run, home, tmp_path, monkeypatch):
    d = home / ".config" / "io.datasette.llm"
    write(d / "extra-openai-models.yaml", f"""# gateway models
- model_id: {MINI}
  model_name: {MINI}
  api_base: https://gw.example.com/api/v1
  api_key_name: gw
- model_id: local
  model_name: llama3
""")
    write(d / "keys.json", f'{{"gw": "{KEY_ONE}", "openai": "sk-other"}}')
    write(d / "default_model.txt", f"{MINI}\n")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["fleet"]["gateway"]["base_url"] == "https://gw.example.com/api"
    assert data["fleet"]["routes"][data["fleet"]["clients"]["llm"]["model"]] == MINI


# -- the real llm

def test_real_llm_default_and_every_catalogue_model(taosync, home, fleet_file):
    exe = binary_or_skip("TAOSYNC_TEST_LLM_BIN", "llm")
    with stand_in(taosync, fleet_file, home) as s:
        s.apply("llm", {"model": "fast"})
        proc = s.run([exe, "--no-log", "Reply with OK."])
        assert_answered(proc, s.stub, MINI)
        s.stub.requests.clear()
        proc = s.run([exe, "--no-log", "-m", R1, "Reply with OK."])
        assert_answered(proc, s.stub, R1)
