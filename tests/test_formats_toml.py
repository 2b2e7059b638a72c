"""The TOML editor: Codex-shaped edits, placement, byte preservation, errors, properties."""

from __future__ import annotations

import re
import tomllib
from collections import Counter

import pytest
import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from taosync.formats.base import MISSING, FormatError, Match, NamedIndex
from taosync.formats.registry import editor_for
from plain_model import play
from taosync.formats.toml import EDITOR as E

CODEX = """# Codex configuration
model = "gpt-5-codex"  # default model
approval_policy = "on-request"
sandbox_mode = "workspace-write"

[tui]
notifications = true

# Projects I trust
[projects."/home/u/work/api"]
trust_level = "trusted"

[projects."/home/u/work/web app"]
trust_level = "trusted"

# Another gateway
[model_providers.azure]
name = "Azure"
base_url = 'https://example.openai.azure.com/openai'
env_key = "AZURE_OPENAI_API_KEY"
query_params = { api-version = "2025-04-01-preview" }

# MCP servers
[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/u"]
env = { LOG_LEVEL = "info" }

[mcp_servers.github]
command = "gh-mcp"
startup_timeout_sec = 20

[mcp_servers.github.env]
GITHUB_TOKEN = "ghp_x"  # rotate me
"""


def edit(text, *ops):
    doc = E.parse(text)
    for op in ops:
        if op[0] == "set":
            E.set(doc, op[1], op[2])
        else:
            E.delete(doc, op[1])
    out = E.dump(doc)
    tomllib.loads(out)
    return out


@pytest.mark.parametrize(
    "text",
    [CODEX, "", "\n\n", "a = 1", "a = 1\r\n[t]\r\nb = 'x'\r\n", "[a.b]\n  c = 1 # x\n\n\n[[d]]\ne = [\n  1,\n  2,\n]\n"],
)
def test_round_trip_is_exact(text):
    assert E.dump(E.parse(text)) == text


def test_editor_for_finds_it():
    assert editor_for("toml") is E


def test_get_plain_values():
    doc = E.parse(CODEX)
    assert E.get(doc, ("model",)) == "gpt-5-codex"
    assert type(E.get(doc, ("model",))) is str
    assert E.get(doc, ("projects", "/home/u/work/web app")) == {"trust_level": "trusted"}
    assert E.get(doc, ("mcp_servers", "github", "env")) == {"GITHUB_TOKEN": "ghp_x"}
    assert E.get(doc, ("mcp_servers", "fs", "args"))[0] == "-y"
    assert E.get(doc, ("model_providers", "azure", "query_params", "api-version")) == "2025-04-01-preview"
    assert E.get(doc, ("mcp_servers", "github", "startup_timeout_sec")) == 20
    assert E.get(doc, ("nope",)) is MISSING
    assert E.get(doc, ("model", "x")) is MISSING
    assert E.get(E.parse(""), ("a",)) is MISSING


# -- the Codex edits -------------------------------------------------------------------

PROVIDER = {
    "name": "TaoToken",
    "base_url": "https://gw.example/v1",
    "env_key": "TAO_API_KEY",
    "wire_api": "responses",
}


def test_new_provider_is_a_real_table_after_its_siblings():
    doc = E.parse(CODEX)
    assert E.set(doc, ("model_providers", "taotoken"), PROVIDER) == []
    out = E.dump(doc)
    assert out == CODEX.replace(
        'query_params = { api-version = "2025-04-01-preview" }\n',
        'query_params = { api-version = "2025-04-01-preview" }\n\n'
        "[model_providers.taotoken]\n"
        'name = "TaoToken"\n'
        'base_url = "https://gw.example/v1"\n'
        'env_key = "TAO_API_KEY"\n'
        'wire_api = "responses"\n',
    )
    assert tomllib.loads(out)["model_providers"]["taotoken"] == PROVIDER


def test_root_keys_stay_in_the_root():
    out = edit(CODEX, ("set", ("model",), "gpt-5"), ("set", ("model_provider",), "taotoken"))
    assert out == CODEX.replace(
        'model = "gpt-5-codex"  # default model\napproval_policy = "on-request"\nsandbox_mode = "workspace-write"\n',
        'model = "gpt-5"  # default model\napproval_policy = "on-request"\nsandbox_mode = "workspace-write"\n'
        'model_provider = "taotoken"\n',
    )
    assert tomllib.loads(out)["model_provider"] == "taotoken"


def test_root_key_in_a_file_with_only_tables():
    text = "# Codex\n\n# providers\n[model_providers.x]\nname = \"x\"\n"
    assert edit(text, ("set", ("model",), "m")) == (
        '# Codex\n\nmodel = "m"\n\n# providers\n[model_providers.x]\nname = "x"\n'
    )
    assert edit("[t]\nx = 1\n", ("set", ("model",), "m")) == 'model = "m"\n\n[t]\nx = 1\n'


