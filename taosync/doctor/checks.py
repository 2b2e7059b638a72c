"""The checks of ``taosync doctor``, each a list of :class:`Check` lines, and
:func:`run_checks`, which runs them in order (the command only prints them)."""

from __future__ import annotations

import concurrent.futures
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

from taosync.bounded import read_regular
from taosync.clients.base import safe_url
from taosync.doctor.network import (Check, _run, dns_checks, gateway_urls,
                                    is_private_host, proxy_checks, runtime_checks)

if TYPE_CHECKING:
    from taosync.fleet.load import Loaded


def location_vars() -> dict[str, str]:
    """Directory variable → the client it moves, as each client module declares."""
    from taosync.clients.registry import all as all_clients

    return {var: mod.TITLE for mod in all_clients().values() for var in mod.LOCATION_VARS}


#: status → the word printed in the RESULT column, and its colour


# -- password stores -----------------------------------------------------------------------

#: what each password store reference needs, as doctor names it
STORE_TITLES = {"keyring": "the OS keyring", "op": "1Password", "pass": "pass"}


def store_checks(text: str, environ: Mapping[str, str]) -> list[Check]:
    """One line per password store reference in fleet.yaml: the store it needs and
    whether it is there (the library, the ``op`` CLI or SDK, a ``pass`` store), with the
    fix; a store that is there but could not be read when the fleet was loaded (a locked
    keychain, a missing item) fails with why (the fleet's line above locates it)."""
    from taosync.fleet.logic import SECRET_REFERENCE
    from taosync.fleet.secrets import reference_of
    from taosync.fleet.stores import KINDS, available, failure

    out: list[Check] = []
    seen: set[str] = set()
    for match in SECRET_REFERENCE.finditer(text):
        ref = reference_of(match)
        if ref.kind not in KINDS or ref.describe() in seen:
            continue
        seen.add(ref.describe())
        there, said = available(ref.kind, environ)
        failed = failure(ref) if there else None  # the load read it: locked, no such item
        out.append(Check("secrets", ref.describe(), "ok" if there and not failed else "fail",
                         f"needs {STORE_TITLES[ref.kind]}: {said}"
                         + (f"; cannot read it: {failed}" if failed else "")))
    return out


def _text(path: Path) -> str:
    try:
        return read_regular(path).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


# -- environment ----------------------------------------------------------------------------

def env_checks(fleet: Any, key: Any, environ: Mapping[str, str]) -> list[Check]:
    """Each client's own pitfalls (its ``doctor`` hook), then the location variables."""
    from taosync.clients.registry import all as all_clients

    out: list[Check] = []
    for module in all_clients().values():
        out += [Check("env", f.name, f.status, f.detail)
                for f in module.doctor(fleet, key, environ)]
    for var, client in location_vars().items():
        value = (environ.get(var) or "").strip()
        if value:
            out.append(Check("env", var, "info", f"{client} files live under {value}"))
    return out


# -- state ----------------------------------------------------------------------------------

def _lock_held(path: Path) -> bool | None:
    """Whether another process holds taosync's lock on ``path`` (None: cannot tell). Opens
    the lock file only when it exists, so doctor creates nothing."""
    try:
        import fcntl
    except ImportError:  # Windows: cannot tell without taking it
        return None
    from taosync.privilege import owner_rights

    try:
        with owner_rights():  # root on a user's home: its state, as its owner
            fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def state_checks(store: Any, state: Any, home: Path) -> list[Check]:
    """The last apply, drift from it, a journal left by an interrupted apply, the lock."""
    from taosync.engine.drift import find_drift

    out: list[Check] = []
    held = _lock_held(store.lock_path)
    if held:
        out.append(Check("state", "lock", "warn", f"{store.lock_path} is held: a taosync apply "
                         "or watch is running now (its results may change what follows)"))
    if store.system.exists(store.journal_path) and held is not True:
        out.append(Check("state", "journal", "warn",
                         f"{store.journal_path} was left by an interrupted apply; the next "
                         "`taosync apply` puts its files back first, then applies"))
    if state is None:
        return out
    if not state.applies:
        out.append(Check("state", "last apply", "info", "never applied here (`taosync apply`)"))
        return out
    last = state.applies[-1]
    out.append(Check("state", "last apply", "ok", f"#{last.id} ({last.kind}) at {last.time}, "
                     f"{len(state.files)} file(s) owned"))
    by_file: dict[str, list[Any]] = {}
    for d in find_drift(state, store.hmac_key(create=False)):
        by_file.setdefault(d.path, []).append(d)
    for path, drifts in by_file.items():
        kinds = {d.kind for d in drifts}
        if "unreadable" in kinds:
            continue  # the targets section says why, located
        if "file-missing" in kinds:
            detail = "taosync wrote it, it is gone"
        else:
            keys = ", ".join(d.key for d in drifts[:4]) + (", …" if len(drifts) > 4 else "")
            detail = f"{len(drifts)} owned key(s) changed since the last apply: {keys}"
        out.append(Check("state", f"drift {_display(path, home)}", "warn",
                         f"{detail} (`taosync status`; `taosync apply` writes them back)"))
    if not by_file:
        out.append(Check("state", "drift", "ok", "every owned key is as the last apply left it"))
    return out


