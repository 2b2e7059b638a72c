"""What looks like a secret, by the name it sits under or by its value alone.

One rule set for the two places that must agree: the :class:`~taosync.fleet.secrets.Redactor`
hides such values in every output, whatever file they sit in (the user's own tokens in
parts of a client file taosync does not own), and ``taosync import`` never copies one
into fleet.yaml. Standard library only: the redactor is on every output path.
"""

from __future__ import annotations

import json
import re

#: a name under which a value is a secret whatever it holds (``GITHUB_TOKEN``, ``apiKey``,
#: ``X-Api-Key``, ``CF-Access-Client-Secret``, ``Authorization``, ``DB_PASSWORD``): one
#: word of it (split at ``_ - .`` and camelCase) is one of these, or it holds one of
#: :data:`_SECRET_PARTS` anywhere
_SECRET_WORDS = {"token", "key", "pat", "secret", "secrets", "password", "passwd",
                 "passphrase", "authorization", "credential", "credentials", "cookie",
                 "apikey"}
_SECRET_PARTS = ("secret", "passw", "api_key", "api-key", "apikey", "authorization",
                 "credential", "cookie")
#: a secret-looking name that says where a secret is rather than holding one
#: (``apiKeyHelper``, ``env_key``, ``api_key_name``, ``envKey``, ``secret_name``)
_POINTER_WORDS = {"name", "env", "var", "envvar", "helper", "file", "path", "cmd",
                  "command", "source"}
#: an Authorization scheme kept in front of the secret (``Bearer ${env:NAME}``)
AUTH_SCHEME = re.compile(r"^((?:Bearer|Token|Basic)\s+)(\S.*)$", re.I | re.S)

#: tokens recognisable by their value alone: (literal prefix, what must follow it). A
#: prefix no word starts with (GitHub's, Slack's, GitLab's) needs a short tail; a generic
#: one (``sk-``: OpenAI, Anthropic, DeepSeek…; Hugging Face, Groq, xAI, Perplexity,
#: Replicate, npm, PyPI, Stripe) a tail as long as such keys have; AWS and Google keys
#: have a fixed shape
_SPECIFIC = r"[A-Za-z0-9_-]{6,}"
_PREFIXED = (
    *((p, _SPECIFIC) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                                "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-",
                                "glpat-")),
    ("sk-", r"[A-Za-z0-9_-]{16,}"),
    ("AKIA", r"[A-Z0-9]{16}"), ("ASIA", r"[A-Z0-9]{16}"),
    ("AIza", r"[A-Za-z0-9_-]{30,}"),
    ("hf_", r"[A-Za-z0-9]{30,}"), ("gsk_", r"[A-Za-z0-9]{20,}"),
    ("xai-", r"[A-Za-z0-9]{20,}"), ("pplx-", r"[A-Za-z0-9]{20,}"),
    ("r8_", r"[A-Za-z0-9]{20,}"), ("npm_", r"[A-Za-z0-9]{30,}"),
    ("pypi-", r"[A-Za-z0-9_-]{30,}"),
    ("sk_live_", r"[A-Za-z0-9]{16,}"), ("rk_live_", r"[A-Za-z0-9]{16,}"),
    ("sk_test_", r"[A-Za-z0-9]{16,}"),
)
_TOKEN_BODY = "|".join(re.escape(prefix) + tail for prefix, tail in _PREFIXED)
#: such a token in free text: not glued to a letter or digit in front (``task-…`` is no
#: ``sk-`` token), nor running on into more token characters
PREFIXED_TOKEN = re.compile(r"(?<![A-Za-z0-9])(?:%s)(?![A-Za-z0-9_-])" % _TOKEN_BODY)

#: the password of a URL's userinfo (``https://user:PASSWORD@host``)
URL_PASSWORD = re.compile(r"(?<=://)(?P<user>[^/\s:@\"']*):(?P<password>[^/\s@\"']+)@")