def test_mcp_server_like_codex_mcp_add():
    server = {"command": "npx", "args": ["-y", "docs-mcp"], "env": {"DOCS_TOKEN": "t", "MODE": "ro"}}
    doc = E.parse(CODEX)
    E.set(doc, ("mcp_servers", "docs"), server)
    out = E.dump(doc)
    assert out == CODEX + (
        "\n[mcp_servers.docs]\n"
        'command = "npx"\n'
        'args = ["-y", "docs-mcp"]\n'
        "\n[mcp_servers.docs.env]\n"
        'DOCS_TOKEN = "t"\n'
        'MODE = "ro"\n'
    )
    assert tomllib.loads(out)["mcp_servers"]["docs"] == server


def test_new_top_level_table_goes_last_and_parents_have_no_header():
    doc = E.parse(CODEX)
    created = E.set(doc, ("profiles", "tao", "model"), "gpt-5")
    assert created == [("profiles",), ("profiles", "tao")]
    assert E.dump(doc) == CODEX + '\n[profiles.tao]\nmodel = "gpt-5"\n'


def test_trusting_a_project_path():
    doc = E.parse(CODEX)
    assert E.get(doc, ("projects", "/home/u/work/api", "trust_level")) == "trusted"
    assert E.set(doc, ("projects", "/srv/my repo.git", "trust_level"), "trusted") == [("projects", "/srv/my repo.git")]
    out = E.dump(doc)
    assert out == CODEX.replace(
        '[projects."/home/u/work/web app"]\ntrust_level = "trusted"\n',
        '[projects."/home/u/work/web app"]\ntrust_level = "trusted"\n\n'
        '[projects."/srv/my repo.git"]\ntrust_level = "trusted"\n',
    )
    assert tomllib.loads(out)["projects"]["/srv/my repo.git"] == {"trust_level": "trusted"}


def test_comments_introducing_the_next_table_stay_with_it():
    # "# MCP servers" closes [model_providers.azure] in tomlkit's tree, but introduces
    # [mcp_servers.fs]: a new provider goes above it, and deleting it puts it back
    text = CODEX
    doc = E.parse(text)
    E.set(doc, ("model_providers", "taotoken", "name"), "Tao")
    out = E.dump(doc)
    assert '[model_providers.taotoken]\nname = "Tao"\n\n# MCP servers\n[mcp_servers.fs]' in out
    E.delete(doc, ("model_providers", "taotoken"))
    assert E.dump(doc) == text


def test_set_then_delete_and_prune_restores_bytes():
    values = {
        ("model",): "tao/gpt-5",
        ("model_provider",): "taotoken",
        ("model_providers", "taotoken"): PROVIDER,
        ("mcp_servers", "docs"): {"command": "x", "env": {"K": "v"}},
        ("profiles", "tao", "model"): "m",
        ("tui", "theme"): "dark",
        ("mcp_servers", "fs", "env", "TOKEN"): "t",
    }
    doc = E.parse(CODEX)
    created = []
    for path, value in values.items():
        created += E.set(doc, path, value)
    tomllib.loads(E.dump(doc))
    for path in values:
        if path == ("model",):
            E.set(doc, path, "gpt-5-codex")
        else:
            assert E.delete(doc, path) is True
    for path in reversed(created):
        if E.get(doc, path) == {}:
            E.delete(doc, path)
    assert E.dump(doc) == CODEX


def test_equal_values_leave_bytes_alone():
    doc = E.parse(CODEX)
    E.set(doc, ("model",), "gpt-5-codex")
    E.set(doc, ("mcp_servers", "github"), {"command": "gh-mcp", "startup_timeout_sec": 20, "env": {"GITHUB_TOKEN": "ghp_x"}})
    E.set(doc, ("model_providers", "azure", "query_params"), {"api-version": "2025-04-01-preview"})
    E.set(doc, ("tui", "notifications"), True)
    assert E.dump(doc) == CODEX


def test_replacing_keeps_inline_comment_and_string_style():
    out = edit(CODEX, ("set", ("mcp_servers", "github", "env", "GITHUB_TOKEN"), "ghp_y"))
    assert out == CODEX.replace('"ghp_x"  # rotate me', '"ghp_y"  # rotate me')
    out = edit(CODEX, ("set", ("model_providers", "azure", "base_url"), "https://gw/v1"))
    assert out == CODEX.replace("'https://example.openai.azure.com/openai'", "'https://gw/v1'")
    out = edit(CODEX, ("set", ("model_providers", "azure", "base_url"), "it's"))
    assert out == CODEX.replace("'https://example.openai.azure.com/openai'", '"it\'s"')


def test_dict_over_table_updates_key_by_key():
    out = edit(CODEX, ("set", ("mcp_servers", "github"), {"command": "gh", "startup_timeout_sec": 20, "env": {"GITHUB_TOKEN": "ghp_x", "X": "1"}}))
    assert out == CODEX.replace('command = "gh-mcp"', 'command = "gh"').replace(
        'GITHUB_TOKEN = "ghp_x"  # rotate me\n', 'GITHUB_TOKEN = "ghp_x"  # rotate me\nX = "1"\n'
    )


# -- inline tables and arrays ------------------------------------------------------------


