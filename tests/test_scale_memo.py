"""What one more model or MCP server costs a first apply (#24 Build 7): the certified runs
share one render and one plan, a first apply plans once, and the writers' per-string
fast paths say what their character loops say.

Work is counted in Python lines run (tests/test_scale.py ``lines_run``: deterministic),
never timed. ``bench/scale_bench.py --cost --callgrind`` measures the same in
instructions; docs/performance.md has the figures.
"""

from __future__ import annotations

import itertools
import random

import pytest

from conftest import TEST_KEY
from test_scale import fleet_text, lines_run


def _apply_lines(tmp_path, name: str, servers: int, monkeypatch, certify: bool) -> int:
    from taosync.cli import run
    from taosync.engine import certificate

    if not certify:
        monkeypatch.setattr(certificate, "certify", lambda settings, run: False)
    fleet = tmp_path / f"{name}.yaml"
    fleet.write_text(fleet_text(2, servers))
    home = tmp_path / f"home-{name}"
    argv = ["--home", str(home), "-c", str(fleet), "apply", "--no-verify", "-q"]
    rcs: list[int] = []
    count = lines_run(lambda: rcs.append(run(argv)))
    monkeypatch.undo()
    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    assert rcs == [0]
    assert any(home.rglob("certificate.json")) == certify
    return count


def _plan_lines(tmp_path, name: str) -> int:
    from taosync.cli import run

    argv = ["--home", str(tmp_path / f"home-{name}"), "-c", str(tmp_path / f"{name}.yaml"),
            "plan", "-q"]
    rcs: list[int] = []
    count = lines_run(lambda: rcs.append(run(argv)))
    assert rcs == [0]
    return count


#: the certified runs' work per more MCP server, in no-op plans' work per more server:
#: 2.1 with one lookup and one plan shared by the dozen forms (each form still loads the
#: state, builds its Redactor and prints); 12.5 when every form rendered and planned anew.
#: 2.8 since the cached render is read without its two extra walks (mcp_refs, nulls found
#: while decoding): both sides lost the same ~1,220 lines per server (certified 6,951 →
#: 5,731, a no-op plan 3,259 → 2,040), so the ratio rose while every figure fell
CERTIFIED_IN_PLANS = 3.0


def test_certified_runs_cost_about_one_plan(tmp_path, monkeypatch):
    """The dozen certified runs after an apply (engine/certificate.py) cost, per more MCP
    server, about what one no-op ``plan`` costs — not a dozen plans."""
    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    _apply_lines(tmp_path, "warm", 1, monkeypatch, certify=True)
    certified, plans = {}, {}
    for name, servers in (("k", 10), ("2k", 20)):
        with_cert = _apply_lines(tmp_path, name, servers, monkeypatch, certify=True)
        plans[name] = _plan_lines(tmp_path, name)
        without = _apply_lines(tmp_path, f"{name}-bare", servers, monkeypatch, certify=False)
        certified[name] = with_cert - without
    per_server = (certified["2k"] - certified["k"]) / (plans["2k"] - plans["k"])
    assert per_server <= CERTIFIED_IN_PLANS, \
        f"the certified runs cost {per_server:.2f} no-op plans per more MCP server"


def test_a_first_apply_plans_each_file_once(tmp_path, monkeypatch):
    """A first apply plans each target once for itself and once more for all the
    certified forms together: the hashing key made up for its plan is the one written
    (engine/state.py hmac_key), so the commit does not plan again under the lock."""
    from taosync.cli import run
    from taosync.engine import plan as plan_module

    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(fleet_text(2, 2))
    planned: list[str] = []
    real = plan_module.plan_file

    def counting(desired, previous, path, *args, **kwargs):
        planned.append(str(path))
        return real(desired, previous, path, *args, **kwargs)

    monkeypatch.setattr(plan_module, "plan_file", counting)
    home = tmp_path / "home"
    assert run(["--home", str(home), "-c", str(fleet), "apply", "--no-verify", "-q"]) == 0
    assert planned and all(planned.count(p) == 2 for p in planned), \
        {p: planned.count(p) for p in set(planned)}
    # the plan's hashes are the key's: the files are in sync and nothing is drift
    assert run(["--home", str(home), "-c", str(fleet), "status", "-q"]) == 0
    assert any(home.rglob("certificate.json"))


