"""Send the probes: concurrently, on one shared httpx client, each with its own timeout and
bounded retries; read each answer as its client would; diagnose what failed.

``run(groups, key, fleet.verify)`` → one :class:`ProbeResult` per group, in order
(``on_result`` is also handed each one the moment its probe finishes, for a live table).
The total time stays close to the slowest probe. httpx is imported here (and only when called).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from taosync.hints import again
from taosync.terminal import untrusted
from taosync.verify import diagnose as dx
from taosync.verify.probes import (
    ProbeGroup, SSEParser, build_request, display_url, first_words, group_specs,
    read_json, read_stream, rewrite, same_model,
)

#: cap on how much of an error body is read
MAX_ERROR_BODY = 64 * 1024
BACKOFF = 0.25  # seconds before the first retry; doubles, plus jitter
MAX_BACKOFF = 4.0
#: probes sharing one connection pool: httpcore scans every connection and queued request
#: of a pool at each request's start and end, so one pool for 100 probes costs O(n²) CPU
#: (4.7× the slowest probe at 100 backends); pools of 16 keep each scan short
POOL_SIZE = 16
#: at most this many probes in flight at once (a gateway is not to be flooded);
#: $TAOSYNC_VERIFY_CONCURRENCY overrides it
MAX_IN_FLIGHT = 128


@dataclass
class ProbeResult:
    clients: list[str]
    routes: list[str | None]
    model: str
    backend: str | None
    protocol: str
    url: str  # the URL probed (never holds the key)
    ok: bool
    status: int | None = None
    diagnosis: dx.Diagnosis | None = None
    latency: float | None = None  # seconds, the final attempt, request → end of answer
    ttfb: float | None = None  # seconds, request → first byte of the body
    tokens_in: int | None = None
    tokens_out: int | None = None
    answer: str = ""  # the answer's first words
    attempts: int = 1
    configured_url: str | None = None  # the client's own URL, when probing a stand-in
    standby: bool = False  # a route's other candidate, no client on it (ProbeGroup.standby)
    key: Any = field(default=None, repr=False)  # the Secret sent (never serialised)
    gateway: str | None = None  # the named gateway probed (docs/gateways.md)

    @property
    def route(self) -> str:
        names = [r for r in self.routes if r]
        return ", ".join(names) if names else "—"

    @property
    def client(self) -> str:
        return ", ".join(self.clients)

    def to_dict(self) -> dict[str, Any]:
        return {
            "clients": list(self.clients),
            "gateway": self.gateway,
            "routes": [r for r in self.routes if r],
            "model": self.model,
            "backend": self.backend,
            "protocol": self.protocol,
            "url": self.url,
            **({"configured_url": self.configured_url} if self.configured_url else {}),
            "ok": self.ok,
            "standby": self.standby,
            "status": self.status,
            "diagnosis": self.diagnosis.to_dict() if self.diagnosis else None,
            "latency_ms": _ms(self.latency),
            "ttfb_ms": _ms(self.ttfb),
            "tokens": {"in": self.tokens_in, "out": self.tokens_out},
            "answer": self.answer,
            "attempts": self.attempts,
            "key_source": key_source(self.key),
        }


def key_source(key: Any) -> str | None:
    """Where the key a probe sent came from: the client file and key path it was read
    from, or the fleet's reference (never the key itself)."""
    if key is None:
        return None
    source = getattr(key, "source", "") or ""
    return "gateway.key (a literal in fleet.yaml)" if source == "literal" else source


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


@dataclass
class _Attempt:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: str = ""
    exc: BaseException | None = None
    completion: Any = None
    ttfb: float | None = None
    latency: float | None = None

    @property
    def ok(self) -> bool:
        return (self.exc is None and self.status is not None and 200 <= self.status < 300
                and self.completion is not None and self.completion.problem is None)

    def retryable(self) -> bool:
        import httpx

        if self.exc is not None:
            if isinstance(self.exc, (httpx.TimeoutException, TimeoutError)):
                return False  # the timeout already bounds this probe's time
            if isinstance(self.exc, httpx.ConnectError):
                low = str(self.exc).lower()
                return not any(s in low for s in ("ssl", "certificate", "name or service",
                                                  "nodename", "getaddrinfo", "resolution"))
            return isinstance(self.exc, (httpx.RemoteProtocolError, httpx.ReadError,
                                         httpx.WriteError))
        return self.status == 429 or (self.status is not None and self.status >= 500)


