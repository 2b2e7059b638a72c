"""What to probe, and the exact request each probe sends.

Each client module says which requests its client will send (``probes()`` →
:class:`~taosync.clients.base.ProbeSpec`). Several clients often send the same request
(Cline and Continue both POST ``{root}/v1/chat/completions`` for the same model), so specs
are grouped by (protocol, URL, model, auth) into one :class:`ProbeGroup` that remembers every
client and route it stands for. The request body and headers are shaped as the client sends
them (clients.md, "Request" lines); each protocol module (:mod:`taosync.protocols`) shapes
its request and reads its answer (an SSE stream or a JSON body) into a :class:`Completion`,
which says whether it is a well-formed answer.

Standard library only: httpx is imported by the runner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

from taosync.errors import BadInput

from taosync.protocols import registry
from taosync.protocols.base import auth_headers
from taosync.protocols.anthropic_messages import CLAUDE_CODE_BETA as ANTHROPIC_BETA  # noqa: F401
from taosync.protocols.anthropic_messages import VERSION as ANTHROPIC_VERSION  # noqa: F401

USER_AGENT = "taosync-verify"


@dataclass
class ProbeGroup:
    """One distinct request, standing for every client/route that sends it."""

    protocol: str
    url: str
    model: str
    auth: str
    base_url: str
    stream: bool = True
    headers: tuple[tuple[str, str], ...] = ()
    clients: list[str] = field(default_factory=list)
    routes: list[str | None] = field(default_factory=list)
    backend: str | None = None
    #: the catalogue's per-model timeout / retries (None: verify's)
    timeout: float | None = None
    retries: int | None = None
    #: the key a client's files resolve to (None: the fleet's key)
    secret: Any = None
    #: where the on-disk values came from (clients.base.Origin), for every client
    origins: list[Any] = field(default_factory=list)
    #: a route's other candidate, probed so the route can choose: no client is on it, so
    #: its failure is a warning (``verify --strict``: a failure)
    standby: bool = False
    #: the named gateway of the first client it stands for
    gateway: str | None = None

    @property
    def key(self) -> tuple:
        return (self.protocol, self.url, self.model, self.auth, self.headers, self.secret)

    def add(self, client: str, route: str | None, origins: Iterable[Any] = ()) -> None:
        if client not in self.clients:
            self.clients.append(client)
        if route not in self.routes:
            self.routes.append(route)
        self.origins.extend(o for o in origins if o not in self.origins)


def group_specs(specs: Iterable[Any], fleet: Any = None) -> list[ProbeGroup]:
    """ProbeSpecs (or groups, passed through) → groups, in first-seen order."""
    groups: dict[tuple, ProbeGroup] = {}
    for spec in specs:
        if isinstance(spec, ProbeGroup):
            groups.setdefault(spec.key, spec)
            continue
        key = (spec.protocol, spec.url, spec.model, spec.auth, tuple(spec.headers), spec.secret)
        group = groups.get(key)
        if group is None:
            entry = fleet.models.get(spec.model) if fleet is not None else None
            group = groups[key] = ProbeGroup(
                protocol=spec.protocol, url=spec.url, model=spec.model, auth=spec.auth,
                base_url=spec.base_url, stream=spec.stream, headers=tuple(spec.headers),
                backend=entry.backend if entry else None, secret=spec.secret,
                timeout=entry.timeout if entry else None,
                retries=entry.retries if entry else None,
                gateway=getattr(spec, "gateway", None))
        group.add(spec.client, spec.route, spec.origins)
    return list(groups.values())


def _did_you_mean(name: str, options: Iterable[str]) -> str:
    from taosync.fleet.problems import closest

    close = closest(name, options, cutoff=0.5)
    return f" (did you mean {close}?)" if close else ""


def collect_specs(fleet: Any, key: Any, env: Any, only: Iterable[str] | None = None,
                  route: str | None = None, *, strict: bool = True) -> list[ProbeGroup]:
    """Probe groups for the enabled clients, built from fleet.yaml (what apply would write);
    ``only``: a subset of client names; ``route``: keep the probes of that route. Raises
    :class:`BadInput` for an unknown client or route, a client in ``only`` that is not
    enabled (unless ``strict=False``: after an apply that touched a disabled client, there
    is just nothing to probe), or a route no enabled client uses."""
    clients = _select(fleet, only, route, strict)
    specs = [on_gateway(spec, fleet, module.ID, key) for module in clients
             for spec in module.probes(fleet.for_client(module.ID),
                                       fleet.key_for(module.ID, key), env)]
    return group_specs(_on_route(specs, route, clients, only, strict), fleet)


def on_gateway(spec: Any, fleet: Any, client: str, key: Any) -> Any:
    """``spec`` naming the gateway its client is on, and carrying that gateway's key when
    it is not the default one's (the runner sends ``spec.secret`` over the run's key)."""
    from dataclasses import replace

    name = fleet.gateway_of(client)
    own = fleet.key_for(client, key)
    return replace(spec, gateway=name,
                   secret=spec.secret if spec.secret is not None or own is key else own)


def collect_on_disk(fleet: Any, key: Any, env: Any, only: Iterable[str] | None = None,
                    route: str | None = None, *, strict: bool = True
                    ) -> tuple[list[ProbeGroup], list[Any]]:
    """As :func:`collect_specs`, but each probe is built from the values in the client's
    files as they are; also each client's :class:`~taosync.clients.base.OnDisk` (its drift
    from fleet.yaml, and why it cannot be probed, if so)."""
    clients = _select(fleet, only, route, strict)
    found = [module.on_disk(fleet.for_client(module.ID), fleet.key_for(module.ID, key), env)
             for module in clients]
    specs = [on_gateway(spec, fleet, module.ID, key)
             for module, disk in zip(clients, found) for spec in disk.probes]
    unprobed = any(disk.problems for disk in found)
    return group_specs(_on_route(specs, route, clients, only, strict and not unprobed),
                       fleet), found


def _select(fleet: Any, only: Iterable[str] | None, route: str | None,
            strict: bool) -> list[Any]:
    """The client modules to probe, in registry order."""
    from taosync.clients.registry import all as all_clients

    registry = all_clients()
    enabled = fleet.enabled_clients()
    names = [n for n in registry if n in enabled]
    if only:
        wanted = list(dict.fromkeys(only))
        for name in wanted:
            if name not in registry:
                raise BadInput(f"unknown client {name!r}{_did_you_mean(name, registry)}; "
                               f"known: {', '.join(registry)}")
            if name not in enabled and strict:
                raise BadInput(f"client {name} is not enabled in fleet.yaml")
        names = [n for n in names if n in wanted]
    if route is not None and route not in fleet.routes:
        raise BadInput(f"unknown route {route!r}{_did_you_mean(route, fleet.routes)}; "
                       f"routes: {', '.join(fleet.routes) or '(none)'}")
    return [registry[n] for n in names]


def _on_route(specs: list[Any], route: str | None, clients: list[Any],
              only: Iterable[str] | None, strict: bool) -> list[Any]:
    if route is None:
        return specs
    kept = [spec for spec in specs if spec.route == route]
    if not kept and strict:
        raise BadInput(f"no enabled client uses route {route}"
                       + (f" (among {', '.join(m.ID for m in clients)})" if only else ""))
    return kept


# -- URLs ---------------------------------------------------------------------------------

def rewrite(group: ProbeGroup, root: str) -> str:
    """The probe's URL with its base replaced by a stand-in ``root`` (Anthropic base → root,
    OpenAI base → root + /v1), keeping the path and query the client appends."""
    root = root.rstrip("/")
    protocol = registry.get(group.protocol)
    base = group.base_url.rstrip("/")
    if group.url.startswith(base):
        return root + protocol.BASE_SUFFIX + group.url[len(base):]
    query = urlsplit(group.url).query
    return root + protocol.ENDPOINT + (f"?{query}" if query else "")


def display_url(url: str) -> str:
    """The URL without user:password@ (the key is scrubbed separately)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


