"""Entry point: ``taosync`` and ``python -m taosync``."""

import sys


def main(argv: list[str] | None = None) -> int:
    from taosync.cli import run

    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
