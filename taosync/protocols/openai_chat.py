"""OpenAI Chat Completions: ``POST {root}/v1/chat/completions`` (Cline, Continue), Bearer."""

from __future__ import annotations

import secrets
import time
from typing import Any, Iterator

from taosync.protocols import base

NAME = "openai-chat"
TITLE = "OpenAI Chat Completions"
ENDPOINT = "/v1/chat/completions"
SUFFIX = "/chat/completions"
BASE_SUFFIX = "/v1"
SIDE_ENDPOINTS: dict = {}
OUTPUT_WORD = "choices"
EMPTY_TEXT_OK = True  # a choice with finish_reason and empty content is still well formed

route = base.exact_route(ENDPOINT, SIDE_ENDPOINTS)
requested = base.requested_in_body
with_model = base.url_names_no_model
error_body = base.openai_error_body
unauthorized = base.openai_unauthorized
oauth = base.openai_oauth
unknown_model = base.openai_unknown_model
path_fix = base.openai_path_fix
endpoint_at = base.suffix_at(SUFFIX)
max_tokens = base.max_tokens_in_body
prompt_text = base.prompt_in_body
models_body = base.openai_models_body
model_ids = base.openai_model_ids
UNAUTHORIZED_STATUS = 401
MODELS_PATH = None
AUTH = {"bearer": (base.BEARER,)}
KEY_QUERY: tuple[str, ...] = ()


def probe(model: str, prompt: str, max_tokens: int, stream: bool
          ) -> tuple[dict[str, str], dict[str, Any]]:
    # Cline / Continue: Chat Completions, stream true (clients.md §3, §4); Accept and
    # stream_options.include_usage are not in clients.md (unverified here)
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": max_tokens, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return {"Accept": "application/json"}, body


class Reader(base.Reader):
    def done(self) -> None:
        if self.c.has_output:
            self.c.finished = True

    def on_event(self, name: str, obj: dict) -> None:
        c = self.c
        c.started = True
        c.model = obj.get("model") or c.model
        usage = obj.get("usage") or {}
        if base.as_int(usage.get("prompt_tokens")) is not None:
            c.tokens_in = usage["prompt_tokens"]
        if base.as_int(usage.get("completion_tokens")) is not None:
            c.tokens_out = usage["completion_tokens"]
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            c.has_output = True
            part = choice.get("delta") or choice.get("message") or {}
            c.text += part.get("content") or ""
            c.reasoning += part.get("reasoning_content") or part.get("reasoning") or ""
            if choice.get("finish_reason"):
                c.finished = True

    def on_body(self, obj: dict) -> None:
        if "choices" not in obj and obj.get("object") not in ("chat.completion",):
            return
        self.on_event("", obj)
        self.c.finished = self.c.finished or self.c.has_output


# -- the stand-in's side -------------------------------------------------------------------

def _parts(model: str, text: str, prompt_tokens: int) -> tuple[dict, dict]:
    out_tokens = base.tokens(text)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": out_tokens,
             "total_tokens": prompt_tokens + out_tokens}
    return {"id": "chatcmpl-" + secrets.token_hex(12), "created": int(time.time()),
            "model": model}, usage


def answer(model: str, text: str, prompt_tokens: int, mode: str, body: dict) -> dict:
    if mode == "error":
        return base.openai_error_in_200()
    common, usage = _parts(model, text, prompt_tokens)
    data = {**common, "object": "chat.completion", "usage": usage}
    if mode != "no_choices":
        data["choices"] = [{"index": 0, "finish_reason": "stop", "logprobs": None,
                            "message": {"role": "assistant", "content": text}}]
    return data


def stream(model: str, text: str, prompt_tokens: int, mode: str,
           body: dict) -> Iterator[tuple[str | None, Any]]:
    common, usage = _parts(model, text, prompt_tokens)
    chunk = {**common, "object": "chat.completion.chunk"}

    def choice(delta: dict, finish: str | None = None) -> tuple[None, dict]:
        return None, {**chunk, "choices": [{"index": 0, "delta": delta,
                                            "finish_reason": finish}]}

    if mode == "error":
        yield None, base.openai_error_in_200()
    elif mode == "no_choices":
        yield None, chunk
        yield None, chunk
    else:
        yield choice({"role": "assistant", "content": ""})
        for delta in base.delta_words(text):
            yield choice({"content": delta})
        yield choice({}, "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            yield None, {**chunk, "choices": [], "usage": usage}
    yield None, "[DONE]"
