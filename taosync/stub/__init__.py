"""A stand-in gateway on loopback: Anthropic Messages, OpenAI Responses and Chat Completions.

It answers the way a real gateway does (same paths, SSE event shapes, error bodies: each
protocol module in :mod:`taosync.protocols` shapes its own) so ``taosync verify --stub``,
the quick start and the tests exercise the real code path over real HTTP. It can be told
to fail in each way verify diagnoses (see :data:`KINDS`), globally or for one model, so
every diagnosis is produced by a failing server, not a mock.

Only ever binds 127.0.0.1. Standard library only (``http.server``)::

    with Stub(key="sk-test-123456789", models=["gw-main"], faults=["delay=0.3"]) as stub:
        stub.root   # http://127.0.0.1:PORT  (the gateway root, without /v1)

Deliberately adversarial: an invalid-key answer echoes the key it received, as some
gateways do, so tests prove taosync scrubs the key from everything it prints.

``server`` (Stub: lifecycle and state), ``handler`` (HTTP), ``faults`` (Fault, KINDS).
"""

from taosync.stub.faults import KINDS, Fault
from taosync.stub.handler import Handler as _Handler  # noqa: F401 - tests spy on it
from taosync.stub.handler import Seen
from taosync.stub.server import ANSWER, HOST, Stub
from taosync.stub.server import _Server  # noqa: F401 - tests patch its dispatch

__all__ = ["Stub", "Fault", "KINDS", "Seen", "HOST", "ANSWER"]
