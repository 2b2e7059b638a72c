"""Key references and the redacted ``Secret`` type.

fleet.yaml holds a *reference* to the key (``${env:NAME}``, ``${file:PATH}``,
``${cmd:COMMAND}``, ``${shell:COMMAND}``, or a password store's: ``${keyring:SERVICE/USER}``,
``${op://VAULT/ITEM/FIELD}``, ``${pass:PATH}``, read by :mod:`taosync.fleet.stores`);
resolving it gives a :class:`Secret`,
whose ``str``/``repr``/``format`` are redacted so no log line, traceback or f-string
can print the key by accident. Only :meth:`Secret.reveal` gives the value, and only
code that writes a client file or sends a request calls it.

Standard library only: the no-op fast path resolves the key too.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: what opens a key reference after ``${``: ``KIND:``, or a 1Password reference, whose
#: ``op://…`` is its argument whole (group ``kind`` or ``op``)
#: the ``${KIND:…}`` kinds (1Password's ``${op://…}`` is told apart by its ``://``)
KINDS = ("env", "file", "cmd", "shell", "keyring", "pass")
REFERENCE_HEAD = r"(?:(?P<kind>" + "|".join(KINDS) + r"):|(?=(?P<op>op)://))"
REFERENCE = re.compile(r"^\$\{" + REFERENCE_HEAD + r"(?P<arg>.*)\}$", re.DOTALL)
#: every reference form, as a message names them
FORMS = ("${env:NAME}, ${file:PATH}, ${cmd:COMMAND}, ${shell:COMMAND}, "
         "${keyring:SERVICE/USER}, ${op://VAULT/ITEM/FIELD} or ${pass:PATH}")
CMD_TIMEOUT = 10.0


class SecretError(Exception):
    """A key reference that cannot be resolved. The message never holds the value."""


#: the source of a made-up key (``verify --stub`` when gateway.key does not resolve): no
#: client file is judged against it
STAND_IN = "stand-in"


#: the value of every Secret this process made, so a crash report can hide each one
#: even when it happens before the run's :class:`Redactor` knows them (:func:`made`)
_MADE: set[str] = set()


def made() -> list[str]:
    """Every value a :class:`Secret` was made with in this process (the key, MCP secrets,
    the user's tokens read from client files), for a last-resort :class:`Redactor`."""
    return sorted(_MADE)


class Secret:
    """A resolved key. Prints as ``sk-…ab12``; ``reveal()`` is the only way to the value."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str = "literal") -> None:
        self._value = value
        self.source = source
        _MADE.add(value)

    def reveal(self) -> str:
        return self._value

    def redacted(self) -> str:
        return redact(self._value)

    def __str__(self) -> str:
        return self.redacted()

    def __repr__(self) -> str:
        return f"Secret({self.redacted()!r}, source={self.source!r})"

    def __format__(self, spec: str) -> str:
        return format(self.redacted(), spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):  # never pickle/copy the value out by accident
        raise TypeError("a Secret cannot be pickled")

    def found_in(self, value) -> bool:
        """Whether the key appears anywhere in a plain value (strings, lists, dicts)."""
        if not self._value:
            return False
        if isinstance(value, str):
            return self._value in value
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, (list, tuple)):
            return False
        key = self._value  # a string leaf without a call (an MCP entry is mostly strings)
        return any(key in v if type(v) is str else self.found_in(v) for v in value)

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by its redacted form. A key
        shorter than ``MIN_SECRET`` is not hunted in free text: it would be scrubbed out
        of paths and client names (``shown`` hides it where it is known to be the key)."""
        if len(self._value) < MIN_SECRET:
            return text
        return text.replace(self._value, self.redacted())


def redact(value: str) -> str:
    """``sk-proj-abcdef…wxyz`` → ``sk-…wxyz``; short values show nothing at all."""
    value = value.strip()
    if len(value) < 12:
        return "…" if value else ""
    prefix = value.split("-", 1)[0] + "-" if "-" in value[:8] else ""
    return f"{prefix}…{value[-4:]}"



#: json.dumps with canonical's options builds this encoder anew on every call
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
_SPELL = json.encoder.encode_basestring  # the C function _CANONICAL spells strings with
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None: json without its C part


def canonical(value: Any) -> str:
    """One spelling per value, typed (1 ≠ true ≠ "1"), for hashing and comparison:
    ``_CANONICAL.encode(value)``, by json's C encoder itself where it has one — encode
    sets up a dozen Python lines per call, and every owned value is hashed."""
    if type(value) is str:
        return _SPELL(value)
    if _C_ENCODER is None:
        return _CANONICAL.encode(value)
    return "".join(_C_ENCODER({}, _CANONICAL.default, _SPELL, None, ":", ",", True, False,
                              True)(value, 0))


#: (key, canonical text) → its keyed hash: a plan hashes every owned value, and each
#: certified run after an apply (engine/certificate.py) plans again with the same ones
_hashed: dict[tuple[bytes, str], str] = {}
_HASHED_MOST = 200_000  # a long watch: start afresh rather than grow without end


def value_hash(key: bytes, value: Any) -> str:
    text = canonical(value)
    digest = _hashed.get((key, text))
    if digest is None:
        if len(_hashed) >= _HASHED_MOST:
            _hashed.clear()
        digest = hmac.digest(key, text.encode("utf-8"), "sha256").hex()[:32]  # hmac.new's, in C
        _hashed[key, text] = digest
    return digest

@dataclass(frozen=True)
class Reference:
    kind: str  # env | file | cmd | shell | literal
    arg: str

    def describe(self) -> str:
        """A safe description: never the value of a literal."""
        if self.kind == "literal":
            return "a literal key"
        if self.kind == "op":
            return f"${{{self.arg}}}"
        return f"${{{self.kind}:{self.arg}}}"


def parse_reference(text: str) -> Reference:
    match = REFERENCE.match(text.strip())
    if not match:
        return Reference("literal", text)
    return reference_of(match)


def reference_of(match: re.Match) -> Reference:
    """The Reference a match of :data:`REFERENCE_HEAD` + ``(?P<arg>…)`` spells."""
    return Reference(match.group("kind") or match.group("op"), match.group("arg").strip())


#: a variable written the way a shell, PowerShell or opencode would: ``$NAME``,
#: ``${NAME}``, ``$env:NAME``, ``{env:NAME}`` — taosync expands none of them
_SHELL_STYLE = (r"\$(?P<a>[A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_:{(])"
                r"|\$\{(?P<b>[A-Za-z_][A-Za-z0-9_]*)\}"
                r"|\$env:(?P<c>[A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])"
                r"|(?<!\$)\{env:(?P<d>[A-Za-z_][A-Za-z0-9_]*)\}")


def shell_style_variable(text: str, *, whole: bool = True) -> str | None:
    """NAME when ``text`` reads a variable in a form taosync does not expand (see
    ``_SHELL_STYLE``), the user meaning ``${env:NAME}``; else None.

    ``whole``: the whole value must be that form (``gateway.key``: a key is one token,
    and a literal key may hold a ``$``). Otherwise the form may stand anywhere as a word
    of its own (``Bearer $TOKEN``), never glued to other text (``pa$sword``)."""
    if "$" not in text and "{env:" not in text:
        return None
    if whole:
        match = re.fullmatch(_SHELL_STYLE, text.strip())
    else:
        match = re.search(r"(?:^|(?<=[\s\"'=]))(?:%s)(?=$|[\s\"',;])" % _SHELL_STYLE, text)
    if match is None:
        return None
    return next(v for v in match.group("a", "b", "c", "d") if v)


def resolve(ref: Reference, *, environ=None, home: Path | None = None,
            timeout: float = CMD_TIMEOUT) -> Secret:
    """Resolve a reference to a :class:`Secret`, or raise :class:`SecretError`."""
    environ = os.environ if environ is None else environ
    if ref.kind == "literal":
        return Secret(ref.arg.strip(), "literal")
    if ref.kind == "env":
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ref.arg):
            raise SecretError(f"{ref.arg!r} is not an environment variable name")
        value = environ.get(ref.arg)
        if value is None:
            raise SecretError(f"environment variable {ref.arg} is not set; "
                              f"export it, or point gateway.key at a file or command")
        if not value.strip():
            raise SecretError(f"environment variable {ref.arg} is empty")
        return Secret(value.strip(), ref.describe())
    if ref.kind == "file":
        from taosync.privilege import rights_for

        path = expand_path(ref.arg, home)
        from taosync.bounded import SECRET_FILE_MAX, read_regular

        try:
            with rights_for(path):  # in the home: read as its owner (root follows no link)
                value = read_regular(path, SECRET_FILE_MAX).decode("utf-8")
        except FileNotFoundError:
            raise SecretError(f"key file {path} does not exist") from None
        except IsADirectoryError:
            raise SecretError(f"key file {path} is a directory") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SecretError(f"key file {path} cannot be read: "
                              f"{getattr(exc, 'strerror', None) or type(exc).__name__}") from None
        if not value.strip():
            raise SecretError(f"key file {path} is empty")
        return Secret(value.strip(), ref.describe())
    if ref.kind in ("keyring", "op", "pass"):
        from taosync.fleet import stores

        try:
            return Secret(stores.read(ref, environ, timeout), ref.describe())
        except stores.StoreError as exc:
            raise SecretError(str(exc)) from None
    return _run_key_command(ref, environ, timeout)


