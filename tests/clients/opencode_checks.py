"""Checks shared by opencode and Kilo CLI (``test_opencode.py``, ``test_kilo.py``): both
write the same shape into their own JSONC file, so each check takes the client module."""

from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML

import conftest
from conftest import TEST_KEY, said_where
from helpers import KEY, MINI, R1, LLAMA, ROOT, ROUTER_ARGS, ROUTER_ENV, SONNET, V1, fleet
from real import stand_in
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.formats.registry import editor_for
from taosync.stub import Stub
from taosync.fleet.secrets import Secret

P = ("provider", "taotoken")
MODELS = [MINI, SONNET, R1, LLAMA]


def config_file(module, home: Path) -> Path:
    f = module.FLAVOR
    return home / ".config" / f.dirname / f.files[-1]


def read_jsonc(path: Path) -> dict:
    editor = editor_for("jsonc")
    return editor.get(editor.parse(path.read_text()), ())


def write_fleet(fleet_file: Path, client_id: str, entry: dict, **top) -> dict:
    """The example fleet with ``client_id`` as its only client (and top-level changes)."""
    yaml = YAML(typ="safe")
    data = yaml.load(conftest.EXAMPLE_FLEET.read_text())
    data["clients"] = {client_id: entry}
    for name, value in top.items():
        data[name] = value
    with fleet_file.open("w") as fh:
        yaml.dump(data, fh)
    return data


# -- render --------------------------------------------------------------------------------


def check_inline(module, clients_env, tmp_path) -> None:
    f = fleet(clients__opencode={"model": "balanced", "small_model": "fast"},
              clients__kilo={"model": "balanced", "small_model": "fast"})
    (patch,) = module.render(f, KEY, clients_env)
    assert patch.path == config_file(module, tmp_path)
    assert patch.format == "jsonc" and patch.secret  # the MCP server holds the key
    assert patch.skeleton == {("$schema",): module.FLAVOR.schema_url,
                              P + ("name",): "taosync gateway"}
    models = {P + ("models", m, "id"): m for m in MODELS}
    assert patch.values == {
        P + ("npm",): "@ai-sdk/openai-compatible",
        P + ("options", "baseURL"): V1,
        P + ("options", "apiKey"): KEY,
        **models,
        ("model",): f"taotoken/{SONNET}",
        ("small_model",): f"taotoken/{MINI}",
        ("mcp", "taotoken-router", "type"): "local",
        ("mcp", "taotoken-router", "command"): ["npx", *ROUTER_ARGS],
        ("mcp", "taotoken-router", "environment"): ROUTER_ENV,
    }
    assert clients_env.warnings == []


def check_options(module, clients_env) -> None:
    """small_model defaults to model; provider_id names the entry and the prefix;
    context windows become limit.context (with the limit.output the client requires);
    gateway headers go into options.headers."""
    data = {"model": "deep", "provider_id": "gw", "mcp": False}
    f = fleet(clients__opencode=data, clients__kilo=data,
              gateway__headers={"X-Team": "core"},
              models={MINI: {"context_window": 128000}, SONNET: {}, R1: {}, LLAMA: {}})
    (patch,) = module.render(f, KEY, clients_env)
    gw = ("provider", "gw")
    assert patch.values[("model",)] == patch.values[("small_model",)] == f"gw/{R1}"
    assert patch.values[gw + ("models", MINI, "limit", "context")] == 128000
    assert patch.values[gw + ("models", MINI, "limit", "output")] == 0
    assert gw + ("models", R1, "limit", "context") not in patch.values
    assert patch.values[gw + ("options", "headers")] == {"X-Team": Secret("core")}
    assert not any(k[0] == "mcp" for k in patch.values) and not patch.secret
    assert module.probes(f, KEY, clients_env) == [
        ProbeSpec(module.ID, "deep", R1, "openai-chat", V1, V1 + "/chat/completions", "bearer",
                  headers=(("X-Team", Secret("core")),))]


