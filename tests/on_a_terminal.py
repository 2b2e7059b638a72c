"""Run ``python -m taosync`` on a real pseudo-terminal (stdlib ``os.openpty``) and answer
its questions: the only honest test of what taosync asks a person (taosync/confirm.py)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

from conftest import ROOT


def run_on_a_terminal(args: list[str], answers: list[bytes] | bytes | None,
                      prompt: bytes = b"[y/N]", env: dict | None = None,
                      unset: tuple[str, ...] = (), timeout: float = 60) -> tuple[int, str]:
    """Run taosync with a pseudo-terminal as stdin, stdout and stderr; write each of
    ``answers`` after each ``prompt`` it shows. (exit code, everything the terminal
    showed). ``answers=None``: it must not ask at all. ``unset``: variables of this
    process the child does not get (``EDITOR``)."""
    if isinstance(answers, bytes):
        answers = [answers]
    todo = list(answers or [])
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "taosync", *args], stdin=slave,
                            stdout=slave, stderr=slave, cwd=ROOT, close_fds=True,
                            env={**{k: v for k, v in os.environ.items() if k not in unset},
                                 **(env or {})})
    os.close(slave)
    seen, asked = b"", 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                if seen.count(prompt) > asked:
                    asked += 1
                    if todo:
                        os.write(master, todo.pop(0))
            elif proc.poll() is not None:
                break
        rc = proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    text = seen.decode("utf-8", "replace")
    assert not todo, f"not asked (answers left: {todo}):\n{text[-3000:]}"
    if answers is None:
        assert asked == 0, f"asked although nothing needs a yes:\n{text[-3000:]}"
    return rc, text
