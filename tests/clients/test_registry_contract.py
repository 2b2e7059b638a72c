"""The contract over the registry: every client ``taosync.clients.registry.ids()`` names —
not a hand-kept list — is held to the same promises, with this suite's own fleet
(``tests/fixtures/fleet/contract.yaml``), never the shipped example:

* render → read back: what the client's ``observe`` reads from the files apply wrote gives
  back the fleet's URL, key (or its reference) and every slot's model;
* import round trip: ``taosync import --from <id>`` proposes the same gateway, a key
  reference and slots that name the same models, and ``plan`` on the proposal changes
  none of the values it read;
* secrets, for the gateway key and each MCP secret (an ``env`` value and a header):
  ``inline`` writes each, only into files no one else can read; ``reference`` writes each
  as a reference, or names it in a warning of that client (never silently inline);
* gateway headers: written, or a warning of that client says it cannot send them;
* destroy: the home comes back byte for byte, a user's own files (and their content in
  the files taosync edits) kept.

A client whose module says ``MCP = False`` is held to "no MCP secret anywhere" instead;
an app whose module says ``GATEWAY = False`` (it takes only MCP servers: Cursor, Zed, …)
is held to "nothing of the gateway in its files" (no URL, key, slot or gateway header),
and its import round trip goes with a gateway client that has no MCP, so every MCP
server the proposal holds comes from the app. The rest of the per-client checks are
``contract.check_contract`` (each client's own test file). A new client entered in the
registry is checked here without a line added.
"""

from __future__ import annotations

import json
import os
import stat
import typing
from pathlib import Path

import pytest
from ruamel.yaml import YAML

import helpers
from conftest import TEST_KEY
from contract import SEEDS, client_files
from taosync.clients import registry
from taosync.clients.base import ClientEnv
from taosync.fleet.logic import SLOT, SLOT_LIST, SLOT_MAP
from taosync.importer.findings import url_root

FLEET = Path(__file__).parents[1] / "fixtures" / "fleet" / "contract.yaml"
ROUTES = ("main", "small", "big")  # each names a model of its own in FLEET
ROOT = "https://gw.contract.example/api"
ENV_TOKEN = "envtok-CONTRACT-env-0123456789abcdef"  # mcp_servers.local.env
HEADER_TOKEN = "hdrtok-CONTRACT-header-0123456789abcd"  # mcp_servers.remote.headers
GATEWAY_HEADER = ("X-Contract-Gateway", "gwhdr-CONTRACT-0123456789")
#: each MCP secret of FLEET: the name a warning must give it → its value
MCP_SECRETS = {"CONTRACT_ENV_TOKEN": ENV_TOKEN, "Authorization": HEADER_TOKEN}
#: the server of FLEET each MCP secret belongs to
SERVER_OF = {"CONTRACT_ENV_TOKEN": "local", "Authorization": "remote"}
#: reference mode's "env file" form: the client's config holds a reference
#: (``${{ secrets.NAME }}``) and the value goes to the client's own secret file, 0600
#: (README, Secrets). Not yet declared by the client module: it belongs in its declaration.
SECRET_FILES = {"continue": {".continue/.env"}}
STATE = ".local/state/taosync"

IDS = registry.ids()


def has_mcp(client_id: str) -> bool:
    """The registry's own declaration (``MCP``; clients/plugin.py gives its default)."""
    return registry.get(client_id).MCP


def has_gateway(client_id: str) -> bool:
    """The registry's own declaration (``GATEWAY``; clients/plugin.py gives its default)."""
    return registry.get(client_id).GATEWAY


#: the gateway client an MCP-only app is imported with: the first with no MCP of its own
COMPANION = next(i for i in IDS if has_gateway(i) and not has_mcp(i))


def entry(client_id: str) -> dict:
    """A fleet entry setting every slot the client declares (``OPTIONS``), cycling through
    the routes so that each slot read back proves which one it was written from."""
    out: dict = {}
    slots = [o for o in registry.get(client_id).OPTIONS if o.slot]
    for i, option in enumerate(slots):
        route = ROUTES[i % len(ROUTES)]
        if option.slot == SLOT:
            out[option.name] = route
        elif option.slot == SLOT_LIST:
            out[option.name] = [route]
        elif option.slot == SLOT_MAP:  # dict[Literal[names], str]: its first name
            first = typing.get_args(typing.get_args(option.type)[0])[0]
            out[option.name] = {first: route}
    return out


