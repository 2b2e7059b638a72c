"""The wire-protocol modules: interface, stand-in answers read back by the protocol's own
reader, error bodies the diagnoses recognise, and a new protocol as one module + one line."""

from __future__ import annotations

import json
import sys
import types

import pytest

from taosync.clients.base import ProbeSpec
from taosync.fleet.model import Verify
from taosync.fleet.secrets import Secret
from taosync.protocols import base, registry
from taosync.stub import Stub
from taosync.verify import diagnose as dx
from taosync.verify.probes import Completion, SSEParser, read_json, read_stream
from taosync.verify.runner import run

NAMES = registry.names()
#: the contract (ProtocolPlugin) grew the hooks once found by hasattr and the key headers
INTERFACE = tuple(base.contract())
RAW = "sk-test-PROTOCOLS-0123456789"


def test_registry_lists_the_protocols_each_with_the_whole_interface():
    assert NAMES == ["anthropic-messages", "openai-responses", "openai-chat", "gemini"]
    for name in NAMES:
        module = registry.get(name)
        assert module.NAME == name
        assert [a for a in INTERFACE if not hasattr(module, a)] == []
        if name != "gemini":  # Gemini's endpoint names the model: its own test below
            assert module.ENDPOINT == "/v1" + module.SUFFIX
    with pytest.raises(KeyError):
        registry.get("gemini-generate")


def test_endpoints_map_to_their_protocol():
    assert registry.for_endpoint("/v1/chat/completions")[0].NAME == "openai-chat"
    assert registry.for_endpoint("/v1/responses") == (registry.get("openai-responses"), "answer")
    module, operation = registry.for_endpoint("/v1/messages/count_tokens")
    assert module.NAME == "anthropic-messages" and operation == "/v1/messages/count_tokens"
    assert module.SIDE_ENDPOINTS[operation]({"messages": ["a b c"]}) == {"input_tokens": 3}
    assert registry.for_endpoint("/v1/completions") is None


def _sse(events) -> bytes:
    """(event, data) pairs as the stand-in puts them on the wire."""
    out = ""
    for event, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out += (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
    return out.encode()


def _read_stream(name: str, events) -> Completion:
    reader, parser = read_stream(name), SSEParser()
    for event, data in [*parser.feed(_sse(events)), *parser.close()]:
        reader.event(event, data)
    return reader.c.check(name)


@pytest.mark.parametrize("name", NAMES)
def test_stand_in_answers_read_back_as_well_formed_completions(name):
    module = registry.get(name)
    body = {"stream_options": {"include_usage": True}}
    for c in (read_json(name, module.answer("gw-x", "OK then", 4, "ok", body)),
              _read_stream(name, module.stream("gw-x", "OK then", 4, "ok", body))):
        assert (c.problem, c.text, c.model) == (None, "OK then", "gw-x")
        assert (c.tokens_in, c.tokens_out) == (4, 2)


@pytest.mark.parametrize("name", NAMES)
def test_stand_in_failure_modes_are_what_the_readers_report(name):
    module = registry.get(name)
    for read in (lambda mode: read_json(name, module.answer("m", "OK", 1, mode, {})),
                 lambda mode: _read_stream(name, module.stream("m", "OK", 1, mode, {}))):
        assert read("no_choices").problem == f"the answer has no {module.OUTPUT_WORD}"
        failed = read("error")
        assert failed.problem == "error" and base.UPSTREAM_FAILED in json.dumps(failed.error)


@pytest.mark.parametrize("name", NAMES)
def test_error_bodies_are_recognised_by_the_diagnoses(name):
    module = registry.get(name)
    refused, _ = module.unauthorized(RAW)
    assert RAW in dx.error_message(refused)  # echoed, as some gateways do: verify scrubs it
    body, headers = module.oauth()
    assert dx.is_oauth(body, "", {k.lower(): v for k, v in headers.items()})
    assert dx.names_model(module.unknown_model("gw-gone"), "", "gw-gone")
    assert dx.error_message(module.error_body("rate_limit_error", "slow down", "x")) == "slow down"


def test_probe_shapes_are_the_protocols_own():
    headers, body = registry.get("openai-responses").probe("m", "hi", 4, True)
    assert headers["Accept"] == "text/event-stream" and body["max_output_tokens"] == 16
    headers, body = registry.get("openai-chat").probe("m", "hi", 4, False)
    assert body["messages"] == [{"role": "user", "content": "hi"}] and "stream_options" not in body
    headers, body = registry.get("anthropic-messages").probe("m", "hi", 4, True)
    assert headers["anthropic-version"] == "2023-06-01" and body["max_tokens"] == 4


@pytest.fixture
def echo_protocol(monkeypatch):
    """A made-up protocol: Chat Completions' shapes under another path, registered as a
    later protocol (Gemini's generateContent) would be — one module, one registry line."""
    chat = registry.get("openai-chat")
    module = types.ModuleType("taosync_test_echo_protocol")
    module.__dict__.update({a: getattr(chat, a) for a in INTERFACE})
    module.NAME, module.TITLE = "echo", "Echo Generate"
    module.SUFFIX, module.ENDPOINT = "/echo:generate", "/v1/echo:generate"
    module.route = base.exact_route(module.ENDPOINT, {})
    module.endpoint_at = base.suffix_at(module.SUFFIX)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.MODULES, "echo", module.__name__)
    return module


