"""Project scope (``--project [DIR]``): the project overlay merged over the user's fleet.

A project overlay is a ``taosync.yaml`` in the repository's root, or — when there is none —
the entry for that root under ``projects:`` in the user's own fleet.yaml. It may set only
what a project may choose (:data:`ALLOWED`): its gateway (a mapping, or the name of one
of the user's gateways), models, routes, default route, client slots and MCP servers. It
is merged over the user's fleet the way an ``include:`` is merged under it (mappings key
by key, anything else replaced), except ``gateway:``, which is replaced as a whole: the
user's headers or key never go to a project's gateway. A key written inline in an
overlay is refused (a located error): an overlay is a file in a repository.

Every problem is located in the file (and line) its value came from, as for includes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from taosync.errors import BadInput
from taosync.fleet.includes import _deep_merge
from taosync.fleet.problems import Findings, PathT, _Stop
from taosync.fleet.secrets import parse_reference
from taosync.fleet.yaml_source import YamlSource, _NotFast

#: the overlay file in a project's root
OVERLAY_FILE = "taosync.yaml"
#: what an overlay may set (and ``version``)
ALLOWED = ("gateway", "models", "routes", "default_route", "clients", "mcp_servers")


class _Within:
    """A projects: entry as a source of its own: a path inside it is located in the
    user's fleet.yaml at ``projects.<root>.…``."""

    def __init__(self, source: YamlSource, prefix: tuple) -> None:
        self.source = source
        self.prefix = prefix
        self.file = source.file

    def position(self, path: PathT, at: str = "value") -> tuple[int, int]:
        return self.source.position((*self.prefix, *path), at)

    def error(self, path: PathT, message: str, at: str = "value") -> None:
        self.source.error((*self.prefix, *path), message, at)

    def at(self, line: int, column: int, message: str, path: PathT = ()) -> None:
        self.source.at(line, column, message, path)


class Overlay:
    """The project overlay of ``root`` for one load (fleet/load.py calls :meth:`merge`
    after the includes are merged)."""

    def __init__(self, root: Path, *, home: Path) -> None:
        self.root = root
        self.home = home
        self.file = root / OVERLAY_FILE
        self._source: YamlSource | None = None
        self._shown: Any = None  # the source the overlay's values are located in
        #: where the overlay came from: the taosync.yaml, or "fleet.yaml projects.<root>"
        self.origin: str | None = None

    def merge(self, data: dict, *, root: YamlSource, findings: Findings, includes,
              fast: bool) -> dict:
        """``data`` (the user's merged fleet) with the overlay over it; ``projects:`` is
        dropped. Problems go to ``findings``."""
        entries = data.pop("projects", None)
        for path in [p for p in includes.origins if p[:1] == ("projects",)]:
            del includes.origins[path]
        source: Any
        if self.file.is_file():
            if self._source is None:
                self._source = YamlSource(self.file, findings)
                self._source.read()
            source = self._source
            try:
                overlay = source.parse(fast=fast)
            except _NotFast:
                overlay = source.parse(fast=False)
            includes.sources.append((str(self.file), source.digest))
            self.origin = str(self.file)
        else:
            key = self._entry(entries)
            if key is None:
                raise BadInput(
                    f"--project {self.root}: no project overlay: write {OVERLAY_FILE} in "
                    f"that folder, or add `projects: {{{self.root}: {{…}}}}` to "
                    f"{root.file} (docs/project.md)")
            source = _Within(includes.origin(("projects", key)), ("projects", key))
            overlay = entries[key] if isinstance(entries[key], dict) else {}
            if not isinstance(entries[key], dict):
                source.error((), "a projects: entry is a mapping (gateway:, routes:, "
                             "clients:, …)")
                raise _Stop
            self.origin = f"{root.file} projects.{key}"
        self._shown = source
        before = len(findings.errors)
        self._check(overlay, source)
        if source is self._source:
            self._no_commands(overlay, source, ())
        if len(findings.errors) > before:
            raise _Stop  # nothing of a refused overlay is resolved (no command run)
        gateway = overlay.get("gateway")
        if isinstance(gateway, dict):  # replaced whole: nothing of the user's goes there
            data.pop("gateway", None)
            data.pop("default_gateway", None)
            for path in [p for p in includes.origins if p[:1] == ("gateway",)]:
                del includes.origins[path]
        elif isinstance(gateway, str):  # one of the user's named gateways
            found = data.get("gateways")
            named: dict = found if isinstance(found, dict) else {}
            if gateway not in named:
                source.error(("gateway",), f"{gateway!r} is not one of your gateways ("
                             + (", ".join(map(str, named)) if named else "your fleet names "
                                "none under gateways:")
                             + "); name one, or give the project's gateway as a mapping "
                             "(base_url:, key:)")
                raise _Stop
            overlay = {k: v for k, v in overlay.items() if k != "gateway"}
            data["default_gateway"] = gateway
            includes.origins[("default_gateway",)] = source
        overlay = {k: v for k, v in overlay.items() if k != "version"}
        _deep_merge(data, overlay, cast(YamlSource, source), (), includes.origins)
        return data

    def _entry(self, entries) -> str | None:
        """The key under ``projects:`` naming this root (``~/`` is the home)."""
        if not isinstance(entries, dict):
            return None
        for key in entries:
            text = str(key)
            path = Path(self.home) / text[2:] if text.startswith("~/") else Path(text)
            if os.path.abspath(path) == str(self.root):
                return key
        return None

    def _no_commands(self, node, source, path: PathT) -> None:
        """A repository's taosync.yaml runs nothing on the user's machine at apply time:
        a ``${cmd:…}`` reference there is refused (a projects: entry is the user's own)."""
        if isinstance(node, dict):
            for k, v in node.items():
                self._no_commands(v, source, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self._no_commands(v, source, (*path, i))
        elif isinstance(node, str) and ("${cmd:" in node or "${shell:" in node):
            source.error(path, "a repository's taosync.yaml may not run a command on your "
                         "machine (${cmd:…}, ${shell:…}); use ${env:NAME} or ${file:~/PATH}, "
                         f"or put the overlay in your own fleet.yaml under projects: {self.root}")

    def _check(self, overlay: dict, source) -> None:
        """What only an overlay must not do: set other keys, hold a key inline."""
        for name in overlay:
            if name not in ALLOWED and name != "version":
                line, col = source.position((name,), "key")
                source.at(line, col, f"a project overlay sets only {', '.join(ALLOWED)}; "
                          f"`{name}` belongs in your own fleet.yaml")
        gateway = overlay.get("gateway")
        if isinstance(gateway, dict):
            key = gateway.get("key")
            if isinstance(key, str) and parse_reference(key).kind == "literal":
                source.error(("gateway", "key"), "a project overlay never holds a key "
                             "inline (it is a file in a repository): reference it — "
                             "${env:NAME}, ${file:~/PATH}, ${cmd:…}")
        elif gateway is not None and not isinstance(gateway, str):
            source.error(("gateway",), "gateway: is a mapping (base_url:, key:) or the "
                         "name of one of your gateways")

    def where(self, path: PathT) -> str:
        """``file:line:col`` of ``path`` in the overlay (its top when it is not there)."""
        source = self._shown
        if source is None:
            return str(self.file)
        try:
            line, col = source.position(path)
        except Exception:  # a path the overlay does not hold: its start
            line, col = source.position(())
        return f"{source.file}:{line}:{col}"
