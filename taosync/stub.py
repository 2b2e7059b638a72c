"""A stand-in gateway on loopback: Anthropic Messages, OpenAI Responses and Chat Completions.

It answers the way a real gateway does (same paths, SSE event shapes, error bodies) so
``taosync verify --stub``, the quick start and the tests exercise the real code path
over real HTTP. It can be told to fail in each way verify diagnoses (see :data:`KINDS`),
globally or for one model, so every diagnosis is produced by a failing server, not a mock.

Only ever binds 127.0.0.1. Standard library only (``http.server``)::

    with Stub(key="sk-test-123456789", models=["gw-main"], faults=["delay=0.3"]) as stub:
        stub.root   # http://127.0.0.1:PORT  (the gateway root, without /v1)

Fault syntax (``taosync stub --fault``): ``KIND[=ARG][@MODEL]``, e.g. ``unauthorized``,
``unknown_model@gw-small``, ``delay=0.3``, ``rate_limited=2@gw-main`` (two 429s, then
success), ``server_error`` (always 500), ``status=503``, ``close``, ``answer_as=other``.

Deliberately adversarial: an invalid-key answer echoes the key it received, as some
gateways do, so tests prove taosync scrubs the key from everything it prints.
"""

from __future__ import annotations

import hmac
import json
import secrets as _secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable
from urllib.parse import urlsplit

HOST = "127.0.0.1"

#: fault kind → (argument type or None, help)
KINDS: dict[str, tuple[type | None, str]] = {
    "unauthorized": (None, "401: the key is rejected"),
    "forbidden": (None, "403: the key may not use this model"),
    "oauth": (None, "401 invalid_grant: an expired OAuth token where a key was meant"),
    "unknown_model": (None, "404 model_not_found, even for a catalogue model"),
    "no_choices": (None, "200 without choices / content"),
    "error_in_200": (None, "200 whose body (or stream) is an error object"),
    "rate_limited": (int, "429 (N times, then success; no N = always)"),
    "server_error": (int, "500 (N times, then success; no N = always)"),
    "status": (int, "always answer with HTTP status CODE"),
    "close": (None, "close the connection without answering"),
    "delay": (float, "wait SECONDS before answering"),
    "answer_as": (str, "answer well-formed, but naming model MODEL (a rerouting gateway)"),
}


@dataclass
class Fault:
    """One injected failure; ``model=None`` applies to every request."""

    kind: str
    arg: float | int | str | None = None
    model: str | None = None
    hits: int = 0  # how many requests this fault has answered

    @classmethod
    def parse(cls, text: "str | Fault") -> "Fault":
        if isinstance(text, Fault):
            return text
        spec, _, model = text.strip().partition("@")
        kind, eq, raw = spec.partition("=")
        kind = kind.strip().replace("-", "_")
        if kind not in KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(KINDS)}")
        typ = KINDS[kind][0]
        arg: float | int | None = None
        if eq:
            if typ is None:
                raise ValueError(f"fault {kind} takes no argument")
            try:
                arg = typ(raw)
            except ValueError:
                raise ValueError(f"fault {kind}: {raw!r} is not a {typ.__name__}") from None
        elif kind in ("delay", "status", "answer_as"):
            raise ValueError(f"fault {kind} needs a value: {kind}=…")
        return cls(kind, arg, model.strip() or None)

    def applies(self, model: str | None) -> bool:
        return self.model is None or self.model == model

    def __str__(self) -> str:
        text = self.kind + (f"={self.arg}" if self.arg is not None else "")
        return text + (f"@{self.model}" if self.model else "")