def test_dicts_inside_inline_tables_stay_inline():
    out = edit(CODEX, ("set", ("mcp_servers", "fs", "env", "TOKEN"), "t"))
    assert out == CODEX.replace('env = { LOG_LEVEL = "info" }', 'env = { LOG_LEVEL = "info", TOKEN = "t" }')
    out = edit(CODEX, ("set", ("mcp_servers", "fs", "env", "nested", "k"), [1, 2]))
    assert 'env = { LOG_LEVEL = "info", nested = { k = [1, 2] } }' in out
    out = edit(CODEX, ("delete", ("mcp_servers", "fs", "env", "LOG_LEVEL")))
    assert out == CODEX.replace('env = { LOG_LEVEL = "info" }', "env = {}")
    out = edit("t = {a=1,b=2}  # c\n", ("delete", ("t", "a")), ("set", ("t", "z"), 3))
    assert out == "t = {b=2, z=3}  # c\n"
    out = edit("[x]\ny = { a = 1, b = { c = 2 } }  # note\n", ("set", ("x", "y", "b", "d"), 3))
    assert out == "[x]\ny = { a = 1, b = { c = 2, d = 3 } }  # note\n"


def test_match_in_array_of_inline_tables():
    text = 'servers = [{ name = "a", url = "u" }, { name = "b" }]\n'
    doc = E.parse(text)
    assert E.get(doc, ("servers", Match("name", "a"), "url")) == "u"
    E.set(doc, ("servers", Match("name", "b"), "url"), "v")
    E.set(doc, ("servers", Match("name", "c")), {"url": "w"})
    assert tomllib.loads(E.dump(doc))["servers"] == [
        {"name": "a", "url": "u"},
        {"name": "b", "url": "v"},
        {"name": "c", "url": "w"},
    ]
    assert E.delete(doc, ("servers", Match("name", "a"))) is True
    assert E.get(doc, ("servers",)) == [{"name": "b", "url": "v"}, {"name": "c", "url": "w"}]


AOT = """[[servers]]
name = "a"
url = "u"

# the b server
[[servers]]
name = "b"

# afterwards
[x]
y = 1
"""


def test_match_in_array_of_tables():
    doc = E.parse(AOT)
    created = E.set(doc, ("servers", Match("name", "c"), "url"), "w")
    assert created == [("servers", Match("name", "c"))]
    assert E.dump(doc) == AOT.replace(
        '[[servers]]\nname = "b"\n\n', '[[servers]]\nname = "b"\n\n[[servers]]\nname = "c"\nurl = "w"\n\n'
    )
    E.delete(doc, ("servers", Match("name", "c")))
    assert E.dump(doc) == AOT
    E.delete(doc, ("servers", Match("name", "a")))
    assert E.dump(doc) == '# the b server\n[[servers]]\nname = "b"\n\n# afterwards\n[x]\ny = 1\n'


def test_match_creates_an_array_of_tables_in_table_context():
    doc = E.parse("a = 1\n")
    created = E.set(doc, ("servers", Match("name", "x"), "url"), "u")
    assert created == [("servers",), ("servers", Match("name", "x"))]
    assert E.dump(doc) == 'a = 1\n\n[[servers]]\nname = "x"\nurl = "u"\n'


# -- shapes of tables --------------------------------------------------------------------


def test_super_tables_and_dotted_keys():
    assert edit("[a.b]\nx = 1\n", ("set", ("a", "k"), 2)) == "[a]\nk = 2\n\n[a.b]\nx = 1\n"
    assert edit("a.b = 1\n\n[t]\nx = 1\n", ("set", ("a", "c"), 2)) == "a.b = 1\na.c = 2\n\n[t]\nx = 1\n"
    out = edit("[a]\nx = 1\n[b]\ny = 1\n[a.c]\nz = 1\n", ("set", ("a", "w"), 2), ("set", ("a", "c", "q"), 3))
    assert tomllib.loads(out) == {"a": {"x": 1, "w": 2, "c": {"z": 1, "q": 3}}, "b": {"y": 1}}


def test_indented_tables_keep_their_indentation():
    assert edit("[a]\n  x = 1\n  [a.b]\n  y = 2\n", ("set", ("a", "z"), 3), ("set", ("a", "b", "w"), 4)) == (
        "[a]\n  x = 1\n  z = 3\n  [a.b]\n  y = 2\n  w = 4\n"
    )


def test_table_and_value_swap_places():
    assert edit("[t]\nx = 1\n\n[u]\ny = 2\n", ("set", ("t",), 5)) == "t = 5\n\n[u]\ny = 2\n"
    assert edit("a = 1\nb = 2\n", ("set", ("a",), {"k": "v"})) == 'b = 2\n\n[a]\nk = "v"\n'


def test_empty_tables():
    assert edit("[model.a]\nx = 1\n", ("set", ("model",), {})) == "[model]\n"
    assert edit("a = 1\n", ("set", ("t",), {})) == "a = 1\n\n[t]\n"
    # a header-less parent emptied by a delete has nothing left to show
    assert edit("a = 1\n\n[p.x]\nk = 1\n", ("delete", ("p", "x"))) == "a = 1\n"


