"""``taosync route TASK`` of an unknown task is an error unless --default opts into the
default route's model (issue 18: a script must never run on a model it did not ask for)."""

from __future__ import annotations

import json


def test_unknown_task_exits_1_with_did_you_mean_and_prints_no_model(taosync):
    r = taosync("route", "fas")
    assert r.rc == 1
    assert r.out == ""
    assert "no route 'fas'" in r.err and "did you mean fast" in r.err
    assert "--default" in r.err
    assert "Traceback" not in r.err


def test_unknown_task_without_a_close_name_lists_the_routes(taosync):
    r = taosync("route", "zzzzzz")
    assert r.rc == 1 and r.out == ""
    assert "did you mean" not in r.err
    assert "fast, balanced, deep, batch" in r.err


def test_default_opts_into_the_default_routes_model(taosync):
    r = taosync("route", "fas", "--default")
    assert (r.rc, r.out) == (0, "claude-sonnet-4-20250514\n")
    assert "using the default route balanced" in r.err


def test_default_changes_nothing_for_a_known_task(taosync):
    r = taosync("route", "fast", "--default")
    assert (r.rc, r.out, r.err) == (0, "gpt-4o-mini\n", "")


def test_unknown_task_json_is_an_error_object(taosync):
    r = taosync("route", "--json", "fas")
    assert r.rc == 1
    data = json.loads(r.out)
    assert data["ok"] is False and data["exit_code"] == 1 and data["format_version"] == 1
    assert "did you mean fast" in data["error"]
    assert data["problems"][0]["message"] == data["error"]
    assert "model" not in data
