"""No secret taosync knows of is ever printed, in any spelling, by any command.

The done-when test of issue 10's first item: a key rotation over a home where the user
had hand-pasted their own token, every command's stdout and stderr grepped for the old
key, the new key, the user's token and each of their escaped spellings. Then the
Redactor itself (truncated and upper-cased echoes, multi-line secrets, hashed past
keys) and ``--no-key`` (read-only, never writes, judges by the state's keyed hashes).
"""

from __future__ import annotations

import json

import pytest

from conftest import snapshot
from taosync.fleet.secrets import value_hash
from taosync.fleet.secrets import SENSITIVE, Redactor, Secret, redact
from taosync.formats.dotenv import _quote as dotenv_quote
from taosync.formats.toml_writer import _string as toml_string
from taosync.formats.yaml_writer import _double as yaml_double

USER_TOKEN = "user-hand-pasted-TOKEN-7777zzzz"
PLAIN = ("sk-alpha-AAAA1111aaaa2222", "sk-bravo-BBBB3333bbbb4444")
#: quotes, a backslash and a tab inside: every escaped spelling differs from the raw one
TRICKY = ('sk-alpha-"quoted"\\back\tTAB-AAAA1111', 'sk-bravo-\\"mix\tB\\BBB3333bbbb')
#: a key file copied from a .env, quotes and all, and one with a line break inside
MULTILINE = ('"sk-alpha-fromdotenv-AAAA1111"', 'sk-bravo-first-line-BBBB\nsecond-line-3333bbbb')


def spellings_to_grep(secret: str) -> set[str]:
    """Independent of the Redactor: what each writer and printer would make of it."""
    dotenv = dotenv_quote(secret)
    return {secret, json.dumps(secret)[1:-1], toml_string(secret)[1:-1],
            yaml_double(secret)[1:-1], repr(secret)[1:-1],
            dotenv[1:-1] if dotenv[:1] in "\"'" else dotenv,
            json.dumps(json.dumps(secret)[1:-1])[1:-1]}


def hand_paste_token(home) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": USER_TOKEN}}, indent=2))


@pytest.mark.parametrize("keys", [PLAIN, TRICKY, MULTILINE], ids=["plain", "escaped", "lines"])
def test_no_command_prints_any_secret_after_a_rotation(taosync, home, monkeypatch, keys):
    key_a, key_b = keys
    hand_paste_token(home)
    monkeypatch.setenv("TAOTOKEN_API_KEY", key_a)
    first = taosync("apply", "--no-verify", "-v")
    assert first.rc == 0, first.both
    outputs = {"apply -v (over the user's token)": first}

    monkeypatch.setenv("TAOTOKEN_API_KEY", key_b)
    for args in (["plan"], ["plan", "--json"], ["plan", "-v"], ["apply", "--dry-run"],
                 ["apply", "--dry-run", "--json"], ["status"], ["status", "--json"]):
        outputs[" ".join(args)] = taosync(*args)
    outputs["apply -v"] = taosync("apply", "--no-verify", "-v")
    assert outputs["apply -v"].rc == 0, outputs["apply -v"].both
    for args in (["rollback", "--dry-run"], ["rollback", "--dry-run", "--json"],
                 ["rollback", "--to", "1", "--dry-run"],
                 ["rollback", "--to", "1", "--dry-run", "--json"], ["rollback", "-v"],
                 ["plan", "--no-key"], ["plan", "--no-key", "--json"], ["status", "--no-key"],
                 ["status", "--no-key", "--json"], ["apply", "--dry-run", "--no-key"],
                 ["validate", "-v"], ["route"], ["env"], ["rollback", "--to", "1", "-v"],
                 ["status"], ["status", "--json"], ["plan", "--json"]):
        outputs[" ".join(args)] = taosync(*args)

    forbidden = set().union(*(spellings_to_grep(s) for s in (key_a, key_b, USER_TOKEN)))
    for name, run in outputs.items():
        for form in forbidden:
            assert form not in run.both, f"{name} printed {form!r}:\n{run.both}"
            assert form.lower() not in run.both.lower(), f"{name} printed {form!r} (case)"

    # the outputs still say what changed: the diffs are there, the secrets are not, and
    # nothing beside a secret (the gateway URL, model ids next to a key in an MCP server)
    for name in ("apply -v (over the user's token)", "apply -v", "rollback --to 1 --dry-run"):
        assert "https://taotoken.net/api" in outputs[name].out, outputs[name].out
        assert "claude-sonnet-4-20250514" in outputs[name].out
        assert f"{SENSITIVE}/v1" not in outputs[name].out
    rotation = outputs["apply -v"].out
    assert "ANTHROPIC_AUTH_TOKEN" in rotation
    assert SENSITIVE in rotation and redact(key_b) in rotation
    changes = {c["key"]: c for f in json.loads(outputs["plan --json"].out)["files"]
               for c in f["changes"]}
    assert changes["env.ANTHROPIC_AUTH_TOKEN"]["old"] == SENSITIVE
    assert changes["env.ANTHROPIC_AUTH_TOKEN"]["new"] == redact(key_b)
    back = json.loads(outputs["rollback --to 1 --dry-run --json"].out)
    assert any(f["diff"] and "ANTHROPIC_AUTH_TOKEN" in f["diff"] for f in back["files"])


