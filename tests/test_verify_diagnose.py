"""Every diagnosis, each produced by a real failing server on loopback (the stand-in)."""

from __future__ import annotations

import socket

import pytest

from taosync.clients.base import ProbeSpec
from taosync.fleet.model import Verify
from taosync.fleet.secrets import Secret
from taosync.stub import Stub
from taosync.verify.diagnose import key_problem, scrub, suggest
from taosync.verify.runner import run

RAW = "sk-test-DIAGNOSE-0123456789abcdef"
KEY = Secret(RAW)
FAST = Verify(timeout=2, retries=1)
PROTOCOLS = ["anthropic-messages", "openai-responses", "openai-chat"]
SUFFIX = {"anthropic-messages": "/v1/messages?beta=true", "openai-responses": "/v1/responses",
          "openai-chat": "/v1/chat/completions"}


def spec(root: str, model: str = "gw-main", protocol: str = "openai-chat",
         base: str | None = None, auth: str = "bearer") -> ProbeSpec:
    """The probe a client configured with ``base`` sends (default: the right base for root)."""
    if base is None:
        base = root if protocol == "anthropic-messages" else root + "/v1"
    tail = SUFFIX[protocol]
    tail = tail if protocol == "anthropic-messages" else tail[len("/v1"):]
    return ProbeSpec("test-client", "main", model, protocol, base, base.rstrip("/") + tail, auth)


def probe(specs, key=KEY, verify=FAST):
    results = run(specs if isinstance(specs, list) else [specs], key, verify, backoff=0.01)
    for r in results:
        text = repr(r.to_dict())
        assert key.reveal() not in text  # no diagnosis ever carries the key
    return results[0] if not isinstance(specs, list) else results


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def stub():
    with Stub(key=RAW, models=["gw-main", "gw-small", "gpt-4o-mini"]) as s:
        yield s


# -- auth ---------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_auth_wrong_key_is_scrubbed_even_when_the_gateway_echoes_it(protocol):
    wrong = Secret("sk-wrong-key-9876543210fedcba")
    with Stub(key=RAW, models=["gw-main"]) as s:
        r = probe(spec(s.root, protocol=protocol), key=wrong)
    assert not r.ok and r.status == 401
    assert r.diagnosis.code == "auth"
    assert "rejected the key" in r.diagnosis.cause
    assert wrong.redacted() in r.diagnosis.cause  # the echo is shown, redacted
    assert "gateway.key" in r.diagnosis.fix


def test_auth_fault_with_the_right_key(stub):
    stub.add_fault("unauthorized")
    r = probe(spec(stub.root))
    assert r.diagnosis.code == "auth" and r.attempts == 1  # 401 is not retried


def test_forbidden(stub):
    stub.add_fault("forbidden@gw-main")
    r = probe(spec(stub.root))
    assert r.status == 403 and r.diagnosis.code == "auth"
    assert "gw-main" in r.diagnosis.cause and "dashboard" in r.diagnosis.fix


@pytest.mark.parametrize("raw,problem", [
    (f'"{RAW}"', "is wrapped in quotes"),
    (f"{RAW}'", "has a stray quote"),
    (RAW[:10] + " " + RAW[10:], "contains whitespace"),
])
def test_auth_key_with_stray_characters(stub, raw, problem):
    r = probe(spec(stub.root), key=Secret(raw))
    assert r.diagnosis.code == "auth"
    assert problem in r.diagnosis.cause
    assert "stray characters" in r.diagnosis.fix
    assert RAW not in repr(r.to_dict())


@pytest.mark.parametrize("raw", [RAW + "\nsecond-line", RAW + "\u200b"])
def test_unsendable_key_is_diagnosed_without_sending(stub, raw):
    r = probe(spec(stub.root), key=Secret(raw))
    assert r.diagnosis.code == "auth" and r.attempts == 0
    assert "nothing was sent" in r.diagnosis.cause
    assert stub.posts() == []


def test_key_problem_clean_key():
    assert key_problem(KEY) is None


