"""The no-op fast path: answer ``apply`` / ``plan`` / ``status`` when nothing changed,
before click, ruamel, pydantic or even ``dataclasses`` are imported.

Users run ``taosync apply`` from shell start-up files, hooks and CI, and the common case
is "nothing changed". The full path then reuses the render cache (engine/cache.py) and
plans every target untouched (engine/plan.py ``_untouched``); this module decides the
same thing from the same data with the standard library only, and prints the same
words on the same streams with the same exit code. It answers only when it is sure:

* the command line is one it can honour (the options below, nothing else);
* no journal is left (an interrupted apply is recovered by the full path);
* state.json, hmac.key and the cached render are there and well formed;
* every input of the render is unchanged (:func:`taosync.engine.cache.fingerprint_holds`)
  and the key still resolves to the one fingerprinted;
* every file taosync owns is a regular UTF-8 file byte for byte as the state recorded,
  holding the keys the cached render wants with the values it wants, and no other file
  is owned;
* nothing printed would need the redactor, and no target holding a secret lives in a git
  work tree (the dotfiles guard warns there).

Anything else returns None and the full path runs, which reports problems properly.
"""


import os
import stat
import sys

from taosync.engine.cache import KEY_TOKEN, MCP_TOKEN, fingerprint_holds

# On a no-op, importing ``json`` (it compiles regular expressions: ``re``, ``enum``) and
# ``hashlib``/``hmac`` (OpenSSL) costs as much as starting Python itself. The C parts
# they are built on are loaded directly: the JSON scanner and encoder json.loads and
# json.dumps use, and the built-in SHA-256. Where one is missing, the module itself is
# used; tests/test_fastpath.py checks both agree with json and fleet.secrets.
try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None
try:  # the name of this version's module first: a failed import searches all of sys.path
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _sha256
    else:
        from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - a build without them
    from hashlib import sha256 as _sha256

#: command → the flags it may carry here (the global -c/--config, --home, -q work everywhere)
COMMANDS = {"apply": {"--no-verify"}, "plan": {"--check"}, "diff": {"--check"},
            "status": set()}
_VALUED = {"-c": "config", "--config": "config", "--home": "home"}
_QUIET = {"-q", "--quiet"}
# click.style(text, fg="bright_black"): how `plan` dims "unchanged" on a colour terminal
_DIM = "\x1b[90m{}\x1b[0m"


class _Unsure(Exception):
    """The fast path cannot be sure: the full path must run."""


def answer(argv: list[str], environ=None) -> int | None:
    """The exit code after printing what the full path would print, or None (nothing
    printed) when the full path must run."""
    environ = os.environ if environ is None else environ
    try:
        command, flags, options, quiet = _parse(argv)
        lines = _decide(command, flags, options, environ)
    except (_Unsure, OSError, ValueError, TypeError, KeyError, AttributeError,
            IndexError, RecursionError, StopIteration):
        return None
    warnings, out = lines
    try:
        for line in warnings:
            sys.stderr.write(line + "\n")
        if not quiet:
            for line in out:
                sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 0  # as cli.run answers a closed pipe
    return 0


def _parse(argv: list[str]) -> tuple[str, set[str], dict[str, str], bool]:
    """(command, its flags, {"config"|"home": value}, quiet) — or _Unsure for anything
    the fast path does not honour (``--json``, ``-v``, ``--only``, ``--dry-run``, …)."""
    command, flags, options, quiet = None, set(), {}, False
    args = iter(argv)
    for arg in args:
        if arg in _VALUED:
            name = _VALUED[arg]
            value = next(args, None)
            if name in options or not value or value.startswith("-"):
                raise _Unsure
            options[name] = value
        elif arg in _QUIET:
            quiet = True
        elif arg.startswith("-"):
            if command is None or arg not in COMMANDS[command] or arg in flags:
                raise _Unsure
            flags.add(arg)
        elif command is None and arg in COMMANDS:
            command = "plan" if arg == "diff" else arg  # the alias cli.py gives plan
        else:
            raise _Unsure
    if command is None:
        raise _Unsure
    return command, flags, options, quiet


def _clean(path: str) -> str:
    """``path`` when it is absolute and already written as pathlib would print it (so
    this module and the full path name the same home), else _Unsure."""
    if not os.path.isabs(path) or os.path.normpath(path) != path or path.startswith("//"):
        raise _Unsure
    return path


