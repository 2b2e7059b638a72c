"""``FormatEditor.has`` says what ``get(…) is not MISSING`` says, for every editor: the
planner asks it of the containers it created (engine/plan.py ``_prune``) so as not to
copy a container holding the whole catalogue."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from taosync.formats.base import MISSING, FormatError, Match
from taosync.formats.registry import EDITORS, WRITERS, editor_for

NAMES = st.sampled_from(["a", "b", "c", "x.y", "name"])
LEAF = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.booleans())
VALUE = st.recursive(LEAF, lambda inner: st.one_of(
    st.dictionaries(NAMES, inner, max_size=3),
    st.lists(st.fixed_dictionaries({"name": st.sampled_from(["p", "q"])}, optional={"v": inner}),
             max_size=3)), max_leaves=6)
SEGMENT = st.one_of(NAMES, st.builds(Match, st.just("name"), st.sampled_from(["p", "q", "r"])))
PATH = st.lists(SEGMENT, min_size=1, max_size=4).map(tuple)
STRUCTURED = sorted(f for f in EDITORS if f in ("json", "jsonc", "yaml", "toml"))


@pytest.mark.parametrize("fmt,new", [(f, False) for f in STRUCTURED]
                         + [(f, True) for f in STRUCTURED if f in WRITERS])
@settings(max_examples=150, deadline=None)
@given(sets=st.lists(st.tuples(PATH, VALUE), max_size=6), asks=st.lists(PATH, max_size=12))
def test_has_is_get_not_missing(fmt, new, sets, asks):
    editor = editor_for(fmt, new=new)
    doc = editor.parse("")
    for path, value in sets:
        try:
            editor.set(doc, path, value)
        except (FormatError, ValueError, TypeError):
            pass  # a path through a scalar, a value the format cannot hold: not the point
    for path in asks + [p[:i] for p, _ in sets for i in range(1, len(p) + 1)]:
        assert editor.has(doc, path) == (editor.get(doc, path) is not MISSING), path
