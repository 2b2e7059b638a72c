"""What a fleet *means* for the clients: slots → models, URLs, references, MCP expansion.

Shared by the pydantic model (:mod:`taosync.fleet.model`, the definition and the schema's
source) and the run-time view (:mod:`taosync.fleet.view`), so both answer alike.
Standard library only.
"""

from __future__ import annotations

import functools
import keyword
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from taosync.fleet.secrets import (REFERENCE_HEAD, Reference, Secret, parse_reference,
                                   reference_of)

if TYPE_CHECKING:
    from typing import Protocol

    # read-only (properties): the model's fields may be narrower (a Literal for a str)

    class GatewayFields(Protocol):
        """``gateway:`` as the answers read it."""

        @property
        def base_url(self) -> str: ...
        @property
        def anthropic_base_url(self) -> str | None: ...
        @property
        def openai_base_url(self) -> str | None: ...
        @property
        def gemini_base_url(self) -> str | None: ...
        @property
        def headers(self) -> Mapping[str, str]: ...

    class ModelFields(Protocol):
        """One catalogue entry."""

        @property
        def context_window(self) -> int | None: ...
        @property
        def cost(self) -> float: ...

    class RouteFields(Protocol):
        """A route that chooses among candidates."""

        @property
        def candidates(self) -> list[str]: ...
        @property
        def policy(self) -> str: ...
        @property
        def weight(self) -> float | None: ...
        @property
        def dwell(self) -> float | str: ...

    class RoutingFields(Protocol):
        @property
        def window(self) -> int: ...
        @property
        def max_age(self) -> str: ...

    class McpServerFields(Protocol):
        """An MCP server: its data, and the same kind of server holding other data."""

        def plain(self) -> dict: ...

        def replaced(self, data: dict) -> Any: ...

#: ``${gateway.base_url}``, ``${gateway.key}``, ``${routes.fast}`` … inside MCP values.
#: Anything else in ``${…}`` (``${HOME}``, ``${VAR:-x}``) is written as it is; clients.md records
#: Gemini CLI and Qwen Code expanding it in settings.json, Claude Code only in a project's
#: ``.mcp.json``, the others not at all (so in a secret's value it is an error: fleet/checks.py).
FLEET_REFERENCE = re.compile(r"\$\{((?:gateways?|routes|models)\.[^}]*|default_route)\}")
#: the fields of a gateway an MCP value may name (``${gateway.FIELD}``, ``${gateways.NAME.FIELD}``)
GATEWAY_REFERENCE_FIELDS = ("base_url", "key", "anthropic_base_url", "openai_base_url")

#: a key reference (``${env:…}``, ``${file:…}``, ``${cmd:…}``, ``${shell:…}``) inside a value
SECRET_REFERENCE = re.compile(r"\$\{" + REFERENCE_HEAD + r"(?P<arg>[^}]*)\}")
#: where one starts (closed or not)
SECRET_REFERENCE_START = re.compile(r"\$\{" + REFERENCE_HEAD)
#: the MCP server fields whose values may hold a key reference (they are secrets)
MCP_SECRET_FIELDS = ("env", "headers")



#: ``x-slot`` values in the schema: one route-or-model, a list of them, a mapping whose values are them
SLOT, SLOT_LIST, SLOT_MAP = "one", "list", "map"


def attr_name(client_id: str) -> str:
    """The Python attribute a client id is read as (``claude-code`` → ``claude_code``,
    ``continue`` → ``continue_``)."""
    name = client_id.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


@functools.lru_cache(maxsize=1)
def client_attrs() -> dict[str, str]:
    """Client id as spelled in fleet.yaml → attribute on ``fleet.clients``."""
    from taosync.fleet.schema import client_entries

    return {client_id: attr_name(client_id) for client_id in client_entries()}


