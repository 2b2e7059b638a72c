"""Entry point: ``taosync`` and ``python -m taosync``."""

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. As the process's own entry point (no ``argv`` given), collect
    garbage less often and end the process right after the command instead of
    returning into interpreter teardown."""
    if argv is None:
        from taosync.fastpath import answer

        try:
            rc = answer(sys.argv[1:])  # nothing changed: answered on the standard library
        except Exception:  # a bug in the shortcut, not in the answer: the full path gives it
            rc = None
        if rc is not None:
            exit_now(rc)  # even with few modules, teardown is ~1 ms: a seventh of a no-op
            return rc
        import gc

        # Importing click, ruamel and the rest creates tens of thousands of objects that
        # live until exit; at the default threshold (700) the collector scans them about
        # 30 times in a cold plan, for nothing: 15-20 ms of CPU. Cycles are still
        # collected, in long-running commands (watch, stub) too, in larger batches.
        gc.set_threshold(50_000, 20, 20)
    from taosync.cli import run

    rc = run(sys.argv[1:] if argv is None else argv)
    if argv is None:
        exit_now(rc)
    return rc


def exit_now(rc: int) -> None:
    """End the process with ``rc`` without tearing the interpreter down.

    Tearing down the modules a run imported (click, ruamel, tomlkit, …) and the final
    garbage collection cost a short command like ``plan`` about 40 ms, a sixth of its
    run, for nothing a finished command needs. What teardown would do that matters is
    done here first: every ``atexit`` handler runs (other code's too, e.g. coverage's),
    then stdout and stderr are flushed. When that cannot be done cleanly — a thread still
    running, a flush failing (a closed pipe) — this returns and Python exits as usual.
    """
    import atexit
    import os

    # threading not imported: no thread was started through it (the fast path's case,
    # which must not pay for importing it)
    threading = sys.modules.get("threading")
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None or threading is not None and any(
            not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(rc)


if __name__ == "__main__":
    sys.exit(main())
