"""log, and rollback as a cursor: stepping back through applies, --to, --redo."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from taosync.engine.state import KEEP_APPLIES, KEEP_REASSERTS, ApplyRecord, State, prune_history

STATE = ".local/state/taosync"


def codex_model(home: Path) -> str | None:
    cfg = home / ".codex/config.toml"
    return tomllib.loads(cfg.read_text()).get("model") if cfg.exists() else None


@pytest.fixture
def three_applies(taosync, home, fleet_file):
    """Applies #1, #2, #3, each giving codex another model; returns the models."""
    original = fleet_file.read_text()
    models = ["gpt-4o-mini", "intel/llama-7b", "nvidia/deepseek-r1"]
    for model in models:
        fleet_file.write_text(original.replace("fast: gpt-4o-mini", f"fast: {model}"))
        assert taosync("apply", "--no-verify").rc == 0
        assert codex_model(home) == model
    return models


def test_rollback_twice_steps_back_two_applies_and_redo_comes_forward(taosync, home,
                                                                       three_applies):
    first, second, third = three_applies
    r = taosync("rollback")
    assert r.rc == 0, r.both
    assert "rolled back apply #3" in r.out and codex_model(home) == second
    r = taosync("rollback")
    assert r.rc == 0, r.both
    assert "rolled back apply #2" in r.out and codex_model(home) == first
    r = taosync("rollback", "--redo")
    assert r.rc == 0, r.both
    assert "took back rollback #5" in r.out and codex_model(home) == second
    assert taosync("rollback", "--redo").rc == 0
    assert codex_model(home) == third
    r = taosync("rollback", "--redo")
    assert r.rc == 2 and "nothing to do: no rollback to redo" in r.err
    assert taosync("status").rc == 0  # back where apply #3 left everything


def test_a_new_apply_drops_the_redo_chain(taosync, home, three_applies):
    assert taosync("rollback").rc == 0
    fleet = taosync("apply", "--no-verify")
    assert fleet.rc == 0 and "applied #" in fleet.out
    r = taosync("rollback", "--redo")
    assert r.rc == 2 and "nothing to do: no rollback to redo" in r.err
    r = taosync("rollback")  # steps back over the new apply: as after #2
    assert r.rc == 0 and codex_model(home) == three_applies[1]


def test_rollback_to_jumps_and_refuses_an_apply_already_rolled_back(taosync, home,
                                                                    three_applies):
    r = taosync("rollback", "--to", "2")
    assert r.rc == 0, r.both
    assert "rolled back apply #2, apply #3" in r.out and codex_model(home) == three_applies[0]
    r = taosync("rollback", "--to", "3")
    assert r.rc == 2 and "rolled back already" in r.err and "--redo" in r.err
    r = taosync("rollback", "--to", "4")  # a rollback record, not an apply
    assert r.rc == 2 and "no apply number 4" in r.err
    assert taosync("rollback", "--redo", "--to", "1").rc == 2
    assert taosync("rollback", "--redo").rc == 0
    assert codex_model(home) == three_applies[2]


def test_rollback_names_the_backup_and_the_client_and_shows_the_diff(taosync, home,
                                                                     three_applies):
    v = taosync("rollback", "--dry-run", "-v")  # -v (and --dry-run) add the diffs
    assert '-model = "nvidia/deepseek-r1"' in v.out and '+model = "intel/llama-7b"' in v.out
    r = taosync("rollback")
    assert r.rc == 0, r.both
    line = next(l for l in r.out.splitlines() if "~/.codex/config.toml" in l)
    assert line.split() == ["restore", "~/.codex/config.toml", "codex", "6", "keys", "restored",
                            "(backup", "of", "#3)"], line
    assert r.out.count("~/.codex/config.toml") == 1  # one line per file, no diff without -v
    assert "sk-test-SECRETKEY" not in r.both
    js = json.loads(taosync("rollback", "--dry-run", "--json").out)
    assert js["kind"] == "rollback" and js["undone"] == [2]
    assert js["sources"][str(home / ".codex/config.toml")] == "#2"


