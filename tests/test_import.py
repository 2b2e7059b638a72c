"""taosync import: realistic client configs in a sandbox home → a proposed fleet.yaml.

The round trip is the contract: after ``import``, ``plan`` on the proposal (with the key
exported) changes none of the owned values import read — base URLs, model ids, the key.
"""

from __future__ import annotations



from conftest import snapshot
from clients.helpers import (
    KEY_ONE, KEY_TWO, assert_no_key, edit_json, imported, populate, round_trip, write)


# ---------------------------------------------------------------- every client

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
    # stderr: each conflict with both sides; two gateways (each with its key) are kept
    # apart as named gateways (issue 26), not a conflict any more
    assert "conflict: 2 different gateways" not in r.err
    assert "2 gateways kept apart: gateway: for claude-code; gateways.old-gw for codex" in r.err
    assert "conflict: 2 different keys" not in r.err
    assert "export TAOTOKEN_OLD_GW_API_KEY=" in r.err
    assert "cline uses provider 'anthropic'" in r.err
    assert "MCP server 'docs' is defined differently" in r.err
    assert "npx -y some-mcp@2" in r.err and "npx -y some-mcp (env: DOCS_DIR)" in r.err
    assert "/v1/v1/messages" in r.err
    # stdout: the proposal, with the same conflicts as comments on top
    head = r.out.split("version: 1")[0]
    assert "# CONFLICTS" in head and "MCP server 'docs'" in head
    # a tie (1 client each) goes to the first client in registry order: claude-code
    assert "base_url: https://gw.example.com/api  #" in r.out
    assert "  old-gw:\n    base_url: https://old-gw.example.net  # from codex" in r.out
    assert 'key: "${env:TAOTOKEN_OLD_GW_API_KEY}"' in r.out
    assert "  codex:\n    gateway: old-gw" in r.out
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


def test_unparsable_file_is_a_problem_and_the_rest_is_still_imported(run, home):
    populate(home, "codex")
    write(home / ".claude/settings.json", '{\n  // Claude ignores a file with comments\n  "env": {}\n}\n')
    r = run("import")
    assert r.rc == 1
    assert "problem: claude-code:" in r.err and "settings.json:2:" in r.err
    assert "model_provider" not in r.err.split("problem")[0]
    assert "codex:" in r.out


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
    assert r.rc == 1 and "2 different gateways" in r.err  # no fleet can hold that URL
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(r.out)
    assert not any(line.startswith(("version: 2", "x: 1")) for line in r.out.splitlines())
    v = run("validate", "--no-key", config=proposal)
    assert v.rc == 0, v.both


# ---------------------------------------------------------------- edge cases (issue 18)


def test_unparsable_file_is_counted_as_a_problem_not_a_conflict(run, home):
    populate(home, "codex")
    write(home / ".claude/settings.json", '{\n  // comments\n  "env": {}\n}\n')
    r = run("import")
    assert r.rc == 1
    summary = [ln for ln in r.err.splitlines() if ln.startswith("proposal:")][0]
    assert "1 problem" in summary and "conflict" not in summary, summary
    head = r.out.split("version: 1")[0]
    assert "# PROBLEMS" in head and "# CONFLICTS" not in head
    r, data = imported(run)
    kinds = {f["kind"] for f in data["findings"] if f["topic"] == "file"}
    assert kinds == {"problem"}


def test_legacy_codex_profile_table_becomes_a_profile_and_a_route(run, home, tmp_path,
                                                                   monkeypatch):
    populate(home, "codex")
    (home / ".codex/deep.config.toml").unlink()
    (home / ".codex/local.config.toml").unlink()
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text() + '\n[profiles.review]\nmodel = "claude-sonnet-4-20250514"\n'
                   '\n[profiles.offline]\nmodel = "llama3"\nmodel_provider = "ollama-local"\n')
    r, data = imported(run)
    fleet = data["fleet"]
    assert fleet["clients"]["codex"]["profiles"] == ["review"]
    assert fleet["routes"]["review"] == "claude-sonnet-4-20250514"
    assert "llama3" not in fleet["models"]  # another provider's profile stays as it is
    notes = [f["message"] for f in data["findings"] if f["kind"] == "note"]
    assert any("migrated the legacy [profiles.review]" in n for n in notes), notes
    assert not any("[profiles.*] tables are not read" in n for n in notes), notes
    assert data["exit_code"] == 0, data["findings"]
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(data["yaml"])
    monkeypatch.setenv(data["key"]["env"], KEY_ONE)
    assert run("apply", "--no-verify", config=proposal).rc == 0
    written = (home / ".codex/review.config.toml").read_text()
    assert 'model = "claude-sonnet-4-20250514"' in written


def test_a_profile_file_wins_over_the_legacy_table_of_the_same_name(run, home):
    populate(home, "codex")
    cfg = home / ".codex/config.toml"
    cfg.write_text(cfg.read_text() + '\n[profiles.deep]\nmodel = "gpt-4o-mini"\n')
    r, data = imported(run)
    assert data["fleet"]["routes"]["deep"] == "nvidia/deepseek-r1"


def test_continue_duplicated_display_name_is_a_conflict(run, home):
    populate(home, "continue")
    path = home / ".continue/config.yaml"
    # the Sonnet entry is displayed as "gpt-4o-mini", another entry's model id
    path.write_text(path.read_text().replace("  - name: claude-sonnet-4-20250514   # via",
                                             "  - name: gpt-4o-mini   # via"))
    r = run("import")
    assert r.rc == 1, r.err
    assert "conflict: continue: the display name 'gpt-4o-mini' would stand for 2 models" in r.err
    r, data = imported(run)
    (conflict,) = [f for f in data["findings"] if f["topic"] == "models"
                   and f["kind"] == "conflict"]
    assert {i["value"] for i in conflict["items"]} == {"gpt-4o-mini",
                                                       "claude-sonnet-4-20250514"}


def test_continue_two_entries_with_one_name_is_a_conflict(run, home):
    populate(home, "continue")
    path = home / ".continue/config.yaml"
    path.write_text(path.read_text().replace("  - name: gpt-4o-mini\n",
                                             "  - name: claude-sonnet-4-20250514\n"))
    r, data = imported(run)
    assert data["exit_code"] == 1
    assert any(f["kind"] == "conflict" and "'claude-sonnet-4-20250514' would stand for 2"
               in f["message"] for f in data["findings"])


def test_continue_distinct_names_are_no_conflict(run, home):
    populate(home, "continue")
    r, data = imported(run)
    assert not any(f["topic"] == "models" for f in data["findings"])
