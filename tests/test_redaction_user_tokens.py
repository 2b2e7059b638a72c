"""A token of the user's own in a part of a client file taosync does not own is never
printed either (found by tests/test_stateful.py, invariant (c)): a diff shows the lines
around taosync's change, and ``rollback`` a whole file, so the user's own MCP server
``env = { MINE_TOKEN = "…" }`` next to taosync's keys went to the terminal as it is."""

from __future__ import annotations

import json

from conftest import TEST_KEY

USER_TOKEN = "ghp_UserOwnTOKEN0123456789abcdefXYZ"
CODEX = ('model = "o3"\n\n[mcp_servers.mine]\ncommand = "mine-server"\n'
         f'env = {{ MINE_TOKEN = "{USER_TOKEN}", LOG_LEVEL = "debug" }}\n')
CLAUDE = {"env": {"GITHUB_TOKEN": USER_TOKEN, "MY_OWN_VAR": "mine"},
          "apiKeyHelper": "printenv TAOTOKEN_API_KEY"}


def plant(home):
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text(CODEX)
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(json.dumps(CLAUDE, indent=2) + "\n")


def assert_hidden(r):
    both = r.out + r.err
    assert USER_TOKEN not in both and USER_TOKEN[6:20] not in both, both
    assert TEST_KEY not in both


def test_plan_and_rollback_diffs_hide_a_token_under_a_secret_looking_name(taosync, home):
    plant(home)
    plan = taosync("plan")
    assert "[mcp_servers.mine]" in plan.out  # the user's lines are shown, as context
    assert_hidden(plan)
    assert_hidden(taosync("plan", "--json"))
    assert taosync("apply", "--no-verify").rc == 0
    assert_hidden(taosync("rollback", "--dry-run"))
    assert_hidden(taosync("rollback"))
    # the user's value is given back untouched, and readable values stay readable
    assert USER_TOKEN in (home / ".codex/config.toml").read_text()
    assert 'LOG_LEVEL = "debug"' in taosync("plan").out


def test_names_that_point_at_a_secret_stay_readable(taosync, home):
    """``apiKeyHelper``, ``env_key``, ``api_key_name``: where a secret is, not one."""
    plant(home)
    out = taosync("plan").out
    assert '"apiKeyHelper": "printenv TAOTOKEN_API_KEY"' in out
