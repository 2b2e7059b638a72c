"""The key-redirection guard: project files and ``.env`` files that move a client's base
URL or key away from the fleet (``taosync doctor --project``; one warning line from
``status`` and ``verify`` run inside a repository).

A repository's own files are read by most clients after the user's: a project
``.claude/settings.json`` that sets only ``ANTHROPIC_BASE_URL`` makes Claude Code send the
user's key to that URL, and a repository ``.env`` holding ``OPENAI_API_KEY`` replaces the key
Qwen Code sends (clients.md §18, each fact verified by running the client). What each client
reads at project level is data here (:data:`PROJECT_FILES`: the file, where the client looks
for it, and the key paths that change its URL, key or model); :func:`scan` finds them in a
whole tree, :func:`scan_here` only those a client started in the current directory reads.

A value is judged against what the fleet renders for that client (``Patch.values``): a URL
the fleet writes for it (or one under the same gateway root) is not a redirection, and the
key is "replaced" only where the project sets the same key the user's file holds (Claude
Code sends ``x-api-key`` and ``Authorization`` side by side when the two levels use
different ones: §18.0 item 7). Without a fleet every URL counts as away, and the user's key
as sent. Values at key paths are never returned: only that a key is set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from taosync.clients.project_reads import CODEX_IGNORED as _CODEX_IGNORED
from taosync.clients.project_reads import PROJECT_FILES, ProjectFile, Setting

#: ``Finding.key``: the user's key goes to the file's URL · the file replaces the key the
#: client sends · the user's key stays with the fleet
SENT, REPLACED, KEPT = "sent", "replaced", "kept"


#: directories never descended into when a whole tree is scanned
PRUNE = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                   ".mypy_cache", ".pytest_cache", ".ruff_cache"})


@dataclass
class Change:
    """One key path a project file sets (never its value when it is a key)."""

    path: str
    changes: str
    value: str | None = None  # a URL or model as set; None for a key
    note: str = ""


@dataclass
class Finding:
    """One project file of one client, and what it does to that client."""

    client: str
    file: str  # relative to the project root
    changes: list[Change]
    key: str  # SENT | REPLACED | KEPT
    url: str | None  # where the client's requests would go, when away from the fleet
    detail: str  # the sentence printed
    reach: str = ""

    @property
    def redirects(self) -> bool:
        """Moves the client's URL or key away from the fleet."""
        return self.key != KEPT or self.url is not None

    def as_json(self) -> dict:
        return {"client": self.client, "file": self.file, "key": self.key,
                "key_sent": self.key == SENT, "redirects": self.redirects, "url": self.url,
                "changes": [{"path": c.path, "changes": c.changes, "value": c.value,
                             **({"note": c.note} if c.note else {})} for c in self.changes],
                "detail": self.detail}


# -- what the fleet renders for each client -------------------------------------------------