def test_empty_document():
    for text in ("", "\n"):
        doc = E.parse(text)
        E.set(doc, ("model",), "m")
        E.set(doc, ("model_providers", "t", "name"), "T")
        assert E.dump(doc) == 'model = "m"\n\n[model_providers.t]\nname = "T"\n'


def test_crlf_stays_crlf():
    out = edit("a = 1\r\n\r\n[t]\r\nb = 2\r\n", ("set", ("t", "c"), 3), ("set", ("u", "v"), {"w": 1}))
    assert out == "a = 1\r\n\r\n[t]\r\nb = 2\r\nc = 3\r\n\r\n[u.v]\r\nw = 1\r\n"


def test_no_final_newline():
    assert edit("a = 1", ("set", ("b",), 2)) == "a = 1\nb = 2\n"
    assert edit("a = 1", ("set", ("a",), 2)) == "a = 2"


def test_values_toml_cannot_hold():
    doc = E.parse(CODEX)
    with pytest.raises(FormatError):
        E.set(doc, ("x",), None)
    with pytest.raises(FormatError):
        E.set(doc, ("x",), {"a": [1, None]})
    with pytest.raises(FormatError):
        E.set(doc, ("model", "sub"), 1)
    with pytest.raises(FormatError):
        E.set(doc, ("tui", Match("name", "x")), {})
    assert E.dump(doc) == CODEX


def test_delete():
    doc = E.parse(CODEX)
    assert E.delete(doc, ("sandbox_mode",)) is True
    assert E.delete(doc, ("sandbox_mode",)) is False
    assert E.delete(doc, ("model", "x")) is False
    assert E.dump(doc) == CODEX.replace('sandbox_mode = "workspace-write"\n', "")
    doc = E.parse(CODEX)
    assert E.delete(doc, ("mcp_servers", "github", "env")) is True
    # the user's comment on a key that goes stays where the table was
    assert E.dump(doc) == CODEX.replace('\n[mcp_servers.github.env]\nGITHUB_TOKEN = "ghp_x"  # rotate me\n',
                                        "\n# rotate me\n")
    doc = E.parse(CODEX)
    E.delete(doc, ("projects", "/home/u/work/api"))
    assert E.dump(doc) == CODEX.replace('[projects."/home/u/work/api"]\ntrust_level = "trusted"\n\n', "")


@pytest.mark.parametrize(
    "text, line, column",
    [
        ("a = 1\na = 2\n", 2, 1),
        ("a = \n", 1, 5),
        ("[t]\nx = 1\n[t]\n", 3, 1),
        ('model = "x\n', 1, 9),  # the quote that is never closed (issue 29)
        ("a = [1,\n", 2, 1),
    ],
)
def test_errors_carry_line_and_column(text, line, column):
    with pytest.raises(FormatError) as err:
        E.parse(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert err.value.message.startswith("invalid TOML")


# -- properties ----------------------------------------------------------------------------

keys = st.sampled_from(["a", "b", "model", "x.y", "/p q", "k-1"])
scalars = st.one_of(st.booleans(), st.integers(-(10**9), 10**9), st.text(max_size=8))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(scalars, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
paths = st.lists(keys, min_size=1, max_size=3).map(tuple)


RAW_VALUES = ["1", "true", '"s"', "'lit'", "[1, 2]", "{ i = 1 }", '"x"  # why']


@st.composite
def toml_texts(draw):
    """Random documents with comments and blank lines between their parts."""
    lines = []

    def noise():
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(st.sampled_from(["", "# note", "  # indented note"])))

    def kvs(depth):
        for key in draw(st.lists(keys, max_size=3, unique=True)):
            noise()
            lines.append(E_key(key) + " = " + draw(st.sampled_from(RAW_VALUES)))
        return

    kvs(0)
    used = set()
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.lists(keys, min_size=1, max_size=2).map(tuple))
        if any(name[: i + 1] in used for i in range(len(name))) or any(u[: len(name)] == name for u in used):
            continue
        used.add(name)
        noise()
        lines.append("[" + ".".join(E_key(k) for k in name) + "]")
        kvs(1)
    noise()
    return "\n".join(lines) + "\n"


def E_key(key):
    return key if key.replace("-", "").isalnum() else '"' + key + '"'


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=toml_texts())
def test_property_round_trip(text):
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    assert E.dump(E.parse(text)) == text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=toml_texts(),
    ops=st.lists(st.one_of(st.tuples(st.just("set"), paths, values), st.tuples(st.just("delete"), paths, st.none())), max_size=6),
)
def test_property_edits_match_a_plain_model(text, ops):
    try:
        model = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    doc = E.parse(text)
    for kind, path, value in ops:
        play(E, doc, model, kind, path, value)
    # header-less parents emptied by a delete vanish from the text (documented)
    assert _pruned(tomllib.loads(E.dump(doc))) == _pruned(model)


