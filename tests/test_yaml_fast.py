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
from test_fleet_properties import mutated_fleet
from taosync.fleet import yaml_source
from taosync.fleet.yaml_source import MAX_DEPTH, _c_loader, _c_reads_alike, _load_c, _load_yaml

LOADER = _c_loader()
#: ruamel.yaml.clib is a dependency on CPython (pyproject.toml): there, a missing C loader
#: fails these tests; elsewhere (PyPy) there is none, and only the pure loader is tested
needs_c = pytest.mark.skipif(sys.implementation.name != "cpython",
                             reason="ruamel.yaml.clib is for CPython only")


@needs_c
def test_the_c_loader_is_there_on_cpython():
    assert LOADER is not None, "ruamel.yaml.clib is not installed: pip install -e ."

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
         "2001-12-14 21:59:43.10 -5", "12:30:00", "190:20:30", "1:20", "a:b",
         "http://x.example:8080/v1",
         "${env:TAOTOKEN_API_KEY}", "${routes.fast}", "a#b", "a-b", "-a", "?a", "a?", "a!", "a,b",
         "a b", "a  b", "a'b", 'a"b', "@taotoken/x", "it's", "=", "<<x", "x<<", "%x", "a%20b",
         "é", "ключ", "名前", "😀", "a\\b", "a/b", "[x", "x]", "{x", "x}", "a*", "a&b", "a|b",
         "a>b"]
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
#: keys in […] and {…} that are no plain scalar (a ``:`` right after them is a value)
FLOW_KEYS = ["[a]", "{a: b}", "[]", "*a", "*b", "&a k", "!!str k"]
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
                item = draw(st.sampled_from(FLOW_PLAIN + SINGLE[:4] + DOUBLE[:4] + FLOW_KEYS)) \
                    + draw(st.sampled_from([": ", ":", " : ", " :", "  :"])) + item
            items.append(item)
        body = sep.join(items) + draw(st.sampled_from(["", ",", " "]))
        return draw(props()) + "[" + body + "]"
    pairs = []
    for _ in range(n):
        key = draw(st.sampled_from(FLOW_PLAIN + SINGLE[:4] + DOUBLE[:4] + FLOW_KEYS + ["? a"]))
        if draw(st.integers(0, 4)) == 0:
            pairs.append(key)  # a key with no value
        else:
            pairs.append(key + draw(st.sampled_from([": ", ":", " : ", " :", ":\n  "]))
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
@example('a: ["a" :b]\n')
@example("a: [[a]:b]\n")
@example("x: &x 1\na: [*x :b]\n")
@example("[a, b]: !\n")             # ``!`` on an empty value: "" to libyaml, None to ruamel
@example("%YAML 1.1\n---\na: yes\nb: 010\n")  # YAML 1.1's booleans and octals
@example("a: b\tc\n")
@example("a: >\n  \n   more\n")    # ruamel: "more indented follow up line than first"
@example("a: |#\r\n")              # no space before the comment: ruamel refuses it
@example("a: &x:b 1\n")          # libyaml: anchor "x", then ":b 1"; ruamel: anchor "x:b"
@example("a: \u2028b\n")
def test_c_and_pure_loaders_read_the_same_data(text):
    check_alike(text)


@needs_c
@SETTINGS
@given(mutated_fleet())
def test_c_and_pure_loaders_read_mutated_fleets_alike(text):
    """The same on what a person may do to a real fleet (tests/test_fleet_properties.py's
    mutations of the example: deleted, swapped, re-indented lines, junk keys and values,
    tabs, any character)."""
    check_alike(text)


#: a megabyte of what each look of _c_reads_alike starts at, packed to make a pattern
#: that backtracks or scans the rest of a line at every start quadratic (a line of
#: ``a: |`` ended by one CR took 150 s with ``.*``)
PACKED = ["a: |" * 250_000 + "\r", "a: >\r" * 200_000, "|" * 1_000_000, "|-" * 500_000,
          '" ' * 500_000, "&a" * 500_000, "*a" * 500_000 + " ", "!" * 1_000_000,
          "] " * 500_000, ">" + " " * 1_000_000, (">" + " " * 10) * 90_000, " \n" * 500_000]


@pytest.mark.parametrize("text", PACKED, ids=[t[:6] for t in PACKED])
def test_the_look_before_the_c_path_is_linear(text):
    started = time.perf_counter()
    _c_reads_alike(text)
    assert time.perf_counter() - started < 1.0  # ~30 ms each unloaded


# ---- every fleet in the repository --------------------------------------------------------


def _repo_fleets() -> dict[str, str]:
    """Every fleet.yaml the repository holds: the shipped example, the template `init`
    writes, the suite's fixtures, and each ```yaml block of the docs (fleets and parts of
    fleets, and the Ansible and pre-commit YAML beside them: YAML all the same)."""
    texts = {}
    for path in [ROOT / "fleet.yaml", ROOT / "taosync" / "templates" / "fleet.yaml",
                 *sorted((ROOT / "tests" / "fixtures" / "fleet").glob("*.yaml"))]:
        texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = re.findall(r"```ya?ml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        for i, block in enumerate(blocks):
            texts[f"{page.relative_to(ROOT)} block {i + 1}"] = block
    return texts


REPO_FLEETS = _repo_fleets()
#: the fleets whose text the C path must take (no merge key, nothing libyaml reads otherwise)
TAKEN = ["fleet.yaml", "taosync/templates/fleet.yaml", "tests/fixtures/fleet/example.yaml",
         "tests/fixtures/fleet/minimal.yaml", "tests/fixtures/fleet/contract.yaml"]


def test_the_repository_has_fleets_to_compare():
    assert set(TAKEN) <= set(REPO_FLEETS)
    assert sum(" block " in name for name in REPO_FLEETS) >= 10, sorted(REPO_FLEETS)


@needs_c
@pytest.mark.parametrize("name", sorted(REPO_FLEETS))
@pytest.mark.parametrize("ends", ["\n", "\r\n"])
def test_every_fleet_in_the_repository_reads_the_same_both_ways(name, ends):
    text = REPO_FLEETS[name].replace("\n", ends)
    outcome = check_alike(text)
    if name in TAKEN:
        assert outcome == "ok", f"{name}: the C path did not read it ({outcome})"
        assert _c(text) == _pure(text)


@needs_c
def test_the_fast_path_reads_through_libyaml(monkeypatch, tmp_path):
    """parse_safe on the shipped example answers without ruamel's pure loader (which is
    made to fail here), and a load of it gives the data ruamel reads."""
    from taosync.fleet.problems import Findings
    from taosync.fleet.yaml_source import YamlSource

    text = (ROOT / "fleet.yaml").read_text(encoding="utf-8")
    expected = _pure(text)

    def no_pure(typ, text):
        raise AssertionError(f"ruamel's pure {typ} loader was asked")

    monkeypatch.setattr(yaml_source, "_load_yaml", no_pure)
    source = YamlSource(tmp_path / "fleet.yaml", Findings())
    assert source.parse_safe(text) == expected


@needs_c
def test_what_libyaml_refuses_ruamel_still_reads_without_the_round_trip_parse(tmp_path):
    """libyaml 0.1.7 refuses a ``:`` inside a plain scalar in […] (``[http://x]``), which
    ruamel reads: the fast path then asks ruamel's safe loader, not the round-trip one."""
    from taosync.fleet.problems import Findings
    from taosync.fleet.yaml_source import YamlSource

    text = ("version: 1\nmcp_servers:\n  s:\n    command: npx\n"
            "    args: [--url, http://localhost:8080/mcp]\n")
    assert _c_reads_alike(text) and _outcome(_c, text)[0] == "refused"
    source = YamlSource(tmp_path / "fleet.yaml", Findings())
    assert source.parse_safe(text)["mcp_servers"]["s"]["args"] == ["--url",
                                                                   "http://localhost:8080/mcp"]


@needs_c
def test_duplicate_keys_are_refused_by_the_c_path_too(tmp_path):
    from ruamel.yaml.constructor import DuplicateKeyError

    from taosync.fleet.load import FleetInvalid, load_fleet

    text = (ROOT / "tests" / "fixtures" / "fleet" / "example.yaml").read_text()
    text = text.replace("  fast: gpt-4o-mini\n", "  fast: gpt-4o-mini\n  fast: gpt-4o-mini\n", 1)
    assert _c_reads_alike(text)
    with pytest.raises(DuplicateKeyError):
        _c(text)
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(FleetInvalid) as info:
        load_fleet(path, home=tmp_path, environ={"TAOTOKEN_API_KEY": TEST_KEY})
    (problem,) = info.value.problems
    assert problem.message.startswith("duplicate key 'fast' (first at line 18)")
    assert (problem.line, problem.column) == (19, 3)


@needs_c
def test_an_alias_bomb_read_by_the_c_path_stops_at_max_nodes(tmp_path):
    from taosync.fleet.load import FleetInvalid, load_fleet

    text = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    for prev, name in zip("abcde", "bcdef"):
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]\n"
    assert _c_reads_alike(text) and _outcome(_c, text)[0] == "ok"  # shared, not expanded
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(FleetInvalid) as info:
        load_fleet(path, home=tmp_path, environ={"TAOTOKEN_API_KEY": TEST_KEY})
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (1, 1)
    assert "more than 100000 values" in problem.message


# ---- depth and size, through a real `python -m taosync validate` ---------------------------

#: texts nested far deeper than MAX_DEPTH, each (text, line, column of the 65th level):
#: libyaml's own composer recurses in C without a limit (a segmentation fault at ~100,000
#: levels) and its scanner is quadratic in open ``[``; ruamel's composer, limited, stops both
DEEP = {
    "10,000 [": ("version: 1\nmodels: " + "[" * 10_000 + "\n", 2, 9 + 64),
    "1 MB of [": ("version: 1\nmodels: " + "[" * 1_000_000 + "\n", 2, 9 + 64),
    "1 MB of {a: ": ("version: 1\nmodels: " + "{a: " * 250_000 + "\n", 2, 9 + 63 * 4 + 1),
    "1 MB of - ": ("version: 1\nmodels:\n" + "- " * 500_000 + "x\n", 3, 129),
    "block mappings": ("version: 1\nmodels:\n" + "".join(" " * i + "a:\n" for i in range(1, 1400)),
                       66, 65),
}


def _validate(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "fleet.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TAOSYNC_CONFIG", "XDG_CONFIG_HOME", "NO_COLOR")}
    env["TAOTOKEN_API_KEY"] = TEST_KEY
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "validate",
                           "-c", "fleet.yaml"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("shape", DEEP)