def _home(options: dict, environ) -> tuple[str, bool]:
    """(home, sandboxed) as Settings.home_dir computes them."""
    if "home" in options:
        raw = os.path.expanduser(options["home"])
        if raw.startswith("~") or os.path.isfile(raw):
            raise _Unsure  # click refuses a file there; pathlib may expand ~user apart
        return _clean(os.path.join(os.getcwd(), raw)), True
    if not environ.get("HOME"):
        raise _Unsure  # the full path says so
    return _clean(environ["HOME"]), False


def _location(var: str, home: str, sandboxed: bool, environ) -> str | None:
    """ClientEnv.location: the path in ``var``; under --home only one inside it."""
    raw = environ.get(var)
    if not raw:
        return None
    if not sandboxed:
        return os.path.expanduser(raw)
    real, real_home = os.path.realpath(raw), os.path.realpath(home)
    if real != real_home and not real.startswith(real_home.rstrip("/") + "/"):
        return None
    return raw


def _config_path(options: dict, home: str, sandboxed: bool, environ) -> str:
    """Settings.config_path."""
    if "config" in options:
        if os.path.isdir(options["config"]):
            raise _Unsure  # click refuses a directory there
        return options["config"]
    if environ.get("TAOSYNC_CONFIG"):
        return environ["TAOSYNC_CONFIG"]
    if os.path.exists("fleet.yaml"):
        return "fleet.yaml"
    base = _location("XDG_CONFIG_HOME", home, sandboxed, environ) or os.path.join(home, ".config")
    return os.path.join(base, "taosync", "fleet.yaml")


def _state_dir(home: str, sandboxed: bool, environ) -> str:
    """Settings.state_dir (not on Windows: the fast path stays off there)."""
    base = (_location("XDG_STATE_HOME", home, sandboxed, environ)
            or os.path.join(home, ".local", "state"))
    return os.path.join(base, "taosync")


def _read(path: str) -> bytes:
    """The file's bytes, read with os calls: no buffered file object to build and drop
    (half the cost of ``open(path, "rb").read()`` for the small files read here)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        parts = []
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


class _ScanContext:
    """What json.decoder.JSONDecoder hands the C scanner: json.loads' defaults."""

    object_hook = object_pairs_hook = None
    parse_float, parse_int, strict = float, int, True
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__
    memo: dict = {}


def _loads(text: str):
    """json.loads(text) (raises ValueError or StopIteration where it raises)."""
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    value, end = _json.make_scanner(_ScanContext)(text, start)
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data")
    return value


def _refuse(value):
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _canonical(value) -> str:
    """fleet.secrets.canonical: json.dumps(value, sort_keys=True, ensure_ascii=False,
    separators=(",", ":")) (tests/test_fastpath.py keeps the two equal)."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, str):
        return _json.encode_basestring(value)
    return "".join(_encoder()(value, 0))


def _encoder():
    """json.dumps' C encoder for canonical(), made once."""
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = _json.make_encoder({}, _refuse, _json.encode_basestring, None, ":", ",",
                                      True, False, True)
    return _ENCODER


_ENCODER = None


def _sha256_hex(data: bytes) -> str:
    return _sha256(data).hexdigest()


class _Hmac:
    """HMAC-SHA256 with one key (RFC 2104, as hmac.new(key, msg, sha256) computes it)."""

    def __init__(self, key: bytes):
        self.key = key
        if len(key) > 64:
            key = _sha256(key).digest()
        key = key.ljust(64, b"\0")
        self.inner = _sha256(bytes(b ^ 0x36 for b in key))
        self.outer = _sha256(bytes(b ^ 0x5C for b in key))

    def value_hash(self, value) -> str:
        """fleet.secrets.value_hash (tests/test_fastpath.py keeps the two equal)."""
        inner = self.inner.copy()
        inner.update(_canonical(value).encode("utf-8"))
        outer = self.outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()[:32]


def _resolve(kind: str, arg: str, home: str, environ) -> str:
    """The value of a key reference, as fleet.secrets.resolve gives it. ``env`` and
    ``file`` are read here (that module imports dataclasses); a command is run through
    ``resolve`` itself (its process group is killed on timeout); any failure is _Unsure."""
    if kind == "env":
        value = environ.get(arg) or ""
    elif kind == "file" and (arg == "~" or arg.startswith("~/")):
        value = _read(os.path.join(home, arg[2:]) if arg != "~" else home).decode("utf-8")
    elif kind == "file":
        value = _read(os.path.expanduser(os.path.expandvars(arg))).decode("utf-8")
    elif kind in ("cmd", "shell"):
        from taosync.fleet.secrets import Reference, SecretError, resolve

        try:
            return resolve(Reference(kind, arg), environ=environ, home=_as_path(home)).reveal()
        except SecretError:
            raise _Unsure from None
    else:
        raise _Unsure
    if kind == "file":  # read as text, as Path.read_text does: universal newlines
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    if not value.strip() or (kind == "env" and not (arg.isascii() and arg.isidentifier())):
        raise _Unsure
    return value.strip()


