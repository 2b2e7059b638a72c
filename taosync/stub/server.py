"""The stand-in gateway's lifecycle and state: port, key, catalogue, faults, requests seen."""

from __future__ import annotations

import hmac
import threading
from http.server import ThreadingHTTPServer
from typing import Any, Callable, Iterable

from taosync.stub.faults import Fault
from taosync.stub.handler import Handler, Seen

HOST = "127.0.0.1"

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
        self.log: Callable[[str], None] | None = None  # reports each request
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def bind(self) -> ThreadingHTTPServer:
        """Listen (without serving yet), so the port is known before serving."""
        stub = self

        class Bound(Handler):
            pass

        Bound.stub = stub
        self._server = _Server((HOST, self._port), Bound)
        return self._server

    def start(self) -> "Stub":
        if self._server is None:
            server = self.bind()
            self._thread = threading.Thread(target=server.serve_forever,
                                            kwargs={"poll_interval": 0.02},
                                            name="taosync-stub", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the ``taosync stub`` command)."""
        server = self._server if self._server is not None else self.bind()
        try:
            server.serve_forever(poll_interval=0.2)
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
                if fault.kind in ("rate_limited", "server_error") and isinstance(fault.arg, (int, float)):
                    if fault.hits >= fault.arg:
                        continue
                fault.hits += 1
                out.append(fault)
        return out

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` (a delay fault); True if the stub is stopping meanwhile."""
        return self._stop.wait(seconds)

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


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a burst of concurrent probes must not overflow the backlog
    daemon_threads = True
