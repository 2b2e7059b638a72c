"""Last applied: what taosync wrote, per file and per owned key, and each apply's backups.

Lives in ``$XDG_STATE_HOME/taosync/state.json`` (mode 0600). Owned values are stored
as keyed hashes (HMAC-SHA256 with a per-machine random key in ``hmac.key``), plus the
plain value when it holds no secret, so ``status`` can show old/new and the key can
never be read back from the state. Standard library only: the no-op fast path reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from taosync.engine.system import current

STATE_VERSION = 1
#: keyed hashes of secrets taosync wrote, kept so output can hide them long after
KEEP_SECRET_HASHES = 50
#: applies kept for rollback (records and backups); older ones are pruned. The window
#: counts the user's own steps (apply, rollback, redo), never watch's re-asserts
KEEP_APPLIES = 20
#: watch's drift re-asserts kept besides the window (the oldest go first)
KEEP_REASSERTS = 20
#: route re-renders kept besides the window (the oldest go first, but for one whose
#: backups a rollback still needs: see prune_history)
KEEP_ROUTES = 10
#: record kinds: a user's apply, a rollback (``undoes`` the applies it stepped back over),
#: a redo (``undoes`` the rollback it took back), a destroy, watch's re-assert of
#: drifted keys, and a route re-render — a write only a route's choice moving caused,
#: to files as taosync left them (engine/rollback.py explains the cursor they make).
#: A record without a kind (none is written so) reads as a user's apply.
KINDS = ("apply", "rollback", "redo", "destroy", "reassert", "route")
#: the kinds that are not the user's own steps: outside the window of KEEP_APPLIES
MACHINE_KINDS = ("reassert", "route")
#: the kinds a rollback can start from (``since``): a later record's backup of a file one
#: of these already wrote is never put back
_BOUNDARIES = ("apply", "destroy", "rollback")
STATE_FILE = "state.json"
HMAC_FILE = "hmac.key"
JOURNAL_FILE = "journal.json"
LOCK_FILE = "lock"
BACKUPS_DIR = "backups"
PRIORS_FILE = "priors.json"
#: OwnedKey.release of a key whose earlier value held a secret (kept in priors.json)
RESTORE_SECRET = "restore-secret"


@dataclass(frozen=True)
class OwnedKey:
    hash: str
    value: Any = None  # None when the value holds the key
    secret: bool = False
    volatile: bool = False
    #: what to do when taosync stops owning the key: "delete" (it was not there),
    #: "restore" ``prior`` (the user's value before taosync took it), "restore-secret"
    #: (the user's value held a secret: ``prior`` is its keyed hash, the value itself is
    #: in priors.json, never here), or "keep" (the user already had this very value)
    release: str = "delete"
    prior: Any = None

    @classmethod
    def made(cls, hash: str, value: Any = None, secret: bool = False, volatile: bool = False,
             release: str = "delete", prior: Any = None) -> "OwnedKey":
        """``OwnedKey(...)`` at half the cost, for the planner's one per owned key: a frozen
        dataclass's ``__init__`` sets each field through ``object.__setattr__``."""
        key = _new(cls)
        key.__dict__.update(hash=hash, value=value, secret=secret, volatile=volatile,
                            release=release, prior=prior)
        return key


