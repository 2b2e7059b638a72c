"""Named gateways (issue 26, build 1): ``gateways:``, ``default_gateway``, a client's
``gateway:``, ``taosync use``; each client rendered, probed, redacted and cached on its own
gateway with its own key. Real files in a temporary home, HTTP only to the stand-in on
127.0.0.1, and real ``python -m taosync`` processes where the fast path answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, snapshot

KEY_A = "sk-gw-a-1111111111111111111111"
KEY_B = "sk-gw-b-2222222222222222222222"
KEY_B2 = "sk-gw-b-3333333333333333333333"
HEADER_B = "hdr-secret-b-44444444444444444"


def fleet_text(url_a: str = "http://127.0.0.1:9/api", url_b: str = "http://127.0.0.1:10/api",
               extra_b: str = "", clients: str = "  claude-code: {}\n  codex: {gateway: work}\n",
               tail: str = "") -> str:
    return f"""version: 1
# the company gateway stays the default
gateway:
  base_url: {url_a}
  key: ${{env:GW_KEY_A}}
gateways:
  work:   # my own gateway
    base_url: {url_b}
    key: ${{env:GW_KEY_B}}
    headers: {{X-Work-Auth: "${{env:GW_HEADER_B}}"}}
{extra_b}models:
  m1: {{}}
clients:
{clients}{tail}"""


def environ(**more: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TAOSYNC_", "CLAUDE_", "CODEX_", "XDG_"))}
    env.update(PYTHONPATH=str(ROOT), GW_KEY_A=KEY_A, GW_KEY_B=KEY_B, GW_HEADER_B=HEADER_B,
               NO_COLOR="1")
    env.update(more)
    return env


def cli(home: Path, fleet: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """A real process, as a shell runs taosync (the fast path answers only there)."""
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), *args], capture_output=True, text=True,
                          env=environ(**env), timeout=120, cwd=ROOT)


@pytest.fixture
def world(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(fleet_text())
    return home, fleet


def claude(home: Path) -> dict:
    return json.loads((home / ".claude/settings.json").read_text())["env"]


def codex_key(home: Path) -> str:
    return json.loads((home / ".codex/auth.json").read_text())["OPENAI_API_KEY"]


def codex_url(home: Path) -> str:
    import tomllib

    config = tomllib.loads((home / ".codex/config.toml").read_text())
    return next(iter(config["model_providers"].values()))["base_url"]


def no_secret(text: str, *secrets: str) -> None:
    for secret in (KEY_A, KEY_B, KEY_B2, HEADER_B, *secrets):
        assert secret not in text
        assert secret[4:] not in text  # no spelling of it, the prefix cut off neither
        assert json.dumps(secret)[1:-1] not in text


# -- render: each client on its own gateway -------------------------------------------

def test_each_client_renders_its_own_gateway_and_key(world):
    home, fleet = world
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 0, done.stderr
    assert claude(home)["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/api"
    assert claude(home)["ANTHROPIC_AUTH_TOKEN"] == KEY_A
    assert codex_url(home) == "http://127.0.0.1:10/api/v1"
    assert codex_key(home) == KEY_B
    assert HEADER_B in (home / ".codex/config.toml").read_text()  # its gateway's header
    assert "X-Work-Auth" not in (home / ".claude/settings.json").read_text()
    no_secret(done.stdout + done.stderr)
    state = home / ".local/state/taosync"
    for path in state.rglob("*"):
        if path.is_file() and path.suffix == ".json":
            no_secret(path.read_text())  # neither key nor header in the state or certificate


def test_only_named_gateways_and_the_default_one(tmp_path):
    """No ``gateway:`` at all: the only named gateway (or default_gateway) is the default."""
    home = tmp_path / "home"
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("""version: 1
gateways:
  home: {base_url: "http://127.0.0.1:11/api", key: "${env:GW_KEY_A}"}
  work: {base_url: "http://127.0.0.1:12/api", key: "${env:GW_KEY_B}"}
default_gateway: work
models: {m1: {}}
clients:
  claude-code: {}
  codex: {gateway: home}
