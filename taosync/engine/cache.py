"""The render cache: what the last apply rendered, reused while nothing it came from moved.

Loading fleet.yaml (ruamel, schema, pydantic) and rendering costs most of a run; an
unchanged fleet renders the same patches. ``apply`` stores them in the state together
with a fingerprint of every input — fleet.yaml's and each included fleet's bytes, a keyed
hash of the resolved key, the environment variables the clients looked at and those an
``include:`` path expanded (as keyed hashes), the paths the clients looked at, the route
choices, home, platform, taosync's version — and ``plan``/``apply``/``status`` reuse them
when the fingerprint still holds.

The key is never stored: it is replaced by a placeholder and put back on load. An MCP
secret (a ``${env:…}``/``${file:…}``/``${cmd:…}`` value in ``mcp_servers``) is stored as
its reference and resolved again on load — as the key is — so a changed secret is
picked up and none is ever in the state; one that no longer resolves misses the cache,
and the full load reports it with its line and column. Everything is read through the
System in effect, so a certified run (engine/certificate.py) records what the cache
looked at. Standard library only.
"""


import sys

from taosync import __version__

KEY_TOKEN = "\x00taosync-key\x00"
#: formats whose every value is a plain string or number (a damaged cache may say else)
FLAT_FORMATS = ("dotenv", "text", "keyvalue")
#: ``{MCP_TOKEN: "<the value as written in fleet.yaml>"}`` stands for an MCP secret (or a
#: ``gateway.headers`` secret)
MCP_TOKEN = "\x00taosync-mcp-secret\x00"
#: ``{JOINED_TOKEN: [part, …]}`` stands for a Joined secret (Claude Code's custom headers)
JOINED_TOKEN = "\x00taosync-joined\x00"
#: 2: warnings stored as whole lines; 3: MCP secrets as references; 4: a probed path
#: records what was there (:func:`path_kind`), so a file created where none was misses;
#: 5: environment values as keyed hashes (a client may look at a variable holding a key),
#: and the variables include: paths expanded among them; 6: gateway.headers values (and
#: URL userinfo) as secrets — a version-5 cache holds them as plain text; 7: the MCP
#: secrets' references listed beside the patches (``mcp_refs``), read before them; 8: a
#: list element's name holding a ``]`` (or starting with ``"``) is quoted in its key path
CACHE_VERSION = 8


def path_kind(path) -> str | None:
    """What a render that looked at ``path`` found there: "dir", "file", "other", or None
    (nothing), read through the System in effect (a certified run records it)."""
    from taosync.engine.system import current

    return current().kind(path)


def fingerprint(*, fleet_sha: str, key, hmac_key: bytes, home, sandboxed: bool,
                consulted: dict, probed: dict, routes: dict | None = None,
                includes: dict | None = None) -> dict:
    """``routes``: a route choice is a render input too ({"spec", "choice"},
    pipeline.cache_routes); ``includes``: path → sha256 of each base fleet fleet.yaml
    ``include:``s; ``consulted``: every environment variable read (by a client, or
    expanded in an include path) → its value, stored as a keyed hash."""
    from taosync.fleet.secrets import value_hash

    return {**({"routes": routes} if routes else {}),
        "cache": CACHE_VERSION,
        "taosync": __version__,
        "platform": sys.platform,
        "home": str(home),
        "sandboxed": sandboxed,
        "fleet": fleet_sha,
        "key": value_hash(hmac_key, key.reveal()),
        "env": env_hashes(consulted, hmac_key),
        "paths": dict(sorted(probed.items())),
        **({"includes": dict(includes)} if includes else {}),
    }


def store(*, fingerprint: dict, key_ref, patches: list, key,
          warnings: list[str], clients: list[str], others: list | None = None) -> dict:
    """The cache entry saved in the state (no key in it). ``others``: the keys of the
    fleet's other named gateways — each is stored as its reference (an MCP token), and
    a render that holds one inside a longer text is not cached at all."""
    if key_ref.kind == "literal":
        return {}  # the key is in fleet.yaml itself: nothing to resolve it from
    try:
        for other in others or ():
            if not hasattr(other, "text"):  # a literal key of a named gateway
                raise _Literal()
        refs: list[str] = []
        dumped = [_dump_patch(p, key, refs) for p in patches]
        if others and any(o.reveal() in text for o in others
                          for text in _strings(dumped)):
            raise _Literal()
    except _Literal:
        return {}  # a literal secret (a header, a URL's password): the state never holds it
    return {
        "fingerprint": fingerprint,
        "key_ref": [key_ref.kind, key_ref.arg],
        "clients": clients,
        "warnings": [key.scrub(w) for w in warnings],
        "patches": dumped,
        "mcp_refs": list(dict.fromkeys(refs)),  # what _prefetch reads, without a walk
    }