@dataclass
class FileState:
    path: str
    format: str
    clients: list[str]
    sha256: str  # of the bytes taosync left on disk
    owned: dict[str, OwnedKey] = field(default_factory=dict)  # keypath_str → OwnedKey
    created: list[str] = field(default_factory=list)  # containers taosync created
    skeleton: list[str] = field(default_factory=list)  # skeleton keys taosync filled in
    created_file: bool = False
    secret: bool = False
    lead: list[str] = field(default_factory=list)  # elements kept first (Patch.lead)

    def holds(self, text: str) -> bool:
        """``text`` is byte for byte what taosync left in the file."""
        return sha256_bytes(text.encode("utf-8")) == self.sha256

    @classmethod
    def from_json(cls, data: dict, where: str = "file") -> "FileState":
        """Raises :class:`Damaged` (naming where) for any other shape than to_json's."""
        state = cls._well_formed(data)
        return state if state is not None else cls._checked(data, where)

    @classmethod
    def _well_formed(cls, data: Any) -> "FileState | None":
        """:meth:`from_json` of a state as to_json wrote it, checked without spelling a
        message per owned key (a state holds thousands, read on every run); None for
        anything else, which :meth:`_checked` then names."""
        try:
            owned = data.get("owned", {})
            if type(owned) is not dict:
                return None
            keys = {k: _loaded(v) for k, v in owned.items() if type(k) is str and type(v) is dict}
            state = cls(**{**data, "owned": keys})
        except (AttributeError, TypeError, KeyError, ValueError):
            return None
        if len(keys) != len(owned) or not all(
                type(o.hash) is str and type(o.release) is str for o in keys.values()):
            return None
        if not all(isinstance(getattr(state, name), kind) for name, kind in _FILE_FIELDS.items()):
            return None
        if not all(type(item) is str for name in ("clients", "created", "skeleton", "lead")
                   for item in getattr(state, name)):
            return None
        return state

    @classmethod
    def _checked(cls, data: Any, where: str) -> "FileState":
        try:
            data = dict(_expect(data, dict, where))
            owned = _expect(data.get("owned", {}), dict, f"{where}.owned")
            data["owned"] = {_expect(k, str, f"{where}.owned key"):
                             OwnedKey(**_expect(v, dict, f"{where}.owned[{k!r}]"))
                             for k, v in owned.items()}
            state = cls(**data)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            raise Damaged(f"{where}: {exc}") from None
        for name, kind in _FILE_FIELDS.items():
            _expect(getattr(state, name), kind, f"{where}.{name}")
        for name in ("clients", "created", "skeleton", "lead"):
            for item in getattr(state, name):
                _expect(item, str, f"{where}.{name}[]")
        for k, v in state.owned.items():
            _expect(v.hash, str, f"{where}.owned[{k!r}].hash")
            _expect(v.release, str, f"{where}.owned[{k!r}].release")
        return state

    def copy(self) -> "FileState":
        """A copy sharing nothing mutable but the owned keys (frozen: a change replaces
        one) and their values (JSON values, never changed in place)."""
        return FileState(self.path, self.format, list(self.clients), self.sha256,
                         dict(self.owned), list(self.created), list(self.skeleton),
                         self.created_file, self.secret, list(self.lead))

    def to_json(self) -> dict:
        """``asdict(self)`` without its deep copy of every value (most of a save's time
        at hundreds of keys): the result is dumped at once, never changed."""
        data = {name: getattr(self, name) for name in _FILE_FIELD_ORDER}
        data["owned"] = {k: dict(o.__dict__) for k, o in self.owned.items()}  # its fields,
        # in order (a frozen dataclass's __dict__ holds nothing else; tests/test_scale.py)
        return data


@dataclass
class ApplyRecord:
    id: int
    time: str
    kind: str  # one of KINDS
    #: per file: path, backup (file name under backups/<id>/ or None when it did not
    #: exist), mode (octal int or None), action, clients, and the file's state entry
    #: before this apply
    files: list[dict] = field(default_factory=list)
    #: a rollback: the apply ids it stepped back over; a redo: the rollback it took back
    undoes: list[int] = field(default_factory=list)
    #: an apply: the fleet keys it changed since the apply before it (names only:
    #: engine/fleet_changes.py); None when there was no earlier snapshot to compare with
    changes: list[str] | None = None
    #: ``apply -m``: the user's note on why
    message: str | None = None