""")
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 0, done.stderr
    assert claude(home)["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:12/api"
    assert claude(home)["ANTHROPIC_AUTH_TOKEN"] == KEY_B
    assert codex_url(home) == "http://127.0.0.1:11/api/v1"
    assert codex_key(home) == KEY_A


# -- bad input: located, exit 2, nothing written -----------------------------------------

@pytest.mark.parametrize("clients, tail, where, said", [
    ("  claude-code: {}\n  codex: {gateway: wrok}\n", "", "clients.codex.gateway",
     "did you mean 'work'"),
    ("  claude-code: {}\n", "default_gateway: wrk\n", "default_gateway", "did you mean 'work'"),
    ("  gemini-cli: {gateway: work}\n", "", "clients.gemini-cli",
     "needs gateways.work.gemini_base_url"),
])
def test_unknown_names_and_unmet_needs_are_located(world, clients, tail, where, said):
    home, fleet = world
    fleet.write_text(fleet_text(clients=clients, tail=tail))
    before = snapshot(home)
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 2
    assert f"{fleet}:" in done.stderr and where in done.stderr and said in done.stderr
    line = next(ln for ln in done.stderr.splitlines() if where in ln)
    assert line.split(":")[1].isdigit() and line.split(":")[2].isdigit()  # file:line:col
    assert "Traceback" not in done.stderr
    assert snapshot(home) == before


def test_default_named_twice_is_located(world):
    home, fleet = world
    fleet.write_text(fleet_text(extra_b="  default: {base_url: 'http://127.0.0.1:1/api', "
                                        "key: '${env:GW_KEY_A}'}\n"))
    done = cli(home, fleet, "validate")
    assert done.returncode == 2
    assert "gateways.default" in done.stderr and "already" in done.stderr


def test_gemini_on_a_gateway_with_its_root_is_fine(world):
    home, fleet = world
    fleet.write_text(fleet_text(extra_b="    gemini_base_url: http://127.0.0.1:10/gem\n",
                                clients="  gemini-cli: {gateway: work}\n"))
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 0, done.stderr
    env_file = (home / ".gemini/.env").read_text()
    assert "http://127.0.0.1:10/gem" in env_file and KEY_B in env_file


# -- the fast path: a key change on a non-default gateway is never "nothing to do" -------

def test_rotating_a_named_gateways_key_is_seen_from_a_shell(world):
    home, fleet = world
    assert cli(home, fleet, "apply", "--no-verify", "-y").returncode == 0
    again = cli(home, fleet, "apply", "--no-verify", "-y")
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert cli(home, fleet, "plan", "--check").returncode == 0
    rotated = cli(home, fleet, "plan", "--check", GW_KEY_B=KEY_B2)
    assert rotated.returncode == 1, rotated.stdout  # pending, not "nothing to do"
    status = cli(home, fleet, "status", GW_KEY_B=KEY_B2)
    assert status.returncode == 1
    applied = cli(home, fleet, "apply", "--no-verify", "-y", GW_KEY_B=KEY_B2)
    assert applied.returncode == 0 and "auth.json" in applied.stdout
    assert codex_key(home) == KEY_B2
    assert claude(home)["ANTHROPIC_AUTH_TOKEN"] == KEY_A
    no_secret(rotated.stdout + rotated.stderr + applied.stdout + applied.stderr
              + status.stdout + status.stderr)
    # and a changed header value of that gateway, too
    header = cli(home, fleet, "plan", "--check", GW_KEY_B=KEY_B2, GW_HEADER_B="other-value")
    assert header.returncode == 1
    assert "other-value" not in header.stdout + header.stderr


# -- taosync use ---------------------------------------------------------------------------

def test_use_switches_the_default_keeping_comments(world):
    home, fleet = world
    assert cli(home, fleet, "apply", "--no-verify", "-y").returncode == 0
    dry = cli(home, fleet, "use", "work", "--dry-run")
    assert dry.returncode == 0 and "+default_gateway: work" in dry.stdout
    assert "default_gateway" not in fleet.read_text()
    done = cli(home, fleet, "use", "work", "--no-verify", "-y")
    assert done.returncode == 0, done.stderr
    assert "switch: default gateway default → work (claude-code now on work)" in done.stdout
    text = fleet.read_text()
    assert "# the company gateway stays the default" in text and "# my own gateway" in text
    assert "default_gateway: work" in text
    assert claude(home)["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:10/api"
    assert claude(home)["ANTHROPIC_AUTH_TOKEN"] == KEY_B
    assert codex_key(home) == KEY_B
    no_secret(done.stdout + done.stderr)
    # then back, for one client only
    back = cli(home, fleet, "--json", "use", "default", "--only", "codex", "--no-verify", "-y")
    assert back.returncode == 0, back.stderr
    report = json.loads(back.stdout)
    assert report["switched"] == {"gateway": "default", "was": "work", "only": "codex",
                                  "clients": ["codex"], "stayed": [], "fleet": str(fleet),
                                  "fleet_changed": True}
    assert codex_key(home) == KEY_A and codex_url(home) == "http://127.0.0.1:9/api/v1"
    assert claude(home)["ANTHROPIC_AUTH_TOKEN"] == KEY_B


def test_use_names_the_clients_pinned_elsewhere(world):
    home, fleet = world
    fleet.write_text(fleet_text().replace("default_gateway", "") + "default_gateway: work\n")
    done = cli(home, fleet, "use", "default", "--dry-run")
    assert done.returncode == 0
    assert "codex stays on work" in done.stdout


def test_use_an_unknown_gateway_lists_them_and_writes_nothing(world):
    home, fleet = world
    before_fleet = fleet.read_text()
    before = snapshot(home)
    done = cli(home, fleet, "use", "wrok")
    assert done.returncode == 2
    assert "no gateway 'wrok' (did you mean work?); gateways: default, work" in done.stderr
    assert fleet.read_text() == before_fleet and snapshot(home) == before


def test_use_a_gateway_a_client_cannot_be_on_writes_nothing(world):
    """Gemini CLI on a gateway without gemini_base_url: the edited fleet is checked first."""
    home, fleet = world
    fleet.write_text(fleet_text(clients="  gemini-cli: {}\n",
                                tail="").replace("  key: ${env:GW_KEY_A}\n",
                                                 "  key: ${env:GW_KEY_A}\n"
                                                 "  gemini_base_url: http://127.0.0.1:9/g\n"))
    before_fleet = fleet.read_text()
    before = snapshot(home)
    done = cli(home, fleet, "use", "work", "-y")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{fleet}:" in done.stderr and "needs gateways.work.gemini_base_url" in done.stderr
    assert not list(fleet.parent.glob(".taosync-use-*"))
    assert fleet.read_text() == before_fleet and snapshot(home) == before


def test_use_only_a_client_not_in_the_fleet_is_bad_input(world):
    home, fleet = world
    done = cli(home, fleet, "use", "work", "--only", "aider")
    assert done.returncode == 2 and "not in fleet.yaml's clients" in done.stderr


# -- verify: each gateway probed with its own key -----------------------------------------

def test_verify_probes_each_gateway_with_its_own_key(world):
    from taosync.stub import Stub

    home, fleet = world
    with Stub(key=KEY_A, models=["m1"]) as a, Stub(key=KEY_B, models=["m1"]) as b:
        fleet.write_text(fleet_text(url_a=a.root, url_b=b.root))
        assert cli(home, fleet, "apply", "--no-verify", "-y").returncode == 0
        done = cli(home, fleet, "--json", "verify")
        assert done.returncode == 0, done.stdout + done.stderr
        results = {r["clients"][0]: r for r in json.loads(done.stdout)["results"]}
        assert results["claude-code"]["gateway"] == "default"
        assert results["codex"]["gateway"] == "work"
        assert results["codex"]["url"].startswith(b.root)
        assert results["claude-code"]["url"].startswith(a.root)
        human = cli(home, fleet, "verify", "--desired")
        assert human.returncode == 0, human.stdout + human.stderr
        assert "codex @work" in human.stdout
        no_secret(done.stdout + done.stderr + human.stdout + human.stderr)


# -- taosync env --------------------------------------------------------------------------

def test_env_exports_each_named_gateway(world):
    home, fleet = world
    done = cli(home, fleet, "env")
    assert done.returncode == 0, done.stderr
    assert "export TAOTOKEN_BASE_URL='http://127.0.0.1:9/api'" in done.stdout
    assert "export TAOTOKEN_WORK_BASE_URL='http://127.0.0.1:10/api'" in done.stdout
    assert "export TAOTOKEN_WORK_OPENAI_BASE_URL='http://127.0.0.1:10/api/v1'" in done.stdout
    no_secret(done.stdout + done.stderr)
    keyed = cli(home, fleet, "env", "--with-key")
    assert f"export TAOTOKEN_WORK_API_KEY='{KEY_B}'" in keyed.stdout
    assert f"export TAOTOKEN_API_KEY='{KEY_A}'" in keyed.stdout


# -- redaction: the second key and its headers in any output -------------------------------

def test_plan_hides_the_second_gateways_key_and_header(world):
    home, fleet = world
    done = cli(home, fleet, "plan")
    assert done.returncode == 0, done.stderr
    assert "auth.json" in done.stdout
    no_secret(done.stdout + done.stderr)
    cat = cli(home, fleet, "cat", str(home / ".codex/auth.json"))
    no_secret(cat.stdout + cat.stderr)


# -- use --help: every example runs, on a terminal, in a fleet that has its gateways --------

def test_every_use_help_example_runs(tmp_path):
    """Each example as written (verify included), on a terminal, against two stand-ins."""
    from on_a_terminal import run_on_a_terminal
    from taosync.stub import Stub
    from test_docs import examples

    found = examples("use")
    assert len(found) >= 3
    with Stub(key=KEY_A, models=["m1"]) as a, Stub(key=KEY_B, models=["m1"]) as b:
        for i, example in enumerate(found):
            home = tmp_path / f"home{i}"
            home.mkdir()
            fleet = tmp_path / f"fleet{i}.yaml"
            fleet.write_text(f"""version: 1
