"""Rollback: step the files back through the applies, and forward again (redo).

The model is a cursor over the recorded history (engine/state.py ``applies``), replayed
from the records themselves, so nothing else needs keeping in step:

* every ``apply`` is *in effect* until a rollback steps back over it;
* ``rollback`` steps back over the newest apply in effect (``--to N``: over N and every
  later one still in effect), putting each file back as it was before the earliest
  record it touched since — the backups of that record;
* ``rollback --redo`` takes back the newest rollback (its own backups hold the files as
  they were just before it, hand edits included), so its applies are in effect again;
* a ``rollback`` right after a redo takes back the redo the same way (from the redo's
  backups), so hand edits a redo replaced come back too;
* a step that replaces a file edited since taosync last wrote it names it (``edited``):
  each record keeps the digest of what it left in each file (``after``);
* a step never puts back an older secret than the one in use unasked
  (:func:`old_secrets`, :func:`keep_current_secrets`); a backup ``taosync prune``
  dropped (``pruned``) stops a step that needs it (engine/prune.py);
* a new ``apply`` drops the redo chain (the rollbacks before it can no longer be redone);
* a ``destroy`` is a step like an apply (rolling it back puts everything back);
* watch's ``reassert`` records move nothing: rolling back over an apply also undoes the
  re-asserts after it;
* ``route`` records (a re-render only a route's choice moving caused) are no steps
  either: ``rollback`` steps over them back to the user's last apply, and, as for a
  re-assert, each file they wrote goes back to its backup from the earliest record since
  (the route's model as it was then). They never end the redo chain.

Every rollback and redo is itself a transaction with its own record and backups.

A client set ``managed: false`` (``taosync forget``) is hands off here too: its files are
not put back (nor forward), whatever the history holds for them — the step names them
in ``skipped`` and the state forgets any owned keys it still had there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Any, Callable

from taosync.engine.plan import FilePlan, Plan, read_target, released_file
from taosync.engine.state import ApplyRecord, FileState, OwnedKey, State, StateStore
from taosync.errors import BadInput
from taosync.hints import again
from taosync.fleet.secrets import value_hash
from taosync.formats.base import keypath_parse

if TYPE_CHECKING:
    from taosync.engine.apply import Result
    from taosync.engine.recovery import Locations


#: the record kinds rollback steps back over
STEPS = ("apply", "destroy")


@dataclass
class Cursor:
    """Where the files stand in the history."""

    in_effect: list[int] = field(default_factory=list)  # apply ids, oldest first
    redoable: list[int] = field(default_factory=list)  # rollback ids, newest last
    #: (redo id, the applies it brought back) while that redo is the newest user step:
    #: a plain rollback then takes back the redo itself, from its own backups
    last_redo: tuple[int, list[int]] | None = None


def cursor(state: State) -> Cursor:
    """Replay the records: which applies are in effect, which rollbacks can be redone."""
    at = Cursor()
    undone_by: dict[int, list[int]] = {}
    for record in state.applies:
        if record.kind in STEPS:
            at.in_effect.append(record.id)
            at.redoable.clear()
            at.last_redo = None
        elif record.kind == "rollback":
            at.last_redo = None
            undone_by[record.id] = [i for i in record.undoes if i in at.in_effect]
            at.in_effect = [i for i in at.in_effect if i not in record.undoes]
            at.redoable.append(record.id)
        elif record.kind == "redo":
            back: list[int] = []
            for rollback_id in record.undoes:
                if rollback_id in at.redoable:
                    at.redoable.remove(rollback_id)
                    back += undone_by.get(rollback_id, [])
                    at.in_effect = sorted(at.in_effect + undone_by.get(rollback_id, []))
            at.last_redo = (record.id, sorted(back)) if back else None
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
              redo: bool = False, unmanaged: AbstractSet[str] = frozenset(), bounds=None) -> Step:
    """The next step: back over the newest apply in effect (or apply ``to`` and later
    ones), or forward (``redo``) over the newest rollback. A plain rollback with no apply
    left in effect takes back the last rollback instead (a rollback of a rollback).
    Files of ``unmanaged`` clients are left out (``Step.skipped``), and so are files
    outside the home and locations of ``bounds`` (engine/owner.py; ``Step.plan.held``)."""
    if not state.applies:
        raise BadInput("nothing to do: taosync has not applied anything here yet to roll back")
    at = cursor(state)
    if redo or (to is None and not at.in_effect and at.redoable):
        if not at.redoable:
            raise BadInput("nothing to do: no rollback to redo since the last apply "
                           "(a new apply ends the redo chain)")
        rollback_id = at.redoable[-1]
        return _restore(store, state, rollback_id, "redo", [rollback_id], unmanaged, bounds)
    applies = [r.id for r in state.applies if r.kind in STEPS]
    if to is None:
        if not at.in_effect:
            raise BadInput("nothing to do: every recorded apply is rolled back "
                           f"already (oldest kept: #{applies[0]})" if applies else
                           "nothing to do: no apply is recorded to roll back")
        to = at.in_effect[-1]
    if to not in applies and any(r.id == to and r.kind == "route" for r in state.applies):
        raise BadInput(f"#{to} is a route re-render, not one of your applies: rollback steps "
                       "over route records; --to takes an apply: "
                       f"{', '.join(map(str, applies)) or 'none'} ({again('log')} lists them)")
    if to not in applies:
        raise BadInput(f"no apply number {to}; applies recorded: "
                       f"{', '.join(map(str, applies)) or 'none'} ({again('log')} lists them)")
    undoes = [i for i in at.in_effect if i >= to]
    if not undoes:
        raise BadInput(f"apply #{to} is rolled back already; {again('rollback --redo')} "
                       "brings it back")
    if at.last_redo and undoes == at.last_redo[1]:
        # stepping back over exactly what the newest redo brought back: take back the
        # redo itself, so the files return as they were just before it (hand edits too)
        return _restore(store, state, at.last_redo[0], "rollback", undoes, unmanaged, bounds)
    return _restore(store, state, to, "rollback", undoes, unmanaged, bounds)


def commit_step(store: StateStore, to: int | None, redo: bool, unmanaged: AbstractSet[str],
                bounds: Any, locations: "Locations", *, keep: bool = False, key: Any = None,
                on_plan: Callable[[State, "Step"], object] | None = None,
                on_record: Callable[[str, int], object] | None = None,
                planned: tuple[Step, State, str | None] | None = None
                ) -> tuple[Step, State, "Result"]:
    """A rollback or redo as one transaction: under the lock, put back an apply cut
    short, plan the step again against the state as it is there (``on_plan(state,
    step)`` sees it before anything is written: the command's redactor, its file rows), keep the
    secrets in use now when ``keep`` (``key``: the fleet's, to tell them apart), leave the files of ``unmanaged`` clients alone, write the step and record it
    (``on_record(kind, record id)`` still under the lock: a watch reads it with the
    record). ``planned``: (the step shown, the state it was planned from, the state's
    digest then) — written as it is when nothing was put back, the state is the same
    bytes and every file it changes still holds the text it was planned from (a file
    edited while a question waited is planned again). Returns (the step, the state
    after it, what was written)."""
    from taosync.engine.apply import RealWriter, execute
    from taosync.engine.recovery import recover
    from taosync.engine.state import locked

    with locked(store):
        state = store.load()
        recovered = recover(store, state, RealWriter(), locations)
        if (planned is not None and not recovered and planned[2] is not None
                and store.digest == planned[2] and planned[0].plan.still_on_disk()):
            step, state = planned[0], planned[1]  # made from these very bytes
        else:
            step = plan_step(store, state, to, redo, unmanaged, bounds)
        if on_plan is not None:
            on_plan(state, step)
        if keep:
            keep_current_secrets(old_secrets(step, state, store.hmac_key(), key))
        state.forgotten = sorted(unmanaged)
        result = execute(step.plan, state, store, RealWriter(), kind=step.kind,
                         undoes=step.undoes)
        if result.apply_id and on_record is not None:
            on_record(step.kind, result.apply_id)
    return step, state, result


def _restore(store: StateStore, state: State, since: int, kind: str,
             undoes: list[int], unmanaged: AbstractSet[str] = frozenset(), bounds=None) -> Step:
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
        if entry.get("pruned"):
            raise BadInput(f"cannot {'redo' if kind == 'redo' else 'roll back'} past "
                           f"#{record.id}: the backup of {path} it needs was dropped by "
                           "taosync prune (it held a secret no longer in use); nothing "
                           f"was restored ({again('log')} shows which records are restorable)")
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
        if current not in (None, restored) and edited_since_written(state, path_text,
                                                                     current):
            step.edited.append(path)  # edits this step replaces (it writes)
        # The state as it was. Its sha256 stays that of the bytes taosync wrote then, so
        # a backup holding later hand edits (a redo) is not trusted as "byte for byte
        # what taosync left": status, plan and apply parse it again.
        before = FileState.from_json(entry["before"]) if entry.get("before") else None
        clients = (before.clients if before else entry.get("clients")
                   or (last.clients if last else []))
        step.source[path_text] = record.id
        secret = bool(before and before.secret)
        mode = entry.get("mode") if entry.get("mode") is not None else mode
        if secret and mode is not None:
            mode &= ~0o077  # a file holding the key is never given back to group/other
        step.plan.files.append(FilePlan(
            path=path, real_path=real, format=before.format if before else "",
            clients=list(clients), old_text=current,
            new_text=restored, changes=[], new_state=before, secret=secret, mode=mode,
        ))
    return step


def edited_since_written(state: State, path_text: str, text: str) -> bool:
    """``text`` (on disk at ``path_text``) is neither what the state says taosync left
    nor what the newest record that wrote the file left there (its ``after`` digest):
    someone edited it since. A rollback to before taosync owned the file leaves no
    state entry, so the record is what tells a later redo about hand edits made since."""
    from taosync.engine.state import sha256_bytes

    last = state.files.get(path_text)
    if last is not None and last.holds(text):
        return False
    for record in reversed(state.applies):
        entry = next((e for e in record.files if e["path"] == path_text), None)
        if entry is not None:
            if "after" not in entry:  # a record from before "after" was kept
                break
            return entry["after"] != sha256_bytes(text.encode("utf-8"))
    return last is not None


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


@dataclass
class OldSecret:
    """Owned secret keys of one file where a step would put back another secret than
    the one in use now (a key rotated since, a renewed MCP token). Never printed."""

    path: Path
    keys: list[str]  # owned key paths, as text
    now: list[str]  # the secrets in use now that would be replaced (never printed)
    fp: FilePlan
    #: the step's text and state for this file with the secrets in use now kept
    kept_text: str = ""
    kept_owned: dict = field(default_factory=dict)


def old_secrets(step: Step, state: State, hmac_key: bytes, key=None) -> list[OldSecret]:
    """Every file where the step would write an older secret than the one in use now.

    The pairs (secret put back → secret on disk now) are learned where both sides own
    the same secret key (``OPENAI_API_KEY`` in one file, a named ``*_TOKEN`` in an MCP
    server's env), then looked for at every owned secret key the step puts back — the
    rotated key also sits under a route's old model name. ``key``, the fleet's key now,
    is never an older secret."""
    from taosync.formats.base import FormatError
    from taosync.formats.registry import editor_for

    parsed: dict[int, tuple] = {}
    for fp in step.plan.files:
        if fp.released or fp.new_state is None or fp.new_text is None:
            continue
        editor = editor_for(fp.format)
        try:
            restored = editor.parse(fp.new_text)
            on_disk = editor.parse(fp.old_text) if fp.old_text is not None else None
        except FormatError:
            continue  # a file that does not parse is put back whole, as before
        parsed[id(fp)] = (fp, editor, restored, on_disk)

    newer: dict[str, str] = {}  # secret put back → the one in use now
    for fp, editor, restored, on_disk in parsed.values():
        now = state.files.get(str(fp.path))
        if now is None or on_disk is None:
            continue
        for k, o in fp.new_state.owned.items():
            if o.secret and now.owned.get(k) is not None and now.owned[k].secret:
                kp = keypath_parse(k)
                _pair(editor.get(restored, kp), editor.get(on_disk, kp), "", newer)
    if key is not None:
        newer = {old: new for old, new in newer.items() if not key.found_in(old)}
    if not newer:
        return []

    found: list[OldSecret] = []
    for fp, editor, restored, _ in parsed.values():
        hit = OldSecret(fp.path, [], [], fp)
        for k, o in fp.new_state.owned.items():
            if not o.secret:
                continue
            kp = keypath_parse(k)
            value, used = _swap(editor.get(restored, kp), newer)
            if used:
                hit.keys.append(k)
                hit.now += [n for n in used if n not in hit.now]
                editor.set(restored, kp, value)
                hit.kept_owned[k] = OwnedKey(value_hash(hmac_key, value), None, True,
                                             o.volatile, o.release, o.prior)
        if hit.keys:
            hit.kept_text = editor.dump(restored)
            found.append(hit)
    return found


def secrets_put_back(fp: FilePlan, state: State) -> list[tuple[Any, Any]]:
    """(in the file now, put back) at every owned key marked secret of a file a rollback
    rewrites (in the state now or in the entry put back), read from both texts, so a key
    in a backup is known to the redactor too (None: not there, or the text does not parse)."""
    from taosync.formats.base import MISSING
    from taosync.formats.registry import editor_for

    entries = [e for e in (state.files.get(str(fp.path)), fp.new_state) if e is not None]
    paths = {k for e in entries for k, o in e.owned.items() if o.secret}
    fmt = next((e.format for e in entries if e.format), None)
    if not paths or fmt is None:
        return []
    docs = []
    for text in (fp.old_text, fp.new_text):
        try:
            editor = editor_for(fmt)
            docs.append((editor, editor.parse(text)) if text else None)
        except Exception:  # a file that no longer parses: its lines are no key paths
            docs.append(None)
    out = []
    for kp_text in paths:
        sides = [None if d is None else d[0].get(d[1], keypath_parse(kp_text)) for d in docs]
        now, back = (None if v is MISSING else v for v in sides)
        out.append((now, back))
    return out


def keep_current_secrets(found: list[OldSecret]) -> None:
    """Change the step so the secrets in use now stay where it would put back older
    ones; every other byte it puts back is as the backup has it."""
    for hit in found:
        hit.fp.new_text = hit.kept_text
        if hit.fp.new_state is not None:  # a file the step keeps owning
            hit.fp.new_state.owned.update(hit.kept_owned)


def _pair(back, now, name: str, newer: dict[str, str]) -> None:
    """Learn (secret put back → secret in use now) from one owned secret key's two
    values: the value itself when it is a string (the key is secret as a whole), else
    the leaves that differ under a secret-looking name (an MCP server's env)."""
    from taosync.fleet.looks_secret import secret_name

    if isinstance(back, str) and isinstance(now, str):
        leaf = name.rsplit(".", 1)[-1].rstrip("]")
        whole = name == "" or secret_name(leaf)
        if back != now and len(back) >= 8 and whole:
            newer.setdefault(back, now)
    elif isinstance(back, dict) and isinstance(now, dict):
        for k in back.keys() & now.keys():
            _pair(back[k], now[k], str(k), newer)


def _swap(value, newer: dict[str, str]):
    """``value`` with every older secret in it replaced by the one in use now, and the
    ones used."""
    if isinstance(value, str):
        used = []
        for old, new in newer.items():
            if old in value:
                value = value.replace(old, new)
                used.append(new)
        return value, used
    if isinstance(value, dict):
        out, used = {}, []
        for k, v in value.items():
            out[k], u = _swap(v, newer)
            used += u
        return (out if used else value), used
    if isinstance(value, list):
        items = [_swap(v, newer) for v in value]
        used = [u for _, us in items for u in us]
        return ([v for v, _ in items] if used else value), used
    return value, []
