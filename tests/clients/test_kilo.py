"""Kilo CLI (an opencode fork with its own file): the same checks as opencode, and a run
of the real ``kilo`` against the stand-in gateway (skipped when absent)."""

from __future__ import annotations

import pytest

import opencode_checks as checks
from real import binary
from contract import check_contract
from helpers import KEY, fleet
from taosync.clients import kilo

BIN = binary("TAOSYNC_TEST_KILO_BIN", "kilo")


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "kilo",
                   {"model": "balanced", "small_model": "fast"}, reference_off_disk=True)


def test_kilo_inline(clients_env, tmp_path):
    checks.check_inline(kilo, clients_env, tmp_path)


def test_kilo_writes_its_own_file_not_opencodes(clients_env, tmp_path):
    (patch,) = kilo.render(fleet(), KEY, clients_env)
    assert patch.path == tmp_path / ".config" / "kilo" / "kilo.json"
    assert patch.skeleton[("$schema",)] == "https://app.kilo.ai/config.json"
    assert not any(k[0] == "permission" for k in patch.values)  # Kilo's own


def test_kilo_options_windows_headers(clients_env):
    checks.check_options(kilo, clients_env)


def test_kilo_reference_env_and_file(clients_env, tmp_path):
    checks.check_reference_tokens(kilo, clients_env, tmp_path)


@pytest.mark.parametrize("ref", ["${shell:echo k}", "sk-literal-0123456789abcdef"])
def test_kilo_reference_falls_back_inline(clients_env, ref):
    checks.check_reference_fallback(kilo, clients_env, ref)


def test_kilo_mcp_shapes(clients_env):
    checks.check_mcp_shapes(kilo, clients_env)


def test_kilo_locations(tmp_path):
    checks.check_locations(kilo, tmp_path)


def test_kilo_keeps_the_users_jsonc(taosync, home, fleet_file):
    checks.check_user_file_kept(kilo, taosync, home, fleet_file)


def test_kilo_mcp_secrets_stay_references(taosync, home, fleet_file, monkeypatch):
    checks.check_reference_mcp_secret(kilo, taosync, home, fleet_file, monkeypatch)


def test_kilo_import_round_trip(run, home, tmp_path, monkeypatch):
    checks.check_import(kilo, run, home, tmp_path, monkeypatch)


def test_kilo_verify_probes_the_file(taosync, home, fleet_file):
    checks.check_verify_on_disk(kilo, taosync, home, fleet_file)


@pytest.mark.skipif(BIN is None, reason="kilo is not installed (TAOSYNC_TEST_KILO_BIN)")
def test_real_kilo_answers_through_the_stand_in(taosync, home, fleet_file):
    seen = checks.check_real_client(kilo, BIN, taosync, home, fleet_file, "reference")
    # Kilo 7.7.7 sends the answer only (no title request with small_model)
    assert [q.body["model"] for q in seen if q.method == "POST"] == [checks.SONNET]


def test_kilo_import_names_a_built_in_provider(run, home):
    checks.check_import_builtin_provider(kilo, run, home)


def test_kilo_doctor_shows_the_version(taosync, fleet_file, tmp_path, monkeypatch):
    checks.check_doctor_version(kilo, taosync, fleet_file, tmp_path, monkeypatch)


def test_kilo_provider_id_built_in_is_refused(taosync, fleet_file, home):
    checks.check_reserved_provider_id(kilo, taosync, fleet_file, home)


# -- the file Kilo reads last --------------------------------------------------------------

def test_an_opencode_json_in_kilos_directory_is_the_file_taosync_writes(taosync, home,
                                                                          fleet_file):
    """Kilo 7.7.7 reads ~/.config/kilo/opencode.json after kilo.json: a model there won over
    taosync's. Once the user has one, taosync owns its keys there and gives kilo.json back."""
    checks.write_fleet(fleet_file, kilo.ID, {"model": "balanced"})
    folder = home / ".config/kilo"
    assert taosync("apply", "--no-verify").rc == 0
    assert (folder / "kilo.json").is_file()
    assert taosync("status").rc == 0
    mine = folder / "opencode.json"
    mine.write_text('{\n  // the user\'s own\n  "model": "taotoken/gpt-4o-mini",\n'
                    '  "theme": "tokyonight"\n}\n')
    # Kilo would now run gpt-4o-mini: status must not call it in sync
    pending = taosync("status")
    assert pending.rc != 0 and "nothing to do" not in pending.out, pending.both
    assert taosync("apply", "--no-verify").rc == 0
    data = checks.read_jsonc(mine)
    assert data["model"] == f"taotoken/{checks.SONNET}" and data["theme"] == "tokyonight"
    assert "// the user's own" in mine.read_text()
    assert not (folder / "kilo.json").exists()  # taosync had created it: given back whole
    assert taosync("status").rc == 0
    # taken away again, the user's model comes back
    checks.write_fleet(fleet_file, "opencode", {"model": "balanced"})
    assert taosync("apply", "--no-verify").rc == 0
    assert checks.read_jsonc(mine)["model"] == "taotoken/gpt-4o-mini"


@pytest.mark.skipif(BIN is None, reason="kilo is not installed (TAOSYNC_TEST_KILO_BIN)")
def test_real_kilo_runs_taosyncs_model_when_the_user_has_an_opencode_json(taosync, home,
                                                                           fleet_file):
    folder = home / ".config/kilo"
    folder.mkdir(parents=True)
    (folder / "opencode.jsonc").write_text('{"model": "taotoken/gpt-4o-mini"} // mine\n')
    seen = checks.check_real_client(kilo, BIN, taosync, home, fleet_file, "reference",
                                    config=folder / "opencode.jsonc")
    assert [q.body["model"] for q in seen if q.method == "POST"] == [checks.SONNET]
    assert not (folder / "kilo.json").exists()