gateways:
  home: {{base_url: "{a.root}", key: "${{env:GW_KEY_A}}"}}
  work: {{base_url: "{b.root}", key: "${{env:GW_KEY_B}}"}}
default_gateway: home
models: {{m1: {{}}}}
clients:
  claude-code: {{}}
  codex: {{gateway: work}}
""")
            rc, out = run_on_a_terminal(["--home", str(home), "-c", str(fleet),
                                         *example.split()[1:]], None, env=environ())
            assert rc == 0, f"{example}: exit {rc}\n{out[-3000:]}"
            assert "switch:" in out and "Traceback" not in out
            no_secret(out)


# -- import: two gateways stay two ---------------------------------------------------------

@pytest.mark.parametrize("same_url", [False, True])
def test_import_keeps_two_gateways_apart_and_round_trips(run, home, tmp_path, monkeypatch,
                                                         same_url):
    """Claude Code on one gateway, Codex on another (another URL, or the same URL with
    another key): import proposes two gateways, each client on its own, and a plan of
    the proposal (each key exported) changes none of the URLs or keys import read."""
    from clients.helpers import KEY_ONE, KEY_TWO, edit_json, populate

    populate(home, "claude", "codex")
    if not same_url:
        cfg = home / ".codex/config.toml"
        cfg.write_text(cfg.read_text().replace("https://gw.example.com/api/v1",
                                               "https://llm.corp.example/v1"))
    edit_json(home / ".codex/auth.json", lambda d: d.update(OPENAI_API_KEY=KEY_TWO))
    r = run("import", "--json")
    data = json.loads(r.out)
    assert r.rc == 0, data["findings"]
    fleet = data["fleet"]
    name = "gw" if same_url else "corp"  # from the host: gw.example.com, llm.corp.example
    assert list(fleet["gateways"]) == [name]
    assert fleet["gateway"]["base_url"] == "https://gw.example.com/api"
    assert fleet["gateways"][name]["base_url"] == (
        "https://gw.example.com/api" if same_url else "https://llm.corp.example")
    assert fleet["clients"]["codex"]["gateway"] == name
    assert "gateway" not in fleet["clients"]["claude-code"]
    assert not [f for f in data["findings"] if f["kind"] == "conflict"]
    no_secret(r.out + r.err, KEY_ONE, KEY_TWO)
    # the round trip: each gateway's key exported, nothing import read changes
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(data["yaml"])
    monkeypatch.setenv(data["key"]["env"], KEY_ONE)
    other = fleet["gateways"][name]["key"]
    monkeypatch.setenv(other[len("${env:"):-1], KEY_TWO)
    plan = run("plan", "--json", config=proposal)
    assert plan.rc == 0, plan.both
    changed = {(f["display"], c["key"]) for f in json.loads(plan.out)["files"]
               for c in f["changes"]}
    read = {(i["file"], i["key"]) for i in data["read"] if i["what"] in ("url", "key")}
    assert read and not read & changed, read & changed


# -- doctor ----------------------------------------------------------------------------------

def test_doctor_checks_each_gateways_key_and_hides_them(world):
    home, fleet = world
    done = cli(home, fleet, "--json", "doctor")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["gateway.key"]["status"] == "ok"
    assert checks["gateways.work.key"]["status"] == "ok"
    assert "${env:GW_KEY_B}" in checks["gateways.work.key"]["detail"]
    no_secret(done.stdout + done.stderr)
    missing = cli(home, fleet, "--json", "doctor", GW_KEY_B="")
    assert missing.returncode == 1
    failed = [c for c in json.loads(missing.stdout)["checks"] if c["status"] == "fail"]
    assert any(c["name"] == "gateways.work.key" and "GW_KEY_B" in c["detail"] for c in failed)


# -- docs/gateways.md: its example fleet is what it says ------------------------------------

def test_the_docs_example_renders_as_it_says(tmp_path):
    """The fleet in docs/gateways.md: valid, Claude Code on the default gateway, Codex
    and Gemini CLI on home with home's key; ``use home --dry-run`` shows the edit."""
    text = (ROOT / "docs/gateways.md").read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    home = tmp_path / "home"
    home.mkdir()
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(example)
    keys = {"CORP_KEY": KEY_A, "TAOTOKEN_API_KEY": KEY_B}
    done = cli(home, fleet, "apply", "--no-verify", "-y", **keys)
    assert done.returncode == 0, done.stderr
    assert claude(home)["ANTHROPIC_BASE_URL"] == "https://llm.corp.example/api"
    assert claude(home)["ANTHROPIC_AUTH_TOKEN"] == KEY_A
    assert codex_url(home) == "https://taotoken.net/api/v1" and codex_key(home) == KEY_B
    gemini = (home / ".gemini/.env").read_text()
    assert "https://taotoken.net/gemini" in gemini and KEY_B in gemini
    dry = cli(home, fleet, "use", "home", "--dry-run", **keys)
    assert dry.returncode == 0 and "-default_gateway: default" in dry.stdout
    assert "+default_gateway: home" in dry.stdout