def test_a_new_protocol_is_probed_served_and_diagnosed_without_other_changes(echo_protocol):
    key = Secret(RAW)
    with Stub(key=RAW, models=["m"]) as s:
        spec = ProbeSpec("some-client", "main", "m", "echo", s.root + "/v1",
                         s.root + "/v1/echo:generate", "bearer")
        (good,) = run([spec], key, Verify(prompt="Say OK", max_tokens=12))
        assert good.ok and good.answer.startswith("OK") and good.tokens_out > 0
        assert s.posts("/v1/echo:generate")[-1].status == 200
        gone = ProbeSpec("some-client", "main", "gw-gone", "echo", s.root + "/v1",
                         s.root + "/v1/echo:generate", "bearer")
        wrong = ProbeSpec("some-client", "main", "m", "echo", s.root,
                          s.root + "/echo:generate", "bearer")
        missing, no_v1 = run([gone, wrong], key, Verify(retries=0))
    assert missing.diagnosis.code == "model_not_found" and "(m)" in missing.diagnosis.fix
    assert no_v1.diagnosis.code == "path" and "/v1 is missing" in no_v1.diagnosis.cause


def test_a_new_protocol_brings_its_own_key_header(echo_protocol):
    """How a request carries the key is the protocol's: a protocol registered at run time
    with its own header is sent the key there by verify, and the stand-in takes it from
    there (and keeps it out of the record) — no edit to verify/ or stub/."""
    echo_protocol.AUTH = {"echo-key": (base.KeyHeader("X-Echo-Key"),)}
    key = Secret(RAW)
    with Stub(key=RAW, models=["m"]) as s:
        spec = ProbeSpec("some-client", "main", "m", "echo", s.root + "/v1",
                         s.root + "/v1/echo:generate", "echo-key")
        (good,) = run([spec], key, Verify(prompt="Say OK", max_tokens=12))
        seen = s.posts("/v1/echo:generate")[-1]
    assert good.ok, good.diagnosis
    assert (seen.auth, seen.status) == ("ok", 200)
    assert "x-echo-key" not in seen.headers and "authorization" not in seen.headers


def test_a_protocol_module_lacking_a_contract_name_is_refused_when_loaded(monkeypatch):
    module = types.ModuleType("taosync_test_half_protocol")
    module.NAME = "half"
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.MODULES, "half", module.__name__)
    with pytest.raises(TypeError, match="lacks TITLE, ENDPOINT"):
        registry.get("half")


