"""Issue #29, Build 5: ``log`` says WHICH fleet keys each apply changed (``gateway.base_url``,
``routes.deep``, ``clients.codex.model``, ``mcp_servers.y (added)``, ``key rotated`` —
never a value) and keeps ``apply -m``'s note; text and JSON. The state compares keyed
hashes only: neither the key nor any fleet value is stored for it."""

from __future__ import annotations

import json

import pytest

from conftest import TEST_KEY

STATE = ".local/state/taosync/state.json"
OTHER_KEY = "sk-test-ROTATEDKEY-9876543210fedcba"


def records(taosync) -> list[dict]:
    r = taosync("log", "--json")
    assert r.rc == 0, r.both
    return json.loads(r.out)["records"]


def test_log_names_the_fleet_keys_an_apply_changed_and_its_message(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    text = fleet_file.read_text()
    text = text.replace("\n  base_url: https://taotoken.net/api ",
                        "\n  base_url: https://gw.example.net/api", 1)
    text = text.replace("deep: nvidia/deepseek-r1", "deep: intel/llama-7b")
    text = text.replace("codex: {model: fast,", "codex: {model: balanced,")
    text = text.replace("mcp_servers:", "mcp_servers:\n  files:\n    command: mcp-files\n", 1)
    fleet_file.write_text(text)
    r = taosync("apply", "--no-verify", "-m", "deep on llama; new gateway")
    assert r.rc == 0, r.both

    newest, first = records(taosync)
    assert first["changes"] is None and first["message"] is None  # nothing to compare with
    assert newest["message"] == "deep on llama; new gateway"
    assert newest["changes"] == ["gateway.base_url", "routes.deep", "clients.codex.model",
                                 "mcp_servers.files (added)"]
    shown = taosync("log")
    assert shown.rc == 0, shown.both
    assert ("fleet: gateway.base_url, routes.deep, clients.codex.model, "
            "mcp_servers.files (added)") in shown.out
    assert "note: deep on llama; new gateway" in shown.out
    assert shown.out.index("note: deep on llama") < shown.out.index("#1 ")  # under #2


def test_a_rotated_key_is_named_never_shown_and_never_stored(taosync, home, fleet_file,
                                                              monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.setenv("TAOTOKEN_API_KEY", OTHER_KEY)
    assert taosync("apply", "--no-verify").rc == 0
    assert records(taosync)[0]["changes"] == ["key rotated"]
    shown = taosync("log", "-v")
    assert "fleet: key rotated" in shown.out
    state = (home / STATE).read_text()
    for secret in (TEST_KEY, OTHER_KEY):
        assert secret not in shown.out + shown.err and secret not in state
    # the snapshot holds keyed hashes, not the fleet's values
    assert "gateway.base_url" in json.loads(state)["fleet"]
    assert "taotoken.net" not in json.dumps(json.loads(state)["fleet"])


def test_a_changed_key_reference_is_the_fleet_key(taosync, home, fleet_file, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.setenv("OTHER_VAR", TEST_KEY)  # another reference, the same key
    fleet_file.write_text(fleet_file.read_text().replace("${env:TAOTOKEN_API_KEY}",
                                                         "${env:OTHER_VAR}", 1))
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini",
                                                         "fast: intel/llama-7b", 1))
    assert taosync("apply", "--no-verify").rc == 0
    assert records(taosync)[0]["changes"] == ["gateway.key", "routes.fast"]


def test_an_apply_that_only_restores_hand_edits_changed_no_fleet_key(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    cfg = home / ".codex" / "config.toml"
    cfg.write_text(cfg.read_text().replace('model = "gpt-4o-mini"', 'model = "mine"'))
    r = taosync("apply", "--no-verify", "--force")  # the render is the cached one
    assert r.rc == 0, r.both
    assert records(taosync)[0]["changes"] == []
    assert "fleet: no key changed" in taosync("log").out


def test_a_removed_entry_is_named(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("  batch: intel/llama-7b\n", "")
                          .replace("profiles: [deep, batch]", "profiles: [deep]"))
    assert taosync("apply", "--no-verify").rc == 0
    assert records(taosync)[0]["changes"] == ["clients.codex.profiles",
                                              "routes.batch (removed)"]


@pytest.mark.parametrize("message", ["", "   ", "x" * 1001])
def test_a_bad_message_is_bad_input_and_nothing_is_written(taosync, home, message):
    r = taosync("apply", "--no-verify", "-m", message)
    assert r.rc == 2 and "-m/--message" in r.err
    assert not (home / ".codex").exists()


def test_a_dry_run_keeps_no_record_of_its_message(taosync, home):
    assert taosync("apply", "--dry-run", "-m", "just looking").rc == 0
    assert records(taosync) == []


def test_a_note_on_an_apply_with_nothing_to_do_is_said_to_be_dropped(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("apply", "--no-verify", "-m", "again")
    assert r.rc == 0 and "-m's note is not kept" in r.out
    assert [rec["message"] for rec in records(taosync)] == [None]