def __getattr__(name: str):
    # CLIENT_ATTRS is read from the schema on first use, not at import
    if name == "CLIENT_ATTRS":
        return client_attrs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def expand_all(value: Any, fn: Callable[[str], Any]) -> Any:
    """Apply ``fn`` to every string inside a plain value."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [expand_all(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: expand_all(v, fn) for k, v in value.items()}
    return value


class McpSecret(Secret):
    """A resolved key reference in an MCP ``env`` or ``headers`` value, or in a
    ``gateway.headers`` value.

    A :class:`Secret` (redacted, revealed only on write, 0600, never in the state) that
    remembers what it was written as — ``prefix`` + the reference + ``suffix`` — so a
    client that can read the value itself (Codex ``env_vars``) gets the reference instead.
    """

    __slots__ = ("text", "prefix", "ref", "suffix")

    def __init__(self, text: str, prefix: str, ref: Reference, suffix: str, resolved: Secret):
        super().__init__(prefix + resolved.reveal() + suffix, text)
        self.text, self.prefix, self.ref, self.suffix = text, prefix, ref, suffix

    @property
    def env_name(self) -> str | None:
        """The variable the value comes from, for a whole-value ``${env:NAME}``."""
        whole = not self.prefix and not self.suffix
        return self.ref.arg if whole and self.ref.kind == "env" else None


class Joined(Secret):
    """Text built from several values, some of them secrets (Claude Code's
    ``ANTHROPIC_CUSTOM_HEADERS``: every gateway header on one line each): a secret as a
    whole, which the render cache stores as its parts (each secret as its reference)."""

    __slots__ = ("parts",)

    def __init__(self, parts: Iterable[Any]) -> None:
        self.parts = tuple(parts)
        super().__init__("".join(p.reveal() if isinstance(p, Secret) else p
                                 for p in self.parts), "joined")


def secret_parts(value: Any) -> list[Secret]:
    """Each :class:`Secret` inside ``value`` (rendered patch values), a :class:`Joined`
    as its secret parts: what a redactor must hide, so the text around them (a header's
    name, a URL's host) stays readable."""
    out: list[Secret] = []
    _walk(value, out, None)
    return out


def joined_texts(value: Any) -> list[str]:
    """The whole text of each :class:`Joined` inside ``value``."""
    out: list[str] = []
    _walk(value, None, out)
    return out


def secrets_and_texts(value: Any) -> tuple[list[Secret], list[str]]:
    """:func:`secret_parts` and :func:`joined_texts` of ``value``, in one walk."""
    secrets: list[Secret] = []
    texts: list[str] = []
    _walk(value, secrets, texts)
    return secrets, texts


def _walk(value: Any, secrets: list | None, texts: list | None) -> None:
    """Into ``secrets`` each secret part, into ``texts`` each Joined's whole text (either
    may be None: not asked): one call per container, none per plain value (every run
    walks every rendered value)."""
    if isinstance(value, dict):
        value = value.values()
    elif isinstance(value, Joined):
        if texts is not None:
            texts.append(value.reveal())
        if secrets is None:
            return
        value, texts = value.parts, None  # a Joined's text is its own, not its parts'
    elif isinstance(value, Secret):
        if secrets is not None:
            secrets.append(value)
        return
    elif not isinstance(value, (list, tuple)):
        return
    for v in value:
        if isinstance(v, (dict, list, tuple, Secret)):
            _walk(v, secrets, texts)


def joined(pairs: Iterable[tuple[str, Any]], between: str, sep: str) -> Joined:
    """``name: value`` lines (or ``, ``-separated) from (name, value) pairs, as a secret."""
    parts: list = []
    for i, (name, value) in enumerate(pairs):
        parts += [sep] if i else []
        parts += [f"{name}{between}", value]
    return Joined(parts)


#: ``scheme://USERINFO@host``: a user name and password written into a URL
_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#@]*)@")


def url_userinfo(url: object) -> str | None:
    """The ``user:password`` of ``url`` (what sits before ``@`` in its authority), or None."""
    if not isinstance(url, str):
        return None
    match = _USERINFO.match(url)
    return match.group(1) if match and match.group(1) else None


def hide_credentials(value: Any, userinfos: Iterable[str]) -> Any:
    """``value`` with every string holding one of ``userinfos`` (as ``//USERINFO@``) made
    a :class:`Joined` secret whose only secret part is the userinfo: a client file that
    receives a URL's password is written 0600, its owned key is kept in the state as a
    keyed hash, and every output hides the password but shows the rest of the URL."""
    if not userinfos:
        return value
    if isinstance(value, str):
        for userinfo in userinfos:
            before, found, after = value.partition(f"//{userinfo}@")
            if found:  # only the userinfo is hidden where the URL is shown
                return Joined([before + "//", Secret(userinfo, "URL userinfo"), "@" + after])
        return value
    if isinstance(value, Secret):
        return value
    if isinstance(value, list):
        return [hide_credentials(v, userinfos) for v in value]
    if isinstance(value, tuple):
        return tuple(hide_credentials(v, userinfos) for v in value)
    if isinstance(value, dict):
        return {k: hide_credentials(v, userinfos) for k, v in value.items()}
    return value


def split_secret_reference(text: str) -> tuple[str, Reference, str] | None:
    """(prefix, reference, suffix) of a value holding one key reference, None for none.

    A whole value is read as ``gateway.key`` is (a whole ``${cmd:…}`` may hold ``}``);
    inside a longer value (``Bearer ${env:TOKEN}``) the reference ends at the first ``}``.
    Raises ValueError, with the message to show, for two references or one mixed with
    fleet references.
    """
    if "${" not in text:
        return None
    whole = parse_reference(text)
    if whole.kind in ("cmd", "shell") or (whole.kind != "literal" and "}" not in whole.arg):
        return "", whole, ""
    found = list(SECRET_REFERENCE.finditer(text))
    if not found:
        if SECRET_REFERENCE_START.search(text):
            raise ValueError("a key reference that is not closed; write ${env:NAME}, "
                             "${file:PATH}, ${cmd:COMMAND} or ${shell:COMMAND}")
        return None
    if len(found) > 1:
        raise ValueError(f"holds {len(found)} key references; a value may hold one (put "
                         f"the whole value in one secret, e.g. ${{file:PATH}})")
    if FLEET_REFERENCE.search(text):
        raise ValueError("mixes a key reference with a fleet reference such as "
                         "${gateway.key}; give each its own value")
    m = found[0]
    return text[:m.start()], reference_of(m), text[m.end():]


def prefetch_stores(refs: Iterable[Reference], texts: Iterable[str], environ: Any,
                    timeout: float) -> None:
    """Every 1Password reference among ``refs`` and in ``texts`` (MCP and header values:
    ``Bearer ${op://…}``) read in one call before any is resolved
    (:func:`taosync.fleet.stores.prefetch`): what the full load and the render cache both do."""
    texts = [t for t in texts if "${op://" in t]
    wanted = [r for r in refs if r.kind == "op"]
    for text in texts:
        try:
            parts = split_secret_reference(text)
        except ValueError:
            continue  # the load reports it where it stands
        if parts is not None:
            wanted.append(parts[1])
    if wanted:
        from taosync.fleet import stores

        stores.prefetch(wanted, environ, timeout)


def mcp_secret_values(servers: Any) -> Iterator[
        tuple[tuple, str, tuple[str, Reference, str] | str]]:
    """``(path, text, parts)`` for every MCP value holding a key reference, where
    ``parts`` is :func:`split_secret_reference`'s answer, or a str: why the value
    cannot hold one (two references in it, a reference outside ``env``/``headers``)."""
    if not isinstance(servers, dict):
        return
    for name, server in servers.items():
        if not isinstance(server, dict):
            continue
        for field, value in server.items():
            path = ("mcp_servers", name, field)
            if field in MCP_SECRET_FIELDS and isinstance(value, dict):
                for var, text in value.items():
                    if not isinstance(text, str):
                        continue
                    try:
                        parts = split_secret_reference(text)
                    except ValueError as exc:
                        yield path + (var,), text, str(exc)
                        continue
                    if parts is not None:
                        yield path + (var,), text, parts
                continue
            items = (value if isinstance(value, list) else [value])
            for i, text in enumerate(items):
                if isinstance(text, str) and SECRET_REFERENCE_START.search(text):
                    where = path + (i,) if isinstance(value, list) else path
                    yield where, text, (
                        f"a key reference works only in env and headers values (taosync "
                        f"treats those as secrets); move it to "
                        f"{'env' if 'command' in server else 'headers'}")


def inline_mcp_secrets(client: str, server: str, values: dict, path: object,
                       why: str) -> str | None:
    """The warning for ``secrets: reference`` when a client gets MCP secrets inline
    (``values``: the env or header map as rendered), or None when it holds none."""
    names = [name for name, value in values.items() if isinstance(value, McpSecret)]
    if not names:
        return None
    return (f"{client}: secrets: reference cannot keep the MCP secret "
            f"{', '.join(names)} of server {server!r} off disk ({why}); wrote "
            f"{'it' if len(names) == 1 else 'them'} inline into {path} (mode 0600)")


class RunTime:
    """What a fleet is given at run time, never part of fleet.yaml or the schema: the
    resolved MCP secrets and ``gateway.headers`` (the loader resolves them once, with the
    key, so every client renders the same) and each choosing route's model (the pipeline
    gives it from the verify history before any client renders)."""

    __slots__ = ("mcp_secrets", "gateway_secrets", "route_choices", "own_gateway",
                 "gateway_keys", "gateway_secrets_by", "gateway_table", "views",
                 "default_key")

    def __init__(self) -> None:
        #: the fleet has a ``gateway:`` of its own (the gateway named ``default``)
        self.own_gateway = True
        #: gateway name → its resolved key, for each gateway but the default one (whose
        #: key the pipeline hands every render); absent: not resolved
        self.gateway_keys: dict[str, Secret] = {}
        #: gateway name → its header values as secrets (None: not given by the loader)
        self.gateway_secrets_by: dict[str, dict[str, Secret]] | None = None
        #: gateway name → its fields (:meth:`FleetLogic.gateways_all`), once asked
        self.gateway_table: dict | None = None
        #: gateway name → the fleet as a client on that gateway sees it
        self.views: dict[str, Any] = {}
        #: the default gateway's resolved key (None: not resolved, or not given)
        self.default_key: Secret | None = None
        #: MCP env/header value text → its resolved secret
        self.mcp_secrets: dict[str, McpSecret] = {}
        #: header name → its value as a secret; None: not given (a fleet built without
        #: the loader, e.g. a test's model: the literal values are used)
        self.gateway_secrets: dict[str, Secret] | None = None
        #: route name → the candidate it resolves to
        self.route_choices: dict[str, str] = {}

    def for_gateway(self, name: str) -> "RunTime":
        """A copy for the fleet as a client on gateway ``name`` sees it: that gateway's
        header secrets answer as ``gateway.headers``; the rest is shared."""
        out = RunTime()
        out.mcp_secrets, out.route_choices = self.mcp_secrets, self.route_choices
        out.own_gateway, out.gateway_keys = self.own_gateway, self.gateway_keys
        out.default_key = self.default_key
        out.gateway_secrets_by, out.gateway_table = self.gateway_secrets_by, self.gateway_table
        if self.gateway_secrets_by is not None:
            out.gateway_secrets = self.gateway_secrets_by.get(name, {})
        return out


class FleetLogic:
    """Derived answers every client needs, from the fleet's fields.

    Shared by the pydantic model and the run-time view, which both provide the fields
    declared below (the narrow interface these answers read) and a :class:`RunTime`
    as ``_run_time`` (the only state the answers keep).
    """

    if TYPE_CHECKING:  # provided by the model's fields / the view's schema properties
        gateway: GatewayFields
        models: Mapping[str, ModelFields]
        routes: Mapping[str, str | RouteFields]
        default_route: str | None
        secrets: str
        routing: RoutingFields
        clients: Any
        mcp_servers: Mapping[str, McpServerFields]
        gateways: Mapping[str, GatewayFields]
        default_gateway: str | None
        _run_time: RunTime

    # ---- named gateways (docs/gateways.md; plain-data answers in fleet/gateways.py)

    def gateways_all(self) -> dict[str, Any]:
        """Every gateway by name: ``gateway:`` as ``default``, then ``gateways:``."""
        rt = self._run_time
        if rt.gateway_table is None:
            table: dict[str, Any] = {"default": self.gateway} if rt.own_gateway else {}
            for name, gateway in self.gateways.items():
                table.setdefault(name, gateway)
            rt.gateway_table = table
        return rt.gateway_table

    def default_gateway_name(self) -> str:
        """The gateway a client that names none is on."""
        if self.default_gateway:
            return self.default_gateway
        return "default" if self._run_time.own_gateway else next(iter(self.gateways_all()))

    def gateway_path(self, name: str) -> str:
        """Where gateway ``name`` is written: ``gateway`` or ``gateways.NAME``."""
        return "gateway" if name == "default" and self._run_time.own_gateway \
            else f"gateways.{name}"

    def gateway_of(self, client: str) -> str:
        """The name of the gateway client ``client`` (as spelled in fleet.yaml) is on."""
        entry = getattr(self.clients, client_attrs()[client], None)
        own = getattr(entry, "gateway", None) if entry is not None else None
        return own or self.default_gateway_name()

    def for_client(self, client: str) -> Any:
        """The fleet as client ``client`` sees it: ``gateway`` (its URLs, headers and key
        reference) is the client's own gateway. Every reader of ``fleet.gateway`` that
        acts for one client reads it through this."""
        return self.on_gateway(self.gateway_of(client))

    def on_gateway(self, name: str) -> Any:
        """The fleet as a client on gateway ``name`` sees it (itself for the default)."""
        if name == self.default_gateway_name():
            return self
        rt = self._run_time
        self.gateways_all()  # filled before the view shares it
        if name not in rt.views:
            rt.views[name] = self._with_gateway(name)
        return rt.views[name]

    def key_for(self, client: str, key: "Secret | None") -> "Secret | None":
        """The key client ``client`` sends: ``key`` (the default gateway's) for a client
        on the default gateway, else its own gateway's (``key`` when it was not resolved:
        ``--no-key``'s placeholder)."""
        name = self.gateway_of(client)
        if name == self.default_gateway_name():
            return key
        return self._run_time.gateway_keys.get(name, key)

    def attach_gateway_keys(self, keys: dict[str, Secret],
                            default: "Secret | None" = None) -> None:
        """Give the fleet each non-default gateway's resolved key (name → secret), and
        the default gateway's (for ``${gateways.NAME.key}``)."""
        self._run_time.gateway_keys = dict(keys)
        self._run_time.default_key = default

    def gateway_keys(self) -> dict[str, Secret]:
        """Each non-default gateway's resolved key (name → secret)."""
        return dict(self._run_time.gateway_keys)

    def _with_gateway(self, name: str) -> Any:  # the model and the view each build it
        raise NotImplementedError

    def model_for(self, slot: str | None) -> str:
        """The catalogue id a client slot means: a route name first, else a model id."""
        if slot is None:
            slot = self.default_route
        if slot is None:
            return next(iter(self.models))
        if slot in self.routes:
            return self.route_model(slot)
        return slot

    def route_candidates(self, name: str) -> list[str]:
        """The catalogue ids a route may resolve to, preferred first (one for a plain route)."""
        target = self.routes[name]
        return [target] if isinstance(target, str) else list(target.candidates)

    def route_model(self, name: str) -> str:
        """The model a route resolves to: the choice made from the verify history
        (:meth:`choose_routes`), else its preferred candidate."""
        return self._run_time.route_choices.get(name) or self.route_candidates(name)[0]

    def choose_routes(self, choices: dict[str, str]) -> None:
        """Give the fleet the model each candidate route resolves to (taosync.verify.routing
        chooses; the pipeline calls this before any client renders)."""
        self._run_time.route_choices = {name: model for name, model in choices.items()
                               if name in self.routes and model in self.route_candidates(name)}

    def routing_spec(self) -> dict:
        """The routes that choose, as plain data for :mod:`taosync.verify.routing` (and the
        render cache): candidates, policy, weight, dwell, each candidate's cost; window,
        max_age."""
        routes = {}
        for name, target in self.routes.items():
            if isinstance(target, str):
                continue
            routes[name] = {"candidates": list(target.candidates), "policy": target.policy,
                            "weight": target.weight, "dwell": target.dwell,
                            "cost": {m: self.models[m].cost for m in target.candidates
                                     if m in self.models}}
        if not routes:
            return {}
        return {"routes": routes, "window": self.routing.window,
                "max_age": self.routing.max_age}

    def distinct_models(self, slots: Iterable[str | None]) -> list[tuple[str | None, str]]:
        """(slot, model) for each distinct route and model the slots name, first slot
        first: two routes on one model are two pairs (verify probes them as one request
        labelled with both routes)."""
        out: dict[tuple[str | None, str], str | None] = {}
        for slot in slots:
            out.setdefault((self.route_for(slot), self.model_for(slot)), slot)
        return [(slot, model) for (_route, model), slot in out.items()]

    def context_window(self, model: str) -> int | None:
        """The catalogue's context window for a model id, when it gives one — as an int
        (``2.0e5`` is an integer to the schema, but TOML would write it as a float that
        Codex refuses)."""
        entry = self.models.get(model)
        window = entry.context_window if entry is not None else None
        return int(window) if window is not None else None

    def route_for(self, slot: str | None) -> str | None:
        """The route name a client slot stands for (None when it names a model id)."""
        name = slot if slot is not None else self.default_route
        return name if name is not None and name in self.routes else None

    def fallbacks_for(self, slot: str | None) -> list[str]:
        """The models a client should try, in order, when the one :meth:`model_for` gives
        is overloaded or unavailable: the slot's route's other candidates, preferred first
        (none for a plain route or a model id). Clients with their own per-request
        failover (Claude Code ``fallbackModel``, Hermes ``fallback_providers``) take this
        chain, so a down backend is skipped inside the request, with no proxy."""
        route = self.route_for(slot)
        if route is None:
            return []
        chosen = self.route_model(route)
        return [m for m in self.route_candidates(route) if m != chosen]

    def secrets_for(self, client: Any) -> str:
        return client.secrets or self.secrets

    @property
    def anthropic_url(self) -> str:
        """Base URL Anthropic-shaped clients append ``/v1/messages`` to (the root)."""
        return self.gateway.anthropic_base_url or self.gateway.base_url

    @property
    def openai_url(self) -> str:
        """Base URL OpenAI-shaped clients append ``/chat/completions`` or ``/responses`` to."""
        return self.gateway.openai_base_url or self.gateway.base_url + "/v1"

    def reference_value(self, name: str, key: "Secret | None") -> str:
        """The value of one ``${…}`` fleet reference (``gateway.key``, ``routes.fast``, …).

        Raises KeyError (with a message) for a reference the fleet cannot satisfy.
        """
        if name == "gateway.key":
            if key is None:
                raise KeyError("gateway.key is not resolved")
            return key.reveal()
        gateway = {
            "gateway.base_url": self.gateway.base_url,
            "gateway.anthropic_base_url": self.anthropic_url,
            "gateway.openai_base_url": self.openai_url,
        }
        if name in gateway:
            return gateway[name]
        if name.startswith("gateways."):
            return self._named_reference(name, key)
        if name == "default_route":
            return self.model_for(None)
        kind, _, rest = name.partition(".")
        if kind == "routes" and rest in self.routes:
            return self.route_model(rest)
        if kind == "models" and rest in self.models:
            return rest
        raise KeyError(f"unknown reference ${{{name}}}")

    def _named_reference(self, name: str, key: "Secret | None") -> str:
        """``${gateways.NAME.FIELD}``: a named gateway's URL or key, whichever client the
        value is written into (``key`` stands in when the keys were not resolved)."""
        gateway_name, _, field = name[len("gateways."):].rpartition(".")
        table = self.gateways_all()
        if gateway_name not in table or field not in GATEWAY_REFERENCE_FIELDS:
            raise KeyError(f"unknown reference ${{{name}}}")
        g = table[gateway_name]
        if field == "key":
            rt = self._run_time
            found = rt.default_key if gateway_name == self.default_gateway_name() \
                else rt.gateway_keys.get(gateway_name)
            found = found if found is not None else key
            if found is None:
                raise KeyError(f"{name} is not resolved")
            return found.reveal()
        return {"base_url": g.base_url,
                "anthropic_base_url": g.anthropic_base_url or g.base_url,
                "openai_base_url": g.openai_base_url or g.base_url + "/v1"}[field]

    def expand(self, text: str, key: "Secret | None") -> str:
        """``text`` with every fleet reference replaced (other ``${…}`` left as is)."""
        return FLEET_REFERENCE.sub(lambda m: self.reference_value(m.group(1), key), text)

    def attach_mcp_secrets(self, resolved: dict[str, McpSecret]) -> None:
        """Give the fleet its resolved MCP key references (value text → secret); the
        loader resolves them once, with the key, so every client renders the same."""
        self._run_time.mcp_secrets = dict(resolved)

    def attach_gateway_secrets(self, resolved: dict[str, Secret],
                               by_name: dict[str, dict[str, Secret]] | None = None) -> None:
        """Give the fleet its ``gateway.headers`` values as secrets (header name → a
        :class:`McpSecret` for a key reference, a :class:`Secret` for a literal); the
        loader resolves them with the key, as it does the MCP secrets. ``by_name``: every
        named gateway's (gateway name → its headers)."""
        self._run_time.gateway_secrets = dict(resolved)
        if by_name is not None:
            self._run_time.gateway_secrets_by = {n: dict(h) for n, h in by_name.items()}

    def gateway_headers(self) -> dict[str, Secret]:
        """Every ``gateway.headers`` value as a :class:`Secret` (redacted, revealed only on
        write and on the wire, 0600, never in the state): a header that carries the
        gateway's credentials (Helicone-Auth, CF-Access-Client-Secret) is one."""
        resolved = self._run_time.gateway_secrets
        if resolved is None:  # built without the loader (a test's model): literal values
            return {name: Secret(value, "literal")
                    for name, value in self.gateway.headers.items()}
        return dict(resolved)

    def gateway_userinfos(self) -> list[str]:
        """The ``user:password`` written into any of the gateway's URLs."""
        urls = (self.gateway.base_url, self.gateway.anthropic_base_url,
                self.gateway.openai_base_url, self.gateway.gemini_base_url)
        return list(dict.fromkeys(u for u in map(url_userinfo, urls) if u))

    def all_gateway_userinfos(self) -> list[str]:
        """The ``user:password`` written into any URL of any gateway."""
        urls = [u for g in self.gateways_all().values()
                for u in (g.base_url, g.anthropic_base_url, g.openai_base_url,
                          g.gemini_base_url)]
        return list(dict.fromkeys(u for u in map(url_userinfo, urls) if u))

    def gateway_credentials(self) -> list[Secret]:
        """Every gateway credential besides the key, for the run's redactor: each URL's
        userinfo (and its password alone) and each header value, of every gateway, and
        the key of each gateway but the default one."""
        out = []
        for userinfo in self.all_gateway_userinfos():
            out.append(Secret(userinfo, "URL userinfo"))
            password = userinfo.partition(":")[2]
            if password:
                out.append(Secret(password, "URL password"))
        out += self.gateway_headers().values()
        for headers in (self._run_time.gateway_secrets_by or {}).values():
            out += [h for h in headers.values() if h not in out]
        if self._run_time.gateway_secrets_by is None:  # a test's model: literal values
            out += [Secret(v, "literal") for g in self.gateways.values()
                    for v in g.headers.values()]
        out += self._run_time.gateway_keys.values()
        return out

    def mcp_servers_expanded(self, key: "Secret | None") -> dict:
        """The MCP servers with fleet references expanded in every string value, and
        each value holding a key reference replaced by its :class:`McpSecret`."""
        resolved = self._run_time.mcp_secrets

        def value(text: str) -> Any:
            if text in resolved:
                return resolved[text]
            if SECRET_REFERENCE_START.search(text):
                raise KeyError(f"{text!r} holds a key reference that was not resolved")
            return self.expand(text, key)

        return {name: server.replaced(expand_all(server.plain(), value))
                for name, server in self.mcp_servers.items()}

    def enabled_clients(self) -> dict:
        """Client name (as spelled in fleet.yaml) → its settings, for enabled clients."""
        out = {}
        for name, attr in client_attrs().items():
            value = getattr(self.clients, attr)
            if value is not None and value.enabled and value.managed:
                out[name] = value
        return out

    def unmanaged_clients(self) -> set[str]:
        """Clients set ``managed: false``: taosync forgets them and leaves their files."""
        return {name for name, attr in client_attrs().items()
                if getattr(self.clients, attr) is not None
                and not getattr(self.clients, attr).managed}
