"""The render cache behind the no-op fast path: reused only while every input holds."""

from __future__ import annotations

import json

from conftest import TEST_KEY


def prepare(home, fleet_file):
    from taosync import pipeline
    from taosync.settings import Settings

    return pipeline.prepare(Settings(config=fleet_file, home=home))


def test_apply_stores_a_render_without_the_key(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    raw = (home / ".local/state/taosync/state.json").read_text()
    assert TEST_KEY not in raw
    entry = json.loads(raw)["inputs"]
    assert entry["patches"] and entry["key_ref"] == ["env", "TAOTOKEN_API_KEY"]
    ctx = prepare(home, fleet_file)
    assert ctx.loaded is None, "an unchanged fleet should come from the cache"
    assert ctx.key.reveal() == TEST_KEY
    # the cached render plans exactly like a fresh one
    from taosync import pipeline
    from taosync.engine.state import StateStore

    state = StateStore(home / ".local/state/taosync").load()
    assert not pipeline.make_plan(ctx, state).changed


def test_a_fleet_edit_misses_the_cache(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text() + "\n# a comment\n")
    assert prepare(home, fleet_file).loaded is not None


def test_a_new_key_misses_the_cache_and_is_pending(taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.setenv("TAOTOKEN_API_KEY", "sk-rotated-9999999999999999")
    r = taosync("plan", "--check")
    assert r.rc == 1
    assert "sk-rotated-9999999999999999" not in r.both
    assert taosync("apply", "--no-verify").rc == 0
    settings = json.loads((home / ".claude/settings.json").read_text())
    assert settings["env"]["ANTHROPIC_AUTH_TOKEN"] == "sk-rotated-9999999999999999"


def test_an_unset_key_is_reported_by_the_full_load(taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    r = taosync("plan")
    assert r.rc == 2 and "TAOTOKEN_API_KEY is not set" in r.err and "fleet.yaml:" in r.err


def test_a_location_variable_misses_the_cache(taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.setenv("CODEX_HOME", str(home / "codex-elsewhere"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert (home / "codex-elsewhere/config.toml").exists()


def test_an_editor_installed_later_misses_the_cache(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    storage = home / ".config/Code/User/globalStorage"
    storage.mkdir(parents=True)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    mcp = storage / "saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
    assert json.loads(mcp.read_text())["mcpServers"]["taotoken-router"]["type"] == "stdio"


def test_a_file_changed_on_disk_is_parsed_again(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text() + "\n[tui]\nnotifications = true\n")
    assert taosync("plan", "--check").rc == 0  # other keys: nothing of ours moved
    cfg.write_text(cfg.read_text().replace('model = "gpt-4o-mini"', 'model = "o3"'))
    assert taosync("plan", "--check").rc == 1
