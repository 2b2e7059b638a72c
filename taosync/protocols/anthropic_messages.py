"""Anthropic Messages: ``POST {root}/v1/messages`` (Claude Code), x-api-key or Bearer auth."""

from __future__ import annotations

import json
import secrets
from typing import Any, Iterator

from taosync.protocols import base

NAME = "anthropic-messages"
TITLE = "Anthropic Messages"
ENDPOINT = "/v1/messages"
SUFFIX = "/messages"
BASE_SUFFIX = ""  # clients append /v1/messages to the root themselves
OUTPUT_WORD = "content"
EMPTY_TEXT_OK = False

VERSION = "2023-06-01"
#: Claude Code's beta flag (client-specific: belongs with the Claude Code client module)
CLAUDE_CODE_BETA = "claude-code-20250219"


def probe(model: str, prompt: str, max_tokens: int, stream: bool
          ) -> tuple[dict[str, str], dict[str, Any]]:
    # Claude Code: Messages, SSE, anthropic-version + the claude-code beta (clients.md §1);
    # x-app, Accept and the content-block form are not in clients.md (unverified here)
    headers = {"anthropic-version": VERSION, "anthropic-beta": CLAUDE_CODE_BETA,
               "x-app": "cli", "Accept": "application/json"}
    body = {"model": model, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
            "stream": stream}
    return headers, body


class Reader(base.Reader):
    def on_event(self, name: str, obj: dict) -> None:
        c, kind = self.c, obj.get("type") or name
        if kind == "message_start":
            msg = obj.get("message") or {}
            c.started = True
            c.model = msg.get("model")
            usage = msg.get("usage") or {}
            c.tokens_in = base.as_int(usage.get("input_tokens"))
            c.tokens_out = base.as_int(usage.get("output_tokens"))
        elif kind == "content_block_start":
            c.has_output = True
            block = obj.get("content_block") or {}
            c.text += block.get("text") or ""
        elif kind == "content_block_delta":
            c.has_output = True
            delta = obj.get("delta") or {}
            c.text += delta.get("text") or ""
            c.reasoning += delta.get("thinking") or ""
        elif kind == "message_delta":
            usage = obj.get("usage") or {}
            if base.as_int(usage.get("output_tokens")) is not None:
                c.tokens_out = usage["output_tokens"]
            if base.as_int(usage.get("input_tokens")) is not None:
                c.tokens_in = usage["input_tokens"]
        elif kind == "message_stop":
            c.finished = True

    def on_body(self, obj: dict) -> None:
        c = self.c
        if obj.get("type") != "message" and "content" not in obj:
            return
        c.started = c.finished = True
        c.model = obj.get("model")
        usage = obj.get("usage") or {}
        c.tokens_in = base.as_int(usage.get("input_tokens"))
        c.tokens_out = base.as_int(usage.get("output_tokens"))
        for block in obj.get("content") or []:
            if isinstance(block, dict):
                c.has_output = True
                c.text += block.get("text") or ""
                c.reasoning += block.get("thinking") or ""


# -- the stand-in's side -------------------------------------------------------------------

def _count_tokens(body: dict) -> dict:
    return {"input_tokens": base.tokens(json.dumps(body.get("messages")))}


SIDE_ENDPOINTS = {"/v1/messages/count_tokens": _count_tokens}
route = base.exact_route(ENDPOINT, SIDE_ENDPOINTS)
requested = base.requested_in_body
with_model = base.url_names_no_model
endpoint_at = base.suffix_at(SUFFIX)
max_tokens = base.max_tokens_in_body
prompt_text = base.prompt_in_body
models_body = base.openai_models_body  # Anthropic's list: its fields are among them
model_ids = base.openai_model_ids
UNAUTHORIZED_STATUS = 401
MODELS_PATH = None
#: Claude Code sends ``ANTHROPIC_AUTH_TOKEN`` as Bearer, ``ANTHROPIC_API_KEY`` as x-api-key,
#: and both when it reads the key from its helper (clients.md, Claude Code)
AUTH = {"bearer": (base.BEARER,), "x-api-key": (base.X_API_KEY,),
        "both": (base.BEARER, base.X_API_KEY)}
KEY_QUERY: tuple[str, ...] = ()


def _message(model: str, prompt_tokens: int, content: list, out_tokens: int,
             stop_reason: str | None) -> dict:
    return {"id": "msg_" + secrets.token_hex(12), "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": out_tokens}}


def answer(model: str, text: str, prompt_tokens: int, mode: str, body: dict) -> dict:
    if mode == "error":
        return {"type": "error", "error": {"type": "api_error", "message": base.UPSTREAM_FAILED}}
    content = [] if mode == "no_choices" else [{"type": "text", "text": text}]
    return _message(model, prompt_tokens, content, base.tokens(text), "end_turn")


def stream(model: str, text: str, prompt_tokens: int, mode: str,
           body: dict) -> Iterator[tuple[str | None, Any]]:
    if mode == "error":
        yield "error", {"type": "error", "error": {"type": "overloaded_error",
                                                   "message": base.UPSTREAM_FAILED}}
        return
    yield "message_start", {"type": "message_start",
                            "message": _message(model, prompt_tokens, [], 1, None)}
    if mode != "no_choices":
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}
        yield "ping", {"type": "ping"}
        for delta in base.delta_words(text):
            yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": delta}}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": base.tokens(text)}}
    yield "message_stop", {"type": "message_stop"}


def error_body(type_: str, message: str, code: str | None = None) -> dict:
    return {"type": "error", "error": {"type": type_, "message": message}}


def unauthorized(shown: str) -> tuple[dict, dict[str, str]]:
    return error_body("authentication_error",
                      f"invalid x-api-key: {shown}" if shown else "missing API key"), {}


def oauth() -> tuple[dict, dict[str, str]]:
    return error_body("authentication_error", "OAuth token has expired. Please obtain a new "
                      "token or refresh your existing token. (invalid_grant)"), base.OAUTH_HEADERS


def unknown_model(model: str) -> dict:
    return error_body("not_found_error", f"model: {model}")


def path_fix(origin: str, other: str, alternative: str) -> str:
    if other.endswith("/v1"):
        root = origin + other[:-3]
        return (f"write `gateway.base_url: {root}` in fleet.yaml (or "
                f"`gateway.anthropic_base_url: {root}` if only the Anthropic surface "
                f"lives there): Claude Code appends /v1/messages itself")
    return (f"this gateway serves Messages at {alternative}, which Claude Code "
            f"cannot reach (it always appends /v1/messages to ANTHROPIC_BASE_URL)")