def _display(path: str | Path, home: Path) -> str:
    from taosync.paths import display_path

    return display_path(Path(path), home)


# -- targets --------------------------------------------------------------------------------

def target_checks(patches: list, state: Any, home: Path) -> list[Check]:
    """Each client file (the fleet's and the ones the state owns) parses; one that holds the
    key is 0600 and not inside a git work tree (followed through a symlink)."""
    import stat as stat_mod

    from taosync.engine import dotfiles
    from taosync.engine.plan import merge_patches, parse_target, read_target
    from taosync.errors import TaosyncError
    from taosync.formats.registry import editor_for

    files: dict[str, tuple[str, bool]] = {}  # path → (format, holds a secret)
    urls: dict[str, dict] = {}  # path → {key path: the URL the fleet renders there}
    try:
        for path_key, desired in merge_patches(patches).items():
            files[path_key] = (desired.format, desired.secret)
            urls[path_key] = {kp: v for kp, v in desired.values.items()
                          if isinstance(v, str) and v.startswith(("http://", "https://"))}
    except TaosyncError:
        pass
    for path_key, fs in (state.files.items() if state is not None else ()):
        secret = any(o.secret for o in fs.owned.values())
        fmt, had = files.get(path_key, (fs.format, False))
        files[path_key] = (fmt, had or secret)
    out: list[Check] = []
    for path_text, (fmt, secret) in files.items():
        path, name = Path(path_text), _display(path_text, home)
        try:
            real, text, mode = read_target(path)
            if text is None:
                continue  # not written yet: apply creates it
            editor = editor_for(fmt)
            doc = parse_target(editor, path, text)
        except TaosyncError as exc:
            out.append(Check("targets", name, "fail", exc.message))
            continue
        doubled = _doubled_v1(editor, doc, urls.get(path_text, {}))
        if doubled:
            out.append(Check("targets", name, "fail", doubled))
            continue
        problems = []
        if secret and mode is not None and mode & 0o077:
            problems.append(f"holds the key but is mode {stat_mod.filemode(mode)[1:]} "
                            f"({mode:04o}): `taosync apply` takes group and other access "
                            f"away (every other bit kept), or `chmod go-rwx {real}`")
        if secret:
            tree = dotfiles.exposed(path, real)
            if tree is not None:
                via = f" (through the symlink to {real})" if real != path else ""
                problems.append(f"holds the key inside the git work tree {tree}{via}: "
                                "git-ignore it there, or use `secrets: reference`")
        if problems:
            out.append(Check("targets", name, "warn", "; ".join(problems)))
        else:
            out.append(Check("targets", name, "ok",
                             "parses" + (", 0600, outside any git work tree" if secret else "")))
    return out


def _doubled_v1(editor: Any, doc: Any, urls: dict) -> str | None:
    """The file's URL at a key where the fleet renders one, when it has one /v1 too many:
    the client would POST to …/v1/v1/… (Claude Code appends /v1/messages to the root)."""
    from taosync.formats.base import keypath_str

    for kp, wanted in urls.items():
        found = editor.get(doc, kp)
        if not isinstance(found, str):
            continue
        have = found.rstrip("/")
        if have != wanted.rstrip("/") and (have.endswith("/v1/v1") or
                                           have == wanted.rstrip("/") + "/v1"):
            return (f"{keypath_str(kp)} is {safe_url(found)}: /v1 is doubled in the requests "
                    f"the client sends; the fleet renders {safe_url(wanted)} there "
                    "(`taosync apply` writes it back)")
    return None


