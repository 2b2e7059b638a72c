"""Reading fleet.yaml: bytes, UTF-8, YAML (the safe-loader shortcut — through libyaml
where ruamel.yaml.clib is installed — and the round-trip tree with positions), plain
data, the size and depth limits, and line/column lookup.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from taosync.fleet.problems import Findings, PathT, _Stop
from taosync.fleet.schema_errors import _yaml_scalar
from taosync.terminal import CONTROLS

# CPython's private builtins ship no stubs: the two ignores say only that
try:  # the builtin module skips loading OpenSSL (~5 ms), as the stdlib's random does
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]  # Python 3.11
except ImportError:  # pragma: no cover - 3.12+ renamed it; any hashlib is fine
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256 as _sha256

#: fleet.yaml larger than this is refused without parsing (1 MiB)
MAX_BYTES = 1024 * 1024
#: values after alias expansion (a "billion laughs" file stops here)
MAX_NODES = 100_000
#: nesting levels below the top-level mapping (checked while parsing, and after aliases)
MAX_DEPTH = 64
#: the largest integer fleet.yaml may hold: 2^53−1, what JSON clients (JavaScript)
#: read exactly; TOML's signed 64-bit holds it too. Fields have tighter bounds of their own
MAX_INT = 2**53 - 1
# No key or value may hold terminal.CONTROLS (C0 and C1 controls, DEL, bidi controls,
# line separators): they would be written into client files as is (a NUL ends a C
# string, CR/LF start a new line: an injected setting or header).
#: free text that may span lines (a newline or tab in the probe's prompt is the prompt's)
_MULTILINE = {("verify", "prompt")}
#: values a program receives as they are, where a tab may be meant: an MCP server's
#: arguments and environment values (written escaped into JSON/TOML/YAML files)
_TAB_OK = ("args", "env")
#: checked by their own rule (header names and values: CR/LF there inject a header)
_OWN_RULE = ("gateway", "headers")
_NAMES = {0x00: "NUL", 0x09: "a tab", 0x0A: "a line feed (LF)", 0x0D: "a carriage return (CR)",
          0x1B: "ESC", 0x7F: "DEL"}


class _TooMany(Exception):
    pass


class _NotFast(Exception):
    """The safe loader's tree may not read as the round-trip one would: use that."""


class _TooDeep(Exception):
    """The YAML nests deeper than :data:`MAX_DEPTH`; raised while parsing, at ``mark``."""

    def __init__(self, mark) -> None:
        super().__init__()
        self.line, self.column = mark.line + 1, mark.column + 1