def expected_slots(client_id: str, data: dict) -> dict[str, str]:
    """Observation slot name (clients/base.py ``Observation``) → the model written there."""
    routes = data["routes"]
    out = {}
    for name, value in entry(client_id).items():
        if isinstance(value, list):
            out.update({f"{name}[{r}]": routes[r] for r in value})
        elif isinstance(value, dict):
            out.update({f"{name}.{k}": routes[r] for k, r in value.items()})
        else:
            out[name] = routes[value]
    return out


def fleet_data(client_id: str, secrets: str = "inline", *, headers: bool = False) -> dict:
    data = YAML(typ="safe").load(FLEET.read_text())
    data["clients"] = {client_id: entry(client_id)}
    data["secrets"] = secrets
    if headers:
        data["gateway"]["headers"] = dict([GATEWAY_HEADER])
    return data


@pytest.fixture
def fleet_file(tmp_path, monkeypatch) -> Path:
    """This suite's fleet (overrides conftest's copy of the example), MCP tokens set."""
    monkeypatch.setenv("CONTRACT_ENV_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("CONTRACT_HEADER_TOKEN", HEADER_TOKEN)
    path = tmp_path / "contract.yaml"
    path.write_text(FLEET.read_text())
    return path


def write_fleet(fleet_file: Path, data: dict) -> None:
    with fleet_file.open("w") as fh:
        YAML().dump(data, fh)


def apply(taosync, fleet_file: Path, data: dict):
    write_fleet(fleet_file, data)
    r = taosync("apply", "--no-verify")
    assert r.rc == 0, r.both
    for secret in (TEST_KEY, ENV_TOKEN, HEADER_TOKEN):
        assert secret not in r.both, "a secret was printed"
    return r


def warnings_of(client_id: str, err: str) -> list[str]:
    """The warning lines naming ``client_id``: alone, or among the clients of a shared
    one (``warning: claude-code, codex: …``)."""
    return [line for line in err.splitlines() if line.startswith("warning: ")
            and client_id in line[len("warning: "):].partition(": ")[0].split(", ")]


def left_out(client_id: str, server: str, err: str) -> bool:
    """Whether the client said it left MCP server ``server`` out (Claude Desktop's file
    takes no remote server)."""
    return any(f"MCP server {server!r}" in w and "left it out" in w
               for w in warnings_of(client_id, err))


def holding(home: Path, value: str) -> list[str]:
    """The client files (home-relative) that hold ``value``."""
    return sorted(str(Path(p).relative_to(home)) for p, data in client_files(home).items()
                  if value.encode() in data)


def tree(home: Path) -> dict[str, tuple]:
    """Every file and directory but taosync's state: (kind, mode, bytes)."""
    out = {}
    for dirpath, dirs, files in os.walk(home):
        for name in dirs + files:
            p = Path(dirpath, name)
            rel = str(p.relative_to(home))
            if rel == STATE or rel.startswith(STATE + "/") or STATE.startswith(rel + "/"):
                continue
            st = p.lstat()
            out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                        p.read_bytes() if p.is_file() else None)
    return out


# -- render → read back ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["inline", "reference"])
@pytest.mark.parametrize("client_id", IDS)
def test_what_render_writes_reads_back(client_id, mode, taosync, home, fleet_file):
    data = fleet_data(client_id, mode, headers=True)
    r = apply(taosync, fleet_file, data)
    obs = registry.get(client_id).observe(
        ClientEnv(home=home, environ=dict(os.environ), platform="linux"))
    assert obs.problems == [], obs.problems
    if not has_gateway(client_id):  # an app that takes only MCP servers
        assert (obs.urls, obs.keys, obs.key_envs, obs.slots, obs.headers) == \
            ([], [], [], {}, []), obs
        assert holding(home, GATEWAY_HEADER[1]) == [] and holding(home, TEST_KEY) == []
        for name in set(data["mcp_servers"]) - set(obs.mcp_servers):
            assert left_out(client_id, name, r.err), \
                f"{client_id}: MCP server {name} neither written nor warned about"
        assert obs.mcp_servers, f"{client_id}: read back no MCP server"
        return

    # the URL: the gateway root as this client's protocol spells it
    assert obs.urls, f"{client_id}: read back no gateway URL"
    for seen in obs.urls:
        if obs.protocol == "gemini":
            assert seen.value.rstrip("/") == data["gateway"]["gemini_base_url"], seen
        else:
            assert url_root(seen.value, obs.protocol)[0] == ROOT, seen

    # the key: the literal one inline; under reference the literal one (warned about)
    # or where the client reads it from
    literal = [s for s in obs.keys if s.value.reveal() == TEST_KEY]
    assert all(s.value.reveal() == TEST_KEY for s in obs.keys), "read back another key"
    if mode == "inline":
        assert literal, f"{client_id}: the key written inline does not read back"
    else:
        assert literal or obs.key_envs or obs.key_helper, \
            f"{client_id}: reference mode reads back no key and no reference to one"

    # every slot: the model of the route it was set to
    for slot, model in expected_slots(client_id, data).items():
        assert [s.value for s in obs.slots.get(slot, [])][:1] == [model], (slot, obs.slots)

    # the gateway headers, where the client can send them
    if not any("headers" in w for w in warnings_of(client_id, r.err)):
        assert dict([GATEWAY_HEADER]) in [s.value for s in obs.headers], obs.headers

    # the MCP servers, where the client takes them
    if has_mcp(client_id):
        assert set(obs.mcp_servers) == set(data["mcp_servers"]), obs.mcp_servers
    else:
        assert obs.mcp_servers == {}