def test_a_file_created_by_the_apply_is_named_as_removed(taosync, home):
    assert taosync("apply", "--no-verify").rc == 0
    r = taosync("rollback", "--dry-run")
    assert r.rc == 0
    assert any(l.split() == ["remove", "~/.codex/auth.json", "codex", "2", "keys", "removed",
                             "(created", "by", "#1)"] for l in r.out.splitlines()), r.out


def test_log_lists_every_record_newest_first(taosync, home, three_applies):
    assert taosync("rollback").rc == 0
    assert taosync("rollback", "--redo").rc == 0
    js = json.loads(taosync("log", "--json").out)
    records = js["records"]
    assert [(r["id"], r["kind"]) for r in records] == [
        (5, "redo"), (4, "rollback"), (3, "apply"), (2, "apply"), (1, "apply")]
    assert records[0]["undoes"] == [4] and records[1]["undoes"] == [3]
    assert records[2]["status"] == "current" and js["in_effect"] == [1, 2, 3]
    first = records[-1]
    assert first["time"].endswith("+00:00")
    files = {f["display"]: f for f in first["files"]}
    assert files["~/.codex/config.toml"]["clients"] == ["codex"]
    assert files["~/.codex/auth.json"]["action"] == "create"
    assert "create" in first["summary"] and "codex" in first["summary"]
    assert "took back rollback #4" in records[0]["summary"]

    r = taosync("log", "-n", "2")
    assert r.rc == 0
    assert re.findall(r"^. #(\d+) ", r.out, re.M) == ["5", "4"], r.out
    r = taosync("log", "-v")
    assert "~/.codex/config.toml" in r.out and "* #3" in r.out


def test_log_marks_rolled_back_applies(taosync, home, three_applies):
    assert taosync("rollback").rc == 0
    rows = {r["id"]: r["status"] for r in json.loads(taosync("log", "--json").out)["records"]}
    assert rows == {4: "redoable", 3: "rolled back", 2: "current", 1: ""}
    out = taosync("log").out
    assert "- #3" in out and "(rolled back)" in out


def test_log_with_no_history(taosync, home):
    r = taosync("log")
    assert r.rc == 0 and "no history" in r.out
    assert not (home / ".local").exists()


# -------------------------------------------------------------------- re-asserts

def drift_and_reassert(home: Path, fleet_file: Path, times: int) -> None:
    """What watch does on drift: plan against the disk and commit as a re-assert."""
    from taosync import pipeline
    from taosync.settings import Settings

    settings = Settings(config=fleet_file, home=home, color=False)
    cfg = home / ".codex/config.toml"
    model = codex_model(home)
    for n in range(times):
        cfg.write_text(cfg.read_text().replace(f'model = "{codex_model(home)}"',
                                               f'model = "hand-{n}"', 1))
        ctx = pipeline.prepare(settings)
        the_plan, state = pipeline.plan_apply(ctx)
        _, result = pipeline.commit(ctx, the_plan, state, kind="reassert")
        assert result.apply_id is not None
        assert codex_model(home) == model


def test_reasserts_never_push_applies_out_of_the_window(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace("fast: gpt-4o-mini", "fast: intel/llama-7b"))
    assert taosync("apply", "--no-verify").rc == 0
    drift_and_reassert(home, fleet_file, KEEP_REASSERTS + 3)
    state = json.loads((home / STATE / "state.json").read_text())
    kinds = [a["kind"] for a in state["applies"]]
    assert kinds[:2] == ["apply", "apply"]
    assert kinds.count("reassert") == KEEP_REASSERTS
    backups = sorted(int(p.name) for p in (home / STATE / "backups").iterdir())
    assert backups == [a["id"] for a in state["applies"]]
    js = json.loads(taosync("log", "--json").out)
    assert "re-asserted" in js["records"][0]["summary"]
    r = taosync("rollback", "--to", "1")  # still there, re-asserts and all undone
    assert r.rc == 0, r.both
    assert not (home / ".codex/config.toml").exists()


