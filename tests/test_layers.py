"""The package's layers only import downward, and no module imports itself round a circle.

Read from the source (ast), so an import inside a function counts as much as one at the
top: a lazy import keeps start-up cheap, not the dependency away. A string naming a
module (a registry's ``"taosync.formats.json_"``, the command table's
``"taosync.commands.plan:plan"``) counts as an import of it too.

Layers, top to bottom (a module may import its own layer or any lower one)::

    __main__, cli → commands → pipeline, watch, importer → stub → ui, settings
      → verify → schema-build (schema_build) → clients → protocols
      → engine → fleet → formats → errors, paths, privilege, terminal, bounded, hints

Violations other helpers of issue 12 are removing right now are listed in
KNOWN_VIOLATIONS; the test fails on any violation not listed there, and on any listed
one that no longer occurs, so the set can only shrink (the lead empties it after merging).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "taosync"

#: top to bottom; a module belongs to the first layer one of whose prefixes it has
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entry", ("taosync.__main__", "taosync.cli", "taosync.fastpath", "taosync.dev")),
    ("commands", ("taosync.commands",)),
    ("pipeline", ("taosync.pipeline", "taosync.watch", "taosync.importer", "taosync.doctor")),
    ("stub", ("taosync.stub",)),
    ("ui", ("taosync.ui", "taosync.settings", "taosync.confirm")),
    ("verify", ("taosync.verify",)),
    # the fleet of the registered clients and the schema built from it: it hands the
    # registry's option declarations down to fleet/model.py; the run path reads only the
    # committed schema (fleet/schema.py)
    ("schema-build", ("taosync.schema_build",)),
    ("clients", ("taosync.clients",)),
    ("protocols", ("taosync.protocols",)),
    ("engine", ("taosync.engine",)),
    ("fleet", ("taosync.fleet",)),
    ("formats", ("taosync.formats",)),
    ("base", ("taosync.errors", "taosync.paths", "taosync.privilege", "taosync.terminal",
              "taosync.bounded", "taosync.hints")),
]

#: ("upward", importer, imported): a lower layer imports a higher one;
#: ("circle", importer, imported): that import closes a circle inside one layer.
#: Each one belongs to another helper's part of issue 12; the lead removes an entry once
#: the merged branches no longer have it.
KNOWN_VIOLATIONS: set[tuple[str, str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, modules) -> str | None:
    """The taosync module ``name`` loads (its longest prefix that is a module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules) -> set[str]:
    """Every taosync module ``name`` imports, anywhere in its file, or names in a string."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.split(":")[0]
            if text in modules and text.startswith("taosync."):
                targets = [text]
        for target in targets:
            resolved = _resolve(target, modules) if target.startswith("taosync") else None
            if resolved and resolved != name:
                found.add(resolved)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def layer_of(module: str) -> int:
    if module == "taosync":  # the package itself: __version__
        return len(LAYERS) - 1
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _reaches(graph, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def violations(graph) -> set[tuple[str, str, str]]:
    """Upward imports, and imports that close a circle inside one layer. A circle across
    layers always has an upward import in it, which is reported as such (so the circle
    goes away with it and its other imports are not blamed)."""
    out = set()
    same_layer = {a: {b for b in bs if layer_of(b) == layer_of(a)} for a, bs in graph.items()}
    for importer, targets in graph.items():
        for imported in targets:
            if layer_of(imported) < layer_of(importer):
                out.add(("upward", importer, imported))
            elif imported in same_layer[importer] and importer in _reaches(same_layer, imported):
                out.add(("circle", importer, imported))
    return out


def test_every_module_has_a_layer():
    for module in all_modules():
        layer_of(module)


def test_no_import_goes_up_a_layer_or_round_a_circle():
    found = violations(import_graph())
    new = sorted(found - KNOWN_VIOLATIONS)
    assert not new, "imports that break the layers:\n" + "\n".join(map(str, new))


def test_known_violations_still_occur():
    """An entry fixed by a merge must leave KNOWN_VIOLATIONS: the set only shrinks."""
    gone = sorted(KNOWN_VIOLATIONS - violations(import_graph()))
    assert not gone, "fixed, remove from KNOWN_VIOLATIONS:\n" + "\n".join(map(str, gone))


def test_the_check_sees_lazy_imports_strings_and_circles():
    """The rules catch what they are meant to: an import inside a function going up, a
    registry naming its modules in strings, a circle closed lazily."""
    graph = {
        "taosync.formats.base": {"taosync.formats.json_"},
        "taosync.formats.json_": {"taosync.formats.base"},
        "taosync.fleet.model": {"taosync.commands.plan"},
        "taosync.commands.plan": set(),
    }
    assert violations(graph) == {
        ("circle", "taosync.formats.base", "taosync.formats.json_"),
        ("circle", "taosync.formats.json_", "taosync.formats.base"),
        ("upward", "taosync.fleet.model", "taosync.commands.plan"),
    }
    modules = all_modules()
    assert "taosync.formats.json_" in imports_of(
        "taosync.formats.registry", modules["taosync.formats.registry"], modules)
    assert "taosync.commands.plan" in imports_of("taosync.cli", modules["taosync.cli"], modules)
    assert "taosync.ui" in imports_of("taosync.pipeline", modules["taosync.pipeline"], modules)


def test_fleet_imports_no_client_module():
    """The fleet layer reads no client: the clients' option declarations are handed down
    to the pydantic model (taosync/schema_build.py), the run path reads the committed
    schema. Checked by name, whatever LAYERS says, so no carve-out can hide it."""
    reaching_up = sorted((module, target) for module, targets in import_graph().items()
                         if module.startswith("taosync.fleet.") for target in targets
                         if target == "taosync.clients" or target.startswith("taosync.clients."))
    assert not reaching_up, "taosync/fleet imports a client module:\n" + "\n".join(
        map(str, reaching_up))


def test_nothing_imports_cli_but_main():
    importers = {m for m, targets in import_graph().items() if "taosync.cli" in targets}
    assert importers == {"taosync.__main__"}


def test_format_and_settings_contracts_import_nothing_above_them():
    graph = import_graph()
    assert graph["taosync.formats.base"] == set()
    # settings reads the environment and ./fleet.yaml through the System (a certified
    # run records those reads: engine/certificate.py); root on another user's home acts
    # with its owner's rights from the moment settings name the home (taosync/privilege.py);
    # it hands next-step hints the options in effect (taosync/hints.py, paths' home spelling)
    # (lane profiles) --profile: the name's check and the profile's ClientEnv
    assert graph["taosync.settings"] <= {"taosync.errors", "taosync.clients.base",
                                         "taosync.engine.system", "taosync.privilege",
                                         "taosync.hints", "taosync.paths",
                                         "taosync.fleet.profiles", "taosync.clients.isolation"}


def test_watch_imports_no_command_module_and_no_click():
    """Watch is a library under the command: it prints nothing itself, so it needs neither
    click nor any command's printing."""
    modules = all_modules()
    watch = {m: p for m, p in modules.items() if m.split(".")[:2] == ["taosync", "watch"]}
    for name, path in watch.items():
        assert not {t for t in imports_of(name, path, modules)
                    if t.startswith("taosync.commands")}, name
        tree = ast.parse(path.read_text(encoding="utf-8"))
        roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        roots |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and not n.level}
        assert "click" not in roots, name
    code = ("import sys, taosync.watch\n"
            "print(sorted(m for m in sys.modules if m == 'click' or m.startswith('click.')"
            " or m.startswith('taosync.commands')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
