"""One JSON contract (issue 18): every command's ``--json`` output is one object with
``ok``, ``exit_code`` and ``format_version``; a failed run adds ``error`` and
``problems`` — the located objects ``validate --json`` gives. Each command is run once
succeeding and once failing, and its output is checked against the schema below."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from taosync.cli import COMMANDS

#: a second name → the command whose example its --help shows
ALIASES = {"diff": "plan", "source-path": "where"}

PROBLEM = {
    "type": "object",
    "required": ["file", "line", "column", "path", "message", "severity"],
    "properties": {
        "file": {"type": ["string", "null"]},
        "line": {"type": ["integer", "null"]},
        "column": {"type": ["integer", "null"]},
        "path": {"type": ["string", "null"]},
        "message": {"type": "string", "minLength": 1},
        "severity": {"enum": ["error", "warning"]},
    },
}
CONTRACT = {
    "type": "object",
    "required": ["ok", "exit_code", "format_version"],
    "properties": {
        "ok": {"type": "boolean"},
        "exit_code": {"enum": [0, 1, 2, 3]},
        "format_version": {"const": 1},
        "error": {"type": "string", "minLength": 1},
        "problems": {"type": "array", "items": PROBLEM},
    },
    # ok is exactly "exit code 0"; a run that stopped on bad input or a failed write
    # says why, in the located shape
    "allOf": [
        {"if": {"properties": {"exit_code": {"const": 0}}},
         "then": {"properties": {"ok": {"const": True}}},
         "else": {"properties": {"ok": {"const": False}}}},
        {"if": {"properties": {"exit_code": {"enum": [2, 3]}}},
         "then": {"required": ["error", "problems"],
                  "properties": {"problems": {"minItems": 1}}}},
    ],
}
FAILED = {"required": ["error", "problems"], "properties": {"ok": {"const": False}}}


def contract(r, rc: int | tuple[int, ...]) -> dict:
    """The run's one JSON object, checked against the contract and its exit code."""
    allowed = rc if isinstance(rc, tuple) else (rc,)
    assert r.rc in allowed, (r.rc, r.out, r.err)
    data = json.loads(r.out)
    jsonschema.validate(data, CONTRACT)
    assert data["exit_code"] == r.rc
    return data


def failed(r, rc: int) -> dict:
    data = contract(r, rc)
    jsonschema.validate(data, FAILED)
    return data


