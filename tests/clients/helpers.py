"""Helpers shared by the client tests: the example fleet as a pydantic Fleet, a sandbox
client environment, and the import round trip (import → proposal → plan)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, TEST_KEY, Run
from taosync.engine.patch import Patch
from taosync.schema_build import Fleet
from taosync.fleet.secrets import Secret

ROOT = "https://taotoken.net/api"
V1 = ROOT + "/v1"
SONNET, MINI, R1, LLAMA = ("claude-sonnet-4-20250514", "gpt-4o-mini", "nvidia/deepseek-r1",
                           "intel/llama-7b")
KEY = Secret("sk-test-0123456789abcdef")
RAW = KEY.reveal()
EXAMPLE = YAML(typ="safe").load(EXAMPLE_FLEET.read_text())
ROUTER_ENV = {"TAOTOKEN_BASE_URL": ROOT, "TAOTOKEN_API_KEY": RAW, "TAOTOKEN_MODEL": SONNET}
ROUTER_ARGS = ["-y", "@taotoken/mcp-router"]


def fleet(**changes) -> Fleet:
    """The example fleet with top-level keys replaced; ``clients__codex=…`` sets one client.
    A registered client the example does not name gets its defaults (``{}``), so a test
    rendering every registered client renders a new one too."""
    from taosync.clients.registry import ids

    data = copy.deepcopy(EXAMPLE)
    for client_id in ids():
        data["clients"].setdefault(client_id, {})
    for name, value in changes.items():
        if name.startswith("gateway__"):
            data["gateway"][name[9:]] = value
        elif name.startswith("clients__"):
            data["clients"][name[9:].replace("_", "-")] = value
        else:
            data[name] = value
    return Fleet.model_validate(data)


def by_path(patches: list[Patch]) -> dict[Path, Patch]:
    paths = [p.path for p in patches]
    assert len(paths) == len(set(paths)), "one patch per file"
    return {p.path: p for p in patches}


FIXTURES = Path(__file__).parents[1] / "fixtures" / "import"
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


def imported(run, *args) -> tuple[Run, dict]:
    r = run("import", "--json", *args)
    assert_no_key(r.out, r.err)
    return r, json.loads(r.out)


def round_trip(run, tmp_path, monkeypatch, key_value: str, *, allow: set = frozenset(),
               mcp_values: dict[str, str] | None = None):
    """import → write the proposal → export its key variable (and the variable it names
    for each MCP secret: ``mcp_values`` maps its ``env.NAME``/``headers.NAME`` to the
    value) → plan; return both."""
    r, data = imported(run)
    proposal = tmp_path / "proposed.yaml"
    proposal.write_text(data["yaml"])
    if data["key"]["env"]:
        monkeypatch.setenv(data["key"]["env"], key_value)
    for found in data.get("mcp_secrets") or []:
        if mcp_values and found["key"] in mcp_values:
            monkeypatch.setenv(found["env"], mcp_values[found["key"]])
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
