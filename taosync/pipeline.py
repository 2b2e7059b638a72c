"""The shared path of plan, apply, status and watch: load → render → plan.

Knows the client registry and the engine, and glues them; holds no logic of either.
An unchanged fleet is not loaded again: the last apply's render is reused while its
fingerprint holds (engine/cache.py), so a no-op run stays on the standard library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Any

from taosync.errors import BadInput
from taosync.hints import again
from taosync.paths import display_path  # noqa: F401 (commands print paths through the pipeline)

if TYPE_CHECKING:
    from taosync.clients.base import ClientEnv, Patch
    from taosync.engine.state import StateStore
    from taosync.fleet.load import Loaded
    from taosync.fleet.secrets import Secret
    from taosync.settings import Settings
    from taosync.verify.routing import Choice


@dataclass
class Context:
    settings: Settings
    loaded: Loaded | None  # None when the render came from cache
    env: ClientEnv
    store: StateStore
    key: Secret | None = None  # the resolved key
    warnings: list[str] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)  # every enabled client's
    #: to save with the next apply (read only: it may be the state's own, engine/state.py)
    cache_entry: dict[str, Any] = field(default_factory=dict)
    no_key: bool = False  # --no-key: the key was not resolved; such a context never writes
    #: route → its choice, for each route with candidates
    routes: dict[str, Choice] = field(default_factory=dict)
    #: clients set ``managed: false``: their files are left as they are, the state forgets
    #: them (empty on a cached render: the apply that cached it already forgot them)
    unmanaged: set[str] = field(default_factory=set)
    #: every environment variable the render read → its value (a fresh render only): the
    #: cache entry hashes them again with the state's key when it is saved
    consulted: dict[str, str | None] | None = None
    #: ``apply --release-moved``: give back the files owned where a client's files lived
    #: before a location variable moved them (engine/owner.py), instead of keeping them
    release_moved: bool = False
    #: (the patches walked, their secret parts per part, their Joined texts): what every
    #: Redactor of this run learns from the render (:func:`rendered_secrets`)
    walked: tuple | None = field(default=None, repr=False, compare=False)


def state_store(settings):
    """The state directory of this run, refusing another home's state at each load: its
    owner is the home and the location variables in force (engine/owner.py)."""
    from taosync.engine.owner import LOCATION_VARS, Owner
    from taosync.engine.state import StateStore

    env = settings.client_env()
    found = {var: env.location(var) for var in LOCATION_VARS}
    home = str(env.home)
    if settings.system_scope:  # the machine's state: its "home" is the system root, whoever runs
        from taosync.clients.system import root_of

        home = str(root_of(env))
    owner = Owner(home, {var: str(path) for var, path in found.items() if path},
                  sandboxed=settings.sandboxed)
    return StateStore(settings.state_dir(), owner=owner)


def prepare(settings, *, use_cache: bool = True, no_key: bool = False,
            recover: bool = True) -> Context:
    """Put back an interrupted apply (its journal) — or, for a command that never writes
    (``recover=False``: plan, status, a dry run), only say that one is left — then load
    fleet.yaml and render every enabled client (or reuse the cached render). ``no_key``:
    do not resolve the key (CI without secrets); it renders as a placeholder."""
    env = settings.client_env()
    store = state_store(settings)
    # another home's state is refused before anything is read or written; only read
    # here (its render cache and clients), so no copy of it is made (engine/state.py)
    state = store.load(shared=True)
    if recover:
        if recover_first(store, env):
            state = store.load(shared=True)
    else:
        report_interrupted(store, env)
    path = settings.config_path()
    if no_key:
        return _full(settings, env, store, path, no_key=True)
    if use_cache and settings.project is None:  # a project: always afresh
        entry = state.inputs
        from taosync.engine.system import shared

        # the certified forms share one lookup: the same state.json, fleet and home
        hit, routes = shared(("cached render", str(path), str(env.home), env.sandboxed,
                              str(store.root), store.digest),
                             lambda: _cached(entry, path, env, store))
        # a client the state still holds but the render left out (disabled, or managed:
        # false after an --only apply) needs the fleet itself to tell which: no cache
        if hit is not None and {c for fs in state.files.values() for c in fs.clients} <= set(hit[3]):
            patches, key, warnings, _clients = hit
            return Context(settings, None, env, store, key, list(warnings), patches, entry,
                           routes=dict(routes))
    return _full(settings, env, store, path)


def _cached(entry: dict, path: Path, env, store) -> tuple[tuple | None, dict]:
    """(the render cache's hit or None, the route choices it was checked against)."""
    from taosync.engine import cache

    routes: dict = {}

    def choose(spec: dict) -> dict[str, str]:
        from taosync.verify.history import route_choices

        routes.update(route_choices(spec, store))
        return {name: c.model for name, c in routes.items()}

    try:
        hit = cache.lookup(entry, fleet_path=path, home=env.home, sandboxed=env.sandboxed,
                           environ=env.environ, hmac_key=store.hmac_key(create=False),
                           choose=choose)
    except (AttributeError, TypeError, KeyError, ValueError):
        hit = None  # a damaged render cache is only a miss: render afresh
    return hit, routes


def resolve_routes(fleet, store) -> dict:
    """Choose every candidate route of ``fleet`` and make the fleet answer with the
    choices, before any client renders from it (the clients read ``model_for``)."""
    spec = fleet.routing_spec()
    if not spec:  # no route with candidates: nothing to read (or import)
        return {}
    from taosync.verify.history import route_choices

    choices = route_choices(spec, store)
    fleet.choose_routes({name: c.model for name, c in choices.items()})
    return choices


def recorded_routes(choices: dict, before: dict) -> dict:
    """The state's ``routes`` for ``choices``: model, preferred, reason, healthy, and
    since when (kept from ``before`` while the model stays)."""
    import time

    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out = {}
    for name, c in choices.items():
        old = before.get(name) or {}
        since = old.get("since") if old.get("model") == c.model and old.get("since") else now
        out[name] = {"model": c.model, "preferred": c.preferred, "reason": c.reason,
                     "since": since, "healthy": c.healthy}
    return out


def recover_first(store, env) -> list[str]:
    """Before reading or writing client files: put back the files of an apply that was
    cut short (a journal is left), under the lock, and say so; warn about any journal
    entry refused. One ``stat`` when there is nothing to recover."""
    from taosync.privilege import owner_rights

    try:
        with owner_rights():
            journal = store.journal_path.exists()
    except OSError as exc:  # EACCES: a state directory this user (or root acting) cannot read
        from taosync.errors import WriteFailed

        raise WriteFailed(f"{store.journal_path}: cannot be read ({exc.strerror}); "
                          "nothing was written") from None
    if not journal:
        return []
    from taosync import ui
    from taosync.engine.recovery import recover_locked

    restored = recover_locked(store, client_locations(env), on_refuse=ui.warn)
    if restored:
        ui.warn("recovered from an interrupted apply: restored "
                + ", ".join(display_path(p, env.home) for p in restored))
    return restored


def report_interrupted(store, env) -> bool:
    """For a command that never writes: when an apply was cut short (its journal is
    left), say so and what puts it right, and touch nothing — the files it wrote are
    read as they are. One ``stat`` when there is none."""
    if not store.system.exists(store.journal_path):
        return False
    from taosync import ui

    ui.warn(f"an apply was interrupted (its journal {display_path(store.journal_path, env.home)} "
            f"is left); client files may be half written: `{again('apply')}` puts them back "
            f"and applies again, `{again('rollback')}` only puts them back")
    return True


def client_locations(env, client: str | None = None):
    """(directories, single files) the clients (or ``client`` alone; none for a client
    taosync no longer knows) may write under this home: the only places journal recovery
    may put a file back, and a file no longer desired be given back (engine/recovery.py
    and engine/owner.py know no client)."""
    import os

    from taosync.clients.registry import all as all_clients

    registry = all_clients()
    modules = (registry.values() if client is None else
               [registry[client]] if client in registry else [])
    dirs, files = [], set()
    for module in modules:
        more_dirs, more_files = module.locations(env)
        dirs += more_dirs
        files.update(more_files)
    dirs += list(env.extra_dirs)  # a project run: the project's root
    if env.system_scope:  # --system: the managed files' directories too
        from taosync.clients import system

        dirs += system.locations(env, client)
    return [Path(os.path.abspath(d)) for d in dirs], {os.path.abspath(f) for f in files}


def bounds(env, release_moved: bool = False):
    """Where this run may give back a file it no longer wants (engine/owner.py Bounds):
    this home and where each client's files live under the variables in force."""
    from taosync.engine.owner import Bounds

    return Bounds(env.home, lambda client: client_locations(env, client), release_moved)


def _full(settings, env, store, path: Path, no_key: bool = False) -> Context:
    from taosync.clients import variables
    from taosync.clients.base import grouped_warnings
    from taosync.clients.registry import all as all_clients
    from taosync.engine import cache
    from taosync.fleet.load import load_fleet

    project = settings.project
    settings.one_scope()  # the options given in any order
    loaded = load_fleet(path, home=settings.home_dir, environ=env.environ,
                        resolve_key=not no_key, project=project,
                        profile=settings.profile_name())
    registry = all_clients()
    fleet, key = loaded.fleet, loaded.key
    assert fleet is not None  # load_fleet builds the view unless asked not to (model=False)
    routes = resolve_routes(fleet, store)
    if no_key:
        from taosync.engine.plan import NO_KEY_VALUE
        from taosync.fleet.secrets import Secret

        key = Secret(NO_KEY_VALUE, "--no-key")
    patches = []
    profile = settings.profile_name()
    left_out = []
    for name in fleet.enabled_clients():  # each client on its own gateway (docs/gateways.md)
        if profile is not None and not registry[name].ISOLATION:
            left_out.append(name)  # no way to run it isolated: the profile leaves it out
            continue
        patches.extend(registry[name].render(fleet.for_client(name),
                                             fleet.key_for(name, key), env))
    project_notes: list[str] = []
    if project is not None:  # the user-level render, turned into the project's files
        patches, project_notes = project_files(settings, store, loaded, patches)
    if settings.system_scope:  # --system: onto the clients' managed files (docs/system.md)
        from taosync.clients import system

        patches = system.to_system(patches, env, registry)
    for other in fleet.gateway_keys().values():  # in MCP values (${gateway.key} of a
        hide_key_text(patches, other)            # client on it, ${gateways.NAME.key})
    hide_userinfo(patches, fleet.all_gateway_userinfos())
    # whole lines, compiler style: "fleet.yaml:7:13: path: warning: …" / "warning: …"
    warnings = [w.format() for w in loaded.warnings] + [f"warning: {w}" for w in
                                                         grouped_warnings(env.warnings)]
    unmanaged = fleet.unmanaged_clients()
    warnings += no_mcp_note(fleet, registry)
    if left_out:
        warnings.append(f"info: profile {profile!r} leaves out {', '.join(left_out)}: "
                        "no variable or home of its own runs it isolated (docs/profiles.md)")
    warnings += variables.notes(fleet, key, env)
    warnings += project_notes
    if no_key:
        return Context(settings, loaded, env, store, key, warnings, patches, {}, no_key=True,
                       routes=routes, unmanaged=unmanaged)
    consulted = {**env.consulted, **loaded.include_vars}
    entry = cache.store(
        fingerprint=cache.fingerprint(
            fleet_sha=loaded.sha256, key=key, hmac_key=store.hmac_key(create=False),
            home=env.home, sandboxed=env.sandboxed, consulted=consulted,
            probed=env.probed, routes=cache_routes(fleet, routes),
            includes=dict(loaded.sources[1:])),
        key_ref=loaded.key_ref, patches=patches, key=key, warnings=warnings,
        clients=list(fleet.enabled_clients()), others=list(fleet.gateway_keys().values()))
    if entry:  # status names the profiles on a cached render too (fleet.yaml is an input)
        from taosync.fleet.profiles import declared

        entry["profiles"] = declared(loaded.data)
    return Context(settings, loaded, env, store, key, warnings, patches, entry, routes=routes,
                   unmanaged=unmanaged, consulted=consulted)


#: in a project's state directory: the user asked for its trust entries (apply --trust)
TRUST_MARK = "trust"


def project_files(settings, store, loaded, patches) -> tuple[list, list[str]]:
    """A project run's patches (clients/project_scope.py) and its notes. A file that would
    hold a secret inside the project's git work tree must be one git ignores, else the
    run stops (bad input, nothing written)."""
    from taosync.clients.project_scope import ignored, project_render

    root = settings.project
    trust = settings.trust or store.system.exists(store.root / TRUST_MARK)
    done = project_render(patches, root, list(loaded.fleet.enabled_clients()), trust=trust,
                          key_kind=loaded.key_ref.kind)
    settings.trust_entries = done.trust if trust else []
    for client, path in done.secret_files:
        if ignored(root, path) is False:
            rel = os.path.relpath(path, root)
            where = loaded.overlay.where(("gateway", "key")) if loaded.overlay else str(root)
            raise BadInput(
                f"{where}: {client}: {rel} would hold a secret inline inside the git work "
                f"tree {root}, and git does not ignore it. Ignore it (echo '{rel}' >> "
                f"{root}/.git/info/exclude), or set `secrets: reference` in your fleet.yaml "
                f"where {client} can read the key from the environment (docs/project.md); "
                "nothing was written")
    return done.patches, done.notes


def hide_key_text(patches, key) -> None:
    """Make every rendered string that holds ``key`` — a named gateway's key, which the
    planner does not know as the key (``${gateway.key}`` in an MCP value of a client on
    that gateway) — a Joined secret around it (in place): the file is written 0600, the
    state keeps a keyed hash, the render cache the key's reference."""
    from taosync.fleet.logic import Joined
    from taosync.fleet.secrets import Secret

    text = key.reveal()
    if not text:
        return

    def hide(value):
        if isinstance(value, Secret):
            return value
        if isinstance(value, str):
            if text not in value:
                return value
            if value == text:
                return key
            pieces = value.split(text)
            parts: list = [pieces[0]]
            for piece in pieces[1:]:
                parts += [key, piece]
            return Joined([p for p in parts if p != ""])
        if isinstance(value, list):
            return [hide(v) for v in value]
        if isinstance(value, tuple):
            return tuple(hide(v) for v in value)
        if isinstance(value, dict):
            return {k: hide(v) for k, v in value.items()}
        return value

    for patch in patches:
        for attr in ("values", "skeleton", "volatile"):
            setattr(patch, attr, {kp: hide(v) for kp, v in getattr(patch, attr).items()})


def hide_userinfo(patches, userinfos) -> None:
    """Make every rendered value that holds a gateway URL's ``user:password@`` a Secret
    (in place): such a file is written 0600, its key kept in the state as a keyed hash
    only, and the render is not cached (the state never holds the password)."""
    if not userinfos:
        return
    from taosync.fleet.logic import hide_credentials

    for patch in patches:
        for attr in ("values", "skeleton", "volatile"):
            setattr(patch, attr, {kp: hide_credentials(v, userinfos)
                                  for kp, v in getattr(patch, attr).items()})


def cache_routes(fleet, choices: dict) -> dict | None:
    """The route choices as a render input (engine/cache.py): the spec to choose again
    from, and the models chosen."""
    spec = fleet.routing_spec()
    return {"spec": spec, "choice": {n: c.model for n, c in choices.items()}} if spec else None


def no_mcp_note(fleet, registry) -> list[str]:
    """"info:" lines naming the enabled clients that would take the fleet's MCP servers
    but have no MCP at all (a module declaring ``MCP = False``), and the enabled apps that
    take only MCP servers but get none (no ``mcp_servers``, or ``mcp: false``)."""
    enabled = fleet.enabled_clients()
    names = [name for name, cfg in enabled.items()
             if fleet.mcp_servers and cfg.mcp and not registry[name].MCP]
    idle = [name for name, cfg in enabled.items()
            if not registry[name].GATEWAY and not (cfg.mcp and fleet.mcp_servers)]
    out = []
    if names:
        out.append(f"info: {', '.join(names)} {'has' if len(names) == 1 else 'have'} no "
                   f"MCP support; mcp_servers are not written for "
                   f"{'it' if len(names) == 1 else 'them'}")
    if idle:
        one = len(idle) == 1
        out.append(f"info: {', '.join(idle)} take{'s' if one else ''} only MCP servers and "
                   f"get{'s' if one else ''} none (no mcp_servers, or mcp: false); nothing "
                   f"is written for {'it' if one else 'them'}")
    return out


def loaded_fleet(ctx: Context):
    """The checked fleet itself (verify needs it); loads it when the render was cached."""
    if ctx.loaded is None:
        from taosync.fleet.load import load_fleet

        ctx.loaded = load_fleet(ctx.settings.config_path(), home=ctx.settings.home_dir,
                                environ=ctx.env.environ, profile=ctx.settings.profile_name())
    return ctx.loaded


def check_only(only: tuple[str, ...] | list[str] | None, option: str = "--only") -> set[str] | None:
    """Validate client names given to ``--only`` (or ``--from``) against the registry."""
    if not only:
        return None
    from taosync.clients.registry import ids as client_ids

    known = client_ids()
    for name in only:
        if name not in known:
            from taosync.fleet.problems import closest

            hint = closest(name, known)
            raise BadInput(f"{option} {name}: no such client"
                           + (f"; did you mean {hint}?" if hint else "")
                           + f" (clients: {', '.join(known)})")
    return set(only)


def make_plan(ctx: Context, state, only: set[str] | None = None, *, for_write: bool = False):
    """The plan of ``ctx``'s render against ``state`` (as ``ctx.store`` loaded it last).
    The certified forms share one (engine/system.py ``shared``): the same render, the
    same state.json and the same options plan the same files the same way."""
    from taosync.engine.system import shared

    key = ("plan", id(ctx.patches), ctx.store.digest, str(ctx.store.root), str(ctx.env.home),
           None if only is None else frozenset(only), for_write, ctx.no_key,
           frozenset(ctx.unmanaged), ctx.release_moved)
    patches, (the_plan, forgotten) = shared(
        key, lambda: (ctx.patches, _plan(ctx, state, only, for_write)))
    if patches is not ctx.patches:  # pragma: no cover - the memo holds its render alive
        the_plan, forgotten = _plan(ctx, state, only, for_write)
    state.forgotten = list(forgotten)  # as build_plan leaves it
    return the_plan


def _plan(ctx: Context, state, only: set[str] | None, for_write: bool) -> tuple[Any, list]:
    """(the plan, the state's ``forgotten`` as planning leaves it)."""
    from taosync.engine.plan import build_plan

    from taosync.engine.owner import moved_vars

    patches = [p for p in ctx.patches if only is None or p.client in only]
    the_plan = build_plan(patches, state, ctx.key, ctx.store.hmac_key(create=for_write), only,
                          no_key=ctx.no_key, released=ctx.unmanaged,
                          bounds=bounds(ctx.env, ctx.release_moved))
    owner = ctx.store.owner
    if the_plan.held and owner is not None and state.home is not None:
        the_plan.moved_vars = moved_vars(state.locations, owner.locations)
    return the_plan, list(state.forgotten)


def plan_apply(ctx: Context, only: set[str] | None = None):
    """The plan of an apply and the state it was made against, taken without the lock:
    a target that does not parse stops here, before taosync writes anything at all (not
    even its lock or state)."""
    state = ctx.store.load()
    return make_plan(ctx, state, only), state


#: how many times an apply plans again when another program keeps rewriting a target
MOVED_RETRIES = 3


def commit(ctx: Context, the_plan, state, only: set[str] | None = None, *,
           lock_timeout: float | None = None, on_recover=None, force: bool = False,
           kind: str = "apply", skip: AbstractSet[str] = frozenset(), check=None,
           message: str | None = None):
    """Write an apply's plan as one transaction: when anything must change, take the lock,
    put back an earlier apply that was interrupted (``on_recover(path)`` for each file),
    re-plan if another apply ran or a file moved since the plan was made, and execute.
    A target another program rewrites while it is being written is planned again from
    its new text (a few times; then the apply gives up, every file put back). ``force``
    writes targets the user made read-only; ``kind`` is what the record says (watch:
    "reassert"); files in ``skip`` (paths the user chose to keep as they are) are left
    out. ``check(state)`` runs under the lock on the state as it is there, and may raise
    to write nothing (watch: another process rolled back meanwhile). An apply's record
    names the fleet keys changed since the last one (:func:`fleet_note`) and keeps
    ``message`` (``apply -m``). Returns (the plan written, the Result)."""
    from taosync.engine import cache
    from taosync.engine.apply import Result, TargetMoved, execute
    from taosync.engine.state import LOCK_TIMEOUT, locked
    from taosync.engine.recovery import recover
    from taosync.errors import WriteFailed

    store = ctx.store
    result = Result(None, [])
    the_plan = _without(the_plan, skip)
    if (the_plan.changed or store.system.exists(store.journal_path) or _state_moves(the_plan, state)
            or ctx.cache_entry != state.inputs or _unrecorded_home(store, state)):
        # the state and hashing key the plan was made with (a first apply's key, made up
        # until now, is the one written: engine/state.py hmac_key)
        planned_against = store.digest, store.hmac_key(create=False)
        first, planned_state = store.hmac_is_ephemeral, state
        with locked(store, LOCK_TIMEOUT if lock_timeout is None else lock_timeout):
            state = store.load()
            if check is not None:
                check(state)
            recovered = recover(store, state, store.system, client_locations(ctx.env))
            for path in recovered:
                if on_recover is not None:
                    on_recover(path)
            try:
                store.hmac_key()  # the first apply makes it: fail here, before any client file
            except OSError as exc:
                raise WriteFailed(f"cannot write taosync's state in {store.root} "
                                  f"({exc.strerror or exc}); no client file was changed") from None
            if recovered or (store.digest, store.hmac_key()) != planned_against \
                    or not the_plan.still_on_disk():
                # another apply ran (or made the key), or a file moved since: plan again
                the_plan = _without(make_plan(ctx, state, only, for_write=True), skip)
            elif first:  # the same state: what planning noted in it, as planning again would
                state.forgotten = list(planned_state.forgotten)
            inputs = cache.rekey(ctx.cache_entry, ctx.key, store.hmac_key(), ctx.consulted)
            if kind == "apply" and route_rerender(the_plan, state, inputs):
                kind = "route"  # not the user's step: outside their rollback window
            if ctx.routes or state.routes:
                state.routes = recorded_routes(ctx.routes, state.routes)
            noted = fleet_note(ctx, state) if kind == "apply" and the_plan.changed else {}
            if ctx.settings.system_scope and the_plan.changed:
                _managed_dirs(store.system, the_plan)
            for attempt in range(MOVED_RETRIES + 1):
                try:
                    result = execute(the_plan, state, store, inputs=inputs,
                                     force=force, kind=kind, message=message, **noted)
                    break
                except TargetMoved as exc:
                    if attempt == MOVED_RETRIES:
                        raise WriteFailed(f"{exc.path} kept being changed by another program "
                                          f"while taosync wrote it ({attempt + 1} tries); "
                                          f"{exc.outcome}; run {again('apply')} again when it "
                                          "is quiet") from None
                    the_plan = _without(make_plan(ctx, state, only, for_write=True), skip)
    return the_plan, result


def _managed_dirs(writer, the_plan) -> None:
    """--system: a managed file's missing directories are made 0755, not 0700 as in a
    home (engine/system.py): every user's client must read the policy there."""
    from taosync.errors import WriteFailed

    for fp in the_plan.changed:
        folder = Path(fp.real_path).parent
        try:
            writer.make_dirs(folder, 0o755)  # only the missing ones
        except OSError as exc:
            raise WriteFailed(f"{folder}: cannot be created ({exc.strerror or exc}); the "
                              "managed files are the machine's: run --system as root (sudo); "
                              "no client file was changed") from None


def fleet_note(ctx: Context, state) -> dict:
    """``changes`` (the fleet keys changed since the last apply record) and ``fleet`` (the
    snapshot to keep) for an apply's record (engine/fleet_changes.py); {} when the fleet
    cannot be read again (a cached render: it is read without the key, for its keys)."""
    from taosync.engine import fleet_changes
    from taosync.errors import TaosyncError

    if ctx.no_key or ctx.key is None:
        return {}
    loaded = ctx.loaded
    if loaded is None:
        from taosync.fleet.load import load_fleet

        try:
            loaded = load_fleet(ctx.settings.config_path(), home=ctx.settings.home_dir,
                                environ=ctx.env.environ, resolve_key=False, model=False,
                                profile=ctx.settings.profile_name())
        except TaosyncError:
            return {}
    now = fleet_changes.snapshot(loaded.data, key_value=ctx.key.reveal(),
                                 key_literal=loaded.key_ref.kind == "literal",
                                 hmac_key=ctx.store.hmac_key())
    return {"changes": fleet_changes.changes(state.fleet, now), "fleet": now}


def route_rerender(the_plan, state, inputs: dict) -> bool:
    """Is this write only a route's choice moving? Every input of the render is as the
    last write recorded it but the route choice, which moved, and every file it changes
    is byte for byte what taosync left there (so its backups hold nothing of the user's:
    a hand edit it overwrites makes it the user's apply). Such a write is recorded as a
    "route" record, outside the user's rollback window (engine/state.py)."""
    old = (state.inputs or {}).get("fingerprint") if isinstance(state.inputs, dict) else None
    new = (inputs or {}).get("fingerprint")
    if not old or not new or not old.get("routes") or not new.get("routes"):
        return False  # no record of the last render (a literal key): the user's apply

    def without_choice(fp: dict) -> dict:
        return dict(fp, routes=dict(fp["routes"], choice=None))

    if old["routes"].get("choice") == new["routes"].get("choice") or \
            without_choice(old) != without_choice(new):
        return False
    for fp in the_plan.changed:
        was = state.files.get(str(fp.path))
        if fp.action != "update" or was is None or fp.old_text is None \
                or not was.holds(fp.old_text):
            return False
    return bool(the_plan.changed)


def routes_moved(ctx: Context) -> bool:
    """Does the history now choose another candidate for a route than ``ctx`` rendered?"""
    if not ctx.routes:
        return False
    from taosync.verify.history import route_choices

    now = route_choices(loaded_fleet(ctx).fleet.routing_spec(), ctx.store)
    return {n: c.model for n, c in now.items()} != {n: c.model for n, c in ctx.routes.items()}


def reroute(ctx: Context, only: set[str] | None = None, *, force: bool = False):
    """After a verify: when the history it added moves a route (its chosen model failed,
    or the preferred one recovered), render and write once more — bounded to this one
    extra write. Returns (the new context, plan, Result), or None when no route moves."""
    if not routes_moved(ctx):
        return None
    fresh = prepare(ctx.settings, use_cache=False)
    the_plan, state = plan_apply(fresh, only)
    the_plan, result = commit(fresh, the_plan, state, only, force=force)
    return fresh, the_plan, result


def _without(the_plan, skip: AbstractSet[str]):
    """``the_plan`` less the files the user chose to leave as they are (state kept)."""
    if not skip:
        return the_plan
    from taosync.engine.plan import Plan

    return Plan([fp for fp in the_plan.files if str(fp.path) not in skip], the_plan.held,
                the_plan.moved_vars)


def _unrecorded_home(store, state) -> bool:
    """A state written before taosync recorded its home: the next apply records it."""
    return store.owner is not None and state.home is None and bool(state.files)


def _state_moves(the_plan, state) -> bool:
    """True when the state must be rewritten even though no file changes."""
    return any((fp.new_state is None) != (str(fp.path) not in state.files)
               for fp in the_plan.files)




def redactor_for(ctx, state):
    """A Redactor knowing ``ctx``'s key, every Secret it rendered, and the keyed hashes
    of every key ``state`` remembers (not installed: commands install it with
    ``commands/report.py``'s ``protect``; watch keeps its own)."""
    from taosync.fleet.secrets import Redactor

    redactor = Redactor(None if ctx.no_key else ctx.key,
                        hmac_key=ctx.store.hmac_key(create=False),
                        known_hashes=state.remembered_secrets())
    parts, _texts = rendered_secrets(ctx)
    for secrets in parts:
        redactor.add(secrets)  # a Joined as its secrets only
    if ctx.loaded is not None and ctx.loaded.fleet is not None:
        for secret in ctx.loaded.fleet.gateway_credentials():  # userinfo, every header
            redactor.add(secret)
    return redactor


def run_redactor(ctx, state=None, plan=None, drift=(), rollback: bool = False):
    """The run's Redactor, from everything it knows of: the current key, every Secret in
    the rendered patches, both sides of every change at a secret-bearing key, drifted
    values at such keys, the secrets at owned secret keys of files a rollback puts back
    (``rollback``), and the keyed hashes of every key taosync wrote (commands install it:
    ``commands/report.py``'s ``protect``)."""
    from taosync.fleet.secrets import NO_KEY_VALUE

    if state is None:  # only read (a rollback's reads its priors: its own copy)
        state = ctx.store.load(shared=not rollback)
    redactor = redactor_for(ctx, state)
    for fp in plan.files if plan is not None else ():
        for change in fp.changes:
            if change.secret:
                redactor.add_change(change.old, change.new)
        if rollback:
            from taosync.engine.rollback import secrets_put_back

            for now, back in secrets_put_back(fp, state):
                redactor.add_change(now, back)
    for d in drift:
        if d.secret:
            redactor.add_change(d.new, None)
    redactor.forget(NO_KEY_VALUE)
    readable_around_secrets(ctx, redactor)
    return redactor


def readable_around_secrets(ctx, redactor) -> None:
    """Let ``redactor`` show the text around the secrets in each rendered :class:`Joined`
    (a header's name, a URL's host) once a change has taught it the whole text: its
    secret parts are known on their own (:func:`redactor_for`)."""
    for text in rendered_secrets(ctx)[1]:
        redactor.forget(text.strip())


def rendered_secrets(ctx) -> tuple[list[list], list[str]]:
    """The secret parts of each part (values, skeleton, volatile) of each rendered patch,
    and the whole text of each :class:`Joined` among the values — walked once per run,
    though a command builds its Redactor two or three times as it learns more."""
    if ctx.walked is None or ctx.walked[0] is not ctx.patches:
        from taosync.engine.system import shared

        # the certified forms share one render (engine/system.py shared): one walk
        ctx.walked = shared(("rendered secrets", id(ctx.patches)),
                            lambda: _walk_secrets(ctx.patches))
        if ctx.walked[0] is not ctx.patches:  # pragma: no cover - the memo holds it alive
            ctx.walked = _walk_secrets(ctx.patches)
    return ctx.walked[1], ctx.walked[2]


def _walk_secrets(patches) -> tuple:
    """(``patches``, the secret parts of each of their parts, their Joined texts)."""
    from taosync.fleet.logic import secret_parts, secrets_and_texts

    parts: list[list] = []
    texts: list[str] = []
    for patch in patches:  # the values walked once for both
        values_parts, values_texts = secrets_and_texts(patch.values)
        parts += [values_parts, secret_parts(patch.skeleton), secret_parts(patch.volatile)]
        texts += values_texts
    return patches, parts, texts


def stand_in(wanted: bool):
    """The stand-in gateway class when ``--stub`` asked for one (verify starts it; verify
    sits below the stub, so the caller hands it over)."""
    if not wanted:
        return None
    from taosync.stub import Stub

    return Stub


def profile_states(ctx: Context) -> dict[str, bool]:
    """In the user scope: each profile fleet.yaml declares → whether it was ever applied
    (its state exists). A profile is applied on its own (``apply --profile NAME``), never
    by a plain apply (docs/profiles.md); status and apply say which are not. Empty under
    a profile, and for a fleet that declares none."""
    if ctx.settings.profile_name() is not None:
        return {}
    from taosync.engine.system import current
    from taosync.fleet.profiles import declared

    names = (declared(ctx.loaded.data) if ctx.loaded is not None
             else list(ctx.cache_entry.get("profiles") or ()))  # what the cached render saw
    root = ctx.settings.state_dir() / "profiles"
    return {name: current().exists(root / name / "state.json") for name in names}


def profiles_line(states: dict[str, bool]) -> str | None:
    """``profiles: work (applied), home (never applied: taosync apply --profile home)``."""
    if not states:
        return None
    parts = [f"{name} (applied)" if done else
             f"{name} (never applied: {again('apply')} --profile {name})"
             for name, done in states.items()]
    return "profiles: " + ", ".join(parts) + "; each is applied with --profile NAME"