def _as_path(home: str):
    from pathlib import Path

    return Path(home)


class _Decoder:
    """Turns a cached patch value into the plain value the full path would hash: the
    key put back, each MCP secret resolved (once per reference)."""

    def __init__(self, key: str, home: str, environ):
        self.key, self.home, self.environ = key, home, environ
        self.secrets = [key]  # every secret value met: output holding one is unsure
        self.mcp: dict[str, str] = {}

    def __call__(self, value):
        if isinstance(value, str):
            return self.key if value == KEY_TOKEN else value.replace(KEY_TOKEN, self.key)
        if isinstance(value, dict):
            if len(value) == 1 and MCP_TOKEN in value:
                return self._mcp(value[MCP_TOKEN])
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value

    def _mcp(self, text: str) -> str:
        if text not in self.mcp:
            from taosync.fleet.logic import split_secret_reference

            parts = split_secret_reference(text)
            if parts is None:
                raise _Unsure
            prefix, ref, suffix = parts
            value = _resolve(ref.kind, ref.arg, self.home, self.environ)
            self.mcp[text] = prefix + value + suffix
            self.secrets.append(value)
        return self.mcp[text]


def _decide(command: str, flags: set[str], options: dict, environ):
    """(stderr lines, stdout lines) of a no-op run, or _Unsure."""
    if sys.platform == "win32":
        raise _Unsure
    home, sandboxed = _home(options, environ)
    config = _config_path(options, home, sandboxed, environ)
    state_dir = _state_dir(home, sandboxed, environ)
    if os.path.exists(os.path.join(state_dir, "journal.json")):
        raise _Unsure  # an interrupted apply: the full path puts its files back
    state = _loads(_read(os.path.join(state_dir, "state.json")).decode("utf-8"))
    hmac_key = _Hmac(bytes.fromhex(_read(os.path.join(state_dir, "hmac.key")).decode().strip()))
    _check_shape(state)
    entry = state["inputs"]
    fp = entry["fingerprint"]
    try:
        fleet_sha = _sha256_hex(_read(config))
    except OSError:
        raise _Unsure from None
    if not fingerprint_holds(fp, fleet_sha=fleet_sha, home=home, sandboxed=sandboxed,
                             environ=environ):
        raise _Unsure
    kind, arg = entry["key_ref"]
    key = _resolve(kind, arg, home, environ)
    if hmac_key.value_hash(key) != fp["key"]:
        raise _Unsure
    decode = _Decoder(key, home, environ)
    files = _desired(entry["patches"], decode)
    if set(files) != set(state["files"]):
        raise _Unsure  # a file to create, or one owned no more: the full path plans it
    in_work_tree = _WorkTrees()
    for path, (clients, values, volatile) in files.items():
        _untouched(path, state["files"][path], values, volatile, hmac_key, in_work_tree)
        lead = [kp for p in entry["patches"] if p["path"] == path for kp in p["lead"]]
        if state["files"][path].get("lead", []) != list(dict.fromkeys(lead)):
            raise _Unsure  # engine/plan.py _untouched: the elements kept first changed
    # an "info:" note is printed with -v only (report.print_warnings), which falls through
    warnings = [line for line in entry["warnings"] if not line.startswith("info: ")]
    out = _report(command, flags, files, home, state, sandboxed, options)
    if any(s in line for s in decode.secrets for line in warnings + out):
        raise _Unsure  # the full path's redactor would rewrite that line
    if warnings:
        _check_redaction(warnings, decode.secrets, hmac_key.key, state)
    return warnings, out