# -- import round trip ----------------------------------------------------------------


@pytest.mark.parametrize("client_id", IDS)
def test_import_round_trip(client_id, taosync, home, fleet_file, tmp_path):
    if not has_gateway(client_id):
        return mcp_app_round_trip(client_id, taosync, fleet_file, tmp_path)
    data = fleet_data(client_id)
    apply(taosync, fleet_file, data)
    r, got = helpers.imported(taosync, "--from", client_id)
    assert TEST_KEY not in r.both
    proposed = got["fleet"]
    assert list(proposed["clients"]) == [client_id], proposed["clients"]
    assert proposed["gateway"]["base_url"] == ROOT, proposed["gateway"]
    assert proposed["gateway"]["key"].startswith("${"), proposed["gateway"]
    # each slot names (as a route or a model id) the model fleet.yaml gave it
    imported = proposed["clients"][client_id] or {}
    routes = proposed.get("routes") or {}

    def model(name):
        target = routes.get(name, name)
        return target if isinstance(target, str) else target["candidates"][0]

    for name, value in entry(client_id).items():
        assert name in imported, (name, imported)
        got_value = imported[name]
        if isinstance(value, list):
            assert [model(v) for v in got_value] == [data["routes"][v] for v in value]
        elif isinstance(value, dict):
            for k, v in value.items():
                assert model(got_value[k]) == data["routes"][v], (name, k, got_value)
        else:
            assert model(got_value) == data["routes"][value], (name, got_value)
    with pytest.MonkeyPatch.context() as mp:
        helpers.round_trip(taosync, tmp_path, mp, TEST_KEY, mcp_values={
            "env.CONTRACT_ENV_TOKEN": ENV_TOKEN, "headers.Authorization": f"Bearer {HEADER_TOKEN}"})


def mcp_app_round_trip(client_id, taosync, fleet_file, tmp_path):
    """An app that takes only MCP servers, imported with a gateway client that has none:
    the proposal enables the app and holds every MCP server it read from the app's
    file, and plan on it changes nothing the import read."""
    data = fleet_data(COMPANION)
    data["clients"][client_id] = {}
    r = apply(taosync, fleet_file, data)
    written = {name for name in data["mcp_servers"] if not left_out(client_id, name, r.err)}
    r, got = helpers.imported(taosync, "--from", COMPANION, "--from", client_id)
    proposed = got["fleet"]
    assert set(proposed["clients"]) == {COMPANION, client_id}, proposed["clients"]
    assert set(proposed.get("mcp_servers") or {}) == written, proposed.get("mcp_servers")
    with pytest.MonkeyPatch.context() as mp:
        # the proposal keeps "Bearer " and names a variable for the token alone
        _, plan, _ = helpers.round_trip(taosync, tmp_path, mp, TEST_KEY, mcp_values={
            "env.CONTRACT_ENV_TOKEN": ENV_TOKEN, "headers.Authorization": HEADER_TOKEN})
    assert not [f for f in plan["files"] if client_id in f["clients"] and f["changes"]], \
        f"plan on the proposal changes {client_id}'s MCP entries"


# -- secrets: the key and every MCP secret, both modes -------------------------------


