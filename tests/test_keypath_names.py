"""Names that hold the characters of a key path's own spelling (``]``, ``"``, ``[``, ``=``,
``\\``, ``.``) are read back from state.json as the keys they were: a model id or a
server name is the user's text, and state.json is how prune, drift and destroy find the
keys taosync wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from taosync.formats.base import Match, _parse, _parse_chars, _spell, keypath_parse, keypath_str

#: the characters a spelling gives meaning to, and a few that it does not
_NASTY = st.text(alphabet='ab]["=\\. \n/', max_size=8)
_SEGMENTS = st.one_of(_NASTY, st.builds(Match, st.sampled_from(["name", "id", "alias"]), _NASTY))


@settings(max_examples=3000, deadline=None)
@given(st.lists(_SEGMENTS, min_size=1, max_size=4))
def test_a_spelled_path_reads_back_as_itself(segments):
    path = tuple(segments)
    text = _spell(path)
    assert _parse(text) == path
    assert _parse_chars(text) == path
    assert keypath_parse(keypath_str(path)) == path


def test_state_written_before_values_were_quoted_reads_as_it_did():
    """A value was spelled as it is until it could hold a ``]``: those spellings (any
    without a ``]``) read as they always did, but for a value both starting and ending
    in ``"`` (the one spelling the two rules share)."""
    for old, value in [('models[name=a"b].x', 'a"b'), ("models[name=a\\b].x", "a\\b"),
                       ('models[name="a].x', '"a'), ("models[name=a=b[c].x", "a=b[c"),
                       ("models[name=gpt-4o].x", "gpt-4o")]:
        assert _parse(old) == ("models", Match("name", value), "x"), old
        assert _parse_chars(old) == _parse(old)
    assert str(Match("name", "gpt-4o")) == "[name=gpt-4o]"  # the common spelling is unchanged
    assert str(Match("name", "a]b")) == '[name="a]b"]'


def _fleet(a: str, b: str, c: str, servers: list[str]) -> str:
    """A fleet routing ``a``, ``b`` and ``c`` to those models (its whole catalogue) for
    the clients that name list elements by model, with these MCP servers; written as
    JSON, which is YAML, so no name needs quoting by hand."""
    routes = {"a": a, "b": b, "c": c}
    return json.dumps({
        "version": 1,
        "gateway": {"base_url": "http://127.0.0.1:9/api", "key": "${env:TAOTOKEN_API_KEY}"},
        "models": {model: {} for model in routes.values()},
        "routes": routes, "default_route": "c",
        "clients": {"continue": {"roles": {"chat": "a", "edit": "b", "autocomplete": "c"}},
                    "pi": {"model": "a"}, "qwen-code": {"model": "b"},
                    "mistral-vibe": {"model": "a"}, "droid": {"model": "a"}},
        "mcp_servers": {name: {"command": "npx", "args": ["-y", name]} for name in servers},
    }, indent=2)


FLEET = _fleet("weird]model", '"quoted"', "plain", ["srv]x", "keep"])
#: the fleet without the odd names: their entries must go from every file
PRUNED = _fleet("plain", "plain", "plain", ["keep"])
USER_CONTINUE = "name: mine\nversion: 1.0.0\nmodels:\n  - name: mine  # my own\n    provider: ollama\n    model: llama3\n"


def _status(home: Path, fleet: Path) -> tuple[int, dict]:
    """``status --json`` in a process of its own: the fast path answers there."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                           str(fleet), "--json", "status"], capture_output=True, text=True,
                          env=env)
    return done.returncode, json.loads(done.stdout)


def test_odd_names_are_checked_and_pruned_in_every_file(home, tmp_path, taosync):
    """A model or server whose name holds ``]`` or quotes is checked for drift, and when
    removed from the fleet leaves each client's file (next to a user's own entry): before,
    state.json misread their keys, so they stayed, with the key inline, while status
    said ``no drift``."""
    (home / ".continue").mkdir()
    (home / ".continue/config.yaml").write_text(USER_CONTINUE)
    fleet = tmp_path / "odd.yaml"
    fleet.write_text(FLEET)
    assert taosync("apply", "--no-verify", config=fleet).rc == 0
    rc, report = _status(home, fleet)
    assert rc == 0 and report["drift"] == [], report

    pi = home / ".pi/agent/models.json"
    written = pi.read_text()
    pi.write_text(written.replace('"name": "weird]model"', '"name": "edited"'))
    rc, report = _status(home, fleet)
    assert rc == 1 and "weird]model" in json.dumps(report["drift"]), report
    pi.write_text(written)

    fleet.write_text(PRUNED)
    assert taosync("apply", "--no-verify", config=fleet).rc == 0
    for path in home.rglob("*"):
        if path.is_file() and "taosync" not in str(path):
            text = path.read_text()
            for name in ("weird]model", "quoted", "srv]x"):
                assert name not in text, (path, name)
    assert "- name: mine  # my own" in (home / ".continue/config.yaml").read_text()
    rc, report = _status(home, fleet)
    assert rc == 0 and report["drift"] == [] and report["pending"] == [], report