def _run_key_command(ref: Reference, environ, timeout: float) -> Secret:
    """``${cmd:…}`` (no shell) or ``${shell:…}``, run by :func:`~taosync.fleet.stores.run_bounded`
    (subprocess is imported only there)."""
    import shlex

    from taosync.fleet.stores import Overrun, run_bounded

    argv: str | list[str]  # a command line for the shell, or the program and its arguments
    if ref.kind == "cmd":
        try:
            argv = shlex.split(ref.arg)
        except ValueError as exc:
            raise SecretError(f"key command cannot be parsed: {exc}") from None
        if not argv:
            raise SecretError("key command is empty")
        shell = False
    else:
        argv, shell = ref.arg, True
    try:
        rc, out, err = run_bounded(argv, environ, timeout, shell=shell)
    except FileNotFoundError:
        raise SecretError(f"key command not found: {argv[0]}") from None
    except OSError as exc:
        raise SecretError(f"key command cannot run: {exc.strerror}") from None
    except Overrun as exc:
        raise SecretError(f"key command {exc}: {ref.describe()}") from None
    if rc != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["(no stderr)"]
        raise SecretError(f"key command exited {rc}: {last[0][:200]}")
    try:
        stdout = out.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretError(f"key command printed bytes that are not UTF-8: "
                          f"{ref.describe()}") from None
    if not stdout.strip():
        raise SecretError("key command printed nothing")
    return Secret(stdout.strip(), ref.describe())


