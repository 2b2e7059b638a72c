"""Plan: apply the desired owned keys to each file's actual text, in memory, and diff.

For every target file: parse what is on disk, set the keys the fleet owns there, delete
the keys owned last time and no longer desired (pruning containers taosync itself
created once they are empty), and dump. Nothing touches disk here; a file that does not
parse stops the whole plan with a message naming it, so ``apply`` writes nothing.
"""

from __future__ import annotations

import stat
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any

from taosync.engine.state import (RESTORE_SECRET, FileState, OwnedKey, Priors, State,
                                  sha256_bytes)
from taosync.engine.system import current
from taosync.errors import BadInput
from taosync.fleet.secrets import NO_KEY_SAME, NO_KEY_VALUE, Secret, canonical, value_hash
from taosync.formats.base import (JSON_SCALARS, MISSING, FormatError, KeyPath, Match,
                                  keypath_parse, keypath_str)
from taosync.formats.registry import editor_for


@dataclass
class KeyChange:
    path: str
    kind: str  # set | delete | move (a list's elements reordered: old/new are their names)
    old: Any = MISSING
    new: Any = MISSING
    #: the key path holds a secret: old and new are both hidden wherever they are shown
    secret: bool = False


@dataclass
class FilePlan:
    path: Path  # as the client addresses it
    real_path: Path  # after following symlinks: what gets written
    format: str
    clients: list[str]
    old_text: str | None
    new_text: str | None
    changes: list[KeyChange]
    new_state: FileState | None  # None when taosync owns nothing here any more
    secret: bool
    mode: int | None  # existing permission bits, None for a new file
    #: under --no-key: key path → NO_KEY_SAME / NO_KEY_VALUE, by the keyed hash in the state
    sensitive: dict[str, str] = field(default_factory=dict)
    #: ``managed: false``: taosync forgets this file's owned keys and leaves its bytes
    released: bool = False
    #: owned keys given up but left as they are: changed since taosync wrote them (the
    #: user's or the client's value now), or an earlier value that cannot be read back
    kept: dict[str, str] = field(default_factory=dict)

    @property
    def action(self) -> str:
        """create | update | chmod | unchanged | delete"""
        if self.old_text == self.new_text:
            return "chmod" if self.exposed else "unchanged"
        if self.old_text is None:
            return "create"
        return "delete" if self.new_text is None else "update"

    @property
    def changed(self) -> bool:
        return self.action != "unchanged"

    @property
    def exposed(self) -> bool:
        """The file holds the key and its group or others may read it: drift an apply
        fixes ("chmod": go-rwx, every other bit kept), whatever its text."""
        return bool(self.secret and self.new_text is not None and self.mode is not None
                    and self.mode & 0o077)

    @property
    def mode_change(self) -> str:
        """``0644 → 0600`` for a "chmod" plan (the bits an apply takes away)."""
        if not self.exposed or self.mode is None:
            return ""
        return f"{self.mode:04o} → {self.mode & ~0o077:04o}"

    def teach(self, redactor) -> None:
        """Teach ``redactor`` (when it is a Redactor) the values either text holds under a
        secret-looking name or in a credential store — what :meth:`diff` hides, learnt
        without making the diff."""
        if hasattr(redactor, "add"):
            from taosync.fleet.looks_secret import secrets_in

            texts = (self.old_text,) if self.old_text == self.new_text else \
                (self.old_text, self.new_text)
            for text in texts:
                for value in secrets_in(text, self.path.name):
                    redactor.add(value)

    def diff(self, redactor=None, label: str | None = None) -> str:
        """Unified diff, scrubbed by ``redactor`` (a Redactor, or a bare Secret), its
        header naming the file as ``label`` (``~/…`` under the home header) or by its
        path. The
        diff shows the user's lines around taosync's keys (a rollback, whole files), so
        a Redactor first learns the values either text holds under a secret-looking
        name, or at all in a credential store (the user's own tokens, in keys taosync
        does not own), to hide them wherever else they show."""
        self.teach(redactor)
        text = ""  # an unchanged file: difflib would index every line to find no change
        if self.old_text != self.new_text:
            old = (self.old_text or "").splitlines(keepends=True)
            new = (self.new_text or "").splitlines(keepends=True)
            import difflib

            label = label or str(self.path)
            text = "".join(
                _newline_safe(difflib.unified_diff(
                    old, new, fromfile=label if self.old_text is not None else "/dev/null",
                    tofile=label if self.new_text is not None else "/dev/null"))
            )
        return redactor.scrub(text) if redactor is not None else text

    def texts(self, redactor) -> tuple[str | None, str | None]:
        """The whole text before and after (``None``: no file), each scrubbed by
        ``redactor`` as :meth:`diff` is: ``plan --json``'s ``before``/``after``, for a
        tool that shows its own diff (Ansible's ``--diff``)."""
        self.teach(redactor)
        old, new = self.old_text, self.new_text
        return (None if old is None else redactor.scrub(old),
                None if new is None else redactor.scrub(new))


