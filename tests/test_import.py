"""taosync import: realistic client configs in a sandbox home → a proposed fleet.yaml.

The round trip is the contract: after ``import``, ``plan`` on the proposal (with the key
exported) changes none of the owned values import read — base URLs, model ids, the key.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import TEST_KEY, Run, snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "import"
KEY_ONE = "sk-fixture-ONE-0123456789abcdef0001"
KEY_TWO = "sk-fixture-TWO-0123456789abcdef0002"
OTHER_PROVIDER_KEY = "sk-ant-fixture-OTHER-000000000009"
ALL_KEYS = (KEY_ONE, KEY_TWO, OTHER_PROVIDER_KEY, TEST_KEY)


def populate(home: Path, *names: str) -> None:
    for name in names:
        shutil.copytree(FIXTURES / name, home, dirs_exist_ok=True)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data, indent=2))


def assert_no_key(*texts: str) -> None:
    for text in texts:
        for key in ALL_KEYS[:3]:
            assert key not in text


@pytest.fixture
def run(taosync):
    """``run("import")`` etc.; the runner of conftest (sandbox home, -c the example)."""
    return taosync


def imported(run, *args) -> tuple[Run, dict]:
    r = run("import", "--json", *args)
    assert_no_key(r.out, r.err)
    return r, json.loads(r.out)


def round_trip(run, tmp_path, monkeypatch, key_value: str, *, allow: set = frozenset()):
    """import → write the proposal → export its key variable → plan; return both."""
    r, data = imported(run)
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(data["yaml"])
    if data["key"]["env"]:
        monkeypatch.setenv(data["key"]["env"], key_value)
    v = run("validate", config=proposal)
    assert v.rc == 0, v.both
    p = run("plan", "--json", config=proposal)
    assert p.rc == 0, p.both
    plan = json.loads(p.out)
    changes = {(f["display"], c["key"]): c for f in plan["files"] for c in f["changes"]}
    read = [i for i in data["read"] if i["what"] in ("url", "model", "key")]
    assert read, "import read nothing"
    changed = [(i["file"], i["key"], i["what"]) for i in read
               if (i["file"], i["key"]) in changes and (i["file"], i["key"]) not in allow]
    assert not changed, (changed, [changes[c[:2]] for c in changed])
    return data, plan, changes


# -------------------------------------------------------------------- per client


def test_claude_code_round_trip(run, home, tmp_path, monkeypatch):
    populate(home, "claude")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["gateway"] == {"base_url": "https://gw.example.com/api",
                                "key": "${env:TAOTOKEN_API_KEY}",
                                "headers": {"X-Team": "platform"}}
    assert fleet["routes"] == {"main": "claude-sonnet-4-20250514", "haiku": "gpt-4o-mini",
                               "opus": "nvidia/deepseek-r1"}
    assert fleet["default_route"] == "main"
    assert fleet["clients"] == {"claude-code": {"model": "main", "haiku": "haiku",
                                                "opus": "opus"}}
    assert fleet["mcp_servers"]["docs"] == {"command": "npx", "args": ["-y", "some-mcp"],
                                            "env": {"DOCS_DIR": "/srv/docs"}}
    assert fleet["mcp_servers"]["search"]["url"] == "https://mcp.example.com/mcp"
    # the one thing plan adds: the Sonnet slot, which defaults to the model slot
    settings = [f for f in plan["files"] if f["display"] == "~/.claude/settings.json"][0]
    assert {c["key"] for c in settings["changes"]} <= {"env.ANTHROPIC_DEFAULT_SONNET_MODEL"}
    assert [f["action"] for f in plan["files"] if f["display"] == "~/.claude.json"] == ["unchanged"]


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


def test_cline_round_trip_both_stores(run, home, tmp_path, monkeypatch):
    populate(home, "cline")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["clients"] == {"cline": {"model": "main"}}
    assert fleet["routes"] == {"main": "claude-sonnet-4-20250514"}
    # both MCP files are read: the shared one (nested) and VS Code's legacy one (flat)
    assert set(fleet["mcp_servers"]) == {"docs", "search"}
    assert fleet["mcp_servers"]["search"] == {"url": "https://mcp.example.com/mcp",
                                              "headers": {"X-Client": "me"}}
    # the inactive anthropic provider is neither imported nor a conflict
    assert data["exit_code"] == 0
    assert not any(c["kind"] == "conflict" for c in data["findings"])


def test_continue_round_trip_keeps_other_models(run, home, tmp_path, monkeypatch):
    populate(home, "continue")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    fleet = data["fleet"]
    assert fleet["clients"]["continue"]["roles"] == {
        "chat": "chat", "edit": "chat", "apply": "chat", "autocomplete": "autocomplete"}
    assert "llama3.1:8b" not in fleet["models"]
    assert any("Local Llama" in f["message"] for f in data["findings"])
    cont = [f for f in plan["files"] if f["display"] == "~/.continue/config.yaml"][0]
    assert not any("Local Llama" in c["key"] for c in cont["changes"])


def test_every_client_together_round_trips_and_dedupes_routes(run, home, tmp_path,
                                                                monkeypatch):
    populate(home, "claude", "codex", "cline", "continue")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["exit_code"] == 0, data["findings"]
    fleet = data["fleet"]
    # one route per model: names from the first slot that uses it, pinned profile names kept
    assert sorted(fleet["routes"].values()) == sorted(set(fleet["routes"].values()))
    assert fleet["routes"]["deep"] == "nvidia/deepseek-r1"
    assert fleet["clients"]["claude-code"]["opus"] == "deep"
    assert fleet["clients"]["codex"]["model"] == fleet["clients"]["claude-code"]["haiku"]
    assert set(fleet["clients"]) == {"claude-code", "codex", "cline", "continue"}
    assert data["key"]["env"] == "TAOTOKEN_API_KEY"
    assert len(data["key"]["found"]) == 6  # one key, six places: all reported


# ---------------------------------------------------------------- the worse cases


def test_messy_home_conflicts_are_side_by_side_and_never_merged(run, home, tmp_path):
    """Claude's URL with /v1 (broken), the key inline in two files plus a different one,
    a client on an unknown provider, an MCP server defined two ways."""
    populate(home, "claude", "codex", "cline")
    edit_json(home / ".claude/settings.json",
              lambda d: d["env"].update(ANTHROPIC_BASE_URL="https://gw.example.com/api/v1"))
    # Codex on another gateway with another key
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace("https://gw.example.com/api/v1",
                                           "https://old-gw.example.net/v1"))
    edit_json(home / ".codex/auth.json", lambda d: d.update(OPENAI_API_KEY=KEY_TWO))
    # Cline switched to Anthropic directly (an unknown provider for the fleet)
    edit_json(home / ".cline/data/settings/providers.json",
              lambda d: d.update(lastUsedProvider="anthropic"))
    # the same MCP server name, different command
    edit_json(home / ".claude.json",
              lambda d: d["mcpServers"]["docs"].update(args=["-y", "some-mcp@2"]))

    r = run("import")
    assert r.rc == 1
    assert_no_key(r.out, r.err)
    # stderr: each conflict with both sides
    assert "conflict: 2 different gateways" in r.err
    assert "https://gw.example.com/api/v1" in r.err and "https://old-gw.example.net/v1" in r.err
    assert "conflict: 2 different keys" in r.err
    assert "sk-…0001 [key 1]" in r.err and "sk-…0002 [key 2]" in r.err
    assert "cline uses provider 'anthropic'" in r.err
    assert "MCP server 'docs' is defined differently" in r.err
    assert "npx -y some-mcp@2" in r.err and "npx -y some-mcp (env: DOCS_DIR)" in r.err
    assert "/v1/v1/messages" in r.err
    # stdout: the proposal, with the same conflicts as comments on top
    head = r.out.split("version: 1")[0]
    assert "# CONFLICTS" in head and "old-gw.example.net" in head and "[key 2]" in head
    # a tie (1 client each) goes to the first client in registry order: claude-code
    assert "base_url: https://gw.example.com/api  #" in r.out
    assert "codex:  # on another gateway until now" in r.out
    assert "cline:" not in r.out.split("clients:")[1].split("mcp_servers:")[0]

    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(r.out)
    v = run("validate", "--no-key", config=proposal)
    assert v.rc == 0, v.both


def test_literal_key_in_an_mcp_server_becomes_a_fleet_reference(run, home):
    populate(home, "claude")
    edit_json(home / ".claude.json",
              lambda d: d["mcpServers"]["docs"]["env"].update(
                  TAO_KEY=KEY_ONE, GITHUB_TOKEN="ghp_fixture_abcdefghijklmnop"))
    r, data = imported(run)
    env = data["fleet"]["mcp_servers"]["docs"]["env"]
    assert env["TAO_KEY"] == "${gateway.key}"
    notes = " ".join(f["message"] for f in data["findings"])
    assert "held the gateway key literally" in notes
    assert "GITHUB_TOKEN holds a literal secret" in notes
    assert "ghp_fixture_abcdefghijklmnop" not in notes


def test_one_gateway_with_a_path_per_protocol_gets_an_override(run, home):
    populate(home, "claude", "codex")
    edit_json(home / ".claude/settings.json",
              lambda d: d["env"].update(ANTHROPIC_BASE_URL="https://gw.example.com/anthropic"))
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace("https://gw.example.com/api/v1",
                                           "https://gw.example.com/openai/v1"))
    r, data = imported(run)
    assert r.rc == 0, data["findings"]
    assert data["fleet"]["gateway"]["base_url"] == "https://gw.example.com/anthropic"
    assert data["fleet"]["gateway"]["openai_base_url"] == "https://gw.example.com/openai/v1"


def test_env_names_used_by_clients_win_over_the_default(run, home, monkeypatch):
    populate(home, "continue")
    path = home / ".continue/config.yaml"
    path.write_text(path.read_text().replace(KEY_ONE, "${{ secrets.GW_KEY }}"))
    write(home / ".continue/.env", f"GW_KEY={KEY_ONE}\n")
    monkeypatch.setenv("GW_KEY", KEY_TWO)  # the shell disagrees with .env
    r, data = imported(run)
    assert data["fleet"]["gateway"]["key"] == "${env:GW_KEY}"
    assert data["fleet"]["clients"]["continue"]["secrets"] == "reference"
    assert data["fleet"]["clients"]["continue"]["secret_name"] == "GW_KEY"
    assert r.rc == 1
    assert any(f["topic"] == "key" and f["kind"] == "conflict" for f in data["findings"])


def test_claude_api_key_helper_is_kept_as_the_reference(run, home, tmp_path, monkeypatch):
    write(home / ".claude/settings.json", json.dumps({
        "apiKeyHelper": "security find-generic-password -s taotoken -w",
        "env": {"ANTHROPIC_BASE_URL": "https://gw.example.com/api",
                "ANTHROPIC_MODEL": "gw-main"}}))
    r, data = imported(run)
    assert r.rc == 0
    assert data["fleet"]["gateway"]["key"] == "${shell:security find-generic-password -s taotoken -w}"
    assert data["fleet"]["clients"]["claude-code"]["secrets"] == "reference"
    write(home / ".claude/settings.json", json.dumps({
        "apiKeyHelper": "printenv MY_GW_KEY",
        "env": {"ANTHROPIC_BASE_URL": "https://gw.example.com/api",
                "ANTHROPIC_MODEL": "gw-main"}}))
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["fleet"]["gateway"]["key"] == "${env:MY_GW_KEY}"
    assert ("~/.claude/settings.json", "apiKeyHelper") not in changes


def test_unparsable_file_is_a_problem_and_the_rest_is_still_imported(run, home):
    populate(home, "codex")
    write(home / ".claude/settings.json", '{\n  // Claude ignores a file with comments\n  "env": {}\n}\n')
    r = run("import")
    assert r.rc == 1
    assert "problem: claude-code:" in r.err and "settings.json:2:" in r.err
    assert "model_provider" not in r.err.split("problem")[0]
    assert "codex:" in r.out


def test_claude_on_bedrock_is_an_unknown_provider(run, home):
    populate(home, "codex")
    write(home / ".claude/settings.json", json.dumps({"env": {
        "CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_MODEL": "anthropic.claude-x"}}))
    r, data = imported(run)
    assert r.rc == 1
    provider = [f for f in data["findings"] if f["topic"] == "provider"]
    assert provider and "Amazon Bedrock" in provider[0]["message"]
    assert "claude-code" not in data["fleet"]["clients"]


def test_continue_entry_named_apart_from_its_model_is_flagged(run, home):
    write(home / ".continue/config.yaml", """name: c
