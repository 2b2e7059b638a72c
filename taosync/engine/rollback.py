"""Rollback: step the files back through the applies, and forward again (redo).

The model is a cursor over the recorded history (engine/state.py ``applies``), replayed
from the records themselves, so nothing else needs keeping in step:

* every ``apply`` is *in effect* until a rollback steps back over it;
* ``rollback`` steps back over the newest apply in effect (``--to N``: over N and every
  later one still in effect), putting each file back as it was before the earliest
  record it touched since — the backups of that record;
* ``rollback --redo`` takes back the newest rollback (its own backups hold the files as
  they were just before it, hand edits included), so its applies are in effect again;
* a new ``apply`` drops the redo chain (the rollbacks before it can no longer be redone);
* a ``destroy`` is a step like an apply (rolling it back puts everything back);
* watch's ``reassert`` records move nothing: rolling back over an apply also undoes the
  re-asserts after it.

Every rollback and redo is itself a transaction with its own record and backups.

A client set ``managed: false`` (``taosync forget``) is hands off here too: its files are
not put back (nor forward), whatever the history holds for them — the step names them
in ``skipped`` and the state forgets any owned keys it still had there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from taosync.engine.plan import FilePlan, Plan, read_target, released_file
from taosync.engine.state import ApplyRecord, FileState, State, StateStore
from taosync.errors import BadInput


#: the record kinds rollback steps back over
STEPS = ("apply", "destroy")


@dataclass
class Cursor:
    """Where the files stand in the history."""

    in_effect: list[int] = field(default_factory=list)  # apply ids, oldest first
    redoable: list[int] = field(default_factory=list)  # rollback ids, newest last


def cursor(state: State) -> Cursor:
    """Replay the records: which applies are in effect, which rollbacks can be redone."""
    at = Cursor()
    undone_by: dict[int, list[int]] = {}
    for record in state.applies:
        if record.kind in STEPS:
            at.in_effect.append(record.id)
            at.redoable.clear()
        elif record.kind == "rollback":
            undone_by[record.id] = [i for i in record.undoes if i in at.in_effect]
            at.in_effect = [i for i in at.in_effect if i not in record.undoes]
            at.redoable.append(record.id)
        elif record.kind == "redo":
            for rollback_id in record.undoes:
                if rollback_id in at.redoable:
                    at.redoable.remove(rollback_id)
                    at.in_effect = sorted(at.in_effect + undone_by.get(rollback_id, []))
    return at


@dataclass
class Step:
    """A rollback or redo, planned: write ``plan``, record ``kind`` undoing ``undoes``."""

    plan: Plan
    kind: str  # rollback | redo
    undoes: list[int]
    edited: list[Path]  # files edited since taosync last wrote them that it rewrites
    source: dict[str, int]  # path → the record whose backup is put back
    #: unmanaged client → the files of it the step leaves as they are
    skipped: dict[str, list[str]] = field(default_factory=dict)


def plan_step(store: StateStore, state: State, to: int | None = None,
              redo: bool = False, unmanaged: set[str] = frozenset(), bounds=None) -> Step:
    """The next step: back over the newest apply in effect (or apply ``to`` and later
    ones), or forward (``redo``) over the newest rollback. A plain rollback with no apply
    left in effect takes back the last rollback instead (a rollback of a rollback).
    Files of ``unmanaged`` clients are left out (``Step.skipped``), and so are files
    outside the home and locations of ``bounds`` (engine/owner.py; ``Step.plan.held``)."""
    if not state.applies:
        raise BadInput("nothing to roll back: taosync has not applied anything here yet")
    at = cursor(state)
    if redo or (to is None and not at.in_effect and at.redoable):
        if not at.redoable:
            raise BadInput("nothing to redo: no rollback since the last apply "
                           "(a new apply ends the redo chain)")
        rollback_id = at.redoable[-1]
        return _restore(store, state, rollback_id, "redo", [rollback_id], unmanaged, bounds)
    applies = [r.id for r in state.applies if r.kind in STEPS]
    if to is None:
        if not at.in_effect:
            raise BadInput("nothing to roll back: every recorded apply is rolled back "
                           f"already (oldest kept: #{applies[0]})" if applies else
                           "nothing to roll back: no apply is recorded")
        to = at.in_effect[-1]
    if to not in applies:
        raise BadInput(f"no apply number {to}; applies recorded: "
                       f"{', '.join(map(str, applies)) or 'none'} (taosync log lists them)")
    undoes = [i for i in at.in_effect if i >= to]
    if not undoes:
        raise BadInput(f"apply #{to} is rolled back already; taosync rollback --redo "
                       "brings it back")
    return _restore(store, state, to, "rollback", undoes, unmanaged, bounds)


def _restore(store: StateStore, state: State, since: int, kind: str,
             undoes: list[int], unmanaged: set[str] = frozenset(), bounds=None) -> Step:
    """Put every file touched by record ``since`` or a later one back as it was before
    the earliest of them (its backup), but those of an ``unmanaged`` client."""
    earliest: dict[str, tuple[ApplyRecord, dict]] = {}
    for record in state.applies:
        if record.id >= since:
            for entry in record.files:
                earliest.setdefault(entry["path"], (record, entry))

    step = Step(Plan(), kind, undoes, [], {})
    for path_text, (record, entry) in earliest.items():
        path = Path(path_text)
        last = state.files.get(path_text)
        if bounds is not None and not bounds.in_scope(path_text):
            from taosync.engine.owner import OUTSIDE

            step.plan.held[path_text] = (OUTSIDE, sorted(file_clients(entry, last)))
            continue  # another home's file: never touched, its state entry kept
        hands_off = file_clients(entry, last) & set(unmanaged)
        if hands_off:
            skip_file(step.skipped, hands_off, path_text)
            if last is not None:  # still owned: forgotten now, as apply would
                step.plan.files.append(released_file(last))
            continue
        real, current, mode = read_target(path)
        if entry["backup"] is None:
            restored = None
        else:
            backup = store.backup_dir(record.id) / entry["backup"]
            try:
                restored = store.system.read_bytes(backup).decode("utf-8")
            except OSError as exc:
                raise BadInput(f"backup {backup} of {path} cannot be read ({exc.strerror}); "
                               "nothing was restored") from None
        if (current not in (None, restored) and last is not None
                and not last.holds(current)):  # edits this step replaces (it writes)
            step.edited.append(path)
        # The state as it was. Its sha256 stays that of the bytes taosync wrote then, so
        # a backup holding later hand edits (a redo) is not trusted as "byte for byte
        # what taosync left": status, plan and apply parse it again.
        before = FileState.from_json(entry["before"]) if entry.get("before") else None
        clients = (before.clients if before else entry.get("clients")
                   or (last.clients if last else []))
        step.source[path_text] = record.id
        step.plan.files.append(FilePlan(
            path=path, real_path=real, format=before.format if before else "",
            clients=list(clients), old_text=current,
            new_text=restored, changes=[], new_state=before,
            secret=bool(before and before.secret),
            mode=entry.get("mode") if entry.get("mode") is not None else mode,
        ))
    return step



def file_clients(entry: dict, last: FileState | None) -> set[str]:
    """Every client a history entry, its state before, and the state now name for a file."""
    before = entry.get("before") or {}
    return {*entry.get("clients", []), *before.get("clients", []),
            *(last.clients if last is not None else [])}


def skip_file(skipped: dict[str, list[str]], clients: set[str], path_text: str) -> None:
    """Note ``path_text`` as left alone for each of ``clients`` (once each)."""
    for client in sorted(clients):
        paths = skipped.setdefault(client, [])
        if path_text not in paths:
            paths.append(path_text)