@pytest.mark.parametrize("text, where, said", [
    ("version: 1\nmodels:\n  m1: {}\n", ":1:1:", "no gateway: write gateway:"),
    ("version: 1\ngateways:\n  a: {base_url: 'http://127.0.0.1:1/api', key: '${env:GW_KEY_A}'}\n"
     "  b: {base_url: 'http://127.0.0.1:2/api', key: '${env:GW_KEY_A}'}\nmodels:\n  m1: {}\n",
     ":2:1: gateways:", "default_gateway: a"),
    ("version: 1\ngateways:\n  9bad: {base_url: 'http://127.0.0.1:1/api', key: "
     "'${env:GW_KEY_A}'}\nmodels:\n  m1: {}\n", ":3:3: gateways.9bad:", "not a gateway name"),
])
def test_a_fleet_without_a_clear_gateway_is_located(tmp_path, text, where, said):
    home = tmp_path / "home"
    home.mkdir()
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(text)
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 2 and f"{fleet}{where}" in done.stderr and said in done.stderr
    assert "Traceback" not in done.stderr and not any(home.iterdir())


# -- MCP ${gateway.key}: the gateway of the client the server is written into ---------------

def test_mcp_gateway_references_follow_each_clients_gateway(world):
    home, fleet = world
    fleet.write_text(fleet_text(tail="mcp_servers:\n  s:\n    command: echo\n"
                                     "    env: {TOK: 'Bearer ${gateway.key}', "
                                     "URL: '${gateway.base_url}'}\n"))
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 0, done.stderr
    import tomllib

    codex_env = tomllib.loads((home / ".codex/config.toml").read_text())["mcp_servers"]["s"]["env"]
    assert codex_env == {"TOK": f"Bearer {KEY_B}", "URL": "http://127.0.0.1:10/api"}
    assert (home / ".codex/config.toml").stat().st_mode & 0o077 == 0
    claude_env = json.loads((home / ".claude.json").read_text())["mcpServers"]["s"]["env"]
    assert claude_env == {"TOK": f"Bearer {KEY_A}", "URL": "http://127.0.0.1:9/api"}
    for path in (home / ".local/state/taosync").rglob("*.json"):
        no_secret(path.read_text())  # the work key inside a longer value: not in the state
    assert cli(home, fleet, "plan", "--check").returncode == 0
    rotated = cli(home, fleet, "plan", "--check", GW_KEY_B=KEY_B2)
    assert rotated.returncode == 1
    no_secret(done.stdout + done.stderr + rotated.stdout + rotated.stderr)


