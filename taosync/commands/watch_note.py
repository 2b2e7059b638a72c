"""What rollback, redo, destroy, forget and adopt tell a running ``taosync watch``, and
what they tell the user about it (engine/coordination.py has the mechanism, README's
"watch and one-shot commands" the rules)."""

from __future__ import annotations

#: what a watch does after each operation, as the note says it
_BASELINE = ("it takes this {op} as the new baseline and keeps these files as they are "
             "until fleet.yaml changes")
WILL = {
    "rollback": _BASELINE.format(op="rollback"),
    "redo": _BASELINE.format(op="redo"),
    "destroy": "it writes none of these files again until fleet.yaml changes (stop it to "
               "keep taosync out of them)",
    "forget": "it leaves {client}'s files alone from now on, and the other files as they "
              "are until fleet.yaml changes",
    "adopt": "it takes the adopted values as the new baseline and applies again when "
             "fleet.yaml changes",
}


def watches(store) -> list[int]:
    """The pids of the watches running on ``store``'s state directory."""
    from taosync.engine.coordination import running_watches

    return running_watches(store.root)


def tell(store, kind: str, pids: list[int], *, record: int | None = None,
         fleet_text: str | None = None, client: str | None = None) -> None:
    """Leave the operation for the watches ``pids`` (none: nothing is written). A
    forget or adopt calls this before it writes fleet.yaml (``fleet_text``), so the
    watch knows that save when it sees it."""
    if not pids:
        return
    from taosync.engine.coordination import record_op
    from taosync.engine.state import sha256_bytes  # as fleet/load.py digests fleet.yaml

    record_op(store.root, kind, record=record, client=client,
              fleet=sha256_bytes(fleet_text.encode("utf-8")) if fleet_text is not None
              else None)


def note(kind: str, pids: list[int], client: str | None = None) -> None:
    """``note: taosync watch (pid N) is running; it …`` on stderr (stdout may be JSON)."""
    if not pids:
        return
    import click

    from taosync import ui
    from taosync.settings import current

    who = ", ".join(f"pid {p}" for p in pids)
    will = WILL[kind].format(client=client)
    if len(pids) > 1:
        will = will.replace("it ", "each ", 1)
    text = f"taosync watch ({who}) {'is' if len(pids) == 1 else 'are'} running; {will}"
    click.echo(ui.style("note: ", "warn") + ui.clean(text), err=True,
               color=current().color)
