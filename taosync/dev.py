"""Developer commands, not the user's CLI: the files generated from the code.

``python -m taosync.dev regenerate`` rewrites each of them — the fleet.yaml JSON schema
(``schemas/fleet.schema.json`` and the packaged copy, from the pydantic model and the
client modules' ``OPTIONS``) and the docs' generated parts (README's client lists; the
secrets tables, install line and owned-files table in docs/, from the client modules) and the location variables the
engine knows without importing a client (``taosync/engine/location_vars.py``) — after
adding or changing a client, a protocol or a format. ``python -m taosync.dev check`` writes nothing and exits 1
naming what is stale (the tests check the same). ``python -m taosync.dev install-clients``
installs the real clients the modules pin, for the real-client tests
(``taosync/clients/install.py``; ``--help`` for its options).
"""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = "usage: python -m taosync.dev regenerate|check|install-clients [--help]"


#: the location variables' module (engine/owner.py reads it without importing a client)
LOCATION_VARS_MODULE = Path(__file__).parent / "engine" / "location_vars.py"
#: variables no client module names but every one may be moved by (ClientEnv.app_data)
BASES = ("XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA")


def location_vars_module() -> str:
    """The text of engine/location_vars.py: every client's LOCATION_VARS and
    LOCATION_FILES, then the bases, each once, in registry order."""
    from taosync.clients.registry import all as all_clients

    names: list[str] = []
    for module in all_clients().values():
        names += [v for v in (*module.LOCATION_VARS, *module.LOCATION_FILES) if v not in names]
    names += [v for v in BASES if v not in names]
    lines = "".join(f"    \"{name}\",\n" for name in names)  # variable names: no escaping
    return ('"""Generated from the client modules by `python -m taosync.dev regenerate`: do not '
            'edit.\n\nEvery environment variable a client reads its files\' location from, '
            'and the\nbases (XDG, Windows) every one may move with."""\n\n'
            f"LOCATION_VARS = (\n{lines})\n")


def generated() -> dict[Path, str]:
    """Each generated file → the text the code gives it now."""
    from taosync.clients import readme
    from taosync import schema_build

    schema = schema_build.dumps(schema_build.generate())
    out = {schema_build.PACKAGED: schema, LOCATION_VARS_MODULE: location_vars_module()}
    if schema_build.REPO_COPY.parent.is_dir():  # a checkout, not an installed package
        out[schema_build.REPO_COPY] = schema
    if readme.README.is_file():  # a checkout: README and the docs/ pages
        out.update(readme.rendered())
    return out


def stale() -> list[Path]:
    """The generated files whose text on disk differs from what the code gives."""
    return [path for path, text in generated().items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str]) -> int:
    if argv[:1] == ["install-clients"]:
        from taosync.clients import install

        return install.main(argv[1:])
    if argv == ["check"]:
        paths = stale()
        for path in paths:
            print(f"stale: {path} (run `python -m taosync.dev regenerate`)", file=sys.stderr)
        return 1 if paths else 0
    if argv != ["regenerate"]:
        print(USAGE, file=sys.stderr)
        return 2
    for path, text in generated().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(f"unchanged {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