def test_mcp_names_a_gateway_by_name(world):
    """``${gateways.work.key}`` in a server every client gets: work's key for each, the
    file 0600, never in the state; an unknown gateway there is a located error."""
    home, fleet = world
    fleet.write_text(fleet_text(tail="mcp_servers:\n  s:\n    command: echo\n"
                                     "    env: {TOK: 'Bearer ${gateways.work.key}', "
                                     "URL: '${gateways.work.openai_base_url}', "
                                     "MINE: '${gateways.default.key}'}\n"))
    done = cli(home, fleet, "apply", "--no-verify", "-y")
    assert done.returncode == 0, done.stderr
    claude_env = json.loads((home / ".claude.json").read_text())["mcpServers"]["s"]["env"]
    assert claude_env == {"TOK": f"Bearer {KEY_B}", "URL": "http://127.0.0.1:10/api/v1",
                          "MINE": KEY_A}
    assert (home / ".claude.json").stat().st_mode & 0o077 == 0
    for path in (home / ".local/state/taosync").rglob("*.json"):
        no_secret(path.read_text())
    assert cli(home, fleet, "plan", "--check").returncode == 0
    assert cli(home, fleet, "plan", "--check", GW_KEY_B=KEY_B2).returncode == 1
    no_secret(done.stdout + done.stderr)
    fleet.write_text(fleet.read_text().replace("gateways.work.key", "gateways.wrk.key"))
    bad = cli(home, fleet, "validate")
    assert bad.returncode == 2 and "did you mean ${gateways.work.key}" in bad.stderr, bad.stderr


# -- protocols: a client on a gateway that does not serve what it speaks --------------------

@pytest.mark.parametrize("clients, ok", [
    ("  claude-code: {gateway: work}\n", False),           # Messages; work serves openai
    ("  codex: {gateway: work}\n", True),
    ("  hermes: {gateway: work, protocol: anthropic-messages}\n", False),
    ("  hermes: {gateway: work}\n", True),                  # openai-chat by default
    ("  claude-code: {}\n  codex: {gateway: work}\n", True),  # claude on default: not checked
])
def test_a_client_its_gateway_does_not_speak_for_is_located(world, clients, ok):
    home, fleet = world
    fleet.write_text(fleet_text(extra_b="    protocols: [openai]\n", clients=clients))
    done = cli(home, fleet, "validate")
    if ok:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2, done.stderr
    assert "serves only openai (its protocols:)" in done.stderr
    line = next(ln for ln in done.stderr.splitlines() if "serves only" in ln)
    assert line.startswith(f"{fleet}:") and ".gateway:" in line