@dataclass
class Plan:
    files: list[FilePlan] = field(default_factory=list)
    #: state entries no longer desired that this run leaves alone and keeps owning:
    #: path → (why: engine/owner.py OUTSIDE or MOVED, the clients of the file)
    held: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    #: (variable, path then, path now) for each location variable that changed since
    #: the state was written (named with ``held``; engine/owner.py moved_vars)
    moved_vars: list[tuple] = field(default_factory=list)

    @property
    def changed(self) -> list[FilePlan]:
        return [f for f in self.files if f.changed]

    def still_on_disk(self) -> bool:
        """Every file of this plan still holds the text it was made from: a plan shown
        before the lock was taken is still the one to write. A released file is not
        read: taosync promised not to, and its plan does not depend on it."""
        return all(read_target(fp.path)[1] == fp.old_text for fp in self.files
                   if not fp.released)


def materialize(value: Any) -> tuple[Any, bool]:
    """Plain value with Secrets revealed, and whether it held one."""
    if type(value) in JSON_SCALARS:  # most values: as they are
        return value, False
    found: list[bool] = []
    return _revealed(value, found), bool(found)


def _revealed(value: Any, found: list[bool]) -> Any:
    """:func:`materialize`'s value, a True in ``found`` per Secret; a plain leaf is taken
    as it is without a call (an MCP server's entry is mostly plain strings)."""
    if isinstance(value, Secret):
        found.append(True)
        return value.reveal()
    if isinstance(value, dict):
        return {k: v if type(v) in JSON_SCALARS else _revealed(v, found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in JSON_SCALARS else _revealed(v, found) for v in value]
    return value


def read_target(path: Path) -> tuple[Path, str | None, int | None]:
    """Follow symlinks; return (real path, text or None if absent, mode bits or None).
    Reads through the System in effect. Root on another user's home follows none that
    leaves the home or leads to another owner's file (taosync/privilege.py)."""
    from taosync.privilege import refuse_foreign_link

    refuse_foreign_link(path)
    system = current()
    real = system.realpath(path)
    try:
        st = system.stat(real)
    except FileNotFoundError:
        return real, None, None
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror}); taosync changed nothing") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path}: is a directory, not a file; move it aside, taosync changed nothing")
    try:
        data = system.read_bytes(real)
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror}); taosync changed nothing") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: is not UTF-8 (byte {exc.start}); taosync changed nothing") from None
    return real, text, stat.S_IMODE(st.st_mode)


def parse_target(editor, path: Path, text: str | None):
    try:
        return editor.parse(text or "")
    except FormatError as exc:
        raise BadInput(
            f"{exc.located(str(path))} — fix the file (or move it aside) and run again; "
            "taosync changed nothing"
        ) from None


@dataclass
class Desired:
    """All owned keys of one file, merged across the patches that name it."""

    path: Path
    format: str
    clients: list[str] = field(default_factory=list)
    values: dict[KeyPath, Any] = field(default_factory=dict)
    skeleton: dict[KeyPath, Any] = field(default_factory=dict)
    volatile: dict[KeyPath, Any] = field(default_factory=dict)
    secret: bool = False
    lead: list[KeyPath] = field(default_factory=list)