async def _attempt(client: Any, request: Any, protocol: str, timeout: float) -> _Attempt:
    out = _Attempt()
    start = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            async with client.stream(request.method, request.url, headers=request.headers,
                                     json=request.body) as resp:
                out.status = resp.status_code
                out.headers = {k.lower(): v for k, v in resp.headers.items()}
                out.content_type = resp.headers.get("content-type", "")
                ctype = out.content_type.lower()
                if not 200 <= resp.status_code < 300:
                    raw = b""
                    async for chunk in resp.aiter_bytes():
                        if out.ttfb is None:
                            out.ttfb = time.perf_counter() - start
                        raw += chunk
                        if len(raw) > MAX_ERROR_BODY:
                            break
                    out.body = raw.decode("utf-8", "replace")
                elif "text/event-stream" in ctype:
                    reader, parser = read_stream(protocol), SSEParser()
                    async for chunk in resp.aiter_bytes():
                        if out.ttfb is None:
                            out.ttfb = time.perf_counter() - start
                        for name, data in parser.feed(chunk):
                            reader.event(name, data)
                    for name, data in parser.close():
                        reader.event(name, data)
                    out.completion = reader.c.check(protocol)
                else:
                    raw = b""
                    async for chunk in resp.aiter_bytes():
                        if out.ttfb is None:
                            out.ttfb = time.perf_counter() - start
                        raw += chunk
                    out.body = raw.decode("utf-8", "replace")
                    import json

                    try:
                        data = json.loads(out.body)
                    except ValueError:
                        data = None
                    out.completion = read_json(protocol, data)
                    if data is None and out.completion.problem:
                        out.completion.problem = "the body is not JSON"
    except BaseException as exc:  # noqa: BLE001 - every failure is diagnosed, not raised
        if isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
            raise
        out.exc = exc
    out.latency = time.perf_counter() - start
    return out


def _backoff(attempt: int, result: _Attempt, base: float) -> float:
    retry_after = result.headers.get("retry-after") if result.headers else None
    if retry_after is not None:
        try:
            return max(0.0, min(float(retry_after), MAX_BACKOFF))
        except ValueError:
            pass
    delay = min(base * (2 ** attempt), MAX_BACKOFF)
    return delay * (0.75 + random.random() / 2)


async def _probe(client: Any, group: ProbeGroup, key: Any, verify: Any,
                 base_override: str | None, backoff: float) -> ProbeResult:
    result = await _send(client, group, group.secret or key, verify, base_override, backoff)
    if result.diagnosis is not None and group.origins:
        result.diagnosis = dx.locate(result.diagnosis, group.origins)
    return result


