"""What every protocol module provides, and the parts they share.

A protocol module (one per wire protocol, see :mod:`taosync.protocols.registry`) holds:

``NAME``, ``TITLE``
    its registry name and the name people know it by.
``ENDPOINT``, ``SUFFIX``, ``BASE_SUFFIX``, ``SIDE_ENDPOINTS``
    the path on a gateway's root, the path a client appends to its base URL, what that
    base URL adds to the root (``/v1`` or nothing), and other paths the stand-in serves
    (path → function(body) → JSON answer).
``route(path)``, ``requested(body, path)``
    which operation the stand-in runs for a gateway path (``"answer"``, a side endpoint, or
    None), and the (model, stream?) a request asks for — fixed paths and a body naming the
    model for the protocols here (:func:`exact_route`, :func:`requested_in_body`); a
    protocol naming the model in its path (Gemini's ``…/models/{model}:generateContent``)
    brings its own.
``with_model(url, model, other)``
    the URL a client POSTs to for ``other`` given the one it POSTs to for ``model``: the
    same URL for the protocols naming the model in the body (:func:`url_names_no_model`);
    Gemini's names it in the path. A route's other candidates are probed with it.
``OUTPUT_WORD``, ``EMPTY_TEXT_OK``
    what a completion's output is called (content, output, choices), and whether an output
    without text is still a well-formed completion.
``probe(model, prompt, max_tokens, stream)``
    (headers, body) of the request its clients send, without auth and client headers.
``Reader``
    fills a completion from SSE events (:meth:`Reader.event`) or a JSON body (:meth:`Reader.body`).
``answer(model, text, prompt_tokens, mode, body)`` / ``stream(…)``
    the stand-in's answer: a JSON body, or (event, data) pairs; ``mode`` is ``ok``,
    ``no_choices`` or ``error``.
``error_body(type_, message, code)``, ``unauthorized(shown)``, ``oauth()``, ``unknown_model(model)``
    what a gateway of that shape sends when it refuses.
``path_fix(origin, other, alternative)``
    how to fix a base URL whose ``/v1`` is doubled, missing or extra.

Standard library only.
"""

from __future__ import annotations

import json
from typing import Any, Callable

#: a message a gateway sends in 200 answers when the provider behind it failed
UPSTREAM_FAILED = "upstream provider returned 502"

OAUTH_HEADERS = {"WWW-Authenticate": 'Bearer error="invalid_token", '
                                     'error_description="The access token expired"'}


def words(text: str) -> list[str]:
    return text.split()


def tokens(text: str) -> int:
    """A stand-in's token count: words, at least one."""
    return max(1, len(text.split()))


def delta_words(text: str) -> list[str]:
    """``text`` as the deltas a stream sends (a word each, spaces in front)."""
    return [(" " if i else "") + word for i, word in enumerate(words(text))]


def exact_route(endpoint: str, side: dict) -> Callable[[str], str | None]:
    """``route(path)`` for a protocol served at fixed paths: ``"answer"`` at ``endpoint``,
    the path itself at one of the ``side`` endpoints, else None."""
    def route(path: str) -> str | None:
        if path == endpoint:
            return "answer"
        return path if path in side else None
    return route


def url_names_no_model(url: str, model: str, other: str) -> str:
    """``with_model`` of a protocol whose body names the model: the URL stays as it is."""
    return url


def requested_in_body(body: dict, path: str) -> tuple[str | None, bool]:
    """(model, stream?) of a request whose JSON body names both."""
    model = body.get("model")
    return (model if isinstance(model, str) else None), bool(body.get("stream"))


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Reader:
    """Reads one answer into ``c`` (a completion: text, reasoning, model, tokens, started,
    finished, has_output, error). Subclasses read their protocol's events and bodies."""

    def __init__(self, completion: Any) -> None:
        self.c = completion

    def event(self, name: str, data: str) -> None:
        """One SSE event: ``[DONE]``, an error object, or the protocol's own event."""
        if data.strip() == "[DONE]":
            self.done()
            return
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if not isinstance(obj, dict):
            return
        if name == "error" or obj.get("type") == "error" or (
                obj.get("error") and "type" not in obj and not obj.get("choices")):
            self.c.error = obj.get("error", obj)
            return
        self.on_event(name, obj)

    def body(self, obj: Any) -> None:
        """A whole JSON answer (no stream)."""
        if not isinstance(obj, dict):
            return
        if obj.get("type") == "error" or obj.get("error"):
            self.c.error = obj.get("error", obj)
            return
        self.on_body(obj)

    def done(self) -> None:
        """``data: [DONE]`` arrived (only Chat Completions gives it a meaning)."""

    def on_event(self, name: str, obj: dict) -> None:
        raise NotImplementedError

    def on_body(self, obj: dict) -> None:
        raise NotImplementedError


# -- shared by the OpenAI-shaped protocols ----------------------------------------------------

def openai_error_body(type_: str, message: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def openai_unauthorized(shown: str) -> tuple[dict, dict[str, str]]:
    return openai_error_body(
        "invalid_request_error",
        f"Incorrect API key provided: {shown}. Check the key of your gateway account."
        if shown else "You didn't provide an API key.",
        "invalid_api_key"), {"WWW-Authenticate": 'Bearer realm="stub"'}


def openai_oauth() -> tuple[dict, dict[str, str]]:
    return openai_error_body("invalid_request_error", "invalid_grant: OAuth token has expired",
                             "invalid_grant"), OAUTH_HEADERS


def openai_unknown_model(model: str) -> dict:
    return openai_error_body("invalid_request_error", f"The model `{model}` does not exist or "
                             f"you do not have access to it.", "model_not_found")


def openai_error_in_200() -> dict:
    return {"error": {"message": UPSTREAM_FAILED, "type": "upstream_error", "code": 502}}


def openai_path_fix(origin: str, other: str, alternative: str) -> str:
    if other.endswith("/v1"):
        base = origin + other[:-3]
        return (f"write `gateway.base_url: {base}` in fleet.yaml (the root, without /v1): "
                f"taosync gives OpenAI-shaped clients {base}/v1")
    return (f"write `gateway.openai_base_url: {origin + other}` in fleet.yaml: this "
            f"gateway's OpenAI surface is not root + /v1")
