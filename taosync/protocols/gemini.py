"""Gemini ``generateContent``: ``POST {root}/v1beta/models/{model}:streamGenerateContent?alt=sse``
(Gemini CLI 0.61.0, clients.md §5), key in ``x-goog-api-key``.

Unlike the other protocols the model is named in the path, not the body, and the stream is
chosen by the method (``:streamGenerateContent``, SSE with ``alt=sse``) rather than a body
field; there is no ``[DONE]``: the last chunk carries ``finishReason`` and the usage.
Errors are Google's shape, ``{"error": {"code", "message", "status"}}``; a bad key is a
400 ``INVALID_ARGUMENT`` with reason ``API_KEY_INVALID``.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any, Iterator

from taosync.protocols import base

NAME = "gemini"
TITLE = "Gemini generateContent"
#: the path a client appends to its base URL, with the model in it (``{model}``)
SUFFIX = "/v1beta/models/{model}:streamGenerateContent"
ENDPOINT = SUFFIX  # the base URL is the root: nothing between the root and the endpoint
BASE_SUFFIX = ""
QUERY = "?alt=sse"
OUTPUT_WORD = "candidates"
EMPTY_TEXT_OK = False
#: a refused key: Google's API answers 400 INVALID_ARGUMENT (reason API_KEY_INVALID)
UNAUTHORIZED_STATUS = 400
#: Gemini CLI sends the key in ``x-goog-api-key``; Google's API also takes ``?key=``
AUTH = {"x-goog-api-key": (base.X_GOOG_API_KEY,)}
KEY_QUERY = ("key",)

_PATH = re.compile(r"(?:^|/)v1beta/models/([^/:]+):(generateContent|streamGenerateContent|"
                   r"countTokens)$")


def url(base_url: str, model: str) -> str:
    """The URL a Gemini client POSTs to for ``model`` (streaming, SSE)."""
    return base_url.rstrip("/") + SUFFIX.format(model=model) + QUERY


def with_model(url_: str, model: str, other: str) -> str:
    """The URL a Gemini client POSTs to for ``other``, given the one for ``model``: the
    model is a segment of the path (``…/models/{model}:streamGenerateContent``), so a
    probe of another candidate that kept ``model``'s URL would ask ``model`` again."""
    from urllib.parse import urlsplit

    parts = urlsplit(url_)
    segment = f"/models/{model}:"
    at = parts.path.rfind(segment)
    if at < 0:  # not a generateContent URL: nothing names the model
        return url_
    path = parts.path[:at] + f"/models/{other}:" + parts.path[at + len(segment):]
    return parts._replace(path=path).geturl()


def endpoint_at(path: str) -> int | None:
    """Where the Gemini endpoint starts in ``path`` (the base URL's path ends there), or
    None when ``path`` is not one (what the diagnoses split a failed URL with)."""
    match = re.search(r"/v1beta/models/[^/:]+:(?:stream)?[gG]enerateContent$", path)
    return match.start() if match else None


def route(path: str) -> str | None:
    match = _PATH.search(path)
    if match is None or not path.startswith("/v1beta/"):
        return None
    return "countTokens" if match.group(2) == "countTokens" else "answer"


def requested(body: dict, path: str) -> tuple[str | None, bool]:
    """(model, stream?) from the path: ``models/{model}:streamGenerateContent``."""
    match = _PATH.search(path)
    if match is None:
        return None, False
    return match.group(1), match.group(2) == "streamGenerateContent"


def max_tokens(body: dict) -> Any:
    """The answer's length limit (``generationConfig.maxOutputTokens``)."""
    config = body.get("generationConfig")
    return config.get("maxOutputTokens") if isinstance(config, dict) else None


def prompt_text(body: dict) -> Any:
    return body.get("contents") or ""


def probe(model: str, prompt: str, max_tokens: int, stream: bool
          ) -> tuple[dict[str, str], dict[str, Any]]:
    # Gemini CLI: contents with role/parts, generationConfig (clients.md §5); the stream is
    # in the URL, not the body
    body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": {"maxOutputTokens": max_tokens}}
    return {"Accept": "text/event-stream" if stream else "application/json"}, body


class Reader(base.Reader):
    def on_event(self, name: str, obj: dict) -> None:
        c = self.c
        if not any(k in obj for k in ("candidates", "usageMetadata", "modelVersion")):
            return
        c.started = True
        c.model = obj.get("modelVersion") or c.model
        usage = obj.get("usageMetadata") or {}
        if base.as_int(usage.get("promptTokenCount")) is not None:
            c.tokens_in = usage["promptTokenCount"]
        if base.as_int(usage.get("candidatesTokenCount")) is not None:
            c.tokens_out = usage["candidatesTokenCount"]
        for candidate in obj.get("candidates") or []:
            if not isinstance(candidate, dict):
                continue
            c.has_output = True
            for part in (candidate.get("content") or {}).get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    if part.get("thought"):
                        c.reasoning += part["text"]
                    else:
                        c.text += part["text"]
            if candidate.get("finishReason"):
                c.finished = True

    def on_body(self, obj: dict) -> None:
        self.on_event("", obj)