@dataclass
class UserSide:
    """What the user's own (taosync-rendered) files give each client: the URLs, the key
    paths that hold a key, and the variables the key is read from."""

    urls: dict[str, set[str]] = field(default_factory=dict)
    paths: dict[str, set[tuple]] = field(default_factory=dict)
    key_vars: set[str] = field(default_factory=set)
    texts: dict[str, set[str]] = field(default_factory=dict)
    #: per client, the variables its key is read from: a ``.env`` name taosync put the key
    #: under, a ``${{ secrets.NAME }}`` template (Continue)
    client_vars: dict[str, set[str]] = field(default_factory=dict)
    extra_urls: set[str] = field(default_factory=set)  # a project overlay's gateway
    known: bool = False  # a fleet was there to compare with

    @classmethod
    def from_patches(cls, patches: Iterable[Any], key_env: str | None = None) -> "UserSide":
        side = cls(known=True)
        if key_env:
            side.key_vars.add(key_env)
        for patch in patches:
            urls = side.urls.setdefault(patch.client, set())
            paths = side.paths.setdefault(patch.client, set())
            texts = side.texts.setdefault(patch.client, set())
            own = side.client_vars.setdefault(patch.client, set())
            for kp, value in patch.values.items():
                paths.add(tuple(str(p) for p in kp))
                if isinstance(value, str):
                    texts.add(value)
                    own.update(_TEMPLATE.findall(value))
                if patch.format == "dotenv" and len(kp) == 1 and _is_secret(value):
                    own.add(str(kp[0]))
                if isinstance(value, str) and value.startswith(("http://", "https://")) \
                        and not any("mcp" in str(p).lower() for p in kp):  # not a server's
                    urls.add(value)
                if isinstance(value, str) and kp and str(kp[-1]) in ("api_key_env_var",
                                                                      "envKey", "key_env"):
                    side.key_vars.add(value)
        return side

    def reads_var(self, client: str) -> set[str]:
        """The fleet's key variables this client's own files read the key from (an
        ``envKey``, a ``${{ secrets.NAME }}``, an ``apiKeyHelper`` printing it)."""
        texts = self.texts.get(client, set())
        return {v for v in self.key_vars
                if any(re.search(rf"\b{re.escape(v)}\b", t) for t in texts)} \
            | self.client_vars.get(client, set())

    def is_fleet(self, client: str, url: str) -> bool:
        """``url`` is one the fleet renders for ``client`` (or any of its gateway URLs), or
        lies under one of them on the same host."""
        mine = set(self.urls.get(client, ())) | self.extra_urls
        if not mine:  # the client is not in the fleet: any of the fleet's gateway URLs
            mine = {u for urls in self.urls.values() for u in urls} | self.extra_urls
        want = _norm(url)
        for u in mine:
            base = _norm(u)
            if want == base or want.startswith(base + "/"):
                return True
            root = base.rsplit("/v1", 1)[0] if base.endswith("/v1") else base
            if want == root or want.startswith(root + "/"):
                return True
        return False


