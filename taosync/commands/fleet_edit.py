"""Edit fleet.yaml in place for ``forget`` and ``adopt``: comments, quoting and layout
kept (the round-trip YAML editor of ``formats/yaml.py``), the change shown as a diff
first, then written atomically with the file's own mode."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from taosync.errors import BadInput, WriteFailed


class FleetEdit:
    """fleet.yaml as text, and the same text with ``set`` edits applied."""

    def __init__(self, path: Path):
        from taosync.formats.yaml import EDITOR
        from taosync.privilege import rights_for

        self.path = path
        try:
            from taosync.bounded import read_regular

            with rights_for(path):  # in a home root acts for: read (and written) as its owner
                self.old_text = read_regular(path).decode("utf-8")
        except FileNotFoundError:
            raise BadInput(f"{path}: no such file (taosync init writes one)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{path}: cannot be read ({getattr(exc, 'strerror', exc)})") from None
        self._editor = EDITOR
        from taosync.formats.base import FormatError

        try:
            self._doc = EDITOR.parse(self.old_text)
        except FormatError as exc:
            raise BadInput(exc.located(str(path))) from None

    def get(self, *path: str) -> Any:
        from taosync.formats.base import MISSING

        value = self._editor.get(self._doc, tuple(path))
        return None if value is MISSING else value

    def set(self, path: tuple[str, ...], value: Any) -> None:
        self._editor.set(self._doc, path, value)

    @property
    def new_text(self) -> str:
        return self._editor.dump(self._doc)

    @property
    def changed(self) -> bool:
        return self.new_text != self.old_text

    def diff(self) -> str:
        """The unified diff of the edit (labelled with the file's path)."""
        label = str(self.path)
        return "".join(difflib.unified_diff(self.old_text.splitlines(keepends=True),
                                            self.new_text.splitlines(keepends=True),
                                            fromfile=label, tofile=label))

    def write(self) -> None:
        """Replace fleet.yaml atomically, keeping its permission bits."""
        import os
        import stat

        from taosync.engine.system import atomic_write
        from taosync.privilege import rights_for

        try:
            with rights_for(self.path):
                mode = stat.S_IMODE(os.stat(self.path).st_mode)
                atomic_write(self.path, self.new_text.encode("utf-8"), mode)
        except OSError as exc:
            raise WriteFailed(f"cannot write {self.path} ({exc.strerror or exc}); "
                              "it was left as it was") from None


def print_diff(text: str) -> None:
    """A fleet diff, coloured as ``plan`` colours a client file's."""
    from taosync import ui
    from taosync.commands.report import _diff_style

    for line in text.rstrip("\n").splitlines():
        ui.out(ui.style(line, _diff_style(line)))
