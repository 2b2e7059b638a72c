"""fleet.yaml → a checked fleet, or every problem in it, each with its line and column.

The pipeline, each step run only when the one before it could read the file:

1. read the bytes (at most :data:`MAX_BYTES`; UTF-8, located error if not);
2. parse with ruamel.yaml round-trip, which keeps the line and column of every node
   (syntax errors, tabs, duplicate keys → located errors; every duplicate is found).
   Steps 2–6 first run on ruamel's faster safe loader, which keeps no positions; only
   if they find a problem (or the file uses what the two loaders read differently:
   merge keys, dates, tags) do they run again on the round-trip tree, so every
   message is located exactly as before. Positions asked for later (a key that will
   not resolve) parse the round-trip tree then;
3. convert to plain JSON-like data (string keys, finite numbers, no custom tags);
4. normalise ``gateway.base_url`` (http(s) only; a trailing ``/v1`` or ``/`` is dropped
   with a warning);
5. check against the committed JSON schema (``taosync/schemas/fleet.schema.json``,
   generated from the pydantic model). A small exact validator for the keywords that
   schema uses answers "valid" without importing jsonschema (~100 ms of start-up);
   only when it says "invalid" does jsonschema run, to word every error;
6. cross-checks: routes name catalogue models, client slots name routes or models,
   ``default_route`` is a route, ``${…}`` references in ``mcp_servers`` resolve,
   Codex's provider id is not ``openai``;
7. resolve the key reference (``~`` means ``--home``); a literal key is a warning;
8. build the typed fleet: the run-time view of the checked data
   (:class:`~taosync.fleet.view.FleetView`, same answers as the pydantic model, no pydantic).

Every problem found is reported in one :class:`FleetInvalid`, sorted by line. Messages
never hold the key: a literal or resolved key is scrubbed from every message.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from taosync.errors import TaosyncError
from taosync.fleet import secrets as _secrets
from taosync.fleet.secrets import Reference, Secret, SecretError, parse_reference
from taosync.fleet.options import SLOT, SLOT_LIST, SLOT_MAP
from taosync.fleet.schema import client_entries
from taosync.fleet.logic import FLEET_REFERENCE, McpSecret, mcp_secret_values

try:  # the builtin module skips loading OpenSSL (~5 ms), as the stdlib's random does
    from _sha256 import sha256 as _sha256  # Python 3.11
except ImportError:  # pragma: no cover - 3.12+ renamed it; any hashlib is fine
    try:
        from _sha2 import sha256 as _sha256
    except ImportError:
        from hashlib import sha256 as _sha256

if TYPE_CHECKING:
    from taosync.fleet.view import FleetView

#: fleet.yaml larger than this is refused without parsing (1 MiB)
MAX_BYTES = 1024 * 1024
#: values after alias expansion (a "billion laughs" file stops here)
MAX_NODES = 100_000
#: nesting levels below the top-level mapping (checked while parsing, and after aliases)
MAX_DEPTH = 64
#: mirrors ``model.SUPPORTED_VERSIONS`` (a test keeps them equal) so this module never
#: imports pydantic just to read it
SUPPORTED_VERSIONS = (1,)


def __getattr__(name: str):
    # client ids come from the schema (generated from the client registry), read on use
    if name == "KNOWN_CLIENTS":
        return tuple(client_entries())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_URL_FIELDS = ("base_url", "anthropic_base_url", "openai_base_url")
_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "nothing"}
_BRANCH_NAMES = {"McpStdio": "a stdio server", "McpHttp": "an http server"}

PathT = tuple  # of str (mapping key) | int (list index)


# -- the public shapes ----------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One problem (or warning) in fleet.yaml, tied to a line and column (1-based).

    ``line == 0`` means the file as a whole (it does not exist or cannot be read).
    """

    file: str
    line: int
    column: int
    yaml_path: str
    message: str
    severity: str = "error"  # error | warning

    def format(self) -> str:
        """``fleet.yaml:LINE:COL: <yaml path>: message`` (compiler style)."""
        parts = [f"{self.file}:{self.line}:{self.column}" if self.line else self.file]
        if self.yaml_path:
            parts.append(self.yaml_path)
        parts.append(self.message if self.severity == "error" else f"warning: {self.message}")
        return ": ".join(parts)

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column,
                "path": self.yaml_path, "message": self.message, "severity": self.severity}


def _order(p: Problem):
    return (p.line, p.column, p.severity != "error")


class FleetInvalid(TaosyncError):
    """fleet.yaml cannot be used: every problem found, sorted by line (exit code 2)."""

    exit_code = 2

    def __init__(self, file: str, problems: Iterable[Problem],
                 warnings: Iterable[Problem] = ()) -> None:
        self.file = file
        self.problems: list[Problem] = sorted(problems, key=_order)
        self.warnings: list[Problem] = sorted(warnings, key=_order)
        n = len(self.problems)
        super().__init__(
            f"{file}: {n} problem{'' if n == 1 else 's'}; nothing was written",
            details=[p.format() for p in self.all()],
        )

    def all(self) -> list[Problem]:
        """Problems and warnings together, in file order."""
        return sorted(self.problems + self.warnings, key=_order)


@dataclass
class Loaded:
    """A checked fleet.yaml.

    ``fleet`` is the typed fleet (a :class:`~taosync.fleet.view.FleetView`; ``None`` only
    when :func:`load_fleet` was called with ``model=False``); ``data`` is the same content
    as plain data, normalised (what the view reads); ``key`` is ``None`` when the key was
    not resolved.
    """

    path: Path
    text: str
    sha256: str
    fleet: "FleetView | None"
    key: Secret | None
    key_ref: Reference
    warnings: list[Problem] = field(default_factory=list)
    data: dict = field(default_factory=dict, repr=False)