# -- clients --------------------------------------------------------------------------------

_VERSION = re.compile(r"\d+\.\d+\.\d+")


def proven_version(module: Any) -> str | None:
    """The client version README says taosync is proven with: the one its first
    ``OWNED_FILES`` row names (``'Codex CLI (0.171.0)'``)."""
    for row in module.OWNED_FILES:
        found = _VERSION.search(str(row[0]))
        if found:
            return found.group(0)
    return None


def client_checks(fleet: Any, environ: Mapping[str, str]) -> list[Check]:
    """Each enabled client's installed binary (a module's ``BINARY``) against the proven
    version; clients whose module names no binary are skipped."""
    from taosync.clients.registry import all as all_clients

    enabled = set(fleet.enabled_clients()) if fleet is not None else set()
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        for client_id, module in all_clients().items():
            binary = module.BINARY
            if client_id not in enabled or not binary:
                continue
            jobs.append((module, pool.submit(_run, [binary, "--version"], environ.get("PATH"))))
    out: list[Check] = []
    for module, fut in jobs:
        status, detail = fut.result()
        proven = proven_version(module)
        name = f"{module.TITLE} ({module.BINARY})"
        if status != "ok":
            out.append(Check("clients", name, status, detail))
            continue
        found = _VERSION.search(detail)
        if found is None or proven is None:
            out.append(Check("clients", name, "info", f"{detail}; proven with {proven or '?'}"))
        elif found.group(0) == proven:
            out.append(Check("clients", name, "ok", f"{proven}, the version taosync is "
                             "proven with"))
        else:
            out.append(Check("clients", name, "warn",
                             f"{found.group(0)} installed; taosync is proven with {proven} "
                             "(docs/clients.md): if requests fail, `taosync verify` against the "
                             "fleet's gateway tells whether this version reads its files the "
                             "same way"))
    return out


# -- Claude Code overrides --------------------------------------------------------------------

#: a shell variable read by a helper command: ``printenv VAR``, ``$VAR``, ``${VAR}``
_HELPER_VAR = re.compile(r"(?:\bprintenv\s+|\$\{?)([A-Za-z_][A-Za-z0-9_]*)")


def override_checks(patches: list, environ: Mapping[str, str], home: Path) -> list[Check]:
    """Claude Code's settings.json (the file taosync writes ``env.ANTHROPIC_BASE_URL`` to):
    a top-level ``model`` beats the fleet's route wherever ``env.ANTHROPIC_MODEL`` is not
    set, and an ``apiKeyHelper`` reading an unset variable sends no key."""
    import json as json_mod

    from taosync.privilege import owner_rights

    out: list[Check] = []
    seen: set[Path] = set()
    for patch in patches:
        if ("env", "ANTHROPIC_BASE_URL") not in patch.values or patch.path in seen:
            continue
        seen.add(patch.path)
        try:
            with owner_rights():  # root on a user's home: read as its owner
                data = json_mod.loads(read_regular(patch.path).decode("utf-8"))
        except (OSError, ValueError):
            continue  # absent, or the targets section says it does not parse
        if not isinstance(data, dict):
            continue
        name = _display(patch.path, home)
        env = data.get("env")
        if not isinstance(env, dict):
            env = {}
        model = data.get("model")
        if isinstance(model, str) and model:
            wanted = patch.values.get(("env", "ANTHROPIC_MODEL"))
            if env.get("ANTHROPIC_MODEL"):
                out.append(Check("overrides", f"{name} model", "info",
                                 f"top-level model {model!r} is set, but env.ANTHROPIC_MODEL "
                                 f"({env['ANTHROPIC_MODEL']}) beats it; remove it to avoid "
                                 "confusion"))
            else:
                out.append(Check("overrides", f"{name} model", "warn",
                                 f"top-level model {model!r} is what Claude Code uses, not the "
                                 f"fleet's {wanted or 'route'}: `taosync apply` writes "
                                 "env.ANTHROPIC_MODEL, which beats it"))
        helper = data.get("apiKeyHelper")
        if isinstance(helper, str) and helper.strip():
            if env.get("ANTHROPIC_AUTH_TOKEN") or env.get("ANTHROPIC_API_KEY"):
                out.append(Check("overrides", f"{name} apiKeyHelper", "info",
                                 "unused: env.ANTHROPIC_AUTH_TOKEN / ANTHROPIC_API_KEY in the "
                                 "same file beats it"))
                continue
            unset = [v for v in dict.fromkeys(_HELPER_VAR.findall(helper))
                     if not (environ.get(v) or "").strip()]
            if unset:
                out.append(Check("overrides", f"{name} apiKeyHelper", "fail",
                                 f"`{helper}` reads {', '.join(unset)}, which is unset here: "
                                 "Claude Code sends no key. Export it in the shell Claude Code "
                                 "starts from, or set gateway.key / `secrets:` and apply"))
            else:
                out.append(Check("overrides", f"{name} apiKeyHelper", "ok",
                                 f"`{helper}` can read what it needs"))
    return out