def check_reference_tokens(module, clients_env, tmp_path) -> None:
    f = fleet(secrets="reference")
    (patch,) = module.render(f, KEY, clients_env)
    assert patch.values[P + ("options", "apiKey")] == "{env:TAOTOKEN_API_KEY}"
    # ${gateway.key} in an MCP server's env is the same reference, not the key
    env = patch.values[("mcp", "taotoken-router", "environment")]
    assert env["TAOTOKEN_API_KEY"] == "{env:TAOTOKEN_API_KEY}"
    assert not patch.secret and not KEY.found_in(list(patch.values.values()))
    f = fleet(secrets="reference", gateway__key="${file:~/.config/tao/key}")
    (patch,) = module.render(f, KEY, clients_env)
    token = f"{{file:{tmp_path / '.config/tao/key'}}}"
    assert patch.values[P + ("options", "apiKey")] == token
    assert clients_env.warnings == []


def check_reference_fallback(module, clients_env, ref) -> None:
    f = fleet(secrets="reference", gateway__key=ref, mcp_servers={})
    (patch,) = module.render(f, KEY, clients_env)
    assert patch.values[P + ("options", "apiKey")] is KEY
    (warning,) = clients_env.warnings
    assert "inline" in warning and "sk-literal" not in warning


def check_mcp_shapes(module, clients_env) -> None:
    f = fleet(mcp_servers={
        "local": {"command": "srv", "args": ["--x"], "cwd": "/srv"},
        "remote": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}},
        "old": {"url": "https://mcp.example/sse", "transport": "sse"},
    })
    values = module.render(f, KEY, clients_env)[0].values
    mcp = {k[1:]: v for k, v in values.items() if k[0] == "mcp"}
    assert mcp == {
        ("local", "type"): "local", ("local", "command"): ["srv", "--x"],
        ("local", "cwd"): "/srv",
        ("remote", "type"): "remote", ("remote", "url"): "https://mcp.example/mcp",
        ("remote", "headers"): {"A": "b"},
        ("old", "type"): "remote", ("old", "url"): "https://mcp.example/sse",
    }


def check_locations(module, tmp_path) -> None:
    f = fleet(mcp_servers={})
    env = ClientEnv(home=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "x")},
                    sandboxed=True)
    flavor = module.FLAVOR
    assert module.render(f, KEY, env)[0].path == tmp_path / "x" / flavor.dirname / \
        flavor.files[-1]
    assert module.locations(env) == ([tmp_path / "x" / flavor.dirname], [])
    outside = ClientEnv(home=tmp_path / "h", environ={"XDG_CONFIG_HOME": "/etc/x"},
                        sandboxed=True)
    assert module.render(f, KEY, outside)[0].path == config_file(module, tmp_path / "h")
    assert any("XDG_CONFIG_HOME" in w for w in outside.warnings)
    # a file the user keeps that the client reads later (a .jsonc after the .json; for Kilo
    # also opencode.json(c) after kilo.json(c)) wins: taosync writes into the last read
    folder = tmp_path / ".config" / flavor.dirname
    folder.mkdir(parents=True)
    for name in reversed(flavor.files[:-1]):
        (folder / name).write_text("{}\n")
        env = ClientEnv(home=tmp_path, environ={})
        assert module.render(f, KEY, env)[0].path == folder / name
        assert env.probed[str(folder / name)] == "file"
    # a config merged over the global file is worth a warning
    var = flavor.overrides[0]
    env = ClientEnv(home=tmp_path, environ={var: "/elsewhere.json"})
    module.render(f, KEY, env)
    assert any(var in w for w in env.warnings)


# -- through the CLI: the user's JSONC, the client's own rewrite, removal -----------------------

USER_FILE = """{
  // my own provider, and a comment taosync must keep
  "provider": {
    "local": {"npm": "@ai-sdk/openai-compatible",
              "options": {"baseURL": "http://127.0.0.1:11434/v1"},
              "models": {"qwen": {},},},   /* trailing commas are JSONC too */
    "taotoken": {"models": {"gpt-4o-mini": {"name": "Mini (mine)"}}}
  },
  "theme": "tokyonight",
  "mcp": {"mine": {"type": "local", "command": ["my-mcp"], "enabled": false}},
}
"""