# -- oauth ---------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_oauth_expired_token(stub, protocol):
    stub.add_fault("oauth")
    r = probe(spec(stub.root, protocol=protocol))
    assert r.diagnosis.code == "oauth"
    assert "OAuth" in r.diagnosis.cause and "API key" in r.diagnosis.fix


# -- model_not_found -------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_not_found_suggests_close_ids_from_the_models_list(stub, protocol):
    r = probe(spec(stub.root, model="gpt-4o-mni", protocol=protocol))
    assert r.status == 404 and r.diagnosis.code == "model_not_found"
    assert "gpt-4o-mni" in r.diagnosis.cause
    assert "did you mean `gpt-4o-mini`" in r.diagnosis.fix
    assert any(s.path == "/v1/models" for s in stub.requests)


def test_model_not_found_with_no_close_id_lists_some(stub):
    r = probe(spec(stub.root, model="totally-different"))
    assert r.diagnosis.code == "model_not_found"
    assert "serves 3 models" in r.diagnosis.fix


def test_unknown_model_fault_for_a_catalogue_model(stub):
    stub.add_fault("unknown_model@gw-small")
    ok, bad = probe([spec(stub.root), spec(stub.root, model="gw-small")])
    assert ok.ok and bad.diagnosis.code == "model_not_found"


def test_suggest():
    assert suggest("claude-sonet-4", ["claude-sonnet-4", "gpt-4o"]) == ["claude-sonnet-4"]
    assert suggest("deepseek-r1", ["nvidia/deepseek-r1", "x"]) == ["nvidia/deepseek-r1"]


# -- path ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["openai-chat", "openai-responses"])
def test_path_doubled_v1(stub, protocol):
    r = probe(spec(stub.root, protocol=protocol, base=stub.root + "/v1/v1"))
    assert r.status == 404 and r.diagnosis.code == "path"
    assert "/v1 is doubled" in r.diagnosis.cause
    assert f"gateway.base_url: {stub.root}`" in r.diagnosis.fix


def test_path_doubled_v1_for_claude_code(stub):
    r = probe(spec(stub.root, protocol="anthropic-messages", base=stub.root + "/v1"))
    assert "/v1/v1/messages" in r.url
    assert r.diagnosis.code == "path" and "/v1 is doubled" in r.diagnosis.cause
    assert f"gateway.base_url: {stub.root}`" in r.diagnosis.fix


def test_path_missing_v1(stub):
    r = probe(spec(stub.root, base=stub.root))
    assert r.diagnosis.code == "path" and "/v1 is missing" in r.diagnosis.cause
    assert f"gateway.base_url: {stub.root}`" in r.diagnosis.fix


def test_path_neither_form_exists(stub):
    r = probe(spec(stub.root, base=stub.root + "/nope/v1"))
    assert r.diagnosis.code == "path"
    assert "does not exist either" in r.diagnosis.cause


def test_path_under_a_prefix_names_the_root_with_the_prefix():
    with Stub(key=RAW, models=["gw-main"], prefix="/api") as s:
        r = probe(spec(s.root, base=s.root))  # openai base written without /v1
        assert r.diagnosis.code == "path" and "/v1 is missing" in r.diagnosis.cause
        assert r.diagnosis.fix.startswith(f"write `gateway.base_url: {s.root}`")
        assert s.root.endswith("/api")


def test_web_page_answering_200_is_a_path_problem():
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"<!doctype html><html><body>Welcome</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    try:
        r = probe(spec(f"http://127.0.0.1:{server.server_address[1]}"))
    finally:
        server.shutdown()
        server.server_close()
    assert r.diagnosis.code == "path" and "web page" in r.diagnosis.cause


# -- proxy / connect / dns / tls --------------------------------------------------------------

def test_local_proxy_not_running():
    port = free_port()
    r = probe(spec(f"http://127.0.0.1:{port}"))
    assert r.diagnosis.code == "proxy"
    assert r.diagnosis.cause == f"nothing listens on 127.0.0.1:{port}"
    assert "taotoken.net" not in r.diagnosis.fix  # the fleet's own address, not a vendor's
    assert f"stub --port {port}" in r.diagnosis.fix
    assert r.attempts == 2  # connect errors are retried, boundedly


