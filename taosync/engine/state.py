"""Last applied: what taosync wrote, per file and per owned key, and each apply's backups.

Lives in ``$XDG_STATE_HOME/taosync/state.json`` (mode 0600). Owned values are stored
as keyed hashes (HMAC-SHA256 with a per-machine random key in ``hmac.key``), plus the
plain value when it holds no secret, so ``status`` can show old/new and the key can
never be read back from the state. Standard library only: the no-op fast path reads it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_VERSION = 1
#: keyed hashes of secrets taosync wrote, kept so output can hide them long after
KEEP_SECRET_HASHES = 50
#: applies kept for rollback (records and backups); older ones are pruned
KEEP_APPLIES = 20
STATE_FILE = "state.json"
HMAC_FILE = "hmac.key"
JOURNAL_FILE = "journal.json"
LOCK_FILE = "lock"
BACKUPS_DIR = "backups"


@dataclass
class OwnedKey:
    hash: str
    value: Any = None  # None when the value holds the key
    secret: bool = False
    volatile: bool = False
    #: what to do when taosync stops owning the key: "delete" (it was not there),
    #: "restore" ``prior`` (the user's value before taosync took it), or "keep" (the
    #: user already had this very value, and it holds a secret we never store)
    release: str = "delete"
    prior: Any = None


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

    def holds(self, text: str) -> bool:
        """``text`` is byte for byte what taosync left in the file."""
        return sha256_bytes(text.encode("utf-8")) == self.sha256

    @classmethod
    def from_json(cls, data: dict) -> "FileState":
        data = dict(data)
        data["owned"] = {k: OwnedKey(**v) for k, v in data.get("owned", {}).items()}
        return cls(**data)


@dataclass
class ApplyRecord:
    id: int
    time: str
    kind: str  # apply | rollback
    #: per file: path, backup (file name under backups/<id>/ or None when it did not
    #: exist), mode (octal int or None), and the file's state entry before this apply
    files: list[dict] = field(default_factory=list)


@dataclass
class State:
    version: int = STATE_VERSION
    files: dict[str, FileState] = field(default_factory=dict)
    applies: list[ApplyRecord] = field(default_factory=list)
    #: fingerprint of the last apply's inputs, for the no-op fast path
    inputs: dict[str, str] = field(default_factory=dict)
    #: keyed hashes (never values) of every secret taosync wrote here, newest last, so
    #: the redactor can hide a key rotated away long ago (in a backup, a gateway's echo)
    secrets: list[str] = field(default_factory=list)

    def remembered_secrets(self) -> list[str]:
        """``secrets`` plus the hashes of the secrets owned now and of the resolved key
        the render cache fingerprinted: every save remembers what was just written."""
        out = list(self.secrets)
        now = [o.hash for f in self.files.values() for o in f.owned.values() if o.secret]
        key_hash = self.inputs.get("fingerprint", {}).get("key") if isinstance(
            self.inputs, dict) else None
        for h in now + ([key_hash] if isinstance(key_hash, str) else []):
            if h in out:
                out.remove(h)
            out.append(h)
        return out[-KEEP_SECRET_HASHES:]

    def next_apply_id(self) -> int:
        return (self.applies[-1].id + 1) if self.applies else 1

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "files": {p: asdict(f) for p, f in sorted(self.files.items())},
            "applies": [asdict(a) for a in self.applies],
            "inputs": self.inputs,
            "secrets": self.remembered_secrets(),
        }

    @classmethod
    def from_json(cls, data: dict) -> "State":
        return cls(
            version=data.get("version", STATE_VERSION),
            files={p: FileState.from_json(f) for p, f in data.get("files", {}).items()},
            applies=[ApplyRecord(**a) for a in data.get("applies", [])],
            inputs=data.get("inputs", {}),
            secrets=[h for h in data.get("secrets", []) if isinstance(h, str)],
        )


class StateStore:
    """The state directory: state.json, hmac.key, journal, lock, backups/."""

    def __init__(self, root: Path):
        self.root = root
        #: sha256 of state.json as last read (None: absent), to tell whether another
        #: process saved it since
        self.digest: str | None = None
        self._hmac: bytes | None = None
        self._hmac_ephemeral = False

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL_FILE

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_FILE

    def backup_dir(self, apply_id: int) -> Path:
        return self.root / BACKUPS_DIR / str(apply_id)

    def ensure(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)

    def load(self) -> State:
        try:
            raw = self.state_path.read_bytes()
        except FileNotFoundError:
            self.digest = None
            return State()
        self.digest = sha256_bytes(raw)
        try:
            return State.from_json(json.loads(raw.decode("utf-8")))
        except (ValueError, TypeError, KeyError) as exc:
            from taosync.errors import BadInput

            raise BadInput(f"{self.state_path} is damaged ({exc}); move it aside to start "
                           "afresh (taosync will then own only what it writes next)") from None

    def save(self, state: State) -> None:
        self.ensure()
        data = json.dumps(state.to_json(), indent=1, sort_keys=False, ensure_ascii=False) + "\n"
        write_private(self.state_path, data.encode("utf-8"))

    def hmac_key(self, create: bool = True) -> bytes:
        """The per-machine hashing key; without ``create`` a missing one is made up in
        memory (nothing was hashed with it before, and plan must write nothing)."""
        if self._hmac is not None and (not self._hmac_ephemeral or not create):
            return self._hmac
        path = self.root / HMAC_FILE
        try:
            self._hmac, self._hmac_ephemeral = bytes.fromhex(path.read_text().strip()), False
        except (FileNotFoundError, ValueError):
            self._hmac, self._hmac_ephemeral = os.urandom(32), not create  # = secrets.token_bytes
            if create:
                self.ensure()
                write_private(path, self._hmac.hex().encode() + b"\n")
        return self._hmac

    @property
    def hmac_is_ephemeral(self) -> bool:
        """True when hashes so far used a made-up key (no hmac.key on disk yet)."""
        return self._hmac_ephemeral


def write_private(path: Path, data: bytes) -> None:
    """Atomic write of a taosync-owned file, mode 0600."""
    atomic_write(path, data, 0o600)


def atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Temp file beside ``path``, fsync, chmod, rename, fsync the directory: a reader
    (or a crash) sees the old bytes or the new ones, never a mix."""
    tmp = path.with_name(f".{path.name}.taosync-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def canonical(value: Any) -> str:
    """One spelling per value, typed (1 ≠ true ≠ "1"), for hashing and comparison."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def value_hash(key: bytes, value: Any) -> str:
    return hmac.new(key, canonical(value).encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