def test_an_auth_scheme_the_protocol_does_not_know_is_bad_input():
    from taosync.errors import BadInput
    from taosync.verify.probes import ProbeGroup, build_request

    group = ProbeGroup("openai-chat", "http://127.0.0.1:9/v1/chat/completions", "m",
                       "x-goog-api-key", "http://127.0.0.1:9/v1")
    with pytest.raises(BadInput, match="sends no key as 'x-goog-api-key' .it knows bearer"):
        build_request(group, Secret(RAW), Verify())


# -- Gemini: the model in the path, Google's error shapes --------------------------------------

GEMINI_PATH = "/v1beta/models/gw-x:streamGenerateContent"


def test_gemini_routes_by_the_model_in_its_path():
    gemini = registry.get("gemini")
    assert registry.for_endpoint(GEMINI_PATH) == (gemini, "answer")
    assert gemini.requested({}, GEMINI_PATH) == ("gw-x", True)
    assert gemini.requested({}, "/v1beta/models/gw-x:generateContent") == ("gw-x", False)
    assert registry.for_endpoint("/v1beta/models/gw-x:countTokens") == (gemini, "countTokens")
    assert registry.for_endpoint("/v1/v1beta/models/gw-x:generateContent") is None
    assert gemini.url("https://gw/", "gw-x") == "https://gw" + GEMINI_PATH + "?alt=sse"
    headers, body = gemini.probe("gw-x", "hi", 4, True)
    assert body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                    "generationConfig": {"maxOutputTokens": 4}}


def test_gemini_key_refusal_is_an_auth_diagnosis_whatever_the_status():
    body, _ = registry.get("gemini").unauthorized(RAW)
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    assert dx.key_refused(body, "")
    assert not dx.key_refused(registry.get("gemini").unknown_model("m"), "")


def test_the_stand_in_serves_gemini_and_verify_diagnoses_its_failures():
    from taosync.protocols.gemini import url

    key = Secret(RAW)
    with Stub(key=RAW, models=["m"], prefix="/api") as s:
        root = s.root

        def spec(model, base=root):
            return ProbeSpec("gemini-cli", "main", model, "gemini", base, url(base, model),
                             "x-goog-api-key")

        (good,) = run([spec("m")], key, Verify(prompt="Say OK", max_tokens=3))
        assert good.ok and good.answer == "OK — m" and good.tokens_out == 3
        seen = s.posts(":streamGenerateContent")[-1]
        assert (seen.auth, seen.query) == ("ok", "alt=sse")
        assert "x-goog-api-key" not in seen.headers
        gone, doubled = run([spec("gw-gone"), spec("m", s.root + "/v1")], key,
                            Verify(retries=0))
        (bad_key,) = run([spec("m")], Secret("sk-wrong-0123456789abc"), Verify(retries=0))
        # Google's ?key= query parameter is accepted and kept out of the record
        import httpx

        answer = httpx.post(s.root + "/v1beta/models/m:generateContent?key=" + RAW,
                            json={"contents": [{"parts": [{"text": "hi"}]}]})
        assert answer.status_code == 200 and s.requests[-1].query == ""
        assert answer.json()["candidates"][0]["finishReason"] == "STOP"
        listed = httpx.get(s.root + "/v1beta/models", headers={"x-goog-api-key": RAW})
        assert listed.json()["models"][0]["name"] == "models/m"
    assert gone.diagnosis.code == "model_not_found" and "gw-gone" in gone.diagnosis.cause
    assert "(m)" in gone.diagnosis.fix  # from the gateway's own Gemini model list
    assert doubled.diagnosis.code == "path"
    assert "/v1 is doubled" in doubled.diagnosis.cause
    assert f"gateway.gemini_base_url: {root}`" in doubled.diagnosis.fix
    assert bad_key.diagnosis.code == "auth" and "HTTP 400" in bad_key.diagnosis.cause
    assert "sk-wrong" not in bad_key.diagnosis.cause
