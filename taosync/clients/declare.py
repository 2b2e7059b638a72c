"""A client as a declaration: its files, the keys it owns there, and the rules all share.

A client module describes its client once — which file holds the gateway URL, which the
key, which key path each model slot goes to and how its value is spelled (aider's
``openai/`` prefix), how its MCP entries look — as a :class:`Declared`. From that one table
come ``render`` (what ``apply`` writes), ``observe`` (what ``import`` reads back), ``on_disk``
(what ``verify`` probes) and ``probes``, so the three can never disagree about a key.

The rules no client may forget live here, once:

* **secret mode** (:meth:`Declared.key_reference`): under ``secrets: reference`` a client
  gets the reference in the form it can follow (:class:`KeyRule`, whose ``forms`` import
  reads back too), or the key inline with one warning that says why;
* **rows named by an option** (:class:`Opt`, also as a list entry's name: :func:`named`):
  import finds the entry the way the client does, through the key that names it (or
  another entry found so), and reads the same rows there;
* **an entry per model** (:class:`Each`): rows written once for every model, read back
  in the one entry the client uses;
* **MCP entries** (:class:`McpShape`): one builder writes every client's entries and one
  reader reads them back; an MCP secret the client cannot expand is named in a warning;
* **headers** (``sends_headers=False``): a client that cannot send
  ``gateway.headers`` says so in one sentence.

What a table cannot say (Codex profiles, Continue roles, Cline's legacy store, opencode's
file precedence) a client adds by overriding a hook of :class:`Declared`: ``extra_render``,
``extra_observe``, ``read_key``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from taosync.clients.base import (ClientEnv, Observation, OnDisk, Option, Patch, ProbeSpec,
                                  Seen, disk_key, fleet_mcp, named_key, probe_specs,
                                  read_plain, shown, start_on_disk, stored_key)
from taosync.formats.base import KeyPath, Match, keypath_str

def gateway_url(fleet: Any, root: str) -> str:
    """The base URL a client of kind ``root`` is given: the gateway root (``anthropic``),
    root + /v1 (``openai``) or ``gateway.gemini_base_url`` (``gemini``)."""
    if root == "anthropic":
        return fleet.anthropic_url
    if root == "gemini":
        return (fleet.gateway.gemini_base_url or "").rstrip("/")
    return fleet.openai_url


def home_dir(var: str, name: str) -> Callable[[ClientEnv], Path]:
    """A client's directory: ``$var`` when set, else ``~/<name>``, the same home-relative
    path on Linux, macOS and Windows (Codex, Continue, Qwen Code, Vibe)."""
    return lambda env: env.location(var) or env.home / name


# -- the table: which fleet value goes to which key path ----------------------------------

@dataclass(frozen=True)
class File:
    """One file a client reads: where it is on this machine and its syntax."""

    where: Callable[[ClientEnv], Path]
    format: str
    #: a JSON file whose top level must be an object (import names one that is not)
    json_object: bool = False
    #: 0600 whatever taosync writes there: where the client keeps its secrets (Gemini
    #: CLI's ``.env``, shell-gpt's ``.sgptrc``)
    private: bool = False


@dataclass(frozen=True)
class Opt:
    """A key path part that is the value of one of the client's fleet options (Codex's
    ``[model_providers.<provider_id>]``). Import reads it back from the key path ``read``
    of the same file (Codex's ``model_provider``), the text before ``sep`` when given
    (opencode's ``model = "<provider_id>/<id>"``), and imports it as that option when
    the option takes it (:attr:`Declared.options`)."""

    name: str
    read: KeyPath = ()
    sep: str = ""
    #: the part written when no option has this name (Cline's provider id)
    value: str = ""
    #: the file ``read`` is in, when not the row's (aider's model settings entry, named
    #: by .aider.conf.yml's ``model``)
    file: str = ""


@dataclass(frozen=True)
class Each:
    """A key path part written once per model, as its id (after ``prefix``): for every
    model of ``models(fleet, options)`` when given (Continue's models of its roles), else
    the catalogue's, and with ``chosen`` also each model a slot chooses — an entry per
    model (llm's, Vibe's, aider's, Continue's ``models`` lists, opencode's ``models``
    map). Import and verify read the one entry the client uses: the :class:`Opt`
    ``read`` (none: the rows are not read back)."""

    read: Opt | None = None
    prefix: str = ""
    chosen: bool = False
    models: Callable[[Any, Any], Any] | None = None


def named(field: str, opt: Opt | Each) -> Match:
    """The list element whose ``field`` holds an option's value (gptme's
    ``[[providers]] name = <provider>``): a :class:`Match` on an :class:`Opt` (or on an
    :class:`Each`: one element per model)."""
    return Match(field, opt)  # type: ignore[arg-type]  # filled in before any edit


@dataclass(frozen=True)
class Bind:
    """One owned key path and the fleet value it holds.

    ``role``: ``url`` (the gateway base URL), ``slot`` (a model: ``option`` names the
    client's fleet option, ``prefix`` is put before the id; ``{name}`` in it is an
    :class:`Opt`'s value), ``key`` (the gateway key, inline), ``headers``
    (``gateway.headers`` as a map), ``fallbacks`` (the chain of slot ``option`` for the
    client's own per-request failover, see :func:`fallbacks`), ``fixed`` (``value`` as is)
    or ``computed`` (``value(fleet, the client's options)``; None: not written). A part of
    ``path`` may be an :class:`Opt`.
    ``default``: for a slot whose option is unset, the option it falls back to
    (Claude Code's ``sonnet`` → ``model``); ``optional``: an unset slot is not written.
    ``join``: headers written as one text, (between name and value, between headers):
    Claude Code's ``ANTHROPIC_CUSTOM_HEADERS``, ``(": ", "\n")``.
    ``key_env`` (the variable of an ``${env:NAME}`` key reference the client follows:
    NAME, written only then). ``inline``: written only when the key is written inline
    (Codex's ``requires_openai_auth``).
    ``env``: an environment variable the client reads before this key (shell-gpt's
    ``DEFAULT_MODEL``, Codex's ``CODEX_API_KEY``): render warns when it is set, verify
    probes what it says. ``key_var``: the name of the variable the client reads the key
    from (``value``: the name used when the fleet's key is no ``${env:NAME}``); the key
    itself goes into file ``store`` at ``under`` + the name.
    """

    file: str
    path: KeyPath
    role: str
    option: str = ""
    prefix: str = ""
    default: str = ""
    optional: bool = False
    value: Any = None
    join: tuple[str, str] | None = None
    env: str = ""
    store: str = ""
    under: KeyPath = ()
    inline: bool = False
    #: a key taosync reads but never writes (an older or competing spelling the client
    #: still honours): import reads it as its role says and notes ``{file}: {key} {note}``
    note: str = ""
    #: a ``fixed`` row whose value picks the client's provider (Gemini CLI's and Qwen
    #: Code's ``security.auth.selectedType``): another value read back means the client
    #: uses another provider, named by this text with the value in ``{}``
    selects: str = ""
    #: read back by import and verify, never written from this row (Vibe's active
    #: ``[[models]]`` entry's name: its :func:`model` row writes every model's)
    unwritten: bool = False
    #: written only when the key is not inline (Qwen Code's provider entry, which then
    #: takes the URL and headers that ``inline`` rows hold otherwise)
    reference: bool = False

    @property
    def rendered(self) -> bool:
        """Whether render writes this row from the table."""
        return not (self.note or self.unwritten)


def url(file: str, *path: Any, env: str = "", unwritten: bool = False, inline: bool = False,
        reference: bool = False) -> Bind:
    return Bind(file, tuple(path), "url", env=env, unwritten=unwritten, inline=inline,
                reference=reference)


def slot(file: str, *path: Any, option: str = "model", prefix: str = "", default: str = "",
         optional: bool = False, env: str = "", note: str = "", unwritten: bool = False) -> Bind:
    return Bind(file, tuple(path), "slot", option=option, prefix=prefix, default=default,
                optional=optional, env=env, note=note, unwritten=unwritten)


def model(file: str, *path: Any, value: Callable[[Any, Any, str], Any] | None = None) -> Bind:
    """In an :class:`Each` row: the model's id, or ``value(fleet, options, model id)``."""
    return Bind(file, tuple(path), "model", value=value)


def window(file: str, *path: Any, value: Any = None) -> Bind:
    """In an :class:`Each` row: the model's context window from the catalogue (``value``
    in its place when given), not written when the catalogue gives none."""
    return Bind(file, tuple(path), "window", value=value)


def key(file: str, *path: Any, env: str = "", note: str = "") -> Bind:
    return Bind(file, tuple(path), "key", env=env, note=note)


def key_var(file: str, *path: Any, default: str, store: str, under: KeyPath = ()) -> Bind:
    """The variable the client reads the key from, named in ``file`` (gptme's
    ``api_key_env``, Vibe's ``api_key_env_var``): the fleet's ``${env:NAME}``, else
    ``default``. The key goes into ``store`` under that name (0600) unless ``secrets:
    reference`` leaves it in the environment."""
    return Bind(file, tuple(path), "key_var", value=default, store=store, under=under)


def headers(file: str, *path: Any, join: tuple[str, str] | None = None,
            unwritten: bool = False, inline: bool = False, reference: bool = False) -> Bind:
    return Bind(file, tuple(path), "headers", join=join, unwritten=unwritten, inline=inline,
                reference=reference)


def split_headers(text: str, join: tuple[str, str]) -> dict[str, str]:
    """Headers written as one text (``join``: see :class:`Bind`) as a map."""
    out = {}
    for item in text.split(join[1].strip() or join[1]):
        name, sep, value = item.partition(join[0].strip() or join[0])
        if sep and name.strip():
            out[name.strip()] = value.strip()
    return out


#: the client option that switches in-client failover off (every client with a
#: ``fallbacks`` binding has it; one name for all, so a fleet reads alike everywhere)
FAILOVER = "failover"


def fallbacks(file: str, *path: Any, option: str = "model", default: str = "",
              spell: Callable[[Any, list[str]], Any] | None = None) -> Bind:
    """The models the client tries, in order, when slot ``option``'s model is overloaded
    or unavailable: ``fleet.fallbacks_for`` (the route's other candidates, preferred
    first), as ``spell(fleet, chain)`` writes it (default: the list of ids). Not written
    for a plain route or a model id, nor when the client's ``failover`` option is false;
    a route re-render moves it with the route's choice."""
    return Bind(file, tuple(path), "fallbacks", option=option, default=default, value=spell)


def failover_option(client: str) -> Option:
    """The ``failover`` option of a client with a :func:`fallbacks` binding."""
    return Option(FAILOVER, bool, True,
                  f"Write the route's other candidates into {client}'s own fallback "
                  f"setting, so a request the chosen model cannot serve (overloaded, "
                  f"unavailable) is retried on the next candidate by the client itself.")


def fixed(file: str, *path: Any, value: Any, inline: bool = False, selects: str = "") -> Bind:
    return Bind(file, tuple(path), "fixed", value=value, inline=inline, selects=selects)


def key_env(file: str, *path: Any) -> Bind:
    return Bind(file, tuple(path), "key_env")


def computed(file: str, *path: Any, value: Callable[[Any, Any], Any]) -> Bind:
    return Bind(file, tuple(path), "computed", value=value)


@dataclass(frozen=True)
class KeyRule:
    """What a client can read the key from by itself, for ``secrets: reference``.

    ``reads``: the reference kinds it follows (``env``, ``file``, ``cmd``, ``shell``);
    empty when it reads the key only from its own files. ``why``: the sentence the
    warning gives when the fleet's reference is not one of them. ``only``: the one
    variable an ``${env:…}`` reference must name (Gemini CLI's ``GEMINI_API_KEY``).
    ``forms``: how the key binding spells a reference it follows, by kind, ``{}`` the
    variable or the absolute path (opencode's ``{env:NAME}``); a kind it follows with no
    form leaves the binding unwritten (the client reads the variable by itself). Import
    reads a form back as the variable (``env``) or the file (``cat PATH``, a helper).
    """

    reads: tuple[str, ...] = ()
    why: str = ""
    only: str = ""
    #: the variable the client reads when its files hold no key (aider's OPENAI_API_KEY)
    fallback: str = ""
    #: a variable the client reads before the key its files hold (shell-gpt's
    #: OPENAI_API_KEY beats .sgptrc, Gemini CLI's GEMINI_API_KEY beats ~/.gemini/.env)
    first: str = ""
    forms: Mapping[str, str] = field(default_factory=dict)

    def spell(self, ref: Any, env: ClientEnv) -> str | None:
        """Reference ``ref`` in the key binding's form (None: no form, not written)."""
        form = self.forms.get(ref.kind)
        if form is None:
            return None
        from taosync.fleet.secrets import expand_path

        arg = ref.arg if ref.kind != "file" else str(expand_path(ref.arg, env.home).absolute())
        return form.format(arg)

    def parse(self, text: str) -> tuple[str, str] | None:
        """(kind, variable or path) when ``text`` is one of the forms (a space in a form
        stands for any blanks, none too: Continue's ``${{secrets.NAME}}``), else None."""
        def blanks(part: str) -> str:
            return r"\s*".join(map(re.escape, part.split(" ")))

        for kind, form in self.forms.items():
            head, _, tail = form.format("\0").partition("\0")
            found = re.fullmatch(f"{blanks(head)}(.+?){blanks(tail)}", text, re.DOTALL)
            if found and found.group(1).strip():
                return kind, found.group(1).strip()
        return None


# -- a key by command: what a client runs through a shell for the key --------------------

#: a key command that only prints an environment variable: ``printenv NAME``, ``echo $NAME``
PRINTENV = re.compile(
    r"^\s*(?:printenv\s+([A-Za-z_][A-Za-z0-9_]*)"
    r"|echo\s+(?:\"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\"|\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?))\s*$")


def key_command(ref: Any, env: ClientEnv) -> str:
    """A shell command printing the key of reference ``ref`` at run time (Claude Code's
    ``apiKeyHelper``, Pi's ``!command``): ``printenv NAME`` (which fails when NAME is
    unset), ``cat '<absolute path>'``, a ``${cmd:…}`` with each word quoted (taosync runs
    it without a shell; quoting keeps that meaning when the client hands it to one), the
    ``${shell:…}`` text, or the store's own read for a password store reference
    (``op read 'op://…'``, ``pass show 'PATH' | head -n 1``: fleet/stores.py)."""
    import os
    import shlex

    from taosync.fleet.secrets import expand_path

    if ref.kind == "env":
        return f"printenv {ref.arg}"
    if ref.kind == "file":
        return f"cat {shlex.quote(os.path.abspath(expand_path(ref.arg, env.home)))}"
    if ref.kind == "cmd":
        try:
            return shlex.join(shlex.split(ref.arg))
        except ValueError:
            return ref.arg
    if ref.kind in STORES:
        from taosync.fleet.stores import fetch_command

        return fetch_command(ref)
    return ref.arg  # ${shell:…}


#: the password stores a client that runs a key command reads by itself (fleet/stores.py)
STORES = ("keyring", "op", "pass")
#: every reference kind a client that runs a shell command for its key follows
BY_COMMAND = ("env", "file", "cmd", "shell", *STORES)


def printed_variable(command: str) -> str | None:
    """NAME when key command ``command`` only prints variable NAME (:data:`PRINTENV`)."""
    match = PRINTENV.match(command)
    return next(g for g in match.groups() if g) if match else None


# -- MCP: one builder, one reader ---------------------------------------------------------

def env_as(form: str) -> Callable[[Any], str | None]:
    """An :attr:`McpShape.by_reference` for a client that expands ``${env:NAME}`` MCP
    secrets itself, in its spelling ``form`` (``{}``: NAME; Gemini CLI's and Hermes'
    ``${{{}}}``, Continue's ``${{{{ secrets.{} }}}}``); other references stay inline."""
    def spell(secret: Any) -> str | None:
        if secret.ref.kind != "env":
            return None
        return f"{secret.prefix}{form.format(secret.ref.arg)}{secret.suffix}"
    return spell


@dataclass(frozen=True)
class McpShape:
    """How one client spells an MCP server entry.

    ``container``: the key path of the servers; ``listed``: a list of entries with a
    ``name`` field (else a map by name). ``whole``: the entry is one owned value (its
    fields the user adds are replaced), else each field is owned on its own.
    ``stdio``/``http``/``sse``: fixed fields of each kind of entry (``None`` for ``sse``:
    the client speaks streamable HTTP only, and is warned about). ``url_field`` per
    transport (Gemini's ``httpUrl``). ``command_list``: command and args are one list
    (opencode). ``cwd``: False when the client has no setting for it (warned, left out).
    ``by_reference``: how a secret env or header value is written so the client expands
    it itself (``${NAME}``), given the :class:`~taosync.fleet.logic.McpSecret`; None when
    the client expands nothing (``note`` says so in the warning).
    """

    container: KeyPath
    listed: bool = False
    whole: bool = True
    stdio: Mapping[str, Any] = field(default_factory=dict)
    http: Mapping[str, Any] = field(default_factory=dict)
    sse: Mapping[str, Any] | None = field(default_factory=dict)
    url_field: Mapping[str, str] = field(default_factory=lambda: {"http": "url", "sse": "url"})
    command_list: bool = False
    args_always: bool = True
    env_field: str = "env"
    env_always: bool = False
    headers_at: KeyPath = ("headers",)
    cwd: bool = True
    by_reference: Callable[[Any], str | None] | None = None
    note: str = ""
    #: owned keys written once when any server is (gptme's ``[mcp] enabled``)
    switch: Mapping[KeyPath, Any] = field(default_factory=dict)
    #: the field and value that switch an entry off (``{"enabled": False}``): such an
    #: entry is not imported, and a note says so
    disabled: Mapping[str, Any] = field(default_factory=dict)
    #: for a client that reads ``${env:NAME}`` secrets from fields of their own (Codex's
    #: ``env_vars``, ``env_http_headers``, ``bearer_token_env_var``): (kind, the env or
    #: header map, reference mode) → the entry's fields in place of the env or headers
    by_fields: Callable[[str, Mapping[str, Any], bool], dict] | None = None
    #: why the file takes no remote (http/sse) server, or "" when it does: such a server
    #: is left out, with a warning that says why (Claude Desktop: its Connectors UI)
    no_remote: str = ""
    #: the field an entry's own fields are nested under (Cline's ``transport``), its
    #: switches beside it; an entry without it is read flat
    nest: str = ""
    #: the transport of a remote entry by its fields, when not by the ``http``/``sse``
    #: marks (Cline's: a url entry with no type is sse)
    transport_of: Callable[[Mapping[str, Any]], str] | None = None

    def at(self, name: str) -> KeyPath:
        return self.container + ((Match("name", name),) if self.listed else (name,))


def _written(values: Mapping[str, Any], reference: bool,
             spell: Callable[[Any], str | None]) -> dict:
    """An env or header map as the client gets it: under ``secrets: reference``, each
    secret the client can expand itself in its own spelling (``spell``; None: inline)."""
    if not reference:
        return dict(values)
    from taosync.fleet.logic import McpSecret

    out = {}
    for name, value in values.items():
        spelled = spell(value) if isinstance(value, McpSecret) else None
        out[name] = value if spelled is None else spelled
    return out


def mcp_entry(shape: McpShape, server: Any, secrets: dict, warn: Callable[[str], None],
              what: str, fields: dict | None = None) -> dict:
    """One server's entry in the client's shape (``secrets``: its env or headers,
    already as written; ``fields``: what they become instead, by ``McpShape.by_fields``)."""
    entry: dict = {}
    if server.kind == "stdio":
        entry.update(shape.stdio)
        if shape.command_list:
            entry["command"] = [server.command, *server.args]
        else:
            entry["command"] = server.command
            if server.args or shape.args_always:
                entry["args"] = list(server.args)
        if fields is not None:
            entry.update(fields)
        elif secrets or shape.env_always:
            entry[shape.env_field] = secrets
        if server.cwd:
            if shape.cwd:
                entry["cwd"] = server.cwd
            else:
                warn(f"sets cwd, which {what} has no setting for; left it out")
        return entry
    fixed_fields = shape.http if server.transport == "http" else shape.sse
    if fixed_fields is None:
        warn(f"uses the sse transport, but {what} speaks streamable HTTP only; wrote its "
             f"url anyway, it may fail to connect")
        fixed_fields = shape.http
    entry.update(fixed_fields)
    entry[shape.url_field.get(server.transport, "url")] = server.url
    if fields is not None:
        entry.update(fields)
    elif secrets:
        _put(entry, shape.headers_at, secrets)
    return entry


def _put(entry: dict, path: KeyPath, value: Any) -> None:
    for part in path[:-1]:
        entry = entry.setdefault(part, {})
    entry[path[-1]] = value


def _get(entry: Any, path: KeyPath) -> Any:
    """The value at ``path`` in plain data (a :class:`Match` finds a list's first
    element whose field holds its value), or None."""
    for part in path:
        if isinstance(part, Match):
            entry = next((e for e in entry if isinstance(e, dict) and
                          e.get(part.field) == part.value), None) \
                if isinstance(entry, list) else None
        elif isinstance(entry, dict):
            entry = entry.get(part)
        else:
            return None
    return entry


def _opt(part: Any) -> Opt | None:
    """The :class:`Opt` a key path part is, or holds as a :class:`Match`'s value (of an
    :class:`Each`: the one it is read back through)."""
    if isinstance(part, Match):
        part = part.value
    return part.read if isinstance(part, Each) else part if isinstance(part, Opt) else None


def _each(path: KeyPath) -> Each | None:
    """The :class:`Each` part of ``path`` (also as a :class:`Match`'s value), if any."""
    for part in path:
        part = part.value if isinstance(part, Match) else part
        if isinstance(part, Each):
            return part
    return None


def _filled_path(path: KeyPath, values: Mapping[str, Any]) -> tuple:
    """``path`` with each :class:`Opt` (also one inside a :class:`Match`) its value in
    ``values`` (None where there is none)."""
    out: list[Any] = []
    for part in path:
        opt = _opt(part)
        value: Any = values.get(opt.name) if opt is not None else None
        if opt is None:
            out.append(part)
        elif isinstance(part, Match):
            out.append(None if value is None else Match(part.field, value))
        else:
            out.append(value)
    return tuple(out)


def read_mcp(shape: McpShape, doc: Any, path: Path, obs: Observation,
             from_reference: Callable[[str], str] | None = None) -> None:
    """The servers in ``doc`` (a whole file, as plain data) into ``obs.mcp_servers``,
    in fleet.yaml's shape; one it cannot express is named in a note."""
    servers = _get(doc, shape.container)
    if shape.listed:
        items = [(e.get("name"), e) for e in servers or [] if isinstance(e, dict)] \
            if isinstance(servers, list) else []
    else:
        items = list(servers.items()) if isinstance(servers, dict) else []

    def back(values: Any) -> Any:
        if not (from_reference and isinstance(values, dict)):
            return values
        return {k: from_reference(v) if isinstance(v, str) else v for k, v in values.items()}

    for name, outer in items:
        if not isinstance(name, str) or not isinstance(outer, dict):
            continue
        if shape.disabled and all(_same(outer.get(k), v) for k, v in shape.disabled.items()):
            obs.notes.append(f"{path}: MCP server {name!r} is disabled; not imported")
            continue
        nested = outer.get(shape.nest) if shape.nest else None
        entry = nested if isinstance(nested, dict) else outer
        command = entry.get("command")
        if command is not None and not _is_http(shape, entry):
            args = entry.get("args")
            if shape.command_list:
                command, args = (command[0], command[1:]) if isinstance(command, list) and \
                    command else (None, None)
            value = fleet_mcp(command=command, args=args, env=back(entry.get(shape.env_field)),
                              cwd=entry.get("cwd") if shape.cwd else None)
        else:
            transport = shape.transport_of(entry) if shape.transport_of else \
                _transport(shape, entry)
            value = fleet_mcp(url=entry.get(shape.url_field.get(transport, "url")),
                              headers=back(_get(entry, shape.headers_at)), transport=transport)
        if value is None:
            obs.notes.append(f"{path}: MCP server {name!r} has a shape fleet.yaml cannot "
                             f"express; not imported")
            continue
        seen = obs.mcp_servers.get(name)
        if seen is None:
            obs.mcp_servers[name] = Seen(value, path, keypath_str(shape.at(name)))
        elif seen.file != path and seen.value != value:  # several files: the first wins
            obs.notes.append(f"{path}: MCP server {name!r} differs from the one in "
                             f"{seen.file}; imported the one in {seen.file}")
        # (in one list, the first entry of a name is the one: a Match finds it)


def _same(found: Any, wanted: Any) -> bool:
    """``found == wanted``, but a flag only equals a flag (``0`` is not ``False``)."""
    return found is wanted if isinstance(wanted, bool) else found == wanted


def _is_http(shape: McpShape, entry: dict) -> bool:
    return bool(shape.http) and all(entry.get(k) == v for k, v in shape.http.items()) and \
        not shape.command_list


def _transport(shape: McpShape, entry: dict) -> str:
    """``sse`` when the entry carries the client's sse marks (a type field, or Gemini's
    url field, unless its http url field is there too: that one wins), else ``http``."""
    if shape.sse and all(entry.get(k) == v for k, v in shape.sse.items()) and \
            shape.sse != shape.http:
        return "sse"
    if shape.url_field.get("sse") != shape.url_field.get("http") and \
            shape.url_field.get("sse") in entry and shape.url_field.get("http") not in entry:
        return "sse"
    return "http"


def _filled(prefix: str, read: Mapping[str, str]) -> str | None:
    """A slot's prefix with its :class:`Opt` values read (None: one is not there)."""
    try:
        return prefix.format_map(read)
    except KeyError:
        return None


def _holds(key: Any, values: Mapping[KeyPath, Any]) -> bool:
    """Whether owned values hold the gateway key (the file is then 0600)."""
    return any(value is key for value in values.values()) or key.found_in(list(values.values()))


# -- the declaration ----------------------------------------------------------------------

@dataclass(frozen=True)
class Declared:
    """Everything about one client that render, import and verify derive from.

    ``files``: name → :class:`File`; ``primary``: the file verify needs to exist;
    ``bindings``: the owned key paths (:class:`Bind`); ``key_rule``: what the client can
    read the key from under ``secrets: reference``; ``sends_headers``: False when the
    client cannot send extra headers; ``protocol``/``root``/``path``/
    ``sends``: the request it sends (kind, base URL, path after it, its own headers);
    ``mcp``: its MCP shape and the file it lives in (None: no MCP client);
    ``places``: how verify's problems name where a ``url``, ``key`` or ``slot`` is set,
    when not by its binding's key path (Claude Code reads the key from three places).
    """

    id: str
    title: str
    files: Mapping[str, File]
    primary: str
    bindings: tuple[Bind, ...]
    protocol: str = "openai-chat"
    root: str = "openai"
    path: str = "/chat/completions"
    auth: str = "bearer"
    sends: Mapping[str, str] = field(default_factory=dict)
    key_rule: KeyRule = KeyRule()
    #: False for a client with no setting for extra request headers
    sends_headers: bool = True
    mcp: McpShape | None = None
    mcp_file: str = ""
    places: Mapping[str, str] = field(default_factory=dict)
    #: the client's fleet options (an :class:`Opt` read back is imported as one when it
    #: takes the value: its pattern, not reserved)
    options: tuple = ()
    #: what verify needs read back before it probes, in order: (an observation field,
    #: ``slots``, ``urls`` or ``key_envs``; the problem when it holds nothing) — the links
    #: of a chain the client follows (gptme's MODEL → its provider's base_url)
    needs: tuple[tuple[str, str], ...] = ()

    @property
    def ID(self) -> str:  # noqa: N802 - what start_on_disk reads of a client module
        return self.id

    # -- where ---------------------------------------------------------------------------

    def file(self, name: str, env: ClientEnv) -> Path:
        return self.files[name].where(env)

    def cfg(self, fleet: Any) -> Any:
        from taosync.fleet.logic import attr_name

        return getattr(fleet.clients, attr_name(self.id))

    # -- the rules every client shares --------------------------------------------------

    def reference(self, fleet: Any) -> bool:
        return fleet.secrets_for(self.cfg(fleet)) == "reference"

    def key_reference(self, fleet: Any, env: ClientEnv, inline_into: Path) -> Any:
        """The fleet's key reference when this client can follow it itself under
        ``secrets: reference``; else None — the key goes inline into ``inline_into``,
        and in reference mode a warning says why."""
        if not self.reference(fleet):
            return None
        from taosync.fleet.secrets import parse_reference

        ref = parse_reference(fleet.gateway.key)
        if self.follows(ref):
            return ref
        if not self.key_rule.reads:  # why, per client: README's key-reference table
            env.warn_for(self.id,
                         "secrets: reference cannot keep the key off disk (the client reads "
                         f"it from no variable or helper); the key from {ref.describe()} "
                         "will be written inline (mode 0600)")
        else:
            needs = " or ".join(f"${{{kind}:…}}" for kind in self.key_rule.reads)
            if self.key_rule.reads == ("env",):
                needs = f"${{env:{self.key_rule.only or 'NAME'}}}"
            env.warn_for(self.id,
                         f"secrets: reference needs gateway.key = {needs} "
                         f"({self.key_rule.why}), but it is {ref.describe()}; the key will "
                         f"be written inline into {env.shown(inline_into)} (mode 0600)")
        return None

    def key_variables(self, fleet: Any, env: ClientEnv) -> dict[str, bool]:
        """The environment variables the client reads the key from when it runs, as
        render writes its files: name → True when the files leave the key to that
        variable (it must hold the key wherever the client runs), False when the files
        hold the key but the variable, when set, wins over it (gptme's and Vibe's
        ``api_key_env`` in inline mode). ``taosync env --with-key`` exports each; a
        stale one is named (taosync.clients.variables)."""
        from taosync.fleet.secrets import parse_reference

        ref = parse_reference(fleet.gateway.key)
        following = self.reference(fleet) and self.follows(ref)
        out = {self.key_var_name(fleet, b): following for b in self.bindings
               if b.role == "key_var"}
        if following and ref.kind == "env" and not out:
            out[self.key_rule.fallback or ref.arg] = True
        if self.key_rule.first:
            out.setdefault(self.key_rule.first, False)
        return out

    def follows(self, ref: Any) -> bool:
        """Whether the client reads the key from reference ``ref`` by itself."""
        only = self.key_rule.only
        return ref.kind in self.key_rule.reads and not (only and ref.arg != only)

    def warn_headers(self, fleet: Any, env: ClientEnv) -> None:
        """A client that cannot send ``gateway.headers`` says so, once."""
        if not self.sends_headers and fleet.gateway.headers:
            env.warn_for(self.id, "no setting for extra request headers: gateway.headers "
                         f"({', '.join(fleet.gateway.headers)}) will not be sent")

    def mcp_values(self, fleet: Any, key: Any, env: ClientEnv, path: Path) -> tuple[dict, bool]:
        """The owned values of every MCP server, and whether they hold the gateway key."""
        shape, cfg = self.mcp, self.cfg(fleet)
        if shape is None or not (cfg.mcp and fleet.mcp_servers):
            return {}, False
        from taosync.fleet.logic import inline_mcp_secrets

        reference = self.reference(fleet)
        values: dict = dict(shape.switch)
        holds_key = False
        taken: dict[str, str] = {}
        for name, server in fleet.mcp_servers_expanded(key).items():
            if shape.no_remote and server.kind != "stdio":
                env.warnings.append(f"{self.id}: MCP server {name!r} is remote ({server.transport}), "
                                    f"which {self.title} does not take from its file "
                                    f"({shape.no_remote}); left it out")
                continue
            raw = server.env if server.kind == "stdio" else server.headers
            secrets = _written(raw, reference, lambda value: self.mcp_reference(value, env))
            fields = None
            if shape.by_fields is not None:
                fields = shape.by_fields(server.kind, raw, reference)
                at = (shape.env_field,) if server.kind == "stdio" else shape.headers_at
                secrets = _get(fields, at) or {}  # what stays inline

            def warn(text: str, name: str = name) -> None:
                env.warnings.append(f"{self.id}: MCP server {name!r} {text}")

            entry = mcp_entry(shape, server, secrets, warn, self.title, fields)
            entry = {shape.nest: entry} if shape.nest else entry
            if reference:
                warning = inline_mcp_secrets(self.id, name, secrets, path,
                                             shape.note or f"{self.title} does not expand "
                                             f"variables in MCP env or headers")
                if warning:
                    env.warnings.append(warning)
            written = self.mcp_name(name, taken, env)
            if written is None:
                continue
            at = shape.at(written)
            if shape.whole:
                values[at] = entry
            else:  # each field on its own; a nested headers map at its own path
                owned: dict[KeyPath, Any] = {(k,): v for k, v in entry.items()}
                if len(shape.headers_at) > 1 and shape.headers_at[:1] in owned:
                    del owned[shape.headers_at[:1]]
                    owned[shape.headers_at] = _get(entry, shape.headers_at)
                values.update({at + part: v for part, v in owned.items()})
            holds_key = holds_key or key.found_in(entry)
        return values, holds_key

    def mcp_name(self, name: str, taken: dict[str, str], env: ClientEnv) -> str | None:
        """Hook: the name server ``name`` is written under (``taken``: written name →
        fleet name so far), or None to leave it out (say why in ``env.warnings``)."""
        return name

    def mcp_reference(self, value: Any, env: ClientEnv) -> str | None:
        """How an MCP secret (an :class:`~taosync.fleet.logic.McpSecret`) is written so
        the client expands it itself, or None (inline): the shape's ``by_reference``
        (a hook for a spelling that needs the machine, such as an absolute path)."""
        spell = self.mcp.by_reference if self.mcp is not None else None
        return spell(value) if spell is not None else None

    # -- render -------------------------------------------------------------------------

    @staticmethod
    def chosen(cfg: Any, bind: Bind) -> tuple[bool, str | None]:
        """(whether slot ``bind`` is written, the fleet slot it uses: a route, a model id,
        or None for the default route)."""
        chosen = getattr(cfg, bind.option)
        if chosen is None and bind.default:
            chosen = getattr(cfg, bind.default)
        return not (chosen is None and bind.optional), chosen

    def slot_value(self, fleet: Any, bind: Bind) -> str | None:
        cfg = self.cfg(fleet)
        written, chosen = self.chosen(cfg, bind)
        prefix = bind.prefix.format_map({o.name: getattr(cfg, o.name, o.value)
                                         for o in self.opts()})
        return prefix + fleet.model_for(chosen) if written else None

    def opts(self) -> list[Opt]:
        """The :class:`Opt` parts of the table's key paths, each once."""
        parts = [o for b in self.bindings for o in map(_opt, b.path) if o is not None]
        return [p for i, p in enumerate(parts) if p not in parts[:i]]

    def slots(self, fleet: Any) -> list[tuple[Bind, str | None]]:
        """(binding, the fleet slot it uses) for every slot that is written."""
        cfg = self.cfg(fleet)
        out = []
        for bind in self.bindings:
            if bind.role == "slot" and not bind.note:
                written, chosen = self.chosen(cfg, bind)
                if written:
                    out.append((bind, chosen))
        return out

    def each_value(self, fleet: Any, key: Any, bind: Bind, model: str) -> Any:
        """What ``bind`` holds in the entry of ``model`` (an :class:`Each` row)."""
        if bind.role == "model":
            return model if bind.value is None else bind.value(fleet, self.cfg(fleet), model)
        if bind.role == "window":
            window = fleet.context_window(model)
            return None if not window else window if bind.value is None else bind.value
        return self.value(fleet, key, bind)

    def value(self, fleet: Any, key: Any, bind: Bind) -> Any:
        """What ``bind`` holds for this fleet (None: not written)."""
        if bind.role == "url":
            return gateway_url(fleet, self.root)
        if bind.role == "slot":
            return self.slot_value(fleet, bind)
        if bind.role == "key":
            return key
        if bind.role == "headers":
            if not fleet.gateway.headers:
                return None
            if bind.join:
                from taosync.fleet.logic import joined

                return joined(fleet.gateway_headers().items(), *bind.join)
            return fleet.gateway_headers()
        if bind.role == "computed":
            return bind.value(fleet, self.cfg(fleet))
        if bind.role == "fallbacks":
            return self.fallback_value(fleet, bind)
        return bind.value

    def fallback_value(self, fleet: Any, bind: Bind) -> Any:
        """What a ``fallbacks`` binding holds: the chain of its slot, spelt; None when
        there is none or the client's ``failover`` option is off."""
        cfg = self.cfg(fleet)
        written, chosen = self.chosen(cfg, bind)
        chain = fleet.fallbacks_for(chosen) if written and getattr(cfg, FAILOVER) else []
        if not chain:
            return None
        return bind.value(fleet, chain) if bind.value is not None else chain

    def path_for(self, fleet: Any, bind: Bind) -> KeyPath:
        """``bind.path`` with each :class:`Opt` part replaced by the option's value."""
        cfg = self.cfg(fleet)
        return _filled_path(bind.path, {o.name: getattr(cfg, o.name, o.value)
                                        for o in self.opts()})

    def each_model(self, fleet: Any, each: Each) -> list[str]:
        """The models an :class:`Each` row is written for, each once, in order."""
        cfg = self.cfg(fleet)
        models = list(each.models(fleet, cfg) if each.models is not None else fleet.models)
        if each.chosen:
            models += [fleet.model_for(chosen) for _, chosen in self.slots(fleet)]
        return list(dict.fromkeys(models))

    def paths(self, fleet: Any, bind: Bind) -> list[tuple[KeyPath, str]]:
        """(key path, model) of each place ``bind`` is written: its one path (model
        ``""``), or with an :class:`Each` part one per model, that part its id."""
        path, each = self.path_for(fleet, bind), _each(bind.path)
        if each is None:
            return [(path, "")]

        def filled(raw: Any, part: Any, id: str) -> Any:
            if isinstance(raw, Match) and isinstance(raw.value, Each):
                return Match(raw.field, id)
            return id if isinstance(raw, Each) else part

        return [(tuple(filled(raw, part, each.prefix + model)
                       for raw, part in zip(bind.path, path)), model)
                for model in self.each_model(fleet, each)]

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list[Patch]:
        values: dict[str, dict] = {name: {} for name in self.files}
        rows = {id(bind): self.paths(fleet, bind) for bind in self.bindings}  # asked twice
        for bind in self.bindings:
            if bind.role in ("key", "key_var", "key_env") or not bind.rendered:
                continue  # render_key's (in_table_order puts it back in its place)
            for at, model in rows[id(bind)]:
                value = self.each_value(fleet, key, bind, model) if model else \
                    self.value(fleet, key, bind)
                if value is not None:
                    values[bind.file][at] = value
        self.render_key(fleet, key, env, values)
        self.warn_headers(fleet, env)
        self.warn_overrides(fleet, env, values)
        holds: dict[str, bool] = {}
        mcp: dict = {}
        if self.mcp is not None:
            path = self.file(self.mcp_file, env)
            mcp, holds_key = self.mcp_values(fleet, key, env, path)
            if holds_key:
                self.warn_mcp_key(fleet, env, path)
            holds[self.mcp_file] = holds_key
        self.extra_render(fleet, key, env, values)
        # a new file: the table's keys in its order, then the hooks', then MCP entries
        values = {name: {**self.in_table_order(fleet, name, owned, rows),
                         **(mcp if name == self.mcp_file else {})}
                  for name, owned in values.items()}
        return [Patch(self.file(name, env), self.files[name].format, values[name], self.id,
                      secret=self.files[name].private or holds.get(name, False)
                      or _holds(key, values[name]),
                      **self.patch_fields(name, fleet, env))
                for name in self.files if values[name]]

    def warn_mcp_key(self, fleet: Any, env: ClientEnv, path: Path) -> None:
        """Under ``secrets: reference``, an MCP server that puts the gateway key into
        ``path`` while the client follows the reference for its own key is worth one
        warning (where the key went inline anyway, :meth:`key_reference` said so; a client
        with no key of its own, an app that takes only MCP servers, said nothing yet)."""
        from taosync.fleet.secrets import parse_reference

        keyless = not any(b.role in ("key", "key_var") for b in self.bindings)
        if self.reference(fleet) and (keyless or
                                      self.follows(parse_reference(fleet.gateway.key))):
            env.warn_for(self.id, "an MCP server uses ${gateway.key}, so the key will be "
                         "written into the MCP settings (mode 0600) even with secrets: "
                         "reference")

    def patch_fields(self, name: str, fleet: Any, env: ClientEnv) -> dict:
        """Hook: more fields of file ``name``'s :class:`Patch` — ``skeleton`` (set only
        where missing), ``volatile``, ``lead`` (see :class:`~taosync.engine.patch.Patch`)."""
        return {}

    def render_key(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """The key bindings: the key inline, or what the client follows by reference
        (a hook: the base writes the key inline, with the central warning)."""
        keys = [b for b in self.bindings if b.role == "key" and not b.note]
        ref = self.key_reference(fleet, env, self.file(keys[0].file, env)) if keys else None
        for bind in (b for b in self.bindings if not b.note):
            if bind.role == "key" or bind.role == "key_env" and ref is not None:
                value = key if ref is None else ref.arg if bind.role == "key_env" else \
                    self.key_rule.spell(ref, env)
                if value is not None:
                    self.put(fleet, bind, values, value)
            elif bind.inline and ref is not None or bind.reference and ref is None:
                for path, _ in self.paths(fleet, bind):  # a row of the other layout
                    values[bind.file].pop(path, None)
            elif bind.role == "key_var":
                var = self.key_var_name(fleet, bind)
                values[bind.file][self.path_for(fleet, bind)] = var
                if self.key_reference(fleet, env, self.file(bind.store, env)) is None:
                    values[bind.store][bind.under + (var,)] = key

    def key_var_name(self, fleet: Any, bind: Bind) -> str:
        """The variable a ``key_var`` binding names: the fleet's ``${env:NAME}``, else
        the binding's default."""
        from taosync.fleet.secrets import parse_reference

        ref = parse_reference(fleet.gateway.key)
        return ref.arg if ref.kind == "env" else bind.value

    def put(self, fleet: Any, bind: Bind, values: dict, value: Any) -> None:
        """``value`` at each of ``bind``'s key paths (:meth:`paths`)."""
        for path, _ in self.paths(fleet, bind):
            values[bind.file][path] = value

    def in_table_order(self, fleet: Any, name: str, owned: dict,
                       paths: dict[int, list] | None = None) -> dict:
        """A file's owned values with the table's first, in its order (a new file is
        written in that order; :class:`Each` rows model by model, after the others),
        then those the hooks added. ``paths``: each binding's :meth:`paths` by its id,
        when the caller has them already."""
        rows = [row for b in self.bindings if b.file == name
                for row in (paths[id(b)] if paths is not None else self.paths(fleet, b))]
        order = {model: i for i, model in enumerate(dict.fromkeys(m for _, m in rows))}
        rows.sort(key=lambda row: (row[1] != "", order[row[1]]))
        return {**{path: owned[path] for path, _ in rows if path in owned}, **owned}

    def warn_overrides(self, fleet: Any, env: ClientEnv, values: dict) -> None:
        """An environment variable the client reads before a key taosync writes is
        named when it is set here."""
        for bind in self.bindings:
            if bind.role == "key" and bind.env and bind.env == self.key_rule.first:
                continue  # named only when it is not the fleet's key (clients.variables)
            if bind.env and self.path_for(fleet, bind) in values[bind.file] and \
                    env.getenv(bind.env):
                what = "key" if bind.role == "key" else "value"
                env.warnings.append(
                    f"{self.id}: {bind.env} is set in this environment and overrides the "
                    f"{what} taosync writes to {env.shown(self.file(bind.file, env))}"
                    + ("; unset it to use the gateway key" if bind.role == "key" else ""))

    def extra_render(self, fleet: Any, key: Any, env: ClientEnv, values: dict) -> None:
        """Hook: what the table cannot say (``values``: file name → key path → value)."""

    # -- probes -------------------------------------------------------------------------

    def headers_sent(self, fleet: Any, read: Mapping[str, str] | None = None) -> dict:
        """The headers the client sends besides auth: its own, and the gateway's (or
        those ``read`` from its files) when it can send extra ones."""
        extra = {} if not self.sends_headers else \
            (dict(read) if read is not None else fleet.gateway_headers())
        return {**extra, **self.sends}

    def probe_path(self, model: str) -> str:
        """Hook: what the client appends to its base URL for ``model`` (Gemini puts the
        model in the path)."""
        return self.path

    def probe_auth(self, fleet: Any, env: ClientEnv) -> str:
        """Hook: how the client sends the key it is given (Claude Code's apiKeyHelper
        output goes as both Bearer and x-api-key)."""
        return self.auth

    def probed_slots(self, fleet: Any) -> list[tuple[str, str | None]]:
        """(the slot's name in an observation, the fleet slot) for every model the
        client is given (a hook: Codex adds its profiles)."""
        return [(bind.option, chosen) for bind, chosen in self.slots(fleet)]

    def probes(self, fleet: Any, key: Any, env: ClientEnv) -> list[ProbeSpec]:
        chosen = [slot for _, slot in self.probed_slots(fleet)]
        auth, base_url = self.probe_auth(fleet, env), gateway_url(fleet, self.root)
        return [spec for pair in fleet.distinct_models(chosen)
                for spec in probe_specs(fleet, self.id, [pair], protocol=self.protocol,
                                        base_url=base_url, path=self.probe_path(pair[1]),
                                        auth=auth, headers=self.headers_sent(fleet))]

    # -- import ---------------------------------------------------------------------------

    def observe(self, env: ClientEnv) -> Observation:
        obs = Observation(self.id, protocol=self.root)
        docs = {name: read_plain(self.file(name, env), f.format, obs)
                for name, f in self.files.items()}
        for name, f in self.files.items():
            if f.json_object and docs[name] is not None and not isinstance(docs[name], dict):
                obs.problems.append(f"{self.file(name, env)}: the top level is not a JSON object")
        read = self.read_opts(docs)
        for name in self.files:
            self.read_rows(name, docs[name], read, obs, env)
        if self.mcp is not None:
            path = self.file(self.mcp_file, env)
            read_mcp(self.mcp, docs[self.mcp_file], path, obs)
        self.extra_observe(env, docs, obs)
        return obs

    def read_rows(self, name: str, doc: Any, read: Mapping[str, str], obs: Observation,
                  env: ClientEnv, rows: tuple[Bind, ...] = ()) -> None:
        """The table's rows of file ``name`` (and ``rows``) read back from ``doc``, each
        :class:`Opt` part the value ``read`` gives it."""
        for bind in (b for b in (*self.bindings, *rows) if b.file == name):
            parts: Any = _filled_path(bind.path, read)
            if not isinstance(doc, (dict, list)) or None in parts:
                continue
            found, prefix = _get(doc, parts), _filled(bind.prefix, read)
            if found is None or prefix is None:
                continue
            self.read_binding(bind, Seen(found, self.file(name, env), keypath_str(parts)),
                              obs, prefix)
            if bind.role == "url":  # a gateway's entry: the options naming it are imported
                obs.settings.update({o.name: read[o.name] for o in map(_opt, bind.path)
                                     if o is not None and self.takes(o.name, read[o.name])})

    def read_opts(self, docs: dict) -> dict[str, str]:
        """Each :class:`Opt`'s value as the files say (see :class:`Opt`); an Opt read
        through another (Vibe's provider, named by the ``[[models]]`` entry that
        ``active_model`` names) once that one is read."""
        out: dict[str, str] = {}
        pending = list(dict.fromkeys((b.file, o) for b in self.bindings
                                     for o in map(_opt, b.path) if o))
        while pending:
            for file, opt in pending:
                path = _filled_path(opt.read, out)
                if None in path:
                    continue
                pending.remove((file, opt))
                text = _get(docs[opt.file or file], path)
                if isinstance(text, str) and opt.sep in text:
                    out.setdefault(opt.name, text.partition(opt.sep)[0] if opt.sep else text)
                break
            else:
                break  # each one left is read through one the files do not name
        return out

    def takes(self, name: str, value: str) -> bool:
        """Whether option ``name`` takes ``value`` (its pattern, not reserved)."""
        import re

        option = next((o for o in self.options if o.name == name), None)
        return option is not None and value not in option.reserved and \
            (option.pattern is None or re.fullmatch(option.pattern, value) is not None)

    def read_binding(self, bind: Bind, seen: Seen, obs: Observation,
                     prefix: str | None = None) -> None:
        """One value read back into the observation, by its role (``prefix``: a slot's,
        its :class:`Opt` values filled in)."""
        from taosync.fleet.secrets import Secret

        value = seen.value
        if bind.note:
            obs.notes.append(f"{seen.file}: {seen.key} {bind.note}")
        if bind.selects and value != bind.value:  # another provider than the gateway
            obs.provider = Seen(bind.selects.format(repr(value)), seen.file, seen.key)
        if bind.role == "headers":
            if bind.join and isinstance(value, str):
                value = split_headers(value, bind.join)
            if isinstance(value, dict) and value:
                obs.headers.append(Seen({str(k): str(v) for k, v in value.items()},
                                        seen.file, seen.key))
            return
        if bind.role == "fallbacks":
            chain = [m.strip() for m in value if isinstance(m, str) and m.strip()] \
                if isinstance(value, list) else []
            if chain and bind.value is None:  # a spelt chain is the client's to read
                obs.fallbacks[bind.option] = Seen(chain, seen.file, seen.key)
            return
        if not (isinstance(value, str) and value.strip()):
            return
        value = value.strip()
        if bind.role == "url":
            obs.urls.append(Seen(value, seen.file, seen.key))
        elif bind.role == "key":
            form = self.key_rule.parse(value)
            if form is None:
                obs.keys.append(Seen(Secret(value, f"{seen.file} {seen.key}"), seen.file,
                                     seen.key))
                return
            obs.settings["secrets"] = "reference"
            if form[0] == "env":
                obs.key_envs.append(Seen(form[1], seen.file, seen.key))
            else:
                obs.key_helper = Seen(f"cat {shlex.quote(form[1])}", seen.file, seen.key)
        elif bind.role in ("key_var", "key_env"):
            obs.key_envs.append(Seen(value, seen.file, seen.key))
            if bind.role == "key_env":
                obs.settings["secrets"] = "reference"
        elif bind.role == "slot":
            prefix = bind.prefix if prefix is None else prefix
            if not value.startswith(prefix):
                what = f"{prefix}<id> gateway model"
                if bind.option == "model":
                    obs.provider = Seen(f"model {value!r} (not an {what})", seen.file,
                                        seen.key)
                else:
                    obs.notes.append(f"{seen.file}: {seen.key} {value!r} is not an {what}; "
                                     f"not imported")
                return
            obs.slots.setdefault(bind.option, []).append(
                Seen(value[len(prefix):], seen.file, seen.key))

    def read_stored_key(self, var: str, docs: dict, env: ClientEnv, obs: Observation,
                        stores: tuple[str, ...] = ()) -> None:
        """The value of the variable a ``key_var`` names, from the first of its store
        files (or ``stores``) that sets it; none: the key comes from the environment
        alone (``secrets: reference``)."""
        from taosync.fleet.secrets import Secret

        bind = next(b for b in self.bindings if b.role == "key_var")
        at = bind.under + (var,)
        value, path = None, self.file(bind.store, env)
        for name in stores or (bind.store,):
            held = _get(docs[name], bind.under)
            if isinstance(held, dict) and var in held:
                value, path = held[var], self.file(name, env)
                break
        if isinstance(value, str) and value.strip():
            obs.keys.append(Seen(Secret(value.strip(), f"{path} {keypath_str(at)}"), path,
                                 keypath_str(at)))
        else:
            obs.settings["secrets"] = "reference"

    def extra_observe(self, env: ClientEnv, docs: dict, obs: Observation) -> None:
        """Hook: what the table cannot read back (``docs``: file name → plain data)."""

    # -- verify ---------------------------------------------------------------------------

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk:
        """The probes the client's files make it send: the URL, the key and each model
        slot as read back by :meth:`observe`."""
        primary = self.file(self.primary, env)
        out, obs = start_on_disk(self, fleet, key, env, primary)
        if obs is None:
            return out
        self.at_run_time(obs, env)
        where = shown(primary, env)
        problem = self.unprobed(obs, env, where)
        if problem:
            out.problems.append(problem)
            return out
        key_seen, secret, problem = self.read_key(obs, env, where)
        if problem or key_seen is None:
            out.problems.append(problem or f"{where} holds no key")
            return out
        read_headers = obs.headers[0].value if obs.headers else {}
        auth = self.disk_auth(key_seen)
        for name, chosen in self.probed_slots(fleet):
            found = obs.slots.get(name)
            if not found:
                continue
            out.probes += probe_specs(
                fleet, self.id, [(chosen, found[0].value)], protocol=self.protocol,
                base_url=obs.urls[0].value, path=self.probe_path(found[0].value), auth=auth,
                headers=self.headers_sent(fleet, read_headers), secret=secret,
                origins=(out.origin("url", obs.urls[0], env), out.origin("key", key_seen, env),
                         out.origin("model", found[0], env)))
        if not out.probes and not out.problems:
            names = self.places.get("slot") or \
                ", ".join(keypath_str(b.path) for b, _ in self.slots(fleet))
            out.problems.append(f"{where} names no model ({names})")
        return out

    def disk_auth(self, key_seen: Seen | None) -> str:
        """Hook: how the client sends the key it read from ``key_seen``."""
        return self.auth

    def no_url(self, where: str, env: ClientEnv) -> str:
        """The problem when the files set no base URL (names the url binding's file and
        key, or its ``places`` entry)."""
        url_bind = next(b for b in self.bindings if b.role == "url")
        return (f"{shown(self.file(url_bind.file, env), env)} sets no "
                f"{self.places.get('url') or keypath_str(url_bind.path)}")

    def unprobed(self, obs: Observation, env: ClientEnv, where: str) -> str | None:
        """Why the files send no request at all, looked at before the key (a hook: the
        base wants what :attr:`needs` names, then the URL, :meth:`no_url`)."""
        for field, why in self.needs:
            found = getattr(obs, field)
            if not (any(found.values()) if isinstance(found, dict) else found):
                return f"{where}: {why}"
        return None if obs.urls else self.no_url(where, env)

    def at_run_time(self, obs: Observation, env: ClientEnv) -> None:
        """The observation as the client resolves it when it runs: a URL or model an
        environment variable overrides (``Bind.env``) is that variable's value."""
        for bind in self.bindings:
            value = env.getenv(bind.env) if bind.env and bind.role != "key" else None
            if not value:
                continue
            seen = Seen(value, self.file(bind.file, env), f"{bind.env} (from the environment)")
            if bind.role == "url":
                obs.urls = [seen]
            elif bind.role == "slot":
                obs.slots[bind.option] = [seen]

    def overriding_key(self, env: ClientEnv) -> tuple[Any, str | None] | None:
        """(the key, why not) from the environment variable the client reads before its
        key binding (``Bind.env``), when that is set; else None."""
        bind = next((b for b in self.bindings if b.role == "key" and b.env), None)
        if bind is None or not env.getenv(bind.env):
            return None
        held = f"{shown(self.file(bind.file, env), env)} {keypath_str(bind.path)}"
        return disk_key("env", bind.env, f"{bind.env} (which overrides {held})", env)

    def read_key(self, obs: Observation, env: ClientEnv,
                 where: str) -> tuple[Seen | None, Any, str | None]:
        """(where the key was found, the key, why not): a variable that overrides the
        file's key, the file's own key, then a variable it names (the environment's value
        first), then a helper command."""
        overriding = self.overriding_key(env)
        if overriding is not None:
            bind = next(b for b in self.bindings if b.role == "key" and b.env)
            return (Seen(None, self.file(bind.file, env), f"{bind.env} (from the environment)"),
                    *overriding)
        if obs.keys and not obs.key_envs:
            return (obs.keys[0], *stored_key(obs.keys[0], env, where))
        if obs.key_envs:
            var = obs.key_envs[0]
            if var.value == self.key_rule.fallback:
                secret, problem = disk_key("env", var.value, f"{where} has no {var.key}, so "
                                           f"{self.title} reads {var.value}", env)
                return var, secret, problem
            found, secret, problem = named_key(var, obs.keys, where, env)
            if found is None:
                store = next((shown(self.file(b.store, env), env) for b in self.bindings
                              if b.role == "key_var"), "the client's files")
                return None, None, (f"{where} {var.key}: {var.value} is set neither in the "
                                    f"environment nor in {store}")
            return found, secret, problem
        if obs.key_helper is not None:
            secret, problem = disk_key("shell", obs.key_helper.value,
                                       f"{where} {obs.key_helper.key}", env)
            return obs.key_helper, secret, problem
        key_bind = next((b for b in self.bindings if b.role in ("key", "key_var")), None)
        held = self.places.get("key") or (keypath_str(key_bind.path) if key_bind else
                                          "the key")
        return None, None, f"{where} holds no key ({held})"

    # -- rollback and recovery ----------------------------------------------------------

    def locations(self, env: ClientEnv) -> tuple[list[Path], list[Path]]:
        """(directories, single files) the client's files may be in: the directory of
        each file, unless the file sits right in the home (then the file itself)."""
        dirs: list[Path] = []
        files: list[Path] = []
        for name in self.files:
            path = self.file(name, env)
            if path.parent == env.home:
                files.append(path)
            elif path.parent not in dirs:
                dirs.append(path.parent)
        return dirs, files


# -- apps that take only MCP servers ------------------------------------------------------

#: an ``${env:NAME}`` MCP secret as the editors of VS Code's lineage expand it themselves
#: (Cursor, Windsurf, VS Code: ``${env:NAME}``, kept as written)
env_colon = env_as("${{env:{}}}")


@dataclass(frozen=True)
class McpOnly(Declared):
    """An app that takes no custom gateway, only the fleet's MCP servers from one file
    (Cursor, Windsurf, VS Code, Claude Desktop, Zed): no bindings, no key, no probes.

    Its fleet entry has no slot (the schema marks it ``x-mcp-only``, so a ``model:``
    there is a located error that says why); ``verify`` compares its MCP entries with
    fleet.yaml as it does every client's, and says it has nothing to send. What a module
    declares is its facts: where the file is on each OS (``files``), its syntax, its
    :class:`McpShape`, and the docs the shape was taken from (:attr:`sources`)."""

    primary: str = "mcp"
    bindings: tuple[Bind, ...] = ()
    mcp_file: str = "mcp"
    #: (URL, what it says) for each document the module's facts come from
    sources: tuple[tuple[str, str], ...] = ()
    #: the file and OS notes README's owned-files row gives
    where: str = ""
    #: README's "MCP secrets" cell: how ``secrets: reference`` writes them
    mcp_readme: str = ""

    @classmethod
    def app(cls, id: str, title: str, path: Callable[[ClientEnv], Path], format: str,
            shape: McpShape, **facts: Any) -> "McpOnly":
        """One app: its file (``path`` on this OS, in ``format``), its shape, and the
        facts README gives (``where``, ``mcp_readme``, ``sources``)."""
        return cls(id, title, files={"mcp": File(path, format, json_object=True)},
                   mcp=shape, **facts)

    def constants(self) -> tuple:
        """What a client module declares (plugin.py): ID, TITLE, SUMMARY, BINARY, TARGETS,
        OWNED_FILES, OPTIONS, LOCATION_VARS, KEY_REFERENCE, MCP_REFERENCE, INSTALL,
        GATEWAY, SOURCES."""
        servers = keypath_str(self.mcp.container if self.mcp else ()) + ".<name>"
        return (self.id, self.title,
                f"{self.title} (MCP servers only: it takes no custom gateway).", "",
                [f"{self.where.replace('`', '')}: {servers}"],
                ((f"{self.title} (MCP only, from its docs)", self.where, f"`{servers}`"),),
                (), (), "no gateway key: it takes only MCP servers.", self.mcp_readme,
                None, False, self.sources)

    def functions(self) -> tuple:
        """render, probes, on_disk, observe, locations: what a client module exports."""
        return self.render, self.probes, self.on_disk, self.observe, self.locations

    def observe(self, env: ClientEnv) -> Observation:
        obs = super().observe(env)
        obs.mcp_only = True
        if "${env:" in repr([seen.value for seen in obs.mcp_servers.values()]):
            obs.settings["secrets"] = "reference"  # what wrote them so
        return obs

    def on_disk(self, fleet: Any, key: Any, env: ClientEnv) -> OnDisk:
        """Its MCP entries compared with fleet.yaml (drift; a missing file it should
        hold is a problem), and no probe: the app sends nothing to the gateway."""
        import dataclasses

        quiet = dataclasses.replace(env, warnings=[], consulted={}, probed={})
        if not self.render(fleet, key, quiet):
            return OnDisk(self.id)
        out, _ = start_on_disk(self, fleet, key, env, self.file(self.primary, env))
        return out


# -- a client whose wire protocol is its ``protocol`` option (Droid, Pi, Hermes) ----------

@dataclass(frozen=True)
class Wire:
    """One protocol as a client speaks it: the client's own word for it (Droid's
    ``provider``, Pi's ``api``, Hermes' ``api_mode``), the gateway URL it takes (``openai``:
    the ``/v1`` URL; ``anthropic``: the root), the path it appends, how it sends the key,
    and any other :class:`Declared` field that changes with it (Hermes' ``sends``)."""

    word: str
    root: str
    path: str
    auth: str
    also: Mapping[str, Any] = field(default_factory=dict)


def protocol_option(title: str, wires: Mapping[str, Wire], where: str) -> Option:
    """The ``protocol`` option of a :class:`Wired` client: one name, and taosync's protocol
    names, for every client that lets the fleet choose (the first is the default)."""
    from typing import Literal

    names = tuple(wires)
    spelled = ", ".join(f"{name} (`{wire.word}`)" for name, wire in wires.items())
    return Option("protocol", Literal.__getitem__(names), names[0],
                  f"The protocol {title} speaks to the gateway ({where}): {spelled}; "
                  f"anthropic-messages takes the gateway root.")


@dataclass(frozen=True)
class Wired(Declared):
    """A client that speaks the protocol its ``protocol`` option names (``wires``:
    taosync's protocol → :class:`Wire`, the default first): render and probes speak the
    option's; verify speaks the one the files name, which import reads back as the
    option (:meth:`protocol_of` the client's word)."""

    wires: Mapping[str, Wire] = field(default_factory=dict)

    def speaking(self, protocol: str | None) -> Any:
        """This declaration as it sends requests for ``protocol`` (unknown: the default)."""
        name = protocol if protocol is not None and protocol in self.wires \
            else next(iter(self.wires))
        wire = self.wires[name]
        return replace(self, protocol=name, root=wire.root, path=wire.path, auth=wire.auth,
                       **wire.also)

    def wire(self, fleet: Any) -> Wire:
        """The wire the fleet's ``protocol`` option picks."""
        return self.wires[self.cfg(fleet).protocol]

    def protocol_of(self, word: Any) -> str | None:
        """taosync's protocol for the client's ``word`` read from a file (None: another)."""
        return next((name for name, wire in self.wires.items() if wire.word == word), None)

    def render(self, fleet: Any, key: Any, env: ClientEnv) -> list[Patch]:
        return Declared.render(self.speaking(self.cfg(fleet).protocol), fleet, key, env)

    def probes(self, fleet: Any, key: Any, env: ClientEnv) -> list[ProbeSpec]:
        return Declared.probes(self.speaking(self.cfg(fleet).protocol), fleet, key, env)

    def on_disk_as_filed(self, obs: Observation, fleet: Any, key: Any,
                         env: ClientEnv) -> OnDisk:
        """:meth:`Declared.on_disk` speaking the protocol the files name (else the
        option's)."""
        return Declared.on_disk(self.speaking(obs.settings.get("protocol")
                                              or self.cfg(fleet).protocol), fleet, key, env)
