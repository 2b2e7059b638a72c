"""Text a terminal must not obey: controls and bidi overrides made inert before printing.

Text from the network (a gateway's error body, the model id it answers with, its model
list) is made inert where it enters (:func:`untrusted`); every line taosync prints passes
one last net (:func:`terminal_safe`, in ``ui``); JSON output writes what JSON would leave
raw as ``\\uXXXX`` (:func:`json_safe`). Standard library only, and below every layer
that prints (verify makes its diagnoses safe itself).
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, and the characters that reorder or break lines on display:
#: bidi embeddings/overrides/isolates/marks (Trojan Source), line/paragraph separators
#: (one set for what is printed and what fleet.yaml may hold: fleet/yaml_source.py, checks.py)
C0_C1 = r"\x00-\x1f\x7f-\x9f"
_LAYOUT = r"\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
CONTROLS = re.compile(rf"[{C0_C1}{_LAYOUT}]")
#: the same but newline, tab and a CR ending a line (a CRLF file's line end): the
#: line structure of a multi-line text (a diff of a client file) is the output's own
_IN_LINES = rf"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_LAYOUT}]"
#: the safety net every printed line passes (``ui._echo``): as _IN_LINES, but the colour
#: sequences ``ui.style`` makes (and only those) pass
_NET = re.compile(r"(\x1b\[(?:[01]|3[0-9]|9[0-7])m)|" + _IN_LINES)
#: what JSON output writes as \uXXXX although json.dumps(ensure_ascii=False) would not
_JSON_RAW = re.compile(rf"[\x7f-\x9f{_LAYOUT}]")


def shown(ch: str) -> str:
    """A control character as something that prints and does nothing: C0 and DEL as their
    Unicode control pictures (ESC → ␛, BEL → ␇), the rest as U+FFFD."""
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def untrusted(text) -> str:
    """Text from the network (a gateway's error body, model ids, answers, headers) made safe
    to print: whitespace controls (newline, tab, CR, …) become a space, so an answer cannot
    forge an output line; every other control and bidi override is :func:`shown` (an OSC 52
    that would write the clipboard prints as ``␛]52;c;…␇``). Applied once, where such text
    enters taosync (verify's diagnosis and answer, the stand-in's request log)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if text.isprintable():
        return text
    return CONTROLS.sub(lambda m: " " if m.group().isspace() else shown(m.group()), text)


def terminal_safe(text: str) -> str:
    """The last net before the terminal: newline, tab and ``ui.style``'s colours pass,
    any other control prints as :func:`shown` (whatever reached here unfiltered)."""
    if text.isprintable():
        return text
    return _NET.sub(lambda m: m.group(1) or shown(m.group()), text)


def json_safe(text: str) -> str:
    """JSON text with DEL, C1 controls and bidi/line-separator characters written as
    ``\\uXXXX`` (json.dumps with ensure_ascii=False escapes only C0): the same JSON value,
    and nothing a terminal showing it would obey. Valid because these characters can
    only stand inside a JSON string."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