# ---------------------------------------------------------------------------- Redactor

KEY = "sk-live-Current0123456789abcdef"


def test_redactor_hides_current_key_by_its_redacted_form_and_others_as_sensitive():
    r = Redactor(Secret(KEY))
    r.add("sk-old-Previous9876543210fedcba")
    text = r.scrub(f"now {KEY}, was sk-old-Previous9876543210fedcba")
    assert text == f"now {redact(KEY)}, was {SENSITIVE}"


def test_redactor_hides_a_truncated_or_upper_cased_echo():
    r = Redactor(Secret(KEY))
    r.add("ghp_OtherSecretValue1234567890")
    echo = ("401: invalid key SK-LIVE-CURRENT0123456789ABCDEF; "
            "got sk-live-Current01234... and Bearer ghp_OtherSecretVa (truncated)")
    text = r.scrub(echo)
    assert "CURRENT0123456789" not in text.upper().replace(redact(KEY).upper(), "")
    assert "Current01234" not in text and "OtherSecretVa" not in text
    assert "401: invalid key" in text and "(truncated)" in text
    # short pieces stay: a word of ordinary output is no secret
    assert r.scrub("Bearer sk-live") == "Bearer sk-live"


def test_redactor_hides_every_spelling_of_a_key_with_quotes_backslash_tab_newline():
    key = 'sk-"weird"\\key\twith\nnewline-1234'
    r = Redactor(Secret(key))
    for form in spellings_to_grep(key) | {ascii(key)[1:-1], key.replace("'", "''")}:
        assert form not in r.scrub(f"x = {form} ;"), form
    data = r.scrub_data({"diff": f'+  "k": {json.dumps(key)}', key: [key]})
    assert key not in json.dumps(data) and json.dumps(key)[1:-1] not in json.dumps(data)


