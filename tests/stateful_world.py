"""The world tests/test_stateful.py drives: a temp home, a fleet (with an included team
file), a stand-in gateway on loopback, and real ``python -m taosync`` processes.

Kept apart from the state machine so the machine reads as its rules and invariants.
Everything here is an *oracle* of its own: files are read back with the standard
library (json, tomllib) and ruamel's safe loader, never with taosync's editors, and the
expected owned values come from a fresh render in this process (no render cache, no
planner, no drift code), so "in sync" is checked against something other than the claim.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent

#: every exit code README documents (0 ok, 1 problem found, 2 bad input, 3 could not
#: write, 70 internal error)
DOCUMENTED_EXIT_CODES = {0, 1, 2, 3, 70}

# -- lane profiles: where the profiles' roots and states sit under the home (no XDG
# variable inside it); the user scope is everything else
PROFILE_AREAS = (".local/share/taosync/profiles/", ".local/state/taosync/profiles/")

MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "gpt-4.1", "nvidia/deepseek-r1",
          "intel/llama-7b"]
#: client → its slots (routes); gemini-cli stays on ``fast``, which never gets candidates
CLIENTS = {
    "claude-code": {"model": "balanced", "haiku": "fast"},
    "codex": {"model": "fast"},
    "cline": {"model": "balanced"},
    "continue": {"roles": {"chat": "balanced", "autocomplete": "fast"}},
    "shell-gpt": {"model": "fast"},
    "qwen-code": {"model": "balanced"},
    "gemini-cli": {"model": "fast"},
    "hermes": {"model": "balanced"},
    "droid": {"model": "balanced", "spec_model": "fast"},
    "pi": {"model": "balanced"},
}
KEY_VAR, MCP_VAR, TEAM_VAR = "ST_GATEWAY_KEY", "ST_MCP_TOKEN", "ST_TEAM"
#: the key in the OS keyring (issue 27): service and user of ``${keyring:…}``, stored by
#: ``taosync secret set`` into a real file backend (keyrings.alt) outside the home
KEYRING_SERVICE, KEYRING_USER = "taosync-stateful", "gateway"
KEYRING_REFERENCE = f"${{keyring:{KEYRING_SERVICE}/{KEYRING_USER}}}"
KEYRING_BACKEND = "keyrings.alt.file.PlaintextKeyring"


@dataclass(frozen=True)
class Chain:
    """Where a client with in-client failover keeps one slot's model and its fallback
    chain (home-relative file, its format, the key paths), and how the chain is read
    as model ids (Hermes' ``fallback_providers`` entries are maps)."""

    slot: str
    file: str
    fmt: str
    chosen: tuple
    fallbacks: tuple
    models: Callable[[object], list] = list


#: client → its fallback chain; the invariant: the chain on disk is the slot's route's
#: candidates but the model the file chose, in order (none for a plain route, or with
#: ``failover: false``)
CHAINS = {
    "claude-code": Chain("model", ".claude/settings.json", "json", ("env", "ANTHROPIC_MODEL"),
                         ("fallbackModel",)),
    "hermes": Chain("model", ".hermes/config.yaml", "yaml", ("model", "default"),
                    ("fallback_providers",),
                    lambda entries: [e.get("model") for e in entries or []]),
}


def secret(kind: str, n: int) -> str:
    """A secret no output could hold by chance (upper and lower case, so no hash or hex
    id matches it); ``kind`` says whose it is, ``n`` makes each one new."""
    return f"{kind}-{n:03d}QxZ{kind.upper()}vWk{n * 7919 % 100000:05d}Tq"


def spellings(value: str) -> set[str]:
    """How a secret could show up in text: as it is, JSON-escaped, URL-encoded, and its
    middle (a redacted form shows at most the first 3 and last 4 characters)."""
    return {value, json.dumps(value)[1:-1], urllib.parse.quote(value, safe=""),
            value[4:-5]}


def safe_yaml():
    return YAML(typ="safe", pure=True)


def dump_yaml(data) -> str:
    import io

    y = YAML(typ="safe", pure=True)
    y.default_flow_style = False
    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()


def client_location_vars() -> list[str]:
    from taosync.clients.registry import all as all_clients

    return [var for mod in all_clients().values()
            for var in (*mod.LOCATION_VARS, *getattr(mod, "LOCATION_FILES", ()))]


@dataclass
class Ran:
    """One finished taosync process."""

    args: tuple[str, ...]
    rc: int
    out: str
    err: str
    fast: bool  # answered by the fast path (taosync.cli never imported)

    @property
    def words(self) -> tuple[int, str, str]:
        return self.rc, self.out, self.err

    def __str__(self) -> str:
        return (f"$ taosync {' '.join(self.args)}  → exit {self.rc}"
                f"{' (fast path)' if self.fast else ''}\n--- stdout\n{self.out}--- stderr\n"
                f"{self.err}")


# -- reading client files back, independently of taosync's editors ---------------------


MISSING = object()


def read_doc(path: Path, fmt: str):
    """The file as plain data, or MISSING when it does not exist."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return MISSING
    if fmt in ("json", "jsonc"):
        return json.loads(text) if text.strip() else {}
    if fmt == "toml":
        return tomllib.loads(text)
    if fmt == "yaml":
        return safe_yaml().load(text) or {}
    if fmt in ("dotenv", "keyvalue"):
        out = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            name, _, value = line.removeprefix("export ").partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[name.strip()] = value
        return out
    if fmt == "text":
        return text
    raise AssertionError(f"no reader for format {fmt}")


def get_path(doc, keypath):
    """The value at a taosync key path (str segments, Match segments) in plain data."""
    node = doc
    for seg in keypath:
        if isinstance(seg, str):
            if not isinstance(node, dict) or seg not in node:
                return MISSING
            node = node[seg]
        else:  # formats.base.Match
            if not isinstance(node, list):
                return MISSING
            hits = [e for e in node if isinstance(e, dict) and e.get(seg.field) == seg.value]
            if not hits:
                return MISSING
            node = hits[0]
    return node


def reveal(value):
    """A render value with every Secret replaced by what it stands for."""
    if hasattr(value, "reveal"):
        return value.reveal()
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [reveal(v) for v in value]
    return value


def holds_secret(value) -> bool:
    if hasattr(value, "reveal"):
        return True
    if isinstance(value, dict):
        return any(holds_secret(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_secret(v) for v in value)
    return False


def leaves(doc, prefix=()):
    """(key path, value) of every leaf of plain data; a list is a leaf."""
    if isinstance(doc, dict) and doc:
        for k, v in doc.items():
            yield from leaves(v, prefix + (k,))
    else:
        yield prefix, doc


@dataclass
class Wanted:
    """One file of a fresh render: its format, owning client, and owned values."""

    path: Path
    fmt: str
    client: str
    values: dict  # keypath → plain value (secrets revealed)
    secret_paths: set = field(default_factory=set)
    volatile: set = field(default_factory=set)  # owned, never compared (Cline's updatedAt)


# -- the world ---------------------------------------------------------------------------


class World:
    """A temp directory with ``home/``, ``dotfiles/fleet.yaml`` (the user's clone of a
    git repository whose bare remote is ``remotes/dotfiles.git``: ``taosync update``
    pulls it), ``team-a/`` and ``team-b/``, the environment every process gets, and a
    stand-in gateway."""

    def __init__(self):
        from taosync.stub import Stub

        self.root = Path(tempfile.mkdtemp(prefix="taosync-stateful-"))
        self.home = self.root / "home"
        self.home.mkdir()
        from git_fleet import GitRepo

        self.dotfiles = GitRepo(self.root, "dotfiles", {"fleet.yaml": "# the model's\n"})
        self.fleet_path = self.dotfiles.mine / "fleet.yaml"
        self.state_dir = self.home / ".local/state/taosync"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in {*client_location_vars(), "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                                 "TAOSYNC_CONFIG", "CODEX_API_KEY", "NO_COLOR",
                                 "FORCE_COLOR", "OPENAI_API_KEY", "GEMINI_API_KEY",
                                 "ANTHROPIC_API_KEY", "TAOTOKEN_API_KEY"}}
        self.env["HOME"] = str(self.home)  # nothing may reach the real home either
        self.env["PYTHONPATH"] = str(ROOT)  # this worktree's taosync
        from git_fleet import GIT_ENV

        self.env.update(GIT_ENV)  # git as taosync update runs it: no machine config
        # a file-backed keyring for ${keyring:…}, its file outside the home
        self.env["PYTHON_KEYRING_BACKEND"] = KEYRING_BACKEND
        self.env["XDG_DATA_HOME"] = str(self.root / "keyring-data")
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.stub = Stub(key=None, models=MODELS).start()
        # lane gateways (issue 26): the stand-in for the named gateway "work"
        self.stub_work = Stub(key=None, models=MODELS).start()
        self.ran: list[Ran] = []

    def close(self) -> None:
        self.stub.stop()
        self.stub_work.stop()  # lane gateways
        shutil.rmtree(self.root, ignore_errors=True)

    # -- processes ---------------------------------------------------------------------

    def run(self, *args: str, full: bool = False, timeout: float = 60,
            input: str | None = None) -> Ran:
        """``python -m taosync --home HOME -c FLEET ARGS``. ``full``: spell the config
        option ``--config=FLEET``, which click reads the same way but the fast path does
        not parse, so the full path answers (the only difference between the two runs).
        Without ``full`` the process runs under ``-X importtime``, whose report (dropped
        from stderr here) tells whether the fast path answered."""
        config = [f"--config={self.fleet_path}"] if full else ["-c", str(self.fleet_path)]
        argv = [sys.executable, *([] if full else ["-X", "importtime"]), "-m", "taosync",
                "--home", str(self.home), *config, *args]
        proc = subprocess.run(argv, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=timeout, input=input,
                              stdin=subprocess.DEVNULL if input is None else None)
        err_lines = proc.stderr.splitlines(keepends=True)
        imports = [line for line in err_lines if line.startswith("import time:")]
        err = "".join(line for line in err_lines if not line.startswith("import time:"))
        fast = not full and not any(" taosync.cli" in line for line in imports)
        ran = Ran(tuple(args), proc.returncode, proc.stdout, err, fast)
        self.ran.append(ran)
        return ran

    # -- files -------------------------------------------------------------------------

    def snapshot(self, *, state: bool = True, certificate: bool = True,
                 profiles: bool = False) -> dict[str, str]:
        """relative path → sha256 of every file under the home (taosync's state dir
        left out unless ``state``; its certificate.json unless ``certificate``; the
        profiles' roots and states — lane profiles — unless ``profiles``, and then only
        they)."""
        out = {}
        for dirpath, _dirs, files in os.walk(self.home):
            for name in files:
                p = Path(dirpath, name)
                rel = str(p.relative_to(self.home))
                if rel.startswith(PROFILE_AREAS) != profiles:  # lane profiles
                    continue
                if not state and rel.startswith(".local/state/taosync"):
                    continue
                if not certificate and rel == ".local/state/taosync/certificate.json":
                    continue
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        return out

    def client_files(self) -> list[Path]:
        return [self.home / rel for rel in self.snapshot(state=False)]

    def state(self) -> dict:
        try:
            return json.loads((self.state_dir / "state.json").read_text())
        except FileNotFoundError:
            return {}

    # -- the oracle --------------------------------------------------------------------

    def render(self) -> tuple[dict[Path, Wanted], set[str]]:
        """A fresh full render of fleet.yaml in this process, with the environment the
        processes get and the route choices the verify history gives: (path → Wanted of
        every enabled client, managed or not; the unmanaged client names)."""
        from taosync.clients.base import ClientEnv
        from taosync.clients.registry import all as all_clients
        from taosync.engine.state import StateStore
        from taosync.fleet.load import load_fleet
        from taosync.pipeline import resolve_routes

        from taosync.fleet import stores

        environ = dict(self.env)
        env = ClientEnv(home=self.home, environ=environ, sandboxed=True)
        saved = dict(os.environ)
        os.environ.clear()  # include: [$ST_TEAM/…] expands with os.environ
        os.environ.update(environ)
        stores.forget()  # a fresh read of the keyring, as a new process makes
        restore = file_keyring_here()
        try:
            loaded = load_fleet(self.fleet_path, home=self.home, environ=environ)
            fleet = loaded.fleet
            resolve_routes(fleet, StateStore(self.state_dir))
            registry = all_clients()
            # each client on its own gateway, with its key (lane gateways, issue 26)
            patches = [patch for name in fleet.enabled_clients()
                       for patch in registry[name].render(fleet.for_client(name),
                                                          fleet.key_for(name, loaded.key), env)]
        finally:
            os.environ.clear()
            os.environ.update(saved)
            stores.forget()
            restore()
        out: dict[Path, Wanted] = {}
        for patch in patches:
            w = out.setdefault(Path(patch.path), Wanted(Path(patch.path), patch.format,
                                                        patch.client, {}))
            w.volatile.update(patch.volatile)
            for kp, v in patch.values.items():
                w.values[kp] = reveal(v)
                if holds_secret(v):
                    w.secret_paths.add(kp)
        return out, set(fleet.unmanaged_clients())

    def differences(self, wanted: dict[Path, Wanted], unmanaged: set[str]) -> list[str]:
        """Every way the files on disk differ from the render, for managed clients: an
        owned key whose value is not the rendered one, and a key the state still owns
        that the render no longer wants."""
        from taosync.formats.base import keypath_parse

        diffs = []
        for path, w in wanted.items():
            if w.client in unmanaged:
                continue
            doc = read_doc(path, w.fmt)
            for kp, value in w.values.items():
                have = MISSING if doc is MISSING else get_path(doc, kp)
                if have != value:
                    shown = "(secret)" if kp in w.secret_paths else repr(value)
                    diffs.append(f"{path}: {kp}: on disk {'(missing)' if have is MISSING else '(differs)'}"
                                 f", render {shown}")
        for path, entry in self.state().get("files", {}).items():
            if set(entry.get("clients", [])) <= unmanaged:
                continue
            want = wanted.get(Path(path))
            for text in entry.get("owned", {}):
                if want is None or keypath_parse(text) not in {*want.values, *want.volatile}:
                    diffs.append(f"{path}: {text}: owned in the state, not in the render")
        return diffs


#: fleet sections whose entries are one unit each for ``log``'s "what changed"
UNITS = ("models", "routes", "mcp_servers")


def fleet_keys(data: dict) -> dict[str, str]:
    """The oracle of ``log``'s "what changed": fleet key → its value as canonical JSON
    (leaves of mappings; a whole entry under models, routes, mcp_servers), from the
    model's own data (not taosync's loader)."""
    out: dict[str, str] = {}

    def walk(node, path):
        if isinstance(node, dict) and node and not (len(path) == 2 and path[0] in UNITS):
            for k, v in node.items():
                walk(v, (*path, str(k)))
        else:
            out[".".join(path)] = json.dumps(node, sort_keys=True)

    walk(data, ())
    return out


def changed_keys(before: dict[str, str], after: dict[str, str], key_rotated: bool) -> set[str]:
    """What ``log`` should name between two fleets (as :func:`fleet_keys` gives them)."""
    out = {name for name in after if name in before and before[name] != after[name]}
    out |= {f"{name} (added)" for name in after if name not in before}
    out |= {f"{name} (removed)" for name in before if name not in after}
    return out | ({"key rotated"} if key_rotated else set())


def file_keyring_here() -> Callable[[], None]:
    """This process reads the world's keyring (the backend its processes choose through
    PYTHON_KEYRING_BACKEND, with the file under the XDG_DATA_HOME in effect); returns
    what puts the previous backend back. Nothing to do without the library."""
    try:
        import keyring
        from keyrings.alt.file import PlaintextKeyring
    except ImportError:
        return lambda: None
    previous = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    return lambda: keyring.set_keyring(previous)


def find_secrets(text: str, secrets: dict[str, str]) -> list[str]:
    """The names of the secrets (name → value) that ``text`` holds in any spelling."""
    return [name for name, value in secrets.items()
            if any(s in text for s in spellings(value))]


class Watch:
    """``taosync watch --json`` running alongside, its lines collected as they come."""

    def __init__(self, world: World):
        import threading

        self.world = world
        env = dict(world.env, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "taosync", "--home", str(world.home), "-c",
             str(world.fleet_path), "watch", "--no-verify", "--json", "--debounce", "0.1"],
            cwd=world.root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.last_line = time.monotonic()
        self.readers = [threading.Thread(target=self._read, args=(stream,), daemon=True)
                        for stream in (self.proc.stdout, self.proc.stderr)]
        for t in self.readers:
            t.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line)
            self.last_line = time.monotonic()

    def events(self) -> list[dict]:
        out = []
        for line in list(self.lines):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_for(self, event: str, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while not any(e.get("event") == event for e in self.events()):
            assert self.proc.poll() is None, "watch ended:\n" + "".join(self.lines)
            assert time.monotonic() < end, f"no {event!r} from watch:\n" + "".join(self.lines)
            time.sleep(0.05)

    def settle(self, quiet: float = 1.0, timeout: float = 20) -> None:
        """Wait until watch has printed nothing for ``quiet`` seconds."""
        start = time.monotonic()
        while True:
            now = time.monotonic()
            if now - max(self.last_line, start) >= quiet:
                return
            assert now - start < timeout, "watch never went quiet:\n" + "".join(self.lines[-20:])
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for t in self.readers:
            t.join(2)