def _strings(value) -> list[str]:
    """Every string inside a dumped value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    return []


class _Literal(Exception):
    """A rendered secret that is neither the key nor a reference resolved again on load."""


def env_hashes(consulted: dict, hmac_key: bytes) -> dict:
    """variable → keyed hash of its value (None: unset): no value is kept as it is."""
    from taosync.fleet.secrets import value_hash

    return {var: None if value is None else value_hash(hmac_key, value)
            for var, value in sorted(consulted.items())}


def rekey(entry: dict, key, hmac_key: bytes, consulted: dict | None = None) -> dict:
    """The entry with the key's hash (and, given ``consulted``, the environment's)
    taken with the state's own hashing key (a first apply renders before it exists)."""
    from taosync.fleet.secrets import value_hash

    if not entry:
        return entry
    fp = dict(entry["fingerprint"], key=value_hash(hmac_key, key.reveal()))
    if consulted is not None:
        fp["env"] = env_hashes(consulted, hmac_key)
    return dict(entry, fingerprint=fp)


def fingerprint_holds(fp: dict, *, fleet_sha: str | None, home: str, sandboxed: bool,
                      environ, hmac_key: bytes, sha_of=None) -> bool:
    """Every input of the cached render but the key is as it was: fleet.yaml's sha256
    (None: unreadable), every included base fleet's (``sha_of(path)``; without it a fleet
    with includes never holds), taosync's version, the platform, home, the environment
    variables the clients consulted or include paths expanded, and what is at the paths
    the clients looked at. The key's hash is the caller's to compare."""
    includes = fp.get("includes", {})
    return (fp.get("cache") == CACHE_VERSION and fleet_sha is not None
            and (not includes or sha_of is not None
                 and all(sha_of(path) == sha for path, sha in includes.items()))
            and fp["fleet"] == fleet_sha
            and (fp["taosync"], fp["platform"], fp["home"], fp["sandboxed"])
            == (__version__, sys.platform, home, sandboxed)
            and env_hashes({var: environ.get(var) for var in fp["env"]}, hmac_key) == fp["env"]
            and all(path_kind(path) == was for path, was in fp["paths"].items()))


def lookup(entry: dict, *, fleet_path, home, sandboxed: bool, environ, hmac_key: bytes,
           choose=None):
    """(patches, key, warnings, clients) when the cached render still holds, else None.
    ``choose(spec)`` → {route: model}: the route choices now (a different one misses)."""
    from taosync.engine.state import sha256_bytes
    from taosync.engine.system import current
    from taosync.fleet.secrets import Reference, SecretError, value_hash

    if not entry or entry.get("fingerprint", {}).get("cache") != CACHE_VERSION:
        return None
    from taosync.privilege import rights_for

    fp = entry["fingerprint"]
    system = current()
    try:
        with rights_for(fleet_path, fleet=True):  # the invoker's, unless the home holds it
            fleet_sha = sha256_bytes(system.read_bytes(fleet_path))
    except OSError:
        fleet_sha = None
    if not fingerprint_holds(fp, fleet_sha=fleet_sha, home=str(home), sandboxed=sandboxed,
                             environ=environ, hmac_key=hmac_key,
                             sha_of=lambda path: _sha_or_none(system, path)):
        return None
    # -- route choices (issue 15): chosen again from the history, must match
    if fp.get("routes") and (choose is None or
                             choose(fp["routes"]["spec"]) != fp["routes"]["choice"]):
        return None
    refs = entry.get("mcp_refs")
    if not isinstance(refs, list) or not all(isinstance(t, str) for t in refs):
        return None
    _prefetch(Reference(*entry["key_ref"]), refs, environ)
    try:
        key = resolve_recorded(Reference(*entry["key_ref"]), environ=environ, home=home)
    except SecretError:
        return None  # let the full load report it, with its line and column
    if value_hash(hmac_key, key.reveal()) != fp["key"]:
        return None
    mcp = _McpResolver(environ, home)
    try:
        patches = [_load_patch(p, key, mcp) for p in entry["patches"]]
    except SecretError:
        return None  # an MCP secret no longer resolves: the full load locates it
    except _Null:
        return None  # no client renders a null (TOML cannot hold one): not our render
    if any(isinstance(v, (dict, list)) for p in patches if p.format in FLAT_FORMATS
           for v in p.values.values()):
        return None  # a .env or text file holds one plain value per key: not our render
    return patches, key, list(entry["warnings"]), list(entry["clients"])


def _prefetch(key_ref, texts: list[str], environ) -> None:
    """Every 1Password reference of the cached render (the key, each MCP secret: its
    ``mcp_refs``) read in one call before any is resolved, as the full load does
    (fleet/stores.py)."""
    from taosync.fleet.logic import prefetch_stores
    from taosync.fleet.secrets import CMD_TIMEOUT

    prefetch_stores([key_ref], texts, environ, CMD_TIMEOUT)