def test_redactor_hides_each_line_of_a_multi_line_secret(tmp_path):
    passwd = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    r = Redactor(Secret(passwd.strip()))
    text = r.scrub("-  \"k\": \"root:x:0:0:root:/root:/bin/bash\"\n"
                   "+  daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    assert "root:/root" not in text and "daemon:x:1" not in text
    assert text.count(SENSITIVE) >= 2


def test_redactor_hides_a_past_key_known_only_by_its_keyed_hash():
    hmac_key = b"k" * 32
    # no token prefix, so only the hash can tell it is a key (an sk-… value is hidden
    # by its prefix alone, hash or no hash)
    past = "rotated-LongAgo00001111222233"
    r = Redactor(Secret(KEY), hmac_key=hmac_key, known_hashes=[value_hash(hmac_key, past)])
    text = r.scrub(f'backup held "{past}", and {past}.')
    assert past not in text and text.count(SENSITIVE) == 2
    # without the hashing key a hash proves nothing: nothing is hidden by it
    assert Redactor(known_hashes=[value_hash(hmac_key, past)]).scrub(past) == past


def test_state_remembers_hashes_of_every_key_written_bounded(taosync, home, monkeypatch):
    from taosync.engine.state import KEEP_SECRET_HASHES, State, StateStore

    keys = [f"sk-rotation-{i:02d}-abcdefghijkl" for i in range(3)]
    for key in keys:
        monkeypatch.setenv("TAOTOKEN_API_KEY", key)
        assert taosync("apply", "--no-verify").rc == 0
    store = StateStore(home / ".local/state/taosync")
    state = store.load()
    raw = store.state_path.read_text()
    assert all(k not in raw for k in keys)
    for key in keys:
        assert value_hash(store.hmac_key(), key) in state.secrets
    many = State(secrets=[f"{i:032x}" for i in range(KEEP_SECRET_HASHES + 10)])
    assert len(many.remembered_secrets()) == KEEP_SECRET_HASHES
    # the first key, long rotated away and in no plan, is hidden by its hash alone: the
    # user kept it beside the owned key, where the next rotation's diff shows it as context
    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["env"]["MY_OLD_KEY_BACKUP"] = keys[0]
    settings.write_text(json.dumps(data, indent=2) + "\n")
    monkeypatch.setenv("TAOTOKEN_API_KEY", "sk-rotation-03-abcdefghijkl")
    r = taosync("plan")
    assert r.rc == 0 and "MY_OLD_KEY_BACKUP" in r.out, r.out
    assert keys[0] not in r.both and f'"MY_OLD_KEY_BACKUP": "{SENSITIVE}"' in r.out


def test_error_messages_are_scrubbed_too(taosync, home, monkeypatch):
    hand_paste_token(home)
    assert taosync("apply", "--no-verify").rc == 0
    settings = home / ".claude" / "settings.json"
    settings.write_text(settings.read_text() + "} " + USER_TOKEN)  # no longer parses
    for args in (["plan"], ["status", "--json"], ["apply", "--no-verify"]):
        r = taosync(*args)
        assert r.rc == 2 and USER_TOKEN not in r.both, r.both


# ---------------------------------------------------------------------------- --no-key

def test_no_key_plan_and_status_judge_by_the_state_hash_and_write_nothing(
        taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.delenv("TAOTOKEN_API_KEY")  # CI without secrets
    before = snapshot(home)
    r = taosync("plan", "--no-key", "--check")
    assert r.rc == 0, r.both
    assert "(sensitive, unchanged)" in r.out
    js = json.loads(taosync("plan", "--no-key", "--json").out)
    assert {"env.ANTHROPIC_AUTH_TOKEN": "(sensitive, unchanged)"} in [
        f.get("sensitive") for f in js["files"]]
    assert taosync("status", "--no-key").rc == 0
    assert taosync("apply", "--dry-run", "--no-key").rc == 0
    assert snapshot(home) == before  # home and state dir (under it) alike

    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["env"]["ANTHROPIC_AUTH_TOKEN"] = USER_TOKEN
    settings.write_text(json.dumps(data, indent=2))
    before = snapshot(home)
    r = taosync("plan", "--no-key", "--check")
    assert r.rc == 1 and "(sensitive, differs)" in r.out and USER_TOKEN not in r.both
    s = taosync("status", "--no-key", "--json")
    assert s.rc == 1 and USER_TOKEN not in s.both
    assert json.loads(s.out)["sensitive"][str(settings)] == {
        "env.ANTHROPIC_AUTH_TOKEN": "(sensitive, differs)"}
    d = taosync("apply", "--dry-run", "--no-key")
    assert d.rc == 0 and "(sensitive, differs)" in d.out and USER_TOKEN not in d.both
    assert snapshot(home) == before


def test_no_key_apply_without_dry_run_is_a_usage_error(taosync, home):
    before = snapshot(home)
    r = taosync("apply", "--no-key")
    assert r.rc == 2 and "--dry-run" in r.err and "Traceback" not in r.both
    assert snapshot(home) == before


def test_no_key_errors_do_not_claim_anything_about_writing(taosync, home, monkeypatch):
    assert taosync("apply", "--no-verify").rc == 0
    monkeypatch.delenv("TAOTOKEN_API_KEY")
    (home / ".codex" / "config.toml").write_text("model = [unclosed\n")
    for args in (["plan", "--no-key"], ["status", "--no-key"], ["apply", "--dry-run", "--no-key"]):
        r = taosync(*args)
        assert r.rc == 2, r.both
        assert "config.toml" in r.err
        assert "nothing was written" not in r.err and "changed nothing" not in r.err, r.err


# ---------------------------------------------------------------------------- watch

from test_watch import watch  # noqa: E402,F401  (the started-Watcher fixture)


def test_watch_never_prints_a_hand_pasted_token_it_reasserts_over(watch, home):
    h = watch()
    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    token = TRICKY[0]  # quotes, a backslash, a tab: escaped differently in every format
    data["env"]["ANTHROPIC_AUTH_TOKEN"] = token
    settings.write_text(json.dumps(data, indent=2))
    e = h.wait_event("drift")
    h.settle()
    assert e.data["action"] == "reasserted"
    assert [c["old"] for c in e.data["changes"]] == [SENSITIVE]
    printed = "\n".join(json.dumps(e.to_dict(), default=str, ensure_ascii=False) + e.message
                        for e in h.events)
    for form in spellings_to_grep(token):
        assert form not in printed, form


def test_a_whole_file_as_the_key_never_prints_its_lines(taosync, home, fleet_file):
    """``${file:/etc/passwd}`` by mistake: the key is that file, every line a secret."""
    lines = ["root:x:0:0:root:/root:/bin/bash",
             "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
             "alice:x:1000:1000:Alice,,,:/home/alice:/bin/zsh"]
    passwd = home / "passwd"
    passwd.write_text("\n".join(lines) + "\n")
    fleet_file.write_text(fleet_file.read_text().replace(
        "${env:TAOTOKEN_API_KEY}", "${file:~/passwd}"))
    runs = [taosync("apply", "--no-verify", "-v"), taosync("plan", "--json"),
            taosync("status", "--json"), taosync("validate", "-v"),
            taosync("rollback", "--dry-run"), taosync("rollback", "--dry-run", "--json")]
    for run in runs:
        assert "Traceback" not in run.both
        for line in lines:
            for form in spellings_to_grep(line):
                assert form not in run.both, f"{form!r} in\n{run.both}"
    assert runs[0].rc == 0, runs[0].both


@pytest.mark.parametrize("keys", [PLAIN, TRICKY], ids=["plain", "escaped"])
def test_verify_stats_doctor_and_import_never_print_a_key_a_gateway_echoes(
        taosync, home, fleet_file, monkeypatch, keys):
    """The files hold key A, the fleet now resolves key B, and the stand-in gateway knows
    only B and echoes the key it got in its 401 body (as some gateways do): verify of the
    files fails with A echoed back, and no output of any command holds A, B or the
    user's token in any spelling."""
    from taosync.stub import Stub

    key_a, key_b = keys
    hand_paste_token(home)
    with Stub(key=key_b, models=["gpt-4o-mini", "claude-sonnet-4-20250514",
                                 "nvidia/deepseek-r1", "intel/llama-7b"]) as stub:
        fleet_file.write_text(fleet_file.read_text()
                              .replace("https://taotoken.net/api", stub.root)
                              .replace("timeout: 20}", "timeout: 5, retries: 0}"))
        monkeypatch.setenv("TAOTOKEN_API_KEY", key_a)
        assert taosync("apply", "--no-verify").rc == 0
        monkeypatch.setenv("TAOTOKEN_API_KEY", key_b)
        outputs = {}
        for args in (["verify"], ["verify", "-v"], ["verify", "--json"],
                     ["verify", "--desired"], ["verify", "--desired", "--json"],
                     ["stats"], ["stats", "--json"], ["doctor"], ["doctor", "--json"],
                     ["import"], ["import", "--json"]):
            outputs[" ".join(args)] = taosync(*args)
    assert outputs["verify"].rc == 1, outputs["verify"].both  # A is stale: 401
    assert outputs["verify --desired"].rc == 0, outputs["verify --desired"].both
    forbidden = set().union(*(spellings_to_grep(s) for s in (key_a, key_b, USER_TOKEN)))
    for name, run in outputs.items():
        for form in forbidden:
            assert form not in run.both, f"{name} printed {form!r}:\n{run.both}"
            assert form.lower() not in run.both.lower(), f"{name} printed {form!r} (case)"