def merge_patches(patches) -> dict[str, Desired]:
    """Group patches by file; two clients asking different values of one key is an error."""
    out: dict[str, Desired] = {}
    for patch in patches:
        key = str(patch.path)
        d = out.setdefault(key, Desired(patch.path, patch.format))
        if d.format != patch.format:
            raise BadInput(f"{patch.path}: rendered as both {d.format} and {patch.format}")
        if patch.client not in d.clients:
            d.clients.append(patch.client)
        for attr in ("values", "skeleton", "volatile"):
            mine = getattr(d, attr)
            for kp, v in getattr(patch, attr).items():
                if kp in mine and canonical(materialize(mine[kp])[0]) != canonical(materialize(v)[0]):
                    raise BadInput(f"{patch.path}: {keypath_str(kp)} is wanted with two "
                                   f"different values ({', '.join(d.clients)})")
                mine[kp] = v
        d.lead += [kp for kp in patch.lead if kp not in d.lead]
        d.secret |= patch.secret
    return out


def plan_file(desired: Desired | None, previous: FileState | None, path: Path,
              key: Secret | None, hmac_key: bytes, no_key: bool = False,
              forget: bool = False, priors: Priors | None = None) -> FilePlan:
    """Plan one file (see :func:`_plan_file`); an edit its format cannot make in place
    (a TOML list split by other tables) is the user's to untangle: exit 2, nothing written."""
    try:
        return _plan_file(desired, previous, path, key, hmac_key, no_key, forget, priors)
    except FormatError as exc:
        raise BadInput(f"{exc.located(str(path))}; taosync changed nothing") from None