def test_a_key_made_meanwhile_plans_again(tmp_path, monkeypatch):
    """Another taosync making hmac.key between a first apply's plan and its lock: the
    plan's hashes are not the key's, so the commit plans again."""
    from taosync import pipeline
    from taosync.cli import run
    from taosync.engine import plan as plan_module
    from taosync.engine.state import StateStore

    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(fleet_text(1, 1))
    builds: list[int] = []
    real_build, real_plan_apply = plan_module.build_plan, pipeline.plan_apply

    def plan_apply(ctx, only=None):
        out = real_plan_apply(ctx, only)
        StateStore(ctx.store.root).hmac_key()  # the other process: a key of its own
        return out

    monkeypatch.setattr(plan_module, "build_plan",
                        lambda *a, **k: builds.append(1) or real_build(*a, **k))
    monkeypatch.setattr(pipeline, "plan_apply", plan_apply)
    monkeypatch.setattr("taosync.engine.certificate.certify", lambda settings, run: False)
    home = tmp_path / "home"
    assert run(["--home", str(home), "-c", str(fleet), "apply", "--no-verify", "-q"]) == 0
    assert len(builds) == 2  # planned, then again under the lock
    monkeypatch.undo()
    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    assert run(["--home", str(home), "-c", str(fleet), "status", "-q"]) == 0


# -- engine/system.py shared: reused only within one certification, for the same key ----


def _recorder():
    from taosync.engine.certificate import Hmac
    from taosync.engine.system import RecordingSystem

    return RecordingSystem(Hmac(b"k" * 32))


def test_shared_reuses_only_on_a_recording_system():
    from taosync.engine.system import shared, using

    calls: list[int] = []

    def compute():
        calls.append(1)
        return object()

    assert shared(("x",), compute) is not shared(("x",), compute)  # the disk: no memo
    assert len(calls) == 2
    recorder = _recorder()
    with using(recorder):
        one = shared(("x", 1), compute)
        assert shared(("x", 1), compute) is one
        assert shared(("x", 2), compute) is not one  # another key: computed again
    assert len(calls) == 4
    with using(_recorder()):  # another certification: its own memo
        assert shared(("x", 1), compute) is not one


def test_shared_never_keeps_an_unsure_or_clock_bound_or_failed_result():
    from taosync.engine.system import current, shared, using

    recorder = _recorder()
    with using(recorder):
        def unsure():
            recorder.unsure.append("read around the System")
            return object()

        assert shared(("unsure",), unsure) is not shared(("unsure",), unsure)

        def clock():
            current().now()  # read the clock and bound nothing
            return object()

        first = shared(("clock",), clock)
        recorder.clock_open = False
        assert shared(("clock",), clock) is not first

        def bounded():
            current().now()
            current().holds_until(float("inf"))
            return object()

        assert shared(("bounded",), bounded) is shared(("bounded",), bounded)

        failures: list[int] = []

        def failing():
            failures.append(1)
            raise ValueError("no")

        for _ in range(2):
            with pytest.raises(ValueError):
                shared(("failing",), failing)
        assert len(failures) == 2


def test_shared_never_keeps_a_result_whose_computation_printed(monkeypatch):
    """Each certified form's answer is the lines it printed: a computation that printed
    is run again by each form, so each prints them."""
    import sys

    from taosync.engine.certificate import _Capture
    from taosync.engine.system import shared, using

    chunks: list = []
    monkeypatch.setattr(sys, "stdout", _Capture(1, chunks, False, []))
    monkeypatch.setattr(sys, "stderr", _Capture(2, chunks, False, []))
    with using(_recorder()):
        def noisy():
            print("a line")
            return object()

        assert shared(("noisy",), noisy) is not shared(("noisy",), noisy)
        print("more", file=sys.stderr)
        assert shared(("quiet",), object) is shared(("quiet",), object)
    assert chunks == [[1, "a line\na line\n"], [2, "more\n"]]


