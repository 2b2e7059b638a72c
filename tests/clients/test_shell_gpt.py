"""shell-gpt: the three owned keys of .sgptrc, idempotent across sgpt's own rewrite of the
file; import; the real sgpt 1.5.1."""

from __future__ import annotations

from conftest import TEST_KEY
from contract import check_contract
from helpers import KEY, KEY_ONE, MINI, SONNET, V1, fleet, round_trip, write
from real import assert_answered, binary_or_skip, stand_in
from taosync.clients import shell_gpt
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.fleet.secrets import Secret

UA = (("User-Agent", "OpenAI/Python 2.54.0"),)


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "shell-gpt", {"model": "fast"},
                   reference_off_disk=False)


def test_shell_gpt_render(clients_env, tmp_path):
    (rc,) = shell_gpt.render(fleet(clients__shell_gpt={"model": "balanced"}), KEY, clients_env)
    assert (rc.path, rc.format, rc.secret) == (
        tmp_path / ".config" / "shell_gpt" / ".sgptrc", "keyvalue", True)
    assert rc.values == {("API_BASE_URL",): V1, ("OPENAI_API_KEY",): KEY,
                         ("DEFAULT_MODEL",): SONNET}
    assert clients_env.warnings == []


def test_shell_gpt_warnings(tmp_path):
    env = ClientEnv(home=tmp_path, environ={"DEFAULT_MODEL": "gpt-4o"})
    shell_gpt.render(fleet(secrets="reference", gateway__headers={"X": "y"}), KEY, env)
    assert [w.split(";")[0] for w in env.warnings] == [
        "shell-gpt: secrets: reference cannot keep the key off disk (the client reads it "
        "from no variable or helper)",
        "shell-gpt: no setting for extra request headers: gateway.headers (X) will not be sent",
        "shell-gpt: DEFAULT_MODEL is set in this environment and overrides the value taosync "
        "writes to ~/.config/shell_gpt/.sgptrc"]


def test_a_key_with_a_line_break_is_not_written(clients_env):
    (rc,) = shell_gpt.render(fleet(), Secret("sk-a\nsk-b"), clients_env)
    assert ("OPENAI_API_KEY",) not in rc.values and ("DEFAULT_MODEL",) in rc.values
    assert clients_env.warnings == [
        "shell-gpt: the key holds a line break, which .sgptrc cannot hold; OPENAI_API_KEY is "
        f"not written to {clients_env.home}/.config/shell_gpt/.sgptrc"]


def test_shell_gpt_probes(clients_env):
    assert shell_gpt.probes(fleet(), KEY, clients_env) == [
        ProbeSpec("shell-gpt", "fast", MINI, "openai-chat", V1, V1 + "/chat/completions",
                  "bearer", headers=UA)]


# -- sgpt's own rewrite of .sgptrc

def sgpt_rewrite(path, home) -> None:
    """What sgpt 1.5.1 does to .sgptrc on a run that misses a default (sgpt/config.py,
    observed): the keys it read, in order, comments dropped, then its defaults."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.strip().split("=", 1)
            values[key] = value
    defaults = {"CHAT_CACHE_PATH": "/tmp/chat_cache", "CACHE_PATH": "/tmp/cache",
                "DEFAULT_MODEL": "gpt-5.4-mini", "API_BASE_URL": "default",
                "ROLE_STORAGE_PATH": f"{home}/.config/shell_gpt/roles",
                "USE_LITELLM": "false", "SHELL_NAME": "auto"}
    for key, value in defaults.items():
        values.setdefault(key, value)
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def test_idempotent_and_drift_free_across_sgpts_rewrite(taosync, home):
    rc = home / ".config" / "shell_gpt" / ".sgptrc"
    write(rc, "# my settings\nDEFAULT_COLOR=cyan\n")
    assert taosync("apply", "--no-verify").rc == 0
    sgpt_rewrite(rc, home)
    text = rc.read_text()
    assert "# my settings" not in text and "CACHE_PATH=/tmp/cache" in text
    check = taosync("plan", "--check")
    assert check.rc == 0, check.both
    status = taosync("status")
    assert status.rc == 0 and "nothing to do: " in status.out and "no drift" in status.out, status.both
    assert taosync("apply", "--no-verify").rc == 0
    assert rc.read_text() == text  # nothing to change: not a byte
    assert rc.stat().st_mode & 0o077 == 0
    disk = shell_gpt.on_disk(fleet(), Secret(TEST_KEY), ClientEnv(home=home, environ={}))
    assert disk.problems == [] and disk.drift == []
    assert [(p.model, p.url) for p in disk.probes] == [(MINI, V1 + "/chat/completions")]


def test_on_disk_follows_sgpts_environment(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    env = ClientEnv(home=home, environ={"DEFAULT_MODEL": SONNET, "OPENAI_API_KEY": KEY_ONE})
    (probe,) = shell_gpt.on_disk(fleet(), Secret(TEST_KEY), env).probes
    assert probe.model == SONNET and probe.secret.reveal() == KEY_ONE


def test_shell_gpt_import_round_trip(run, home, tmp_path, monkeypatch):
    write(home / ".config/shell_gpt/.sgptrc", f"""OPENAI_API_KEY={KEY_ONE}
API_BASE_URL=https://gw.example.com/api/v1
DEFAULT_MODEL={SONNET}
CACHE_PATH=/tmp/cache
USE_LITELLM=false
""")
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    assert data["fleet"]["gateway"]["base_url"] == "https://gw.example.com/api"
    assert data["fleet"]["routes"][data["fleet"]["clients"]["shell-gpt"]["model"]] == SONNET


def test_shell_gpt_default_base_is_openai(home):
    write(home / ".config/shell_gpt/.sgptrc", "OPENAI_API_KEY=sk-x\nAPI_BASE_URL=default\n")
    obs = shell_gpt.observe(ClientEnv(home=home, environ={}))
    assert obs.urls == [] and obs.provider is not None


# -- the real sgpt

def test_real_sgpt_answers_and_its_rewrite_leaves_nothing_to_change(taosync, home, fleet_file):
    exe = binary_or_skip("TAOSYNC_TEST_SHELL_GPT_BIN", "sgpt")
    rc = home / ".config" / "shell_gpt" / ".sgptrc"
    with stand_in(taosync, fleet_file, home) as s:
        s.apply("shell-gpt", {"model": "fast"})
        before = rc.read_text()
        proc = s.run([exe, "--no-cache", "Reply with OK."])
        assert_answered(proc, s.stub, MINI)
        after = rc.read_text()
        assert after != before and after.startswith(before)  # sgpt appended its defaults
        check = taosync("plan", "--check")
        assert check.rc == 0, check.both
        assert taosync("apply", "--no-verify").rc == 0 and rc.read_text() == after
        s.stub.requests.clear()
        proc = s.run([exe, "--no-cache", "Reply with OK."])
        assert_answered(proc, s.stub, MINI)