@pytest.mark.parametrize("client_id", IDS)
def test_inline_writes_every_secret_only_where_no_one_else_reads(client_id, taosync, home,
                                                                 fleet_file):
    r = apply(taosync, fleet_file, fleet_data(client_id))
    secrets = {"the key": TEST_KEY} if has_gateway(client_id) else {}
    if not has_gateway(client_id):
        assert holding(home, TEST_KEY) == [], f"{client_id} takes no gateway, yet holds the key"
    if has_mcp(client_id):  # each of a server the client takes (else it says why not)
        secrets.update({name: value for name, value in MCP_SECRETS.items()
                        if not left_out(client_id, SERVER_OF[name], r.err)})
    else:
        for name, value in MCP_SECRETS.items():
            assert holding(home, value) == [], f"{client_id} has no MCP, yet holds {name}"
    for name, value in secrets.items():
        files = holding(home, value)
        assert files, f"{client_id}: inline mode wrote {name} nowhere"
        for rel in files:
            mode = stat.S_IMODE((home / rel).stat().st_mode)
            assert mode & 0o077 == 0, f"{rel} holds {name} and is mode {mode:o}"


@pytest.mark.parametrize("client_id", IDS)
def test_reference_writes_each_secret_as_a_reference_or_warns(client_id, taosync, home,
                                                              fleet_file):
    r = apply(taosync, fleet_file, fleet_data(client_id, "reference"))
    warned = warnings_of(client_id, r.err)
    store = SECRET_FILES.get(client_id, set())
    on_disk = [rel for rel in holding(home, TEST_KEY) if rel not in store]
    if on_disk:
        assert any("the key" in w for w in warned), \
            f"{client_id}: secrets: reference wrote the key into {on_disk} with no warning"
    for name, value in MCP_SECRETS.items():
        on_disk = holding(home, value)
        if on_disk:
            assert has_mcp(client_id), f"{client_id} has no MCP, yet holds {name}"
            assert any(name in w for w in warned), \
                f"{client_id}: secrets: reference wrote the MCP secret {name} into " \
                f"{on_disk} with no warning naming it"
        for rel in on_disk:
            assert stat.S_IMODE((home / rel).stat().st_mode) & 0o077 == 0, rel


# -- gateway headers ------------------------------------------------------------------


@pytest.mark.parametrize("client_id", IDS)
def test_gateway_headers_are_written_or_said_to_be_unsendable(client_id, taosync, home,
                                                              fleet_file):
    r = apply(taosync, fleet_file, fleet_data(client_id, headers=True))
    name, value = GATEWAY_HEADER
    written = holding(home, value)
    warned = [w for w in warnings_of(client_id, r.err) if "headers" in w]
    if not has_gateway(client_id):  # it never talks to the gateway: nothing to send
        assert not written, f"{client_id} takes no gateway, yet holds gateway.headers"
        return
    assert written or warned, f"{client_id}: gateway.headers neither written nor warned about"
    if written:
        assert any(name.encode() in (home / rel).read_bytes() for rel in written)
        assert not warned, f"{client_id} wrote the headers and says it cannot: {warned}"


# -- destroy round trip, the user's files kept ----------------------------------------


@pytest.mark.parametrize("seeded", [False, True], ids=["fresh-home", "user-files"])
@pytest.mark.parametrize("client_id", IDS)
def test_destroy_gives_the_home_back_byte_for_byte(client_id, seeded, taosync, home,
                                                   fleet_file):
    data = fleet_data(client_id)
    write_fleet(fleet_file, data)
    plan = taosync("plan", "--json")
    assert plan.rc in (0, 1), plan.both
    targets = [(Path(f["path"]), f["format"]) for f in json.loads(plan.out)["files"]]
    assert targets, f"{client_id} plans no file"
    if seeded:  # the user's own content in each target, and a file of theirs beside it
        for path, fmt in targets:
            text = SEEDS[fmt][0]
            if fmt == "yaml" and path.name == "extra-openai-models.yaml":
                text = "- model_id: users-own\n  model_name: users-own\n"  # llm: a list
            helpers.write(path, text).chmod(0o640)
            helpers.write(path.parent / "users-own-notes.txt", "mine\n")
    before = tree(home)

    apply(taosync, fleet_file, data)
    if seeded:
        after_apply = tree(home)
        for rel, (kind, _mode, content) in before.items():
            if rel.endswith("users-own-notes.txt"):
                assert after_apply[rel][2] == content, f"apply touched {rel}"

    r = taosync("destroy", "--yes")
    assert r.rc == 0, r.both
    assert tree(home) == before, f"{client_id}: destroy did not give the home back"