def test_prune_history_keeps_the_window_by_steps():
    def records(kinds: str) -> list[ApplyRecord]:
        names = {"a": "apply", "r": "reassert", "b": "rollback"}
        return [ApplyRecord(n + 1, "t", names[k]) for n, k in enumerate(kinds)]

    kept, dropped = prune_history(records("a" * (KEEP_APPLIES + 2)))
    assert [r.id for r in kept] == list(range(3, KEEP_APPLIES + 3)) and len(dropped) == 2
    kept, dropped = prune_history(records("a" + "r" * (KEEP_REASSERTS + 5) + "ab"))
    assert [r.kind for r in kept].count("apply") == 2 and not [
        r for r in dropped if r.kind != "reassert"]
    assert len(dropped) == 5 and kept[0].id == 1
    # steps count; re-asserts before the oldest kept step go with the steps before it
    kept, dropped = prune_history(records("ar" + "b" * KEEP_APPLIES))
    assert [r.id for r in kept] == list(range(3, KEEP_APPLIES + 3))


def test_a_damaged_record_field_is_named(home):
    from taosync.engine.state import Damaged

    good = State(applies=[ApplyRecord(1, "t", "rollback", undoes=[1])]).to_json()
    assert State.from_json(json.loads(json.dumps(good))).applies[0].undoes == [1]
    for bad, where in (({"undoes": ["1"]}, "undoes[0]"),
                       ({"files": [{"path": "x", "clients": "codex"}]}, "clients")):
        data = json.loads(json.dumps(good))
        data["applies"][0].update(bad)
        with pytest.raises(Damaged, match=where.replace("[", r"\[")):
            State.from_json(data)
    data = json.loads(json.dumps(good))
    data["made_dirs"] = [3]
    with pytest.raises(Damaged, match="made_dirs"):
        State.from_json(data)


def test_a_real_watch_records_its_reassert(home, fleet_file, taosync):
    """watch's drift re-assert is recorded with kind reassert (watch/cycle.py)."""
    import time

    from taosync.settings import Settings
    from taosync.watch import Options, Watcher

    events = []
    watcher = Watcher(Settings(config=fleet_file, home=home, color=False),
                      Options(verify=False), on_event=events.append)
    watcher.start()
    try:
        deadline = time.monotonic() + 30
        while not any(e.kind == "watching" for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watcher.idle(30)
        cfg = home / ".codex/config.toml"
        cfg.write_text(cfg.read_text().replace('model = "gpt-4o-mini"', 'model = "o3"'))
        while not any(e.kind == "drift" for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        assert watcher.idle(30)
    finally:
        watcher.stop()
    kinds = [r["kind"] for r in json.loads(taosync("log", "--json").out)["records"]]
    assert kinds == ["reassert", "apply"], kinds


def test_rollback_writes_the_step_it_planned_unless_something_moved_meanwhile(
        taosync, home, three_applies, monkeypatch):
    """The step planned before the lock (and any question) is the one written when,
    under the lock, the state and every planned file are still the bytes it was made
    from (a big home was planned twice); a file edited again while the question waits
    is planned again."""
    from taosync.commands import rollback as command
    from taosync.engine import rollback as engine

    first, second, _third = three_applies
    plans = []
    real_plan = engine.plan_step
    monkeypatch.setattr(engine, "plan_step", lambda *a, **k: plans.append(1) or real_plan(*a, **k))
    r = taosync("rollback")
    assert r.rc == 0, r.both
    assert len(plans) == 1 and codex_model(home) == second

    codex = home / ".codex/config.toml"
    codex.write_text(codex.read_text() + "# mine\n")  # edited since: the rollback asks
    real_confirm = command._confirm_edited

    def edit_while_asked(*args, **kwargs):
        codex.write_text(codex.read_text() + "# and more\n")
        return real_confirm(*args, **kwargs)

    monkeypatch.setattr(command, "_confirm_edited", edit_while_asked)
    plans.clear()
    r = taosync("rollback", "--yes")
    assert r.rc == 0, r.both
    assert len(plans) == 2 and codex_model(home) == first
    assert "# and more" not in codex.read_text()  # the edit seen by the second plan: replaced
    assert "config.toml was edited after taosync wrote it" in r.err + r.out
