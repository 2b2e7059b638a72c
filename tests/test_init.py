"""taosync init: a commented starter fleet.yaml that validates, never an overwrite."""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from conftest import Run

TEMPLATE = Path(__file__).resolve().parent.parent / "taosync" / "templates" / "fleet.yaml"


@pytest.fixture
def cli(home, capsys, tmp_path, monkeypatch):
    """The CLI in-process from an empty working directory, without conftest's -c."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def run(*args: str) -> Run:
        from taosync.cli import run as cli_run

        rc = cli_run(["--home", str(home), *args])
        out = capsys.readouterr()
        return Run(rc, out.out, out.err)

    return run


def test_init_writes_a_commented_starter_that_validates(cli, tmp_path):
    r = cli("init")
    assert r.rc == 0, r.both
    path = tmp_path / "work" / "fleet.yaml"
    text = path.read_text()
    assert text == TEMPLATE.read_text()
    assert "key: ${env:TAOTOKEN_API_KEY}" in text
    assert text.count("\n#") >= 10  # it explains itself
    assert "wrote fleet.yaml" in r.out
    assert cli("validate", "--no-key").rc == 0
    v = cli("validate")  # with TAOTOKEN_API_KEY set (conftest's home)
    assert v.rc == 0, v.both


def test_init_refuses_to_overwrite_without_force(cli, tmp_path):
    path = tmp_path / "work" / "fleet.yaml"
    path.write_text("version: 1  # mine\n")
    r = cli("init")
    assert r.rc == 2
    assert "already exists" in r.err and "--force" in r.err
    assert path.read_text() == "version: 1  # mine\n"
    r = cli("init", "--force")
    assert r.rc == 0 and "replaced" in r.out
    assert path.read_text() == TEMPLATE.read_text()


def test_init_path_argument_config_option_and_env(cli, tmp_path, monkeypatch):
    a = tmp_path / "a" / "deep" / "fleet.yaml"
    assert cli("init", str(a)).rc == 0 and a.exists()
    b = tmp_path / "b.yaml"
    assert cli("-c", str(b), "init").rc == 0 and b.exists()
    c = tmp_path / "c.yaml"
    monkeypatch.setenv("TAOSYNC_CONFIG", str(c))
    assert cli("init").rc == 0 and c.exists()
    assert not (tmp_path / "work" / "fleet.yaml").exists()
    assert cli("-c", str(c), "validate", "--no-key").rc == 0


def test_init_writes_through_a_symlink_and_keeps_its_mode(cli, tmp_path):
    real = tmp_path / "dotfiles" / "fleet.yaml"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "work" / "fleet.yaml"
    link.symlink_to(real)
    assert cli("init", "--force").rc == 0
    assert link.is_symlink() and real.read_text() == TEMPLATE.read_text()
    assert real.stat().st_mode & 0o777 == 0o640


def test_init_into_a_directory_is_bad_input(cli, tmp_path):
    d = tmp_path / "work" / "somedir"
    d.mkdir()
    r = cli("init", str(d))
    assert r.rc == 2 and "is a directory" in r.err


def test_init_json(cli, tmp_path):
    r = cli("init", "--json")
    assert r.rc == 0
    data = json.loads(r.out)
    assert data == {"ok": True, "exit_code": 0, "format_version": 1, "path": "fleet.yaml",
                    "replaced": False}
    assert json.loads(cli("init", "--json").out)["ok"] is False


def test_init_writes_the_editor_modeline_and_schema_write_provides_its_schema(cli, tmp_path):
    from taosync.commands.schema import MODELINE
    from taosync.fleet import schema as fleet_schema

    r = cli("init")
    assert r.rc == 0 and re.search(r"`taosync --home \S+ schema --write`", r.out)
    work = tmp_path / "work"
    first = (work / "fleet.yaml").read_text().splitlines()[0]
    assert first == MODELINE == "# yaml-language-server: $schema=./fleet.schema.json"
    assert not (work / "fleet.schema.json").exists()  # init writes only fleet.yaml
    assert cli("schema", "--write").rc == 0
    schema_file = work / "fleet.schema.json"
    assert schema_file.read_text() == fleet_schema.text()
    assert json.loads(schema_file.read_text())["type"] == "object"
    assert schema_file.stat().st_mode & 0o777 == 0o644


def test_schema_write_refreshes_the_copy_beside_fleet_yaml(cli, tmp_path):
    from taosync.fleet import schema as fleet_schema

    fleet = tmp_path / "team" / "fleet.yaml"
    assert cli("init", str(fleet)).rc == 0
    stale = fleet.parent / "fleet.schema.json"
    stale.write_text("{}\n")
    r = cli("-c", str(fleet), "schema", "--write")
    assert r.rc == 0 and f"wrote {stale}" in r.out
    assert stale.read_text() == fleet_schema.text()
    again = cli("-c", str(fleet), "schema", "--write")
    assert "up to date" in again.out
    printed = cli("schema")
    assert printed.out == fleet_schema.text()