def load_fleet(path: Path, *, home: Path, environ: Mapping[str, str] | None = None,
               resolve_key: bool = True, model: bool = True,
               key_timeout: float | None = None) -> Loaded:
    """Load, check and (by default) resolve fleet.yaml; raise :class:`FleetInvalid`.

    ``home`` is what ``~`` means in ``${file:~/…}`` (``--home``). ``model=False`` skips
    building the typed fleet (``taosync validate`` needs only the checks).
    """
    return _Loader(Path(path), home=home, environ=environ, resolve_key=resolve_key,
                   key_timeout=key_timeout).run(build_model=model)


# -- the pipeline -------------------------------------------------------------------


class _Stop(Exception):
    """Stop the pipeline: what is found so far is all that can be found."""


class _TooMany(Exception):
    pass


class _NotFast(Exception):
    """The safe loader's tree may not read as the round-trip one would: use that."""


class _TooDeep(Exception):
    """The YAML nests deeper than :data:`MAX_DEPTH`; raised while parsing, at ``mark``."""

    def __init__(self, mark) -> None:
        super().__init__()
        self.line, self.column = mark.line + 1, mark.column + 1


class _Loader:
    def __init__(self, path: Path, *, home: Path, environ, resolve_key: bool,
                 key_timeout: float | None) -> None:
        self.path = path
        self.file = str(path)
        self.home = home
        self.environ = environ
        self.resolve_key = resolve_key
        self.key_timeout = key_timeout
        self.root: Any = None  # the ruamel round-trip tree (positions), parsed when needed
        self.fast = False  # converting the safe loader's tree (no positions) right now
        self.text = ""
        self.digest = ""
        self._nodes = 0
        self.key: Secret | None = None
        self.key_ref: Reference | None = None
        #: MCP env/header value text → its resolved secret (step 7)
        self.mcp_secrets: dict[str, McpSecret] = {}
        self.forget_findings()

    def forget_findings(self) -> None:
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self._seen: set[tuple] = set()
        #: paths already reported (a bad URL, a value replaced by a placeholder): the
        #: schema step says nothing more about them
        self._reported: set[PathT] = set()

    # ---- reporting

    def at(self, line: int, column: int, message: str, path: PathT = (),
           severity: str = "error") -> None:
        marker = (line, column, path, message, severity)
        if marker in self._seen:
            return
        self._seen.add(marker)
        problem = Problem(self.file, line, column, format_path(path), message, severity)
        (self.errors if severity == "error" else self.warnings).append(problem)

    def error(self, path: PathT, message: str, at: str = "value") -> None:
        line, col = self.position(path, at)
        self.at(line, col, message, path)

    def warn(self, path: PathT, message: str, at: str = "value") -> None:
        line, col = self.position(path, at)
        self.at(line, col, message, path, severity="warning")

    def fail(self) -> FleetInvalid:
        self.scrub()
        return FleetInvalid(self.file, self.errors, self.warnings)

    # ---- the run

    def run(self, build_model: bool) -> Loaded:
        try:
            self.read()
            data = self.checked(fast=True)
            if self.errors or self.warnings:  # find them again where positions are known
                self.forget_findings()
                data = self.checked(fast=False)
            self.check_key(data)
            self.check_mcp_secrets(data)
        except _Stop:
            pass
        if self.errors:
            raise self.fail()
        fleet = self.build_model(data) if build_model else None
        if fleet is not None:
            fleet.attach_mcp_secrets(self.mcp_secrets)
        self.scrub()
        assert self.key_ref is not None
        return Loaded(path=self.path, text=self.text, sha256=self.digest, fleet=fleet,
                      key=self.key, key_ref=self.key_ref,
                      warnings=sorted(self.warnings, key=_order), data=data)

    def checked(self, fast: bool) -> dict:
        """Steps 2–6 (the ones that need no key) on the safe loader's tree when ``fast``
        (and it can be used), else on the round-trip tree."""
        data = None
        if fast:
            try:
                data = self.parse(fast=True)
            except _NotFast:
                pass
        if data is None:
            data = self.parse(fast=False)
        self.normalise_urls(data)
        self.check_schema(data)
        self.cross_check(data)
        return data

    # ---- 1. bytes

    def read_bytes(self) -> bytes:
        path = self.path
        try:
            with open(path, "rb") as fh:
                raw = fh.read(MAX_BYTES + 1)
                if len(raw) > MAX_BYTES:
                    import os

                    size = os.fstat(fh.fileno()).st_size
                    size_text = f"{size / 1e6:.1f} MB" if size > len(raw) else "more than 1 MB"
                    self.at(1, 1, f"the file is {size_text}; a fleet.yaml is at most 1 MB "
                            "(is this the right file?)")
                    raise _Stop
        except FileNotFoundError:
            self.at(0, 0, "no such file. Pass -c PATH or set $TAOSYNC_CONFIG; without them "
                    "taosync reads ./fleet.yaml, else $XDG_CONFIG_HOME/taosync/fleet.yaml "
                    "(`taosync init` writes a starter, `taosync import` proposes one from your clients)")
            raise _Stop from None
        except IsADirectoryError:
            self.at(0, 0, "is a directory, not a fleet.yaml file; pass -c PATH/fleet.yaml")
            raise _Stop from None
        except PermissionError:
            self.at(0, 0, "cannot be read: permission denied (check its mode and owner)")
            raise _Stop from None
        except OSError as exc:
            self.at(0, 0, f"cannot be read: {exc.strerror or type(exc).__name__}")
            raise _Stop from None
        return raw

    def decode(self, raw: bytes) -> str:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            self.at(1, 1, "the file is UTF-16; save it as UTF-8")
            raise _Stop
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = exc.start
            line = raw.count(b"\n", 0, start) + 1
            line_start = raw.rfind(b"\n", 0, start) + 1
            col = len(raw[line_start:start].decode("utf-8", errors="replace")) + 1
            self.at(line, col, f"not valid UTF-8 (byte 0x{raw[start]:02x}); save the file "
                    "as UTF-8")
            raise _Stop from None
        return text[1:] if text.startswith("\ufeff") else text

    def read(self) -> None:
        raw = self.read_bytes()
        self.digest = _sha256(raw).hexdigest()
        self.text = self.decode(raw)
        if not self.text.strip() or _only_comments(self.text):
            self.at(1, 1, "the file is empty; start with `version: 1`, then gateway:, "
                    "models: and routes: (see the example fleet.yaml)")
            raise _Stop

    # ---- 2./3. YAML

    def parse(self, fast: bool) -> dict:
        root = self.parse_safe(self.text) if fast else self.tree()
        if root is None:
            self.at(1, 1, "the file holds no YAML document; start with `version: 1`")
            raise _Stop
        if not isinstance(root, dict):
            line, col = self.position(())
            what = "a list" if isinstance(root, list) else "a single value"
            self.at(line, col, f"the top level is {what}; fleet.yaml is a mapping "
                    "(version:, gateway:, models:, routes:, …)")
            raise _Stop
        self._nodes, self.fast = 0, fast
        try:
            return self.plain(root, (), 0, set())
        except _TooMany:
            self.at(1, 1, f"the file expands to more than {MAX_NODES} values "
                    "(YAML aliases repeated?)")
            raise _Stop from None
        finally:
            self.fast = False

    def tree(self):
        """The round-trip tree (parsed on first use)."""
        if self.root is None:
            self.root = self.parse_yaml(self.text)
        return self.root

    def parse_safe(self, text: str):
        """The safe loader's tree, or _NotFast when it could differ from the round-trip
        tree's data (merge keys: key order) or when it does not load (the round-trip
        parse then says why, located)."""
        if "<<" in text:
            raise _NotFast
        try:
            return _load_yaml("safe", text)
        except Exception:
            raise _NotFast from None

    def parse_yaml(self, text: str):
        from ruamel.yaml.constructor import DuplicateKeyError
        from ruamel.yaml.error import MarkedYAMLError, YAMLError
        from ruamel.yaml.reader import ReaderError

        try:
            return _load_yaml("rt", text)
        except _TooDeep as exc:
            self.at(exc.line, exc.column, f"nested deeper than {MAX_DEPTH} levels; "
                    "a fleet.yaml needs only a few")
        except DuplicateKeyError as exc:
            if not self.all_duplicates(text):
                self.marked(exc)
        except MarkedYAMLError as exc:
            self.marked(exc)
        except ReaderError as exc:
            line, col = _line_col(text, exc.position)
            char = exc.character
            code = f"U+{ord(char):04X}" if isinstance(char, str) else f"0x{char:02x}"
            self.at(line, col, f"character {code} is not allowed in YAML "
                    "(a control character? quote it as an escape in double quotes)")
        except RecursionError:
            self.at(1, 1, "the YAML nests too deeply")
        except YAMLError as exc:
            self.at(1, 1, f"YAML error: {str(exc).splitlines()[0] if str(exc) else exc!r}")
        except Exception as exc:  # a parser bug must not become a traceback
            self.at(1, 1, f"cannot parse this YAML ({type(exc).__name__}: {exc})")
        raise _Stop

    def marked(self, exc) -> None:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = (exc.problem or "").strip()
        if "'\\t'" in problem or "\t" in problem:
            self.at(line, col, "a tab character here: YAML indents with spaces, never tabs")
            return
        message = f"YAML syntax error: {problem or 'invalid YAML'}"
        context = (exc.context or "").strip()
        if context and exc.context_mark is not None and exc.context_mark is not mark:
            cm = exc.context_mark
            message += f" ({context} at line {cm.line + 1}, column {cm.column + 1})"
        elif context:
            message += f" ({context})"
        self.at(line, col, message)

    def all_duplicates(self, text: str) -> bool:
        """Report every duplicate key (ruamel stops at the first). False if none found."""
        try:
            from ruamel.yaml import YAML
            from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

            node = YAML(typ="rt").compose(text)
        except Exception:
            return False
        found = False
        stack, visited = [node], set()
        while stack:
            n = stack.pop()
            if n is None or id(n) in visited:
                continue
            visited.add(id(n))
            if isinstance(n, MappingNode):
                first: dict = {}
                for knode, vnode in n.value:
                    stack.extend((knode, vnode))
                    if not isinstance(knode, ScalarNode) or knode.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = knode.value
                    mark = knode.start_mark
                    if key in first:
                        found = True
                        self.at(mark.line + 1, mark.column + 1,
                                f"duplicate key '{key}' (first at line {first[key].line + 1}); "
                                "the later one would silently win, so remove one")
                    else:
                        first[key] = mark
            elif isinstance(n, SequenceNode):
                stack.extend(n.value)
        return found

    def plain(self, node, path: PathT, depth: int, active: set):
        """The ruamel tree as plain JSON-like data; odd values become located errors."""
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _TooMany
        if depth > MAX_DEPTH:
            self.placeholder(path, f"nested deeper than {MAX_DEPTH} levels")
            return None
        if isinstance(node, dict):
            if id(node) in active:
                self.placeholder(path, "a YAML alias that contains itself")
                return None
            active.add(id(node))
            out: dict = {}
            for k, v in node.items():
                if not isinstance(k, str):
                    line, col = self.position(path)
                    try:
                        kl, kc = node.lc.key(k)
                        line, col = kl + 1, kc + 1
                    except Exception:
                        pass
                    self.at(line, col, f"the key {_yaml_scalar(k)} is not a string; quote it "
                            "(keys are names)", path)
                    continue
                out[str(k)] = self.plain(v, path + (str(k),), depth + 1, active)
            active.discard(id(node))
            return out
        if isinstance(node, (list, tuple)):
            if id(node) in active:
                self.placeholder(path, "a YAML alias that contains itself")
                return None
            active.add(id(node))
            out_list = [self.plain(v, path + (i,), depth + 1, active) for i, v in enumerate(node)]
            active.discard(id(node))
            return out_list
        if node is None or isinstance(node, bool):
            return node
        if self.fast and type(node) not in (str, int, float):
            raise _NotFast  # dates, binary, sets: as the round-trip tree has them
        if type(node).__name__ == "ScalarBoolean":  # ruamel's anchored bool is an int
            return bool(node)
        if isinstance(node, int):
            return int(node)
        if isinstance(node, float):
            if not math.isfinite(node):
                self.placeholder(path, f"{node!r} is not a finite number")
                return None
            return float(node)
        if isinstance(node, str):
            return str(node)
        import datetime

        if isinstance(node, datetime.date):  # an unquoted date: the user meant the text
            return node.isoformat()
        tag = getattr(getattr(node, "tag", None), "value", None) or getattr(node, "tag", None)
        if isinstance(node, bytes):
            what = "a !!binary value"
        elif isinstance(tag, str):
            what = f"the YAML tag {tag}"
        else:
            what = f"a YAML {type(node).__name__}"
        self.placeholder(path, f"{what} is not supported here; write a plain value")
        return None

    def placeholder(self, path: PathT, message: str) -> None:
        """Report a value ``plain`` replaces by None, and keep later steps quiet about it."""
        self.error(path, message)
        self._reported.add(path)

    # ---- 4. URLs

    def normalise_urls(self, data: dict) -> None:
        gateway = data.get("gateway")
        if not isinstance(gateway, dict):
            return
        for name in _URL_FIELDS:
            url = gateway.get(name)
            if not isinstance(url, str):
                continue
            path = ("gateway", name)
            problem = _url_problem(url)
            if problem:
                self.error(path, problem)
                self._reported.add(path)
                continue
            if name != "base_url":
                continue  # overrides are exact URLs, taken as written
            root = url
            while root.endswith("/"):
                root = root[:-1]
            dropped_v1 = root.endswith("/v1")
            if dropped_v1:
                root = root[:-3].rstrip("/")
            if root == url or _url_problem(root):
                continue
            gateway[name] = root
            if dropped_v1:
                why = ("give the gateway root: taosync adds /v1 for the OpenAI-shaped clients "
                       "(Codex, Cline, Continue) and Claude Code appends /v1/messages itself; "
                       "a gateway that really lives under …/v1 takes openai_base_url and "
                       "anthropic_base_url")
            else:
                why = "dropped the trailing /: the clients append their own paths"
            self.warn(path, f"normalised {_safe_url(url)} to {_safe_url(root)}: {why}")

    # ---- 5. schema

    def check_schema(self, data: dict) -> None:
        from taosync.fleet import schema as _schema

        try:
            schema = _schema.load()
        except (OSError, ValueError) as exc:  # a broken install, not bad input
            raise TaosyncError(f"the fleet schema shipped with taosync cannot be read "
                               f"({exc}); reinstall taosync") from None
        try:
            if fast_valid(schema, data):
                return
        except Unsupported:
            pass
        from jsonschema.validators import Draft202012Validator

        self._schema = schema
        for err in Draft202012Validator(schema).iter_errors(data):
            self.schema_error(err)

    def schema_error(self, err) -> None:
        path = tuple(err.absolute_path)
        kind = err.validator
        inst = err.instance
        value = err.validator_value
        schema = err.schema if isinstance(err.schema, dict) else {}

        if path in self._reported:
            return
        if path == ("version",):
            self.error(path, f"unsupported version {_scalar_text(inst)}: this taosync reads "
                       f"version {', '.join(map(str, SUPPORTED_VERSIONS))}")
            return
        if "propertyNames" in err.relative_schema_path or "propertyNames" in err.schema_path:
            allowed = _allowed(value)
            name = inst if isinstance(inst, str) else str(inst)
            noun = "role" if path[-1:] == ("roles",) else "key"
            self.error(path + (name,), f"unknown {noun} '{name}'{did_you_mean(name, allowed)}"
                       f" ({noun}s: {', '.join(allowed)})", at="key")
            return
        if kind in ("anyOf", "oneOf"):
            self.branch_error(err, path)
            return
        if kind == "additionalProperties" and isinstance(inst, dict):
            props = list(schema.get("properties", {}))
            for key in inst:
                if key in props:
                    continue
                if path == ("clients",):
                    msg = (f"unknown client '{key}'{did_you_mean(key, props)} "
                           f"(taosync configures {', '.join(props)})")
                else:
                    where = "top-level key" if not path else "key"
                    msg = f"unknown {where} '{key}'{did_you_mean(key, props)}"
                    if props:
                        msg += f" (allowed: {', '.join(props)})"
                self.error(path + (key,), msg, at="key")
            return
        if kind == "required" and isinstance(inst, dict):
            for name in value:
                if name in inst:
                    continue
                if not path and name == "version":
                    self.error(path, "version is missing: add `version: 1` at the top (this "
                               f"taosync reads version {SUPPORTED_VERSIONS[0]})", at="key")
                else:
                    where = "key" if path else "top-level key"
                    self.error(path, f"missing required {where} '{name}'", at="key")
            return
        if kind == "type":
            wants = [value] if isinstance(value, str) else list(value)
            words = " or ".join(_TYPE_WORDS.get(w, w) for w in wants)
            hint = "; write {} for an empty mapping" if inst is None and "object" in wants else ""
            self.error(path, f"expected {words}, got {_kind(inst, path)}{hint}")
            return
        if kind == "enum":
            allowed = _allowed(value)
            guess = did_you_mean(inst, allowed) if isinstance(inst, str) else ""
            self.error(path, f"{_kind(inst, path)} is not allowed here{guess} "
                       f"(one of: {', '.join(allowed)})")
            return
        if kind == "const":
            self.error(path, f"must be {_scalar_text(value)}, got {_kind(inst, path)}")
            return
        if kind == "pattern":
            self.error(path, _pattern_message(path, value, inst))
            return
        if kind == "minLength":
            self.error(path, "must not be empty")
            return
        if kind == "minProperties":
            if path == ("models",):
                self.error(path, "the catalogue is empty: list at least one model "
                           "(e.g. `gpt-4o-mini: {}`)", at="key")
            else:
                self.error(path, "must not be empty", at="key")
            return
        bounds = {"exclusiveMinimum": "greater than", "minimum": "at least",
                  "maximum": "at most", "exclusiveMaximum": "less than"}
        if kind in bounds:
            self.error(path, f"must be {bounds[kind]} {value:g}, got {_scalar_text(inst)}")
            return
        self.error(path, err.message)

    def branch_error(self, err, path: PathT) -> None:
        """anyOf/oneOf: find the branch the user meant and report its own errors."""
        inst = err.instance
        branches = [self.deref(b) for b in err.validator_value]
        groups: dict[int, list] = {}
        for sub in err.context or ():
            groups.setdefault(sub.relative_schema_path[0], []).append(sub)
        fitting = [i for i, b in enumerate(branches) if _type_fits(b, inst)]
        if not fitting:
            wants = " or ".join(dict.fromkeys(_describe(b) for b in branches))
            hint = "; write {} for an empty mapping" if inst is None else ""
            self.error(path, f"expected {wants}, got {_kind(inst, path)}{hint}")
            return
        if len(fitting) > 1 and isinstance(inst, dict):
            complete = [i for i in fitting
                        if all(r in inst for r in branches[i].get("required", ()))
                        and branches[i].get("required")]
            keyed = [i for i in fitting if branches[i].get("required")]
            if len(complete) > 1:
                names = " and ".join(f"{_branch_name(branches[i])} ('{branches[i]['required'][0]}')"
                                     for i in complete)
                self.error(path, f"mixes {names}; keep one", at="key")
                return
            if not complete and keyed and not any(
                    r in inst for i in keyed for r in branches[i]["required"]):
                options = " or ".join(f"'{branches[i]['required'][0]}' "
                                      f"({_branch_name(branches[i])})" for i in keyed)
                self.error(path, f"needs {options}", at="key")
                return

            def score(i):
                b = branches[i]
                props = b.get("properties", {})
                return (i in complete, sum(k in props for k in inst),
                        -len(groups.get(i, ())))

            fitting = [max(fitting, key=score)]
        subs = groups.get(fitting[0], [])
        if not subs:
            self.error(path, err.message)
        for sub in subs:
            self.schema_error(sub)

    def deref(self, branch):
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = self._schema.get("$defs", {}).get(ref[len("#/$defs/"):])
            if isinstance(target, dict):
                return target
        return branch if isinstance(branch, dict) else {}

    # ---- 6. cross-checks

    def cross_check(self, data: dict) -> None:
        models = data.get("models")
        routes = data.get("routes", {})
        models_ok = isinstance(models, dict)
        routes_ok = isinstance(routes, dict)
        model_ids = list(models) if models_ok else []
        route_names = list(routes) if routes_ok else []

        if models_ok and routes_ok:
            for name, target in routes.items():
                if isinstance(target, str) and target not in models:
                    msg = (f"route '{name}' names '{target}', which is not in models"
                           f"{did_you_mean(target, model_ids)}")
                    if target in routes:
                        msg += " (a route names a model, not another route)"
                    self.error(("routes", name), msg)

        default = data.get("default_route")
        if isinstance(default, str) and routes_ok and default not in routes:
            if default in model_ids:
                msg = (f"'{default}' is a model id, not a route; add a route for it "
                       "under routes: and name that route here")
            else:
                msg = f"'{default}' is not a route{did_you_mean(default, route_names)}"
                if route_names:
                    msg += f" (routes: {', '.join(route_names)})"
            self.error(("default_route",), msg)

        clients = data.get("clients")
        if isinstance(clients, dict):
            for name, value in clients.items():
                if value is None and name in client_entries():
                    self.warn(("clients", name), f"empty, so taosync leaves {name} alone; "
                              f"write `{name}: {{}}` to configure it with defaults, or "
                              "`enabled: false` to make that explicit", at="key")
            if models_ok and routes_ok:
                for path, slot in _slots(clients):
                    if slot not in routes and slot not in models:
                        self.error(path, f"'{slot}' is neither a route nor a catalogue model"
                                   f"{did_you_mean(slot, route_names + model_ids)}")
            for path, why in _reserved(clients):
                self.error(path, why)

        servers = data.get("mcp_servers")
        if isinstance(servers, dict) and models_ok and routes_ok:
            known = fleet_reference_names(model_ids, route_names)
            for name, server in servers.items():
                self.check_references(("mcp_servers", name), server, known)

    def check_references(self, path: PathT, value, known: list[str]) -> None:
        if isinstance(value, str):
            for m in FLEET_REFERENCE.finditer(value):
                ref = m.group(1)
                if ref not in known:
                    kind, dot, rest = ref.partition(".")
                    same_kind = [k.partition(".")[2] for k in known if dot and
                                 k.startswith(kind + ".")]
                    if same_kind:
                        match = closest(rest, same_kind)
                        match = match and f"{kind}.{match}"
                    else:
                        match = closest(ref, known)
                    if match:
                        guess = f"; did you mean ${{{match}}}?"
                    elif same_kind:
                        guess = f" ({kind}: {', '.join(same_kind)})"
                    else:
                        guess = ""
                    self.error(path, f"unknown reference ${{{ref}}}{guess}")
        elif isinstance(value, dict):
            for k, v in value.items():
                self.check_references(path + (k,), v, known)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.check_references(path + (i,), v, known)

    # ---- 7. the key

    def check_key(self, data: dict) -> None:
        gateway = data.get("gateway")
        raw = gateway.get("key") if isinstance(gateway, dict) else None
        if not isinstance(raw, str) or not raw.strip():
            return  # the schema step reported it
        path = ("gateway", "key")
        ref = parse_reference(raw)
        self.key_ref = ref
        if ref.kind == "literal":
            if "${" in raw:
                self.error(path, "not a key reference taosync knows; write ${env:NAME}, "
                           "${file:PATH}, ${cmd:COMMAND} or ${shell:COMMAND}")
                return
            self.warn(path, "a literal key in fleet.yaml: anyone who can read this file (or "
                      "your dotfiles repo) has it; use ${env:NAME}, ${file:PATH} or "
                      "${cmd:COMMAND}")
            if self.resolve_key:
                self.key = Secret(raw.strip(), "literal")
            return
        if not self.resolve_key:
            return
        timeout = self.key_timeout if self.key_timeout is not None else _secrets.CMD_TIMEOUT
        try:
            self.key = _secrets.resolve(ref, environ=self.environ, home=self.home,
                                        timeout=timeout)
        except SecretError as exc:
            self.error(path, f"cannot resolve {ref.describe()}: {exc}")
        except (OSError, ValueError) as exc:
            self.error(path, f"cannot resolve {ref.describe()}: {type(exc).__name__}")

    def check_mcp_secrets(self, data: dict) -> None:
        """Resolve each key reference in an MCP ``env``/``headers`` value, as the key is:
        one that cannot be resolved is a located error (nothing is written)."""
        timeout = self.key_timeout if self.key_timeout is not None else _secrets.CMD_TIMEOUT
        for path, text, parts in mcp_secret_values(data.get("mcp_servers")):
            if isinstance(parts, str):
                self.error(path, parts)
                continue
            if not self.resolve_key or text in self.mcp_secrets:
                continue
            prefix, ref, suffix = parts
            try:
                resolved = _secrets.resolve(ref, environ=self.environ, home=self.home,
                                            timeout=timeout)
            except SecretError as exc:
                reason = str(exc).replace("point gateway.key at", "use")
                self.error(path, f"cannot resolve {ref.describe()}: {reason}")
                continue
            except (OSError, ValueError) as exc:
                self.error(path, f"cannot resolve {ref.describe()}: {type(exc).__name__}")
                continue
            self.mcp_secrets[text] = McpSecret(text, prefix, ref, suffix, resolved)

    def scrub(self) -> None:
        """No message may hold a secret: replace any occurrence with its redacted form."""
        values: list[Secret] = list(self.mcp_secrets.values())
        if self.key is not None:
            values.append(self.key)
        if self.key_ref is not None and self.key_ref.kind == "literal":
            values.append(Secret(self.key_ref.arg.strip()))
        values = [v for v in values if len(v.reveal()) >= 8]
        if not values:
            return
        for bucket in (self.errors, self.warnings):
            for i, p in enumerate(bucket):
                message = p.message
                for v in values:
                    message = v.scrub(message)
                if message != p.message:
                    bucket[i] = Problem(p.file, p.line, p.column, p.yaml_path, message,
                                        p.severity)

    # ---- 8. the model

    def build_model(self, data: dict):
        """The typed fleet, read through the schema the data has just passed (exactly):
        the run-time view, which needs no pydantic (see fleet/view.py)."""
        from taosync.fleet import schema as _schema
        from taosync.fleet.view import FleetView

        return FleetView(data, _schema.load())

    # ---- positions

    def position(self, path: PathT, at: str = "value") -> tuple[int, int]:
        """1-based (line, column) of the node at ``path`` (or of its key, ``at="key"``).

        Walks the ruamel tree; where it has no record (a merged key, a key that is not
        there), the nearest enclosing node's position is used.
        """
        node = self.tree()
        pos = _own_position(node) or (0, 0)
        for i, part in enumerate(path):
            last = i == len(path) - 1
            lc = getattr(node, "lc", None)
            if isinstance(node, dict):
                key = _find_key(node, part)
                if key is _MISSING:
                    break
                kpos = vpos = None
                try:
                    kpos = tuple(lc.key(key))
                    vpos = tuple(lc.value(key))
                except Exception:
                    pass
                if last and (at == "key" or node[key] is None):
                    pos = kpos or pos  # an empty value has no place of its own
                    break
                pos = vpos or kpos or pos
                node = node[key]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                try:
                    pos = tuple(lc.item(part))
                except Exception:
                    pass
                node = node[part]
            else:
                break
        line, col = pos if isinstance(pos, tuple) and len(pos) == 2 else (0, 0)
        if not (isinstance(line, int) and isinstance(col, int)):
            line, col = 0, 0
        return line + 1, col + 1


