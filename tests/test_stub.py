"""The stand-in gateway: real HTTP on loopback, the three protocols, the key, the faults."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import httpx
import pytest

from taosync.stub import Fault, Stub

KEY = "sk-stub-test-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {KEY}"}


def sse(text: str) -> list[tuple[str | None, str]]:
    events, name, data = [], None, []
    for line in text.splitlines():
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
    return events


@pytest.fixture
def stub():
    with Stub(key=KEY, models=["gw-main", "gw-small"]) as s:
        yield s


def test_binds_loopback_only_and_root_has_no_v1(stub):
    assert stub.root.startswith("http://127.0.0.1:")
    assert not stub.root.endswith("/v1")
    assert stub._server.server_address[0] == "127.0.0.1"


def test_anthropic_messages_stream_event_sequence(stub):
    r = httpx.post(stub.root + "/v1/messages?beta=true", headers=BEARER,
                   json={"model": "gw-main", "max_tokens": 16, "stream": True,
                         "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    names = [n for n, _ in sse(r.text)]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    for needed in ("content_block_start", "content_block_delta", "content_block_stop",
                   "message_delta"):
        assert needed in names
    for name, data in sse(r.text):
        assert json.loads(data)["type"] == name
    start = json.loads(sse(r.text)[0][1])
    assert start["message"]["model"] == "gw-main"


def test_anthropic_accepts_x_api_key_and_non_stream(stub):
    r = httpx.post(stub.root + "/v1/messages", headers={"x-api-key": KEY},
                   json={"model": "gw-small", "max_tokens": 16, "messages": []})
    body = r.json()
    assert body["type"] == "message" and body["content"][0]["type"] == "text"
    assert body["usage"]["output_tokens"] > 0


def test_count_tokens(stub):
    r = httpx.post(stub.root + "/v1/messages/count_tokens", headers=BEARER,
                   json={"model": "gw-main", "messages": [{"role": "user", "content": "a b"}]})
    assert r.status_code == 200 and r.json()["input_tokens"] > 0


def test_responses_stream_and_plain(stub):
    r = httpx.post(stub.root + "/v1/responses", headers={**BEARER, "Accept": "text/event-stream"},
                   json={"model": "gw-main", "input": "hi", "stream": True})
    names = [n for n, _ in sse(r.text)]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert "response.output_text.delta" in names
    done = json.loads(sse(r.text)[-1][1])["response"]
    assert done["status"] == "completed" and done["usage"]["output_tokens"] > 0
    plain = httpx.post(stub.root + "/v1/responses", headers=BEARER,
                       json={"model": "gw-main", "input": "hi"}).json()
    assert plain["object"] == "response"
    assert plain["output"][0]["content"][0]["type"] == "output_text"


def test_chat_stream_ends_with_done_and_usage_chunk(stub):
    r = httpx.post(stub.root + "/v1/chat/completions", headers=BEARER,
                   json={"model": "gw-main", "messages": [], "stream": True,
                         "stream_options": {"include_usage": True}})
    events = sse(r.text)
    assert events[-1] == (None, "[DONE]")
    chunks = [json.loads(d) for _, d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    assert any(c["choices"] and c["choices"][0]["finish_reason"] == "stop" for c in chunks)


def test_chat_plain_and_models_list(stub):
    body = httpx.post(stub.root + "/v1/chat/completions", headers=BEARER,
                      json={"model": "gw-small", "messages": []}).json()
    assert body["choices"][0]["message"]["content"].startswith("OK")
    models = httpx.get(stub.root + "/v1/models", headers=BEARER).json()
    assert [m["id"] for m in models["data"]] == ["gw-main", "gw-small"]


def test_key_checked_per_header(stub):
    bad = httpx.post(stub.root + "/v1/chat/completions", headers={"Authorization": "Bearer nope"},
                     json={"model": "gw-main", "messages": []})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_api_key"
    missing = httpx.post(stub.root + "/v1/messages", json={"model": "gw-main", "messages": []})
    assert missing.status_code == 401 and missing.json()["type"] == "error"
    both_one_bad = httpx.post(stub.root + "/v1/messages",
                              headers={**BEARER, "x-api-key": "other"},
                              json={"model": "gw-main", "messages": []})
    assert both_one_bad.status_code == 401
    assert httpx.get(stub.root + "/v1/models").status_code == 401


def test_unknown_model_shapes(stub):
    r = httpx.post(stub.root + "/v1/chat/completions", headers=BEARER,
                   json={"model": "gpt-x", "messages": []})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = httpx.post(stub.root + "/v1/messages", headers=BEARER,
                   json={"model": "gpt-x", "messages": []})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_wrong_path_is_a_404_page_and_wrong_method_405(stub):
    r = httpx.post(stub.root + "/v1/v1/chat/completions", headers=BEARER,
                   json={"model": "gw-main"})
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    assert httpx.post(stub.root + "/chat/completions", headers=BEARER,
                      json={"model": "gw-main"}).status_code == 404
    assert httpx.get(stub.root + "/v1/chat/completions").status_code == 405


def test_prefix():
    with Stub(key=KEY, prefix="/api") as s:
        assert s.root.endswith("/api")
        ok = httpx.post(s.root + "/v1/chat/completions", headers=BEARER,
                        json={"model": "any", "messages": []})
        assert ok.status_code == 200
        base = s.root[: -len("/api")]
        assert httpx.post(base + "/v1/chat/completions", headers=BEARER,
                          json={"model": "any"}).status_code == 404


def test_fault_parse():
    f = Fault.parse("rate_limited=2@nvidia/deepseek-r1")
    assert (f.kind, f.arg, f.model) == ("rate_limited", 2, "nvidia/deepseek-r1")
    assert Fault.parse("delay=0.25").arg == 0.25
    assert Fault.parse("server-error").kind == "server_error"
    for bad in ("nope", "delay", "close=1", "status=abc"):
        with pytest.raises(ValueError):
            Fault.parse(bad)


def test_counted_fault_then_success_and_scoped_to_model():
    with Stub(key=KEY, faults=["rate_limited=2@a"]) as s:
        post = lambda m: httpx.post(s.root + "/v1/chat/completions", headers=BEARER,  # noqa
                                    json={"model": m, "messages": []})
        assert post("b").status_code == 200
        first, second, third = post("a"), post("a"), post("a")
        assert (first.status_code, second.status_code, third.status_code) == (429, 429, 200)
        assert first.headers["retry-after"] == "0"


@pytest.mark.parametrize("fault,status", [("unauthorized", 401), ("forbidden", 403),
                                          ("oauth", 401), ("server_error", 500),
                                          ("status=503", 503), ("unknown_model", 404)])
def test_status_faults(fault, status):
    with Stub(key=KEY, faults=[fault]) as s:
        r = httpx.post(s.root + "/v1/chat/completions", headers=BEARER,
                       json={"model": "m", "messages": []})
        assert r.status_code == status
        if fault == "oauth":
            assert "invalid_grant" in r.text


def test_body_faults():
    with Stub(key=KEY, faults=["no_choices@a", "error_in_200@b", "answer_as=zzz@c"]) as s:
        post = lambda m: httpx.post(s.root + "/v1/chat/completions", headers=BEARER,  # noqa
                                    json={"model": m, "messages": []}).json()
        assert "choices" not in post("a")
        assert post("b")["error"]["message"]
        assert post("c")["model"] == "zzz"


def test_close_and_delay():
    with Stub(key=KEY, faults=["close@a", "delay=0.3@b"]) as s:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(s.root + "/v1/chat/completions", headers=BEARER,
                       json={"model": "a", "messages": []})
        t = time.perf_counter()
        r = httpx.post(s.root + "/v1/chat/completions", headers=BEARER,
                       json={"model": "b", "messages": []})
        assert r.status_code == 200 and time.perf_counter() - t >= 0.3


def test_stop_wakes_delayed_handlers_quickly():
    s = Stub(key=KEY, faults=["delay=30"]).start()
    import threading

    def call():
        try:
            httpx.post(s.root + "/v1/chat/completions", headers=BEARER, json={"model": "m"},
                       timeout=5)
        except httpx.HTTPError:
            pass  # the stub closes the connection when it stops

    threading.Thread(target=call, daemon=True).start()
    time.sleep(0.1)
    t = time.perf_counter()
    s.stop()
    assert time.perf_counter() - t < 2


def test_records_requests_without_the_key(stub):
    httpx.post(stub.root + "/v1/chat/completions", headers=BEARER,
               json={"model": "gw-main", "messages": []})
    seen = stub.posts("/chat/completions")[-1]
    assert seen.auth == "ok" and seen.status == 200
    assert KEY not in json.dumps(seen.headers)


def test_status_is_recorded_before_the_answer_goes_out(stub, monkeypatch):
    """A client that looks at the log the moment its answer arrives sees the status."""
    from taosync.stub import _Handler

    at_send: list[int] = []
    send_response = _Handler.send_response

    def spy(self, code, message=None):
        at_send.append(self._seen.status)
        send_response(self, code, message)

    monkeypatch.setattr(_Handler, "send_response", spy)
    httpx.post(stub.root + "/v1/chat/completions", headers=BEARER,
               json={"model": "gw-main", "messages": []})
    with httpx.stream("POST", stub.root + "/v1/messages", headers={"x-api-key": KEY},
                      json={"model": "gw-main", "max_tokens": 8, "stream": True,
                            "messages": [{"role": "user", "content": "hi"}]}) as r:
        r.read()
    httpx.post(stub.root + "/v1/chat/completions", json={"model": "gw-main", "messages": []})
    assert at_send == [200, 200, 401]


@contextlib.contextmanager
def stub_process(tmp_path, *, ignore_sigint: bool = False, prelude: str = ""):
    """``taosync stub`` as a real process (after ``prelude``, code run before the entry
    point); killed on the way out whatever happened."""
    env = {**os.environ, "STUB_KEY": KEY, "NO_COLOR": "1"}
    entry = (["-c", prelude + "\nimport sys\nsys.argv[0] = 'taosync'\n"
              "from taosync.__main__ import main\nsys.exit(main())\n"] if prelude
             else ["-m", "taosync"])
    proc = subprocess.Popen(
        [sys.executable, *entry, "stub", "--key-env", "STUB_KEY", "--model", "gw-main",
         "--fault", "unknown_model@gw-gone", "-c", str(tmp_path / "none.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # as a shell starts a background job: SIGINT ignored, inherited through exec
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint
        else None)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def root_of(proc, timeout: float = 30) -> str:
    """The root URL the stub prints first (bounded wait: a stub that hangs fails the test)."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"taosync stub printed nothing within {timeout} s"
    root = proc.stdout.readline().strip()
    assert root.startswith("http://127.0.0.1:"), root
    return root