@dataclass
class Seen:
    """One request the stub received (auth headers reduced to ok/bad, never the value)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    auth: str  # ok | bad | missing
    status: int = 0


ANSWER = "OK — {model} answered through the taosync stand-in gateway."


class Stub:
    """A loopback gateway. Use as a context manager, or ``start()``/``stop()``."""

    def __init__(self, key: Any = None, models: Iterable[str] | None = None,
                 faults: Iterable["str | Fault"] = (), *, port: int = 0, prefix: str = "",
                 answer: str = ANSWER) -> None:
        if key is not None and hasattr(key, "reveal"):
            key = key.reveal()
        self._key: str | None = key or None
        self.models: list[str] | None = list(models) if models is not None else None
        self.faults: list[Fault] = [Fault.parse(f) for f in faults]
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.answer = answer
        self.requests: list[Seen] = []
        self.log = None  # callable(str) to report each request
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def bind(self) -> None:
        """Listen (without serving yet), so the port is known before serving."""
        stub = self

        class Handler(_Handler):
            pass

        Handler.stub = stub
        self._server = _Server((HOST, self._port), Handler)

    def start(self) -> "Stub":
        if self._server is None:
            self.bind()
            self._thread = threading.Thread(target=self._server.serve_forever,
                                            kwargs={"poll_interval": 0.02},
                                            name="taosync-stub", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the ``taosync stub`` command)."""
        if self._server is None:
            self.bind()
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self.stop()

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping in a delay
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()
                self._thread.join(timeout=5)
            self._server.server_close()
            self._server = None
            self._thread = None

    def __enter__(self) -> "Stub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("stub is not started")
        return self._server.server_address[1]

    @property
    def root(self) -> str:
        """The gateway root (what fleet.yaml's gateway.base_url would hold)."""
        return f"http://{HOST}:{self.port}{self.prefix}"

    # -- control for tests -------------------------------------------------------------

    def add_fault(self, spec: "str | Fault") -> Fault:
        fault = Fault.parse(spec)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def posts(self, path_suffix: str = "") -> list[Seen]:
        with self._lock:
            return [r for r in self.requests
                    if r.method == "POST" and r.path.endswith(path_suffix)]

    # -- used by the handler -----------------------------------------------------------

    def check_key(self, received: list[str]) -> str:
        if not received:
            return "missing"
        if self._key is None:
            return "ok"
        good = all(hmac.compare_digest(r.encode(), self._key.encode()) for r in received)
        return "ok" if good else "bad"

    def take_fault(self, model: str | None) -> list[Fault]:
        """The faults that answer this request (counted ones are consumed)."""
        out = []
        with self._lock:
            for fault in self.faults:
                if not fault.applies(model):
                    continue
                if fault.kind in ("rate_limited", "server_error") and fault.arg is not None:
                    if fault.hits >= fault.arg:
                        continue
                fault.hits += 1
                out.append(fault)
        return out

    def knows(self, model: str) -> bool:
        return self.models is None or model in self.models

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    def report(self, seen: Seen) -> None:
        if self.log is not None:
            self.log(f"{seen.method} {seen.path} → {seen.status}"
                     + (f" ({seen.body.get('model')})" if isinstance(seen.body, dict)
                        and seen.body.get("model") else ""))


# ---------------------------------------------------------------------------------------

class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a burst of concurrent probes must not overflow the backlog
    daemon_threads = True


ENDPOINTS = {
    "/v1/messages": "anthropic-messages",
    "/v1/messages/count_tokens": "anthropic-count",
    "/v1/responses": "openai-responses",
    "/v1/chat/completions": "openai-chat",
}

NOT_FOUND_PAGE = (b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
                  b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n"
                  b"</body>\r\n</html>\r\n")


