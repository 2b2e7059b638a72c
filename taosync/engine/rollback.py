"""Rollback: put files back as they were before an apply, from that apply's backups.

A rollback is itself written as a transaction (and recorded, with its own backups), so
it can be rolled back in turn.
"""

from __future__ import annotations

from pathlib import Path

from taosync.engine.plan import FilePlan, Plan, read_target
from taosync.engine.state import FileState, State, StateStore
from taosync.errors import BadInput


def plan_rollback(store: StateStore, state: State,
                  to: int | None) -> tuple[Plan, list[int], list[Path]]:
    """The plan that restores every file touched by apply ``to`` and later ones
    (default: the last apply). Returns the plan, the apply ids it undoes, and the files
    edited since taosync last wrote them (their edits are replaced too; the rollback's
    own backups keep them)."""
    if not state.applies:
        raise BadInput("nothing to roll back: taosync has not applied anything here yet")
    ids = [a.id for a in state.applies]
    if to is None:
        to = ids[-1]
    if to not in ids:
        raise BadInput(f"no apply number {to}; applies recorded: {', '.join(map(str, ids))}")
    undone = [a for a in state.applies if a.id >= to]
    earliest: dict[str, tuple[int, dict]] = {}
    for record in undone:
        for entry in record.files:
            earliest.setdefault(entry["path"], (record.id, entry))

    plan = Plan()
    edited: list[Path] = []
    for path_text, (apply_id, entry) in earliest.items():
        path = Path(path_text)
        real, current, mode = read_target(path)
        last = state.files.get(path_text)
        if last is not None and current is not None and not last.holds(current):
            edited.append(path)
        if entry["backup"] is None:
            restored = None
        else:
            backup = store.backup_dir(apply_id) / entry["backup"]
            try:
                restored = store.system.read_bytes(backup).decode("utf-8")
            except OSError as exc:
                raise BadInput(f"backup {backup} of {path} cannot be read ({exc.strerror}); "
                               "nothing was restored") from None
        # The state as it was. Its sha256 stays that of the bytes taosync wrote then, so
        # a backup holding later hand edits (a rollback of a rollback) is not trusted as
        # "byte for byte what taosync left": status, plan and apply parse it again.
        before = FileState.from_json(entry["before"]) if entry.get("before") else None
        plan.files.append(FilePlan(
            path=path, real_path=real, format=before.format if before else "",
            clients=before.clients if before else [], old_text=current,
            new_text=restored, changes=[], new_state=before,
            secret=bool(before and before.secret),
            mode=entry.get("mode") if entry.get("mode") is not None else mode,
        ))
    return plan, [a.id for a in undone], edited
