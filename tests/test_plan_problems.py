"""Every problem in one run: plan/apply report every unparseable target, then stop."""

from __future__ import annotations

import json

from conftest import snapshot


def break_targets(home):
    claude = home / ".claude" / "settings.json"
    claude.parent.mkdir(parents=True)
    claude.write_text('{"env": {"A": 1,}\n')
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text('model = "x"\n[broken\n')
    return claude, codex


def test_plan_and_apply_list_every_unparseable_target(taosync, home):
    claude, codex = break_targets(home)
    before = snapshot(home)
    for args in (("plan",), ("apply", "--no-verify")):
        r = taosync(*args)
        assert r.rc == 2, r.both
        lines = r.err.splitlines()
        located = [ln for ln in lines if ln.startswith(str(claude)) or
                   ln.startswith(str(codex))]
        assert len(located) == 2, r.err
        assert any(ln.startswith(f"{claude}:1:") for ln in located), r.err
        assert any(ln.startswith(f"{codex}:2:") for ln in located), r.err
        assert "2 target files cannot be used" in r.err
        assert "Traceback" not in r.both
        assert snapshot(home) == before  # nothing written


def test_one_unparseable_target_keeps_its_single_message(taosync, home):
    claude, codex = break_targets(home)
    codex.unlink()
    r = taosync("plan")
    assert r.rc == 2
    assert f"{claude}:1:" in r.err and "fix the file (or move it aside)" in r.err
    assert "target files cannot be used" not in r.err


def test_json_carries_each_target_problem(taosync, home):
    break_targets(home)
    r = taosync("plan", "--json")
    assert r.rc == 2
    data = json.loads(r.out)
    assert len(data["details"]) == 2


def test_warnings_have_one_prefix_and_are_printed_once(taosync, home, fleet_file):
    fleet_file.write_text(fleet_file.read_text().replace(
        "base_url: https://taotoken.net/api ", "base_url: https://taotoken.net/api/v1"))
    for args in (("plan",), ("route", "fast"), ("env",), ("apply", "--no-verify")):
        r = taosync(*args)
        assert "warning: warning:" not in r.err, (args, r.err)
        assert "warning: " in r.err and ": warning:" not in r.err.replace(
            "base_url: warning:", ""), (args, r.err)
        warned = [ln for ln in r.err.splitlines() if "/v1" in ln and "warning" in ln]
        assert len(warned) == 1, (args, r.err)