def _check_redaction(lines: list[str], secrets: list[str], hmac_key: bytes, state: dict):
    """_Unsure when the full path's redactor would change any of ``lines`` (an escaped
    spelling of a secret, a key written long ago): warnings quote fleet.yaml, so they
    are checked by the redactor itself (rare: it costs the imports this module avoids)."""
    from taosync.fleet.secrets import Redactor, Secret

    known = [h for h in state.get("secrets", []) if isinstance(h, str)]  # as
    known += [o["hash"] for f in state["files"].values()  # State.remembered_secrets
              for o in f["owned"].values() if o.get("secret")]
    known.append(state["inputs"]["fingerprint"]["key"])
    redactor = Redactor(Secret(secrets[0]), hmac_key=hmac_key, known_hashes=known)
    for value in secrets[1:]:
        redactor.add(value)
    if any(redactor.scrub(line) != line for line in lines):
        raise _Unsure


_FILE_FIELDS = {"path": str, "format": str, "clients": list, "sha256": str, "owned": dict,
                "created": list, "skeleton": list, "created_file": bool, "secret": bool,
                "lead": list}
_OWNED_FIELDS = {"hash", "value", "secret", "volatile", "release", "prior"}


def _file_ok(entry) -> bool:
    """engine/state.py FileState.from_json would take ``entry``."""
    return (isinstance(entry, dict) and set(entry) | {"lead"} == set(_FILE_FIELDS)
            and all(isinstance(entry.get(k, []), t) for k, t in _FILE_FIELDS.items())
            and all(isinstance(item, str) for item in entry.get("lead", []))
            and all(isinstance(item, str) for k in ("clients", "created", "skeleton")
                    for item in entry[k])
            and all(isinstance(o, dict) and isinstance(o.get("hash"), str)
                    and isinstance(o.get("release", "delete"), str) and set(o) <= _OWNED_FIELDS
                    for o in entry["owned"].values()))


def _record_ok(record) -> bool:
    """engine/state.py _apply_record would take ``record``."""
    return (isinstance(record, dict) and {"id", "time", "kind", "files"} <= set(record)
            <= {"id", "time", "kind", "files", "undoes"}
            and isinstance(record.get("undoes", []), list)
            and all(type(i) is int for i in record.get("undoes", []))
            and type(record["id"]) is int and isinstance(record["time"], str)
            and isinstance(record["kind"], str) and isinstance(record["files"], list)
            and all(isinstance(f, dict) and isinstance(f.get("path"), str)
                    and (f.get("backup") is None or isinstance(f["backup"], str))
                    and (f.get("mode") is None or type(f["mode"]) is int)
                    and isinstance(f.get("clients", []), list)
                    and all(isinstance(c, str) for c in f.get("clients", []))
                    and (f.get("action") is None or isinstance(f["action"], str))
                    and (f.get("before") is None or _file_ok(f["before"]))
                    for f in record["files"]))


def _check_shape(state) -> None:
    """The parts of the state the full path checks on load (engine/state.py), checked
    for their types, so a damaged state.json is reported by the full path."""
    if not isinstance(state, dict) or state.get("version", 1) != 1:
        raise _Unsure
    if not all(_file_ok(entry) for entry in state["files"].values()):
        raise _Unsure
    if not all(_record_ok(record) for record in state["applies"]):
        raise _Unsure
    inputs = state["inputs"]

    def strings(items) -> bool:
        return isinstance(items, list) and all(isinstance(i, str) for i in items)

    def pairs(items) -> bool:
        return isinstance(items, list) and all(
            isinstance(i, list) and len(i) == 2 and isinstance(i[0], str) for i in items)

    # engine/state.py _render_cache_ok: the full path treats any other shape as a miss
    if not (isinstance(inputs, dict) and isinstance(inputs["fingerprint"], dict)
            and isinstance(inputs["fingerprint"]["env"], dict)
            and isinstance(inputs["fingerprint"]["paths"], dict)
            and strings(inputs["key_ref"]) and len(inputs["key_ref"]) == 2
            and strings(inputs["clients"]) and strings(inputs["warnings"])
            and isinstance(inputs["patches"], list)
            and all(isinstance(p, dict) and all(isinstance(p.get(k), str)
                                                for k in ("path", "format", "client"))
                    and isinstance(p.get("secret"), bool)
                    and all(pairs(p.get(k)) for k in ("values", "skeleton", "volatile"))
                    and strings(p.get("lead"))
                    for p in inputs["patches"])
            and isinstance(state.get("secrets", []), list)
            and strings(state.get("made_dirs", []))):
        raise _Unsure