# -- the request ---------------------------------------------------------------------------

@dataclass
class ProbeRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: dict[str, Any]


def build_request(group: ProbeGroup, key: Any, verify: Any, url: str | None = None) -> ProbeRequest:
    """The request ``group``'s clients send, with the fleet's prompt and max_tokens."""
    try:
        protocol = registry.get(group.protocol)
    except KeyError:
        raise BadInput(f"unknown probe protocol {group.protocol!r}") from None
    shaped, body = protocol.probe(group.model, verify.prompt, verify.max_tokens, group.stream)
    headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json", **shaped}
    for name, value in group.headers:  # a gateway header is a Secret: sent, never shown
        headers[name] = value.reveal() if hasattr(value, "reveal") else value
    try:  # how the key travels is the protocol's (Bearer, x-api-key, x-goog-api-key …)
        headers.update(auth_headers(protocol, group.auth, key.reveal()))
    except KeyError:
        raise BadInput(f"protocol {group.protocol} sends no key as {group.auth!r} "
                       f"(it knows {', '.join(protocol.AUTH)})") from None
    return ProbeRequest("POST", url or group.url, headers, body)


# -- reading the answer ------------------------------------------------------------------

class SSEParser:
    """Incremental text/event-stream parser (WHATWG rules: event/data fields, blank line
    dispatches, ``:`` comments, CRLF/LF/CR line ends, multi-line data joined by newline)."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str, str]]:
        buf = self._buf + chunk
        hold = b""
        if buf.endswith(b"\r"):  # maybe the first half of CRLF: wait for the next chunk
            buf, hold = buf[:-1], b"\r"
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = buf.split(b"\n")
        self._buf = rest + hold
        for line in lines:
            yield from self._line(line.decode("utf-8", "replace"))

    def close(self) -> Iterator[tuple[str, str]]:
        buf, self._buf = self._buf, b""
        if buf:
            for line in buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
                yield from self._line(line.decode("utf-8", "replace"))
        yield from self._line("")

    def _line(self, line: str) -> Iterator[tuple[str, str]]:
        if line == "":
            if self._data:
                yield self._event or "message", "\n".join(self._data)
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)


@dataclass
class Completion:
    """What came back, read as the client reads it."""

    text: str = ""
    reasoning: str = ""
    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    started: bool = False
    finished: bool = False
    has_output: bool = False  # at least one choice / content block / output item
    error: Any = None  # an error object inside a 200 answer
    problem: str | None = None  # why this is not a well-formed completion

    def check(self, protocol: str) -> "Completion":
        """Set :attr:`problem` when the answer is not a well-formed completion."""
        spec = registry.get(protocol)
        what = spec.OUTPUT_WORD
        if self.error is not None:
            self.problem = "error"
        elif not self.started:
            self.problem = "the answer is not a completion"
        elif not self.has_output:
            self.problem = f"the answer has no {what}"
        elif not self.finished:
            self.problem = "the stream ended before the completion finished"
        elif not (self.text or self.reasoning or spec.EMPTY_TEXT_OK):
            self.problem = f"the answer's {what} hold no text"
        return self


def read_stream(protocol: str) -> Any:
    """A reader for ``protocol``'s SSE events: ``.event(name, data)``; ``.c`` the Completion."""
    return registry.get(protocol).Reader(Completion())