def prune_history(records: list[ApplyRecord]) -> tuple[list[ApplyRecord], list[ApplyRecord]]:
    """(kept, dropped): the newest KEEP_APPLIES user steps and everything after the
    oldest of them, less the re-asserts beyond the newest KEEP_REASSERTS and the route
    re-renders beyond the newest KEEP_ROUTES — so neither a watch fighting drift all day
    nor a flapping backend ever pushes the user's applies (and the backups of their
    original files) out of the window."""
    steps = [n for n, r in enumerate(records) if r.kind not in MACHINE_KINDS]
    start = steps[-KEEP_APPLIES] if len(steps) > KEEP_APPLIES else 0
    reasserts = [r.id for r in records[start:] if r.kind == "reassert"]
    too_many = set(reasserts[:-KEEP_REASSERTS]) if len(reasserts) > KEEP_REASSERTS else set()
    routes = [r.id for r in records[start:] if r.kind == "route"]
    if len(routes) > KEEP_ROUTES:
        needed = _route_records_needed(records[start:])
        too_many |= {i for i in routes[:-KEEP_ROUTES] if i not in needed}
    kept = [r for r in records[start:] if r.id not in too_many]
    return kept, records[:start] + [r for r in records[start:] if r.id in too_many]


def _route_records_needed(records: list[ApplyRecord]) -> set[int]:
    """The route records holding the only backup a rollback would put back for a file:
    the first write of that file since the latest apply, destroy or rollback before them
    (their other backups are of what a record before them already wrote: never read)."""
    needed: set[int] = set()
    covered: set[str | None] | None = None  # files written since the latest boundary
    for record in records:
        paths = {entry.get("path") for entry in record.files}
        if record.kind in _BOUNDARIES:
            covered = set(paths)
            continue
        if record.kind == "reassert":
            continue  # pruned on its own: never counted on to hold a backup
        if covered is None:
            continue  # no rollback starts before it
        if record.kind == "route" and paths - covered:
            needed.add(record.id)
        covered |= paths
    return needed


class Priors:
    """The user's own values at keys taosync took over where they held a secret (their
    own key, an MCP token), by keyed hash, so destroy and ``enabled: false`` can give
    them back. They live in priors.json (0600, beside the backups, which hold the same
    files whole), never in state.json: the state shows nobody a secret. Read lazily."""

    def __init__(self, path: Path | None = None):
        self.path = path
        #: values taken over by the plans made since the load (saved if referenced)
        self.new: dict[str, Any] = {}
        self._saved: dict[str, Any] | None = None

    def saved(self) -> dict[str, Any]:
        """What priors.json holds (empty when absent or unreadable)."""
        if self._saved is None:
            self._saved = {}
            if self.path is not None:
                try:
                    data = json.loads(current().read_bytes(self.path).decode("utf-8"))
                except (OSError, ValueError):
                    data = {}
                self._saved = data if isinstance(data, dict) else {}
        return self._saved

    def forget_saved(self) -> None:
        self._saved = None

    def add(self, digest: str, value: Any) -> None:
        self.new[digest] = value

    def get(self, digest: str, default: Any = None) -> Any:
        if digest in self.new:
            return self.new[digest]
        return self.saved().get(digest, default)