async def _send(client: Any, group: ProbeGroup, key: Any, verify: Any,
                base_override: str | None, backoff: float) -> ProbeResult:
    url = rewrite(group, base_override) if base_override else group.url
    result = ProbeResult(
        clients=list(group.clients), routes=list(group.routes), model=group.model,
        backend=group.backend, protocol=group.protocol, ok=False,
        url=dx.scrub(display_url(url), key),
        configured_url=dx.scrub(display_url(group.url), key) if base_override else None,
        key=key, standby=group.standby, gateway=group.gateway)
    timeout = float(group.timeout or verify.timeout)  # models.<id>.timeout overrides
    if dx.key_unsendable(key):
        problem = dx.key_problem(key) or "cannot be sent in an HTTP header"
        result.attempts = 0
        result.diagnosis = dx.Diagnosis(
            "auth", f"the key {problem}, so no HTTP header can carry it (nothing was sent)",
            f"remove the stray characters where {dx._key_source(key)} reads it from, "
            f"then `{again('apply')}`")
        return result
    request = build_request(group, key, verify, url)
    retries = int(verify.retries if group.retries is None else group.retries)
    attempt = _Attempt()
    for n in range(retries + 1):
        attempt = await _attempt(client, request, group.protocol, timeout)
        result.attempts = n + 1
        if attempt.ok or not attempt.retryable() or n == retries:
            break
        await asyncio.sleep(_backoff(n, attempt, backoff))
    result.status = attempt.status
    result.latency, result.ttfb = attempt.latency, attempt.ttfb
    c = attempt.completion
    if c is not None:
        result.tokens_in, result.tokens_out = c.tokens_in, c.tokens_out
        result.answer = untrusted(dx.scrub(first_words(
            c.text or (f"(reasoning) {c.reasoning}" if c.reasoning else "")), key))
    mismatch = None
    if attempt.ok and not same_model(group.model, c.model):
        mismatch = c.model
    if attempt.ok and mismatch is None:
        result.ok = True
        return result
    failure = dx.Failure(url=url, protocol=group.protocol, model=group.model,
                         status=attempt.status, content_type=attempt.content_type,
                         body=attempt.body, headers=attempt.headers, exc=attempt.exc,
                         completion=c, timeout=timeout, attempts=result.attempts,
                         mismatch=mismatch)
    try:
        result.diagnosis = await dx.diagnose(failure, client=client, request=request, key=key,
                                             timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - a diagnosis must never crash verify
        result.diagnosis = dx.Diagnosis("unknown", dx.scrub(f"{type(exc).__name__}: {exc}", key),
                                        "run again with -v and report this")
    return result


_SSL: dict[tuple, Any] = {}


def _ssl_context() -> Any:
    """One TLS context per process (loading the CA bundle costs ~50 ms; watch verifies
    again and again), rebuilt if SSL_CERT_FILE / SSL_CERT_DIR change."""
    import os

    import httpx

    marker = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if marker not in _SSL:
        _SSL.clear()
        _SSL[marker] = httpx.create_ssl_context(trust_env=True)
    return _SSL[marker]


def _mark_sniffio_absent() -> None:
    """httpcore runs ``import sniffio`` on every request; when sniffio is not installed,
    each failed import searches sys.path again (~0.3 ms, several per probe: +40 ms for 20
    probes). Recording it as absent once makes those imports fail at once."""
    import importlib.util
    import sys

    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


def _client(n: int, timeout: float) -> Any:
    import httpx

    _mark_sniffio_absent()

    direct = {f"all://{h}": None for h in ("127.0.0.1", "localhost", "[::1]")}
    return httpx.AsyncClient(
        http2=False, follow_redirects=False, trust_env=True, mounts=direct, verify=_ssl_context(),
        timeout=httpx.Timeout(timeout),
        limits=httpx.Limits(max_connections=max(10, n * 2), max_keepalive_connections=max(10, n)))


def max_in_flight(verify: Any = None, environ=None) -> int:
    """$TAOSYNC_VERIFY_CONCURRENCY (a positive integer), else the fleet's
    ``verify.concurrency`` once the model declares it, else :data:`MAX_IN_FLIGHT`."""
    import os

    from taosync.errors import BadInput

    raw = (os.environ if environ is None else environ).get("TAOSYNC_VERIFY_CONCURRENCY")
    if not raw:
        return getattr(verify, "concurrency", None) or MAX_IN_FLIGHT
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise BadInput(f"TAOSYNC_VERIFY_CONCURRENCY={raw}: not a positive whole number")
    return value


async def run_async(specs: Iterable[Any], key: Any, verify: Any, *,
                    base_override: str | None = None,
                    backoff: float = BACKOFF, on_result: Any = None) -> list[ProbeResult]:
    groups = group_specs(specs)
    if not groups:
        return []
    limit = asyncio.Semaphore(max_in_flight(verify))
    # the longest timeout any probe has (a model's own timeout may exceed verify's)
    timeout = max([float(verify.timeout)] + [float(g.timeout) for g in groups if g.timeout])
    pools = [groups[i:i + POOL_SIZE] for i in range(0, len(groups), POOL_SIZE)]

    async def probe(client: Any, group: ProbeGroup) -> ProbeResult:
        async with limit:
            result = await _probe(client, group, key, verify, base_override, backoff)
        if on_result is not None:
            on_result(result)
        return result

    async def probe_pool(pool: list[ProbeGroup]) -> list[ProbeResult]:
        async with _client(len(pool), timeout) as client:
            return list(await asyncio.gather(*(probe(client, g) for g in pool)))

    done = await asyncio.gather(*(probe_pool(pool) for pool in pools))
    return [result for pool in done for result in pool]


def run(specs: Iterable[Any], key: Any, verify: Any, *, base_override: str | None = None,
        on_result: Any = None,
        backoff: float = BACKOFF) -> list[ProbeResult]:
    """Probe every group (ProbeSpecs are grouped first); results in the same order.
    ``on_result(result)`` is called as each probe finishes (in finishing order)."""
    return asyncio.run(run_async(specs, key, verify, base_override=base_override,
                                 backoff=backoff, on_result=on_result))
