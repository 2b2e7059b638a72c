"""Format plugins: every editor holds to :class:`FormatEditor` (no optional method a caller
must look for), and a format's secret spellings are its own — a format registered at run
time is redacted in its own escapes with no edit to the redactor."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from conftest import ROOT
from taosync.fleet.secrets import Redactor, Secret, spellings
from taosync.formats import registry
from taosync.formats.base import FormatEditor

#: ';' in every pair: an INI file escapes it, and no run of it is long enough to be
#: caught as a fragment of the key, so only the INI spelling itself can hide it
RAW = "ab;cd;ef;gh;ij;kl;mn;op;qr"


@pytest.fixture
def ini_format(monkeypatch):
    """A made-up INI format: an editor (the text one will do) and its own escapes."""
    module = types.ModuleType("taosync_test_ini_format")
    module.EDITOR = registry.editor_for("text")
    module.spellings = lambda value: {value.replace("\\", "\\\\").replace(";", "\\;")}
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.EDITORS, "ini", module.__name__)
    monkeypatch.setitem(registry.SPELLINGS, "ini", module.__name__)
    return module


def test_a_format_registered_at_run_time_brings_its_secret_spelling(ini_format):
    in_ini = RAW.replace(";", "\\;")
    assert in_ini in spellings(RAW)
    shown = Redactor(Secret(RAW)).scrub(f"~/.tool.ini, line 3: {in_ini}")
    assert in_ini not in shown and "ab\\;cd" not in shown
    assert registry.editor_for("ini") is ini_format.EDITOR


def test_every_editor_holds_to_the_contract_with_its_defaults():
    for fmt in registry.EDITORS:
        for editor in (registry.editor_for(fmt), registry.editor_for(fmt, new=True)):
            assert FormatEditor in type(editor).__mro__, fmt
            doc = editor.parse("")
            assert isinstance(editor.lead(doc, []), list)


def test_the_spelling_modules_are_light():
    """The redactor loads every format's spellings: none may pull in tomlkit or ruamel."""
    code = ("import sys; from taosync.fleet.secrets import spellings; spellings('x'); "
            "print(sorted(m for m in ('tomlkit', 'ruamel', 'ruamel.yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"

