"""The small interface every client module implements, and what it returns.

A client module (``claude_code.py``, ``codex.py``, …) is listed once, in
:mod:`taosync.clients.registry`, and declares everything about its client (the contract
as a type: :class:`taosync.clients.plugin.ClientPlugin`; the members marked "default" may
be left out, :data:`taosync.clients.plugin.DEFAULTS` fills them in). Most of it is derived
from one table, a :class:`taosync.clients.declare.Declared`:

* ``ID``: the client's id as spelled under ``clients:`` in fleet.yaml;
* ``TITLE``: its product name, as messages name it ("Claude Code");
* ``SUMMARY``: one line for the schema and help (which options it has);
* ``TARGETS``: a one-line description per file it may write (for help and tests);
* ``OWNED_FILES``: README's "Files taosync owns" rows (client and version, file, owned
  keys); the table is generated from them: ``python -m taosync.clients.readme --write``;
* ``OPTIONS``: its fleet.yaml options (:class:`Option`; a route-or-model slot via
  :func:`slot_option`), from which the schema's entry for it is built; ``reserved``
  values are its own cross-checks (Codex's ``provider_id`` is not ``openai``);
* ``LOCATION_VARS``: environment variables that move its directories (``CODEX_HOME``);
  ``LOCATION_FILES`` (default none): ones that name a single file;
* ``MCP`` (default True): False for a client with no MCP at all (aider), so
  plan and apply say once that the fleet's servers are not written there;
* ``render(fleet, key, env) -> list[Patch]``: the files and owned keys it wants;
* ``probes(fleet, key, env) -> list[ProbeSpec]``: the request(s) the client will send;
* ``on_disk(fleet, key, env) -> OnDisk``: the same requests built from the values in the
  client's files as they are (what ``taosync verify`` probes by default);
* ``observe(env) -> Observation``: what its files say today (``taosync import``);
* ``locations(env) -> (dirs, files)``: where its files may be (rollback and recovery
  act only there);
* ``doctor(fleet, key, environ) -> list[Finding]`` (default: nothing to say): what ``taosync doctor``
  should say about this client's own pitfalls (environment variables that beat or are
  ignored by its files);
* ``BINARY``: the client's command; ``taosync doctor`` runs ``BINARY --version``
  when the client is enabled and compares it with the version the module was proven with;

A client module knows its client and nothing else: no file I/O, no format syntax. The
engine turns patches into edits and writes. This module holds the contract and shared
helpers and imports no client; tests hold every client to the same promises
(``tests/clients/contract.py``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from taosync.bounded import read_regular
from taosync.engine.patch import Patch  # noqa: F401 - what render returns
from taosync.fleet.logic import SLOT, SLOT_LIST, SLOT_MAP  # noqa: F401 - kinds of slot
from taosync.formats.base import KeyPath
from taosync.hints import again


# -- what a client declares: its fleet.yaml options ---------------------------------------
# ``OPTIONS`` beyond the ``enabled``/``secrets``/``mcp`` every client has; fleet/model.py
# builds the pydantic model (and so the schema) from them, and the schema carries what the
# run-time checks need: ``x-slot`` marks an option naming a route or a catalogue model,
# ``x-reserved`` values it must not take.

@dataclass(frozen=True)
class Option:
    """One key of a client's fleet.yaml entry.

    ``type`` is a typing expression (``str | None``, ``list[str]``, ``Literal[…]``);
    ``default`` is copied for each fleet (a list or dict default is never shared).
    """

    name: str
    type: Any
    default: Any
    description: str
    pattern: str | None = None
    #: "" for a plain option, else SLOT / SLOT_LIST / SLOT_MAP
    slot: str = ""
    #: value → why it is refused (a cross-check tied to the option's line)
    reserved: dict[str, str] = field(default_factory=dict)


def slot_option(name: str, description: str, kind: str = SLOT, type: Any = str | None,
                default: Any = None) -> Option:
    """An option that names a route or a catalogue model."""
    return Option(name, type, default, description, slot=kind)


@dataclass(frozen=True)
class ProbeSpec:
    """One request a client will send, shaped as it sends it (see clients.md)."""

    client: str
    route: str | None  # route name, or None when the slot named a model id directly
    model: str
    protocol: str  # anthropic-messages | openai-responses | openai-chat | gemini
    base_url: str  # exactly as written into the client's config
    url: str  # the full URL the client will POST to
    auth: str  # a scheme of the protocol's AUTH (protocols/<name>.py): bearer, x-api-key, …
    stream: bool = True
    headers: tuple[tuple[str, str], ...] = ()
    #: on-disk probes only: the key the client's files resolve to (None: the fleet's key)
    secret: Any = None
    #: on-disk probes only: where each value was read
    origins: tuple["Origin", ...] = ()
    #: the named gateway the client is on (verify fills it: docs/gateways.md)
    gateway: str | None = None


@dataclass(frozen=True)
class Origin:
    """Where an on-disk probe read one of its values, so a failure can name it."""

    role: str  # url | key | model
    where: str  # "~/.claude/settings.json env.ANTHROPIC_BASE_URL"
    drifted: bool = False  # the file's value is not what fleet.yaml renders there


def probe_specs(fleet, client: str, models, *, protocol: str, base_url: str, path: str,
                auth: str = "bearer", headers: dict[str, str] | None = None,
                secret: Any = None, origins: tuple[Origin, ...] = ()) -> list[ProbeSpec]:
    """One probe per (slot, model) pair, POSTed to ``base_url`` + ``path`` with the
    gateway's extra headers (or ``headers`` read from the client's files), as ``client``
    sends it."""
    sent = tuple((headers if headers is not None else fleet.gateway_headers()).items())
    return [ProbeSpec(client=client, route=fleet.route_for(slot), model=model,
                      protocol=protocol, base_url=base_url,
                      url=base_url.rstrip("/") + path, auth=auth, headers=sent,
                      secret=secret, origins=origins)
            for slot, model in models]


class Shared(str):
    """A render warning of one client that others may share word for word: reads
    ``client: cause`` alone, and :func:`grouped_warnings` prints one line for all."""

    client: str
    cause: str

    def __new__(cls, client: str, cause: str) -> "Shared":
        self = super().__new__(cls, f"{client}: {cause}")
        self.client, self.cause = client, cause
        return self


def grouped_warnings(warnings: list[str]) -> list[str]:
    """``warnings`` with each :class:`Shared` cause once, at its first place, naming
    every client that has it (``claude-code, codex: an MCP server uses …``)."""
    clients: dict[str, list[str]] = {}
    for w in warnings:
        if isinstance(w, Shared):
            clients.setdefault(w.cause, []).append(w.client)
    out: list[str] = []
    for w in warnings:
        if not isinstance(w, Shared):
            out.append(w)
        elif w.cause in clients:
            out.append(f"{', '.join(dict.fromkeys(clients.pop(w.cause)))}: {w.cause}")
    return out


@dataclass
class ClientEnv:
    """Where client files live on this machine: the home, the environment, the OS.

    With ``--home`` (a sandbox), a location variable such as ``CODEX_HOME`` is honoured
    only when it points inside that home, so a sandboxed run can never reach the real one.
    """

    home: Path
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    platform: str = sys.platform  # linux | darwin | win32
    sandboxed: bool = False
    warnings: list[str] = field(default_factory=list)
    #: what rendering looked at — environment variables and paths probed — so a cached
    #: render is reused only while all of it is unchanged (see engine/cache.py)
    consulted: dict[str, str | None] = field(default_factory=dict)
    probed: dict[str, str | None] = field(default_factory=dict)
    #: more directories this run's files may be in (a project run: the project's root)
    extra_dirs: tuple[Path, ...] = ()
    #: --system: the clients' managed (policy) files are this run's (clients/system.py)
    system_scope: bool = False

    def shown(self, path: Path | str) -> str:
        """``path`` as output names it: ``~/…`` under the home (the ``home:`` header says
        which directory that is under --home)."""
        from taosync.paths import display_path

        return display_path(path, self.home)

    def warn_for(self, client: str, cause: str) -> None:
        """A warning several clients may share word for word (``cause`` names no client
        and no client's file): printed once, naming each (:func:`grouped_warnings`)."""
        self.warnings.append(Shared(client, cause))

    def getenv(self, var: str) -> str | None:
        value = self.environ.get(var)
        self.consulted[var] = value
        return value

    def is_dir(self, path: Path) -> bool:
        return self._look(path) == "dir"

    def is_file(self, path: Path) -> bool:
        return self._look(path) == "file"

    def _look(self, path: Path) -> str | None:
        """What is at ``path``, remembered as an input of the render (engine/cache.py)."""
        from taosync.engine.cache import path_kind

        kind = path_kind(path)
        self.probed[str(path)] = kind
        return kind

    def location(self, var: str) -> Path | None:
        """The path in environment variable ``var``, if set (and allowed)."""
        raw = self.getenv(var)
        if not raw:
            return None
        path = Path(os.path.expanduser(raw)) if not self.sandboxed else Path(raw)
        if self.sandboxed:
            from taosync.engine.system import current  # a certified run records the links

            try:
                current().realpath(path).relative_to(current().realpath(self.home))
            except ValueError:
                msg = f"ignoring {var}={raw}: it points outside --home {self.home}"
                if msg not in self.warnings:
                    self.warnings.append(msg)
                return None
        return path

    def app_data(self) -> Path:
        """Per-user application data: XDG config (Linux), Application Support, %APPDATA%."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform == "win32":
            return self.location("APPDATA") or self.home / "AppData" / "Roaming"
        return self.location("XDG_CONFIG_HOME") or self.home / ".config"


# -- reading back: what a client's existing files say (``taosync import``) -------------


@dataclass
class Seen:
    """One value found in a client's own file, and where: ``key`` is the key path as
    :func:`~taosync.formats.base.keypath_str` spells it (what ``plan`` reports).

    ``value`` is exactly as written; a literal key is held as a
    :class:`~taosync.fleet.secrets.Secret` so it can never be printed by accident.
    """

    value: Any
    file: Path
    key: str


@dataclass
class Observation:
    """What one client's files say, as ``observe(env)`` of its module reads them.

    Slot names follow the client's fleet settings: ``"model"``, ``"haiku"``, …; a dict
    entry as ``"roles.chat"``; a list entry whose route name is fixed (a Codex profile
    is a file named after it) as ``"profiles[fast]"``. Each list of ``Seen`` holds every
    place the value was found, the one the client uses first.
    """

    client: str
    #: how its base URLs relate to the gateway root: "anthropic" (the root itself),
    #: "openai" (root + /v1) or "gemini" (gateway.gemini_base_url)
    protocol: str = "openai"
    files: list[Path] = field(default_factory=list)  # files that exist and were read
    urls: list[Seen] = field(default_factory=list)  # gateway base URLs, as written
    keys: list[Seen] = field(default_factory=list)  # literal keys (value: Secret)
    key_envs: list[Seen] = field(default_factory=list)  # env var names it reads the key from
    key_helper: Seen | None = None  # a shell command printing the key
    slots: dict[str, list[Seen]] = field(default_factory=dict)  # slot → model ids
    #: slot → the models the client falls back to, in order (Claude's fallbackModel):
    #: import makes the slot's route choose among the model and these
    fallbacks: dict[str, Seen] = field(default_factory=dict)
    headers: list[Seen] = field(default_factory=list)  # value: {name: value}
    mcp_servers: dict[str, Seen] = field(default_factory=dict)  # value: fleet-shaped entry
    #: other settings of this client's fleet entry that reproduce what it has
    #: (``secrets: reference``, Codex ``provider_id``, Continue ``secret_name``)
    settings: dict[str, Any] = field(default_factory=dict)
    #: set when the client talks to something that is not an OpenAI/Anthropic-shaped
    #: gateway (its own provider, a local server): value describes it
    provider: Seen | None = None
    notes: list[str] = field(default_factory=list)  # worth telling the user
    problems: list[str] = field(default_factory=list)  # files that cannot be read
    #: an app that takes only MCP servers (no gateway to find): import adds its entry
    #: to the proposal's clients when it holds servers
    mcp_only: bool = False


def read_plain(path: Path, fmt: str, obs: Observation, key: KeyPath = ()) -> Any:
    """One client file as plain data (the value at ``key``, default the whole), or None
    when the file is absent; a file that cannot be read or parsed is recorded in
    ``obs.problems`` (and gives None)."""
    from taosync.formats.base import MISSING, FormatError
    from taosync.formats.registry import editor_for
    from taosync.privilege import owner_rights

    try:
        with owner_rights():  # root on a user's home: read as its owner
            text = read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        obs.problems.append(f"{path}: is a directory, not a file")
        return None
    except UnicodeDecodeError:
        obs.problems.append(f"{path}: is not UTF-8")
        return None
    except OSError as exc:
        obs.problems.append(f"{path}: cannot be read ({exc.strerror})")
        return None
    editor = editor_for(fmt)
    try:
        data = editor.get(editor.parse(text), key)
    except FormatError as exc:
        obs.problems.append(exc.located(str(path)))
        return None
    if path not in obs.files:
        obs.files.append(path)
    if data is MISSING:
        return {} if key == () else None
    return data


def fleet_mcp(*, command: Any = None, args: Any = None, env: Any = None, cwd: Any = None,
              url: Any = None, headers: Any = None, transport: str = "http") -> dict | None:
    """A client's MCP server entry in the shape of fleet.yaml ``mcp_servers.<name>``
    (stdio: command, args, env, cwd; http: url, headers, transport), or None when the
    fleet cannot express it."""

    def strings(value):
        if not isinstance(value, list):
            return None
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            return None
        return [str(v) for v in value]

    def string_map(value):
        if not isinstance(value, dict):
            return None
        if not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
            return None
        return {str(k): (str(v).lower() if isinstance(v, bool) else str(v))
                for k, v in value.items()}

    if command is not None:
        if not isinstance(command, str) or not command.strip():
            return None
        out: dict = {"command": command}
        for name, value, conv in (("args", args, strings), ("env", env, string_map)):
            if value in (None, [], {}):
                continue
            converted = conv(value)
            if converted is None:
                return None
            out[name] = converted
        if isinstance(cwd, str) and cwd:
            out["cwd"] = cwd
        return out
    if isinstance(url, str) and url.lower().startswith(("http://", "https://")):
        out = {"url": url}
        if headers not in (None, {}):
            converted = string_map(headers)
            if converted is None:
                return None
            out["headers"] = converted
        if transport == "sse":
            out["transport"] = "sse"
        return out
    return None


# -- verifying what the files say (``taosync verify``) ----------------------------------


@dataclass
class OnDisk:
    """What ``verify`` probes for one client by default: the values in its files."""

    client: str
    probes: list[ProbeSpec] = field(default_factory=list)
    #: one line per owned key path whose value on disk is not what fleet.yaml renders
    drift: list[str] = field(default_factory=list)
    #: why the client cannot be probed as it is (no file, no URL, a key that does not
    #: resolve): each one fails verify
    problems: list[str] = field(default_factory=list)
    #: (file, key path) pairs that differ from fleet.yaml ("" for a missing file)
    differing: set[tuple[Path, str]] = field(default_factory=set)

    def origin(self, role: str, seen: "Seen", env: "ClientEnv") -> Origin:
        """The :class:`Origin` of a value found at ``seen``."""
        return Origin(role, f"{shown(seen.file, env)} {seen.key}",
                      (seen.file, seen.key) in self.differing)


def shown(path: Path, env: ClientEnv) -> str:
    """A client file as messages name it (``~/.codex/config.toml`` under the home)."""
    from taosync.paths import display_path

    return display_path(path, env.home)


def start_on_disk(module: Any, fleet: Any, key: Any, env: ClientEnv,
                  primary: Path) -> tuple[OnDisk, Observation | None]:
    """The client's observation and its drift from fleet.yaml; no observation when its
    main file ``primary`` is missing or unreadable, or the client talks to another
    provider than the gateway (each recorded as a problem)."""
    out = OnDisk(module.ID)
    obs = module.observe(env)
    out.problems.extend(obs.problems)
    if primary not in obs.files:
        if not obs.problems:
            out.problems.append(f"{shown(primary, env)} does not exist: run "
                                f"{again('apply')}, or {again('verify --desired')}")
        return out, None
    import dataclasses

    from taosync.fleet.secrets import STAND_IN

    quiet = dataclasses.replace(env, warnings=[], consulted={}, probed={})
    made_up = key if getattr(key, "source", None) == STAND_IN else None
    for patch in module.render(fleet, key, quiet):
        for key_text in differing_keys(patch, unknown=made_up):
            out.differing.add((patch.path, key_text))
            if key_text:
                out.drift.append(f"{shown(patch.path, env)} differs from fleet.yaml in "
                                 f"{key_text}")
            else:
                out.drift.append(f"{shown(patch.path, env)} does not exist (fleet.yaml "
                                 f"writes it)")
    if obs.provider is not None:
        out.problems.append(f"{shown(obs.provider.file, env)} {obs.provider.key}: "
                            f"{module.ID} uses {obs.provider.value}, not the gateway")
        return out, None
    return out, obs


def differing_keys(patch: Patch, unknown: Any = None) -> list[str]:
    """The owned key paths of ``patch`` whose value on disk is not the rendered one
    (``[""]`` when the file is missing; [] when it cannot be read: the reader says why).
    ``unknown``: a made-up key (the real one did not resolve); a key path whose value
    holds it cannot be judged, and is left out."""
    from taosync.engine.plan import materialize
    from taosync.formats.base import FormatError, keypath_str, same_value
    from taosync.formats.registry import editor_for
    from taosync.privilege import owner_rights

    try:
        with owner_rights():  # root on a user's home: read as its owner
            text = read_regular(patch.path).decode("utf-8")
    except FileNotFoundError:
        return [""]
    except (OSError, UnicodeDecodeError):
        return []
    editor = editor_for(patch.format)
    try:
        doc = editor.parse(text)
    except FormatError:
        return []
    out = []
    for path, value in patch.values.items():
        plain = materialize(value)[0]
        if unknown is not None and unknown.found_in(plain):
            continue
        if not same_value(editor.get(doc, path), plain):
            out.append(keypath_str(path))
    return out


def disk_key(kind: str, arg: str, where: str, env: ClientEnv) -> tuple[Any, str | None]:
    """(Secret, None) for a key a client file holds or points at (``literal``, ``env``
    variable, ``shell`` helper), resolved as the client would; (None, why) when it does not
    resolve. The Secret's source is ``where``, the file and key path it came from."""
    from taosync.fleet.secrets import Reference, Secret, SecretError, resolve
    from taosync.fleet.stores import command_reference

    # a command taosync wrote to read a password store is read as its reference: through
    # the run's one read of it (one unlock), not by running the store again
    stored = command_reference(arg) if kind == "shell" else None
    ref = Reference(*stored) if stored is not None else Reference(kind, arg)
    try:
        secret = resolve(ref, environ=env.environ, home=env.home)
    except SecretError as exc:
        return None, f"{where}: {exc}"
    return Secret(secret.reveal(), where), None


def stored_key(seen: "Seen", env: ClientEnv, label: str | None = None) -> tuple[Any, str | None]:
    """:func:`disk_key` for a key a client file holds itself (``seen``), named as
    ``<label> <key path>``; the label defaults to the file it was read from."""
    where = f"{label if label is not None else shown(seen.file, env)} {seen.key}"
    return disk_key("literal", seen.value.reveal(), where, env)


def named_key(var: "Seen", stored: list["Seen"], where: str,
              env: ClientEnv) -> tuple["Seen | None", Any, str | None]:
    """The key of a client that reads it from the variable ``var`` names (gptme's
    ``api_key_env``, Vibe's ``api_key_env_var``): the environment's first, as the clients
    look, else the first of ``stored`` (a value the client's own files hold for it).
    (where it was seen, Secret, None) or (seen, None, why); (None, None, None) when
    neither has it."""
    if env.getenv(var.value):
        secret, problem = disk_key("env", var.value, f"{where} {var.key} (${var.value}, "
                                   f"from the environment)", env)
        return var, secret, problem
    if stored:
        return (stored[0], *stored_key(stored[0], env))
    return None, None, None


# -- what a client tells taosync doctor ----------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """One line of ``taosync doctor`` from a client's own ``doctor`` hook."""

    name: str  # what was looked at, e.g. an environment variable
    status: str  # ok | info | warn | fail
    detail: str  # already safe to print: secrets redacted, URLs without credentials


def same_key(value: str, key: Any) -> bool | None:
    """Whether an environment value is the fleet's key (None: no key to compare with);
    constant-time, and neither value is ever returned."""
    if key is None:
        return None
    import hmac

    return hmac.compare_digest(value.strip().encode(), key.reveal().encode())


def safe_url(value: str) -> str:
    """``value`` with any user:password@ replaced by ``…@``."""
    from urllib.parse import urlsplit

    parts = urlsplit(value if "://" in value else "http://" + value)
    if parts.username or parts.password:
        return value.replace(parts.netloc, "…@" + parts.netloc.rsplit("@", 1)[1])
    return value

