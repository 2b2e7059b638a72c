"""What every protocol module provides (:class:`ProtocolPlugin`), and the parts they share.

A protocol module (one per wire protocol, see :mod:`taosync.protocols.registry`) holds every
name :class:`ProtocolPlugin` lists: none is optional, so no caller asks ``hasattr``. A
protocol with nothing special binds the default this module offers (``max_tokens =
base.max_tokens_in_body``); the registry checks a module has them all when it loads it.

How a request carries the gateway key is the protocol's too (:attr:`ProtocolPlugin.AUTH`):
verify sends the headers it names, and the stand-in reads a key from the headers (and query
parameters) its protocols name.

Standard library only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Protocol, runtime_checkable


@dataclass(frozen=True)
class KeyHeader:
    """A header a request carries the gateway key in, and what precedes the key there
    (``Authorization: Bearer <key>``; ``x-api-key: <key>``)."""

    name: str
    scheme: str = ""

    def carry(self, key: str) -> tuple[str, str]:
        """(header, value) that sends ``key``."""
        return self.name, self.scheme + key

    def read(self, value: str) -> str:
        """The key in a received value ("" when the value is not in this scheme)."""
        if not self.scheme:
            return value
        n = len(self.scheme)
        return value[n:] if value[:n].lower() == self.scheme.lower() else ""


BEARER = KeyHeader("Authorization", "Bearer ")
X_API_KEY = KeyHeader("x-api-key")
X_GOOG_API_KEY = KeyHeader("x-goog-api-key")


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


# -- defaults a protocol module binds when it has nothing special -----------------------------

def max_tokens_in_body(body: dict) -> Any:
    """The answer's length limit where Messages, Chat Completions and Responses keep it."""
    return body.get("max_tokens") or body.get("max_output_tokens")


def prompt_in_body(body: dict) -> Any:
    """The prompt where Messages, Chat Completions (``messages``) and Responses (``input``)
    keep it."""
    return body.get("messages") or body.get("input") or ""


def suffix_at(suffix: str) -> Callable[[str], int | None]:
    """``endpoint_at(path)`` of a protocol whose endpoint is a fixed ``suffix``."""
    def endpoint_at(path: str) -> int | None:
        return len(path) - len(suffix) if path.endswith(suffix) else None
    return endpoint_at