def _pruned(x):
    if isinstance(x, dict):
        out = {k: _pruned(v) for k, v in x.items()}
        return {k: v for k, v in out.items() if not (isinstance(x[k], dict) and v == {})}
    return x


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=toml_texts(), new=st.dictionaries(paths, values, max_size=4))
def test_property_set_new_then_delete_and_prune_restores_bytes(text, new):
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    doc = E.parse(text)
    created, done = [], []
    for path, value in new.items():
        if E.get(doc, path[:1]) is not MISSING:  # only keys that are new from the top
            continue
        try:
            created += E.set(doc, path, value)
        except FormatError:
            continue
        done.append(path)
    tomllib.loads(E.dump(doc))
    for path in done:
        E.delete(doc, path)
    for path in reversed(created):
        if E.get(doc, path) == {}:
            E.delete(doc, path)
    assert E.dump(doc) == text


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        # issue 29: what is wrong and the line to write, where the user slipped
        ('model = "x"\nprofile = gpt-4\n', 2, 11, 'a text value is quoted in TOML; write '
                                                 'profile = "gpt-4"'),
        ('model: "gpt-4"\n', 1, 6, "TOML sets a key with '=', not ':'; write model = \"gpt-4\""),
        ('model "gpt-4"\n', 1, 6, "missing '=' after 'model'; write model = \"gpt-4\""),
        ('[profiles.deep\nmodel = "a"\n', 1, 15, "the table header [profiles.deep is not "
                                                  "closed; write [profiles.deep]"),
        ('model = "a"\nmodel = "b"\n', 2, 1, "'model' is set twice (first at line 1)"),
        ('x = {a = 1, }\n', 1, 11, "a trailing comma is not allowed in an inline table"),
        ('model = "gpt-4\nother = 1\n', 1, 9, 'the string opened with " at column 9 is never '
                                               'closed; add the closing " on this line'),
    ],
)
def test_errors_say_what_to_write(text, line, column, words):
    with pytest.raises(FormatError) as err:
        E.parse(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert err.value.message.startswith("invalid TOML: ") and words in err.value.message


# -- linear placement (#24 Build 7) ----------------------------------------------------
# A new table's placement is found from where it was added (tomlkit's key maps and the
# name index), not by flattening the whole document on each new table; the bytes must be
# the ones the flattening gives, which stays as the fallback (out-of-order tables).

AOT_TEXT = """# my models
[[models]]
name = "mine"  # keep
alias = "m"

# the next one
[[models]]
name = "other"

[tui]
x = 1

# closing words
"""

named = st.sampled_from(["mine", "other", "new-1", "new-2"]).map(lambda n: Match("name", n))
any_paths = st.one_of(
    paths,
    st.tuples(st.sampled_from(["models", "mcp_servers"]), keys, keys),
    st.tuples(st.sampled_from(["models", "servers"]), named, keys),
    st.tuples(st.sampled_from(["models", "servers"]), named, keys, keys),
    st.tuples(st.just("servers"), named, st.just("name")),
)
INLINE_TEXT = 'servers = [{ name = "mine", a = 1 }, {name="other"}]  # inline\n\n[tui]\nx = 1\n'



def _edited(text, ops, flatten):
    from contextlib import nullcontext
    from unittest import mock

    from taosync.formats.toml import TomlEditor

    with mock.patch.object(TomlEditor, "_chain", staticmethod(lambda *a: None)) if flatten else nullcontext():
        doc = E.parse(text)
        out = []
        for kind, path, value in ops:
            try:
                out.append(E.set(doc, path, value) if kind == "set" else E.delete(doc, path))
            except FormatError as exc:
                out.append(str(exc))
        return out, E.dump(doc)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(toml_texts(), st.sampled_from([CODEX, AOT_TEXT, INLINE_TEXT, "", "a = 1\n"])),
    ops=st.lists(st.one_of(st.tuples(st.just("set"), any_paths, values),
                           st.tuples(st.just("delete"), any_paths, st.none())), max_size=8),
)
def test_property_linear_placement_gives_the_flattening_bytes(text, ops):
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    assert _edited(text, ops, flatten=False) == _edited(text, ops, flatten=True)


def test_linear_placement_is_used():
    """The property above compares something: a new table, a new [[…]] element and a new
    sub-table of an element are each placed from their chain, not the fallback."""
    from unittest import mock

    from taosync.formats import toml as toml_module

    doc = E.parse(AOT_TEXT)
    with mock.patch.object(toml_module, "_flatten", side_effect=AssertionError("flattened")):
        E.set(doc, ("mcp_servers", "s", "command"), "npx")
        E.set(doc, ("models", Match("name", "new"), "alias"), "n")
        E.set(doc, ("models", Match("name", "mine"), "extra", "k"), 1)
        E.set(doc, ("models", Match("name", "other"), "alias"), "o")
    assert E.dump(doc) == edit(AOT_TEXT, ("set", ("mcp_servers", "s", "command"), "npx"),
                               ("set", ("models", Match("name", "new"), "alias"), "n"),
                               ("set", ("models", Match("name", "mine"), "extra", "k"), 1),
                               ("set", ("models", Match("name", "other"), "alias"), "o"))


