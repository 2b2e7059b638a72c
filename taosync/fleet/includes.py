"""Team fleets: ``include: [PATH, …]`` merged under the including file.

The local file wins per key: mappings merge deeply, anything else — lists too — is
replaced. The merge remembers which file each value came from (``origins``), so a
problem found later is located in the file the value is in.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping, TypeVar

from taosync.fleet.problems import Findings, PathT, _Stop
from taosync.fleet.yaml_source import YamlSource, _NotFast

_T = TypeVar("_T")


class Includes:
    """The base fleets of one load: each read and parsed once per load (the positions
    pass asks again), its problems reported into the load's findings."""

    def __init__(self, root: YamlSource, findings: Findings, *, home: Path,
                 environ: Mapping[str, str] | None) -> None:
        self.root = root
        self.findings = findings
        self.home = home
        self.environ = environ
        #: YAML path → the source whose value is there (only paths an include set)
        self.origins: dict[tuple, YamlSource] = {}
        #: (path, sha256) of every file read: fleet.yaml first, then each included one
        self.sources: list[tuple[str, str]] = []
        #: each variable an include path expanded → its value (None: unset) — as much an
        #: input of the fleet as the files it led to (engine/cache.py)
        self.include_vars: dict[str, str | None] = {}
        self._files: dict[Path, YamlSource] = {}
        #: an include could not be read or parsed: what the rest of the fleet lacks is
        #: its doing, so the load reports the include alone (issue 29)
        self.failed = False

    def merge(self, data: dict, fast: bool) -> dict:
        """``data`` (the root file's) with its includes merged under it."""
        self.origins = {}
        self.sources = [(self.root.file, self.root.digest)]
        self.include_vars = {}
        self.failed = False
        if "include" not in data:
            return data
        merged: dict = {}
        self._merge_from(self.root, data, fast, merged, [self.root.path.resolve()],
                         [self.root.file])
        return merged

    def _merge_from(self, source: YamlSource, data: dict, fast: bool, merged: dict,
                    stack: list[Path], shown: list[str]) -> None:
        from taosync.privilege import rights_for

        entries = data.pop("include", None)
        for index, target, written, named in self._include_paths(source, entries):
            resolved = target.resolve()
            where = ("include", index)
            if resolved in stack:
                first = stack.index(resolved)
                chain = " → ".join([*shown[first:], shown[first]])
                source.error(where, f"include cycle: {chain}; remove one of these includes")
                self.failed = True
                continue
            with rights_for(target):
                what = (None if resolved.is_file() else
                        "is a directory" if resolved.is_dir() else
                        "is not a regular file" if resolved.exists() else "does not exist")
            if what is not None:
                fix = ("fix the path (relative paths start at the including file's folder)"
                       if what == "does not exist" else "name a fleet file")
                unset = [n for n, v in self.include_vars.items() if v is None
                         and re.search(rf"\$(\{{{n}\}}|{n}\b)", written)]
                if unset:
                    fix = f"${unset[0]} is not set: export it, or write the path"
                source.error(where, f"cannot include {written}: {what}; {fix}")
                self.failed = True
                continue
            included = self._included(resolved, named=target, shown=named)
            try:
                included.read()
                try:
                    child = included.parse(fast=fast)
                except _NotFast:
                    child = included.parse(fast=False)
            except _Stop:
                self.failed = True
                continue
            self.sources.append((str(resolved), included.digest))
            self._merge_from(included, child, fast, merged, [*stack, resolved],
                             [*shown, named])
        _deep_merge(merged, data, source, (), self.origins)

    def _include_paths(self, source: YamlSource,
                       entries: object) -> list[tuple[int, Path, str, str]]:
        """(index, path, path as written, path as shown) of each well-formed entry; the
        others are located errors. A path is shown as written — ``~/…``, or a relative one
        joined to the including file's own name — never made absolute."""
        if entries is None:
            return []
        if isinstance(entries, str):
            entries = [entries]
            where_one = True
        else:
            where_one = False
        if not isinstance(entries, list):
            source.error(("include",), "include: is a list of fleet files (paths)")
            return []
        out = []
        for index, entry in enumerate(entries):
            where = ("include",) if where_one else ("include", index)
            if not isinstance(entry, str) or not entry.strip():
                source.error(where, "an include is the path of a fleet file")
                continue
            text = entry.strip()
            if text == "~" or text.startswith("~/"):
                path = Path(self.home) / text[2:]
                shown = text
            else:
                path = Path(self._expand_vars(text)) if "$" in text else Path(text)
                shown = str(path)
                if not path.is_absolute():
                    shown = os.path.normpath(os.path.join(os.path.dirname(source.file), path))
                    path = Path(source.path).parent / path
            out.append((index, path, text, shown))
        return out

    def _expand_vars(self, text: str) -> str:
        """os.path.expandvars on the load's environment, noting each variable read
        (``$NAME``/``${NAME}``; an unset one stays as written, as expandvars leaves it)."""
        environ = self.environ if self.environ is not None else os.environ

        def value(match: re.Match) -> str:
            name = match.group(1)
            if name.startswith("{"):
                name = name[1:-1]
            found = environ.get(name)
            self.include_vars[name] = found
            return match.group(0) if found is None else found

        return re.sub(r"\$(\w+|\{[^}]*\})", value, text, flags=re.ASCII)

    def _included(self, path: Path, named: Path, shown: str) -> YamlSource:
        """One parse per file per load (the positions pass asks again); its problems
        name it as ``shown``."""
        if path not in self._files:
            self._files[path] = YamlSource(path, self.findings)
            self._files[path].file = shown
        included = self._files[path]
        included.named = named  # as named: one in the home is read as its owner
        return included

    def origin(self, path: PathT) -> YamlSource:
        """The source the value at ``path`` came from: the longest prefix of ``path``
        one file set (the root file when none did)."""
        return owner_of(self.origins, path, self.root)


def owner_of(origins: Mapping[tuple, _T], path: PathT, default: _T) -> _T:
    """What ``origins`` holds for the longest prefix of ``path`` (``default`` if none)."""
    for end in range(len(path), 0, -1):
        owner = origins.get(tuple(path[:end]))
        if owner is not None:
            return owner
    return default


def _deep_merge(merged: dict, data: dict, source: YamlSource, path: PathT,
                origins: dict[tuple, YamlSource]) -> None:
    """``data`` over ``merged`` in place: mappings merge, every other value replaces."""
    for key, value in data.items():
        here = (*path, key)
        if isinstance(merged.get(key), dict) and isinstance(value, dict):
            _deep_merge(merged[key], value, source, here, origins)
            continue
        if key in merged:
            for stale in [p for p in origins if p[:len(here)] == here]:
                del origins[stale]
        merged[key] = value
        origins[here] = source