def case_id(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


@pytest.fixture
def broken(fleet_file):
    """Make fleet.yaml invalid at a known line (models: a list, not a mapping)."""
    def breaks() -> None:
        fleet_file.write_text("version: 1\ngateway: {base_url: https://x}\nmodels: []\n")
    return breaks


FLEET_COMMANDS = [  # each reads fleet.yaml before anything else("validate",), ("plan",), ("apply", "--no-verify"), ("status",),
                  ("verify", "--stub", "--desired"), ("route", "fast"), ("env",),
                  ("adopt", "--dry-run"), ("doctor",)]


@pytest.mark.parametrize("args", FLEET_COMMANDS, ids=lambda a: a[0])
def test_an_invalid_fleet_fails_with_located_problems(taosync, broken, args):
    broken()
    data = failed(taosync(*args, "--json"), 2)
    assert any(p["file"].endswith("fleet.yaml") and p["line"] == 3
                   for p in data["problems"]), data["problems"]


def test_exec_fails_by_the_contract_before_it_runs_anything(taosync, broken):
    """(lane profiles) ``exec`` prints no object of its own — COMMAND replaces it — but
    its bad input keeps the contract: an unknown profile, an invalid fleet (located)."""
    data = failed(taosync("--json", *("exec", "nope", "--", "true")), 2)
    assert "no profile 'nope'" in data["error"] + " ".join(p["message"] for p in data["problems"])
    broken()
    data = failed(taosync("--json", "exec", "work", "--", "true"), 2)
    assert any(p["file"].endswith("fleet.yaml") and p["line"] == 3
               for p in data["problems"]), data["problems"]


def test_validate_failure_matches_its_own_problems(taosync, broken):
    broken()
    data = failed(taosync("validate", "--json"), 2)
    assert data["errors"] >= 1 and "fleet.yaml" in data["error"]


@pytest.mark.parametrize("args,rc", [
    (("validate",), 0), (("plan",), 0), (("plan", "--check"), 1), (("status",), 1),
    (("route", "fast"), 0), (("route",), 0), (("env",), 0), (("managed",), 0),
    (("log",), 0), (("prune",), 0), (("stats",), 0), (("schema",), 0), (("import",), (0, 1)),
    (("completion", "bash"), 0), (("doctor",), (0, 1)), (("cat", "~/.aider.conf.yml"), 0),
    (("where",), 0), (("source-path",), 0), (("help", "cat"), 0),
    (("destroy", "--dry-run"), 0), (("verify", "--stub", "--desired"), 0),
], ids=case_id)
def test_before_any_apply(taosync, args, rc):
    data = contract(taosync(*args, "--json"), rc)
    if data["exit_code"] == 0:
        assert "error" not in data


def test_stats_recommend_keys(taosync):
    """``stats --recommend --json``: the keys README's JSON table names — the per-route
    keys kept from before issue #29, and the ``basis`` and ``candidates`` it added."""
    data = contract(taosync("stats", "--recommend", "--json"), 0)
    assert set(data["basis"]) == {"score", "window", "max_age", "not_measured"}
    for row in data["routes"]:
        assert {"route", "model", "pinned", "weight", "ranking", "advice",  # as before
                "fixed", "policy", "candidates", "no_data"} <= set(row)
        assert row["model"] in row["candidates"]


def test_apply_status_rollback_forget_log_destroy_succeed(taosync):
    data = contract(taosync("apply", "--no-verify", "--json"), 0)
    assert data["apply_id"] == 1
    status = contract(taosync("status", "--json"), 0)
    assert status["drift"] == [] and status["pending"] == []
    assert contract(taosync("log", "--json"), 0)["records"]
    assert contract(taosync("rollback", "--json"), 0)["kind"] == "rollback"
    contract(taosync("apply", "--no-verify", "--json"), 0)
    assert contract(taosync("forget", "aider", "--json"), 0)["forgot"] == "aider"
    assert contract(taosync("use", "default", "--no-verify", "--json"),
                    0)["switched"]["gateway"] == "default"
    contract(taosync("destroy", "--yes", "--json"), 0)


def test_status_items_carry_the_display_path(taosync, home):
    taosync("apply", "--no-verify")
    settings = home / ".aider.conf.yml"
    settings.write_text(settings.read_text().replace("taotoken.net", "example.org"))
    data = contract(taosync("status", "--json"), 1)
    assert data["ok"] is False and "error" not in data  # the job ran and found drift
    assert {d["display"] for d in data["drift"]} == {"~/.aider.conf.yml"}
    assert {p["display"] for p in data["pending"]} == {"~/.aider.conf.yml"}
    plan = contract(taosync("plan", "--json"), 0)
    assert {f["display"] for f in plan["files"] if f["path"] == str(settings)} \
        == {"~/.aider.conf.yml"}


@pytest.mark.parametrize("args,rc", [
    (("route", "fas"), 1),
    (("rollback",), 2),
    (("forget", "nosuchclient"), 2),
    (("use", "nosuchgateway"), 2),
    (("stats", "--since", "bogus"), 2),
    (("log", "--bogus"), 2),
    (("prune", "--bogus"), 2),
    (("managed", "--bogus"), 2),
    (("completion", "tcsh"), 2),
    (("import", "--bogus"), 2),
    (("stub", "--key", "a", "--key-env", "B"), 2),
    (("watch", "--bogus"), 2),
    (("schema", "--bogus"), 2),
    (("cat", "~/not-a-client-file"), 2),
    (("where", "--bogus"), 2),
    (("help", "aply"), 2),
    (("update",), 2),  # the suite's fleet.yaml is in no git repository
    (("edit", "--bogus"), 2),
    (("secret", "get", "${env:NOT_A_STORE}"), 2),
], ids=case_id)
def test_failures(taosync, args, rc):
    failed(taosync(*args, "--json"), rc)


def test_edit_succeeds_and_fails_in_the_contract(taosync, fleet_file, tmp_path,
                                                 monkeypatch):
    monkeypatch.setenv("EDITOR", "true")  # saves nothing
    data = contract(taosync("edit", "--json"), 0)
    assert data["changed"] is False and data["valid"] is None
    script = tmp_path / "ed.sh"
    script.write_text("#!/bin/sh\nsed -i 's/fast: gpt-4o-mini/fast: nope/' \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    data = failed(taosync("edit", "--json"), 2)
    assert any(p["line"] == 18 and "nope" in p["message"] for p in data["problems"])


def test_secret_set_prints_the_reference(taosync, file_keyring, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("sk-json-contract-0123456789\n"))
    data = contract(taosync("secret", "set", "gw", "--json"), 0)
    assert data["reference"] == "${keyring:taosync/gw}"
    assert "sk-json-contract-0123456789" not in json.dumps(data)


def test_destroy_without_a_terminal_or_yes_is_not_confirmed(taosync):
    """--json never asks: without --yes nothing is confirmed, exit 1 (taosync/confirm.py)."""
    taosync("apply", "--no-verify")
    data = failed(taosync("destroy", "--json"), 1)
    assert "--yes" in data["error"]


def test_init_succeeds_then_refuses_to_replace(taosync, tmp_path):
    target = tmp_path / "new" / "fleet.yaml"
    data = contract(taosync("init", str(target), "--json"), 0)
    assert data["path"] == str(target)
    data = failed(taosync("init", str(target), "--json"), 2)
    assert "already exists" in data["error"]


def test_schema_write_failure_is_exit_3(taosync, tmp_path):
    blocked = tmp_path / "ro"
    blocked.mkdir()
    (blocked / "fleet.schema.json").mkdir()  # the target is a directory: cannot be replaced
    fleet = blocked / "fleet.yaml"
    fleet.write_text("version: 1\n")
    failed(taosync("schema", "--write", "--json", config=fleet), 3)
    assert contract(taosync("schema", "--write", "--json"), 0)["changed"] is True


def test_usage_errors_under_json_keep_the_contract(taosync):
    data = failed(taosync("status", "--json", "--bogus"), 2)
    assert "--bogus" in data["error"] and data["problems"][0]["message"] == data["error"]


def test_stub_prints_one_contract_line_then_serves(fleet_file, home):
    proc = subprocess.Popen([sys.executable, "-m", "taosync", "--home", str(home), "stub",
                             "--json", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        data = json.loads(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    jsonschema.validate(data, CONTRACT)
    assert data["ok"] is True and data["root"].startswith("http://127.0.0.1:")


def test_every_command_is_covered():
    """A new command must be added to this file's success and failure runs."""
    source = open(__file__, encoding="utf-8").read()
    for name in COMMANDS:
        if name != "diff":
            assert f'("{name}"' in source, name


# --------------------------------------------------------------------------- --help


@pytest.mark.parametrize("name", [c for c in COMMANDS])
def test_every_help_lists_exit_codes_and_an_example(taosync, name):
    r = taosync(name, "--help")
    assert r.rc == 0
    assert "Exit codes:" in r.out and "Example:" in r.out
    codes = r.out.split("Exit codes:")[1].split("Example:")[0]
    assert "  0  " in codes and "  2  " in codes
    example = r.out.split("Example:")[1].strip().splitlines()[0]
    assert f"taosync {ALIASES.get(name, name)}" in example
    options = r.out.split("Exit codes:")[0]
    for word in example.split():  # the example uses only options the command has
        if word.startswith("--"):
            assert word in options, (name, word)