def expand_path(text: str, home: Path | None) -> Path:
    """``~`` means the taosync home (``--home``), so sandboxes never read the real one."""
    if text == "~" or text.startswith("~/"):
        base = home if home is not None else Path.home()
        return base / text[2:] if text != "~" else base
    return Path(os.path.expandvars(text)).expanduser()


#: what every secret but the current key is shown as (Terraform's word for it)
SENSITIVE = "(sensitive value)"
#: exact forms shorter than this are not hunted in free text (they would hide common words)
MIN_SECRET = 6
#: a line of a multi-line secret at least this long is hidden on its own
MIN_LINE = 8
#: a token this long that is part of a known secret is hidden (a truncated echo)
MIN_FRAGMENT = 10
#: a token this long is hashed and compared with every key taosync ever wrote
MIN_HASHED = 12
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=:-]{%d,}" % MIN_FRAGMENT)
_CHUNK = re.compile(r"\S{%d,}" % MIN_HASHED)
_TOKEN_EDGES = "._~+/=:-"
#: where a token is split to find a secret glued to other text (``KEY=sk-…``,
#: ``/keys/sk-…``, ``key:sk-…``): a secret piece may start after one or end before one
_GLUE = re.compile(r"[=/:]")
_NOTHING = r"(?!)"  # a pattern that matches nothing
_QUOTES = "\"'`()[]{}<>,;:"