@dataclass
class State:
    version: int = STATE_VERSION
    files: dict[str, FileState] = field(default_factory=dict)
    applies: list[ApplyRecord] = field(default_factory=list)
    #: fingerprint of the last apply's inputs, for the no-op fast path (the render
    #: cache, engine/cache.py). Replaced as a whole, never changed in place: copies of a
    #: State share it (it grows with every key rendered, and the certified runs load
    #: the state a dozen times)
    inputs: dict[str, Any] = field(default_factory=dict)
    #: keyed hashes (never values) of every secret taosync wrote here, newest last, so
    #: the redactor can hide a key rotated away long ago (in a backup, a gateway's echo)
    secrets: list[str] = field(default_factory=list)
    #: directories taosync created (for client files and its own state), so destroy can
    #: take them away again once they are empty
    made_dirs: list[str] = field(default_factory=list)
    #: route → {model, preferred, reason, since, healthy}: the choice of each route with
    #: candidates as the last apply rendered it (taosync.verify.routing)
    routes: dict[str, dict] = field(default_factory=dict)
    #: clients set ``managed: false`` as the last write saw them: rollback, redo and
    #: destroy leave their files alone even when fleet.yaml cannot be loaded
    forgotten: list[str] = field(default_factory=list)
    #: the home this state was made for, and the location variables in force then
    #: (var → path): a run with another home refuses it (engine/owner.py); None in a
    #: state written before taosync recorded it (adopted by the next write)
    home: str | None = None
    locations: dict[str, str] = field(default_factory=dict)
    #: the fleet as the last apply record saw it: fleet key → keyed hash of its value
    #: (engine/fleet_changes.py), so the next one can name the keys that changed
    fleet: dict[str, str] = field(default_factory=dict)
    #: the user's earlier secret values (priors.json, not part of state.json)
    priors: Priors = field(default_factory=Priors, compare=False, repr=False)

    def prior_refs(self) -> set[str]:
        """The priors.json entries still needed: those of owned keys now and of the state
        entries the history can put back (a rollback restores them)."""
        refs = {o.prior for f in self.files.values() for o in f.owned.values()
                if o.release == RESTORE_SECRET}
        for record in self.applies:
            for entry in record.files:
                for o in ((entry.get("before") or {}).get("owned") or {}).values():
                    if o.get("release") == RESTORE_SECRET:
                        refs.add(o.get("prior"))
        return refs

    def remember_dirs(self, dirs) -> None:
        """Add directories taosync just created (kept in creation order, once each)."""
        for d in map(str, dirs):
            if d not in self.made_dirs:
                self.made_dirs.append(d)

    def remembered_secrets(self) -> list[str]:
        """``secrets`` plus the hashes of the secrets owned now and of the resolved key
        the render cache fingerprinted: every save remembers what was just written."""
        global _remembered
        if _parsed is not None and self is _parsed[1]:  # the shared parse: never changed
            if _remembered is None or _remembered[0] is not self:
                _remembered = (self, self._remembered_secrets())
            return list(_remembered[1])  # each certified run's Redactor asks again
        return self._remembered_secrets()

    def _remembered_secrets(self) -> list[str]:
        now = [o.hash for f in self.files.values() for o in f.owned.values() if o.secret]
        fingerprint = self.inputs.get("fingerprint", {})
        key_hash = fingerprint.get("key") if isinstance(fingerprint, dict) else None
        now += [key_hash] if isinstance(key_hash, str) else []
        if len(set(self.secrets)) < len(self.secrets):  # a state edited by hand: as ever
            out = list(self.secrets)
            for h in now:
                if h in out:
                    out.remove(h)
                out.append(h)
            return out[-KEEP_SECRET_HASHES:]
        # each hash moved to the end where it is seen again (an ordered set: the same
        # MCP token in ten clients' files is one hash seen ten times, not a list scan each)
        order = dict.fromkeys(self.secrets)
        for h in now:
            order.pop(h, None)
            order[h] = None
        return list(order)[-KEEP_SECRET_HASHES:]

    def copy(self) -> "State":
        """A copy sharing nothing a caller may change (see :meth:`StateStore.load`): the
        JSON parts copied through ``marshal`` (a deep copy of JSON data, in C), but for
        ``inputs``, which nothing changes in place (it is replaced)."""
        return State(self.version, {p: f.copy() for p, f in self.files.items()},
                     [ApplyRecord(a.id, a.time, a.kind, _json_copy(a.files), list(a.undoes),
                                  None if a.changes is None else list(a.changes), a.message)
                      for a in self.applies],
                     self.inputs, list(self.secrets), list(self.made_dirs),
                     _json_copy(self.routes), list(self.forgotten), self.home,
                     dict(self.locations), dict(self.fleet))

    def next_apply_id(self) -> int:
        return (self.applies[-1].id + 1) if self.applies else 1

    def to_json(self) -> dict:
        return {
            "version": self.version,
            **({"home": self.home, "locations": self.locations}
               if self.home is not None else {}),
            "files": {p: f.to_json() for p, f in sorted(self.files.items())},
            "applies": [{name: getattr(a, name) for name in _RECORD_FIELD_ORDER
                         if name not in _RECORD_OPTIONAL or getattr(a, name) is not None}
                        for a in self.applies],
            "inputs": self.inputs,
            "secrets": self.remembered_secrets(),
            "made_dirs": self.made_dirs,
            **({"routes": self.routes} if self.routes else {}),
            **({"forgotten": sorted(self.forgotten)} if self.forgotten else {}),
            **({"fleet": self.fleet} if self.fleet else {}),
        }

    @classmethod
    def from_json(cls, data: dict) -> "State":
        """The state as ``to_json`` wrote it; raises :class:`Damaged` (naming the first
        part that is wrong) for valid JSON of any other shape."""
        _expect(data, dict, "the top level")
        files = _expect(data.get("files", {}), dict, "files")
        state = cls(
            version=_expect(data.get("version", STATE_VERSION), int, "version"),
            files={p: FileState.from_json(f, f"files[{p!r}]") for p, f in files.items()},
            applies=[_apply_record(a, f"applies[{n}]")
                     for n, a in enumerate(_expect(data.get("applies", []), list, "applies"))],
            inputs=_expect(data.get("inputs", {}), dict, "inputs"),
            secrets=[h for h in _expect(data.get("secrets", []), list, "secrets")
                     if isinstance(h, str)],
            made_dirs=[_expect(d, str, "made_dirs[]")
                       for d in _expect(data.get("made_dirs", []), list, "made_dirs")],
            routes=_route_choices(data.get("routes", {})),
            forgotten=[_expect(c, str, "forgotten[]")
                       for c in _expect(data.get("forgotten", []), list, "forgotten")],
            home=(None if data.get("home") is None
                  else _expect(data["home"], str, "home")),
            locations={_expect(k, str, "locations key"): _expect(v, str, f"locations[{k!r}]")
                       for k, v in _expect(data.get("locations", {}), dict,
                                           "locations").items()},
            fleet={_expect(k, str, "fleet key"): _expect(v, str, f"fleet[{k!r}]")
                   for k, v in _expect(data.get("fleet", {}), dict, "fleet").items()},
        )
        if not _render_cache_ok(state.inputs):
            state.inputs = {}  # only a cache: a damaged one is a miss, rendered afresh
        return state


