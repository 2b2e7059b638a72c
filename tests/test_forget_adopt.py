"""``managed: false`` / ``taosync forget`` and ``taosync adopt`` on real files in a temp home."""

from __future__ import annotations

import json

from tests.conftest import snapshot


def client_files(home):
    """Every file under the home except taosync's own state."""
    return {k: v for k, v in snapshot(home).items() if not k.startswith(".local/state")}


def test_forget_then_apply_writes_nothing(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    cline = home / ".cline" / "data" / "globalState.json"
    before_state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert any("cline" in fs["clients"] for fs in before_state["files"].values())
    before = client_files(home)
    r = taosync("forget", "cline")
    assert r.rc == 0, r.both
    assert "managed: false" in r.out and "left exactly as they are" in r.out
    text = fleet_file.read_text()
    assert "cline: {model: balanced, managed: false}" in text
    assert "# a slot takes a route name or a model id" in text  # comments kept
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert not any("cline" in fs["clients"] for fs in state["files"].values())
    assert client_files(home) == before
    # the next apply (even with the fleet now routing elsewhere) leaves cline alone
    fleet_file.write_text(text.replace("cline: {model: balanced,", "cline: {model: fast,"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert client_files(home) == before
    assert "cline" not in taosync("plan").out


def test_forget_dry_run_changes_nothing(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_before, files_before = fleet_file.read_bytes(), snapshot(home)
    r = taosync("forget", "codex", "--dry-run")
    assert r.rc == 0, r.both
    assert "+  codex: {model: fast, profiles: [deep, batch], managed: false}" in r.out
    assert fleet_file.read_bytes() == fleet_before and snapshot(home) == files_before


def test_forget_unknown_client_is_bad_input(taosync, fleet_file):
    before = fleet_file.read_bytes()
    r = taosync("forget", "clin")
    assert r.rc == 2 and "did you mean cline" in r.err and "Traceback" not in r.both
    assert fleet_file.read_bytes() == before


def test_managed_false_by_hand_keeps_user_edits_and_files(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    cline = home / ".cline" / "data" / "globalState.json"
    cline_bytes = cline.read_bytes()
    fleet_file.write_text(fleet_file.read_text().replace(
        "cline: {model: balanced}", "cline: {model: balanced, managed: false}"))
    plan = taosync("plan")
    assert plan.rc == 0 and "no longer managed: left as it is" in plan.out, plan.both
    assert "~/.cline/data/globalState.json" in plan.out
    assert taosync("apply", "--no-verify").rc == 0
    assert cline.read_bytes() == cline_bytes


def test_enabled_false_still_gives_back_what_taosync_wrote(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace(
        "codex: {model: fast, profiles: [deep, batch]}",
        "codex: {model: fast, profiles: [deep, batch], enabled: false}"))
    assert taosync("apply", "--no-verify").rc == 0
    assert not (home / ".codex" / "config.toml").exists()


CLAUDE_MODEL = '"ANTHROPIC_MODEL": "claude-sonnet-4-20250514"'


def test_adopt_then_plan_has_nothing_to_change(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude/settings.json"
    settings.write_text(settings.read_text().replace(
        CLAUDE_MODEL, '"ANTHROPIC_MODEL": "my-own-model"'))
    codex = home / ".codex/config.toml"
    codex.write_text(codex.read_text().replace('model = "gpt-4o-mini"',
                                               'model = "claude-sonnet-4-20250514"'))
    assert taosync("plan", "--check").rc == 1
    files_before = client_files(home)
    r = taosync("adopt", "--yes")
    assert r.rc == 0, r.both
    assert "+  my-own-model: {}" in r.out  # the diff is shown
    text = fleet_file.read_text()
    assert "claude-code: {model: my-own-model, haiku: fast, opus: deep, sonnet: balanced}" in text
    assert "codex: {model: balanced, profiles: [deep, batch]}" in text
    assert "# the catalogue, ids as the gateway names them" in text  # comments kept
    assert client_files(home) == files_before  # adopt never writes a client file
    # the adopted clients are in step with fleet.yaml again
    r = taosync("plan", "--check", "--only", "claude-code", "--only", "codex")
    assert r.rc == 0 and "\nnothing to do: " in r.out, r.both
    assert len(r.out.splitlines()) == 2  # the home: header and the one line
    assert taosync("status", "--only", "claude-code", "--only", "codex").rc == 0
    # what is left is the new catalogue entry, for the clients that register every model
    js = json.loads(taosync("plan", "--json").out)
    assert {c for f in js["files"] if f["changes"] for c in f["clients"]} == {
        "mistral-vibe", "llm", "opencode", "kilo"}


def test_adopt_dry_run_and_one_client(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude/settings.json"
    settings.write_text(settings.read_text().replace(
        CLAUDE_MODEL, '"ANTHROPIC_MODEL": "gpt-4o-mini"'))
    before = fleet_file.read_bytes()
    r = taosync("adopt", "claude-code", "--dry-run")
    assert r.rc == 0 and "model: fast" in r.out and "dry run" in r.out, r.both
    assert fleet_file.read_bytes() == before
    r = taosync("adopt", "codex")
    assert r.rc == 0 and "nothing to adopt" in r.out
    assert fleet_file.read_bytes() == before


def test_adopt_lists_drift_it_cannot_express(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude/settings.json"
    settings.write_text(settings.read_text().replace(
        '"ANTHROPIC_BASE_URL": "https://taotoken.net/api"',
        '"ANTHROPIC_BASE_URL": "https://elsewhere.example/api"'))
    before = fleet_file.read_bytes()
    r = taosync("adopt", "--yes")
    assert r.rc == 0 and "nothing to adopt" in r.out
    assert "not adopted: ~/.claude/settings.json env.ANTHROPIC_BASE_URL" in r.err
    assert fleet_file.read_bytes() == before


def test_managed_false_survives_an_only_apply_and_the_render_cache(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace(
        "cline: {model: balanced}", "cline: {model: balanced, managed: false}"))
    before = client_files(home)
    assert taosync("apply", "--only", "codex", "--no-verify").rc == 0  # cline still in the state
    r = taosync("apply", "--no-verify")  # the render is cached now: cline must still be left
    assert r.rc == 0, r.both
    assert client_files(home) == before
    state = json.loads((home / ".local/state/taosync/state.json").read_text())
    assert not any("cline" in fs["clients"] for fs in state["files"].values())


def test_forget_and_adopt_json(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude/settings.json"
    settings.write_text(settings.read_text().replace(
        CLAUDE_MODEL, '"ANTHROPIC_MODEL": "gpt-4o-mini"'))
    r = taosync("adopt", "--json", "--yes")
    assert r.rc == 0, r.both
    data = json.loads(r.out)
    assert {"fleet_key": "clients.claude-code.model", "value": "fast",
            "from": "~/.claude/settings.json env.ANTHROPIC_MODEL"} in data["adopted"]
    r = taosync("forget", "continue", "--json")
    assert r.rc == 0, r.both
    data = json.loads(r.out)
    assert data["forgot"] == "continue" and data["files"] == [str(home / ".continue/config.yaml")]


def test_adopt_json_is_one_object_also_for_a_dry_run_and_nothing_to_adopt(
        taosync, home, fleet_file):
    """Every command prints one JSON object with --json (docs/json.md): adopt printed
    nothing at all for a dry run or when nothing differed."""
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("adopt", "--json")
    assert r.rc == 0 and json.loads(r.out)["adopted"] == [], r.both
    settings = home / ".claude/settings.json"
    settings.write_text(settings.read_text().replace(
        CLAUDE_MODEL, '"ANTHROPIC_MODEL": "gpt-4o-mini"'))
    before = fleet_file.read_bytes()
    r = taosync("adopt", "--dry-run", "--json")
    assert r.rc == 0, r.both
    data = json.loads(r.out)
    assert data["dry_run"] is True and data["ok"] is True and "model: fast" in data["diff"]
    assert {"fleet_key": "clients.claude-code.model", "value": "fast",
            "from": "~/.claude/settings.json env.ANTHROPIC_MODEL"} in data["adopted"]
    assert fleet_file.read_bytes() == before


def test_a_released_file_is_never_read_even_when_it_cannot_be(taosync, home, fleet_file):
    """``managed: false`` promises no read: a file of that client that no longer decodes
    (the user's own bytes now) must not stop the apply that releases it, nor be touched."""
    assert taosync("apply", "--no-verify").rc == 0
    cline = home / ".cline" / "data" / "globalState.json"
    cline.write_bytes(b"\xff\xfe not UTF-8")
    fleet_file.write_text(fleet_file.read_text()
                          .replace("cline: {model: balanced}", "cline: {model: balanced, managed: false}")
                          .replace("codex: {model: fast,", "codex: {model: balanced,"))
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert cline.read_bytes() == b"\xff\xfe not UTF-8"
    assert 'model = "' in (home / ".codex" / "config.toml").read_text()  # the rest applied