def check_user_file_kept(module, taosync, home, fleet_file) -> None:
    write_fleet(fleet_file, module.ID, {"model": "balanced", "small_model": "fast"})
    path = config_file(module, home)
    path.parent.mkdir(parents=True)
    path.write_text(USER_FILE)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    text = path.read_text()
    for kept in ("// my own provider, and a comment taosync must keep",
                 "/* trailing commas are JSONC too */", '"models": {"qwen": {},},},'):
        assert kept in text
    data = read_jsonc(path)
    assert data["theme"] == "tokyonight" and data["mcp"]["mine"]["enabled"] is False
    assert data["provider"]["taotoken"]["models"][MINI] == {"name": "Mini (mine)", "id": MINI}
    assert data["provider"]["taotoken"]["options"]["apiKey"] == TEST_KEY
    assert data["$schema"] == module.FLAVOR.schema_url
    assert path.stat().st_mode & 0o077 == 0

    # the client's own first-run rewrite ($schema; Kilo's permission) is not drift
    text = path.read_text().replace(f'"$schema": "{module.FLAVOR.schema_url}"',
                                    '"$schema": "https://example.invalid/other.json"')
    path.write_text(text.rstrip()[:-1].rstrip().rstrip(",") + ',\n  "permission": {"bash": "allow"}\n}\n')
    check = taosync("plan", "--check")
    assert check.rc == 0, (check.both, path.read_text())
    before = path.read_bytes()
    assert taosync("apply", "--no-verify").rc == 0 and path.read_bytes() == before

    # disabling gives back everything taosync owned; the user's lines stay as they were
    write_fleet(fleet_file, module.ID, {"enabled": False})
    assert taosync("apply", "--no-verify").rc == 0
    data = read_jsonc(path)
    assert TEST_KEY not in path.read_text() and "taotoken.net" not in path.read_text()
    assert data["provider"]["taotoken"] == {"models": {MINI: {"name": "Mini (mine)"}}}
    assert set(data["provider"]) == {"local", "taotoken"}
    assert "model" not in data and "small_model" not in data and set(data["mcp"]) == {"mine"}
    assert data["permission"] == {"bash": "allow"} and data["theme"] == "tokyonight"
    assert "// my own provider" in path.read_text()


def check_reference_mcp_secret(module, taosync, home, fleet_file, monkeypatch) -> None:
    """An MCP secret by ${env:} or ${file:} stays a reference the client substitutes."""
    monkeypatch.setenv("GH_TOKEN", "ghp-secret-0123456789")
    (home / "tok").write_text("tok-secret-0123456789\n")
    write_fleet(fleet_file, module.ID, {"model": "fast"}, secrets="reference", mcp_servers={
        "gh": {"url": "https://mcp.example/mcp",
               "headers": {"Authorization": "Bearer ${env:GH_TOKEN}"}},
        "tool": {"command": "tool", "env": {"TOKEN": "${file:~/tok}"}}})
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    path = config_file(module, home)
    text = path.read_text()
    assert "secret-0123456789" not in text and TEST_KEY not in text
    data = read_jsonc(path)
    assert data["mcp"]["gh"]["headers"] == {"Authorization": "Bearer {env:GH_TOKEN}"}
    assert data["mcp"]["tool"]["environment"] == {"TOKEN": f"{{file:{home / 'tok'}}}"}
    assert "reference" not in r.err and path.stat().st_mode & 0o077 != 0  # nothing inline

    # a ${cmd:} secret has no {…} form: written inline, 0600, with a warning naming it
    write_fleet(fleet_file, module.ID, {"model": "fast"}, secrets="reference", mcp_servers={
        "tool": {"command": "tool", "env": {"TOKEN": "${cmd:echo cmd-secret-0123456789}"}}})
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert read_jsonc(path)["mcp"]["tool"]["environment"] == {"TOKEN": "cmd-secret-0123456789"}
    assert path.stat().st_mode & 0o077 == 0
    assert "cannot keep the MCP secret TOKEN of server 'tool' off disk" in r.err
    assert "cmd-secret-0123456789" not in r.both


