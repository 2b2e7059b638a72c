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
    fleet_file.write_text(fleet_file.read_text().replace(  # gateway.base_url only
        "\n  base_url: https://taotoken.net/api ", "\n  base_url: https://taotoken.net/api/v1"))
    for args in (("plan",), ("route", "fast"), ("env",), ("apply", "--no-verify"),
                 ("verify", "--stub", "--desired")):
        r = taosync(*args)
        warned = [ln for ln in r.err.splitlines() if "/v1" in ln and "warning" in ln]
        assert len(warned) == 1, (args, r.err)  # once per run
        assert warned[0].count("warning: ") == 1, (args, warned)  # one prefix
        assert warned[0].startswith(f"{fleet_file}:7:13: gateway.base_url: warning: ")


# -- diagnoses name what failed, and never suggest it back ----------------------------------

def _probe(root, protocol, base, model="gw-main", fault=None):
    from taosync.clients.base import ProbeSpec
    from taosync.fleet.model import Verify
    from taosync.fleet.secrets import Secret
    from taosync.stub import Stub
    from taosync.verify.runner import run

    raw = "sk-test-PLANPROBLEMS-0123456789"
    tail = {"anthropic-messages": "/v1/messages?beta=true", "openai-chat": "/chat/completions",
            "openai-responses": "/responses"}[protocol]
    with Stub(key=raw, models=["gw-main", "gw-small"]) as stub:
        if fault:
            stub.add_fault(fault)
        base = base.replace("ROOT", stub.root)
        spec = ProbeSpec("test-client", "main", model, protocol, base, base + tail, "bearer")
        (result,) = run([spec], Secret(raw), Verify(timeout=2, retries=0), backoff=0.01)
        return result, stub.root


import pytest  # noqa: E402


@pytest.mark.parametrize("protocol", ["openai-chat", "openai-responses"])
def test_doubled_v1_names_openai_base_url(protocol):
    r, root = _probe(None, protocol, "ROOT/v1/v1")
    fix = r.diagnosis.fix
    assert r.diagnosis.code == "path" and "/v1 is doubled" in r.diagnosis.cause
    assert fix.startswith("the URL comes from `gateway.openai_base_url`"), fix
    assert f"write `gateway.openai_base_url: {root}/v1`" in fix


def test_doubled_v1_names_anthropic_base_url():
    r, root = _probe(None, "anthropic-messages", "ROOT/v1")
    fix = r.diagnosis.fix
    assert "the URL comes from `gateway.anthropic_base_url`" in fix
    assert f"write `gateway.anthropic_base_url: {root}`" in fix


def test_listed_model_refused_is_not_a_typo():
    r, _ = _probe(None, "openai-chat", "ROOT/v1", model="gw-small",
                  fault="unknown_model@gw-small")
    d = r.diagnosis
    assert d.code == "model_not_found"
    assert "listed but refused: access or deployment" in d.cause
    assert "did you mean" not in d.fix and "`gw-small`" not in d.fix


def test_suggestions_never_hold_the_failing_id():
    from taosync.verify.diagnose import suggest

    assert suggest("gw-small", ["gw-small", "gw-smal", "x/gw-small"]) == ["gw-smal", "x/gw-small"]
    assert "GW-small" not in suggest("gw-small", ["GW-small", "gw-smalls"])