def openai_models_body(ids: list[str]) -> dict:
    """A model list as OpenAI and Anthropic send it (``GET /v1/models``): both shapes' fields."""
    now = int(time.time())
    data = [{"id": m, "object": "model", "type": "model", "display_name": m,
             "created": now, "created_at": "2026-01-01T00:00:00Z",
             "owned_by": "taosync-stub"} for m in ids]
    return {"object": "list", "data": data, "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None}


def openai_model_ids(data: object) -> list[str] | None:
    """The ids in an OpenAI-shaped model list, None when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None
    return [m["id"] for m in data["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)]


def auth_headers(protocol: "ProtocolPlugin", scheme: str, key: str) -> dict[str, str]:
    """The headers that carry ``key`` in auth ``scheme`` of ``protocol`` (KeyError: the
    protocol has no such scheme)."""
    return dict(header.carry(key) for header in protocol.AUTH[scheme])


def key_headers(protocol: "ProtocolPlugin") -> list[KeyHeader]:
    """Every header ``protocol``'s requests may carry the key in, each once, in order."""
    out: list[KeyHeader] = []
    for headers in protocol.AUTH.values():
        out.extend(h for h in headers if h not in out)
    return out


_ReaderBase = Reader


@runtime_checkable
class ProtocolPlugin(Protocol):
    """The contract of a protocol module: every name here, none optional."""

    #: its registry name, and the name people know it by
    NAME: str
    TITLE: str
    #: the path on a gateway's root, the path a client appends to its base URL, and what
    #: that base URL adds to the root (``/v1`` or nothing)
    ENDPOINT: str
    SUFFIX: str
    BASE_SUFFIX: str
    #: what a completion's output is called (content, output, choices), and whether an
    #: output without text is still a well-formed completion
    OUTPUT_WORD: str
    EMPTY_TEXT_OK: bool
    #: the status a gateway of this shape refuses a key with (Google's: 400)
    UNAUTHORIZED_STATUS: int

    # (read-only members are properties: a module's ``None`` or ``dict`` then fits them)

    @property
    def MODELS_PATH(self) -> str | None:
        """The path of the protocol's own model list under its base URL's prefix (Gemini's
        ``/v1beta/models``); None: the OpenAI-shaped ``/models`` (the stand-in's ``/v1/models``)."""

    @property
    def AUTH(self) -> Mapping[str, tuple[KeyHeader, ...]]:
        """Auth scheme (as a client's probe names it: bearer, x-api-key, both …) → the
        headers carrying the key; the stand-in accepts a key in any header a protocol names."""

    @property
    def KEY_QUERY(self) -> tuple[str, ...]:
        """Query parameters a gateway of this shape also takes the key from (Google's ``key``)."""

    @property
    def SIDE_ENDPOINTS(self) -> Mapping[str, Callable[[dict], dict]]:
        """Other operations the stand-in serves (name → function(body) → JSON answer)."""

    @property
    def Reader(self) -> type[_ReaderBase]:
        """Fills a completion from SSE events or a JSON body."""

    def route(self, path: str) -> str | None:
        """The operation the stand-in runs for gateway ``path``: ``"answer"``, a side
        endpoint, or None (:func:`exact_route`)."""

    def requested(self, body: dict, path: str) -> tuple[str | None, bool]:
        """(model, stream?) a request asks for (:func:`requested_in_body`)."""

    def with_model(self, url: str, model: str, other: str) -> str:
        """The URL a client POSTs to for ``other`` given the one for ``model``
        (:func:`url_names_no_model`)."""

    def endpoint_at(self, path: str) -> int | None:
        """Where the endpoint starts in a URL's ``path``, None when it has none
        (:func:`suffix_at`)."""

    def probe(self, model: str, prompt: str, max_tokens: int, stream: bool
              ) -> tuple[dict[str, str], dict[str, Any]]:
        """(headers, body) of the request its clients send, without auth and client headers."""

    def max_tokens(self, body: dict) -> Any:
        """The answer's length limit a request asks for (:func:`max_tokens_in_body`)."""

    def prompt_text(self, body: dict) -> Any:
        """The prompt a request sends, for the stand-in's token count (:func:`prompt_in_body`)."""

    def answer(self, model: str, text: str, prompt_tokens: int, mode: str, body: dict) -> dict:
        """The stand-in's JSON answer; ``mode`` is ``ok``, ``no_choices`` or ``error``."""

    def stream(self, model: str, text: str, prompt_tokens: int, mode: str,
               body: dict) -> Iterator[tuple[str | None, Any]]:
        """The stand-in's streamed answer, as (event, data) pairs."""

    def models_body(self, ids: list[str]) -> dict:
        """The stand-in's model list in this shape (:func:`openai_models_body`)."""

    def model_ids(self, data: object) -> list[str] | None:
        """The ids in a model list of this shape (:func:`openai_model_ids`)."""

    def error_body(self, type_: str, message: str, code: str | None = None) -> dict:
        """What a gateway of this shape sends when it refuses."""

    def unauthorized(self, shown: str) -> tuple[dict, dict[str, str]]:
        """(body, headers) refusing the key ``shown``."""

    def oauth(self) -> tuple[dict, dict[str, str]]:
        """(body, headers) refusing an expired OAuth token."""

    def unknown_model(self, model: str) -> dict:
        """The body refusing an unknown model."""

    def path_fix(self, origin: str, other: str, alternative: str) -> str:
        """How to fix a base URL whose ``/v1`` is doubled, missing or extra."""


def contract() -> list[str]:
    """Every name :class:`ProtocolPlugin` asks a protocol module for."""
    return [*ProtocolPlugin.__annotations__,
            *(n for n, v in vars(ProtocolPlugin).items()
              if not n.startswith("_") and (callable(v) or isinstance(v, property)))]


def missing(module: object) -> list[str]:
    """The names of :class:`ProtocolPlugin` that ``module`` lacks."""
    return [n for n in contract() if not hasattr(module, n)]