def render_patches(fleet: Any, key: Any, env: Any) -> list:
    """What the fleet renders for its enabled clients (with a stand-in key when the real
    one is not resolved): the targets and overrides sections read these files."""
    from taosync.clients.registry import all as all_clients
    from taosync.errors import TaosyncError
    from taosync.fleet.secrets import NO_KEY_VALUE, Secret

    if fleet is None:
        return []
    key = key if key is not None else Secret(NO_KEY_VALUE, "--no-key")
    registry = all_clients()
    patches: list = []
    for name in fleet.enabled_clients():
        try:
            patches += registry[name].render(fleet.for_client(name),
                                             fleet.key_for(name, key), env)
        except TaosyncError:
            continue
    from taosync.pipeline import hide_userinfo

    hide_userinfo(patches, fleet.all_gateway_userinfos())  # as apply renders them
    return patches


# -- the command ----------------------------------------------------------------------------

_MODELINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=(\S+)", re.M)


def modeline_checks(path: Path, text: str) -> list[Check]:
    """The schema fleet.yaml's editor modeline points at (a local file): there, and the one
    this taosync checks with."""
    from taosync.fleet import schema as fleet_schema

    found = _MODELINE.search(text[:2000])
    if found is None or "://" in found.group(1):
        return []
    target = Path(os.path.expanduser(found.group(1)))
    target = target if target.is_absolute() else path.parent / target
    fix = f"`taosync -c {path} schema --write` writes it"
    from taosync.privilege import rights_for

    try:
        with rights_for(target):
            current = read_regular(target).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return [Check("fleet", "editor schema", "warn",
                      f"the modeline points at {target}, which cannot be read: editors give "
                      f"no completion; {fix}")]
    if current != fleet_schema.text():
        return [Check("fleet", "editor schema", "warn",
                      f"{target} is not this taosync's schema (an older copy?); {fix}")]
    return [Check("fleet", "editor schema", "ok", f"{target} is current")]