def _plan_file(desired: Desired | None, previous: FileState | None, path: Path,
               key: Secret | None, hmac_key: bytes, no_key: bool = False,
               forget: bool = False, priors: Priors | None = None) -> FilePlan:
    """Plan one file: desired keys (or None when nothing is desired any more).

    ``no_key``: the key was not resolved (``key`` renders as NO_KEY_VALUE); a key-bearing
    value is judged by the keyed hash the state holds for its key path instead.
    ``forget``: a client of this file is no longer managed, so keys owned last time and
    not desired now are dropped from the state, not given back (the file keeps them).
    ``priors``: where the user's earlier secret values go when taosync takes a key over,
    and come from when it gives one back (the state's, engine/state.py Priors)."""
    priors = priors if priors is not None else Priors()
    if desired is not None:
        fmt = desired.format
    elif previous is not None:
        fmt = previous.format
    else:
        raise ValueError(f"{path}: neither desired nor owned: nothing to plan")
    real, text, mode = read_target(path)
    if desired is not None and previous is not None and _untouched(desired, previous, text,
                                                                   hmac_key):
        state = FileState(**{**previous.__dict__, "clients": desired.clients})
        return FilePlan(path, real, fmt, desired.clients, text, text, [], state,
                        previous.secret, mode)
    editor = editor_for(fmt, new=text is None)
    doc = parse_target(editor, path, text)
    changes: list[KeyChange] = []
    created: list[str] = list(previous.created) if previous else []
    created_set = set(created)  # ``created`` in order; asked once per container made
    skeleton: list[str] = list(previous.skeleton) if previous else []
    owned: dict[str, OwnedKey] = {}
    sensitive: dict[str, str] = {}
    kept: dict[str, str] = {}
    holds_secret = bool(desired and desired.secret)

    def do_set(kp: KeyPath, value: Any, is_secret: bool, current: Any = None) -> bool:
        if current is not MISSING:  # MISSING: the caller just read it (nothing to alias)
            current = editor.get(doc, kp)
        if current is not MISSING and canonical(current) == canonical(value):
            return False
        try:
            made = editor.set(doc, kp, value)
        except FormatError as exc:
            if exc.line is not None:  # the file's text at that place: plan_file says where
                raise
            raise BadInput(f"{path}: cannot set {keypath_str(kp)}: {exc.message}; "
                           "taosync changed nothing") from None
        for c in made:
            s = keypath_str(c)
            if s not in created_set:
                created.append(s)
                created_set.add(s)
        changes.append(KeyChange(keypath_str(kp), "set", current, value, is_secret))
        return True

    if desired:
        for kp, value in desired.skeleton.items():
            if editor.get(doc, kp) is MISSING:
                do_set(kp, materialize(value)[0], False)
                if keypath_str(kp) not in skeleton:
                    skeleton.append(keypath_str(kp))
        changed = False
        for kp, raw in desired.values.items():
            value, had_secret = materialize(raw)
            is_secret = had_secret or (key is not None and key.found_in(value))
            holds_secret |= is_secret
            kp_text = keypath_str(kp)
            before = previous.owned.get(kp_text) if previous else None
            if no_key and is_secret:
                if before is not None and _same_as_written(editor.get(doc, kp), before,
                                                           hmac_key):
                    sensitive[kp_text] = NO_KEY_SAME
                    owned[kp_text] = before
                    continue
                sensitive[kp_text] = NO_KEY_VALUE
            current = None
            if before is not None:
                release, prior = before.release, before.prior
            else:  # taking the key over: remember how to give it back
                current = editor.get(doc, kp)
                release, prior = _adopt(current, value, is_secret, key, hmac_key, priors)
            changed |= do_set(kp, value, is_secret, current)
            owned[kp_text] = OwnedKey.made(value_hash(hmac_key, value),
                                           None if is_secret else value, is_secret,
                                           release=release, prior=prior)
        for kp, raw in desired.volatile.items():
            value = materialize(raw)[0]
            current = editor.get(doc, kp)
            before = previous.owned.get(keypath_str(kp)) if previous else None
            if before is not None:
                release, prior = before.release, before.prior
            else:  # a client's own stamp (Cline's updatedAt): the user's is given back too
                release, prior = _adopt(current, value, False, key, hmac_key, priors)
            if changed or current is MISSING or text is None:
                do_set(kp, value, False)
                current = value
            owned[keypath_str(kp)] = OwnedKey(value_hash(hmac_key, current), current,
                                              False, volatile=True, release=release,
                                              prior=prior)
        for list_path, order_before, order_after in editor.lead(doc, desired.lead):
            changes.append(KeyChange(keypath_str(list_path), "move", order_before, order_after))

    # keys owned last time and no longer desired
    if previous:
        now_skeleton = {keypath_str(kp) for kp in desired.skeleton} if desired else set()
        for kp_text in previous.owned:
            if kp_text in owned or forget:
                continue
            if kp_text in now_skeleton:  # owned before, only filled-in now: leave it
                if kp_text not in skeleton:
                    skeleton.append(kp_text)
                continue
            _release(editor, doc, keypath_parse(kp_text), previous.owned[kp_text], hmac_key,
                     changes, kept, priors)
    if not owned:  # taosync leaves this file: take back the skeleton it filled in too
        for kp_text in skeleton:
            kp = keypath_parse(kp_text)
            current = editor.get(doc, kp)
            if current is not MISSING and editor.delete(doc, kp):
                changes.append(KeyChange(kp_text, "delete", current, MISSING))
        skeleton = []
    created = _prune(editor, doc, created, keep=owned)

    dumped = editor.dump(doc)
    new_text: str | None = dumped
    new_state: FileState | None
    created_file = (previous.created_file if previous else False) or text is None
    if not owned:
        new_state = None
        if text is None:
            new_text = None  # nothing to write and nothing there
        elif created_file and _is_empty(editor, doc):
            # taosync made this file and owns nothing in it any more: it goes, unless the
            # user wrote in it (a comment), which stays without the blank lines above it
            new_text = dumped.lstrip("\r\n") if _written_in(dumped) else None
    else:
        # the bytes taosync left: a file this plan does not write keeps the digest of
        # what taosync wrote last, so an edit made since (the user's own key) is never
        # taken for taosync's and given away by a byte-for-byte destroy or rollback
        assert desired is not None and new_text is not None  # owned keys are desired ones
        unwritten = previous is not None and text is not None and new_text == text
        new_state = FileState(
            path=str(path), format=fmt, clients=desired.clients,
            sha256=(previous.sha256 if previous is not None and unwritten
                    else sha256_bytes(new_text.encode("utf-8"))),
            owned=owned, created=created, skeleton=skeleton, created_file=created_file,
            secret=holds_secret, lead=[keypath_str(kp) for kp in desired.lead])
    clients = desired.clients if desired is not None else previous.clients if previous else []
    return FilePlan(path, real, fmt, clients, text, new_text, changes, new_state,
                    holds_secret, mode, sensitive, kept=kept)


