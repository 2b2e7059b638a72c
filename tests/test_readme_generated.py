"""The docs' client facts are generated from the client modules (taosync/clients/readme.py):
the lists of clients (README's intro), the two secrets tables, the install lines and the
owned-files table (pages under docs/).
A client added to the registry shows up in each by regenerating, never by hand; a fact
the modules do not declare yet sits in readme.py's mappings, one entry per client."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from taosync.clients import readme, registry

REGENERATE = "run `python -m taosync.dev regenerate`"


def _section(name: str) -> str:
    return readme.section(readme.holding(name).read_text(encoding="utf-8"), name)


def test_readme_is_what_the_client_modules_say():
    for name in readme.SECTIONS:
        assert _section(name) == readme.generated(name), \
            f"{readme.holding(name).name}'s {name} section drifted: {REGENERATE}"
    for path, text in readme.rendered().items():
        assert path.read_text(encoding="utf-8") == text, \
            f"{path.name} drifted from the client modules: {REGENERATE}"


def test_the_intro_lists_every_client():
    """README's first lines (what taosync is) name every registered client: the lists are
    generated, so a client added to the registry is named there without a hand edit."""
    for name in ("client-names", "mcp-apps"):
        assert readme.holding(name) == readme.README, name
    intro = readme.README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    for module in registry.all().values():
        assert module.TITLE in intro, module.ID


def test_every_client_declares_each_fact():
    for module in registry.all().values():
        assert readme.fact(module, "KEY_REFERENCE"), module.ID
        # proven by its binary, or (an app that cannot run here) from documents it cites
        assert readme.fact(module, "INSTALL" if module.INSTALL else "SOURCES"), module.ID


def test_readme_says_how_each_client_is_proven():
    """The owned-files table's "how proven" cell: the real binary for a gateway client
    (its INSTALL), the cited docs for an app that takes only MCP servers (INSTALL None)."""
    table = readme.table()
    assert table.splitlines()[0].endswith("| how proven |")
    for module in registry.all().values():
        row = next(line for line in table.splitlines()
                   if line.startswith(f"| {module.OWNED_FILES[0][0]} |"))
        if module.GATEWAY:
            assert module.INSTALL is not None and not module.SOURCES, module.ID
            assert row.endswith(f"| binary `{module.INSTALL[1]}` ({module.INSTALL[0]}) |")
        else:
            assert module.INSTALL is None and module.SOURCES, module.ID
            assert "| docs: " in row and all(url in row for url, _ in module.SOURCES), row


def test_mcp_facts_are_for_exactly_the_clients_with_mcp():
    for module in registry.all().values():
        assert bool(module.MCP_REFERENCE) == readme.has_mcp(module), module.ID


def test_install_pins_the_version_the_owned_files_table_names():
    for module in registry.all().values():
        if module.INSTALL is None:
            continue  # proven from its docs: nothing to install
        where, spec, _note = module.INSTALL
        client = spec.split()[0]  # the client first; then what it needs beside (shell-gpt)
        version = client.rsplit("==" if where == "pypi" else "@", 1)[1]
        assert version in module.OWNED_FILES[0][0], (module.ID, spec)


def test_the_client_lists_name_every_client():
    for module in registry.all().values():
        listed = _section("client-names" if module.GATEWAY else "mcp-apps")
        assert module.TITLE in listed, module.ID
        assert f"`{module.ID}`" in _section("client-ids")


def test_a_client_missing_a_fact_is_named_with_where_to_add_it():
    import types

    module = types.SimpleNamespace(ID="toy", TITLE="Toy", MCP_REFERENCE="")
    with pytest.raises(KeyError, match="'toy' declares no MCP_REFERENCE: add it to its module"):
        readme.fact(module, "MCP_REFERENCE")
    module.MCP_REFERENCE = "its own"
    assert readme.fact(module, "MCP_REFERENCE") == "its own"


def test_module_prints_every_section():
    proc = subprocess.run([sys.executable, "-m", "taosync.clients.readme"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for name in readme.SECTIONS:
        assert f"<!-- {name} -->" in proc.stdout


def test_one_command_regenerates_schema_and_readme(tmp_path, monkeypatch):
    """``python -m taosync.dev regenerate`` is the one command CONTRIBUTING.md names: it
    rewrites the stale schema copies and the docs' sections, in whichever page holds
    each; ``check`` says which are stale."""
    import shutil

    from taosync import dev
    from taosync import schema_build

    readme_copy, docs_copy = tmp_path / "README.md", tmp_path / "docs"
    shutil.copy(readme.README, readme_copy)
    shutil.copytree(readme.DOCS, docs_copy)
    monkeypatch.setattr(readme, "README", readme_copy)
    monkeypatch.setattr(readme, "DOCS", docs_copy)
    page = readme.holding("client-ids")
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace(readme.section(text, "client-ids"), "`stale`"))
    packaged, repo_copy = tmp_path / "pkg" / "fleet.schema.json", tmp_path / "fleet.schema.json"
    repo_copy.write_text("{}\n")
    monkeypatch.setattr(schema_build, "PACKAGED", packaged)
    monkeypatch.setattr(schema_build, "REPO_COPY", repo_copy)
    assert set(dev.stale()) == {page, packaged, repo_copy}
    assert dev.main(["check"]) == 1
    assert dev.main(["regenerate"]) == 0
    assert dev.stale() == []
    assert page.read_text(encoding="utf-8") == text
    assert repo_copy.read_text(encoding="utf-8") == (ROOT / "schemas/fleet.schema.json").read_text()


def test_the_checkout_is_regenerated():
    proc = subprocess.run([sys.executable, "-m", "taosync.dev", "check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    bad = subprocess.run([sys.executable, "-m", "taosync.dev", "regen"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "usage: python -m taosync.dev" in bad.stderr