def test_deep_nesting_is_a_located_message_through_the_c_path(tmp_path, shape):
    text, line, column = DEEP[shape]
    assert len(text.encode()) <= yaml_source.MAX_BYTES
    assert _c_reads_alike(text)  # the C path is taken: its composer is the one that stops
    if LOADER is not None:
        assert _outcome(_c, text)[0] == "too deep"
    started = time.perf_counter()
    proc = _validate(tmp_path, text)
    took = time.perf_counter() - started
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"fleet.yaml:{line}:{column}: nested deeper than "
                                  f"{MAX_DEPTH} levels"), proc.stderr[:300]
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    assert took < 10, f"{took:.1f} s"  # ~0.3 s unloaded: the start-up, not the parse
    assert not any((tmp_path / "home").iterdir()), "nothing is written"


@needs_c
def test_the_c_path_stops_deep_nesting_within_milliseconds():
    for shape, (text, _line, _column) in DEEP.items():
        started = time.perf_counter()
        assert _outcome(_c, text)[0] == "too deep"
        assert time.perf_counter() - started < 0.5, shape  # ~2 ms each unloaded


def test_nesting_up_to_the_limit_reads_the_same_both_ways():
    # the root is level 0; the innermost [] is level 64, the scalar 1 too
    text = "version: 1\nx: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\ny: " + \
        "{a: " * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1) + "\n"
    assert _outcome(_pure, text)[0] == "ok"
    if LOADER is not None:
        assert check_alike(text) == "ok"