version: 1.0.0
schema: v1
models:
  - name: GW Sonnet
    provider: openai
    model: claude-sonnet-4
    apiBase: https://gw.example.com/api/v1
""")
    r, data = imported(run)
    assert r.rc == 0
    assert any("rename it to 'claude-sonnet-4'" in f["message"] for f in data["findings"])


# ------------------------------------------------------------------------- the CLI


def test_stdout_is_only_the_proposal_and_nothing_is_written(run, home):
    populate(home, "claude", "codex")
    before = snapshot(home)
    r = run("import")
    assert r.rc == 0, r.err
    assert r.out.startswith("# Proposed by `taosync import`")
    assert "read: claude-code" in r.err and "key:" in r.err
    assert 'export TAOTOKEN_API_KEY="$(jq -r \'.env.ANTHROPIC_AUTH_TOKEN\' ~/.claude/settings.json)"' in r.err
    assert_no_key(r.out, r.err)
    assert snapshot(home) == before


def test_from_limits_the_clients_read(run, home):
    populate(home, "claude", "codex")
    r, data = imported(run, "--from", "codex")
    assert list(data["fleet"]["clients"]) == ["codex"]
    assert list(data["sources"]) == ["codex"]
    bad = run("import", "--from", "codx")
    assert bad.rc == 2 and "did you mean codex" in bad.err


def test_nothing_to_import(run, home):
    r = run("import")
    assert r.rc == 1
    assert r.out == ""
    assert "taosync init" in r.err


def test_json_has_the_proposal_and_the_findings(run, home):
    populate(home, "claude")
    r, data = imported(run)
    assert r.rc == 0 and data["ok"] is True and data["exit_code"] == 0
    assert data["yaml"].startswith("# Proposed")
    assert data["key"]["found"][0]["redacted"] == "sk-…0001"
    assert {i["what"] for i in data["read"]} >= {"url", "model", "key"}
    assert all(set(f) == {"kind", "topic", "message", "items", "chosen"} for f in data["findings"])


# ------------------------------------------------------------------ the YAML writer


def test_yaml_writer_round_trips_any_strings():
    from hypothesis import given, settings, strategies as st
    from ruamel.yaml import YAML

    from taosync.importer import _block

    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    value = st.recursive(text, lambda inner: st.one_of(
        st.lists(text, max_size=3), st.dictionaries(text, inner, max_size=3)), max_leaves=8)

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(text, value, min_size=1, max_size=4))
    def check(data):
        out = "\n".join(_block(data, 0, {}, ())) + "\n"
        assert YAML(typ="safe", pure=True).load(out) == data, out

    check()


def test_values_with_line_breaks_cannot_escape_their_comment(run, home, tmp_path):
    populate(home, "claude", "continue", "codex")
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text().replace(
        '"https://gw.example.com/api/v1"', '"https://evil.example/v1\\nversion: 2\\u2028x: 1"'))
    r = run("import")
    assert r.rc == 1 and "2 different gateways" in r.err
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(r.out)
    assert not any(line.startswith(("version: 2", "x: 1")) for line in r.out.splitlines())
    v = run("validate", "--no-key", config=proposal)
    assert v.rc == 0, v.both
