"""fleet.yaml read through libyaml (ruamel.yaml.clib): the same data as ruamel's own
safe loader, or the C path declines (``_c_reads_alike``) or fails and ruamel reads it.

The C path is libyaml's scanner and parser under ruamel's composer, constructor and
resolver (``yaml_source._c_loader``); only where libyaml reads a text otherwise can the
two differ, so the property test generates texts full of what it might read otherwise.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import ROOT, TEST_KEY
from taosync.fleet import yaml_source
from taosync.fleet.yaml_source import MAX_DEPTH, _c_loader, _c_reads_alike, _load_c, _load_yaml

LOADER = _c_loader()
needs_c = pytest.mark.skipif(LOADER is None and os.environ.get("TAOSYNC_YAML_C") != "required",
                             reason="ruamel.yaml.clib is not installed (PyPy?)")

# ---- comparing two loads -------------------------------------------------------------------


def _same(x) -> object:
    """``x`` with its types spelled out, NaN equal to NaN: True == 1 and 1 == 1.0 in
    Python, but a fleet that reads as True one way and 1 the other is not the same."""
    if isinstance(x, float) and math.isnan(x):
        return ("nan",)
    if isinstance(x, dict):
        return ("map", tuple((_same(k), _same(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_same(v) for v in x))
    if isinstance(x, (set, frozenset)):
        return ("set", frozenset(_same(v) for v in x))
    if isinstance(x, bytes):
        return ("bytes", x)
    return (type(x).__name__, x)


def _outcome(load, text: str):
    try:
        return "ok", _same(load(text))
    except yaml_source._TooDeep:
        return "too deep", None
    except RecursionError:  # pragma: no cover - what the limits are there to prevent
        return "recursion", None
    except Exception:
        return "refused", None


def _pure(text: str):
    return _load_yaml("safe", text)


def _c(text: str):
    assert LOADER is not None
    return _load_c(LOADER, text)


def check_alike(text: str) -> str:
    """The property: where the C path is taken and reads ``text``, ruamel's pure safe
    loader reads the same data (and refuses nothing the C path reads). Returns what
    happened, for the tests that want a particular case."""
    if not _c_reads_alike(text):
        return "declined"
    c = _outcome(_c, text)
    if c[0] == "refused":
        return "refused"  # parse_safe then asks the pure loader: whatever it reads is used
    pure = _outcome(_pure, text)
    assert c == pure, f"libyaml and ruamel read {text!r} differently:\n  C:    {c}\n  pure: {pure}"
    return c[0]


# ---- generated YAML with what libyaml may read otherwise ----------------------------------

#: plain scalars: every implicit type of YAML 1.1 and 1.2, and characters that are
#: indicators elsewhere (``:`` ``#`` ``-`` ``?`` ``,`` inside a scalar)
PLAIN = ["a", "key", "gpt-4o-mini", "nvidia/deepseek-r1", "1", "-1", "+1", "0", "010", "0o17",
         "0x1F", "0b101", "1_000", "1,000", "1.5", "+.5", "1e3", "6.8523015e+5", ".inf", "-.Inf",
         ".nan", "NaN", "~", "null", "Null", "NULL", "true", "True", "false", "yes", "no", "on",
         "off", "y", "n", "Yes", "2024-01-01", "2001-12-14t21:59:43.10-05:00",
         "2001-12-14 21:59:43.10 -5", "12:30:00", "190:20:30", "1:20", "a:b", "http://x.example:8080/v1",
         "${env:TAOTOKEN_API_KEY}", "${routes.fast}", "a#b", "a-b", "-a", "?a", "a?", "a!", "a,b",
         "a b", "a  b", "a'b", 'a"b', "@taotoken/x", "it's", "=", "<<x", "x<<", "%x", "a%20b",
         "é", "ключ", "名前", "😀", "a\\b", "a/b", "[x", "x]", "{x", "x}", "a*", "a&b", "a|b", "a>b"]
#: the subset that is a plain scalar inside ``[…]``/``{…}`` too (no ``,[]{}`` and no ``: ``)
FLOW_PLAIN = [p for p in PLAIN if not set(p) & set(",[]{}") and ": " not in p]
SINGLE = ["''", "'a'", "'it''s'", "'a: b'", "'#x'", "'  pad  '", "'1'", "'true'", "'~'",
          "'a\n  b'", "'a\n\n  b'", "'a\\nb'"]
DOUBLE = ['""', '"a"', '"1"', '"a: b"', '"\\t\\n\\r\\\\\\"\\/"', '"\\x41\\u00e9\\U0001F600"',
          '"\\0\\a\\b\\e\\f\\v\\N\\_\\L\\P"', '"a\\\n  b"', '"a\n  b"', '"a\n\n  b"', '" \\ "',
          '"\\ud83d\\ude00"', '"\\ud800"', '"\\q"', '"a # b"', '"${gateway.key}"']
TAGS = ["!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp", "!!seq",
        "!!map", "!!set", "!!omap", "!local", "!<tag:yaml.org,2002:str>", "!!%73tr", "!", "!e!x"]
KEYS = ["a", "b", "key", "gpt-4o-mini", "1", "true", "~", "null", "a b", "a:b", "'q'", '"dq"',
        "'a: b'", "<<", "? a", "? [a, b]", "x" * 1020, "y" * 1030, "ключ", "-a", "a-", "a #c"]
ANCHORS = ["a", "b", "a1", "a-b", "a_b", "a.b", "a/b", "ü", "a:b"]
#: whatever a person may type between two characters of a valid text
NOISE = [" ", "  ", "\n", "\t", "\r", "\r\n", ":", ": ", "-", "- ", "?", "? ", ",", "[", "]",
         "{", "}", "#", " #", "'", '"', "!", "&", "*", "|", ">", "%", "@", "`", "\\", "---",
         "...", "\ufeff", "\x85", "\u2028", "\u2029", "\U0001F600", "\u00a0", "\x7f", "\x00",
         "\x1b", "é"]


def _join_lines(lines: list[str], indent: int) -> str:
    return "".join(" " * indent + line + "\n" for line in lines)


@st.composite
def props(draw) -> str:
    """An anchor and/or a tag before a node, or nothing (mostly)."""
    out = []
    if draw(st.integers(0, 9)) == 0:
        out.append("&" + draw(st.sampled_from(ANCHORS)))
    if draw(st.integers(0, 9)) == 0:
        out.append(draw(st.sampled_from(TAGS)))
    return " ".join(out) + " " if out else ""


def scalar(flow: bool):
    plain = st.sampled_from(FLOW_PLAIN if flow else PLAIN)
    alias = st.sampled_from(ANCHORS).map(lambda a: "*" + a)
    return st.one_of(plain, plain, plain, st.sampled_from(SINGLE), st.sampled_from(DOUBLE),
                     alias, st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]),
                                    max_size=6))


@st.composite
def flow_node(draw, depth: int) -> str:
    if depth > 3 or draw(st.integers(0, 2)) == 0:
        return draw(props()) + draw(scalar(flow=True))
    sep = draw(st.sampled_from([", ", ",", " , ", ",\n   ", ",\n", "\n, "]))
    n = draw(st.integers(0, 3))
    if draw(st.booleans()):
        items = []
        for _ in range(n):
            item = draw(flow_node(depth + 1))
            if draw(st.integers(0, 5)) == 0:  # a single-pair mapping in a sequence
                item = draw(st.sampled_from(FLOW_PLAIN + SINGLE[:4] + DOUBLE[:4])) + \
                    draw(st.sampled_from([": ", ":", " : "])) + item
            items.append(item)
        body = sep.join(items) + draw(st.sampled_from(["", ",", " "]))
        return draw(props()) + "[" + body + "]"
    pairs = []
    for _ in range(n):
        key = draw(st.sampled_from(FLOW_PLAIN + SINGLE[:4] + DOUBLE[:4] + ["? a", "[a]"]))
        if draw(st.integers(0, 4)) == 0:
            pairs.append(key)  # a key with no value
        else:
            pairs.append(key + draw(st.sampled_from([": ", ":", " : ", ":\n  "]))
                         + draw(flow_node(depth + 1)))
    body = sep.join(pairs) + draw(st.sampled_from(["", ",", " "]))
    return draw(props()) + "{" + body + "}"


@st.composite
def block_scalar(draw, indent: int) -> str:
    head = draw(st.sampled_from(["|", ">", "|-", ">-", "|+", ">+", "|2", ">1-", "|+2"]))
    lines = draw(st.lists(st.sampled_from(["text", "  more", "", " ", "# not a comment",
                                           "a: b", "- x", "\ttab"]), min_size=0, max_size=4))
    return head + draw(st.sampled_from(["", " # c"])) + "\n" + \
        "".join((" " * indent + line if line else line) + "\n" for line in lines)


@st.composite
def block_node(draw, depth: int, indent: int) -> str:
    """A value after ``key:`` or ``- `` (its own first line's rest, then its lines)."""
    kind = draw(st.integers(0, 9))
    if depth > 3 or kind < 4:
        value = draw(st.one_of(scalar(flow=False), flow_node(depth)))
        if draw(st.integers(0, 6)) == 0 and "\n" not in value:  # a plain scalar over lines
            value += "\n" + " " * (indent + draw(st.integers(0, 2))) + draw(
                st.sampled_from(["more", "- x", "# c", "k: v", "'q'"]))
        return " " + draw(props()) + value + draw(st.sampled_from(["", "", " # c", "  #c"])) + "\n"
    if kind == 4:
        return " " + draw(props()) + draw(block_scalar(indent + draw(st.integers(1, 3))))
    if kind == 5:
        return " " + draw(props()) + "\n"  # empty (null), maybe tagged or anchored
    step = draw(st.sampled_from([1, 2, 4]))
    inner = indent + step
    if kind < 8:
        keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3))
        out = draw(props()).rstrip() + "\n"
        for key in keys:
            if key.startswith("? "):
                out += " " * inner + key + "\n" + " " * inner + ":" + \
                    draw(block_node(depth + 1, inner))
            else:
                out += " " * inner + key + ":" + draw(block_node(depth + 1, inner))
        return (" " + out) if out[0] != "\n" else out
    seq_indent = indent if draw(st.booleans()) else inner  # an indentless sequence, or not
    out = "\n"
    for _ in range(draw(st.integers(1, 3))):
        out += " " * seq_indent + "-" + draw(block_node(depth + 1, seq_indent + 2))
    return out


