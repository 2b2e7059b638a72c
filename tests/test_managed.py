"""managed: every file and owned key per client, from the render itself."""

from __future__ import annotations

import json

from conftest import TEST_KEY
from test_apply import CODEX_CONFIG, write


def rendered(home, fleet_file) -> dict[str, set[str]]:
    """client → the files the renderer targets (what apply would write)."""
    from taosync import pipeline
    from taosync.settings import Settings

    ctx = pipeline.prepare(Settings(config=fleet_file, home=home, color=False))
    out: dict[str, set[str]] = {}
    for patch in ctx.patches:
        out.setdefault(patch.client, set()).add(str(patch.path))
    return out


def files_of(js) -> dict[str, set[str]]:
    return {c: {f["path"] for f in files} for c, files in js["clients"].items()}


def test_managed_lists_the_render_before_any_apply(taosync, home, fleet_file):
    write(home / ".codex/config.toml", CODEX_CONFIG)
    r = taosync("managed", "--json")
    assert r.rc == 0, r.both
    js = json.loads(r.out)
    assert files_of(js) == rendered(home, fleet_file)
    from ruamel.yaml import YAML

    # every client the fleet names (read from it: the suite's example names them all today)
    assert set(js["clients"]) == set(YAML(typ="safe").load(fleet_file.read_text())["clients"])
    codex = {f["path"]: f for f in js["clients"]["codex"]}
    cfg = codex[str(home / ".codex/config.toml")]
    assert cfg["present"] and not cfg["owned"] and cfg["rendered"]
    keys = {k["key"]: k for k in cfg["keys"]}
    assert keys["model"]["present"] and not keys["model"]["owned"]  # the user's o3
    assert not keys["model_provider"]["present"]
    assert keys["model_providers.taotoken.name"]["role"].startswith("skeleton")
    assert not codex[str(home / ".codex/auth.json")]["present"]
    assert not (home / ".local").exists()  # listing writes nothing


def test_managed_after_apply_marks_everything_on_disk_and_owned(taosync, home, fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    js = json.loads(taosync("managed", "--json").out)
    for files in js["clients"].values():
        for f in files:
            assert f["present"] and f["owned"], f
            for k in f["keys"]:
                assert k["present"], (f["path"], k)
                assert k["owned"] == (not k["role"].startswith("skeleton")), (f["path"], k)
    r = taosync("managed")
    assert r.rc == 0
    assert "codex" in r.out and "  ~/.codex/auth.json  (json; on disk, owned)" in r.out
    assert "    OPENAI_API_KEY  (on disk, owned)" in r.out
    assert TEST_KEY not in r.both and "sk-" not in r.out  # keys, never values


def test_a_client_no_longer_rendered_is_listed_with_what_apply_will_do(taosync, home,
                                                                        fleet_file):
    assert taosync("apply", "--no-verify").rc == 0
    fleet_file.write_text(fleet_file.read_text().replace(
        "cline: {model: balanced}", "cline: {model: balanced, enabled: false}"))
    js = json.loads(taosync("managed", "--json").out)
    cline = js["clients"]["cline"]
    assert cline and all(not f["rendered"] and f["owned"] for f in cline)
    assert "no longer rendered" in taosync("managed").out


def test_managed_with_a_broken_fleet_fails_cleanly(taosync, home, fleet_file):
    fleet_file.write_text("gateway: [\n")
    r = taosync("managed")
    assert r.rc == 2 and "Traceback" not in r.both