def _words(text: str) -> list[str]:
    return text.split()


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and SSE events are small separate writes
    server_version = "taosync-stub/1"
    sys_version = ""
    stub: Stub

    def log_message(self, format, *args):  # noqa: A002 - quiet; Stub.log reports instead
        pass

    # -- plumbing ----------------------------------------------------------------------

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, body: bytes, ctype: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self._seen.status = status  # recorded before the client can read the answer
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", "req_" + _secrets.token_hex(6))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), headers=headers)

    def _start_stream(self) -> None:
        self._seen.status = 200  # recorded before the client can read the answer
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", "req_" + _secrets.token_hex(6))
        self.end_headers()
        self._pending: list[bytes] = []
        self._first_sent = False

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, event: str | None, data: Any) -> None:
        """Queue one SSE event. The first goes out at once (time to first byte means
        something); the rest, produced in one burst, leave as one HTTP chunk — as a server
        flushing per burst sends them — so many parallel probes do not pay per-chunk costs
        for events a model would have spread over time anyway."""
        payload = data if isinstance(data, str) else json.dumps(data)
        text = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
        self._pending.append(text.encode())
        if not self._first_sent:
            self._first_sent = True
            self._flush_events()

    def _flush_events(self) -> None:
        if self._pending:
            self._chunk(b"".join(self._pending))
            self._pending.clear()

    def _end_stream(self) -> None:
        self._flush_events()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- dispatch ----------------------------------------------------------------------

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        stub = self.stub
        parts = urlsplit(self.path)
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        received = []
        auth_header = self.headers.get("Authorization")
        if auth_header is not None:
            received.append(auth_header[7:] if auth_header[:7].lower() == "bearer " else "")
        if self.headers.get("x-api-key") is not None:
            received.append(self.headers["x-api-key"])
        headers = {k.lower(): v for k, v in self.headers.items()
                   if k.lower() not in ("authorization", "x-api-key")}
        self._seen = Seen(method, parts.path, parts.query, headers, body,
                          stub.check_key(received))
        stub.record(self._seen)  # before answering: a client may look right after it
        try:
            self._route(method, parts.path, body, received)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            stub.report(self._seen)

    def _route(self, method: str, path: str, body: Any, received: list[str]) -> None:
        stub = self.stub
        if stub.prefix:
            if path != stub.prefix and not path.startswith(stub.prefix + "/"):
                return self._send(404, NOT_FOUND_PAGE, "text/html")
            path = path[len(stub.prefix):]
        path = path.rstrip("/") or "/"
        if path == "/":
            return self._send(200, b"taosync stand-in gateway\n", "text/plain")
        if path == "/v1/models":
            if method != "GET":
                return self._send(405, b"", "text/plain", {"Allow": "GET"})
            return self._models("openai-chat", received)
        kind = ENDPOINTS.get(path)
        if kind is None:
            return self._send(404, NOT_FOUND_PAGE, "text/html")
        if method != "POST":
            return self._send(405, b"", "text/plain", {"Allow": "POST"})
        if not isinstance(body, dict):
            return self._error(kind, 400, "invalid_request_error", "request body is not JSON")
        model = body.get("model") if isinstance(body.get("model"), str) else None
        faults = stub.take_fault(model)
        for fault in faults:
            if fault.kind == "close":
                self.close_connection = True
                self._seen.status = -1
                return None
            if fault.kind == "delay":
                if stub._stop.wait(float(fault.arg or 0)):
                    self.close_connection = True
                    return None
        if self._seen.auth != "ok":
            return self._unauthorized(kind, received)
        for fault in faults:
            if fault.kind == "unauthorized":
                return self._unauthorized(kind, received)
            if fault.kind == "oauth":
                return self._oauth(kind)
            if fault.kind == "forbidden":
                return self._error(kind, 403, "permission_error",
                                   f"This key is not allowed to use model {model}.",
                                   "model_not_allowed")
            if fault.kind == "rate_limited":
                return self._error(kind, 429, "rate_limit_error",
                                   "Rate limit reached for requests; try again later.",
                                   "rate_limit_exceeded", {"Retry-After": "0"})
            if fault.kind == "server_error":
                return self._error(kind, 500, "api_error", "The server had an error "
                                   "while processing your request.", "server_error")
            if fault.kind == "status":
                return self._error(kind, int(fault.arg), "api_error",
                                   f"upstream answered {fault.arg}", "upstream_error")
        if not model:
            return self._error(kind, 400, "invalid_request_error", "model: field required")
        if not stub.knows(model) or any(f.kind == "unknown_model" for f in faults):
            if kind.startswith("anthropic"):
                return self._error(kind, 404, "not_found_error", f"model: {model}")
            return self._error(kind, 404, "invalid_request_error",
                               f"The model `{model}` does not exist or you do not have "
                               f"access to it.", "model_not_found")
        if kind == "anthropic-count":
            return self._json(200, {"input_tokens": _tokens(json.dumps(body.get("messages")))})
        mode = "ok"
        if any(f.kind == "no_choices" for f in faults):
            mode = "no_choices"
        if any(f.kind == "error_in_200" for f in faults):
            mode = "error"
        stream = bool(body.get("stream"))
        answer = stub.answer.format(model=model)
        for fault in faults:
            if fault.kind == "answer_as":
                model = str(fault.arg)
        limit = body.get("max_tokens") or body.get("max_output_tokens") or 0
        if isinstance(limit, int) and limit > 0:
            answer = " ".join(_words(answer)[:limit])
        prompt_tokens = _tokens(json.dumps(body.get("messages") or body.get("input") or ""))
        if kind == "anthropic-messages":
            return self._anthropic(model, answer, prompt_tokens, stream, mode)
        if kind == "openai-responses":
            return self._responses(model, answer, prompt_tokens, stream, mode)
        return self._chat(model, answer, prompt_tokens, stream, mode,
                          bool((body.get("stream_options") or {}).get("include_usage")))

    # -- errors ------------------------------------------------------------------------

    def _error(self, kind: str, status: int, type_: str, message: str,
               code: str | None = None, headers: dict[str, str] | None = None) -> None:
        if kind.startswith("anthropic"):
            data = {"type": "error", "error": {"type": type_, "message": message}}
        else:
            data = {"error": {"message": message, "type": type_, "param": None, "code": code}}
        self._json(status, data, headers)

    def _unauthorized(self, kind: str, received: list[str]) -> None:
        shown = received[0] if received else ""
        if kind.startswith("anthropic"):
            return self._error(kind, 401, "authentication_error",
                               f"invalid x-api-key: {shown}" if shown else "missing API key")
        return self._error(kind, 401, "invalid_request_error",
                           f"Incorrect API key provided: {shown}. Check the key of your "
                           f"gateway account." if shown else "You didn't provide an API key.",
                           "invalid_api_key", {"WWW-Authenticate": 'Bearer realm="stub"'})

    def _oauth(self, kind: str) -> None:
        headers = {"WWW-Authenticate": 'Bearer error="invalid_token", '
                                       'error_description="The access token expired"'}
        if kind.startswith("anthropic"):
            return self._error(kind, 401, "authentication_error",
                               "OAuth token has expired. Please obtain a new token or refresh "
                               "your existing token. (invalid_grant)", None, headers)
        return self._error(kind, 401, "invalid_request_error",
                           "invalid_grant: OAuth token has expired", "invalid_grant", headers)

    def _models(self, kind: str, received: list[str]) -> None:
        if self._seen.auth != "ok":
            return self._unauthorized(kind, received)
        now = int(time.time())
        data = [{"id": m, "object": "model", "type": "model", "display_name": m,
                 "created": now, "created_at": "2026-01-01T00:00:00Z",
                 "owned_by": "taosync-stub"} for m in (self.stub.models or [])]
        self._json(200, {"object": "list", "data": data, "has_more": False,
                         "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None})

    # -- Anthropic Messages ------------------------------------------------------------

    def _anthropic(self, model: str, answer: str, prompt_tokens: int, stream: bool,
                   mode: str) -> None:
        msg_id = "msg_" + _secrets.token_hex(12)
        out_tokens = _tokens(answer)
        if not stream:
            if mode == "error":
                return self._json(200, {"type": "error", "error": {
                    "type": "api_error", "message": "upstream provider returned 502"}})
            content = [] if mode == "no_choices" else [{"type": "text", "text": answer}]
            return self._json(200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": prompt_tokens, "output_tokens": out_tokens}})
        self._start_stream()
        if mode == "error":
            self._event("error", {"type": "error", "error": {
                "type": "overloaded_error", "message": "upstream provider returned 502"}})
            return self._end_stream()
        self._event("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": 1}}})
        if mode != "no_choices":
            self._event("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}})
            self._event("ping", {"type": "ping"})
            for i, word in enumerate(_words(answer)):
                self._event("content_block_delta", {
                    "type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": (" " if i else "") + word}})
            self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                      "usage": {"output_tokens": out_tokens}})
        self._event("message_stop", {"type": "message_stop"})
        self._end_stream()

    # -- OpenAI Responses --------------------------------------------------------------

    def _responses(self, model: str, answer: str, prompt_tokens: int, stream: bool,
                   mode: str) -> None:
        resp_id = "resp_" + _secrets.token_hex(12)
        item_id = "msg_" + _secrets.token_hex(12)
        out_tokens = _tokens(answer)
        usage = {"input_tokens": prompt_tokens, "output_tokens": out_tokens,
                 "total_tokens": prompt_tokens + out_tokens}
        item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": answer, "annotations": []}]}
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                "model": model}
        output = [] if mode == "no_choices" else [item]
        if not stream:
            if mode == "error":
                return self._json(200, {"error": {"message": "upstream provider returned 502",
                                                  "type": "upstream_error", "code": 502}})
            return self._json(200, {**base, "status": "completed", "output": output,
                                    "usage": usage})
        self._start_stream()
        seq = iter(range(1_000))
        self._event("response.created", {"type": "response.created", "sequence_number": next(seq),
                                         "response": {**base, "status": "in_progress",
                                                      "output": [], "usage": None}})
        if mode == "error":
            self._event("response.failed", {
                "type": "response.failed", "sequence_number": next(seq),
                "response": {**base, "status": "failed", "output": [], "usage": None,
                             "error": {"code": "server_error",
                                       "message": "upstream provider returned 502"}}})
            return self._end_stream()
        self._event("response.in_progress", {"type": "response.in_progress",
                                             "sequence_number": next(seq),
                                             "response": {**base, "status": "in_progress",
                                                          "output": [], "usage": None}})
        if mode != "no_choices":
            self._event("response.output_item.added", {
                "type": "response.output_item.added", "sequence_number": next(seq),
                "output_index": 0, "item": {**item, "status": "in_progress", "content": []}})
            self._event("response.content_part.added", {
                "type": "response.content_part.added", "sequence_number": next(seq),
                "item_id": item_id, "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}})
            for i, word in enumerate(_words(answer)):
                self._event("response.output_text.delta", {
                    "type": "response.output_text.delta", "sequence_number": next(seq),
                    "item_id": item_id, "output_index": 0, "content_index": 0,
                    "delta": (" " if i else "") + word})
            self._event("response.output_text.done", {
                "type": "response.output_text.done", "sequence_number": next(seq),
                "item_id": item_id, "output_index": 0, "content_index": 0, "text": answer})
            self._event("response.content_part.done", {
                "type": "response.content_part.done", "sequence_number": next(seq),
                "item_id": item_id, "output_index": 0, "content_index": 0,
                "part": item["content"][0]})
            self._event("response.output_item.done", {
                "type": "response.output_item.done", "sequence_number": next(seq),
                "output_index": 0, "item": item})
        self._event("response.completed", {"type": "response.completed",
                                           "sequence_number": next(seq),
                                           "response": {**base, "status": "completed",
                                                        "output": output, "usage": usage}})
        self._end_stream()

    # -- OpenAI Chat Completions -------------------------------------------------------

    def _chat(self, model: str, answer: str, prompt_tokens: int, stream: bool, mode: str,
              include_usage: bool) -> None:
        chat_id = "chatcmpl-" + _secrets.token_hex(12)
        created = int(time.time())
        out_tokens = _tokens(answer)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": out_tokens,
                 "total_tokens": prompt_tokens + out_tokens}
        base = {"id": chat_id, "created": created, "model": model}
        if not stream:
            if mode == "error":
                return self._json(200, {"error": {"message": "upstream provider returned 502",
                                                  "type": "upstream_error", "code": 502}})
            data = {**base, "object": "chat.completion", "usage": usage}
            if mode != "no_choices":
                data["choices"] = [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                    "message": {"role": "assistant", "content": answer}}]
            return self._json(200, data)
        self._start_stream()
        chunk = {**base, "object": "chat.completion.chunk"}
        if mode == "error":
            self._event(None, {"error": {"message": "upstream provider returned 502",
                                         "type": "upstream_error", "code": 502}})
        elif mode == "no_choices":
            self._event(None, chunk)
            self._event(None, chunk)
        else:
            self._event(None, {**chunk, "choices": [{"index": 0, "delta": {
                "role": "assistant", "content": ""}, "finish_reason": None}]})
            for i, word in enumerate(_words(answer)):
                self._event(None, {**chunk, "choices": [{"index": 0, "delta": {
                    "content": (" " if i else "") + word}, "finish_reason": None}]})
            self._event(None, {**chunk, "choices": [{"index": 0, "delta": {},
                                                     "finish_reason": "stop"}]})
            if include_usage:
                self._event(None, {**chunk, "choices": [], "usage": usage})
        self._event(None, "[DONE]")
        self._end_stream()


__all__ = ["Stub", "Fault", "KINDS", "Seen", "HOST"]
