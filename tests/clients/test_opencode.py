"""opencode: exact patches and probes, its JSONC file kept, import, verify, the contract,
and a run of the real ``opencode`` against the stand-in gateway (skipped when absent)."""

from __future__ import annotations

import pytest

import opencode_checks as checks
from real import binary
from contract import check_contract
from taosync.clients import opencode

BIN = binary("TAOSYNC_TEST_OPENCODE_BIN", "opencode")


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "opencode",
                   {"model": "balanced", "small_model": "fast"}, reference_off_disk=True)


def test_opencode_inline(clients_env, tmp_path):
    checks.check_inline(opencode, clients_env, tmp_path)


def test_opencode_options_windows_headers(clients_env):
    checks.check_options(opencode, clients_env)


def test_opencode_reference_env_and_file(clients_env, tmp_path):
    checks.check_reference_tokens(opencode, clients_env, tmp_path)


@pytest.mark.parametrize("ref", ["${cmd:pass show tao}", "sk-literal-0123456789abcdef"])
def test_opencode_reference_falls_back_inline(clients_env, ref):
    checks.check_reference_fallback(opencode, clients_env, ref)


def test_opencode_mcp_shapes(clients_env):
    checks.check_mcp_shapes(opencode, clients_env)


def test_opencode_locations(tmp_path):
    checks.check_locations(opencode, tmp_path)


def test_opencode_keeps_the_users_jsonc(taosync, home, fleet_file):
    checks.check_user_file_kept(opencode, taosync, home, fleet_file)


def test_opencode_mcp_secrets_stay_references(taosync, home, fleet_file, monkeypatch):
    checks.check_reference_mcp_secret(opencode, taosync, home, fleet_file, monkeypatch)


def test_opencode_import_round_trip(run, home, tmp_path, monkeypatch):
    checks.check_import(opencode, run, home, tmp_path, monkeypatch)


def test_opencode_import_names_a_built_in_provider(run, home):
    checks.check_import_builtin_provider(opencode, run, home)


def test_opencode_verify_probes_the_file(taosync, home, fleet_file):
    checks.check_verify_on_disk(opencode, taosync, home, fleet_file)


@pytest.mark.skipif(BIN is None, reason="opencode is not installed (TAOSYNC_TEST_OPENCODE_BIN)")
@pytest.mark.parametrize("secrets", ["inline", "file"])
def test_real_opencode_answers_through_the_stand_in(taosync, home, fleet_file, secrets):
    seen = checks.check_real_client(opencode, BIN, taosync, home, fleet_file, secrets)
    # opencode titles the session with small_model while it answers with model
    assert sorted(q.body["model"] for q in seen if q.method == "POST") == sorted([
        checks.MINI, checks.SONNET])


def test_opencode_doctor_shows_the_version(taosync, fleet_file, tmp_path, monkeypatch):
    checks.check_doctor_version(opencode, taosync, fleet_file, tmp_path, monkeypatch)


def test_opencode_provider_id_built_in_is_refused(taosync, fleet_file, home):
    checks.check_reserved_provider_id(opencode, taosync, fleet_file, home)
