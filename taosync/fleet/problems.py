"""What loading fleet.yaml reports: located problems, and the wording helpers
every step shares (one ``did_you_mean``, YAML paths as users write them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from taosync.errors import TaosyncError

if TYPE_CHECKING:
    from typing import Protocol

    from taosync.fleet.secrets import Secret

    class Reporter(Protocol):
        """What a check step is given to report with: a problem at a YAML path is
        located in the file the value there came from."""

        @property
        def reported(self) -> set[PathT]: ...

        def error(self, path: PathT, message: str, at: str = "value") -> None: ...

        def warn(self, path: PathT, message: str, at: str = "value") -> None: ...


PathT = tuple  # of str (mapping key) | int (list index)


@dataclass(frozen=True)
class Problem:
    """One problem (or warning) in fleet.yaml, tied to a line and column (1-based).

    ``line == 0`` means the file as a whole (it does not exist or cannot be read).
    """

    file: str
    line: int
    column: int
    yaml_path: str
    message: str
    severity: str = "error"  # error | warning

    def format(self) -> str:
        """``fleet.yaml:LINE:COL: <yaml path>: message`` (compiler style)."""
        parts = [f"{self.file}:{self.line}:{self.column}" if self.line else self.file]
        if self.yaml_path:
            parts.append(self.yaml_path)
        parts.append(self.message if self.severity == "error" else f"warning: {self.message}")
        return ": ".join(parts)

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column,
                "path": self.yaml_path, "message": self.message, "severity": self.severity}


def _order(p: Problem):
    return (p.line, p.column, p.severity != "error")


class FleetInvalid(TaosyncError):
    """fleet.yaml cannot be used: every problem found, sorted by line (exit code 2)."""

    exit_code = 2

    def __init__(self, file: str, problems: Iterable[Problem],
                 warnings: Iterable[Problem] = ()) -> None:
        self.file = file
        self.problems: list[Problem] = sorted(problems, key=_order)
        self.warnings: list[Problem] = sorted(warnings, key=_order)
        n = len(self.problems)
        super().__init__(
            f"{file}: {n} problem{'' if n == 1 else 's'}; nothing was written",
            details=[p.format() for p in self.all()],
        )

    def all(self) -> list[Problem]:
        """Problems and warnings together, in file order."""
        return sorted(self.problems + self.warnings, key=_order)


class Findings:
    """What one load found: errors and warnings, each reported once, in the file and at
    the line and column they were found."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Start again (the load runs its steps a second time where positions are known)."""
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self._seen: set[tuple] = set()
        #: paths already reported (a bad URL, a value replaced by a placeholder): the
        #: schema step says nothing more about them
        self.reported: set[PathT] = set()

    def at(self, file: str, line: int, column: int, message: str, path: PathT = (),
           severity: str = "error") -> None:
        marker = (file, line, column, path, message, severity)
        if marker in self._seen:
            return
        self._seen.add(marker)
        problem = Problem(file, line, column, format_path(path), message, severity)
        (self.errors if severity == "error" else self.warnings).append(problem)

    def scrub(self, secrets: "Iterable[Secret]") -> None:
        """No message may hold a secret: replace any occurrence with its redacted form
        (only values of 8 characters or more: a shorter one would hide words)."""
        values = [v for v in secrets if len(v.reveal()) >= 8]
        if not values:
            return
        for bucket in (self.errors, self.warnings):
            for i, p in enumerate(bucket):
                message = p.message
                for v in values:
                    message = v.scrub(message)
                if message != p.message:
                    bucket[i] = Problem(p.file, p.line, p.column, p.yaml_path, message,
                                        p.severity)


class _Stop(Exception):
    """Stop the pipeline: what is found so far is all that can be found."""


def closest(word, candidates: Iterable, cutoff: float = 0.6) -> str | None:
    """The candidate ``word`` was most likely meant to be (same letters in another
    case first, then difflib's closest match at ``cutoff``), or None. The one
    "did you mean" search of taosync: callers word the hint their own way."""
    if not isinstance(word, str):
        return None
    cands = [c for c in candidates if isinstance(c, str) and c != word]
    folded = {c.casefold(): c for c in cands}
    if word.casefold() in folded:
        return folded[word.casefold()]
    import difflib

    match = difflib.get_close_matches(word, cands, n=1, cutoff=cutoff)
    if match:
        return match[0]
    meant = _SYNONYMS.get(word.casefold())
    if meant in cands:
        return meant
    # a word the name begins (`enviroment` → `env`, `cand` → `candidates`)
    key = word.casefold()
    starts = [c for c in cands if len(c) >= 3 and len(key) >= 3
              and (key.startswith(c.casefold()) or c.casefold().startswith(key))]
    return max(starts, key=len) if len(starts) == 1 else None


#: names people write for a key taosync spells otherwise (other tools' words)
_SYNONYMS = {"environment": "env", "arguments": "args", "argv": "args",
             "working_dir": "cwd", "workdir": "cwd", "cmd": "command",
             "endpoint": "url", "api_key": "key", "apikey": "key", "token": "key",
             "baseurl": "base_url", "base-url": "base_url", "model_id": "model",
             "route": "routes", "client": "clients", "mcp": "mcp_servers",
             "mcpservers": "mcp_servers", "mcp-servers": "mcp_servers"}


def did_you_mean(word, candidates: Iterable) -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or ``""``."""
    match = closest(word, candidates)
    return f"; did you mean '{match}'?" if match else ""


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_/@+-]+$")


def format_path(path: PathT) -> str:
    """``("clients", "x", "profiles", 1)`` → ``clients.x.profiles[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out
