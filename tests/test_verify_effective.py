"""`taosync verify` probes what the clients actually have: each probe carries the values in
the client's files on disk. Against a real stand-in gateway on loopback: apply, hand-break
each client's file (a doubled /v1; separately, a stale key) and verify fails naming that
file and key path, reports the drift, and never prints either key; `--desired` probes
fleet.yaml instead; a home never applied says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TEST_KEY, said_where

from taosync.stub import Stub

EXAMPLE_ROOT = "https://taotoken.net/api"
MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]
STALE_KEY = "sk-stale-KEYFROMLASTYEAR-0000000000"
SONNET = "claude-sonnet-4-20250514"


@pytest.fixture
def gateway(taosync, fleet_file):
    """A stand-in gateway that knows only TEST_KEY, the fleet pointed at it, applied."""
    with Stub(key=TEST_KEY, models=MODELS) as stub:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, stub.root)
                              .replace("timeout: 20}", "timeout: 5, retries: 0}"))
        r = taosync("apply", "--no-verify")
        assert r.rc == 0, r.both
        yield stub


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def replace_text(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def claude_url(home, root):
    edit_json(home / ".claude/settings.json",
              lambda d: d["env"].update(ANTHROPIC_BASE_URL=root + "/v1"))


def claude_key(home, root):
    edit_json(home / ".claude/settings.json",
              lambda d: d["env"].update(ANTHROPIC_AUTH_TOKEN=STALE_KEY))


def codex_url(home, root):
    replace_text(home / ".codex/config.toml", f'"{root}/v1"', f'"{root}/v1/v1"')


def codex_key(home, root):
    edit_json(home / ".codex/auth.json", lambda d: d.update(OPENAI_API_KEY=STALE_KEY))


CLINE_FILE = ".cline/data/settings/providers.json"


def cline_url(home, root):
    edit_json(home / CLINE_FILE, lambda d: d["providers"]["openai-compatible"]["settings"]
              .update(baseUrl=root + "/v1/v1"))


def cline_key(home, root):
    edit_json(home / CLINE_FILE, lambda d: d["providers"]["openai-compatible"]["settings"]
              .update(apiKey=STALE_KEY))


def continue_url(home, root):
    replace_text(home / ".continue/config.yaml", f"apiBase: {root}/v1\n",
                 f"apiBase: {root}/v1/v1\n")


def continue_key(home, root):
    replace_text(home / ".continue/config.yaml", f"apiKey: {TEST_KEY}", f"apiKey: {STALE_KEY}")


#: client, its file as messages show it, the URL's key path, the key's file and key path
CASES = {
    "claude-code": ("~/.claude/settings.json", "env.ANTHROPIC_BASE_URL",
                    "~/.claude/settings.json env.ANTHROPIC_AUTH_TOKEN", claude_url, claude_key),
    "codex": ("~/.codex/config.toml", "model_providers.taotoken.base_url",
              "~/.codex/auth.json OPENAI_API_KEY", codex_url, codex_key),
    "cline": ("~/" + CLINE_FILE, "providers.openai-compatible.settings.baseUrl",
              f"~/{CLINE_FILE} providers.openai-compatible.settings.apiKey", cline_url,
              cline_key),
    "continue": ("~/.continue/config.yaml", f"models[name={SONNET}].apiBase",
                 f"~/.continue/config.yaml models[name={SONNET}].apiKey", continue_url,
                 continue_key),
}


def history_text(home) -> str:
    path = home / ".local" / "state" / "taosync" / "history.jsonl"
    return path.read_text() if path.exists() else ""


def failed(data: dict) -> list[dict]:
    return [r for r in data["results"] if not r["ok"]]


def test_a_healthy_home_passes_with_the_values_on_disk(taosync, home, gateway):
    r = taosync("verify")
    assert r.rc == 0, r.both
    assert "15/15 backends pass" in r.out and "differs from fleet.yaml" not in r.err
    data = json.loads(taosync("verify", "--json").out)
    assert data["ok"] and data["drift"] == [] and data["problems"] == []
    sources = {r["clients"][0]: r["key_source"] for r in data["results"]}
    assert sources["claude-code"] == "~/.claude/settings.json env.ANTHROPIC_AUTH_TOKEN"
    assert sources["codex"] == "~/.codex/auth.json OPENAI_API_KEY"
    # every probe went out with the key read from the files, which is the fleet's
    assert {p.auth for p in gateway.posts()} == {"ok"}


@pytest.mark.parametrize("client", list(CASES))
def test_a_doubled_v1_fails_naming_the_file_and_key_path(taosync, home, gateway, client):
    shown, url_key, _, break_url, _ = CASES[client]
    break_url(home, gateway.root)
    r = taosync("verify")
    assert r.rc == 1, r.both
    assert said_where(r.out, "path", f"{shown} {url_key}")
    assert "/v1 is doubled" in r.out
    assert f"{client}: {shown} differs from fleet.yaml in {url_key}" in r.err
    data = json.loads(taosync("verify", "--json").out)
    bad = failed(data)
    assert bad and {c for x in bad for c in x["clients"]} == {client}
    assert {x["diagnosis"]["code"] for x in bad} == {"path"}
    assert all(x["url"].endswith(("/v1/v1/messages?beta=true", "/v1/v1/responses",
                                  "/v1/v1/chat/completions")) for x in bad)
    assert {"client": client, "message": f"{shown} differs from fleet.yaml in {url_key}"} \
        in data["drift"]
    # the fleet itself is fine: --desired probes what fleet.yaml writes, and passes
    desired = taosync("verify", "--desired")
    assert desired.rc == 0, desired.both
    assert "backends pass" in desired.out and "✗" not in desired.out


@pytest.mark.parametrize("client", list(CASES))
def test_a_stale_key_fails_with_401_naming_the_file_and_key_path(taosync, home, gateway,
                                                                 client):
    _, _, key_where, _, break_key = CASES[client]
    break_key(home, gateway.root)
    r = taosync("verify", "-v")
    assert r.rc == 1, r.both
    assert said_where(r.out, "auth", key_where)
    assert "the gateway rejected the key (HTTP 401" in r.out
    assert "differs from fleet.yaml in" in r.err
    as_json = taosync("verify", "--json")
    data = json.loads(as_json.out)
    bad = failed(data)
    assert {c for x in bad for c in x["clients"]} == {client}
    assert {(x["status"], x["diagnosis"]["code"]) for x in bad} == {(401, "auth")}
    assert key_where in {x["key_source"] for x in bad}
    assert all(x["key_source"].startswith(key_where.split(" ")[0] + " ") for x in bad)
    assert any(key_where.split(" ", 1)[1] in d["message"] for d in data["drift"]
               if d["client"] == client)
    # history says which key each probe sent (redacted, keyed hash), never the key itself
    records = [json.loads(line) for line in history_text(home).splitlines()]
    stale = [x for x in records if x.get("key_source") == key_where]
    assert stale and {x["key"] for x in stale} == {"sk-…0000"}
    assert len({x["key_hash"] for x in records}) == 2
    desired = taosync("verify", "--desired")
    assert desired.rc == 0, desired.both
    # the stand-in echoes the key it was sent in its 401 message: scrubbed everywhere
    for text in (r.out, r.err, as_json.out, as_json.err, desired.both, history_text(home)):
        assert STALE_KEY not in text and TEST_KEY not in text
        assert "KEYFROMLASTYEAR" not in text and "SECRETKEY" not in text


def test_a_home_never_applied_says_so_and_fails(taosync, home, fleet_file):
    with Stub(key=TEST_KEY, models=MODELS) as stub:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, stub.root))
        r = taosync("verify")
        as_json = taosync("verify", "--json")
        desired = taosync("verify", "--desired")
        sent = stub.posts()
    assert r.rc == 1 and as_json.rc == 1
    again = f"taosync --home {home} -c {fleet_file}"  # the hint repeats the options in effect
    assert (f"codex: ~/.codex/config.toml does not exist: run {again} apply, or {again} "
            "verify --desired") in " ".join(r.err.split())
    for shown in ("~/.claude/settings.json", "~/" + CLINE_FILE, "~/.continue/config.yaml"):
        assert f"{shown} does not exist" in r.err
    assert "pass" not in r.out
    problems = json.loads(as_json.out)["problems"]
    assert {p["client"] for p in problems} == {"claude-code", "codex", "cline", "continue",
                                               "mistral-vibe", "gptme", "aider", "llm",
                                               "shell-gpt", "qwen-code", "gemini-cli",
                                               "opencode", "kilo"}
    assert desired.rc == 0 and "15/15 backends pass" in desired.out
    assert len(sent) == 15  # only --desired sent anything
    assert not (home / ".claude").exists()


def test_one_client_applied_the_others_not(taosync, home, gateway):
    """Only the missing client fails; the applied ones are probed."""
    (home / ".codex/config.toml").unlink()
    r = taosync("verify", "--json")
    data = json.loads(r.out)
    assert r.rc == 1 and not data["ok"]
    assert [p["client"] for p in data["problems"]] == ["codex"]
    assert data["failed"] == 0 and data["passed"] == 12
    assert "codex" not in {c for x in data["results"] for c in x["clients"]}


def test_secrets_reference_keys_resolve_as_the_client_would(taosync, home, fleet_file,
                                                            monkeypatch):
    """apiKeyHelper runs (it prints the variable); Codex reads env_key's variable;
    Continue reads secrets.NAME from its .env; aider reads $OPENAI_API_KEY. A stale .env
    fails naming it."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)  # exported for aider, as apply asks
    with Stub(key=TEST_KEY, models=MODELS) as stub:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, stub.root)
                              .replace("secrets: inline", "secrets: reference"))
        assert taosync("apply", "--no-verify").rc == 0
        settings = json.loads((home / ".claude/settings.json").read_text())
        assert "apiKeyHelper" in settings and "ANTHROPIC_AUTH_TOKEN" not in settings["env"]
        r = taosync("verify", "--json")
        data = json.loads(r.out)
        assert r.rc == 0, r.both
        sources = {x["clients"][0]: x["key_source"] for x in data["results"]}
        assert sources["claude-code"] == "~/.claude/settings.json apiKeyHelper"
        assert sources["codex"] == "~/.codex/config.toml model_providers.taotoken.env_key"
        assert "aider reads OPENAI_API_KEY" in sources["aider"]
        assert {x["key_source"] for x in data["results"] if x["clients"][0] == "continue"} \
            == {"~/.continue/.env TAOTOKEN_API_KEY"}
        assert {p.auth for p in stub.posts()} == {"ok"}

        dotenv = home / ".continue/.env"
        dotenv.write_text(dotenv.read_text().replace(TEST_KEY, STALE_KEY))
        r = taosync("verify")
        assert r.rc == 1
        assert said_where(r.out, "auth", "~/.continue/.env TAOTOKEN_API_KEY")
        assert "the gateway rejected the key" in r.out
        assert "~/.continue/.env differs from fleet.yaml in TAOTOKEN_API_KEY" in r.err

    assert STALE_KEY not in r.both