def test_stub_command_serves_until_interrupted(tmp_path):
    with stub_process(tmp_path) as proc:
        root = root_of(proc)
        r = httpx.post(root + "/v1/chat/completions", headers=BEARER,
                       json={"model": "gw-main", "messages": []})
        assert r.status_code == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert KEY not in out + err
    assert "gw-main" in err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stub_command_stops_on_a_signal_even_with_sigint_ignored(tmp_path, signum):
    with stub_process(tmp_path, ignore_sigint=True) as proc:
        root_of(proc)  # serving (its handlers are in place before it prints the root)
        proc.send_signal(signum)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"taosync stub ignored {signum.name}")
        assert proc.returncode == 0, err
        assert "Traceback" not in err


def test_a_signal_while_a_request_is_dispatched_still_stops_the_stub(tmp_path):
    """socketserver catches ``Exception`` around dispatching a request: a signal landing
    there must still stop the stub (under load, SIGINT right after a request was lost)."""
    prelude = textwrap.dedent("""
        import os, signal
        from taosync import stub
        dispatch = stub._Server.process_request
        def signalled(self, request, address):
            os.kill(os.getpid(), signal.SIGINT)  # its handler runs inside the dispatch
            dispatch(self, request, address)
        stub._Server.process_request = signalled
    """)
    with stub_process(tmp_path, prelude=prelude) as proc:
        root = root_of(proc)
        with contextlib.suppress(httpx.HTTPError):  # the answer may or may not come
            httpx.get(root + "/", timeout=5)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("a SIGINT during a request's dispatch was swallowed")
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_stub_command_rejects_bad_fault(taosync):
    r = taosync("stub", "--fault", "explode")
    assert r.rc == 2 and "unknown fault" in r.err
