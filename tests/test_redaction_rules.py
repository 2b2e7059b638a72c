"""The redactor's rules beyond the secrets it knows (issue #23, Builds 3 and 5).

- A value that looks like a secret is hidden whatever file it sits in and whether or
  not taosync knows it: a token by its prefix (``ghp_``, ``sk-``, ``xoxb-``, ``AKIA``…),
  a value under a secret-looking name — the rules ``taosync import`` uses too.
- A key echoed truncated and glued to ``=``, ``/`` or ``:`` is still hidden (it printed
  21 of 24 characters).
- A key shorter than 6 characters is hidden only where it stands as a whole value, never
  scrubbed out of a path or a client name (``aide`` made ``~/.aider.conf.yml``
  ``~/.…r.conf.yml``).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taosync.fleet import looks_secret
from taosync.fleet.secrets import SENSITIVE, Redactor, Secret

KEY = "sk-test-SECRETKEY-0123456789abcdef"


@pytest.mark.parametrize("glued", [
    f"KEY={KEY[:21]}", f"/v1/keys/{KEY[:21]}/usage", f"key:{KEY[:21]}",
    f"x={KEY[3:24]}:tail", f"Authorization=Bearer/{KEY[:24]}", f"{KEY[:22]}=",
])
def test_a_truncated_key_glued_to_equals_slash_or_colon_is_hidden(glued):
    text = Redactor(Secret(KEY)).scrub(f"the gateway said: {glued} (denied)")
    assert not any(KEY[i:i + 10] in text for i in range(len(KEY) - 9)), text
    assert "sk-…cdef" in text and text.endswith(" (denied)")


def test_a_glued_secret_that_is_no_key_stays_apart_from_what_it_is_glued_to():
    r = Redactor(Secret(KEY))
    r.add("other-secret-Zz9Yy8Xx7Ww6")
    text = r.scrub("https://gw.example/path=other-secret-Zz9Yy8:ok")
    assert text == f"https://gw.example/path={SENSITIVE}:ok"


def test_a_short_key_is_hidden_as_a_whole_value_only():
    r = Redactor(Secret("aide"))
    # in a path, a client name, a word: left alone
    for text in ("~/.aider.conf.yml", "aider, claude-code", "an aide here"):
        assert r.scrub(text) == text
    # where it stands as a value: hidden
    assert r.scrub('"ANTHROPIC_AUTH_TOKEN": "aide",') == '"ANTHROPIC_AUTH_TOKEN": "…",'
    assert r.scrub("OPENAI_API_KEY=aide") == "OPENAI_API_KEY=…"
    assert r.scrub("openai-api-key: aide") == "openai-api-key: …"
    assert r.scrub("aide") == "…"  # a changes/drift value
    assert Secret("aide").scrub("~/.aider.conf.yml") == "~/.aider.conf.yml"


def test_a_short_key_leaves_paths_and_client_names_readable(taosync, home, monkeypatch):
    monkeypatch.setenv("TAOTOKEN_API_KEY", "aide")
    plan = taosync("plan")
    assert plan.rc == 0, plan.both
    assert "~/.aider.conf.yml" in plan.out and "…r.conf" not in plan.both
    assert '"ANTHROPIC_AUTH_TOKEN": "aide"' not in plan.out
    assert '"ANTHROPIC_AUTH_TOKEN": "…"' in plan.out
    data = json.loads(taosync("plan", "--json").out)
    assert any(f["display"] == "~/.aider.conf.yml" for f in data["files"])
    assert "aide\"" not in json.dumps(data).replace("aider", "")


@pytest.mark.parametrize("token", [
    "ghp_R7kQ2mZx9VbN4tLw8HcJ5pYd3FgS1aEu", "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11AbCdEf0_Gh1Ij2Kl3Mn4Op5Qr6St7Uv8Wx9", "sk-proj-Wq4Er7Ty1Ui8Op5As2Df9Gh6",
    "sk-ant-api03-Qm7Hn2Kd9Lx4Vc1Bz6Fj3Ws8", "xoxb-2741936580-8305172946-Qm7Hn2Kd9Lx",
    "xoxp-1-2-slack-user", "glpat-Tz5Ky8Md1Nq4Rh7Jv0Lb3X", "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyB3k9Qw7Er5Ty1Ui3Op8As6Df4Gh2Jk0L", "hf_Kp3Lm6Nq9Rs2Tu5Vw8Xy1Za4Bc7De0Fg",
])
def test_a_token_is_hidden_by_its_prefix_alone(token):
    """No redactor knows it: the rules alone (what ui uses before a command installs
    one, and in commands that install none)."""
    for text in (f"--pat {token}", f'["--pat", "{token}"]', f"url=https://x/?t={token}",
                 f"X_OPAQUE: {token}"):
        hidden = Redactor().scrub(text)
        assert token not in hidden and token[6:16] not in hidden and SENSITIVE in hidden
    assert looks_secret.looks_like_token(token)
    assert looks_secret.looks_like_token(f"Bearer {token}")


@pytest.mark.parametrize("text", [
    "task-runner-abcdefghijklmnop", "sk-learn", "desk-0123456789abcdefghij",
    "claude-sonnet-4-20250514", "~/.config/io.datasette.llm/keys.json",
    "secrets: reference", "set `secrets: reference` for it",
    "~/.config/taotoken/key: Permission denied",
    "gave back every owned key: ~/.codex/config.toml, ~/.aider.conf.yml",
    "token_url: https://auth.example/oauth/token",
    "apiKeyHelper: printenv TAOTOKEN_API_KEY",
    'env_key = "TAOTOKEN_API_KEY"', "max_tokens: 4096", "TOKEN_LIMIT=4000",
    'apiKey: "${{ secrets.TAOTOKEN_API_KEY }}"', '"apiKey": "{env:TAOTOKEN_API_KEY}"',
    "GITHUB_TOKEN: ${env:GITHUB_TOKEN}", 'export GITHUB_TOKEN="$(jq -r .token f)"',
    "env.ANTHROPIC_AUTH_TOKEN: sk-…cdef → (sensitive value)",
])
def test_what_is_no_secret_stays_readable(text):
    assert Redactor().scrub(text) == text


@pytest.mark.parametrize("line, hidden", [
    ('    "GITHUB_PERSONAL_ACCESS_TOKEN": "gh-own-0123456789",', "gh-own-0123456789"),
    ("SLACK_BOT_TOKEN=abc-0123456789-def", "abc-0123456789-def"),
    ('DB_PASSWORD="Tr0ub4dor&3-horse"', "Tr0ub4dor&3-horse"),
    ("MY_SERVICE_TOKEN = 'svc.Ny3Bv6Cx9Zq2'", "svc.Ny3Bv6Cx9Zq2"),
    ("  apiKey: myOwnKey12345678", "myOwnKey12345678"),
    ("Authorization: Bearer opaque5e6f7a8b9c0d", "opaque5e6f7a8b9c0d"),
    ('"CF-Access-Client-Secret": "cf0123456789abcdef"', "cf0123456789abcdef"),
    ('"accessToken": "acc.0123456789"', "acc.0123456789"),
])
def test_a_value_under_a_secret_looking_name_is_hidden_in_any_file_format(line, hidden):
    out = Redactor().scrub(line)
    assert hidden not in out and SENSITIVE in out, out
    if "Bearer" in line:
        assert "Bearer (sensitive value)" in out


def test_import_and_the_redactor_share_one_rule_set():
    """What import takes for a secret is what the redactor hides."""
    from taosync.importer.merge import _looks_secret

    for label, value in [("GITHUB_TOKEN", "0123456789abcdef0123"),
                         ("NOTIFY", "xoxb-1-2-slack"), ("REPO", "github_pat_11AAAAAA")]:
        assert _looks_secret(label, value)
        assert value not in Redactor().scrub(f"{label}={value}")
    for label, value in [("TOKEN_LIMIT", "4000"), ("MAX_TOKENS", "abcdefgh12345678")]:
        assert not _looks_secret(label, value)
        assert Redactor().scrub(f"{label}={value}") == f"{label}={value}"


def test_import_leaves_out_an_mcp_server_with_a_token_in_its_args(taosync, home):
    """fleet.yaml can reference a secret only in env or headers: copying the token in
    ``args`` would print it (the proposal is stdout) and spread it to every client."""
    token = "github_pat_11AbCdEf0_Gh1Ij2Kl3Mn4Op5Qr6St7Uv8Wx9"
    assert taosync("apply", "--no-verify").rc == 0
    claude = home / ".claude.json"
    data = json.loads(claude.read_text())
    data["mcpServers"]["gh"] = {"command": "gh-mcp", "args": ["--pat", token]}
    claude.write_text(json.dumps(data, indent=2))
    r = taosync("import")
    assert r.rc == 1
    assert token not in r.both and token[11:21] not in r.both
    assert "MCP server 'gh' passes a token in args" in r.err
    assert "gh:" not in r.out.split("mcp_servers:")[1]  # left out of the proposal
    assert "taotoken-router:" in r.out.split("mcp_servers:")[1]


@pytest.mark.parametrize("text, shown", [
    ("url: https://alice:s3cret-Pw@mcp.example/x",
     "url: https://alice:(sensitive value)@mcp.example/x"),
    ('"url": "https://u:p%40ss@h/v1"', '"url": "https://u:(sensitive value)@h/v1"'),
    ("https://user@host/x", "https://user@host/x"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
])
def test_a_url_password_is_hidden_whoever_wrote_it(text, shown):
    """The user's own MCP server URL with a password in it, shown as diff context."""
    assert Redactor().scrub(text) == shown