#: ``NAME = "value"`` (TOML), ``"NAME": "value"`` (JSON), ``NAME: value`` (YAML),
#: ``NAME=value`` (.env): one value under a name, on one line of a client file or of output
#: (a name starts after a quote or where no name character is before it, and is taken
#: whole: tried from inside a run of name characters, a match cannot end any other way,
#: and each such start scanned the rest of the run again — quadratic in long words)
NAMED_VALUE = re.compile(r"""(?:(?P<q>["'])|(?<![A-Za-z0-9_.-]))(?P<name>[A-Za-z0-9_.-]++)"""
                         r"""(?(q)(?P=q))[ \t]*[:=][ \t]*"""
                         r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'"""
                         r"""|(?:(?:Bearer|Token|Basic)[ \t]+)?[^\s,{}\[\]#'"`]+)""", re.I)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[\s_.\-]+", spaced.lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a value under ``name`` is a secret whatever it holds (and ``name`` does not
    merely say where one is: ``apiKeyHelper``, ``env_key``, ``api_key_name``)."""
    name = str(name)
    known = _secret_names.get(name)
    if known is None:
        if len(_secret_names) >= 100_000:  # a long watch: start afresh
            _secret_names.clear()
        known = _secret_names[name] = _judge_name(name)
    return known


#: name → secret_name's answer: every key of every diff is judged, the same few names
#: thousands of times (``name``, ``context``) at a large catalogue
_secret_names: dict[str, bool] = {}


def _judge_name(name: str) -> bool:
    words = _words(name)
    if not words:
        return False
    low = str(name).lower()
    if not (any(w in _SECRET_WORDS for w in words) or any(p in low for p in _SECRET_PARTS)):
        return False
    # ``env_key``/``envKey`` (Codex, Qwen): the variable's name, not its value
    return words[-1] not in _POINTER_WORDS and words[:1] != ["env"]


def looks_like_token(value: str) -> bool:
    """Whether ``value`` (a whole value, an ``Authorization`` scheme aside) is a token by
    its prefix alone (``ghp_…``, ``sk-…``, ``xoxb-…``, ``AKIA…``)."""
    if not isinstance(value, str):
        return False
    bare = AUTH_SCHEME.match(value.strip())
    return PREFIXED_TOKEN.fullmatch((bare.group(2) if bare else value).strip()) is not None


def could_be_token(value: str) -> bool:
    """Whether a value under a secret-looking name can be a secret: 8 characters or more,
    not a number, no whitespace (``TOKEN_LIMIT: 4000`` or a sentence is none), no
    reference (``${…}``, ``${{ secrets.X }}``, ``{env:X}``, ``$(…)``, ``$NAME``), not an
    environment variable's name, not a path or a URL (``owned key: ~/.codex/…``; a URL's
    password is :data:`URL_PASSWORD`'s), not a plain word (a setting, ``secrets:
    reference``, or prose: ``key: Permission denied``)
    and not already shown redacted."""
    bare = AUTH_SCHEME.match(value.strip())
    text = (bare.group(2) if bare else value).strip()
    return (len(text) >= 8 and not text.isdigit() and not any(c.isspace() for c in text)
            and not text.startswith(("$", "(", "{env:", "~/", "/", "./", "../"))
            and "${" not in text and "://" not in text
            and "{{" not in text and "…" not in text
            and re.fullmatch(r"[A-Z][A-Z0-9_]*|[A-Z]?[a-z]+", text) is None)


def _unquoted(raw: str) -> str:
    if raw[:1] == '"':
        try:
            return json.loads(raw)
        except ValueError:
            return raw[1:-1]
    if raw[:1] == "'":
        return raw[1:-1]
    return raw


#: every secret-looking name holds one of these, lower-cased: each word of _SECRET_WORDS and
#: part of _SECRET_PARTS does (tests/test_looks_secret.py holds them to it)
NAME_HINTS = ("token", "key", "pat", "secret", "pass", "authorization", "credential",
              "cookie")


def _named_values(text: str):
    """:data:`NAMED_VALUE`'s matches in ``text`` on the lines that hold a
    :data:`NAME_HINTS` word: none on another line is under a secret-looking name. No
    match spans a line break, so each line scanned alone gives the whole scan's matches
    there; a big catalogue's file has few such lines, found by ``str.find``. (A text
    that is not ASCII is scanned whole: lower-casing may change its length.)"""
    if not text.isascii():
        yield from NAMED_VALUE.finditer(text)
        return
    low = text.lower()
    starts = set()
    for hint in NAME_HINTS:
        at = low.find(hint)
        while at != -1:
            start = low.rfind("\n", 0, at) + 1
            starts.add(start)
            end = low.find("\n", at)
            if end == -1:
                break
            at = low.find(hint, end)
    for start in sorted(starts):
        end = low.find("\n", start)
        yield from NAMED_VALUE.finditer(text, start, len(text) if end == -1 else end)


#: files that hold nothing but credentials, whatever their names: llm's ``keys.json``
#: (``{"mistral": "…"}``), Cline's ``secrets.json``, Codex's ``auth.json``
CREDENTIAL_STORES = frozenset({"keys.json", "secrets.json", "auth.json"})


def secrets_in(text: str | None, name: str = "") -> list[str]:
    """The values ``text`` (a client file named ``name``) holds that can be secrets
    (:func:`could_be_token`), as written (unquoted): under a secret-looking name, and
    every string of a credential store (:data:`CREDENTIAL_STORES`)."""
    if not text:
        return _scan(text, name)
    found = _scanned.get((name, text))
    if found is None:
        global _scanned_chars
        if _scanned_chars > 1 << 25:  # a long watch: start afresh past 32M characters held
            _scanned.clear()
            _scanned_chars = 0
        found = _scanned[name, text] = tuple(_scan(text, name))
        _scanned_chars += len(text)
    return list(found)


#: (name, text) → the secrets found in it: every command reads each client file's text
#: for them, and after an apply each of its dozen certified runs reads the same texts
_scanned: dict[tuple[str, str], tuple[str, ...]] = {}
_scanned_chars = 0


def _scan(text: str | None, name: str) -> list[str]:
    out = []
    for match in _named_values(text or ""):
        if secret_name(match.group("name")):
            value = _unquoted(match.group("value")).strip()
            if could_be_token(value):
                out.append(value)
    if name in CREDENTIAL_STORES and text:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        out.extend(v for v in _strings(data) if could_be_token(v))
    return out


def _strings(value):
    if isinstance(value, str):
        yield value.strip()
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def hide(text: str, shown: str) -> str:
    """``text`` with every value that looks like a secret replaced by ``shown``: a token
    by its prefix wherever it stands, a URL's password, and a value under a
    secret-looking name (an ``Authorization`` scheme and the quotes kept, so the line
    still reads as it was)."""
    if not text:
        return text
    text = hide_by_value(text, shown)
    return NAMED_VALUE.sub(lambda m: _hidden_named(m, shown), text)


def hide_by_value(text: str, shown: str) -> str:
    """``text`` with every token known by its prefix and every URL password replaced."""
    text = PREFIXED_TOKEN.sub(shown, text)
    if "://" in text:
        text = URL_PASSWORD.sub(lambda m: f"{m.group('user')}:{shown}@", text)
    return text


def _hidden_named(match: re.Match, shown: str) -> str:
    whole, raw = match.group(0), match.group("value")
    if not secret_name(match.group("name")) or not could_be_token(_unquoted(raw)):
        return whole
    quote = raw[0] if raw[:1] in "\"'" else ""
    inner = raw[1:-1] if quote else raw
    scheme = AUTH_SCHEME.match(inner)
    new = f"{quote}{scheme.group(1) if scheme else ''}{shown}{quote}"
    start = match.start("value") - match.start()
    return whole[:start] + new