def _load(s: Any, environ: Mapping[str, str]) -> tuple[Any, list[Check], int, Any]:
    """(loaded or None, checks, exit code floor, the error that made the fleet unusable
    or None: --json reports it as the run's error).

    A secret that cannot be resolved (the key, an MCP ``env``/``headers`` secret) is an
    error line at its own YAML path and fleet.yaml line; the fleet is then loaded
    without it (rendered as ``--no-key`` renders it), so every other check still runs —
    with the key itself when only MCP secrets failed."""
    from taosync.errors import TaosyncError
    from taosync.fleet.load import load_fleet

    path = s.config_path()
    failed: list[Check] = []
    loaded: Loaded | None
    try:
        loaded = load_fleet(path, home=s.home_dir, environ=environ, profile=s.profile_name())
    except TaosyncError as first:
        problems = list(getattr(first, "problems", None) or [])
        failed = [Check("fleet", p.yaml_path or "gateway.key", "fail", _located(p))
                  for p in problems] or [Check("fleet", "gateway.key", "fail", first.message)]
        key_resolves = bool(problems) and all(p.yaml_path != "gateway.key" for p in problems)
        loaded, unusable = None, first
        for resolve_key in ((True, False) if key_resolves else (False,)):
            try:
                loaded = load_fleet(path, home=s.home_dir, environ=environ,
                                    resolve_key=resolve_key, resolve_mcp=False,
                                    profile=s.profile_name())
                break
            except TaosyncError as exc:
                unusable = exc
        if loaded is None:
            details = [p.message for p in getattr(unusable, "problems", [])][:3] \
                or [unusable.message]
            return None, [Check("fleet", str(path), "fail",
                                f"cannot be used: {'; '.join(details)} (`taosync validate`)")], \
                2, unusable
    key, fleet = loaded.key, loaded.fleet
    assert fleet is not None  # load_fleet builds the view unless asked not to (model=False)
    checks = [Check("fleet", str(path), "ok",
                    f"{len(fleet.models)} model(s), "
                    f"{len(fleet.enabled_clients())} client(s)")]
    checks += modeline_checks(Path(path), loaded.text)
    checks += failed
    if key is not None:
        from taosync.verify.diagnose import key_problem

        problem = key_problem(key)
        label = fleet.gateway_path(fleet.default_gateway_name()) + ".key"
        checks.append(Check("fleet", label, "warn" if problem else "ok",
                            f"{key.redacted()} from {loaded.key_ref.describe()}"
                            + (f": the key {problem}" if problem else "")))
        for name, other in fleet.gateway_keys().items():  # each named gateway's own key
            problem = key_problem(other)
            checks.append(Check("fleet", fleet.gateway_path(name) + ".key",
                                "warn" if problem else "ok",
                                f"{other.redacted()} from {other.source}"
                                + (f": the key {problem}" if problem else "")))
    return loaded, checks, 1 if failed else 0, None


def _located(problem: Any) -> str:
    """A fleet problem as a check's detail: ``FILE:LINE:COL: message``."""
    where = f"{problem.file}:{problem.line}:{problem.column}" if problem.line else problem.file
    return f"{where}: {problem.message}"


def gateway_is_private(fleet: Any) -> bool:
    """Whether any gateway URL of the fleet is on this machine or a private network."""
    return any(is_private_host(urlsplit(url).hostname or "") for url in gateway_urls(fleet))


def _store_and_state(s: Any) -> tuple[Any, Any, list[Check]]:
    from taosync.errors import TaosyncError
    from taosync.pipeline import state_store

    store = state_store(s)
    try:
        return store, store.load(), []
    except TaosyncError as exc:
        return store, None, [Check("state", str(store.state_path), "fail", exc.message)]


def run_checks(s: Any, local: bool) -> tuple[list[Check], int, Any]:
    """Every check, in the order doctor prints them, for settings ``s``: (checks, exit
    code, the error that made fleet.yaml unusable or None). Installs the run's redactor
    (every secret the fleet and the rendered files hold) before anything is printed."""
    from taosync import ui
    from taosync.fleet.secrets import Redactor

    env = s.client_env()
    environ = env.environ
    loaded, checks, rc, unusable = _load(s, environ)
    fleet = loaded.fleet if loaded is not None else None
    key = loaded.key if loaded is not None else None
    store, state, state_problems = _store_and_state(s)
    redactor = Redactor(key, hmac_key=store.hmac_key(create=False),
                        known_hashes=state.remembered_secrets() if state is not None else [])
    ui.use_redactor(redactor)
    checks += state_problems + state_checks(store, state, env.home)
    patches = render_patches(fleet, key, env)
    for patch in patches:
        for part in (patch.values, patch.skeleton, patch.volatile):
            redactor.add_secrets_in(part)
    redactor.add(fleet.gateway_credentials() if fleet is not None else [])
    checks += target_checks(patches, state, env.home)
    checks += client_checks(fleet, environ)
    checks += store_checks(loaded.text if loaded is not None else _text(s.config_path()),
                           environ)
    checks += env_checks(fleet, key, environ)
    checks += override_checks(patches, environ, env.home)
    proxy, proxied = proxy_checks(fleet, environ)
    checks += proxy
    if fleet is not None:
        checks += dns_checks(fleet, proxied)
        if local or gateway_is_private(fleet):
            checks += runtime_checks(fleet, environ)
        elif any(m.backend for m in fleet.models.values()):
            checks.append(Check("runtime", "local runtimes", "info",
                                "not checked: the gateway is remote (--local checks them)"))
    if any(c.status == "fail" for c in checks):
        rc = max(rc, 1)
    return checks, rc, unusable
