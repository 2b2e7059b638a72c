"""destroy and ``enabled: false`` give every owned key back to the user's own earlier value,
key by key, even after the client rewrote its file — and never delete a value the user had.

For every client of the example fleet: the user's files hold their own value at every key
taosync will own (their own key included) → apply → the client rewrites its files the way
it does (clients.md: shell-gpt's first run, Cline's ``updatedAt``, opencode/Kilo/Qwen's
additions, reformatting) → destroy (or ``enabled: false`` and apply) → every owned key
holds the user's value again and everything the client added is still there.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY

STATE = Path(".local/state/taosync/state.json")
#: the key the user had before taosync: never deleted, never printed
USER_KEY = "sk-user-own-KEY-0123456789"


def fleet_clients() -> list[str]:
    return list(YAML(typ="safe").load(EXAMPLE_FLEET.read_text())["clients"])


def cli(home: Path, fleet: Path, *args: str, capsys=None) -> tuple[int, str]:
    """The CLI in-process on ``home`` (what conftest's ``taosync`` fixture does, any home)."""
    from taosync.cli import run

    rc = run(["--home", str(home), "-c", str(fleet), *args])
    out = capsys.readouterr() if capsys is not None else None
    return rc, (out.out + out.err) if out is not None else ""


# -- plain reading and writing of each format (not taosync's editors) ------------------


def parse(fmt: str, text: str):
    if fmt in ("json", "jsonc"):
        return json.loads(text)
    if fmt == "toml":
        return tomlkit.parse(text)
    if fmt == "yaml":
        return YAML().load(text)
    if fmt in ("dotenv", "keyvalue"):
        out = {}
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip().strip("'\"")
        return out
    assert fmt == "text", fmt
    return {"text": text.rstrip("\n")}


def dump(fmt: str, doc, indent: int = 2) -> str:
    if fmt in ("json", "jsonc"):
        return json.dumps(doc, indent=indent) + "\n"
    if fmt == "toml":
        return tomlkit.dumps(doc)
    if fmt == "yaml":
        buf = io.StringIO()
        YAML().dump(doc, buf)
        return buf.getvalue()
    if fmt in ("dotenv", "keyvalue"):
        return "".join(f"{k}={v}\n" for k, v in doc.items())
    return doc["text"] + "\n"


def walk(doc, kp_text: str):
    """(container, last segment) of a state key path in a plainly parsed document."""
    from taosync.formats.base import Match, keypath_parse

    segments = keypath_parse(kp_text)
    node = doc
    for seg in segments[:-1]:
        node = _step(node, seg, Match)
    last = segments[-1]
    if isinstance(last, Match):
        return node, next(i for i, e in enumerate(node) if str(e.get(last.field)) == last.value)
    return node, last


def _step(node, seg, match_type):
    if isinstance(seg, match_type):
        return next(e for e in node if str(e.get(seg.field)) == seg.value)
    return node[seg]


def get(doc, kp_text: str):
    node, last = walk(doc, kp_text)
    return node[last] if (isinstance(node, list) or last in node) else "<missing>"


def plain(value):
    """tomlkit/ruamel values as plain Python, to compare."""
    return json.loads(json.dumps(value, default=str))


def user_value(value, n: int, secret: bool):
    """What the user had at an owned key before taosync: of the same type, their own."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, (list, tuple)):
        return [f"user-{n}"]
    if isinstance(value, dict):
        return {"USER_TOKEN": f"{USER_KEY}-{n}"} if secret else {"user": f"user-{n}"}
    return USER_KEY if secret else f"user-{n}"


# -- how each client rewrites its own files (clients.md) --------------------------------


def sgpt_rewrite(text: str, home: Path) -> str:
    """shell-gpt 1.5.1 on its first run (sgpt/config.py ``Config``, run for real: same
    bytes): comments and blank lines dropped, every key kept in order with its value
    (stripped), each missing default appended, one ``KEY=VALUE`` per line."""
    conf = home / ".config/shell_gpt"
    defaults = {
        "CHAT_CACHE_PATH": "/tmp/chat_cache", "CACHE_PATH": "/tmp/cache",
        "CHAT_CACHE_LENGTH": "100", "CACHE_LENGTH": "100", "REQUEST_TIMEOUT": "60",
        "DEFAULT_MODEL": "gpt-5.4-mini", "DEFAULT_COLOR": "magenta",
        "ROLE_STORAGE_PATH": f"{conf}/roles", "DEFAULT_EXECUTE_SHELL_CMD": "false",
        "DISABLE_STREAMING": "false", "CODE_THEME": "dracula",
        "OPENAI_FUNCTIONS_PATH": f"{conf}/functions", "OPENAI_USE_FUNCTIONS": "true",
        "SHOW_FUNCTIONS_OUTPUT": "false", "API_BASE_URL": "default",
        "PRETTIFY_MARKDOWN": "true", "USE_LITELLM": "false", "SHELL_INTERACTION": "true",
        "OS_NAME": "auto", "SHELL_NAME": "auto",
    }
    config: dict[str, str] = {}
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.startswith("#"):
            key, value = line.strip().split("=", 1)
            config[key] = value
    for key, value in defaults.items():
        config.setdefault(key, value)
    return "".join(f"{k}={v}\n" for k, v in config.items())


CLINE_STAMP = "2031-05-06T07:08:09.010Z"


def rewrite(rel: str, fmt: str, text: str, home: Path) -> tuple[str, dict]:
    """The file as the client leaves it after its own run, and the keys it added
    (key path → value) that must survive destroy."""
    if rel == ".config/shell_gpt/.sgptrc":
        new = sgpt_rewrite(text, home)
        return new, {k: v for k, v in parse("keyvalue", new).items()
                     if k not in parse("keyvalue", text)}
    if fmt == "text":  # llm's default_model.txt: llm writes it only when told to
        return text, {}
    if fmt in ("dotenv", "keyvalue"):
        return text + "CLIENT_OWN=1\n", {"CLIENT_OWN": "1"}
    doc = parse(fmt, text)
    added: dict = {}
    if rel.endswith("providers.json"):  # Cline: its own stamp, on every save
        entry = doc["providers"]["openai-compatible"]
        entry["updatedAt"] = CLINE_STAMP
        added['providers.openai-compatible.updatedAt'] = CLINE_STAMP
    elif rel == ".config/opencode/opencode.json":
        doc = {"$schema": "https://opencode.ai/config.json", **doc}
        added['"$schema"'] = "https://opencode.ai/config.json"
    elif rel == ".config/kilo/kilo.json":
        doc = {"$schema": "https://app.kilo.ai/config.json", **doc,
               "permission": {"bash": "allow"}}
        added.update({'"$schema"': "https://app.kilo.ai/config.json",
                      "permission": {"bash": "allow"}})
    elif rel == ".qwen/settings.json":
        doc = {"$version": 4, **doc}
        added['"$version"'] = 4
    elif rel == ".claude.json":
        doc.update(numStartups=3, userID="abc123", firstStartTime="2031-01-01T00:00:00.000Z")
        added.update(numStartups=3, userID="abc123")
    elif rel == ".codex/auth.json":
        doc.update(tokens=None, last_refresh=None)
        added["last_refresh"] = None
    elif fmt in ("json", "jsonc"):  # a settings screen saves one more key, reordered
        doc = {"clientOwn": {"theme": "dark"}, **dict(reversed(list(doc.items())))}
        added["clientOwn"] = {"theme": "dark"}
    elif fmt == "toml":  # `codex mcp add` and the like append a table
        return text + '\n[client_own]\nsetting = "x"\n', {"client_own.setting": "x"}
    elif fmt == "yaml" and isinstance(doc, list):  # llm's model list: one more model
        doc.append({"model_id": "client-own", "model_name": "client-own"})
        added["[model_id=client-own].model_name"] = "client-own"
    elif fmt == "yaml":
        doc["clientOwn"] = "x"
        added["clientOwn"] = "x"
    indent = 4 if fmt in ("json", "jsonc") and not rel.endswith("providers.json") else 2
    return dump(fmt, doc, indent), added


# -- the round trip -----------------------------------------------------------------


def owned_files(home: Path) -> dict:
    return json.loads((home / STATE).read_text())["files"]


def user_files(client: str, scratch: Path, home: Path, fleet: Path, capsys) -> dict:
    """Render ``client`` into ``scratch``, and write into ``home`` the files as the user
    had them: the same shape, the user's own value at every key taosync owns. Returns
    relative path → (format, {key path: the user's value}, volatile key paths)."""
    scratch.mkdir()
    rc, out = cli(scratch, fleet, "apply", "--no-verify", "--only", client, capsys=capsys)
    assert rc == 0, out
    wanted = {}
    for n_file, (path, fs) in enumerate(sorted(owned_files(scratch).items())):
        rel = str(Path(path).relative_to(scratch))
        doc = parse(fs["format"], Path(path).read_text())
        values, volatile = {}, set()
        for n, (kp_text, owned) in enumerate(fs["owned"].items()):
            node, last = walk(doc, kp_text)
            if owned["volatile"]:
                node[last] = "2030-01-01T00:00:00.000Z"
                volatile.add(kp_text)
            else:
                node[last] = user_value(node[last], 100 * n_file + n, owned["secret"])
            values[kp_text] = plain(node[last])
        target = home / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump(fs["format"], doc))
        wanted[rel] = (fs["format"], values, volatile)
    return wanted


def files_text(home: Path, rels) -> str:
    return "".join((home / rel).read_text() for rel in rels if (home / rel).exists())


@pytest.mark.parametrize("how", ["destroy", "enabled: false"])
@pytest.mark.parametrize("client", fleet_clients())
def test_the_users_values_come_back_after_the_client_rewrote_its_files(
        client, how, tmp_path, home, fleet_file, capsys):
    wanted = user_files(client, tmp_path / "scratch", home, fleet_file, capsys)
    rc, out = cli(home, fleet_file, "apply", "--no-verify", "--only", client, capsys=capsys)
    assert rc == 0, out
    assert TEST_KEY in files_text(home, wanted)  # taosync's key went in
    added = {}
    for rel, (fmt, _values, _volatile) in wanted.items():
        path = home / rel
        new, added[rel] = rewrite(rel, fmt, path.read_text(), home)
        path.write_text(new)

    if how == "destroy":
        rc, out = cli(home, fleet_file, "destroy", "--yes", capsys=capsys)
    else:
        text = fleet_file.read_text()
        assert f"\n  {client}: {{" in text
        fleet_file.write_text(text.replace(f"\n  {client}: {{", f"\n  {client}: {{enabled: false, "))
        rc, out = cli(home, fleet_file, "apply", "--no-verify", capsys=capsys)
    assert rc == 0, out
    assert USER_KEY not in out and TEST_KEY not in out  # neither key is ever printed
    for rel, (fmt, values, volatile) in wanted.items():
        doc = parse(fmt, (home / rel).read_text())
        for kp_text, value in values.items():
            if kp_text in volatile:  # the client's own stamp: as the client left it
                continue
            assert plain(get(doc, kp_text)) == value, (rel, kp_text)
        for kp_text, value in added[rel].items():
            assert plain(get(doc, kp_text)) == value, (rel, kp_text)
        for kp_text in volatile:  # Cline ignores an entry without updatedAt
            assert get(doc, kp_text) == CLINE_STAMP, (rel, kp_text)
    assert TEST_KEY not in files_text(home, wanted)
    if how == "destroy":
        assert owned_files(home) == {}


def test_a_key_the_user_changed_after_apply_stays_theirs_and_destroy_says_so(
        tmp_path, home, fleet_file, capsys):
    sgptrc = home / ".config/shell_gpt/.sgptrc"
    sgptrc.parent.mkdir(parents=True)
    sgptrc.write_text(f"OPENAI_API_KEY={USER_KEY}\nDEFAULT_MODEL=gpt-4\n")
    assert cli(home, fleet_file, "apply", "--no-verify", "--only", "shell-gpt",
               capsys=capsys)[0] == 0
    sgptrc.write_text(sgpt_rewrite(sgptrc.read_text(), home).replace(
        "DEFAULT_MODEL=gpt-4o-mini", "DEFAULT_MODEL=my-new-model"))
    rc, out = cli(home, fleet_file, "destroy", "--yes", capsys=capsys)
    assert rc == 0, out
    assert "DEFAULT_MODEL: changed since taosync wrote it; left as it is" in out
    doc = parse("keyvalue", sgptrc.read_text())
    assert doc["DEFAULT_MODEL"] == "my-new-model" and doc["OPENAI_API_KEY"] == USER_KEY
    assert "API_BASE_URL" not in doc  # taosync's, and the user had none
    assert USER_KEY not in out and TEST_KEY not in out


def test_destroy_gives_the_users_key_back_through_a_real_process(tmp_path, home, fleet_file):
    """The same round trip through ``python -m taosync``: shell-gpt and Cline."""
    sgptrc = home / ".config/shell_gpt/.sgptrc"
    sgptrc.parent.mkdir(parents=True)
    sgptrc.write_text(f"# mine\nOPENAI_API_KEY={USER_KEY}\nAPI_BASE_URL=https://mine/v1\n")
    providers = home / ".cline/data/settings/providers.json"
    providers.parent.mkdir(parents=True)
    mine = {"version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
            "providers": {"openai-compatible": {
                "settings": {"provider": "openai-compatible", "apiKey": USER_KEY,
                             "model": "my-model", "baseUrl": "https://mine/v1"},
                "updatedAt": "2030-01-01T00:00:00.000Z", "tokenSource": "manual"}}}
    providers.write_text(json.dumps(mine, indent=2))

    def taosync(*args):
        r = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                            str(fleet_file), *args], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert USER_KEY not in r.stdout + r.stderr and TEST_KEY not in r.stdout + r.stderr
        return r

    taosync("apply", "--no-verify", "--only", "shell-gpt", "--only", "cline")
    sgptrc.write_text(sgpt_rewrite(sgptrc.read_text(), home))
    doc = json.loads(providers.read_text())
    doc["providers"]["openai-compatible"]["updatedAt"] = CLINE_STAMP
    providers.write_text(json.dumps(doc, indent=2))
    taosync("destroy", "--yes")
    sg = parse("keyvalue", sgptrc.read_text())
    assert sg["OPENAI_API_KEY"] == USER_KEY and sg["API_BASE_URL"] == "https://mine/v1"
    assert sg["CACHE_PATH"] == "/tmp/cache" and "DEFAULT_MODEL" not in sg
    doc = json.loads(providers.read_text())
    entry = doc["providers"]["openai-compatible"]
    assert entry["settings"] == mine["providers"]["openai-compatible"]["settings"]
    assert entry["updatedAt"] == CLINE_STAMP and entry["tokenSource"] == "manual"


def test_an_entry_taosync_added_goes_whole_though_the_client_stamped_it(home, fleet_file,
                                                                         capsys):
    """Cline stamps updatedAt on the provider entry taosync added: destroy still takes
    the entry away whole (a lone updatedAt fails Cline's schema, which would log the user
    out of every provider), and the user's own provider stays as it was."""
    providers = home / ".cline/data/settings/providers.json"
    providers.parent.mkdir(parents=True)
    mine = {"version": 1, "lastUsedProvider": "anthropic", "modes": {},
            "providers": {"anthropic": {"settings": {"provider": "anthropic",
                                                     "apiKey": USER_KEY, "model": "m"},
                                        "updatedAt": "2030-01-01T00:00:00.000Z",
                                        "tokenSource": "manual"}}}
    providers.write_text(json.dumps(mine, indent=2))
    assert cli(home, fleet_file, "apply", "--no-verify", "--only", "cline", capsys=capsys)[0] == 0
    doc = json.loads(providers.read_text())
    doc["providers"]["openai-compatible"]["updatedAt"] = CLINE_STAMP
    providers.write_text(json.dumps(doc, indent=2))
    rc, out = cli(home, fleet_file, "destroy", "--yes", capsys=capsys)
    assert rc == 0, out
    assert json.loads(providers.read_text()) == mine
    assert "updatedAt: changed" not in out  # the client's own stamp is no news


def test_a_state_from_before_priors_json_still_gives_the_users_key_back(home, fleet_file,
                                                                        capsys):
    """taosync before priors.json recorded a key taken over from the user's own key as
    release: delete. destroy reads the user's value from the backup of the apply that
    took it over, instead of deleting it."""
    sgptrc = home / ".config/shell_gpt/.sgptrc"
    sgptrc.parent.mkdir(parents=True)
    sgptrc.write_text(f"OPENAI_API_KEY={USER_KEY}\nAPI_BASE_URL=https://mine/v1\n")
    assert cli(home, fleet_file, "apply", "--no-verify", "--only", "shell-gpt",
               capsys=capsys)[0] == 0
    fleet_file.write_text(fleet_file.read_text().replace("shell-gpt: {model: fast}",
                                                         "shell-gpt: {model: balanced}"))
    assert cli(home, fleet_file, "apply", "--no-verify", "--only", "shell-gpt",
               capsys=capsys)[0] == 0  # a second apply: the takeover is the older one
    state_path = home / STATE
    state = json.loads(state_path.read_text())
    for record in state["applies"]:  # as the older taosync wrote it
        for entry in record["files"]:
            for owned in ((entry.get("before") or {}).get("owned") or {}).values():
                if owned["release"] == "restore-secret":
                    owned.update(release="delete", prior=None)
    for fs in state["files"].values():
        for owned in fs["owned"].values():
            if owned["release"] == "restore-secret":
                owned.update(release="delete", prior=None)
    state_path.write_text(json.dumps(state))
    (state_path.parent / "priors.json").unlink(missing_ok=True)
    sgptrc.write_text(sgpt_rewrite(sgptrc.read_text(), home))
    rc, out = cli(home, fleet_file, "destroy", "--yes", capsys=capsys)
    assert rc == 0, out
    doc = parse("keyvalue", sgptrc.read_text())
    assert doc["OPENAI_API_KEY"] == USER_KEY and doc["API_BASE_URL"] == "https://mine/v1"
    assert "DEFAULT_MODEL" not in doc and doc["CACHE_PATH"] == "/tmp/cache"
    assert USER_KEY not in out and TEST_KEY not in out