def check_reserved_provider_id(module, taosync, fleet_file, home) -> None:
    write_fleet(fleet_file, module.ID, {"model": "fast", "provider_id": "openai"})
    r = taosync("apply", "--no-verify")
    assert r.rc == 2
    assert f"clients.{module.ID}.provider_id: 'openai' is a provider built into" in r.err
    assert "Traceback" not in r.both and not (home / ".config").exists()


# -- import and verify ------------------------------------------------------------------------

IMPORTED = """{
  "$schema": "SCHEMA",
  // set up by hand
  "provider": {
    "tao": {
      "npm": "@ai-sdk/openai-compatible",
      "options": {"baseURL": "https://taotoken.net/api/v1", "apiKey": "{env:TAO_API_KEY}"},
      "models": {"claude-sonnet-4-20250514": {}, "gpt-4o-mini": {}, "o3": {}},
    },
  },
  "model": "tao/claude-sonnet-4-20250514",
  "small_model": "tao/gpt-4o-mini",
  "mcp": {
    "fs": {"type": "local", "command": ["npx", "-y", "mcp-fs"], "environment": {"A": "1"}},
    "web": {"type": "remote", "url": "https://mcp.example/mcp", "headers": {"X": "y"}},
    "off": {"type": "local", "command": ["x"], "enabled": false},
  },
}
"""


def check_import(module, run, home, tmp_path, monkeypatch) -> None:
    from helpers import KEY_ONE, imported, round_trip

    path = config_file(module, home)
    path.parent.mkdir(parents=True)
    path.write_text(IMPORTED.replace("SCHEMA", module.FLAVOR.schema_url))
    monkeypatch.delenv("TAO_API_KEY", raising=False)
    r, data = imported(run)
    assert r.rc == 0, r.err
    fleet_data = data["fleet"]
    assert fleet_data["gateway"] == {"base_url": ROOT, "key": "${env:TAO_API_KEY}"}
    entry = fleet_data["clients"][module.ID]
    assert entry["provider_id"] == "tao" and entry["secrets"] == "reference"
    assert {fleet_data["routes"].get(entry["model"], entry["model"]),
            fleet_data["routes"].get(entry["small_model"], entry["small_model"])} == \
        {SONNET, MINI}
    assert fleet_data["mcp_servers"]["fs"] == {"command": "npx", "args": ["-y", "mcp-fs"],
                                               "env": {"A": "1"}}
    assert fleet_data["mcp_servers"]["web"] == {"url": "https://mcp.example/mcp",
                                                "headers": {"X": "y"}}
    assert "off" not in fleet_data["mcp_servers"]
    assert any("'off' is disabled" in f["message"] for f in data["findings"])
    data, plan, changes = round_trip(run, tmp_path, monkeypatch, KEY_ONE)
    shown = f"~/.config/{module.FLAVOR.dirname}/{module.FLAVOR.files[-1]}"
    assert (shown, "provider.tao.options.apiKey") not in changes


def check_import_builtin_provider(module, run, home) -> None:
    from helpers import imported

    path = config_file(module, home)
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "anthropic/claude-sonnet-4"}\n')
    r, data = imported(run, "--from", module.ID)
    assert data["fleet"] is None
    (finding,) = [f for f in data["findings"] if f["topic"] == "provider"]
    assert finding["message"].startswith(f"{module.ID} uses provider 'anthropic' (no "
                                         f"options.baseURL")
    assert finding["items"][0]["key"] == "model"


def check_verify_on_disk(module, taosync, home, fleet_file) -> None:
    """verify probes the values in the file: a doubled /v1 fails naming the key path;
    a {env:} key resolves from the environment as the client would."""
    with Stub(key=TEST_KEY, models=MODELS) as stub:
        write_fleet(fleet_file, module.ID, {"model": "balanced", "small_model": "fast"},
                    gateway={"base_url": stub.root, "key": "${env:TAOTOKEN_API_KEY}"},
                    secrets="reference", mcp_servers={})
        assert taosync("apply", "--no-verify").rc == 0
        r = taosync("verify", "--json")
        assert r.rc == 0, r.both
        data = json.loads(r.out)
        shown = f"~/.config/{module.FLAVOR.dirname}/{module.FLAVOR.files[-1]}"
        assert {x["model"] for x in data["results"]} == {SONNET, MINI}
        assert {x["key_source"] for x in data["results"]} == {
            f"{shown} provider.taotoken.options.apiKey"}
        assert {p.auth for p in stub.posts()} == {"ok"}
        path = config_file(module, home)
        path.write_text(path.read_text().replace(f"{stub.root}/v1", f"{stub.root}/v1/v1"))
        r = taosync("verify")
    assert r.rc == 1
    assert said_where(r.out, "path", f"{shown} provider.taotoken.options.baseURL")
    assert f"{shown} differs from fleet.yaml in provider.taotoken.options.baseURL" in r.err