def _limit_depth(yaml) -> None:
    """Make ``yaml`` stop at :data:`MAX_DEPTH` nested levels while it parses: ruamel's
    scanner is quadratic in the number of open ``[``/``{`` and its composer recursive,
    so a 2 KB file of 1,000 ``[`` took seconds and ended in a RecursionError. The
    scanner counts flow levels, the composer every level (block ones too)."""
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.scanner import Scanner

    yaml.Scanner = _depth_limited(yaml.Scanner or Scanner)
    yaml.Composer = _depth_limited(yaml.Composer or Composer)


def _depth_limited(base):
    """``base`` (a ruamel Scanner or Composer class) with the depth check, made once."""
    if base not in _DEPTH_LIMITED:
        from ruamel.yaml.composer import Composer

        if issubclass(base, Composer):
            class DepthLimited(base):
                _nesting = 0

                def compose_node(self, parent, index):
                    if self._nesting > MAX_DEPTH:  # the root is level 0, as in ``plain``
                        raise _TooDeep(self.parser.peek_event().start_mark)
                    self._nesting += 1
                    try:
                        return super().compose_node(parent, index)
                    finally:
                        self._nesting -= 1
        else:
            class DepthLimited(base):
                def fetch_flow_collection_start(self, TokenClass, to_push):
                    if len(self.flow_context) >= MAX_DEPTH:
                        raise _TooDeep(self.reader.get_mark())
                    super().fetch_flow_collection_start(TokenClass, to_push)

        _DEPTH_LIMITED[base] = DepthLimited
    return _DEPTH_LIMITED[base]


