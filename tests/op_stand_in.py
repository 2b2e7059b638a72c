#!/usr/bin/env python3
"""A stand-in for the 1Password CLI ``op`` (``op inject``, ``op read``), for tests.

Its vault is the JSON file ``$OP_STAND_IN_VAULT`` (``{"op://vault/item/field": value}``);
every call is logged as one JSON line (its arguments) to ``$OP_STAND_IN_LOG``, so a test
can count the calls of a run. ``$OP_STAND_IN_SIGNED_OUT`` set: every call fails as ``op``
does when it needs a sign-in and has no terminal to ask on. Messages are shaped as op
2.x prints them (``[ERROR] <date> <time> …`` on stderr, exit 1).
"""

import json
import os
import re
import sys


def fail(message: str) -> None:
    sys.stderr.write(f"[ERROR] 2026/12/02 10:00:00 {message}\n")
    sys.exit(1)


def main(argv: list[str]) -> None:
    with open(os.environ["OP_STAND_IN_LOG"], "a") as log:
        log.write(json.dumps(argv) + "\n")
    if os.environ.get("OP_STAND_IN_SIGNED_OUT"):
        fail("You are not currently signed in. Please run `op signin --help` for instructions")
    with open(os.environ["OP_STAND_IN_VAULT"]) as fh:
        vault = json.load(fh)

    def value(ref: str) -> str:
        if ref not in vault:
            vault_name, item = (ref[len("op://"):].split("/") + ["", ""])[:2]
            fail(f"could not read secret '{ref}': could not find item {item} in vault "
                 f"{vault_name}")
        return vault[ref]

    if argv[:1] == ["inject"]:
        template = sys.stdin.read()
        sys.stdout.write(re.sub(r"\{\{\s*(op://[^}\s]+)\s*\}\}", lambda m: value(m.group(1)),
                                template))
    elif argv[:1] == ["read"] and len(argv) == 2:
        sys.stdout.write(value(argv[1]) + "\n")
    else:
        fail(f"unknown command {argv!r} for the stand-in")


if __name__ == "__main__":
    main(sys.argv[1:])