def _same_as_written(current: Any, owned: OwnedKey | None, hmac_key: bytes) -> bool:
    """Whether the file still holds the value taosync last wrote at an owned key."""
    return (owned is not None and current is not MISSING
            and value_hash(hmac_key, current) == owned.hash)


def _adopt(current: Any, value: Any, is_secret: bool, key: Secret | None, hmac_key: bytes,
           priors: Priors) -> tuple[str, Any]:
    """How to release a key taosync takes over now, given what the file holds: delete
    (nothing there), keep (the very value), or restore the user's value — kept in the
    state when it holds no secret, else in ``priors`` by its keyed hash."""
    if current is MISSING:
        return "delete", None
    if is_secret or (key is not None and key.found_in(current)):
        if canonical(current) == canonical(value):
            return "keep", None
        digest = value_hash(hmac_key, current)
        priors.add(digest, current)
        return RESTORE_SECRET, digest
    return "restore", current


#: FilePlan.kept reasons
EDITED = "changed since taosync wrote it; left as it is"
NO_PRIOR = "its earlier value is gone from taosync's priors.json; left as it is"


def _release(editor, doc, kp: KeyPath, owned: OwnedKey, hmac_key: bytes,
             changes: list[KeyChange], kept: dict[str, str], priors: Priors) -> None:
    """Give back a key taosync owned and no longer wants, judged by this key alone
    (whatever else the client rewrote in the file): while it holds what taosync wrote,
    restore the user's earlier value or delete it when there was none; a key someone
    changed since is theirs and stays (noted in ``kept``). A client's stamp taosync
    added (a volatile key with nothing before) goes with the keys it stamped."""
    kp_text = keypath_str(kp)
    current = editor.get(doc, kp)
    if current is MISSING or owned.release == "keep":
        return
    edited = value_hash(hmac_key, current) != owned.hash
    if edited and not (owned.volatile and owned.release == "delete"):
        if not owned.volatile:  # a client's stamp moving on is no news
            kept[kp_text] = EDITED
        return
    prior = owned.prior
    if owned.release == RESTORE_SECRET:
        prior = priors.get(owned.prior, MISSING)
        if prior is MISSING or value_hash(hmac_key, prior) != owned.prior:
            kept[kp_text] = NO_PRIOR
            return
    if owned.release in ("restore", RESTORE_SECRET):
        if canonical(current) != canonical(prior):
            editor.set(doc, kp, prior)
            changes.append(KeyChange(kp_text, "set", current, prior, owned.secret))
    elif editor.delete(doc, kp):
        changes.append(KeyChange(kp_text, "delete", current, MISSING, owned.secret))


def _untouched(desired: Desired | None, previous: FileState | None, text: str | None,
               hmac_key: bytes) -> bool:
    """The no-op fast path: the file is byte-for-byte what taosync left and the same keys
    are desired with the same values — no need to parse it (or import its format)."""
    if desired is None or previous is None or text is None:
        return False
    if not previous.holds(text):
        return False
    if previous.lead != [keypath_str(kp) for kp in desired.lead]:
        return False
    volatile = {k for k, o in previous.owned.items() if o.volatile}
    if volatile != {keypath_str(kp) for kp in desired.volatile}:
        return False
    fixed = {k: o.hash for k, o in previous.owned.items() if not o.volatile}
    plain = (str, int, float, bool)  # most values: materialize would return them as they are
    wanted = {keypath_str(kp): value_hash(hmac_key, v if type(v) in plain else materialize(v)[0])
              for kp, v in desired.values.items()}
    return fixed == wanted


#: where a key path's text has a container above it (each "." or "[")


