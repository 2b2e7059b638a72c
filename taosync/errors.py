"""Errors that end a command with a clear message and a documented exit code.

Exit codes (DESIGN.md): 0 ok · 1 the job ran and found a problem · 2 bad input ·
3 could not write · 70 internal error. Raised anywhere, printed once by the CLI, never
as a traceback.
"""

from __future__ import annotations


#: the exit code of an unexpected exception — a bug in taosync, never an answer: its own
#: code (sysexits.h's EX_SOFTWARE), so ``plan --check`` cannot read a crash as "changes
#: pending" (1) nor a script as "bad input" (2)
INTERNAL_ERROR = 70


class TaosyncError(Exception):
    exit_code = 2

    def __init__(self, message: str, *, details: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or []


class BadInput(TaosyncError):
    """Usage, an invalid fleet.yaml, an unreadable or unparsable target file."""

    exit_code = 2


class WriteFailed(TaosyncError):
    """I/O or lock failure; nothing was left half-written."""

    exit_code = 3