def test_apply_then_verify_after_apply_uses_the_same_values(taosync, home, gateway):
    """apply verifies what it wrote (the desired values, which are now on disk)."""
    (home / ".claude/settings.json").unlink()
    r = taosync("apply", "--json")
    assert r.rc == 0, r.both
    report = json.loads(r.out)
    assert report["verify"]["ok"] and report["verify"]["failed"] == 0
    assert taosync("verify").rc == 0


def test_a_value_fleet_yaml_also_has_keeps_the_fleet_fix(taosync, home, fleet_file):
    """A model the gateway does not serve, written there by fleet.yaml itself: no drift,
    so the fix is fleet.yaml's, and the file and key path the model was read from are
    still named."""
    with Stub(key=TEST_KEY, models=MODELS[:3]) as stub:
        fleet_file.write_text(fleet_file.read_text().replace(EXAMPLE_ROOT, stub.root))
        taosync("apply", "--no-verify")
        r = taosync("verify", "--only", "codex")
    assert r.rc == 1
    assert ("model_not_found: ~/.codex/batch.config.toml model: the gateway does not know "
            "model `intel/llama-7b`") in r.out
    assert "in fleet.yaml's models:" in r.out
    assert "differs from fleet.yaml" not in r.err


def test_a_client_pointed_away_from_the_gateway_fails_saying_where(taosync, home, gateway):
    edit_json(home / ".claude/settings.json", lambda d: d["env"].pop("ANTHROPIC_BASE_URL"))
    r = taosync("verify")
    assert r.rc == 1
    assert ("claude-code: ~/.claude/settings.json env: claude-code uses Anthropic's own API "
            "(no env.ANTHROPIC_BASE_URL), not the gateway") in r.err
    assert "~/.claude/settings.json differs from fleet.yaml in env.ANTHROPIC_BASE_URL" in r.err
    assert "claude-code" not in r.out  # nothing was sent for it


def test_stub_mode_probes_the_files_too_so_a_broken_one_fails(taosync, home, fleet_file):
    """--stub swaps only the gateway part of each URL for the stand-in's: a home whose
    files are right passes offline, and a doubled /v1 hand-written into one still fails."""
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("verify", "--stub")
    assert r.rc == 0, r.both
    claude_url(home, EXAMPLE_ROOT)
    r = taosync("verify", "--stub")
    assert r.rc == 1, r.both
    assert "~/.claude/settings.json env.ANTHROPIC_BASE_URL" in r.both
    assert taosync("verify", "--stub", "--desired").rc == 0