class YamlSource:
    """One fleet file (fleet.yaml, or a base fleet it includes): steps 1–3 of loading
    (bytes, YAML, plain data) and the line and column of any YAML path in it. Its
    problems go to ``findings``, located in this file."""

    def __init__(self, path: Path, findings: Findings, named: Path | None = None) -> None:
        self.path = path
        self.file = str(path)
        #: the path as named (an include in the home is read with its owner's rights)
        self.named = named if named is not None else path
        self.findings = findings
        self.root: Any = None  # the ruamel round-trip tree (positions), parsed when needed
        self.fast = False  # converting the safe loader's tree (no positions) right now
        self.text = ""
        self.digest = ""
        self._nodes = 0

    # ---- reporting

    def at(self, line: int, column: int, message: str, path: PathT = (),
           severity: str = "error") -> None:
        self.findings.at(self.file, line, column, message, path, severity)

    def error(self, path: PathT, message: str, at: str = "value") -> None:
        line, col = self.position(path, at)
        self.at(line, col, message, path)

    # ---- 1. bytes

    def read_bytes(self) -> bytes:
        from taosync.bounded import FileTooLarge, read_regular
        from taosync.privilege import rights_for

        try:
            with rights_for(self.named, fleet=True):
                raw = read_regular(self.path, MAX_BYTES)
        except FileTooLarge as exc:
            size_text = f"{exc.size / 1e6:.1f} MB" if exc.size else "more than 1 MB"
            self.at(1, 1, f"the file is {size_text}; a fleet.yaml is at most 1 MB "
                    "(is this the right file?)")
            raise _Stop from None
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
        except OSError as exc:  # a FIFO or a device too (taosync/bounded.py): never waited on
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
        parse then says why, located). Read through libyaml where it is installed and
        reads the text as ruamel would (``_c_reads_alike``), else by ruamel alone."""
        if "<<" in text:
            raise _NotFast
        loader = _c_loader() if _c_reads_alike(text) else None
        if loader is not None:
            try:
                return _load_c(loader, text)
            except _TooDeep:
                raise _NotFast from None  # the round-trip parse locates it
            except Exception:
                pass  # libyaml refuses what ruamel may read (``[a:b]``): ask ruamel
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
                    "(a control character? remove it: no value may hold one)")
        except RecursionError:
            self.at(1, 1, "the YAML nests too deeply")
        except YAMLError as exc:
            self.at(1, 1, f"YAML error: {str(exc).splitlines()[0] if str(exc) else exc!r}")
        except Exception as exc:  # a parser bug must not become a traceback
            huge = re.search(r"\d{4000,}", text) if isinstance(exc, ValueError) else None
            if huge is not None:  # Python refuses to read such an integer at all
                line, col = _line_col(text, huge.start())
                self.at(line, col, _too_large(len(huge.group())))
            else:
                self.at(1, 1, f"cannot parse this YAML ({type(exc).__name__}: {exc})")
        raise _Stop

    def marked(self, exc) -> None:
        from taosync.formats.yaml_words import explain

        self.at(*explain(self.text, exc))

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
                    lc = getattr(node, "lc", None)  # a round-trip mapping knows its keys' places
                    if lc is not None:
                        try:
                            kl, kc = lc.key(k)
                            line, col = kl + 1, kc + 1
                        except Exception:
                            pass
                    self.at(line, col, f"the key {_yaml_scalar(k)} is not a string; quote it "
                            "(keys are names)", path)
                    continue
                if not k.isprintable():
                    self.refuse_controls(path + (str(k),), str(k), at="key")
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
            if not -MAX_INT <= node <= MAX_INT:
                self.placeholder(path, _too_large(len(str(abs(int(node))))))
                return None
            return int(node)
        if isinstance(node, float):
            if not math.isfinite(node):
                self.placeholder(path, f"{node!r} is not a finite number")
                return None
            return float(node)
        if isinstance(node, str):
            if not node.isprintable() and self.refuse_controls(path, str(node)):
                self.findings.reported.add(path)  # later steps say nothing more about it
                return None
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

    def refuse_controls(self, path: PathT, text: str, at: str = "value") -> bool:
        """A located error for the first control character in a key or value (never
        quoting it: it may be a secret), unless it is free text allowed to span lines.
        True when refused."""
        if path[:2] == _OWN_RULE or (path[:1] == ("gateways",) and path[2:3] == ("headers",)):
            return False
        allowed = "\n\t" if path in _MULTILINE else (
            "\t" if at == "value" and len(path) == 4 and path[0] == "mcp_servers"
            and path[2] in _TAB_OK else "")
        found = next((m for m in CONTROLS.finditer(text) if m.group() not in allowed), None)
        if found is None:
            return False
        what = "key" if at == "key" else "value"
        self.error(path, f"the {what} holds {_control_name(found.group())} at character "
                   f"{found.start() + 1}; ids, names and values are written into client "
                   "files as is, so it is refused: remove it (retype the text if it was "
                   "pasted)", at=at)
        return True

    def placeholder(self, path: PathT, message: str) -> None:
        """Report a value ``plain`` replaces by None, and keep later steps quiet about it."""
        self.error(path, message)
        self.findings.reported.add(path)

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
            lc: Any = getattr(node, "lc", None)  # ruamel's LineCol: None in a plain tree
            if isinstance(node, dict):
                key = _find_key(node, part)
                if key is _MISSING:
                    break
                kpos: tuple | None = None
                vpos: tuple | None = None
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


def _too_large(digits: int) -> str:
    return (f"this integer ({digits} digits) is larger than a client file can hold: at "
            f"most {MAX_INT} (2^53−1, the largest integer JSON clients read exactly)")


def _control_name(ch: str) -> str:
    """``a carriage return (CR)``, ``NUL``, ``U+202E (RIGHT-TO-LEFT OVERRIDE, which
    shows …)``: what a refused character is, in words."""
    code = ord(ch)
    if code in _NAMES:
        return _NAMES[code]
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"the control character U+{code:04X}"
    import unicodedata

    return f"U+{code:04X} ({unicodedata.name(ch, 'a layout control')}, which shows text " \
           "in another order or on another line than it is stored)"


def _limit_depth(yaml) -> None:
    """Make ``yaml`` stop at :data:`MAX_DEPTH` nested levels while it parses: ruamel's
    scanner is quadratic in the number of open ``[``/``{`` and its composer recursive,
    so a 2 KB file of 1,000 ``[`` took seconds and ended in a RecursionError. The
    scanner counts flow levels, the composer every level (block ones too)."""
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.scanner import Scanner

    yaml.Scanner = _depth_limited(yaml.Scanner or Scanner)
    yaml.Composer = _depth_limited(yaml.Composer or Composer)


def _depth_limited(base: type) -> type:
    """``base`` (a ruamel Scanner or Composer class) with the depth check, made once."""
    if base not in _DEPTH_LIMITED:
        from ruamel.yaml.composer import Composer
        from ruamel.yaml.scanner import Scanner

        class ComposerDepth(Composer):
            _nesting = 0

            def compose_node(self, parent: Any, index: Any) -> Any:
                if self._nesting > MAX_DEPTH:  # the root is level 0, as in ``plain``
                    raise _TooDeep(self.parser.peek_event().start_mark)
                self._nesting += 1
                try:
                    return super().compose_node(parent, index)
                finally:
                    self._nesting -= 1

        class ScannerDepth(Scanner):
            def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
                if len(self.flow_context) >= MAX_DEPTH:
                    raise _TooDeep(self.reader.get_mark())
                super().fetch_flow_collection_start(TokenClass, to_push)

        check = ComposerDepth if issubclass(base, Composer) else ScannerDepth
        _DEPTH_LIMITED[base] = type("DepthLimited", (check, base), {})
    return _DEPTH_LIMITED[base]


_DEPTH_LIMITED: dict[type, type] = {}
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


#: Where libyaml's scanner and parser (ruamel.yaml.clib's, libyaml 0.1.7 as ruamel
#: patched it) read a text otherwise than ruamel's pure ones — found by the property
#: test in tests/test_yaml_fast.py — each a pattern that starts with a literal (Python's
#: ``re`` finds a literal fast; a character class first costs it ~6× the time) and the
#: characters before a match that make it count (None: any; "^" is the text's start):
_C_DIFFER = [(re.compile(pattern), before) for pattern, before in (
    # ``["a":b]``, ``["a" :b]``, ``[[a]:b]``, ``[*x :b]``: a ``:`` with no space after,
    # behind a quoted scalar, a flow collection or an alias, is a value to libyaml only
    (r'" *:\S', None), (r"' *:\S", None), (r"\] *:\S", None), (r"\} *:\S", None),
    (r"&[0-9A-Za-z_-]+ *:\S", None), (r"\*[0-9A-Za-z_-]+ *:\S", None),
    # an anchor or alias name ending in ``:`` ``?`` ``%`` ``@`` or a backtick: libyaml's
    # names are ASCII letters, digits, ``-`` and ``_`` and end there, ruamel's go on
    # (only at a token's start: ``*root*:`` in the init template's comment is no alias)
    (r"&[0-9A-Za-z_-]*[?:%@`]", "^ \r\n[{,:?"), (r"\*[0-9A-Za-z_-]*[?:%@`]", "^ \r\n[{,:?"),
    # the non-specific tag ``!`` on an empty value: "" to libyaml, None to ruamel
    (r"!(?=[\s,\]}]|\Z)", "^ \r\n[{,"),
    # a block scalar's header with a comment and no space before it (``|#``), or a
    # first line of spaces only (ruamel refuses a more indented line after it: "more
    # indented follow up line than first"): libyaml reads both
    # (from the line's last ``|`` or ``>``: each character is looked at once)
    (r"\|(?:[-+0-9]*#|[^\r\n|>]*(?:\r\n?|\n) +(?:[\r\n]|\Z))", None),
    (r">(?:[-+0-9]*#|[^\r\n|>]*(?:\r\n?|\n) +(?:[\r\n]|\Z))", None),
)]
#: characters libyaml reads otherwise: tabs (around indentation and values), the line
#: breaks YAML 1.2 no longer has (NEL, LS, PS), a byte order mark inside the text
_C_ODD = "\t\x85\u2028\u2029\ufeff"
_C_LOADER: Any = None


def _c_reads_alike(text: str) -> bool:
    """Whether libyaml's scanner and parser read ``text`` as ruamel's pure ones would,
    as far as a cheap look can tell: no ``%YAML``/``%TAG`` directive (YAML 1.1's
    booleans and octals would follow), none of :data:`_C_DIFFER` and :data:`_C_ODD`.
    What it cannot tell, libyaml refuses, and ruamel reads instead. Depth needs no look:
    the composer is ruamel's, limited as the pure loader's is."""
    if text.startswith("%") or "\n%" in text or "\r%" in text:
        return False
    if ("\t" in text or not text.isascii()) and any(ch in text for ch in _C_ODD):
        return False
    for pattern, before in _C_DIFFER:
        for match in pattern.finditer(text):
            at = match.start()
            if before is None or (text[at - 1] if at else "^") in before:
                return False
    return True


def _c_loader():
    """The safe loader over libyaml's scanner and parser (ruamel.yaml.clib's CParser,
    ~5× faster than ruamel's pure Python ones), with ruamel's own composer (limited to
    :data:`MAX_DEPTH`: libyaml's composer recurses in C and has no limit), safe
    constructor and resolver. None when the C module cannot be imported (PyPy, a
    platform without a wheel): the pure loader then reads every file."""
    global _C_LOADER
    if _C_LOADER is None:
        try:
            from _ruamel_yaml import CParser  # type: ignore[import-not-found]  # no stubs
        except ImportError:
            _C_LOADER = False
            return None
        from ruamel.yaml.composer import Composer
        from ruamel.yaml.constructor import SafeConstructor
        from ruamel.yaml.resolver import VersionedResolver

        class CComposer(_depth_limited(Composer)):  # type: ignore[misc]
            # ruamel's composer asks its loader for the parser and resolver through a
            # property at every event (hasattr and all): here both are the loader
            parser = resolver = None

            def __init__(self, loader: Any) -> None:
                super().__init__(loader=loader)
                self.parser = self.resolver = loader

        class CSafeLoader(CParser, SafeConstructor, VersionedResolver):
            max_depth = 0  # ruamel's own depth limit (0.19) off: the composer's is ours
            yaml_version = None  # no %YAML directive (_c_reads_alike): YAML 1.2's rules

            def __init__(self, text: str) -> None:
                CParser.__init__(self, text)
                self._parser = self._scanner = self  # the resolver asks the scanner's version
                self._composer = CComposer(loader=self)
                SafeConstructor.__init__(self, loader=self)
                VersionedResolver.__init__(self, loadumper=self)
                self.allow_duplicate_keys = False  # as YAML(typ="safe"): DuplicateKeyError

        _C_LOADER = CSafeLoader
    return _C_LOADER or None


def _load_c(loader: type, text: str):
    """``text`` through the C-backed safe loader, warnings silenced (as ``_load_yaml``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return loader(text).get_single_data()


def _fast_reader():
    global _READER
    if _READER is None:
        from ruamel.yaml.reader import Reader

        class FastReader(Reader):
            # ruamel types this as its lazy wrapper; a compiled pattern answers the same calls
            NON_PRINTABLE = re.compile(_NON_PRINTABLE)  # type: ignore[assignment]

        _READER = FastReader
    return _READER


_MISSING = object()


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