# -- linear deletion (#24 Build 7) -----------------------------------------------------
# A deleted table's neighbours (where its closing comments go, whether anything follows
# the blank line before it) are found by stepping from where it was over the Nulls the
# deletes before it left, and a deleted [[…]] element keeps the name index instead of
# rebuilding it; the bytes must be the ones the flattening (and a rebuilt index) give.

SECTION_NAMES = ["mcp.s1", "mcp.s2", "mcp.s3", "tui", "a", "a.x", "a.y", "b.c", '"/p q"']
ELEMENT_NAMES = ["n1", "n2", "n3", "n1"]  # a name twice: the index forgets that list


@st.composite
def deletable_texts(draw):
    """Documents with the parts a delete has to keep apart: comments and blank lines
    between and closing tables, out-of-order tables (``[a.x]``, ``[b.c]``, ``[a.y]``),
    dotted keys, inline tables, ``[[…]]`` elements with comments and sub-tables, and
    comments on headers: a super table's child's (``[a.x]  # on a.x`` with no ``[a]``),
    whose comment tomlkit copies onto the super table, an out-of-order part's."""
    lines: list[str] = []

    def noise():
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(st.sampled_from(["", "", "# note", "  # indented note"])))

    def header(text):
        lines.append(text + draw(st.sampled_from(["", "", f"  # on {text.strip('[]')}"])))

    def kvs():
        for key in draw(st.lists(st.sampled_from(["k", "m", "d.e", "d.f", "name2"]), max_size=3, unique=True)):
            noise()
            lines.append(key + " = " + draw(st.sampled_from(RAW_VALUES)))

    kvs()
    tables = iter(draw(st.permutations(SECTION_NAMES)))
    for _ in range(draw(st.integers(0, 6))):
        noise()
        kind = draw(st.sampled_from(["table", "element", "element", "sub"]))
        if kind == "table":
            header("[" + next(tables) + "]")
        else:
            aot = draw(st.sampled_from(["srv", "mcp.list"]))
            header(f"[[{aot}]]")
            noise()
            lines.append(f'name = "{draw(st.sampled_from(ELEMENT_NAMES))}"')
            if kind == "sub":
                kvs()
                noise()
                header(f"[{aot}.env]")
        kvs()
    noise()
    return "\n".join(lines) + "\n"