def test_env_proxy_on_loopback_not_running(monkeypatch):
    port = free_port()
    for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    r = probe(spec("http://gateway.example.invalid"))
    assert r.diagnosis.code == "proxy"
    assert f"nothing listens on 127.0.0.1:{port}" in r.diagnosis.cause
    assert "HTTP_PROXY" in r.diagnosis.fix


def test_dns(monkeypatch):
    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    r = probe(spec("http://gateway.invalid"))
    assert r.diagnosis.code == "dns" and "gateway.invalid" in r.diagnosis.cause
    assert r.attempts == 1  # a name that does not resolve is not retried


def test_tls_against_a_plain_http_server(stub):
    r = probe(spec("https://" + stub.root[len("http://"):]))
    assert r.diagnosis.code == "tls"
    assert "does not speak TLS" in r.diagnosis.cause and "http://" in r.diagnosis.fix
    assert r.attempts == 1


# -- no_choices ----------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stream", [True, False])
def test_no_choices(stub, protocol, stream):
    stub.add_fault("no_choices")
    s = spec(stub.root, protocol=protocol)
    if not stream:
        s = ProbeSpec(**{**s.__dict__, "stream": False})
    r = probe(s)
    assert r.status == 200 and not r.ok
    assert r.diagnosis.code == "no_choices"
    assert "answered 200 but the answer has no" in r.diagnosis.cause


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stream", [True, False])
def test_error_object_inside_a_200(stub, protocol, stream):
    stub.add_fault("error_in_200")
    s = spec(stub.root, protocol=protocol)
    if not stream:
        s = ProbeSpec(**{**s.__dict__, "stream": False})
    r = probe(s)
    assert r.status == 200 and r.diagnosis.code == "no_choices"
    assert "error object" in r.diagnosis.cause and "upstream provider" in r.diagnosis.cause


def test_model_mismatch(stub):
    stub.add_fault("answer_as=some-other-model")
    r = probe(spec(stub.root))
    assert r.diagnosis.code == "model_mismatch"
    assert "some-other-model" in r.diagnosis.cause


# -- timeout, rate_limited, server_error -----------------------------------------------------------

def test_timeout(stub):
    stub.add_fault("delay=5")
    r = probe(spec(stub.root), verify=Verify(timeout=0.3, retries=2))
    assert r.diagnosis.code == "timeout" and "0.3 s" in r.diagnosis.cause
    assert r.attempts == 1 and r.latency < 1.5
    assert "verify.timeout" in r.diagnosis.fix


def test_rate_limited(stub):
    stub.add_fault("rate_limited")
    r = probe(spec(stub.root))
    assert r.status == 429 and r.diagnosis.code == "rate_limited"
    assert r.attempts == 2 and "after 2 attempts" in r.diagnosis.cause


@pytest.mark.parametrize("fault,status", [("server_error", 500), ("status=503", 503)])
def test_server_error(stub, fault, status):
    stub.add_fault(fault)
    r = probe(spec(stub.root))
    assert r.status == status and r.diagnosis.code == "server_error"


def test_connection_closed(stub):
    stub.add_fault("close")
    r = probe(spec(stub.root))
    assert r.diagnosis.code == "server_error" and "closed the connection" in r.diagnosis.cause
    assert r.attempts == 2


def test_scrub_variants():
    quoted = Secret(f'"{RAW}"')
    assert RAW not in scrub(f"got {RAW} and {quoted.reveal()}", quoted)


def test_local_addresses_count_as_a_local_proxy():
    from taosync.verify.diagnose import is_local

    for host in ("127.0.0.1", "localhost", "::1", "10.0.0.5", "192.168.1.2", "172.16.0.1",
                 "169.254.1.1", "proxy.localhost"):
        assert is_local(host), host
    for host in ("taotoken.net", "8.8.8.8", "2001:4860::1"):
        assert not is_local(host), host