def _desired(patches: list, decode: _Decoder) -> dict:
    """path → (clients, {key path: plain value}, volatile key paths), merged across
    patches as engine/plan.py merge_patches does; any disagreement is _Unsure."""
    files: dict[str, tuple[list, dict, set]] = {}
    formats: dict[str, str] = {}
    for patch in patches:
        clients, values, volatile = files.setdefault(patch["path"], ([], {}, set()))
        if formats.setdefault(patch["path"], patch["format"]) != patch["format"]:
            raise _Unsure
        if patch["client"] not in clients:
            clients.append(patch["client"])
        for kp, raw in patch["values"]:
            value = decode(raw)
            if kp in values and _canonical(values[kp]) != _canonical(value):
                raise _Unsure
            values[kp] = value
        volatile.update(kp for kp, _ in patch["volatile"])
    return files


def _untouched(path: str, previous: dict, values: dict, volatile: set, hmac_key: _Hmac,
               in_work_tree: "_WorkTrees") -> None:
    """engine/plan.py ``_untouched`` on the disk itself: the file is byte for byte what
    taosync left, and owns exactly the wanted values; else _Unsure."""
    st = os.stat(path)  # through symlinks, as the read below
    if not stat.S_ISREG(st.st_mode):
        raise _Unsure
    data = _read(path)
    data.decode("utf-8")  # not UTF-8: the full path says so
    if _sha256_hex(data) != previous["sha256"]:
        raise _Unsure
    owned = previous["owned"]
    if {k for k, o in owned.items() if o.get("volatile")} != volatile:
        raise _Unsure
    fixed = {k: o["hash"] for k, o in owned.items() if not o.get("volatile")}
    if fixed != {kp: hmac_key.value_hash(v) for kp, v in values.items()}:
        raise _Unsure
    if previous["secret"] and (in_work_tree(path) or in_work_tree(os.path.realpath(path))):
        raise _Unsure  # the dotfiles guard may warn (engine/dotfiles.py)


class _WorkTrees:
    """engine/dotfiles.py work_tree, without pathlib: a ``.git`` in any parent. Each
    directory is looked at once per run (the targets share most of their parents)."""

    def __init__(self):
        self.known: dict[str, bool] = {}

    def __call__(self, path: str) -> bool:
        parent, walked = os.path.dirname(os.path.abspath(path)), []
        while parent not in self.known:
            walked.append(parent)
            if os.path.lexists(os.path.join(parent, ".git")):
                self.known[parent] = True
                break
            up = os.path.dirname(parent)
            if up == parent:
                self.known[parent] = False
                break
            parent = up
        found = self.known[parent]
        for directory in walked:
            self.known[directory] = found
        return found


def _display(path: str, home: str) -> str:
    """pipeline.display_path: ``~/…`` under home."""
    if path == home:
        return "~/."
    prefix = home if home.endswith("/") else home + "/"
    return "~/" + path[len(prefix):] if path.startswith(prefix) else path


def _report(command: str, flags: set[str], files: dict, home: str, state: dict,
            sandboxed: bool, options: dict) -> list[str]:
    """What the command prints on stdout when every file is up to date (the words of
    commands/apply.py, commands/report.py print_plan and ui.home_header, status.py)."""
    n = len(files)
    if command == "apply":
        out = [f"nothing to do: {n} file(s) up to date"]
        if "--no-verify" not in flags:
            out.append("not verifying: nothing changed (run taosync verify to check anyway)")
        return out
    if command == "status":
        if not state["applies"]:
            raise _Unsure
        return [f"in sync: {n} file(s), no drift, nothing pending"]
    out = []
    if sandboxed:
        header = (f"home: {_display_home(home, options['home'])}  "
                  "(--home; ~/ below means this directory)")
        out.append(_DIM.format(header) if _color() else header)
    return out + [f"No changes: {n} file{'s' if n != 1 else ''} "
                  f"match{'es' if n == 1 else ''} fleet.yaml"]


def _color() -> bool:
    """settings.color_wanted("auto") (--color itself sends a run to the full path)."""
    force = os.environ.get("FORCE_COLOR", "")
    if force and force.lower() not in ("0", "false"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _display_home(home: str, raw: str) -> str:
    """paths.display_home: ``./sandbox`` under the current directory, else as given."""
    cwd = os.getcwd()
    if home == cwd:
        return "."
    if home.startswith(cwd.rstrip("/") + "/"):
        return "./" + home[len(cwd.rstrip("/")) + 1:]
    if not os.path.isabs(raw):
        raise _Unsure  # pathlib would print the relative spelling; leave it to the full path
    return home