def _prune(editor, doc, created: list[str], keep: dict[str, OwnedKey]) -> list[str]:
    """Remove containers taosync created that are now empty; return those still there."""
    kept = sorted(keep)  # a container's keys follow it here: a bisect finds the first

    def holding(container: str) -> bool:
        """Whether a kept key is ``container`` or its text up to a "." or "[": asked of
        the containers made, not spelled for every prefix of every key kept."""
        if container in keep:
            return True
        for below in (container + ".", container + "["):
            at = bisect_left(kept, below)
            if at < len(kept) and kept[at].startswith(below):
                return True
        return False

    still = []
    for kp_text in sorted(created, key=lambda s: -len(keypath_parse(s))):
        kp = keypath_parse(kp_text)
        if holding(kp_text):  # only whether it is there: no copy of what it holds
            if editor.has(doc, kp):
                still.append(kp_text)
            continue
        current = editor.get(doc, kp)
        if current is MISSING:
            continue
        empty = current in ({}, [])
        if isinstance(kp[-1], Match) and isinstance(current, dict):
            empty = set(current) <= {kp[-1].field}
        if empty:
            editor.delete(doc, kp)
        else:
            still.append(kp_text)
    return sorted(still, key=lambda s: len(keypath_parse(s)))


def _is_empty(editor, doc) -> bool:
    return editor.get(doc, ()) in ({}, [], None, MISSING)


def _written_in(text: str) -> bool:
    """Whether a file holding no data still holds words someone wrote (a comment, a
    document marker): taosync writes none, so they are the user's and the file stays."""
    return bool(text.translate(_LAYOUT_ONLY))


#: what an empty document is spelled with: whitespace and empty brackets
_LAYOUT_ONLY = str.maketrans("", "", " \t\r\n{}[]")


def build_plan(patches, state: State, key: Secret | None, hmac_key: bytes,
               only: set[str] | None = None, no_key: bool = False,
               released: AbstractSet[str] = frozenset(), bounds=None) -> Plan:
    """Plan every target file: the ones desired now and the ones owned last time.
    A file of a ``released`` client (``managed: false``) is never touched: the state
    forgets what taosync owned there. A file owned last time that ``bounds``
    (engine/owner.py) says lies outside this home and its locations, or where its
    clients' files no longer live, is neither planned nor forgotten (``Plan.held``)."""
    desired = merge_patches(patches)
    plan = Plan()
    paths = list(desired)
    for p, fs in state.files.items():
        if p not in desired and (only is None or set(fs.clients) & only):
            why = None if bounds is None else bounds.held(p, fs.clients)
            if why is not None:
                plan.held[p] = (why, list(fs.clients))
                continue
            paths.append(p)
    unusable: list[BadInput] = []
    for p in paths:
        previous = state.files.get(p)
        forget = previous is not None and bool(set(previous.clients) & released)
        if previous is not None and forget and p not in desired:
            plan.files.append(released_file(previous))
            continue
        try:
            plan.files.append(plan_file(desired.get(p), previous, Path(p), key, hmac_key,
                                        no_key, forget, state.priors))
        except BadInput as exc:  # plan the others too: every broken file in one run
            unusable.append(exc)
    # remembered for rollback, redo and destroy (hands off even without a fleet)
    rendered = {patch.client for patch in patches}
    state.forgotten = sorted((set(state.forgotten) | set(released)) - rendered)
    if len(unusable) == 1:
        raise unusable[0]
    if unusable:
        raise BadInput(f"{len(unusable)} target files cannot be used; fix them (or move them "
                       "aside) and run again; taosync changed nothing",
                       details=[_located(exc.message) for exc in unusable])
    return plan


def released_file(previous: FileState) -> FilePlan:
    """A file taosync stops managing: no read, no write, dropped from the state."""
    path = Path(previous.path)
    return FilePlan(path, path, previous.format, previous.clients, None, None, [], None,
                    previous.secret, None, released=True)


def _located(message: str) -> str:
    """One target's problem as a line of a list: without the advice the summary gives."""
    for tail in (" — fix the file (or move it aside) and run again; taosync changed nothing",
                 "; taosync changed nothing"):
        if message.endswith(tail):
            return message[:-len(tail)]
    return message


def _newline_safe(lines):
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