# -- the stand-in's side -------------------------------------------------------------------

#: where the stand-in (and Google's API) lists the models, in Gemini's shape
MODELS_PATH = "/v1beta/models"


def models_body(ids: list[str]) -> dict:
    return {"models": [{"name": f"models/{m}", "displayName": m,
                        "supportedGenerationMethods": ["generateContent", "countTokens"]}
                       for m in ids]}


def model_ids(data: object) -> list[str] | None:
    """The ids in a Gemini model list (``models/`` dropped), None when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        return None
    return [m["name"].removeprefix("models/") for m in data["models"]
            if isinstance(m, dict) and isinstance(m.get("name"), str)]


def _count_tokens(body: dict) -> dict:
    return {"totalTokens": base.tokens(json.dumps(body.get("contents") or ""))}


SIDE_ENDPOINTS = {"countTokens": _count_tokens}


def _chunk(model: str, parts: list | None, finish: str | None = None,
           usage: dict | None = None) -> dict:
    out: dict[str, Any] = {}
    if parts is not None:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        out["candidates"] = [candidate]
    if usage is not None:
        out["usageMetadata"] = usage
    out["modelVersion"] = model
    out["responseId"] = secrets.token_hex(8)
    return out


def _usage(text: str, prompt_tokens: int) -> dict:
    out_tokens = base.tokens(text)
    return {"promptTokenCount": prompt_tokens, "candidatesTokenCount": out_tokens,
            "totalTokenCount": prompt_tokens + out_tokens}


def _upstream_failed() -> dict:
    return error_body("api_error", base.UPSTREAM_FAILED)


def answer(model: str, text: str, prompt_tokens: int, mode: str, body: dict) -> dict:
    if mode == "error":
        return _upstream_failed()
    usage = _usage(text, prompt_tokens)
    if mode == "no_choices":
        return _chunk(model, None, usage=usage)
    return _chunk(model, [{"text": text}], "STOP", usage)


def stream(model: str, text: str, prompt_tokens: int, mode: str,
           body: dict) -> Iterator[tuple[str | None, Any]]:
    if mode == "error":
        yield None, _upstream_failed()
        return
    usage = _usage(text, prompt_tokens)
    if mode == "no_choices":
        yield None, _chunk(model, None, usage=usage)
        return
    deltas = base.delta_words(text) or [""]
    for delta in deltas[:-1]:
        yield None, _chunk(model, [{"text": delta}])
    yield None, _chunk(model, [{"text": deltas[-1]}], "STOP", usage)


#: taosync's error types → (HTTP code, Google status) in Google's error body
_STATUS = {"invalid_request_error": (400, "INVALID_ARGUMENT"),
           "authentication_error": (401, "UNAUTHENTICATED"),
           "permission_error": (403, "PERMISSION_DENIED"),
           "not_found_error": (404, "NOT_FOUND"),
           "rate_limit_error": (429, "RESOURCE_EXHAUSTED"),
           "api_error": (500, "INTERNAL")}


def error_body(type_: str, message: str, code: str | None = None) -> dict:
    status, word = _STATUS.get(type_, (500, "UNKNOWN"))
    error: dict[str, Any] = {"code": status, "message": message, "status": word}
    if code:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": code.upper(), "domain": "googleapis.com"}]
    return {"error": error}


def unauthorized(shown: str) -> tuple[dict, dict[str, str]]:
    message = (f"API key not valid. Please pass a valid API key. ({shown})" if shown else
               "Method doesn't allow unregistered callers (callers without established "
               "identity). Please use API Key or other form of API consumer identity to "
               "call this API.")
    return error_body("invalid_request_error", message, "API_KEY_INVALID"), {}


def oauth() -> tuple[dict, dict[str, str]]:
    return error_body("authentication_error", "Request had invalid authentication "
                      "credentials. Expected OAuth 2 access token: the OAuth token has "
                      "expired (invalid_grant)."), base.OAUTH_HEADERS


def unknown_model(model: str) -> dict:
    return error_body("not_found_error", f"models/{model} is not found for API version "
                      f"v1beta, or is not supported for generateContent.")


def path_fix(origin: str, other: str, alternative: str) -> str:
    if not other.endswith("/v1"):
        return (f"write `gateway.gemini_base_url: {origin + other}` in fleet.yaml (the root, "
                f"without /v1): Gemini CLI appends /v1beta/models/… itself")
    return (f"write `gateway.gemini_base_url: {origin + other}` in fleet.yaml: this "
            f"gateway's Gemini surface is not where gemini_base_url points")