def read_json(protocol: str, obj: Any) -> Completion:
    reader = registry.get(protocol).Reader(Completion())
    reader.body(obj)
    return reader.c.check(protocol)


def same_model(asked: str, answered: str | None) -> bool:
    """Lenient: gateways answer ``gpt-4o-mini-2024-07-18`` for ``gpt-4o-mini``, or drop a
    ``provider/`` prefix; a different model family is a mismatch."""
    if not answered:
        return True
    a, b = asked.lower(), answered.lower()
    if a == b:
        return True
    a_tail, b_tail = a.rsplit("/", 1)[-1], b.rsplit("/", 1)[-1]
    if a_tail == b_tail:
        return True
    short, long_ = sorted((a_tail, b_tail), key=len)
    return long_.startswith(short) and bool(_VERSION_SUFFIX.fullmatch(long_[len(short):]))


#: what a gateway may append to a model id and still mean the same model (a date or tag)
_VERSION_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}|-\d{4,8}|-latest|-v\d[\w.]*|[@:].+")


def first_words(text: str, words: int = 8, chars: int = 60) -> str:
    text = " ".join(text.split())
    out = " ".join(text.split(" ")[:words])
    if len(out) > chars:
        out = out[:chars - 1].rstrip() + "…"
    elif len(out) < len(text):
        out += " …"
    return out