# -- the real client --------------------------------------------------------------------------

#: switches that keep a run offline (no model catalogue, update or plugin lookups); any
#: other request goes to a dead loopback proxy, so nothing leaves 127.0.0.1
OFFLINE = {
    "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
    "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off",
    "KILO_DISABLE_CODEBASE_INDEXING": "1", "KILO_DISABLE_AUTOUPDATE": "1",
}


def check_real_client(module, exe: str, taosync, home, fleet_file, secrets: str,
                      config: Path | None = None) -> list:
    """taosync apply into a home holding nothing else (or only ``config``, the file taosync
    should then write), then the client's one-shot run against the stand-in: it must print
    the stand-in's reply, having sent the fleet's key and models to /v1/chat/completions;
    its own rewrite of the file is no drift and its MCP server is started. Returns the
    requests the stand-in saw."""
    marker = home.parent / "mcp-started"
    key = "${env:TAOTOKEN_API_KEY}"
    if secrets == "file":
        (home / "gw.key").write_text(TEST_KEY + "\n")
        key = "${file:~/gw.key}"
    with stand_in(taosync, fleet_file, home, models=MODELS) as s:
        s.apply(module.ID, {"model": "balanced", "small_model": "fast"}, gateway={"key": key},
                secrets="inline" if secrets == "inline" else "reference",
                mcp_servers={"probe": {"command": "/bin/sh",
                                       "args": ["-c", f"echo started > {marker}"]}})
        proc = s.run([exe, "run", "Reply with OK."], timeout=240,
                     env={"TAOTOKEN_API_KEY": TEST_KEY, **OFFLINE})
        seen = list(s.stub.requests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "answered through the taosync stand-in gateway" in proc.stdout
    chats = [q for q in seen if q.method == "POST"]
    assert chats and {q.path for q in chats} == {"/v1/chat/completions"}
    assert {q.auth for q in chats} == {"ok"}
    assert SONNET in {q.body["model"] for q in chats}
    assert {q.body["model"] for q in chats} <= {SONNET, MINI}
    assert marker.exists(), "the client did not start the MCP server taosync wrote"
    assert read_jsonc(config or config_file(module, home)).get("$schema") == \
        module.FLAVOR.schema_url
    check = taosync("plan", "--check")
    assert check.rc == 0, check.both
    return seen


def check_doctor_version(module, taosync, fleet_file, tmp_path, monkeypatch) -> None:
    """doctor shows the binary's version when installed, and says when it is not."""
    write_fleet(fleet_file, module.ID, {"model": "fast"},
                gateway={"base_url": "http://127.0.0.1:9", "key": "${env:TAOTOKEN_API_KEY}"})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)

    def client_check():
        r = taosync("doctor", "--json")
        found = [c for c in json.loads(r.out)["checks"] if c["section"] == "clients"]
        assert [c["name"] for c in found] == [f"{module.TITLE} ({module.BINARY})"], r.both
        return found[0]

    from taosync.doctor.checks import proven_version

    missing = client_check()
    assert missing["status"] == "missing" and missing["detail"].startswith("not installed")
    exe = bin_dir / module.BINARY
    exe.write_text("#!/bin/sh\necho 9.9.9-fake\n")
    exe.chmod(0o755)
    other = client_check()
    assert other["status"] == "warn" and "9.9.9 installed" in other["detail"]
    exe.write_text(f"#!/bin/sh\necho {proven_version(module)}\n")
    installed = client_check()
    assert installed["status"] == "ok" and installed["detail"].startswith(proven_version(module))
