"""The stand-in gateway's HTTP handler: parse, record, apply faults, then let the protocol
module of the endpoint shape the answer or the error."""

from __future__ import annotations

import json
import secrets as _secrets
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from taosync.protocols import base, registry
from taosync.protocols.base import ProtocolPlugin

NOT_FOUND_PAGE = (b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
                  b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n"
                  b"</body>\r\n</html>\r\n")
#: the protocol whose error shape /v1/models answers in
MODELS_PROTOCOL = "openai-chat"


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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and SSE events are small separate writes
    server_version = "taosync-stub/1"
    sys_version = ""
    stub: Any  # the taosync.stub.server.Stub serving (set by Stub.bind)

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

    def _stream(self, events: Any) -> None:
        """Send (event, data) pairs as an SSE stream. The first goes out at once (time to
        first byte means something); the rest, produced in one burst, leave as one HTTP
        chunk — as a server flushing per burst sends them — so many parallel probes do not
        pay per-chunk costs for events a model would have spread over time anyway."""
        self._seen.status = 200  # recorded before the client can read the answer
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", "req_" + _secrets.token_hex(6))
        self.end_headers()
        pending: list[bytes] = []
        for n, (event, data) in enumerate(events):
            payload = data if isinstance(data, str) else json.dumps(data)
            pending.append(((f"event: {event}\n" if event else "")
                            + f"data: {payload}\n\n").encode())
            if n == 0:
                self._chunk(pending.pop())
        if pending:
            self._chunk(b"".join(pending))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
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
        # a key may arrive in any header or query parameter a protocol names (Bearer,
        # x-api-key, x-goog-api-key, Google's ?key=), all kept out of the record
        key_headers, key_queries = registry.key_carriers()
        received = []
        for header in key_headers:
            value = self.headers.get(header.name)
            if value is not None:
                received.append(header.read(value))
        query = parse_qs(parts.query)
        for name in key_queries:
            received.extend(query.pop(name, []))
        hidden = {header.name.lower() for header in key_headers}
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in hidden}
        shown_query = "&".join(f"{k}={v}" for k, values in query.items() for v in values)
        self._seen = Seen(method, parts.path, shown_query, headers, body,
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
        listing = registry.for_models(path)  # /v1/models, or a protocol's own list
        if path == "/v1/models" or listing is not None:
            if method != "GET":
                return self._send(405, b"", "text/plain", {"Allow": "GET"})
            return self._models(listing or registry.get(MODELS_PROTOCOL), received)
        found = registry.for_endpoint(path)
        if found is None:
            return self._send(404, NOT_FOUND_PAGE, "text/html")
        if method != "POST":
            return self._send(405, b"", "text/plain", {"Allow": "POST"})
        protocol, operation = found
        if not isinstance(body, dict):
            return self._error(protocol, 400, "invalid_request_error", "request body is not JSON")
        model, stream = protocol.requested(body, path)
        faults = stub.take_fault(model)
        for fault in faults:
            if fault.kind == "close":
                self.close_connection = True
                self._seen.status = -1
                return None
            if fault.kind == "delay":
                if stub.sleep(float(fault.arg or 0)):
                    self.close_connection = True
                    return None
        if self._seen.auth != "ok":
            return self._unauthorized(protocol, received)
        for fault in faults:
            if fault.kind == "unauthorized":
                return self._unauthorized(protocol, received)
            if fault.kind == "oauth":
                return self._json(401, *protocol.oauth())
            if fault.kind == "forbidden":
                return self._error(protocol, 403, "permission_error",
                                   f"This key is not allowed to use model {model}.",
                                   "model_not_allowed")
            if fault.kind == "rate_limited":
                return self._error(protocol, 429, "rate_limit_error",
                                   "Rate limit reached for requests; try again later.",
                                   "rate_limit_exceeded", {"Retry-After": "0"})
            if fault.kind == "server_error":
                return self._error(protocol, 500, "api_error", "The server had an error "
                                   "while processing your request.", "server_error")
            if fault.kind == "status":
                return self._error(protocol, int(fault.arg), "api_error",
                                   f"upstream answered {fault.arg}", "upstream_error")
        if not model:
            return self._error(protocol, 400, "invalid_request_error", "model: field required")
        if not stub.knows(model) or any(f.kind == "unknown_model" for f in faults):
            return self._json(404, protocol.unknown_model(model))
        if operation != "answer":
            return self._json(200, protocol.SIDE_ENDPOINTS[operation](body))
        return self._answer(protocol, model, stream, body, faults)

    def _answer(self, protocol: ProtocolPlugin, model: str, stream: bool, body: dict,
                faults: list) -> None:
        mode = "ok"
        if any(f.kind == "no_choices" for f in faults):
            mode = "no_choices"
        if any(f.kind == "error_in_200" for f in faults):
            mode = "error"
        text = self.stub.answer.format(model=model)
        for fault in faults:
            if fault.kind == "answer_as":
                model = str(fault.arg)
        limit = protocol.max_tokens(body) or 0
        if isinstance(limit, int) and limit > 0:
            text = " ".join(base.words(text)[:limit])
        prompt_tokens = base.tokens(json.dumps(protocol.prompt_text(body)))
        if stream:
            return self._stream(protocol.stream(model, text, prompt_tokens, mode, body))
        return self._json(200, protocol.answer(model, text, prompt_tokens, mode, body))

    # -- refusals ----------------------------------------------------------------------

    def _error(self, protocol: ProtocolPlugin, status: int, type_: str, message: str,
               code: str | None = None, headers: dict[str, str] | None = None) -> None:
        self._json(status, protocol.error_body(type_, message, code), headers)

    def _unauthorized(self, protocol: ProtocolPlugin, received: list[str]) -> None:
        """401 (or the protocol's status), echoing the key received (as some gateways do:
        taosync must scrub it)."""
        self._json(protocol.UNAUTHORIZED_STATUS,
                   *protocol.unauthorized(received[0] if received else ""))

    def _models(self, protocol: ProtocolPlugin, received: list[str]) -> None:
        if self._seen.auth != "ok":
            return self._unauthorized(protocol, received)
        return self._json(200, protocol.models_body(self.stub.models or []))
