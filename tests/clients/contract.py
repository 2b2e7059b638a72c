"""The promises every client keeps, checked the same way for each (``check_contract``).

A client's own test file (``tests/clients/test_<id>.py``) calls :func:`check_contract` with
its id and a fleet.yaml entry; the checks go through the CLI in a sandbox home, so they hold
for whatever files the client writes:

* preservation: a user's own key (and comment, where the syntax has comments) in every
  file the client writes survives ``apply``;
* idempotence: a second ``apply`` changes no byte and ``plan --check`` finds nothing;
* secrets: ``inline`` puts the key only in files without group/other access;
  ``reference`` keeps it off disk where the client can read it itself;
* removal: ``enabled: false`` gives the owned keys back (the key and the gateway URL leave
  the files), the user's keys stay;
* import round-trip: ``taosync import --from <id>`` reads back the client, URL and key
  reference without printing the key, and ``plan`` on its proposal changes none of the
  values it read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

import conftest
import helpers
from conftest import TEST_KEY

USER_VALUE = "kept-by-contract"
COMMENT = "contract: the user's own comment"
#: a user's own content, per syntax: (text, whether a comment must survive)
SEEDS = {
    "json": (json.dumps({"contractUserKey": USER_VALUE}, indent=2) + "\n", False),
    "jsonc": (f"// {COMMENT}\n" + json.dumps({"contractUserKey": USER_VALUE}, indent=2)
              + "\n", True),
    "toml": (f"# {COMMENT}\ncontract_user_key = \"{USER_VALUE}\"\n", True),
    "yaml": (f"# {COMMENT}\ncontract_user_key: {USER_VALUE}\n", True),
    "dotenv": (f"# {COMMENT}\nCONTRACT_USER_KEY={USER_VALUE}\n", True),
    "keyvalue": (f"# {COMMENT}\nCONTRACT_USER_KEY={USER_VALUE}\n", True),
    "text": (f"{USER_VALUE}\n", False),
}
#: formats whose whole file is one owned value: the user's own value is given back on
#: removal (it cannot sit next to taosync's)
WHOLE_FILE = {"text"}


def write_fleet(fleet_file: Path, client_id: str, entry: dict, *,
                secrets: str = "inline") -> None:
    """The example fleet with ``client_id`` as its only client. In reference mode its MCP
    server passes no key (an MCP server's key is written where the client needs it)."""
    yaml = YAML(typ="safe")
    data = yaml.load(conftest.EXAMPLE_FLEET.read_text())
    data["clients"] = {client_id: entry}
    data["secrets"] = secrets
    if secrets == "reference":
        for server in data.get("mcp_servers", {}).values():
            for name, value in list(server.get("env", {}).items()):
                if "${gateway.key}" in value:
                    del server["env"][name]
    with fleet_file.open("w") as fh:
        yaml.dump(data, fh)


def planned_files(taosync) -> list[dict]:
    r = taosync("plan", "--json")
    assert r.rc in (0, 1), r.both
    return json.loads(r.out)["files"]


def files_holding_key(home: Path) -> list[Path]:
    """Client files (not taosync's own state and backups) that hold the raw key."""
    return [Path(p) for p, data in client_files(home).items() if TEST_KEY.encode() in data]


def client_files(home: Path) -> dict[str, bytes]:
    """Every file under the sandbox home but taosync's own state and backups."""
    out = {}
    for dirpath, _dirs, names in os.walk(home):
        if "taosync" in Path(dirpath).relative_to(home).parts:
            continue
        for name in names:
            out[str(Path(dirpath, name))] = Path(dirpath, name).read_bytes()
    return out


def check_contract(taosync, home: Path, fleet_file: Path, client_id: str, entry: dict, *,
                   reference_off_disk: bool, gateway: str = "https://taotoken.net/api",
                   round_trip: bool = True,
                   seeds: dict[str, tuple[str, bool]] | None = None) -> None:
    """Hold ``client_id`` (configured with ``entry``) to every promise above. ``seeds``:
    file name → (the user's own content, whether it has a comment), for a file whose
    syntax the format's seed does not fit (a YAML file that is a list)."""
    write_fleet(fleet_file, client_id, entry)
    files = planned_files(taosync)
    assert files and all(client_id in f["clients"] for f in files), files

    # preservation: seed each target with the user's own content first
    seeded = {}
    for f in files:
        path = Path(f["path"])
        text, has_comment = (seeds or {}).get(path.name) or SEEDS[f["format"]]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o644)
        seeded[path] = has_comment
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    for path, has_comment in seeded.items():
        text = path.read_text()
        if path.name in {Path(f["path"]).name for f in files if f["format"] in WHOLE_FILE}:
            assert USER_VALUE not in text, f"{path} still holds the user's value"
            continue
        assert USER_VALUE in text, f"{path} lost the user's key"
        if has_comment:
            assert COMMENT in text, f"{path} lost the user's comment"

    # secrets, inline: the key is written, only where others cannot read it
    holding = files_holding_key(home)
    assert holding, "inline mode wrote the key nowhere"
    for path in holding:
        assert path.stat().st_mode & 0o077 == 0, f"{path} holds the key and is readable by others"

    # idempotence
    before = client_files(home)
    again = taosync("apply", "--no-verify")
    assert again.rc == 0, again.both
    assert client_files(home) == before, "a second apply changed a file"
    check = taosync("plan", "--check")
    assert check.rc == 0, check.both

    # import round-trip: the client, its gateway and a key reference, never the key; and
    # plan on the proposal changes none of the values import read
    if round_trip:
        r = taosync("import", "--json", "--from", client_id)
        assert TEST_KEY not in r.out + r.err
        data = json.loads(r.out)
        assert client_id in data["fleet"]["clients"], data
        assert data["fleet"]["gateway"]["base_url"] == gateway
        assert data["fleet"]["gateway"]["key"].startswith("${"), data["fleet"]["gateway"]
        with pytest.MonkeyPatch.context() as mp:
            helpers.round_trip(taosync, fleet_file.parent, mp, TEST_KEY)

    # secrets, reference: off disk where the client can read it itself
    write_fleet(fleet_file, client_id, entry, secrets="reference")
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    if reference_off_disk:
        assert files_holding_key(home) == [], "reference mode left the key on disk"
    else:
        assert all(p.stat().st_mode & 0o077 == 0 for p in files_holding_key(home))

    # removal: disabling gives the owned keys back and keeps the user's
    write_fleet(fleet_file, client_id, {**entry, "enabled": False})
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    assert files_holding_key(home) == [], "disabling left the key behind"
    for path in seeded:
        if path.exists():
            text = path.read_text()
            assert USER_VALUE in text, f"{path} lost the user's key on removal"
            assert gateway not in text, f"{path} still points at the gateway"