def test_recorded_reads_are_one_read_per_file(tmp_path):
    """A RecordingSystem reads (and hashes) each file once: every form of a
    certification answers from the bytes its input records."""
    from taosync.engine.system import using

    target = tmp_path / "f"
    target.write_bytes(b"one")
    recorder = _recorder()
    with using(recorder):
        first = recorder.read_bytes(target)
        target.write_bytes(b"two")
        assert recorder.read_bytes(target) is first
    assert recorder.inputs[f"file:{target}"] == recorder.digest(b"one")
    assert not recorder.unsure


# -- the per-string fast paths say what the loops say ----------------------------------


def _outcome(call, text):
    try:
        return "ok", call(text)
    except Exception as exc:  # the same failure, too
        return "error", type(exc)


def test_keypath_parse_fast_path_is_the_loop():
    from taosync.formats.base import _parse, _parse_chars

    texts = ["".join(t) for n in range(7) for t in itertools.product('a.[]="\\x', repeat=n)]
    rng = random.Random(7)
    texts += ["".join(rng.choice('ab.[]="\\=- _') for _ in range(rng.randint(0, 16)))
              for _ in range(20_000)]
    texts += ['mcp.servers[name=a.b].env."X.Y"', 'a."q\\"x".b', "[model_id=m=1].x"]
    for text in texts:
        assert _outcome(_parse, text) == _outcome(_parse_chars, text), repr(text)


def test_yaml_analysis_fast_path_is_the_loop():
    from taosync.formats.yaml_writer import _analyse, _analyse_chars

    texts = ["".join(t) for n in range(1, 6) for t in itertools.product("a0-.:@~", repeat=n)]
    rng = random.Random(11)
    alphabet = "aZ09_./+=~@:-#' \n\t?,[]{}&*!|>\"%`\x85é"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))
              for _ in range(20_000)]
    texts += ["-", "---", "...", "a:", "https://mcp1.example.net/mcp", "@bench/server-1"]
    for text in texts:
        assert _analyse(text) == _analyse_chars(text), repr(text)


def test_escaped_fast_path_is_the_loop():
    from taosync.formats.base import escaped

    def loop(text, table, control):
        return "".join(table[c] if c in table else
                       control.format(ord(c)) if c < " " or c == "\x7f" else c for c in text)

    table = {'"': '\\"', "\\": "\\\\", "\n": "\\n"}
    rng = random.Random(5)
    alphabet = 'ab "\\\n\t\x00\x7f\x85\xa0é\u2028\U0001f600'
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert escaped(text, table, "\\u{:04x}") == loop(text, table, "\\u{:04x}"), repr(text)


def test_named_value_pattern_finds_what_it_found_before():
    """fleet/looks_secret.py NAMED_VALUE starts a name only where one can start (after a
    quote, or with no name character before it) and takes it whole: the same matches
    as the pattern that retried from inside every word (quadratic in a word's length)."""
    import re

    from taosync.fleet.looks_secret import NAMED_VALUE

    before = re.compile(r"""(?P<q>["']?)(?P<name>[A-Za-z0-9_.-]+)(?P=q)[ \t]*[:=][ \t]*"""
                        r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'"""
                        r"""|(?:(?:Bearer|Token|Basic)[ \t]+)?[^\s,{}\[\]#'"`]+)""", re.I)

    def found(pattern, text):
        return [(m.span(), m.group("name"), m.group("value")) for m in pattern.finditer(text)]

    texts = ["".join(t) for n in range(1, 6) for t in itertools.product('a.":= \'', repeat=n)]
    rng = random.Random(3)
    pieces = ["a", "Z", "0", "_", ".", "-", '"', "'", ":", "=", " ", "\t", "\n", ",", "{",
              "}", "\\", "Bearer ", "key", "#", "`", "["]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
              for _ in range(30_000)]
    texts += ['{"apiKey": "sk-abc", "url": "https://mcp1.example.net/mcp"}',
              "x'token'=v GITHUB_TOKEN=ghp_x Authorization: Bearer abc"]
    for text in texts:
        assert found(NAMED_VALUE, text) == found(before, text), repr(text)
        assert NAMED_VALUE.sub("#", text) == before.sub("#", text), repr(text)