_DEPTH_LIMITED: dict = {}
_READER = None
#: what YAML forbids (the complement of ruamel's NON_PRINTABLE class): the same check,
#: but this small class compiles in well under a millisecond where ruamel's negated
#: class over all of Unicode takes ~10 ms (paid on every file with a non-ASCII byte)
_NON_PRINTABLE = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]"


def _load_yaml(typ: str, text: str):
    """``text`` through ruamel's ``typ`` loader, with the fast reader, warnings silenced."""
    import warnings

    from ruamel.yaml import YAML

    yaml = YAML(typ=typ, pure=True)
    yaml.Reader = _fast_reader()
    _limit_depth(yaml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return yaml.load(text)


def _fast_reader():
    global _READER
    if _READER is None:
        from ruamel.yaml.reader import Reader

        class FastReader(Reader):
            NON_PRINTABLE = re.compile(_NON_PRINTABLE)

        _READER = FastReader
    return _READER


# -- the fast validator ---------------------------------------------------------------


class Unsupported(Exception):
    """The schema uses a keyword the fast validator does not know: use jsonschema."""


_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$id", "$schema",
                          "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                          "x-kind", "x-slot", "x-reserved"})


def fast_valid(schema: dict, instance) -> bool:
    """True if ``instance`` is valid under ``schema`` (JSON Schema 2020-12).

    Exact for the keywords implemented here, which are all that the generated fleet
    schema uses; raises :class:`Unsupported` for any other keyword, so it can never
    call something valid that jsonschema would not (a test checks they agree).
    """
    return _valid(schema, schema, instance)


def _valid(s, root, x) -> bool:
    if s is True:
        return True
    if s is False:
        return False
    for k, v in s.items():
        if k in _ANNOTATIONS:
            continue
        check = _KEYWORDS.get(k)
        if check is None:
            raise Unsupported(k)
        if not check(v, s, root, x):
            return False
    return True


def _ref(v, s, root, x):
    if not (isinstance(v, str) and v.startswith("#/$defs/")):
        raise Unsupported("$ref " + str(v))
    target = root.get("$defs", {}).get(v[len("#/$defs/"):])
    if target is None:
        raise Unsupported("$ref " + v)
    return _valid(target, root, x)


def _is_type(x, t: str) -> bool:
    if t == "object":
        return isinstance(x, dict)
    if t == "array":
        return isinstance(x, list)
    if t == "string":
        return isinstance(x, str)
    if t == "boolean":
        return isinstance(x, bool)
    if t == "null":
        return x is None
    if isinstance(x, bool):
        return False
    if t == "integer":
        return isinstance(x, int) or (isinstance(x, float) and x.is_integer())
    if t == "number":
        return isinstance(x, (int, float))
    raise Unsupported("type " + t)


def _equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(i, j) for i, j in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return a == b


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _additional(v, s, root, x):
    if not isinstance(x, dict):
        return True
    if "patternProperties" in s:
        raise Unsupported("patternProperties")
    props = s.get("properties", {})
    return all(_valid(v, root, x[k]) for k in x if k not in props)


_KEYWORDS = {
    "$ref": _ref,
    "type": lambda v, s, r, x: any(_is_type(x, t) for t in ([v] if isinstance(v, str) else v)),
    "enum": lambda v, s, r, x: any(_equal(x, e) for e in v),
    "const": lambda v, s, r, x: _equal(x, v),
    "properties": lambda v, s, r, x: not isinstance(x, dict) or all(
        _valid(sub, r, x[k]) for k, sub in v.items() if k in x),
    "additionalProperties": _additional,
    "required": lambda v, s, r, x: not isinstance(x, dict) or all(k in x for k in v),
    "propertyNames": lambda v, s, r, x: not isinstance(x, dict) or all(
        _valid(v, r, k) for k in x),
    "minProperties": lambda v, s, r, x: not isinstance(x, dict) or len(x) >= v,
    "maxProperties": lambda v, s, r, x: not isinstance(x, dict) or len(x) <= v,
    "items": lambda v, s, r, x: not isinstance(x, list) or all(_valid(v, r, i) for i in x),
    "minItems": lambda v, s, r, x: not isinstance(x, list) or len(x) >= v,
    "maxItems": lambda v, s, r, x: not isinstance(x, list) or len(x) <= v,
    "pattern": lambda v, s, r, x: not isinstance(x, str) or re.search(v, x) is not None,
    "minLength": lambda v, s, r, x: not isinstance(x, str) or len(x) >= v,
    "maxLength": lambda v, s, r, x: not isinstance(x, str) or len(x) <= v,
    "minimum": lambda v, s, r, x: not _num(x) or x >= v,
    "maximum": lambda v, s, r, x: not _num(x) or x <= v,
    "exclusiveMinimum": lambda v, s, r, x: not _num(x) or x > v,
    "exclusiveMaximum": lambda v, s, r, x: not _num(x) or x < v,
    "anyOf": lambda v, s, r, x: any(_valid(b, r, x) for b in v),
    "oneOf": lambda v, s, r, x: sum(1 for b in v if _valid(b, r, x)) == 1,
    "allOf": lambda v, s, r, x: all(_valid(b, r, x) for b in v),
}


# -- helpers --------------------------------------------------------------------------


_MISSING = object()


def fleet_reference_names(model_ids: Iterable[str], route_names: Iterable[str]) -> list[str]:
    """Every ``${…}`` name :meth:`Fleet.reference_value` can satisfy for this catalogue."""
    return (["gateway.base_url", "gateway.key", "gateway.anthropic_base_url",
             "gateway.openai_base_url", "default_route"]
            + [f"routes.{r}" for r in route_names] + [f"models.{m}" for m in model_ids])


def closest(word, candidates: Iterable) -> str | None:
    """The candidate ``word`` was most likely meant to be (same letters in another
    case first, then difflib's closest match), or None."""
    if not isinstance(word, str):
        return None
    cands = [c for c in candidates if isinstance(c, str) and c != word]
    folded = {c.casefold(): c for c in cands}
    if word.casefold() in folded:
        return folded[word.casefold()]
    import difflib

    match = difflib.get_close_matches(word, cands, n=1, cutoff=0.6)
    return match[0] if match else None


def did_you_mean(word, candidates: Iterable) -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or ``""``."""
    match = closest(word, candidates)
    return f"; did you mean '{match}'?" if match else ""


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_/@+-]+$")


def format_path(path: PathT) -> str:
    """``("clients", "x", "profiles", 1)`` → ``clients.x.profiles[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


def _client_options(clients: dict):
    """(client id, its entry, option name, option schema) for every configured client."""
    for name, entry in client_entries().items():
        cfg = clients.get(name)
        if isinstance(cfg, dict):
            for option, prop in entry.get("properties", {}).items():
                yield name, cfg, option, prop


def _slots(clients: dict):
    """(path, value) of every client slot that names a route or a model (``x-slot`` in the
    schema: one value, a list of them, or a mapping's values)."""
    for name, cfg, option, prop in _client_options(clients):
        kind, value = prop.get("x-slot"), cfg.get(option)
        if kind == SLOT and isinstance(value, str):
            yield ("clients", name, option), value
        elif kind == SLOT_LIST and isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, str):
                    yield ("clients", name, option, i), v
        elif kind == SLOT_MAP and isinstance(value, dict):
            for key, v in value.items():
                if isinstance(v, str):
                    yield ("clients", name, option, key), v


def _reserved(clients: dict):
    """(path, why) of every client option set to a value its client reserves
    (``x-reserved`` in the schema, e.g. Codex's built-in provider id)."""
    for name, cfg, option, prop in _client_options(clients):
        why = prop.get("x-reserved", {}).get(cfg.get(option)) if isinstance(
            cfg.get(option), str) else None
        if why:
            yield ("clients", name, option), why


def _url_problem(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return f"{_safe_url(url)!r} is not a URL"
    if parts.scheme.lower() not in ("http", "https"):
        return (f"must be an http:// or https:// URL, got {_safe_url(url)!r}"
                + (" (no scheme: add https://)" if "://" not in url else ""))
    if not parts.netloc or not parts.hostname:
        return f"{_safe_url(url)!r} has no host"
    if any(c.isspace() for c in url):
        return f"{_safe_url(url)!r} contains whitespace"
    return None


def _safe_url(url: str) -> str:
    """A URL for messages: credentials in it (``user:pass@``) are hidden."""
    url = re.sub(r"(://)[^/@]*@", r"\1…@", url)
    return url if len(url) <= 120 else url[:117] + "…"


def _pattern_message(path: PathT, pattern: str, inst) -> str:
    last = path[-1] if path else ""
    if last in _URL_FIELDS or last == "url":
        return f"must be an http:// or https:// URL, got {_kind(inst, path)}"
    if last == "provider_id":
        return "may only hold letters, digits, _ and - (it names a TOML table)"
    if last == "secret_name":
        return "must be an environment-variable-style name (letters, digits, _)"
    return f"{_kind(inst, path)} does not match the pattern {pattern}"


def _sensitive(path: PathT) -> bool:
    return path == ("gateway", "key") or any(p in ("env", "headers") for p in path
                                             if isinstance(p, str))


def _kind(x, path: PathT = ()) -> str:
    """How to name a value in a message (never the value at a secret-bearing path)."""
    if x is None:
        return "nothing (an empty value)"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, dict):
        return "a mapping"
    if isinstance(x, list):
        return "a list"
    if _sensitive(path):
        return "a number" if _num(x) else "a string"
    if isinstance(x, (int, float)):
        return f"the number {x!r}"
    if isinstance(x, str):
        return f"the string {_short(x)!r}"
    return type(x).__name__


def _scalar_text(x) -> str:
    if isinstance(x, str):
        return repr(_short(x))
    if isinstance(x, bool):
        return "true" if x else "false"
    if x is None:
        return "nothing"
    if isinstance(x, (dict, list)):
        return _kind(x)
    return repr(x)


def _yaml_scalar(k) -> str:
    if isinstance(k, bool):
        return "true" if k else "false"
    if k is None:
        return "null"
    if isinstance(k, (int, float)):
        return repr(k)
    return "(a list or mapping)"


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _allowed(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _type_fits(branch: dict, inst) -> bool:
    t = branch.get("type")
    if t is None and "const" in branch:
        return _equal_type(branch["const"], inst)
    if t is None and "enum" in branch:
        return any(_equal_type(e, inst) for e in branch["enum"])
    if t is None:
        return True
    return any(_is_type(inst, w) for w in ([t] if isinstance(t, str) else t))


def _equal_type(a, b) -> bool:
    return (type(a) is type(b)) or (_num(a) and _num(b))


def _describe(branch: dict) -> str:
    if "const" in branch:
        return _scalar_text(branch["const"])
    t = branch.get("type")
    if t == "object" and branch.get("title") in _BRANCH_NAMES:
        return _BRANCH_NAMES[branch["title"]] + " (a mapping)"
    if isinstance(t, str):
        return _TYPE_WORDS.get(t, t)
    return "a value"


def _branch_name(branch: dict) -> str:
    title = branch.get("title", "")
    return _BRANCH_NAMES.get(title, title or "one kind")


def _own_position(node):
    lc = getattr(node, "lc", None)
    if lc is None:
        return None
    try:
        line, col = lc.line, lc.col
    except Exception:
        return None
    return (line, col) if isinstance(line, int) and isinstance(col, int) else None


def _find_key(mapping: dict, part):
    try:
        if part in mapping:
            return part
    except TypeError:
        pass
    for k in mapping:
        if str(k) == str(part):
            return k
    return _MISSING


def _line_col(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _only_comments(text: str) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines())
