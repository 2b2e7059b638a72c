"""Probe collection, grouping, request shapes, URL rewriting and answer parsing (no network)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET
from taosync.clients.base import ClientEnv, ProbeSpec
from taosync.errors import BadInput
from taosync.fleet.model import Verify
from taosync.schema_build import Fleet
from taosync.fleet.secrets import Secret
from taosync.verify.probes import (
    ANTHROPIC_BETA, ANTHROPIC_VERSION, ProbeGroup, SSEParser, build_request, collect_specs,
    display_url, first_words, group_specs, read_json, read_stream, rewrite, same_model,
)

KEY = Secret("sk-test-0123456789abcdef")
EXAMPLE = YAML(typ="safe").load(EXAMPLE_FLEET.read_text())
ROOT = "https://taotoken.net/api"


def fleet(**changes) -> Fleet:
    data = copy.deepcopy(EXAMPLE)
    data.update(changes)
    return Fleet.model_validate(data)


@pytest.fixture
def env(tmp_path):
    return ClientEnv(home=tmp_path, environ={}, sandboxed=True)


def test_example_fleet_groups_one_probe_per_distinct_request(env):
    groups = collect_specs(fleet(), KEY, env)
    keys = [g.key for g in groups]
    assert len(keys) == len(set(keys))
    by = {(g.protocol, g.model): g for g in groups}
    # aider, Vibe and gptme send their own User-Agent: each is a request of its own
    chats = {tuple(g.clients): g for g in groups
             if (g.protocol, g.model) == ("openai-chat", "claude-sonnet-4-20250514")}
    assert sorted(chats) == [("aider",), ("cline", "continue", "qwen-code", "opencode", "kilo"), ("gptme",),
                             ("mistral-vibe",)]
    chat = chats[("cline", "continue", "qwen-code", "opencode", "kilo")]
    gemini = by[("gemini", "gpt-4o-mini")]
    assert (gemini.clients, gemini.auth) == (["gemini-cli"], "x-goog-api-key")
    assert gemini.url == ROOT + "/v1beta/models/gpt-4o-mini:streamGenerateContent?alt=sse"
    assert chat.url == ROOT + "/v1/chat/completions"
    assert by[("anthropic-messages", "nvidia/deepseek-r1")].url == ROOT + "/v1/messages?beta=true"
    assert by[("anthropic-messages", "nvidia/deepseek-r1")].backend == "cuda"
    assert by[("openai-responses", "intel/llama-7b")].url == ROOT + "/v1/responses"
    assert by[("openai-responses", "intel/llama-7b")].backend == "oneapi"


def test_only_and_route(env):
    only = collect_specs(fleet(), KEY, env, only=["codex"])
    assert {g.protocol for g in only} == {"openai-responses"}
    deep = collect_specs(fleet(), KEY, env, route="deep")
    assert {g.model for g in deep} == {"nvidia/deepseek-r1"}
    assert all(g.routes == ["deep"] for g in deep)
    both = collect_specs(fleet(), KEY, env, only=["claude-code"], route="fast")
    assert [(g.clients, g.model) for g in both] == [(["claude-code"], "gpt-4o-mini")]


@pytest.mark.parametrize("kwargs,message", [
    ({"only": ["codx"]}, "did you mean codex"),
    ({"route": "dep"}, "did you mean deep"),
    ({"only": ["cline"], "route": "deep"}, "no enabled client uses route deep"),
])
def test_bad_selection_is_bad_input(env, kwargs, message):
    with pytest.raises(BadInput, match=message):
        collect_specs(fleet(), KEY, env, **kwargs)


def test_disabled_client_strict_or_skipped(env):
    data = copy.deepcopy(EXAMPLE)
    data["clients"]["codex"] = {"enabled": False}
    f = Fleet.model_validate(data)
    with pytest.raises(BadInput, match="not enabled"):
        collect_specs(f, KEY, env, only=["codex"])
    assert collect_specs(f, KEY, env, only=["codex"], strict=False) == []


def test_group_specs_merges_clients_and_routes():
    a = ProbeSpec("cline", "fast", "m", "openai-chat", "http://g/v1", "http://g/v1/chat/completions",
                  "bearer")
    b = ProbeSpec("continue", "edit", "m", "openai-chat", "http://g/v1",
                  "http://g/v1/chat/completions", "bearer")
    c = ProbeSpec("continue", None, "m", "openai-chat", "http://g/v1",
                  "http://g/v1/chat/completions", "x-api-key")
    groups = group_specs([a, b, c])
    assert len(groups) == 2
    assert groups[0].clients == ["cline", "continue"] and groups[0].routes == ["fast", "edit"]


def _group(protocol, auth="bearer", stream=True, headers=()):
    url = {"anthropic-messages": "http://g/v1/messages?beta=true",
           "openai-responses": "http://g/v1/responses",
           "openai-chat": "http://g/v1/chat/completions"}[protocol]
    base = "http://g" if protocol == "anthropic-messages" else "http://g/v1"
    return ProbeGroup(protocol, url, "m", auth, base, stream, headers, ["c"], ["r"])


def test_claude_code_request_shape():
    req = build_request(_group("anthropic-messages"), KEY, Verify(prompt="Say hi", max_tokens=8))
    assert req.method == "POST" and req.url.endswith("/v1/messages?beta=true")
    assert req.headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert ANTHROPIC_BETA == "claude-code-20250219"
    assert req.headers["anthropic-beta"] == ANTHROPIC_BETA
    assert req.headers["Authorization"] == f"Bearer {KEY.reveal()}"
    assert "x-api-key" not in req.headers
    assert req.body["stream"] is True and req.body["max_tokens"] == 8
    assert req.body["messages"][0]["content"][0]["text"] == "Say hi"


def test_auth_variants():
    both = build_request(_group("anthropic-messages", "both"), KEY, Verify()).headers
    assert both["x-api-key"] == KEY.reveal() and both["Authorization"].startswith("Bearer ")
    xkey = build_request(_group("anthropic-messages", "x-api-key"), KEY, Verify()).headers
    assert "Authorization" not in xkey


def test_codex_and_chat_request_shapes():
    codex = build_request(_group("openai-responses"), KEY, Verify())
    assert codex.headers["Accept"] == "text/event-stream"
    assert codex.body["stream"] is True and codex.body["input"][0]["role"] == "user"
    assert codex.body["max_output_tokens"] >= 16
    chat = build_request(_group("openai-chat", headers=(("X-Team", "a"),)), KEY, Verify())
    assert chat.body["stream"] is True and chat.body["stream_options"] == {"include_usage": True}
    assert chat.body["messages"] == [{"role": "user", "content": "Reply with OK."}]
    assert chat.headers["X-Team"] == "a"
    plain = build_request(_group("openai-chat", stream=False), KEY, Verify())
    assert plain.body["stream"] is False and "stream_options" not in plain.body


def test_rewrite_to_a_stand_in_root():
    root = "http://127.0.0.1:5000"
    assert rewrite(_group("anthropic-messages"), root) == root + "/v1/messages?beta=true"
    assert rewrite(_group("openai-responses"), root) == root + "/v1/responses"
    assert rewrite(_group("openai-chat"), root + "/") == root + "/v1/chat/completions"
    odd = ProbeGroup("openai-chat", "http://other/x/chat/completions", "m", "bearer", "http://g/v1")
    assert rewrite(odd, root) == root + "/v1/chat/completions"


def test_display_url_drops_userinfo():
    assert display_url("https://u:p@gw/v1/x") == "https://gw/v1/x"


def test_sse_parser_rules():
    p = SSEParser()
    out = list(p.feed(b": comment\r\nevent: a\r\ndata: {\"x\"\r\ndata: :1}\r\n\r\nda"))
    assert out == [("a", '{"x"\n:1}')]
    out = list(p.feed(b"ta: [DONE]\n\n")) + list(p.close())
    assert out == [("message", "[DONE]")]
    p = SSEParser()  # a CR at a chunk end may be half of CRLF
    assert list(p.feed(b"data: 1\r")) == []
    assert list(p.feed(b"\n\r\n")) == [("message", "1")]
    p = SSEParser()
    assert list(p.feed(b"data: tail-without-blank-line")) == []
    assert list(p.close()) == [("message", "tail-without-blank-line")]


def test_stream_readers():
    r = read_stream("openai-chat")
    r.event("message", '{"model":"m","choices":[{"delta":{"content":"O"}}]}')
    r.event("message", '{"choices":[{"delta":{"content":"K"},"finish_reason":"stop"}]}')
    r.event("message", '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}')
    r.event("message", "[DONE]")
    c = r.c.check("openai-chat")
    assert (c.problem, c.text, c.tokens_in, c.tokens_out) == (None, "OK", 3, 1)

    r = read_stream("openai-chat")
    r.event("message", '{"id":"x","object":"chat.completion.chunk"}')
    r.event("message", "[DONE]")
    assert r.c.check("openai-chat").problem == "the answer has no choices"

    r = read_stream("anthropic-messages")
    r.event("message_start", '{"type":"message_start","message":{"model":"m","usage":'
                             '{"input_tokens":5}}}')
    r.event("content_block_delta", '{"type":"content_block_delta","delta":{"text":"hi"}}')
    assert r.c.check("anthropic-messages").problem.startswith("the stream ended")
    r.event("error", '{"type":"error","error":{"message":"overloaded"}}')
    assert r.c.check("anthropic-messages").problem == "error"

    r = read_stream("openai-responses")
    r.event("response.created", '{"type":"response.created","response":{"model":"m"}}')
    r.event("response.completed", '{"type":"response.completed","response":{"model":"m",'
                                  '"output":[{"type":"message","content":[{"type":"output_text",'
                                  '"text":"done"}]}],"usage":{"input_tokens":2,"output_tokens":1}}}')
    c = r.c.check("openai-responses")
    assert (c.problem, c.text, c.tokens_out) == (None, "done", 1)


def test_reasoning_only_answer_is_well_formed():
    r = read_stream("openai-chat")
    r.event("m", '{"choices":[{"delta":{"reasoning_content":"thinking"},"finish_reason":"length"}]}')
    c = r.c.check("openai-chat")
    assert c.problem is None and c.reasoning == "thinking"


def test_read_json_shapes():
    assert read_json("openai-chat", {"choices": [{"message": {"content": "hi"},
                                                  "finish_reason": "stop"}]}).problem is None
    assert read_json("openai-chat", {"object": "chat.completion"}).problem == \
        "the answer has no choices"
    assert read_json("openai-chat", {"error": {"message": "x"}}).error == {"message": "x"}
    assert read_json("anthropic-messages", {"type": "message", "content": []}).problem == \
        "the answer has no content"
    assert read_json("openai-responses", {"object": "response", "output": []}).problem == \
        "the answer has no output"
    assert read_json("openai-chat", None).problem == "the answer is not a completion"


@pytest.mark.parametrize("asked,answered,same", [
    ("gpt-4o-mini", "gpt-4o-mini", True), ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", True),
    ("nvidia/deepseek-r1", "deepseek-r1", True), ("m", None, True),
    ("gpt-4o-mini", "claude-3-haiku", False), ("gpt-4o", "gpt-4o-mini", False),
])
def test_same_model(asked, answered, same):
    assert same_model(asked, answered) is same


def test_first_words():
    assert first_words("OK") == "OK"
    assert first_words("one two three four five six seven eight nine") == \
        "one two three four five six seven eight …"
