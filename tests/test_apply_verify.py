"""apply verifies what it wrote, against a real stand-in gateway on loopback."""

from __future__ import annotations

import json

from conftest import TEST_KEY

MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]


def point_at(fleet_file, root: str) -> None:
    fleet_file.write_text(fleet_file.read_text().replace("https://taotoken.net/api", root))


def test_apply_verifies_the_clients_whose_files_it_wrote(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        point_at(fleet_file, stub.root)
        r = taosync("apply", "--json")
        assert r.rc == 0, r.both
        report = json.loads(r.out)
        assert report["apply_id"] == 1
        clients = {c for res in report["verify"]["results"] for c in res["clients"]}
        assert clients == {"claude-code", "codex", "cline", "continue", "mistral-vibe", "gptme",
                           "aider", "llm", "shell-gpt", "qwen-code", "gemini-cli", "opencode", "kilo"}
        assert report["verify"]["failed"] == 0

        # only Codex's files move: only Codex is verified again
        fleet_file.write_text(fleet_file.read_text().replace("profiles: [deep, batch]",
                                                             "profiles: [deep]"))
        r = taosync("apply", "--json")
        assert r.rc == 0, r.both
        report = json.loads(r.out)
        assert {c for res in report["verify"]["results"] for c in res["clients"]} == {"codex"}

        # nothing changed: nothing verified, and it says so
        r = taosync("apply")
        assert r.rc == 0 and "not verifying: nothing changed" in r.out


def test_apply_exits_1_when_a_backend_fails_and_names_the_fix(taosync, home, fleet_file):
    from taosync.stub import Stub

    with Stub(key="sk-some-other-key-000000000000", models=MODELS) as stub:
        point_at(fleet_file, stub.root)
        r = taosync("apply")
        assert r.rc == 1
        assert "auth" in r.out.lower() and TEST_KEY not in r.both
        # the files were written all the same: the failure is the gateway's answer
        assert (home / ".claude/settings.json").exists()