def resolve_recorded(ref, *, environ, home):
    """fleet.secrets.resolve, with what it read recorded by the System in effect: the
    file a ``${file:…}`` names is read through it, a ``${cmd:…}``'s output told to it
    (``System.ran``), an ``${env:…}`` read from ``environ`` (the System's own)."""
    from taosync.engine.system import current
    from taosync.bounded import SECRET_FILE_MAX
    from taosync.fleet.secrets import expand_path, resolve

    system = current()
    if ref.kind == "file":
        from taosync.privilege import rights_for

        try:
            with system.resolving(), rights_for(expand_path(ref.arg, home)):
                system.read_bytes(expand_path(ref.arg, home), SECRET_FILE_MAX)
        except OSError:
            pass  # resolve says what is wrong
    with system.resolving():
        secret = resolve(ref, environ=environ, home=home)
    if ref.kind in ("cmd", "shell", "keyring", "op", "pass"):  # a program, or a store, ran
        system.ran(ref.describe(), secret.reveal())
    return secret


class _Null(Exception):
    """A null among a cached render's values (no client renders one)."""


def _sha_or_none(system, path: str) -> str | None:
    """sha256 of an included base fleet's bytes now (None when it cannot be read)."""
    from pathlib import Path

    from taosync.engine.state import sha256_bytes

    from taosync.privilege import rights_for

    try:
        with rights_for(path, fleet=True):
            return sha256_bytes(system.read_bytes(Path(path)))
    except OSError:
        return None


class _McpResolver:
    """Resolves the MCP secrets of one cached render, each reference once."""

    def __init__(self, environ, home):
        self.environ, self.home = environ, home
        self.done: dict = {}

    def __call__(self, text: str):
        from taosync.fleet.logic import McpSecret, split_secret_reference
        from taosync.fleet.secrets import SecretError

        if text not in self.done:
            try:
                parts = split_secret_reference(text)
            except ValueError:
                parts = None
            if parts is None:
                raise SecretError("not a key reference")
            prefix, ref, suffix = parts
            resolved = resolve_recorded(ref, environ=self.environ, home=self.home)
            if any(c < " " or "\x7f" <= c <= "\x9f" for c in resolved.reveal()):
                # a header must not hold one (a CR/LF would inject another): let the full
                # load judge the value where it stands in fleet.yaml
                raise SecretError("a control character")
            self.done[text] = McpSecret(text, prefix, ref, suffix, resolved)
        return self.done[text]


def _dump_patch(patch, key, refs: list[str]) -> dict:
    """``patch`` as the state holds it; each MCP secret's reference text into ``refs``."""
    from taosync.formats.base import keypath_str

    def enc(value):
        return _encode(value, key.reveal(), refs)

    return {
        "path": str(patch.path), "format": patch.format, "client": patch.client,
        "secret": patch.secret,
        "values": [[keypath_str(k), enc(v)] for k, v in patch.values.items()],
        "skeleton": [[keypath_str(k), enc(v)] for k, v in patch.skeleton.items()],
        "volatile": [[keypath_str(k), enc(v)] for k, v in patch.volatile.items()],
        "lead": [keypath_str(k) for k in patch.lead],
    }


def _load_patch(data: dict, key, mcp: _McpResolver):
    from pathlib import Path

    from taosync.engine.patch import Patch
    from taosync.formats.base import keypath_parse

    def dec(pairs, values: bool = False):
        return {keypath_parse(k): _decode(v, key, mcp, values) for k, v in pairs}

    return Patch(Path(data["path"]), data["format"], dec(data["values"], True), data["client"],
                 skeleton=dec(data["skeleton"]), volatile=dec(data["volatile"]),
                 secret=data["secret"],
                 lead=tuple(keypath_parse(k) for k in data["lead"]))


def _encode(value, secret: str, refs: list[str]):
    if type(value) is str:  # most values: asked first
        return value.replace(secret, KEY_TOKEN) if secret else value
    from taosync.fleet.logic import Joined, McpSecret  # loaded already: the render made them
    from taosync.fleet.secrets import Secret

    if isinstance(value, McpSecret):
        refs.append(value.text)
        return {MCP_TOKEN: value.text}
    if isinstance(value, Joined):
        return {JOINED_TOKEN: [_encode(p, secret, refs) for p in value.parts]}
    if isinstance(value, Secret):
        if value.reveal() != secret:
            raise _Literal()
        return KEY_TOKEN
    if isinstance(value, str):
        return value.replace(secret, KEY_TOKEN) if secret else value
    if isinstance(value, dict):
        return {k: _encode(v, secret, refs) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v, secret, refs) for v in value]
    return value


def _decode(value, key, mcp: _McpResolver, values: bool = False):
    """``value`` as the render made it; ``values``: a patch's values, where a null is
    :class:`_Null` (found in the same walk)."""
    if isinstance(value, str):
        if value == KEY_TOKEN:
            return key
        return value.replace(KEY_TOKEN, key.reveal()) if KEY_TOKEN in value else value
    if isinstance(value, dict):
        if len(value) == 1 and MCP_TOKEN in value:
            return mcp(value[MCP_TOKEN])
        if len(value) == 1 and JOINED_TOKEN in value:
            from taosync.fleet.logic import Joined

            return Joined([_decode(p, key, mcp, values) for p in value[JOINED_TOKEN]])
        return {k: _decode(v, key, mcp, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, key, mcp, values) for v in value]
    if value is None and values:
        raise _Null
    return value