# ---- without the C module ------------------------------------------------------------------

WITHOUT_CLIB = """
import sys
sys.modules["_ruamel_yaml"] = None  # as on PyPy or a platform without a wheel: ImportError
from taosync.__main__ import main
sys.exit(main())
"""


@pytest.mark.parametrize("fleet, rc", [("fleet.yaml", 0), ("deep", 2)])
def test_without_ruamel_yaml_clib_fleet_yaml_is_read_as_before(tmp_path, fleet, rc):
    home = tmp_path / "home"
    home.mkdir()
    text = (ROOT / "fleet.yaml").read_text() if fleet == "fleet.yaml" else DEEP["10,000 ["][0]
    (tmp_path / "fleet.yaml").write_text(text)
    env = dict(os.environ, TAOTOKEN_API_KEY=TEST_KEY, PYTHONPATH=str(ROOT))
    probe = "\nimport taosync.fleet.yaml_source as y; assert y._c_loader() is None\n"
    proc = subprocess.run([sys.executable, "-c", WITHOUT_CLIB.replace(
        "from taosync.__main__", probe + "from taosync.__main__"), "--home", str(home),
        "validate", "-c", "fleet.yaml"], capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=120)
    assert proc.returncode == rc, proc.stderr
    if rc == 0:
        assert proc.stdout.startswith("OK: fleet.yaml — 4 models"), proc.stdout
    else:
        assert proc.stderr.startswith("fleet.yaml:2:73: nested deeper than 64 levels")
    assert "Traceback" not in proc.stderr