@pytest.mark.parametrize("name, secret", [
    ("GITHUB_PERSONAL_ACCESS_TOKEN", True), ("OPENAI_API_KEY", True), ("apiKey", True),
    ("accessToken", True), ("X-Api-Key", True), ("CF-Access-Client-Secret", True),
    ("Authorization", True), ("DB_PASSWORD", True), ("MY_SERVICE_TOKEN", True),
    ("openAiApiKey", True), ("SLACK_BOT_TOKEN", True),
    # where a secret is, not one
    ("apiKeyHelper", False), ("env_key", False), ("envKey", False), ("api_key_name", False),
    ("secret_name", False), ("GITHUB_TOKEN_FILE", False),
    # not about secrets at all
    ("max_tokens", False), ("selectedAuthType", False), ("keybindings", False),
    ("MY_OWN_VAR", False),
])
def test_secret_looking_names(name, secret):
    assert looks_secret.secret_name(name) is secret


def test_every_secret_looking_name_holds_a_hint():
    """The scan of a file skips the lines holding no NAME_HINTS word (looks_secret
    ``_named_values``): sound only while every secret word and part holds one."""
    for word in (*looks_secret._SECRET_WORDS, *looks_secret._SECRET_PARTS):
        assert any(hint in word for hint in looks_secret.NAME_HINTS), word


