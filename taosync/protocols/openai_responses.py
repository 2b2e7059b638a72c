"""OpenAI Responses: ``POST {root}/v1/responses`` (Codex), Bearer auth, SSE."""

from __future__ import annotations

import secrets
import time
from typing import Any, Iterator

from taosync.protocols import base

NAME = "openai-responses"
TITLE = "OpenAI Responses"
ENDPOINT = "/v1/responses"
SUFFIX = "/responses"
BASE_SUFFIX = "/v1"
SIDE_ENDPOINTS: dict = {}
OUTPUT_WORD = "output"
EMPTY_TEXT_OK = False

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
    # Codex: Responses only, SSE with Accept: text/event-stream (clients.md §2); the body
    # fields follow codex-rs codex-api ResponsesApiRequest (instructions, tools,
    # tool_choice "auto", parallel_tool_calls, store false, include), except
    # max_output_tokens, which Codex does not send: taosync caps the probe's cost
    headers = {"Accept": "text/event-stream" if stream else "application/json"}
    body = {"model": model, "instructions": "You are a coding agent.",
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": prompt}]}],
            "tools": [], "tool_choice": "auto", "parallel_tool_calls": False,
            "store": False, "stream": stream, "include": [],
            "max_output_tokens": max(16, max_tokens)}
    return headers, body


class Reader(base.Reader):
    def on_event(self, name: str, obj: dict) -> None:
        c, kind = self.c, obj.get("type") or name
        if kind in ("response.created", "response.in_progress"):
            c.started = True
            c.model = (obj.get("response") or {}).get("model") or c.model
        elif kind == "response.output_text.delta":
            c.has_output = True
            c.text += obj.get("delta") or ""
        elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            c.has_output = True
            c.reasoning += obj.get("delta") or ""
        elif kind == "response.output_item.added":
            c.has_output = True
        elif kind in ("response.completed", "response.incomplete"):
            self._response(obj.get("response") or {})
            c.finished = True
        elif kind == "response.failed":
            resp = obj.get("response") or {}
            c.error = resp.get("error") or {"message": "response.failed"}

    def on_body(self, obj: dict) -> None:
        if obj.get("object") != "response" and "output" not in obj:
            return
        self._response(obj)
        self.c.finished = True

    def _response(self, resp: dict) -> None:
        c = self.c
        c.started = True
        c.model = resp.get("model") or c.model
        usage = resp.get("usage") or {}
        c.tokens_in = base.as_int(usage.get("input_tokens"))
        c.tokens_out = base.as_int(usage.get("output_tokens"))
        text = ""
        for item in resp.get("output") or []:
            if not isinstance(item, dict):
                continue
            c.has_output = True
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text += part.get("text") or ""
            for part in item.get("summary") or []:
                if isinstance(part, dict):
                    c.reasoning += part.get("text") or ""
        if text and not c.text:
            c.text = text


# -- the stand-in's side -------------------------------------------------------------------

def _parts(model: str, text: str, prompt_tokens: int) -> tuple[dict, dict, dict]:
    """(the response's common fields, its message item, its usage)."""
    out_tokens = base.tokens(text)
    usage = {"input_tokens": prompt_tokens, "output_tokens": out_tokens,
             "total_tokens": prompt_tokens + out_tokens}
    item = {"id": "msg_" + secrets.token_hex(12), "type": "message", "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    common = {"id": "resp_" + secrets.token_hex(12), "object": "response",
              "created_at": int(time.time()), "model": model}
    return common, item, usage


def answer(model: str, text: str, prompt_tokens: int, mode: str, body: dict) -> dict:
    if mode == "error":
        return base.openai_error_in_200()
    common, item, usage = _parts(model, text, prompt_tokens)
    return {**common, "status": "completed",
            "output": [] if mode == "no_choices" else [item], "usage": usage}


def stream(model: str, text: str, prompt_tokens: int, mode: str,
           body: dict) -> Iterator[tuple[str | None, Any]]:
    common, item, usage = _parts(model, text, prompt_tokens)
    item_id = item["id"]
    seq = iter(range(1_000))

    def event(kind: str, **fields: Any) -> tuple[str, dict]:
        return kind, {"type": kind, "sequence_number": next(seq), **fields}

    pending = {**common, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=pending)
    if mode == "error":
        yield event("response.failed", response={
            **common, "status": "failed", "output": [], "usage": None,
            "error": {"code": "server_error", "message": base.UPSTREAM_FAILED}})
        return
    yield event("response.in_progress", response=pending)
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    if mode != "no_choices":
        yield event("response.output_item.added", output_index=0,
                    item={**item, "status": "in_progress", "content": []})
        yield event("response.content_part.added", **where,
                    part={"type": "output_text", "text": "", "annotations": []})
        for delta in base.delta_words(text):
            yield event("response.output_text.delta", **where, delta=delta)
        yield event("response.output_text.done", **where, text=text)
        yield event("response.content_part.done", **where, part=item["content"][0])
        yield event("response.output_item.done", output_index=0, item=item)
    yield event("response.completed", response={
        **common, "status": "completed", "output": [] if mode == "no_choices" else [item],
        "usage": usage})
