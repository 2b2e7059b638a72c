"""YAML parser errors in the user's words (taosync/formats/yaml_words.py), each at the line
the user got wrong — through the real loader, so fleet.yaml and included files say the
same (issue 29). The 22 common mistakes are tests/test_troubleshooting.py; these are the
other slips the words cover."""

from __future__ import annotations

import pytest

from conftest import EXAMPLE_FLEET
from taosync.fleet.load import load_fleet
from taosync.fleet.problems import FleetInvalid

EXAMPLE = EXAMPLE_FLEET.read_text(encoding="utf-8")


def edit(old: str, new: str) -> str:
    assert EXAMPLE.count(old) == 1, old
    return EXAMPLE.replace(old, new)


CASES = {
    # `fast:` slipped to the left under `routes:`; the next line looks over-indented
    "key-left-of-its-parent": (edit("  fast: gpt-4o-mini", "fast: gpt-4o-mini"), "18:1",
                               "'fast:' is not indented under 'routes:' on line 17; indent it "
                               "like 'balanced:' on line 19 (2 spaces)"),
    "children-under-a-value": (edit("models: ", "models: {}"), "12:3",
                               "this line is indented under 'models:' on line 11, which "
                               "already has a value ({}); remove that value if these lines "
                               "belong under 'models:'"),
    "list-items-misaligned": (edit('    args: [-y, "@taotoken/mcp-router"]',
                                   '    args:\n    - -y\n   - "@taotoken/mcp-router"'),
                              "46:4", "'- -y' on line 45 has 4; items of one list need the same "
                              "indentation"),
    "apostrophe-in-single-quotes": (edit("  cline: {model: balanced}",
                                         "  cline: {model: 'it's'}"), "29:21",
                                    "text follows the closing ' of a quoted string; write '' "
                                    "for a ' inside '…'"),
    "bracket-open-at-the-end": ("version: 1\ngateway:\n  base_url: [\n", "3:13",
                                "the [ opened here is not closed; add ']' at the end of line 3"),
    "unclosed-quote-in-a-block": (edit('verify: {prompt: "Reply with OK.", max_tokens: 16, '
                                       'timeout: 20}', 'verify:\n  prompt: "Reply with OK.\n'
                                       '  max_tokens: 16'), "51:11",
                                  'the string opened with " here is never closed'),
    "over-indented-under-a-scalar": ("version: 1\n  gateway:\n", "2:3",
                                     "'gateway:' is indented more than 'version:' on line 1, "
                                     "which already has a value (1)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_slip_is_named_where_it_is(case, tmp_path, home):
    text, where, words = CASES[case]
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(text, encoding="utf-8")
    with pytest.raises(FleetInvalid) as exc:
        load_fleet(fleet, home=home)
    (problem,) = exc.value.problems
    assert problem.format().startswith(f"{fleet}:{where}: "), problem.format()
    assert words in problem.message, problem.message


def test_an_included_file_is_worded_the_same(tmp_path, home):
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "base.yaml").write_text("version: 1\nroutes:\n  fast gpt-4o-mini\n"
                                                 "  deep: x\n")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("include: [team/base.yaml]\n")
    with pytest.raises(FleetInvalid) as exc:
        load_fleet(fleet, home=home)
    assert [p.format() for p in exc.value.problems] == [
        f"{tmp_path}/team/base.yaml:3:7: missing ':' after 'fast'; write fast: gpt-4o-mini"]