_NAMEISH = st.sampled_from(["apiKey", "API_KEY", "token", "x-auth-token", "name", "path",
                            "Authorization", "db.password", "env_key", "cookie", "model",
                            "pat", "SECRET", "credentials", "a", "é_key", "compat"])
_VALUE = st.sampled_from(["sk-abcdefghijklmnop0123", '"ghp_abcdefghijkl"', "'p4ss-w0rd-xx'",
                          "Bearer xyzxyzxyzxyz12", "short", "${env:X}", '"a\\"b\\nc-d-e-f-g"',
                          "https://u:pw123456@h/p", "0123456789"])
_LINE = st.one_of(
    st.builds(lambda n, sep, v, q: f"{q}{n}{q}{sep}{v}", _NAMEISH,
              st.sampled_from([": ", " = ", "=", ":", "  :\t"]), _VALUE,
              st.sampled_from(["", '"', "'"])),
    st.text(alphabet=st.sampled_from(list("ab:=\"' \t,{}[]#-_.Kk\r")), max_size=30))


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINE, max_size=12), ending=st.sampled_from(["\n", "\r\n", ""]))
def test_the_line_filtered_scan_finds_what_the_whole_scan_finds(lines, ending):
    text = "\n".join(lines) + ending
    whole = [(m.start(), m.group(0)) for m in looks_secret.NAMED_VALUE.finditer(text)
             if looks_secret.secret_name(m.group("name"))]
    lines_only = [(m.start(), m.group(0)) for m in looks_secret._named_values(text)
                  if looks_secret.secret_name(m.group("name"))]
    assert lines_only == whole