@st.composite
def yaml_texts(draw) -> str:
    """A block mapping at the top, as fleet.yaml is, with some of the above in it; then,
    sometimes, a character typed in anywhere, other line ends, a directive."""
    text = ""
    for key in draw(st.lists(st.sampled_from(KEYS[:12]), min_size=1, max_size=4)):
        text += key + ":" + draw(block_node(0, 0))
    if draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(NOISE)) + text[at:]
    ends = draw(st.integers(0, 9))
    if ends == 0:
        text = text.replace("\n", "\r\n")
    elif ends == 1:
        text = text.replace("\n", "\r")
    head = draw(st.integers(0, 29))
    if head < 4:
        text = ["%YAML 1.1\n---\n", "%YAML 1.2\n---\n", "%TAG !e! tag:e.example,2000:\n---\n",
                "--- \n"][head] + text
    if draw(st.integers(0, 9)) == 0:
        text += draw(st.sampled_from(["...\n", "---\nb: 2\n", "# end", "\n\n", "...\n# x\n"]))
    return text


SETTINGS = settings(max_examples=int(os.environ.get("TAOSYNC_YAML_EXAMPLES", "400")),
                    deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                          HealthCheck.data_too_large])


@needs_c
@SETTINGS
@given(yaml_texts())
# what the fuzzing found libyaml reads otherwise, each now declined by _c_reads_alike:
@example('a: ["a":b]\n')            # a quoted key's ``:`` with no space after, in […]
@example("a: ['a':b]\n")
@example("[a, b]: !\n")             # ``!`` on an empty value: "" to libyaml, None to ruamel
@example("%YAML 1.1\n---\na: yes\nb: 010\n")  # YAML 1.1's booleans and octals
@example("a: b\tc\n")
@example("a: >\n  \n   more\n")    # ruamel: "more indented follow up line than first"
@example("a: &x:b 1\n")          # libyaml: anchor "x", then ":b 1"; ruamel: anchor "x:b"
@example("a: \u2028b\n")
def test_c_and_pure_loaders_read_the_same_data(text):
    check_alike(text)