class Redactor:
    """Hides every secret taosync knows of from text meant for people or scripts.

    Output paths are many (diffs, ``changes``, status, rollback, watch, errors, ``-v``)
    and a secret reaches them in many spellings: as the file holds it (JSON, TOML, YAML,
    dotenv escaping), as Python's ``repr`` prints it, truncated or upper-cased by a
    gateway echoing it. One object that knows every secret and every spelling is the only
    way to be sure none slips through. The current key becomes its ``redact()`` form so
    a reader can tell which key is meant; every other secret becomes
    ``(sensitive value)``: that it changed is shown, never what it was.
    """

    def __init__(self, key: Secret | None = None, *, hmac_key: bytes | None = None,
                 known_hashes=()) -> None:
        self._current = key.reveal().strip() if isinstance(key, Secret) else None
        self._values: set[str] = set()
        self._hmac_key = hmac_key
        self._hashes = set(known_hashes) if hmac_key else set()
        self._pattern: re.Pattern[str] | None = None  # compiled lazily, reset by add()
        self._forms: dict[str, str] = {}
        #: the secrets shorter than MIN_SECRET, as whole values
        self._short: re.Pattern[str] | None = None
        if self._current:
            self.add(self._current)

    def add(self, value) -> None:
        """Know ``value`` as a secret: a Secret, a string, or every string inside a
        list or dict (the value at a secret-bearing key can be a whole MCP server)."""
        if isinstance(value, Secret):
            value = value.reveal()
        if isinstance(value, str):
            value = value.strip()
            if value and value not in self._values:
                self._values.add(value)
                self._pattern = None
        elif isinstance(value, dict):
            for v in value.values():
                self.add(v)
        elif isinstance(value, (list, tuple, set)):
            for v in value:
                self.add(v)

    def add_change(self, old, new, name: str = "") -> None:
        """Know both sides of a change at a secret-bearing key path. A plain value is a
        secret whole; inside a mapping or list (a whole MCP server) only the leaves that
        hold a known secret on either side, or sit under a secret-looking name, are —
        so a base URL or a model id next to the key stays readable."""
        if isinstance(old, dict) or isinstance(new, dict):
            o = old if isinstance(old, dict) else {}
            n = new if isinstance(new, dict) else {}
            for k in {*o, *n}:
                self.add_change(o.get(k), n.get(k), str(k))
            return
        if isinstance(old, (list, tuple)) or isinstance(new, (list, tuple)):
            ol = list(old) if isinstance(old, (list, tuple)) else []
            nl = list(new) if isinstance(new, (list, tuple)) else []
            for i in range(max(len(ol), len(nl))):
                self.add_change(ol[i] if i < len(ol) else None, nl[i] if i < len(nl) else None,
                                name)
            return
        from taosync.fleet.looks_secret import secret_name

        leaves = [v for v in (old, new) if isinstance(v, str)]
        if not name or secret_name(name) or any(self._holds_known(v) for v in leaves):
            for v in leaves:
                self.add(v)

    def _holds_known(self, text: str) -> bool:
        low = text.lower()
        return any(len(v) >= MIN_SECRET and v.lower() in low for v in self._values)

    def add_secrets_in(self, value) -> None:
        """Know every :class:`Secret` found anywhere inside ``value`` (rendered patches)."""
        if isinstance(value, Secret):
            self.add(value)
        elif isinstance(value, dict):
            for v in value.values():
                self.add_secrets_in(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self.add_secrets_in(v)

    def values(self) -> list[str]:
        """The secrets known by value (to carry into a redactor for a new key)."""
        return sorted(self._values)

    def forget(self, value: str) -> None:
        """Not a secret after all (``--no-key``'s placeholder, which must stay readable)."""
        if value in self._values:
            self._values.discard(value)
            self._pattern = None

    def __bool__(self) -> bool:
        return bool(self._values or self._hashes)

    def scrub(self, text: str, *, by_name: bool = True) -> str:
        """``text`` with every spelling of every known secret replaced, then every value
        that looks like a secret (:mod:`~taosync.fleet.looks_secret`): a token by its
        prefix, and — unless ``by_name`` is false (a JSON document whose own field is
        named ``key``) — a value under a secret-looking name. Those need no knowing:
        the user's own tokens are hidden in whatever file they sit in."""
        if not isinstance(text, str):  # an untyped caller's value is passed through as is
            return text
        if not text:
            return text
        if self:
            pattern = self._pattern if self._pattern is not None else self._compile()
            text = pattern.sub(lambda m: self._forms[m.group(0).lower()], text)
            if self._short is not None:
                text = self._short.sub(lambda m: self._shown_as(m.group(0)), text)
            if self._values:
                text = _TOKEN.sub(self._fragment, text)
            if self._hashes:
                text = _CHUNK.sub(self._hashed, text)
        from taosync.fleet import looks_secret

        if by_name:
            return looks_secret.hide(text, SENSITIVE)
        return looks_secret.hide_by_value(text, SENSITIVE)

    def scrub_data(self, value):
        """``value`` (JSON-able data) with every string in it scrubbed, keys included."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(k) if isinstance(k, str) else k: self.scrub_data(v)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.scrub_data(v) for v in value]
        return value

    # ---- internals

    def _shown_as(self, value: str) -> str:
        return redact(self._current) if value == self._current else SENSITIVE

    def _compile(self) -> re.Pattern[str]:
        """The pattern of every spelling of every known secret (kept until ``add``)."""
        forms: dict[str, str] = {}
        # the current key last, so its own form wins where two secrets share a spelling
        for value in sorted(self._values, key=lambda v: v == self._current):
            shown = self._shown_as(value)
            pieces = [value] + [line.strip() for line in value.splitlines()
                                if len(line.strip()) >= MIN_LINE]
            for piece in pieces:
                for form in spellings(piece):
                    # a shorter one would hide words, paths and client names: such a key
                    # is hidden only where taosync knows it is one (``shown``)
                    if len(form) >= MIN_SECRET:
                        forms[form.lower()] = shown if piece == value else SENSITIVE
        self._forms = forms
        alternatives = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(f) for f in alternatives) or _NOTHING,
                                   re.IGNORECASE)
        # a key shorter than MIN_SECRET only as a whole value: quoted, after ``=`` or
        # ``: ``, or the whole text (a ``changes`` value) — never inside a word or a path
        short = sorted((v for v in self._values if len(v) < MIN_SECRET), key=len,
                       reverse=True)
        self._short = re.compile(
            r"""(?:^|(?<=["'`=])|(?<=: ))(?:%s)(?=["'`,]|\s|$)"""
            % "|".join(re.escape(v) for v in short)) if short else None
        return self._pattern

    def _fragment(self, match: re.Match) -> str:
        """A token that is a piece of a secret (a gateway echoing it truncated), or holds
        one glued to other text at ``=``, ``/`` or ``:`` (``KEY=sk-proj-…``)."""
        return self._hide_piece(match.group(0))

    def _hide_piece(self, token: str) -> str:
        """``token`` with its longest span that is a piece of a known secret replaced
        (a span runs from the start or a glue character to the end or another), then
        the same for what is left on either side."""
        if len(token) < MIN_FRAGMENT:
            return token
        for i, j in _glued_spans(token, MIN_FRAGMENT):
            shown = self._piece_shown(token[i:j])
            if shown is not None:
                return self._hide_piece(token[:i]) + shown + self._hide_piece(token[j:])
        return token

    def _piece_shown(self, candidate: str) -> str | None:
        for piece in (candidate, candidate.strip(_TOKEN_EDGES)):
            if len(piece) < MIN_FRAGMENT:
                continue
            low = piece.lower()
            if self._current and low in self._current.lower():
                return redact(self._current)
            if any(low in value.lower() for value in self._values):
                return SENSITIVE
        return None

    def _hashed(self, match: re.Match) -> str:
        """A chunk whose keyed hash is one of a key taosync once wrote."""
        chunk = match.group(0)
        hmac_key = self._hmac_key
        if hmac_key is None:  # no hashes are known without a key to make them
            return chunk
        candidates = {chunk, chunk.strip(_QUOTES), chunk.strip(_QUOTES).strip(_TOKEN_EDGES)}
        for m in re.finditer(r"[A-Za-z0-9._~+/=:-]{%d,}" % MIN_HASHED, chunk):
            candidates.update(m.group(0)[i:j] for i, j in _glued_spans(m.group(0), MIN_HASHED))
        for candidate in candidates:
            if len(candidate) >= MIN_HASHED and value_hash(hmac_key, candidate) in self._hashes:
                return chunk.replace(candidate, SENSITIVE)
        return chunk


def _glued_spans(token: str, minimum: int) -> list[tuple[int, int]]:
    """Every span of ``token`` at least ``minimum`` long that starts at its start or after
    a glue character (``=``, ``/``, ``:``) and ends at its end or before one, longest
    first: where a secret glued to other text can be."""
    starts = [0] + [m.end() for m in _GLUE.finditer(token)]
    ends = [len(token)] + [m.start() for m in _GLUE.finditer(token)]
    return sorted(((i, j) for i in starts for j in ends if j - i >= minimum),
                  key=lambda span: span[0] - span[1])


def spellings(value: str) -> set[str]:
    """Every way ``value`` can appear in a file taosync writes or in its output: raw,
    escaped as each format's strings escape it (each format module says how: see
    ``taosync.formats.registry.SPELLINGS``) and as Python's ``repr``/``ascii`` print it
    (without the surrounding quotes)."""
    from taosync.formats.registry import spellings as in_files

    forms = in_files(value) | {repr(value)[1:-1], ascii(value)[1:-1]}
    # repr of a value quoted the other way round
    forms.add(value.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t")
              .replace("\n", "\\n").replace("\r", "\\r"))
    return {f for f in forms if f}


# -- showing a planned value (plan/status JSON, watch events) --------------------------------

#: what a key-bearing value is rendered as under ``--no-key`` (the key is not resolved);
#: it reaches a diff only, never a file: those commands never write
NO_KEY_VALUE = "(sensitive, differs)"
NO_KEY_SAME = "(sensitive, unchanged)"


def shown(value, secret: bool, key) -> object:
    """A value as it may be shown: MISSING as None; at a secret-bearing key the current
    key's redacted form for the current key, ``(sensitive value)`` for anything else —
    that it changed is shown, never what it was."""
    from taosync.formats.base import MISSING

    if value is MISSING:
        return None
    if secret:
        if value in (NO_KEY_VALUE, NO_KEY_SAME):
            return value
        if isinstance(key, Secret) and value == key.reveal():
            return key.redacted()
        return SENSITIVE
    if key is not None and isinstance(value, str):
        return key.scrub(value)
    return value