def _json_copy(value):
    """A deep copy of JSON data (dicts, lists, strings, numbers, booleans, None)."""
    import marshal

    return marshal.loads(marshal.dumps(value))


#: (state.json's bytes, the State parsed from them) of the last load: every command
#: after an apply (the certified runs: engine/certificate.py) loads the same bytes
#: again, 2-3 times each, and parsing is linear in the owned keys (~100 ms at 12,000)
_parsed: tuple[bytes, "State"] | None = None


#: (the shared parse, its remembered_secrets()): asked by every certified run's Redactor
_remembered: tuple["State", list[str]] | None = None


#: (state.json's bytes, their sha256) of the last load: a certified run's System hands
#: every load the same bytes object (engine/system.py RecordingSystem)
_digested: tuple[bytes, str] | None = None


def _digest_of(raw: bytes) -> str:
    """``sha256_bytes(raw)``, not taken again for the very bytes object hashed last."""
    global _digested
    if _digested is None or _digested[0] is not raw:
        _digested = (raw, sha256_bytes(raw))
    return _digested[1]


def parsed_state(raw: bytes, shared: bool = False) -> "State":
    """``State.from_json`` of ``raw`` (UTF-8 JSON), a fresh copy of the last parse when
    the bytes are the same: ``from_json`` is a function of the bytes alone. ``shared``:
    the last parse itself, no copy — for a reader that changes nothing in it."""
    global _parsed
    if _parsed is not None and _parsed[0] == raw:
        return _parsed[1] if shared else _parsed[1].copy()
    state = State.from_json(json.loads(raw.decode("utf-8")))
    _parsed = (raw, state if shared else state.copy())
    return state


