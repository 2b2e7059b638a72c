"""The runner against the real stand-in: shapes on the wire, mixes, bounds, concurrency."""

from __future__ import annotations

import time

from taosync.clients.base import ProbeSpec
from taosync.fleet.model import Verify
from taosync.fleet.secrets import Secret
from taosync.stub import Stub
from taosync.verify.runner import run

RAW = "sk-test-RUNNER-0123456789abcdef"
KEY = Secret(RAW)


def chat(root: str, model: str, client: str = "cline", route: str | None = "main") -> ProbeSpec:
    return ProbeSpec(client, route, model, "openai-chat", root + "/v1",
                     root + "/v1/chat/completions", "bearer")


def claude(root: str, model: str, auth: str = "bearer") -> ProbeSpec:
    return ProbeSpec("claude-code", "main", model, "anthropic-messages", root,
                     root + "/v1/messages?beta=true", auth)


def codex(root: str, model: str) -> ProbeSpec:
    return ProbeSpec("codex", "main", model, "openai-responses", root + "/v1",
                     root + "/v1/responses", "bearer")


def test_requests_on_the_wire_are_shaped_like_the_clients():
    with Stub(key=RAW, models=["m"]) as s:
        results = run([claude(s.root, "m"), codex(s.root, "m"), chat(s.root, "m")], KEY,
                      Verify(prompt="Say OK", max_tokens=12))
        assert all(r.ok for r in results)
        (msg,) = s.posts("/v1/messages")
        assert msg.query == "beta=true"
        assert msg.headers["anthropic-version"] == "2023-06-01"
        assert msg.headers["anthropic-beta"] == "claude-code-20250219"
        assert msg.auth == "ok" and msg.body["stream"] is True and msg.body["max_tokens"] == 12
        (resp,) = s.posts("/v1/responses")
        assert resp.headers["accept"] == "text/event-stream" and resp.body["stream"] is True
        (comp,) = s.posts("/v1/chat/completions")
        assert comp.body["stream"] is True and comp.body["messages"][0]["content"] == "Say OK"


def test_result_fields():
    with Stub(key=RAW, models=["m"]) as s:
        (r,) = run([claude(s.root, "m", auth="both")], KEY, Verify())
    assert r.ok and r.status == 200 and r.diagnosis is None
    assert r.clients == ["claude-code"] and r.route == "main" and r.model == "m"
    assert r.protocol == "anthropic-messages" and r.url.endswith("/v1/messages?beta=true")
    assert 0 < r.ttfb <= r.latency
    assert r.tokens_in > 0 and r.tokens_out > 0
    assert r.answer.startswith("OK")
    d = r.to_dict()
    assert d["tokens"] == {"in": r.tokens_in, "out": r.tokens_out}
    assert d["latency_ms"] >= d["ttfb_ms"] >= 0


def test_a_mix_of_passing_and_failing_backends_in_one_run():
    with Stub(key=RAW, models=["good", "slowish", "gone-soon", "empty"],
              faults=["no_choices@empty", "delay=0.1@slowish"]) as s:
        specs = [chat(s.root, "good"), claude(s.root, "slowish"), codex(s.root, "missing"),
                 chat(s.root, "empty"), chat(s.root + "/v1", "good", client="continue")]
        results = run(specs, KEY, Verify(timeout=3, retries=0))
    assert [r.ok for r in results] == [True, True, False, False, False]
    assert [r.diagnosis.code for r in results if not r.ok] == \
        ["model_not_found", "no_choices", "path"]
    assert [r.model for r in results] == ["good", "slowish", "missing", "empty", "good"]


def test_same_request_from_two_clients_is_probed_once():
    with Stub(key=RAW, models=["m"]) as s:
        results = run([chat(s.root, "m", "cline", "fast"), chat(s.root, "m", "continue", "edit")],
                      KEY, Verify())
        assert len(results) == 1 and len(s.posts()) == 1
    assert results[0].clients == ["cline", "continue"] and results[0].route == "fast, edit"


