"""The failures the stand-in gateway can be told to produce (``taosync stub --fault``).

Fault syntax: ``KIND[=ARG][@MODEL]``, e.g. ``unauthorized``, ``unknown_model@gw-small``,
``delay=0.3``, ``rate_limited=2@gw-main`` (two 429s, then success), ``server_error`` (always
500), ``status=503``, ``close``, ``answer_as=other``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: fault kind → (argument type or None, help)
KINDS: dict[str, tuple[type | None, str]] = {
    "unauthorized": (None, "401: the key is rejected"),
    "forbidden": (None, "403: the key may not use this model"),
    "oauth": (None, "401 invalid_grant: an expired OAuth token where a key was meant"),
    "unknown_model": (None, "404 model_not_found, even for a catalogue model"),
    "no_choices": (None, "200 without choices / content"),
    "error_in_200": (None, "200 whose body (or stream) is an error object"),
    "rate_limited": (int, "429 (N times, then success; no N = always)"),
    "server_error": (int, "500 (N times, then success; no N = always)"),
    "status": (int, "always answer with HTTP status CODE"),
    "close": (None, "close the connection without answering"),
    "delay": (float, "wait SECONDS before answering"),
    "answer_as": (str, "answer well-formed, but naming model MODEL (a rerouting gateway)"),
}


@dataclass
class Fault:
    """One injected failure; ``model=None`` applies to every request."""

    kind: str
    arg: float | int | str | None = None
    model: str | None = None
    hits: int = 0  # how many requests this fault has answered

    @classmethod
    def parse(cls, text: "str | Fault") -> "Fault":
        if isinstance(text, Fault):
            return text
        spec, _, model = text.strip().partition("@")
        kind, eq, raw = spec.partition("=")
        kind = kind.strip().replace("-", "_")
        if kind not in KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(KINDS)}")
        typ = KINDS[kind][0]
        arg: float | int | None = None
        if eq:
            if typ is None:
                raise ValueError(f"fault {kind} takes no argument")
            try:
                arg = typ(raw)
            except ValueError:
                raise ValueError(f"fault {kind}: {raw!r} is not a {typ.__name__}") from None
        elif kind in ("delay", "status", "answer_as"):
            raise ValueError(f"fault {kind} needs a value: {kind}=…")
        return cls(kind, arg, model.strip() or None)

    def applies(self, model: str | None) -> bool:
        return self.model is None or self.model == model

    def __str__(self) -> str:
        text = self.kind + (f"={self.arg}" if self.arg is not None else "")
        return text + (f"@{self.model}" if self.model else "")