class Damaged(ValueError):
    """state.json is valid JSON of the wrong shape (the message says where)."""


_new = object.__new__
#: an owned key's fields, as to_json writes them
_OWNED_FIELDS = frozenset(f.name for f in fields(OwnedKey))


def _loaded(data: dict) -> OwnedKey:
    """``OwnedKey(**data)``, the fields taken as they are when they are all there and
    nothing else (a state holds thousands); TypeError as ``OwnedKey(**data)`` raises."""
    if data.keys() != _OWNED_FIELDS:
        return OwnedKey(**data)
    key = _new(OwnedKey)
    key.__dict__.update(data)
    return key


_FILE_FIELDS = {"path": str, "format": str, "clients": list, "sha256": str, "owned": dict,
                "created": list, "skeleton": list, "created_file": bool, "secret": bool,
                "lead": list}
#: the fields as to_json writes them, in declaration order (as ``asdict`` would)
_FILE_FIELD_ORDER = tuple(f.name for f in fields(FileState))
_RECORD_FIELD_ORDER = tuple(f.name for f in fields(ApplyRecord))
#: record fields written only when set (a record of a kind without them stays as it was)
_RECORD_OPTIONAL = ("changes", "message")


def _expect(value, kind: type, where: str):
    """``value`` when it is a ``kind`` (an int is not a bool here), else :class:`Damaged`."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Damaged(f"{where} is {type(value).__name__}, not {kind.__name__}")
    return value


#: the fields of one route's recorded choice, and their types
_ROUTE_FIELDS = {"model": str, "preferred": str, "reason": str, "since": str, "healthy": bool}


def _route_choices(data) -> dict[str, dict]:
    """``routes`` as ``to_json`` wrote it; :class:`Damaged` names the first wrong part."""
    _expect(data, dict, "routes")
    for name, choice in data.items():
        _expect(choice, dict, f"routes[{name!r}]")
        for key, kind in _ROUTE_FIELDS.items():
            _expect(choice.get(key), kind, f"routes[{name!r}].{key}")
    return data


def _render_cache_ok(entry: dict) -> bool:
    """``entry`` has the shape engine/cache.py stores (or is empty)."""
    if not entry:
        return True

    def all_of(items, kind) -> bool:
        return isinstance(items, list) and all(isinstance(i, kind) for i in items)

    def pairs(items) -> bool:
        return isinstance(items, list) and all(
            isinstance(i, list) and len(i) == 2 and isinstance(i[0], str) for i in items)

    fp, patches = entry.get("fingerprint"), entry.get("patches")
    return (isinstance(fp, dict) and isinstance(fp.get("env"), dict)
            and isinstance(fp.get("paths"), dict)
            and all(isinstance(fp.get(k), str) for k in ("taosync", "platform", "home",
                                                         "fleet", "key"))
            and all_of(entry.get("key_ref"), str) and len(entry["key_ref"]) == 2
            and all_of(entry.get("clients"), str) and all_of(entry.get("warnings"), str)
            and isinstance(patches, list) and all_of(patches, dict)
            and all(isinstance(p.get("path"), str) and isinstance(p.get("format"), str)
                    and isinstance(p.get("client"), str) and isinstance(p.get("secret"), bool)
                    and pairs(p.get("values")) and pairs(p.get("skeleton"))
                    and pairs(p.get("volatile")) and all_of(p.get("lead"), str)
                    for p in patches))


def _apply_record(data, where: str) -> ApplyRecord:
    """One apply's record, with every file entry rollback will read checked."""
    try:
        record = ApplyRecord(**{"kind": "apply", **_expect(data, dict, where)})
    except TypeError as exc:
        raise Damaged(f"{where}: {exc}") from None
    _expect(record.id, int, f"{where}.id")
    _expect(record.time, str, f"{where}.time")
    _expect(record.kind, str, f"{where}.kind")
    for n, undone in enumerate(_expect(record.undoes, list, f"{where}.undoes")):
        _expect(undone, int, f"{where}.undoes[{n}]")
    if record.changes is not None:
        for change in _expect(record.changes, list, f"{where}.changes"):
            _expect(change, str, f"{where}.changes[]")
    if record.message is not None:
        _expect(record.message, str, f"{where}.message")
    for n, entry in enumerate(_expect(record.files, list, f"{where}.files")):
        at = f"{where}.files[{n}]"
        _expect(entry, dict, at)
        _expect(entry.get("path"), str, f"{at}.path")
        if entry.get("backup") is not None:
            _expect(entry["backup"], str, f"{at}.backup")
        if entry.get("mode") is not None:
            _expect(entry["mode"], int, f"{at}.mode")
        for client in _expect(entry.get("clients", []), list, f"{at}.clients"):
            _expect(client, str, f"{at}.clients[]")
        if entry.get("action") is not None:
            _expect(entry["action"], str, f"{at}.action")
        if entry.get("before") is not None:
            FileState.from_json(entry["before"], f"{at}.before")
    return record