def _every_path(value, path=()):
    """Every key path in a plain TOML value: keys, tables, and named elements by name."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,)
            yield from _every_path(v, path + (k,))
    elif isinstance(value, list):
        for el in value:
            if isinstance(el, dict) and isinstance(el.get("name"), str):
                yield path + (Match("name", el["name"]),)
                yield from _every_path(el, path + (Match("name", el["name"]),))


@st.composite
def deletions(draw):
    """A document and deletes of what it holds, in random order: some of its paths, or
    all of its top-level keys (everything), now and then a set between them."""
    text = draw(deletable_texts())
    try:
        model = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        assume(False)  # a table twice, a key twice: not what this is about
    if draw(st.booleans()):
        ops = [("delete", (k,), None) for k in draw(st.permutations(list(model)))]
    else:
        every = list(dict.fromkeys(_every_path(model)))
        ops = [("delete", p, None) for p in draw(st.permutations(every))][:draw(st.integers(0, len(every)))]
    # sets in between: anywhere, a key next to the ones deleted, a table next to them
    near = [p + ("new",) for p in _every_path(model)] + [("new",), ("mcp", "s4", "k"), ("srv", Match("name", "n4"), "k")]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(ops)))
        ops.insert(at, ("set", draw(st.one_of(any_paths, st.sampled_from(near))), draw(values)))
    return text, ops


def _edited_old_way(text, ops):
    """:func:`_edited` by the flattening, with the name index rebuilt after each
    element deleted: what the editor did before deletes were linear."""
    from unittest import mock

    with mock.patch.object(NamedIndex, "removed", lambda self, items, idx, element: self.forget()):
        return _edited(text, ops, flatten=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=deletions())
def test_property_linear_deletion_gives_the_flattening_bytes(case):
    text, ops = case
    fast, old = _edited(text, ops, flatten=False), _edited_old_way(text, ops)
    assert fast == old
    if tomlkit.parse(text).as_string() != text:  # tomlkit would move a table: no edit is made
        assert fast[1] == text
        assert all(r is False or "would move" in r for r in fast[0]), fast[0]
        return
    if all(kind == "delete" for kind, _, _ in ops):  # every comment is the user's: none goes,
        assert _comments(fast[1]) == _comments(text), fast[1]  # none comes twice
    if ops and all(kind == "delete" for kind, _, _ in ops) and len(ops) == len(tomllib.loads(text)) \
            and all(len(p) == 1 for _, p, _ in ops):
        assert tomllib.loads(fast[1]) == {}  # everything deleted


def _comments(text):
    """How many times each comment is in ``text`` ("# note", "# why", "# on a.x", …;
    no key or string of these documents holds a ``#``)."""
    return Counter(re.findall(r"#[^\n]*", text))


DELETABLE = """# my settings
model = "m"  # mine

[tui]
x = 1

# servers taosync wrote
[mcp.s1]
command = "a"
# closing s1

[mcp.s2]
command = "b"

[[srv]]
name = "n1"
# about n2
[[srv]]
name = "n2"
[srv.env]
K = "v"

[[srv]]
name = "n3"

# closing words
"""


def test_a_set_between_deletes_moves_what_they_stepped_over():
    """The deleted keys and [A] left Nulls the delete of [A] stepped over; k4 is
    inserted among them: deleting [B] must put its closing comment after k4, not
    after k1 (the steps remembered are forgotten on every set)."""
    text = "k1 = 1\nk2 = 2\nk3 = 3\n[A]\nx = 1\n[B]\ny = 2\n# closing B\n"
    ops = [("delete", ("k2",), None), ("delete", ("k3",), None), ("delete", ("A",), None),
           ("set", ("k4",), 4), ("delete", ("B",), None)]
    assert _edited(text, ops, flatten=False) == _edited_old_way(text, ops)
    assert _edited(text, ops, flatten=False)[1] == "k1 = 1\nk4 = 4\n# closing B\n"


def test_linear_deletion_is_used():
    """The property above compares something: deleting tables, a [[…]] element with a
    sub-table and whole arrays of tables goes through the chains (no flattening) and
    keeps the name index (no rebuild)."""
    from unittest import mock

    from taosync.formats import toml as toml_module

    ops = [("delete", ("mcp", "s1"), None), ("delete", ("srv", Match("name", "n2")), None),
           ("delete", ("mcp", "s2"), None), ("delete", ("srv", Match("name", "n3")), None),
           ("delete", ("tui",), None), ("delete", ("srv",), None)]
    doc = E.parse(DELETABLE)
    E.get(doc, ("srv", Match("name", "n1")))
    with mock.patch.object(toml_module, "_flatten", side_effect=AssertionError("flattened")), \
            mock.patch.object(NamedIndex, "forget", side_effect=AssertionError("forgot")):
        for _, path, _ in ops:
            assert E.delete(doc, path) is True
    assert E.dump(doc) == _edited_old_way(DELETABLE, ops)[1] == \
        '# my settings\nmodel = "m"  # mine\n\n# servers taosync wrote\n# closing s1\n\n# about n2\n\n# closing words\n'


def test_name_index_follows_deletes():
    """Elements found by name after others were deleted (before and after them),
    appended, and a name two elements hold (the second is found once the first goes)."""
    text = "".join(f'[[srv]]\nname = "{n}"\nk = {i}\n\n' for i, n in enumerate(["a", "b", "c", "b", "d"]))
    doc = E.parse(text)
    assert E.get(doc, ("srv", Match("name", "b"), "k")) == 1
    assert E.delete(doc, ("srv", Match("name", "c")))
    assert E.get(doc, ("srv", Match("name", "d"), "k")) == 4
    E.set(doc, ("srv", Match("name", "e"), "k"), 5)
    assert E.delete(doc, ("srv", Match("name", "a")))
    assert [E.get(doc, ("srv", Match("name", n), "k")) for n in "bde"] == [1, 4, 5]
    assert E.delete(doc, ("srv", Match("name", "b")))
    assert E.get(doc, ("srv", Match("name", "b"), "k")) == 3  # the other "b"
    assert E.delete(doc, ("srv", Match("name", "e")))
    assert [E.get(doc, ("srv", Match("name", n), "k")) for n in "bde"] == [3, 4, MISSING]
    assert tomllib.loads(E.dump(doc)) == {"srv": [{"name": "b", "k": 3}, {"name": "d", "k": 4}]}


def test_a_table_set_in_a_dotted_key_table_goes_inline():
    """``d.e = 1`` makes table d by a dotted key: TOML lets no ``[d.x]`` header open it
    again (tomllib: "Cannot overwrite a value"), so a table or a list of tables set in it
    is written inline, next to its keys. (Found by the deletion property's sets.)"""
    assert edit("d.e = 1\n[x]\ny = 1\n", ("set", ("d", "new"), {"a": False})) == \
        "d.e = 1\nd.new = { a = false }\n[x]\ny = 1\n"
    assert edit("[t]\nd.e = 1\n", ("set", ("t", "d", "x", "y"), 2)) == "[t]\nd.e = 1\nd.x = { y = 2 }\n"
    assert edit("d.e.f = 1\n", ("set", ("d", "e", "x"), [{"a": 1}])) == "d.e.f = 1\nd.e.x = [{ a = 1 }]\n"
    assert edit("d.e = 1\n", ("set", ("d", "e"), {"a": 1})) == "d.e = { a = 1 }\n"


@pytest.mark.parametrize("text, path, out", [
    ("a = 1 # about a\n# about b\nb = 2\n", ("a",), "# about a\n# about b\nb = 2\n"),
    ("a = 1\n# about b\nb = 2 # eol\n", ("b",), "a = 1\n# about b\n# eol\n"),
    ("[x] # hdr\n# in x\ny = 1 # y\n\n[z]\nw = 2\n", ("x",), "# hdr\n# in x\n# y\n\n[z]\nw = 2\n"),
    ("k = 1\n[[srv]]\nname = 's1' # one\nc = 1\n\n[[srv]]\nname = 's2'\n", ("srv", Match("name", "s1")),
     "k = 1\n# one\n\n[[srv]]\nname = 's2'\n"),
    ("[t]\nm = [\n  'p', # first\n  'q',\n] # after\nz = 1\n", ("t", "m"), "[t]\n# first\n# after\nz = 1\n"),
    ("[t]\na = 1 # mine\n", ("t", "a"), "[t]\n# mine\n"),
])
def test_a_deleted_key_or_table_leaves_its_comments(text, path, out):
    """Whatever taosync deletes, the comments on its lines and inside it stay, each on
    a line of its own where it was: a key's own, a table's header's and body's, an
    array's."""
    doc = E.parse(text)
    assert E.delete(doc, path)
    assert E.dump(doc) == out
    tomllib.loads(out)



@pytest.mark.parametrize("text, path, out", [
    ("[t.x] # tx\na = 1\n", ("t",), "# tx\n"),
    ("[[t.m]] # tm\na = 1\n", ("t",), "# tm\n"),
    ("[p.t.x] # ptx\na = 1\n", ("p", "t"), "# ptx\n"),
    ("[p.t.x] # ptx\na = 1\n", ("p",), "# ptx\n"),
    ("[a.x] # hx\nk = 1\n[b]\n[a.y] # hy\nm = 2\n", ("a",), "# hx\n# hy\n[b]\n"),
])
def test_a_deleted_super_table_leaves_its_childs_header_comment_once(text, path, out):
    """tomlkit gives a super table with no header line of its own (``[t]`` of
    ``[t.x]  # tx``) its child's header comment: only the child's is in the text."""
    doc = E.parse(text)
    assert E.delete(doc, path)
    assert E.dump(doc) == out


def test_a_key_set_in_a_super_table_does_not_copy_its_childs_header_comment():
    """The ``[t]`` line tomlkit then writes has no comment: the one it had a copy of
    stays on ``[t.x]`` only."""
    assert edit("[t.x] # tx\na = 1\n", ("set", ("t", "k"), 1)) == "[t]\nk = 1\n\n[t.x] # tx\na = 1\n"
    assert edit("[p.t.x] # ptx\n", ("set", ("p", "t", "k"), 1)) == "[p.t]\nk = 1\n\n[p.t.x] # ptx\n"
    assert edit("[t.x] # tx\na = 1\n", ("set", ("t",), {})) == "# tx\n[t]\n"


@pytest.mark.parametrize("text, path, out", [
    # as if the part were a table deleted: its header's comment stays, then its body's,
    # the key's where it was, and the blank line before [u]
    ("[t.x]\n[t] # h\nk = 0 # kc\n\n[u]\n", ("t", "k"), "[t.x]\n# h\n# kc\n\n[u]\n"),
    ("[t.x]\nq = 1\n\n[t] # h\n# in t\nk = 1 # kc\n# after\n\n[u]\n", ("t", "k"),
     "[t.x]\nq = 1\n\n# h\n# in t\n# kc\n# after\n\n[u]\n"),
    ("[s.a]\nz = 1\n[b]\n[s] # hs\nk = 1\n\n[c]\n", ("s", "k"), "[s.a]\nz = 1\n[b]\n# hs\n\n[c]\n"),
    ("[t.x]\nq = 1\n[t] # h\n[t.y] # hy\nm = 1\n\n[u]\n", ("t", "y"), "[t.x]\nq = 1\n# h\n# hy\n\n[u]\n"),
    ("[t.x]\nq = 1\n\n[t]\nk = 1\n", ("t", "k"), "[t.x]\nq = 1\n"),  # no blank line left at the end
    # a part tomlkit keeps but that has no header line: what it held goes before it (a
    # comment left in it would make tomlkit write a [t] line)
    ("[t.x.a] # ha\nq = 1\n[u]\n[t.x.b] # hb\nk = 1\n", ("t", "x"), "# ha\n# hb\n[u]\n"),
])
def test_an_out_of_order_part_a_delete_empties_goes_as_a_table_does(text, path, out):
    """tomlkit removes a part of an out-of-order table that a delete leaves without
    keys, header and all: its comments stay where it was, as a deleted table's do
    (found from its chain or by the flattening alike)."""
    ops = [("delete", path, None)]
    assert _edited(text, ops, flatten=False) == _edited(text, ops, flatten=True) == ([True], out)
    tomllib.loads(out)


@pytest.mark.parametrize("value", [42, 1.5, "s", True, [1, 2]])
def test_an_array_of_tables_replaced_by_a_plain_value(value):
    """A ``[[…]]`` list set to a scalar or a plain array becomes that key/value in its
    table (a scalar once escaped the editor as a TypeError)."""
    doc = E.parse('a = 1\n\n[[srv]]\nname = "x"\n\n[t]\nk = 1\n')
    E.set(doc, ("srv",), value)
    out = E.dump(doc)
    assert tomllib.loads(out) == {"a": 1, "srv": value, "t": {"k": 1}}
    assert out.endswith("\n[t]\nk = 1\n")