_TEMPLATE = re.compile(r"\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _is_secret(value: Any) -> bool:
    from taosync.fleet.secrets import Secret

    return isinstance(value, Secret)


def _norm(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    try:
        port = str(parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower()))
    except ValueError:  # not a port: a URL no gateway of the fleet has
        port = parts.netloc
    return f"{parts.scheme.lower()}://{host}:{port}{parts.path.rstrip('/')}"


def overlay_urls(root: Path) -> set[str]:
    """The gateway URLs a project overlay (``taosync.yaml`` at the root) declares:
    ``gateway`` and each of ``gateways`` (``base_url`` and its /v1, the protocol URLs)."""
    from taosync.engine.system import current

    path = root / "taosync.yaml"
    try:
        text = current().read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    try:
        data = _parse(text, "yaml")
    except Exception:  # a broken overlay is the overlay's command's to report
        return set()
    if not isinstance(data, dict):
        return set()
    gateways = [data.get("gateway")]
    if isinstance(data.get("gateways"), dict):
        gateways += list(data["gateways"].values())
    out: set[str] = set()
    for gw in gateways:
        if not isinstance(gw, dict):
            continue
        for name in ("base_url", "anthropic_base_url", "openai_base_url", "gemini_base_url"):
            value = gw.get(name)
            if isinstance(value, str) and value.startswith(("http://", "https://")):
                out.add(value.rstrip("/"))
    return out


# -- reading project files -----------------------------------------------------------------

def _parse(text: str, fmt: str) -> Any:
    from taosync.formats.registry import editor_for

    editor = editor_for(fmt)
    return editor.get(editor.parse(text), ())


def _matches(data: Any, path: tuple[str, ...], prefix: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (concrete key path, value) of ``data`` that ``path`` matches (``*``: any key
    or list element; a last part ``*_X``: any key ending in ``_X``)."""
    if not path:
        return [(prefix, data)]
    head, rest = path[0], path[1:]
    out: list[tuple[tuple, Any]] = []
    if isinstance(data, dict):
        for k, v in data.items():
            k = str(k)
            if head == k or head == "*" or (head.startswith("*") and k.endswith(head[1:])):
                out += _matches(v, rest, (*prefix, k))
    elif isinstance(data, list) and head == "*":
        for i, v in enumerate(data):
            out += _matches(v, rest, (*prefix, str(i)))
    return out


def _read(path: Path) -> str | None:
    from taosync.engine.system import current

    try:
        return current().read_bytes(path).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


_ENV_REF = re.compile(r"^\s*(?:\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|\{env:([A-Za-z_][A-Za-z0-9_]*)\})"
                      r"\s*$")


def _names_var(value: Any) -> str | None:
    """The variable a key value reads (``${VAR}``, ``$VAR``, opencode's ``{env:VAR}``)."""
    if not isinstance(value, str):
        return None
    m = _ENV_REF.match(value)
    return (m.group(1) or m.group(2)) if m else None


def judge(pf: ProjectFile, rel: str, data: Any, side: UserSide,
          redactor: Any = None, siblings: Iterable[tuple[str, Any]] = (),
          owned: dict | None = None) -> Finding | None:
    """What project file ``rel`` (parsed: ``data``) does to client ``pf.client``, or None
    when it sets nothing the guard watches. ``siblings``: (name, data) of the other files
    of ``pf`` in the same directory, which the client merges with it (Claude Code's
    ``settings.local.json``): a key set there goes with this file's URL."""
    client = pf.client
    user_paths = side.paths.get(client, set())
    changes: list[Change] = []
    urls_away: list[tuple[tuple, str]] = []
    keys: list[tuple[tuple, Any]] = []
    key_vars: list[tuple[tuple, str]] = []
    config = False
    settings = list(pf.settings)
    if pf.format == "dotenv":  # the variable this client's own file reads the key from
        watched = {s.path[0] for s in settings}
        settings += [Setting((var,), "key") for var in sorted(side.reads_var(client))
                     if var not in watched]
    for setting in settings:
        for kp, value in _matches(data, setting.path):
            if value is None or value == "" or isinstance(value, (dict, list)):
                continue
            shown = ".".join(kp)
            plain = None if setting.changes == "key" else _safe(_text_of(value))
            if _taosyncs(owned, kp, value):  # its key still replaces the user's
                changes.append(Change(shown, _shown_kind(setting), plain, TAOSYNC_WROTE))
                if setting.changes == "key":
                    keys.append((kp, value))
                continue
            if setting.ignored:
                changes.append(Change(shown, setting.changes, plain, setting.ignored))
                continue
            if setting.loses_to and side.known and setting.loses_to in user_paths:
                changes.append(Change(shown, setting.changes, plain,
                                      f"beaten by {'.'.join(setting.loses_to)} in your own "
                                      "file"))
                continue
            if setting.changes == "url":
                text = _text_of(value)
                fleet = side.is_fleet(client, text)
                changes.append(Change(shown, "url", plain,
                                      "the fleet's gateway" if fleet else ""))
                if not fleet:
                    urls_away.append((kp, text))
            elif setting.changes == "key":
                if redactor is not None and isinstance(value, str):
                    redactor.add(value)
                changes.append(Change(shown, "key"))
                keys.append((kp, value))
            elif setting.changes == "key_var":
                changes.append(Change(shown, "key", plain,
                                      "names the variable the key is read from"))
                key_vars.append((kp, _text_of(value)))
            elif setting.changes == "config":
                changes.append(Change(shown, "url", plain,
                                      "moves the whole configuration (URL and key)"))
                config = True
            else:
                changes.append(Change(shown, "model", plain))
    hidden = bool(pf.hides) and bool(side.urls.get(client)) and not owned
    if not changes and not hidden:
        return None
    if urls_away:  # a key the client merges in from a file beside this one
        for name, other in siblings:
            for setting in pf.settings:
                if setting.changes in ("key", "key_var") and not setting.ignored:
                    for kp, value in _matches(other, setting.path):
                        if value not in (None, "") and not isinstance(value, (dict, list)):
                            if redactor is not None and isinstance(value, str):
                                redactor.add(value)
                            (keys if setting.changes == "key" else key_vars).append(
                                (kp, value if setting.changes == "key" else _text_of(value)))
                            changes.append(Change(".".join(kp), "key", None, f"in {name}"))
    key, url, detail = _verdict(pf, changes, urls_away, keys, key_vars, config, hidden, side)
    return Finding(client, rel, changes, key, url, detail, pf.reach)


def _verdict(pf: ProjectFile, changes: list[Change], urls_away, keys, key_vars,
             config: bool, hidden: bool, side: UserSide) -> tuple[str, str | None, str]:
    """(Finding.key, the URL requests go to when away, the sentence)."""
    user_paths = side.paths.get(pf.client, set())
    if config:
        return (REPLACED, None, "moves the client's whole configuration into the "
                "repository: its URL and key replace yours")
    if hidden:  # Gemini: this .env hides ~/.gemini/.env, the fleet's URL and key with it
        url = _safe(urls_away[0][1]) if urls_away else None if any(
            c.changes == "url" for c in changes) else "Gemini's default endpoint"
        if keys:
            return REPLACED, url, "replaces your key" + (f"; requests go to {url}" if url else "")
        from_env = "GEMINI_API_KEY" in side.key_vars  # else the key was in the hidden file
        if url is None:
            return ((KEPT, None, "points at the fleet's gateway: your key stays there")
                    if from_env else (REPLACED, None, f"hides {pf.hides}: Gemini loses your key"))
        if from_env:
            return (SENT, url, f"hides {pf.hides}: your key (from the environment) would be "
                    f"sent to {url}")
        return (REPLACED, url, f"hides {pf.hides}, where your key is: Gemini has no key "
                "and stops" + (f" (its URL: {url})" if urls_away else ""))
    if all(c.note == TAOSYNC_WROTE for c in changes):
        return KEPT, None, "written by taosync for this project (taosync apply --project)"
    sent_to: list[str] = []
    for kp, url in urls_away:
        if "*" not in _wild(pf, kp):
            if not _replaces(pf, keys, user_paths, side):
                sent_to.append(url)
            continue
        entry = kp[:-1]  # an entry of a map or list (a provider): whose key does it get?
        entry_keys = [v for k, v in keys if k[:-1] == entry]
        names = [v for k, v in key_vars if k[:-1] == entry] + \
            [n for n in map(_names_var, entry_keys) if n]
        if names:
            if not side.known or any(n in side.key_vars for n in names):
                sent_to.append(url)
        elif entry_keys:
            continue
        elif not pf.entries or not side.known or (
                pf.entries == "merged" and any(p[:len(entry)] == entry for p in user_paths)):
            sent_to.append(url)
    if sent_to:
        url = _safe(sent_to[0])
        beside = " (beside the key the file sets)" if any(
            not _names_var(v) for _, v in keys) else ""
        return SENT, url, f"your key would be sent to {url}{beside}"
    if urls_away:
        url = _safe(urls_away[0][1])
        return REPLACED, url, f"sends requests to {url} without your key"
    if keys and _replaces(pf, keys, user_paths, side):
        return REPLACED, None, "replaces your key"
    if keys:
        return REPLACED, None, "sets a key beside yours: the client may send both"
    if any(c.note == _CODEX_IGNORED for c in changes):
        return KEPT, None, "safe: Codex ignores provider and URL keys at project level"
    if any(c.changes == "url" and not c.note.startswith("beaten") for c in changes):
        return KEPT, None, "points at the fleet's gateway: your key stays there"
    if any(c.note.startswith("beaten by") for c in changes):
        return KEPT, None, "beaten by your own file: your key stays with the fleet"
    return KEPT, None, "changes only the model: your key stays with the fleet"


#: the note of a value taosync's project scope wrote (and that is still as it wrote it)
TAOSYNC_WROTE = "written by taosync"


def _shown_kind(setting: Setting) -> str:
    return {"key_var": "key", "config": "url"}.get(setting.changes, setting.changes)


def _taosyncs(owned: dict | None, kp: tuple, value: Any) -> bool:
    """The project scope's state owns ``kp`` in this file with this value (a key's value
    is not kept there: owned is enough)."""
    if not owned:
        return False
    from taosync.formats.base import keypath_str

    mine = owned.get(keypath_str(tuple(kp)))
    return mine is not None and (mine.value is None or mine.value == value)


def project_owned(state_dir: Path | None, root: Path) -> dict[str, dict]:
    """What ``taosync apply --project`` wrote in ``root``, by its own state (the project
    scope's sub-directory of the user's state directory: ``projects/<16 hex of sha256 of
    the root>``): absolute file path → keypath text → owned key. Empty when none."""
    if state_dir is None:
        return {}
    if state_dir.parent.name == "projects":  # a project scope's own: the user's is above
        state_dir = state_dir.parent.parent
    import hashlib

    from taosync.engine.state import StateStore

    out: dict[str, dict] = {}
    for where in dict.fromkeys((str(root), os.path.realpath(root))):
        store = StateStore(state_dir / "projects" / hashlib.sha256(where.encode())
                           .hexdigest()[:16])
        try:
            state = store.load()
        except Exception:  # noqa: BLE001 - a damaged project state is its own command's to say
            continue
        for path, fs in state.files.items():
            out[path] = dict(fs.owned)
            out[os.path.realpath(path)] = dict(fs.owned)
    return out


def _wild(pf: ProjectFile, kp: tuple) -> tuple:
    """The table's path that matched ``kp``."""
    for s in pf.settings:
        if len(s.path) == len(kp) and all(a == "*" or a == b for a, b in zip(s.path, kp)):
            return s.path
    return kp


def _replaces(pf: ProjectFile, keys, user_paths: set, side: UserSide) -> bool:
    """The keys a project file sets replace the user's key: any key, but for a client
    that sends two mechanisms side by side (:attr:`ProjectFile.mixes`) only the key path
    the user's own file holds (with no fleet to compare: any)."""
    if not keys:
        return False
    if not pf.mixes or not side.known or not user_paths:
        return True
    return any(tuple(k) in user_paths for k, _ in keys)


def _safe(url: str) -> str:
    from taosync.clients.base import safe_url

    return safe_url(url)


# -- finding them ----------------------------------------------------------------------------

def project_root(start: Path) -> Path:
    """The git work tree holding ``start``, else ``start`` itself."""
    from taosync.engine.dotfiles import work_tree

    start = Path(os.path.abspath(start))
    return work_tree(start / ".git") or start  # .git: its parents are start and up


def scan(root: Path, side: UserSide, redactor: Any = None,
         owned: dict[str, dict] | None = None) -> list[Finding]:
    """Every project file under ``root`` a client would read when started somewhere in
    the tree (pruned: :data:`PRUNE`), judged."""
    wanted: dict[str, list[ProjectFile]] = {}
    for pf in PROJECT_FILES:
        for name in pf.names:
            wanted.setdefault(name, []).append(pf)
    out: list[Finding] = []
    inside = {name.split("/")[0] for name in wanted if "/" in name}  # looked at from above
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in PRUNE and d not in inside)
        here = Path(dirpath)
        present = {name for name in wanted if (here / name).is_file()}
        for pf in PROJECT_FILES:
            names = [n for n in pf.names if n in present]
            out += _judge_dir(pf, here, names[:1] if pf.reach == "up" else names, root,
                              side, redactor, owned)  # "up": the nearest one wins
    return sorted(out, key=lambda f: (f.file, f.client))


def _judge_dir(pf: ProjectFile, here: Path, names: list[str], root: Path,
               side: "UserSide | Callable[[], UserSide]", redactor,
               owned: dict[str, dict] | None = None) -> list[Finding]:
    """The findings of ``pf``'s files ``names`` in one directory, each judged with the
    others beside it (the client merges them). ``side`` may be a function making it,
    called only when a file is there."""
    if not names:
        return []
    if callable(side):
        side = side()
    parsed = [(name, _load(here / name, pf.format)) for name in names]
    out = []
    for name, (text, data, error) in parsed:
        if text is None:
            continue
        rel = _relative(here / name, root)
        if error:
            out.append(Finding(pf.client, rel, [], KEPT, None, error))
            continue
        if pf.format == "dotenv" and redactor is not None and isinstance(data, dict):
            _hide_tokens(data, redactor)
        siblings = [(n, d) for n, (t, d, e) in parsed if n != name and t is not None and not e]
        f = judge(pf, rel, data, side, redactor, siblings,
                  (owned or {}).get(str(here / name)))
        if f is not None:
            out.append(f)
    return out


def scan_here(cwd: Path, root: Path, side: "UserSide | Callable[[], UserSide]",
              redactor: Any = None,
              owned: dict[str, dict] | None = None) -> list[Finding]:
    """The project files a client started in ``cwd`` reads (between ``root`` and ``cwd``),
    read through the System (a certified run records each path looked at)."""
    from taosync.engine.system import current

    system = current()
    wanted: dict[str, list[ProjectFile]] = {}
    for pf in PROJECT_FILES:
        for name in pf.names:
            wanted.setdefault(name, []).append(pf)
    cwd = Path(os.path.abspath(cwd))
    chain = [cwd, *[p for p in cwd.parents if p == root or root in p.parents]]
    if root not in chain:
        chain = [cwd]
    kinds: dict[Path, str | None] = {}

    def is_file(path: Path) -> bool:
        """A file there: its directory looked at first (``.claude/`` is rarely there), and
        each path once (every path looked at is an input of a certified answer)."""
        if path.parent not in chain and not is_dir(path.parent):
            return False
        if path not in kinds:
            kinds[path] = system.kind(path)
        return kinds[path] == "file"

    def is_dir(path: Path) -> bool:
        if path not in kinds:
            kinds[path] = system.kind(path)
        return kinds[path] == "dir"

    out: list[Finding] = []
    for pf in PROJECT_FILES:
        dirs = [cwd] if pf.reach == "cwd" else chain
        for d in dirs:
            hit = [name for name in pf.names if is_file(d / name)]
            out += _judge_dir(pf, d, hit[:1] if pf.reach == "up" else hit, root, side,
                              redactor, owned)
            if hit and pf.reach == "up":
                break  # the nearest wins
    return out


def _load(path: Path, fmt: str) -> tuple[str | None, Any, str]:
    """(text or None when unreadable, parsed data, why it cannot be parsed or "")."""
    text = _read(path)
    if text is None:
        return None, None, ""
    try:
        return text, (_parse(text, fmt) if text.strip() else {}), ""
    except Exception as exc:  # noqa: BLE001 - a file the client itself would refuse
        return text, None, f"cannot be parsed ({type(exc).__name__}): the client may refuse it"


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _hide_tokens(data: dict, redactor: Any) -> None:
    """The repository's own tokens in a ``.env``, whatever their use, are never printed."""
    from taosync.fleet.looks_secret import secret_name

    for name, value in data.items():
        if isinstance(value, str) and secret_name(str(name)):
            redactor.add(value)


def clients_covered() -> list[str]:
    """Every client the guard knows project files of, in table order."""
    return list(dict.fromkeys(pf.client for pf in PROJECT_FILES))


def key_env(key: Any) -> str | None:
    """The variable a resolved key came from (``${env:NAME}``), else None."""
    m = re.fullmatch(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", str(getattr(key, "source", "")))
    return m.group(1) if m else None


def fleet_side(s: Any) -> tuple[UserSide, Any, str | None]:
    """(what the fleet renders per client, the run's redactor, why there is no fleet to
    compare with or None): fleet.yaml loaded with its key when it resolves (the key is
    then hidden from the output), else without it; none at all in a repository's CI."""
    from taosync.doctor.checks import render_patches
    from taosync.errors import TaosyncError
    from taosync.fleet.load import load_fleet
    from taosync.fleet.secrets import Redactor

    env = s.client_env()
    path = s.config_path()
    loaded, why = None, None
    for resolve_key in (True, False):
        try:
            loaded = load_fleet(path, home=s.home_dir, environ=env.environ,
                                resolve_key=resolve_key, resolve_mcp=False)
            break
        except TaosyncError as exc:
            why = exc.message
    if loaded is None or loaded.fleet is None:
        return UserSide(), Redactor(), f"no usable fleet ({why}): every URL counts as away"
    patches = render_patches(loaded.fleet, loaded.key, env)
    redactor = Redactor(loaded.key)
    for patch in patches:
        redactor.add_secrets_in(patch.values)
    redactor.add(loaded.fleet.gateway_credentials())
    side = UserSide.from_patches(patches, key_env(loaded.key) or _ref_env(loaded.fleet))
    return side, redactor, None


def _ref_env(fleet: Any) -> str | None:
    m = re.fullmatch(r"\s*\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}\s*",
                     str(getattr(fleet.gateway, "key", "")))
    return m.group(1) if m else None


def doctor_project(s: Any, start: Path | None) -> tuple[Path, list[Finding], str | None]:
    """``taosync doctor --project [DIR]``: (the project root, every finding in its tree,
    why there is no fleet to compare with); installs the run's redactor first."""
    from taosync import ui
    from taosync.engine.system import current

    root = project_root(start if start is not None else current().cwd())
    side, redactor, why = fleet_side(s)
    side.extra_urls |= overlay_urls(root)
    ui.use_redactor(redactor)
    return root, scan(root, side, redactor, project_owned(user_state_dir(s), root)), why


def user_state_dir(s: Any) -> Path:
    """The user scope's state directory (the project scope's lives under it)."""
    d = s.state_dir()
    return d.parent.parent if d.parent.name == "projects" else d


def here_findings(cwd: Path, patches: Iterable[Any], key: Any,
                  state_dir: Path | None = None) -> list[Finding]:
    """The redirections a client started in ``cwd`` would meet, when ``cwd`` is inside a
    git work tree (else none). Reads through the System, so a certified answer records
    every path it looked at."""
    from taosync.engine.dotfiles import work_tree

    root = work_tree(Path(os.path.abspath(cwd)) / ".git")  # its parents: cwd first
    if root is None:
        return []
    made: list[UserSide] = []

    def side() -> UserSide:
        """The user's side, made once and only when a project file is there to judge: a
        repository without one (the common case) costs no walk of every rendered key."""
        if not made:
            made.append(UserSide.from_patches(patches, key_env(key)))
            made[0].extra_urls |= overlay_urls(root)
        return made[0]

    return [f for f in scan_here(cwd, root, side, owned=project_owned(state_dir, root))
            if f.redirects]


def here_warning(found: list[Finding]) -> str | None:
    """The one line ``status``/``verify`` print for :func:`here_findings`, naming the
    guard; None when there are none."""
    if not found:
        return None
    sent = [f for f in found if f.key == SENT]
    first = sent[0] if sent else found[0]
    what = (f"would send your key to {first.url}" if first.key == SENT
            else first.detail)
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"key-redirection guard: {first.file} {what} when {first.client} runs "
            f"here{more}; `taosync doctor --project` lists them")