#: seconds a command waits for another taosync's lock before giving up (exit 3)
LOCK_TIMEOUT = 60.0


@contextmanager
def locked(store: "StateStore", timeout: float = LOCK_TIMEOUT):
    """An exclusive lock on the state directory, so two applies never interleave."""
    from taosync.errors import WriteFailed

    with ExitStack() as held:
        try:
            store.ensure()
            held.enter_context(store.system.lock(store.lock_path, timeout))
        except OSError as exc:
            raise WriteFailed(f"cannot create the state directory {store.root}: "
                              f"{exc.strerror}") from None
        yield


class StateStore:
    """The state directory: state.json, hmac.key, journal, lock, backups/. Every read
    and write of it goes through :attr:`system`."""

    def __init__(self, root: Path, owner=None):
        self.root = root
        #: the home and locations of this run (engine/owner.py Owner): each load refuses
        #: another home's state, each save records this one. None: no check (a reader
        #: of the history only, such as a watch's peer)
        self.owner = owner
        #: sha256 of state.json as last read (None: absent), to tell whether another
        #: process saved it since
        self.digest: str | None = None
        self._hmac: bytes | None = None
        self._hmac_ephemeral = False
        #: directories ensure() created, remembered in the state at the next save
        self._made: list[Path] = []
        #: one for every state loaded here: a plan made against an earlier load (before
        #: the lock) hands its priors to the state saved (after it)
        self.priors = Priors(self.root / PRIORS_FILE)

    def _priors(self) -> "Priors":
        self.priors.forget_saved()  # read again: another process may have saved since
        return self.priors

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL_FILE

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def priors_path(self) -> Path:
        return self.root / PRIORS_FILE

    @property
    def system(self):
        """The System in effect (taosync.engine.system): the disk, or a dry run's."""
        return current()

    def backup_dir(self, apply_id: int) -> Path:
        return self.root / BACKUPS_DIR / str(apply_id)

    def ensure(self) -> None:
        """Open the state directory for writing: created 0700 whatever the umask, and an
        existing one tightened to 0700 (it holds backups of files that hold the key)."""
        self._made += missing_dirs(self.root)
        self.system.make_private_dir(self.root)

    def load(self, shared: bool = False) -> State:
        """state.json as a State of the caller's own (every load its own copy), or —
        ``shared`` — the one every shared load of these bytes gets, for a caller that
        only reads it (and never keeps a part of it that others may change): no copy
        (the certified runs load the state two dozen times; engine/certificate.py)."""
        try:
            raw = self.system.read_bytes(self.state_path)
        except FileNotFoundError:
            self.digest = None
            return State(priors=self._priors())
        except OSError as exc:  # taosync's own state out of reach is an I/O failure (3)
            from taosync.errors import WriteFailed

            raise WriteFailed(f"cannot read {self.state_path}: {exc.strerror or exc}; "
                              "nothing was changed") from None
        self.digest = _digest_of(raw)
        try:
            state = parsed_state(raw, shared)
            priors = self._priors()
            if not shared:
                state.priors = priors
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            from taosync.errors import BadInput

            raise BadInput(f"{self.state_path} is damaged: {exc}; move it away to start "
                           "afresh (taosync will then own only what it writes next; the "
                           "backups stay in backups/)") from None
        if self.owner is not None:
            self.owner.claim(state, self.state_path)
        return state

    def save(self, state: State) -> None:
        if self.owner is not None:  # an unrecorded state adopts this run's home here
            state.home, state.locations = self.owner.home, dict(self.owner.locations)
        self.ensure()
        state.remember_dirs(self._made)
        self._save_priors(state)  # first: the state about to be saved refers to them
        # compact: the C encoder (indent= falls back to Python, ~5× slower at any size)
        data = json.dumps(state.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
        write_private(self.state_path, data.encode("utf-8"))

    def _save_priors(self, state: State) -> None:
        """priors.json as ``state`` needs it: the values it refers to, no others (a
        prior goes once no owned key and no kept history entry names it)."""
        saved = state.priors.saved()
        refs = state.prior_refs()
        wanted = {h: v for h, v in {**saved, **state.priors.new}.items() if h in refs}
        if wanted == saved:
            return
        if wanted:
            write_private(self.priors_path, json.dumps(wanted, ensure_ascii=False).encode())
        else:
            self.system.remove(self.priors_path)
        state.priors._saved, state.priors.new = wanted, {}

    def hmac_key(self, create: bool = True) -> bytes:
        """The per-machine hashing key; without ``create`` a missing one is made up in
        memory (nothing was hashed with it before, and plan must write nothing)."""
        if self._hmac is not None and (not self._hmac_ephemeral or not create):
            return self._hmac
        path = self.root / HMAC_FILE
        try:
            self._hmac, self._hmac_ephemeral = (
                bytes.fromhex(self.system.read_bytes(path).decode().strip()), False)
        except (FileNotFoundError, ValueError):
            # the key made up for this run's plan becomes the key, when it is made: what
            # the plan hashed with it holds (pipeline.commit need not plan again)
            made = self._hmac if self._hmac is not None and create else os.urandom(32)
            self._hmac, self._hmac_ephemeral = made, not create  # = secrets.token_bytes
            if create:
                self.ensure()
                write_private(path, self._hmac.hex().encode() + b"\n")
        except OSError as exc:  # a FIFO, a device, no permission: never a hang or a crash
            from taosync.errors import WriteFailed

            raise WriteFailed(f"cannot read {path}: {exc.strerror or exc}; move it away "
                              "(taosync then makes a new one, and its hashes start afresh)"
                              ) from None
        return self._hmac

    @property
    def hmac_is_ephemeral(self) -> bool:
        """True when hashes so far used a made-up key (no hmac.key on disk yet)."""
        return self._hmac_ephemeral


def write_private(path: Path, data: bytes) -> None:
    """Atomic write of a taosync-owned file, mode 0600, on the System in effect."""
    current().write_atomic(path, data, 0o600)


def missing_dirs(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, outermost first (what a write
    into ``path`` is about to create)."""
    missing: list[Path] = []
    while not current().exists(path) and path.parent != path:
        missing.append(path)
        path = path.parent
    return missing[::-1]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