def test_a_spelled_key_path_is_read_back_as_itself():
    """``keypath_str`` remembers its answer for ``keypath_parse`` (a certified run reads
    the render cache the apply just wrote) only where parsing gives the path back."""
    from hypothesis import given, settings, strategies as st

    from taosync.formats.base import Match, _parse, _round_trips, _spell

    segment = st.one_of(st.text(max_size=8),
                        st.builds(Match, st.sampled_from(["name", "model_id", "alias"]),
                                  st.text(max_size=8)))

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(segment, min_size=1, max_size=4).map(tuple))
    def check(path):
        if _round_trips(path):
            assert _parse(_spell(path)) == path

    check()
    assert _round_trips((Match("name", "a]b"),))  # spelled '[name="a]b"]' (once misread)
    assert not _round_trips((Match("na]me", "a"),))  # a field is the client's own name


def test_the_remembered_state_is_what_state_json_holds(tmp_path, monkeypatch):
    """Copies of a loaded State share its render cache (``inputs``, replaced but never
    changed in place): after an apply, its certified runs and a second apply, the parse
    every later load copies still says what state.json says."""
    import json

    from taosync.cli import run
    from taosync.engine import state

    monkeypatch.setenv("TAOTOKEN_API_KEY", TEST_KEY)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(fleet_text(6, 5))
    argv = ["--home", str(tmp_path / "home"), "-c", str(fleet), "apply", "--no-verify", "-q"]
    assert run(argv) == 0
    fleet.write_text(fleet_text(7, 3))
    for args in (argv, argv[:4] + ["plan", "-q"], argv[:4] + ["status", "-q"]):
        run(args)
        raw, parsed = state._parsed
        assert parsed.to_json() == state.State.from_json(json.loads(raw)).to_json()
    saved = (tmp_path / "home" / ".local/state/taosync/state.json").read_bytes()
    assert state._parsed[0] == saved


def test_plain_segment_pattern_is_the_loop():
    import sys

    from taosync.formats.base import _plain

    def _plain_chars(seg: str) -> bool:  # what _plain said before: \w is isalnum() or "_"
        return bool(seg) and all(c.isalnum() or c in "_-" for c in seg)

    every = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    for c in every:  # one character: \w against isalnum() or "_", "-" besides
        assert _plain(c) == _plain_chars(c), hex(ord(c))
    rng = random.Random(11)
    for _ in range(20_000):
        seg = "".join(rng.choice("ab_-. é١²Ⅻ\u0301\"[") for _ in range(rng.randint(0, 8)))
        assert _plain(seg) == _plain_chars(seg), repr(seg)


def test_canonical_is_the_encoders_text():
    """canonical() calls json's C encoder itself: the text (and any error) of the encoder
    it stands for, over values of every JSON type, floats and odd keys included."""
    from hypothesis import given, settings, strategies as st

    from taosync.fleet.secrets import _CANONICAL, canonical

    leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5))
    value = st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 2), st.booleans(),
                                  st.none(), st.floats(0, 1)), inner, max_size=3)),
        max_leaves=10)

    @settings(max_examples=1500, deadline=None)
    @given(value)
    def check(v):
        assert _outcome(canonical, v) == _outcome(_CANONICAL.encode, v)

    check()
    assert canonical({"b": [1, 2.5, None], "a": "é"}) == '{"a":"é","b":[1,2.5,null]}'