def test_retries_are_bounded_and_then_succeed():
    with Stub(key=RAW, models=["m"], faults=["rate_limited=2@m"]) as s:
        (r,) = run([chat(s.root, "m")], KEY, Verify(retries=2), backoff=0.01)
        assert r.ok and r.attempts == 3 and len(s.posts()) == 3
    with Stub(key=RAW, models=["m"], faults=["server_error=2@m"]) as s:
        (r,) = run([chat(s.root, "m")], KEY, Verify(retries=1), backoff=0.01)
        assert not r.ok and r.attempts == 2 and len(s.posts()) == 2
        assert r.diagnosis.code == "server_error"
    with Stub(key=RAW, models=["m"], faults=["server_error"]) as s:
        (r,) = run([chat(s.root, "m")], KEY, Verify(retries=0))
        assert r.attempts == 1 and len(s.posts()) == 1


def test_client_errors_are_not_retried():
    with Stub(key=RAW, models=["m"], faults=["unauthorized"]) as s:
        (r,) = run([chat(s.root, "m")], KEY, Verify(retries=3), backoff=0.01)
        assert r.attempts == 1 and len(s.posts()) == 1


def test_backoff_grows_between_retries():
    with Stub(key=RAW, models=["m"], faults=["status=502"]) as s:
        t = time.perf_counter()
        (r,) = run([chat(s.root, "m")], KEY, Verify(retries=2), backoff=0.1)
        elapsed = time.perf_counter() - t
    # 0.1 then 0.2 seconds (±25% jitter) between three attempts
    assert r.attempts == 3 and 0.2 < elapsed < 1.5


def test_timeouts_are_bounded_per_probe():
    with Stub(key=RAW, models=["fast", "stuck"], faults=["delay=10@stuck"]) as s:
        t = time.perf_counter()
        fast, stuck = run([chat(s.root, "fast"), chat(s.root, "stuck")], KEY,
                          Verify(timeout=0.4, retries=3))
        elapsed = time.perf_counter() - t
    assert fast.ok and not stuck.ok and stuck.diagnosis.code == "timeout"
    assert elapsed < 1.5  # one timeout, not retries × timeout, and not the 10 s delay


def test_concurrency_total_close_to_the_slowest_probe():
    n, delay = 10, 0.4
    models = [f"m{i}" for i in range(n)]
    with Stub(key=RAW, models=models, faults=[f"delay={delay}"]) as s:
        t = time.perf_counter()
        results = run([chat(s.root, m) for m in models], KEY, Verify(timeout=5))
        elapsed = time.perf_counter() - t
    assert all(r.ok for r in results)
    assert all(r.latency >= delay for r in results)
    assert elapsed < delay * 3  # sequential would be n × delay = 4 s


def test_base_override_sends_every_probe_to_the_stand_in():
    with Stub(key=RAW, models=["m"]) as s:
        real = "https://gateway.example.invalid/api"
        results = run([claude(real, "m"), codex(real, "m"), chat(real, "m")], KEY, Verify(),
                      base_override=s.root)
        assert all(r.ok for r in results)
        assert {p.path for p in s.posts()} == {"/v1/messages", "/v1/responses",
                                               "/v1/chat/completions"}
        root = s.root
    assert results[0].url == root + "/v1/messages?beta=true"
    assert results[0].configured_url == real + "/v1/messages?beta=true"


def test_non_stream_probes():
    with Stub(key=RAW, models=["m"]) as s:
        specs = [ProbeSpec(**{**sp.__dict__, "stream": False})
                 for sp in (claude(s.root, "m"), codex(s.root, "m"), chat(s.root, "m"))]
        results = run(specs, KEY, Verify())
    assert all(r.ok and r.answer.startswith("OK") for r in results)


def test_url_with_userinfo_is_not_shown():
    with Stub(key=RAW, models=["m"]) as s:
        root = s.root.replace("http://", f"http://user:{RAW}@")
        (r,) = run([chat(root, "m")], KEY, Verify())
    assert RAW not in repr(r.to_dict()) and "user" not in r.url


def test_empty_input():
    assert run([], KEY, Verify()) == []
