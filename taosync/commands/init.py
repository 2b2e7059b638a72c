"""``taosync init``: write a commented starter fleet.yaml.

Where: PATH if given, else ``-c``, else ``$TAOSYNC_CONFIG``, else ``./fleet.yaml``.
An existing file is never replaced without ``--force`` (exit 2). The file is written
with the shared atomic write (engine/system.py: temp file in the same directory, then
rename; through a symlink to the real file; a new file 0644 whatever the umask, an
existing one keeps its mode) and passes ``taosync validate --no-key`` as written.

Its first line is the editor modeline ``# yaml-language-server: $schema=./fleet.schema.json``;
``taosync schema --write`` puts that schema beside it (init writes only fleet.yaml and says
so): editors then complete and check fleet.yaml offline, and the relative path survives a
clone on another machine (see commands/schema.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from taosync.errors import BadInput, WriteFailed
from taosync.settings import common_options, current
from taosync.hints import again

#: a fleet.yaml holds no secret (the key is a reference): readable by all, whatever the umask
STARTER_MODE = 0o644
TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "fleet.yaml"


def starter_text() -> str:
    return TEMPLATE.read_text(encoding="utf-8")


def _target(path: Path | None, s) -> Path:
    if path is not None:
        return path
    if s.config is not None:
        return s.config
    env = os.environ.get("TAOSYNC_CONFIG")
    return Path(env) if env else Path("fleet.yaml")


@click.command("init")
@common_options
@click.option("--force", is_flag=True, help="Replace an existing file.")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
def init(force: bool, path: Path | None) -> int:
    """Write a commented starter fleet.yaml (PATH, else -c, $TAOSYNC_CONFIG, ./fleet.yaml)."""
    from taosync import ui
    from taosync.privilege import act_for_home, rights_for

    s = current()
    target = _target(path, s).expanduser()
    try:
        act_for_home(s.home_dir)  # a PATH in a home root acts for is written as its owner
    except BadInput:
        pass  # no home: nobody to act for
    text = starter_text()  # the package's file: read before any switch of rights
    with rights_for(target):  # the invoker's file, unless it lies in the home root acts for
        existed = _write_starter(target, text, force)

    if s.json:
        ui.emit_json({"ok": True, "path": str(target), "replaced": existed})
        return 0
    ui.out(f"{'replaced' if existed else 'wrote'} {target}")
    ui.out("next: edit gateway.base_url and models, export TAOTOKEN_API_KEY=<your key>, "
           f"then `{again('validate')}` and `{again('plan')}`")
    ui.out(f"editor completion: `{again('schema --write')}` puts fleet.schema.json beside it "
           "(the file's first line points there)")
    return 0


def _write_starter(target: Path, text: str, force: bool) -> bool:
    """Write ``text`` at ``target``; whether a file was there (--force)."""
    from taosync.engine.system import current as current_system

    system = current_system()
    real = system.realpath(target)
    if system.is_dir(real):
        raise BadInput(f"{target}: is a directory; pass a file path such as "
                       f"{target / 'fleet.yaml'}")
    existed = system.exists(real)
    if existed and not force:
        raise BadInput(f"{target}: already exists; taosync init never replaces a file "
                       f"(use --force to overwrite it, or `{again('validate')}` to check it)")
    mode = (system.stat(real).st_mode & 0o777) if existed else STARTER_MODE

    def still_absent() -> None:
        if not force and system.exists(real):  # appeared meanwhile
            raise BadInput(f"{target}: already exists; use --force to overwrite it")

    try:
        system.make_dirs(real.parent, 0o755)
        system.write_atomic(real, text.encode("utf-8"), mode, before_replace=still_absent)
    except OSError as exc:
        raise WriteFailed(f"{target}: cannot be written ({exc.strerror}); nothing was "
                          f"changed") from None
    return existed
