"""A stateful test of the whole tool (issue 22, build item 8).

A Hypothesis state machine drives real ``python -m taosync`` processes (the no-op fast
path runs only there) in a temp home through random sequences of fleet edits, hand
edits and client-style rewrites of client files, rollback, redo, forget, adopt,
destroy, ``update`` (a teammate's commit pulled from a local bare git remote, or a
refusal over the user's uncommitted fleet edit), ``apply -m``, and verify against a
stand-in gateway whose per-model faults change. After
every step it checks the invariants (:meth:`TaosyncMachine.check_after_every_step`):

(a) the fast answer equals the full one: ``plan --check`` and ``status`` (and ``apply``
    in its rule) run once as a user runs them — the fast path may answer — and once with
    the config option spelt ``--config=PATH``, which click reads alike but the fast path
    refuses; same exit code, stdout and stderr, and neither writes a byte;
(b) ``plan --check`` says "nothing to do", and ``status`` "in sync", exactly when every
    owned key on disk equals a fresh full render made in this process (files read back
    with json/tomllib/ruamel-safe, not taosync's editors) and the state owns no key the
    render dropped;
(c) no secret — the gateway key, every key before a rotation, the MCP secrets, the
    user's own tokens planted in client files — is in any output, in any spelling;
(d) ``destroy --yes`` gives every file back the user's values from before the first
    apply (keys the user did not edit since), and the key is on no client file;
(e) a forgotten client's files are never written (byte for byte, until it is managed
    again);
(f) no traceback, and every exit code is one README documents;
(h) a command nobody confirmed — apply over a hand edit, rollback or redo over one,
    run without a terminal and without ``--yes`` (docs/commands.md: Confirming) — exits 1 naming
    ``--yes`` and writes nothing; the first apply over the user's planted values, with
    ``--yes``, ends with one line naming the files whose values it replaced and the
    exact rollback command;
(g) the fallback chain a client with in-client failover holds (Claude Code's
    ``fallbackModel``) is its slot's route's candidates but the model its file chose,
    in order — read from fleet.yaml and the file, not from a render — and no chain for
    a plain route or with ``failover: false`` (checked where the files are in sync);
(i) each new apply record of ``log --json`` names exactly the fleet keys the model
    changed since the apply record before it (``routes.fast``, ``mcp_servers.extra
    (added)``, ``key rotated``), computed from the model's own data, and its ``-m`` note;
and, where a step makes them: a command documented as writing nothing (``--dry-run``,
``--no-key``, ``doctor``, ``log``, ``managed``) writes nothing; keys the user (or a
client) added to a client file are never lost, but to a rollback or redo, which README
says replace later edits; bad input (a shell-style key, a damaged state.json) is exit 2
with nothing written. :class:`WatchMachine` adds a running ``taosync watch``.

Runs in the normal suite (a fixed, derandomized set of sequences: deterministic, no
flakes), and one fixed sequence that moves the fallback chains every run. ``TAOSYNC_STATEFUL_MINUTES=30`` runs random sequences for that long instead.
To narrow it while hunting one bug: ``TAOSYNC_STATEFUL_RULES=apply,verify,set_fault``
(only those rules), ``TAOSYNC_STATEFUL_SKIP=destroy,forget`` (all but those), and
``TAOSYNC_STATEFUL_CHECKS=a,c,f`` (only those invariants),
``TAOSYNC_STATEFUL_UNCHECKED_SECRETS=user#2`` (a secret (c) does not look for);
``TAOSYNC_STATEFUL_SHRINK=1`` shrinks a failing sequence (off by default: through
subprocesses that takes minutes); ``TAOSYNC_STATEFUL_TRACE=FILE`` logs every step and
command with its exit code. :data:`RULES` lists the names.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import re
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings, strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule, run_state_machine_as_test)

from git_fleet import git
from stateful_world import (CHAINS, CLIENTS, DOCUMENTED_EXIT_CODES, KEY_VAR, KEYRING_REFERENCE,
                            KEYRING_SERVICE, KEYRING_USER, MCP_VAR, MISSING, PROFILE_AREAS,
                            MODELS, TEAM_VAR, Watch, World, dump_yaml, find_secrets, get_path,
                            changed_keys, fleet_keys, leaves, read_doc, safe_yaml, secret)

#: every rule, by name (TAOSYNC_STATEFUL_RULES / _SKIP take these)
RULES = ["apply", "route_pin", "route_candidates", "context_window", "rotate_key",
         "rotate_mcp_secret", "team_server", "switch_team", "toggle_include", "hand_edit_owned",
         "hand_add_user_key", "client_rewrite", "rollback", "redo", "destroy", "forget",
         "manage_again", "adopt", "set_fault", "clear_faults", "verify", "read_only",
         "unset_mcp_secret", "shell_style_key", "damaged_state", "cat", "toggle_failover",
         "fail_choice", "update", "keyring_key"]
#: lane profiles: declare a profile; apply/verify/status/destroy --profile (TaosyncMachine
#: draws them; a machine whose rules_here is built from RULES alone, WatchMachine, not)
PROFILE_RULES = ["profile_declare", "profile_run"]
RULES += ["add_gateway", "move_client", "rotate_work_key", "use_gateway"]  # lane gateways
CHECKS = "abcdefghi"

# -- lane project (issue 26, Build 3: --project) -------------------------------------------
# The project scope's actions (TaosyncMachine's block "lane project" below): an overlay edit
# in a git repository beside the home, ``apply --project``, ``status --project`` and
# ``destroy --project``. Their invariants: a project run never changes the user scope's
# files or state (nor its certificate), status --project writes nothing at all, and no
# secret is ever in a file git would track in the repository.
RULES += ["project_overlay_edit", "project_apply", "project_status", "project_destroy"]
#: the project files that hold secrets here (the key inline, the MCP token): git-ignored
PROJECT_IGNORED = [".claude/settings.local.json", ".mcp.json", ".codex/config.toml",
                   ".qwen/settings.json", ".gemini/settings.json", ".gemini/.env"]
PROJECT_KEY_VAR = "ST_PROJECT_KEY"
# -- end of lane project --------------------------------------------------------------------


def _names(var: str) -> set[str] | None:
    raw = os.environ.get(var, "").strip()
    return {n.strip() for n in raw.split(",") if n.strip()} if raw else None


_ONLY, _SKIP = _names("TAOSYNC_STATEFUL_RULES"), _names("TAOSYNC_STATEFUL_SKIP") or set()
_CHECKS = set(os.environ.get("TAOSYNC_STATEFUL_CHECKS", CHECKS).replace(",", ""))
#: secrets (c) does not look for, e.g. ``user#2`` while hunting past a known leak of it
_UNCHECKED_SECRETS = _names("TAOSYNC_STATEFUL_UNCHECKED_SECRETS") or set()
for _name in (_ONLY or set()) | _SKIP:
    assert _name in RULES + PROFILE_RULES, f"unknown rule {_name!r}; rules: {', '.join(RULES)}"


#: action name → (method name, {argument: strategy}, weight), filled by @action
ACTIONS: dict[str, tuple[str, dict, int]] = {}
#: how much more often than the others an action is drawn
WEIGHTS = {"apply": 3, "verify": 2, "hand_edit_owned": 2}


def action(name: str, **strategies):
    """A step the machine may take (one rule draws among them, so every sequence mixes
    them: Hypothesis would otherwise leave whole rules out of most sequences).
    TAOSYNC_STATEFUL_RULES / _SKIP switch actions off by name."""
    assert name in RULES + PROFILE_RULES, name

    def register(f):
        ACTIONS[name] = (f.__name__, strategies, WEIGHTS.get(name, 1))
        return f

    return register


def trace(line: str) -> None:
    """TAOSYNC_STATEFUL_TRACE=FILE: every command and its answer, to see what a run
    explored."""
    path = os.environ.get("TAOSYNC_STATEFUL_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def checking(letter: str) -> bool:
    return letter in _CHECKS


#: files the user had before taosync came (home-relative path → text)
PLANTED = {
    ".claude/settings.json": json.dumps({
        "env": {"ANTHROPIC_AUTH_TOKEN": "@user1", "ANTHROPIC_MODEL": "claude-opus-user",
                "MY_OWN_VAR": "mine"},
        "permissions": {"allow": ["Bash(ls)"]}}, indent=2) + "\n",
    ".codex/config.toml": 'model = "o3-user"\napproval_policy = "never"\n\n'
                          '[mcp_servers.mine]\ncommand = "mine-server"\n'
                          'env = { MINE_TOKEN = "@user2" }\n',
    ".config/shell_gpt/.sgptrc": "OPENAI_API_KEY=@user3\nDEFAULT_MODEL=gpt-3.5-user\n"
                                 "CHAT_CACHE_LENGTH=100\n",
    ".qwen/settings.json": json.dumps({
        "security": {"auth": {"apiKey": "@user4", "selectedType": "qwen-oauth"}},
        "ui": {"theme": "dark"}}, indent=2) + "\n",
    ".continue/config.yaml": "name: mine\nversion: 1.0.0\nschema: v1\nmodels:\n"
                             "  - name: my-local\n    provider: ollama\n    model: llama3\n",
    ".gemini/.env": "GEMINI_API_KEY=@user5\nOTHER_SETTING=1\n",
}
FORMATS = {".json": "json", ".toml": "toml", ".yaml": "yaml", ".env": "dotenv",
           ".sgptrc": "keyvalue"}


def fmt_of(path: Path) -> str:
    return FORMATS.get(path.suffix or path.name, FORMATS.get(path.name, "json"))


class TaosyncMachine(RuleBasedStateMachine):
    """The model: fleet.yaml and the team files as data, the secrets ever used, what
    the user had and did, which clients are forgotten. The files themselves are the
    world's (real files; taosync changes them)."""

    #: a ``taosync watch`` runs alongside (WatchMachine): files change on their own
    watched = False
    #: the rules this machine draws from
    rules_here = frozenset(RULES + PROFILE_RULES)

    def __init__(self):
        super().__init__()
        self.ready = False
        self.w = World()
        self.n = 0  # a counter for fresh values
        self.secrets: dict[str, str] = {}
        self.touched: set[tuple[str, tuple]] = set()  # (rel path, key path) edited by hand
        self.user_keys: dict[tuple[str, tuple], object] = {}  # added by hand or by a client
        self.frozen: dict[str, dict[str, str | None]] = {}  # forgotten client → rel → bytes
        self.ever_forgotten: set[str] = set()
        self.ran_from = 0  # self.w.ran[ran_from:] not yet checked for (c)/(f)

    def teardown(self):
        trace("-- end of sequence")
        self.w.close()

    # -- set-up ------------------------------------------------------------------------

    @initialize()
    def start(self):
        w = self.w
        self.key = self.new_secret("sk")
        self.mcp = self.new_secret("ghp")
        w.env[KEY_VAR], w.env[MCP_VAR] = self.key, self.mcp
        self.in_keyring = False  # gateway.key is ${keyring:…} (keyring_key), else ${env:…}
        w.env[TEAM_VAR] = str(w.root / "team-a")
        w.stub._key = self.key
        self.team = "team-a"
        self.use_include = False  # the fast path never answers for a fleet with includes
        self.main = {
            "version": 1,
            "gateway": {"base_url": w.stub.root, "key": f"${{env:{KEY_VAR}}}",
                        "gemini_base_url": w.stub.root},
            "models": {m: {} for m in MODELS},
            # balanced chooses (Claude Code's model slot: a fallback chain from the start)
            "routes": {"fast": "gpt-4o-mini",
                       "balanced": {"candidates": ["claude-sonnet-4-20250514", "gpt-4.1"],
                                    "policy": "failover"}},
            "default_route": "balanced",
            "clients": copy.deepcopy(CLIENTS),
            "verify": {"timeout": 5, "retries": 0},
        }
        self.teams = {
            "team-a": {"mcp_servers": {"gh": {
                "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"GITHUB_TOKEN": f"${{env:{MCP_VAR}}}", "LOG_LEVEL": "debug"}}}},
            "team-b": {"mcp_servers": {"remote": {
                "url": "https://mcp.example/mcp",
                "headers": {"Authorization": f"Bearer ${{env:{MCP_VAR}}}",
                            "X-Team": "platform"}}}},
        }
        self.write_fleet()
        self.originals: dict[str, str] = {}
        for rel, text in PLANTED.items():
            for n in range(1, 6):
                text = text.replace(f"@user{n}", self.user_token(n))
            path = w.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            self.originals[rel] = text
        self.ready = True
        # every sequence starts from an applied home: the first apply onto the user's
        # own values, confirmed with --yes as a script does (docs/commands.md: Confirming)
        r = self.sh("apply", "--no-verify", "--yes")
        if checking("h"):
            last = r.err.strip().splitlines()[-1] if r.err.strip() else ""
            from taosync.paths import display_home  # the home as the hint shows it

            undo = (f"to undo it: taosync --home {display_home(w.home, w.root)} "
                    f"-c {w.fleet_path} rollback")
            assert r.rc == 0 and "~/.claude/settings.json" in last and last.endswith(undo), (
                f"(h) the first apply does not end naming what it replaced:\n{r}")
        self.log_base = (self.fleet_keys(), self.key)  # (i): the fleet at the last record
        self.log_seen = max((r["id"] for r in self.w.state().get("applies", [])), default=0)
        self.log_unknown = False  # taosync itself edited fleet.yaml (forget, adopt)
        self.notes: dict[int, str] = {}  # apply -m: record id → the note given

    def new_secret(self, kind: str) -> str:
        self.n += 1
        value = secret(kind, self.n)
        self.secrets[f"{kind}#{self.n}"] = value
        return value

    def user_token(self, n: int) -> str:
        name = f"user#{n}"
        if name not in self.secrets:
            self.secrets[name] = secret("tok", 100 + n)
        return self.secrets[name]

    def fleet_text(self) -> str:
        """fleet.yaml from the model: the team's MCP servers included from
        ``$ST_TEAM/team.yaml``, or written inline."""
        self.main.pop("include", None)
        self.main.pop("mcp_servers", None)
        main = dict(self.main)
        if self.use_include:
            main = {"include": [f"${TEAM_VAR}/team.yaml"], **main}
        else:
            main["mcp_servers"] = copy.deepcopy(self.teams[self.team]["mcp_servers"])
        return dump_yaml(main)

    def fleet_keys(self) -> dict[str, str]:
        """(i): the fleet the model describes, as ``log`` names its keys."""
        data = {k: v for k, v in self.main.items() if k not in ("include", "mcp_servers")}
        inline = not self.use_include and "mcp_servers" in self.main
        data["mcp_servers"] = (self.main if inline else self.teams[self.team])["mcp_servers"]
        return fleet_keys(data)

    def write_fleet(self):
        self.w.fleet_path.write_text(self.fleet_text())
        for name, data in self.teams.items():
            path = self.w.root / name / "team.yaml"
            path.parent.mkdir(exist_ok=True)
            path.write_text(dump_yaml(data))
        self.after_fleet_edit()

    # -- hooks for a watch running alongside (WatchMachine) ------------------------------

    def after_history(self, ran):
        """A one-shot command that writes history (rollback, redo, destroy, …) ran."""

    def after_hand_edit(self):
        """The user edited a client file."""

    def after_fleet_edit(self):
        """fleet.yaml or a team file changed."""

    def settle(self):
        """Before the checks: let whatever runs alongside finish."""

    def reload_fleet(self):
        """fleet.yaml after taosync edited it (forget, adopt)."""
        self.main = safe_yaml().load(self.w.fleet_path.read_text())

    # -- running taosync ---------------------------------------------------------------

    def sh(self, *args: str, full: bool = False):
        ran = self.w.run(*args, full=full)
        trace(f"  {'full ' if full else ''}{' '.join(args)} → {ran.rc}"
              f"{' fast' if ran.fast else ''}")
        self.check_output()
        return ran

    def check_output(self):
        """(c) and (f) for every process since the last look."""
        for ran in self.w.ran[self.ran_from:]:
            if checking("f"):
                assert "Traceback" not in ran.out + ran.err, f"(f) a traceback:\n{ran}"
                assert ran.rc in DOCUMENTED_EXIT_CODES, f"(f) undocumented exit code:\n{ran}"
            if checking("c"):
                leaked = [n for n in find_secrets(ran.out + ran.err, self.secrets)
                          if n not in _UNCHECKED_SECRETS]
                assert not leaked, f"(c) {', '.join(leaked)} printed:\n{ran}"
        self.ran_from = len(self.w.ran)

    def same_answer(self, *args: str) -> tuple:
        """(a): the command as a user runs it, then on the full path; both answers and
        whether the fast path took the first. Neither may write when the first was the
        fast path's (the fast path never writes: the full one must find nothing to do).
        The full run may certify its answer anew: its ``--config=`` spelling is another
        context, so certificate.json is not compared."""
        before = self.w.snapshot(certificate=False)
        first = self.sh(*args)
        if not first.fast:
            return first, None
        full = self.sh(*args, full=True)
        if checking("a"):
            assert first.words == full.words, (
                f"(a) the fast path and the full path disagree:\n{first}\n{full}")
            assert self.w.snapshot(certificate=False) == before, (
                f"(a) a no-op answer, yet files changed:\n{full}")
        return first, full

    # -- rules: taosync commands -------------------------------------------------------

    @action("apply", verify=st.booleans(), yes=st.booleans(),
            note=st.sampled_from([None, "why: a note"]))
    def apply(self, verify, yes=True, note=None):
        before = self.w.snapshot()
        last = self.last_record_id()
        first, _ = self.same_answer("apply", *([] if verify else ["--no-verify"]),
                                    *(["--yes"] if yes else []),
                                    *(["-m", f"{note} #{self.n}"] if note else []))
        if self.unconfirmed(first, before):
            return
        if note and first.rc in (0, 1) and self.last_record_id() > last:
            self.notes[last + 1] = f"{note} #{self.n}"
        self.after_apply()

    def unconfirmed(self, ran, before: dict[str, str]) -> bool:
        """(h): whether ``ran`` stopped for want of a --yes; then it wrote nothing."""
        if "answer on a terminal, or pass --yes" not in ran.err:
            return False
        if checking("h"):
            assert ran.rc == 1 and "--yes" not in ran.args, f"(h) refused with --yes:\n{ran}"
            if not self.watched:  # a watch alongside writes on its own
                assert self.w.snapshot() == before, f"(h) not confirmed, yet it wrote:\n{ran}"
        return True

    def last_record_id(self) -> int:
        return max((r["id"] for r in self.w.state().get("applies", [])), default=0)

    @action("update", commit=st.booleans(), model=st.sampled_from(MODELS), yes=st.booleans())
    def update(self, commit, model, yes=True):
        """``taosync update`` of the dotfiles clone. With the user's fleet edits not
        committed (and ``commit`` false) it refuses, exit 2, nothing pulled or written;
        else the user commits and pushes them, a teammate pins the fast route to
        ``model`` and pushes, and update pulls that commit and applies it."""
        repo = self.w.dotfiles
        dirty = bool(git(repo.mine, "status", "--porcelain", "--untracked-files=no"))
        if dirty and not commit:
            before, head = self.w.snapshot(), repo.head()
            r = self.sh("update", "--no-verify")
            assert r.rc == 2 and "has local changes (fleet.yaml)" in r.err, (
                f"update over an uncommitted fleet edit:\n{r}")
            assert self.w.snapshot() == before and repo.head() == head, (
                f"update refused, yet something changed:\n{r}")
            return
        if dirty:
            git(repo.mine, "commit", "-qam", "my fleet edits")
            git(repo.mine, "push", "-q")
        self.main["routes"]["fast"] = model
        text = self.fleet_text()
        git(repo.upstream, "pull", "-q", "--ff-only")  # the teammate's clone as it is now
        if text != repo.text("fleet.yaml"):
            repo.publish("fleet.yaml", text, f"fast route on {model}")
        r = self.sh("update", "--no-verify", *(["--yes"] if yes else []))
        self.after_fleet_edit()
        if "answer on a terminal, or pass --yes" in r.err:  # (h): pulled, not applied
            if checking("h"):
                assert r.rc == 1 and not yes, f"(h) update refused with --yes:\n{r}"
        else:
            self.after_apply()
        assert repo.head() == git(repo.remote, "rev-parse", "HEAD"), f"not pulled:\n{r}"
        assert self.w.fleet_path.read_text() == text, f"the pull left another fleet:\n{r}"
        if r.rc == 0:
            assert "applied #" in r.out or "nothing to do" in r.out, r

    def after_apply(self):
        """What a one-shot apply wrote is the user's doing (the watch machine's hook)."""

    @action("verify")
    def verify(self):
        """Probe what the files hold; where they hold what a fresh render gives, verify
        must not say they differ from fleet.yaml."""
        in_sync = self.oracle_in_sync()
        r = self.sh("verify")
        if in_sync and checking("b"):
            assert "differs from fleet.yaml" not in r.out + r.err, (
                f"(b) verify says a file differs; every owned key equals the render:\n{r}")

    @action("read_only", args=st.sampled_from([
        ("plan", "--check", "--no-key"), ("status", "--no-key"),
        ("apply", "--dry-run", "--no-key"), ("apply", "--dry-run"), ("doctor",),
        ("managed",), ("log",), ("destroy", "--dry-run"), ("rollback", "--dry-run")]))
    def read_only(self, args):
        """A command documented as writing nothing writes nothing."""
        before = self.w.snapshot()
        r = self.sh(*args)
        assert self.w.snapshot() == before, f"a read-only command wrote:\n{r}"

    @action("cat", rel=st.sampled_from(sorted(PLANTED)))
    def cat(self, rel):
        """``cat`` prints no secret (c); where every owned key equals the render, the
        file as the next apply leaves it (``cat --reveal``) is the file as it is, byte for
        byte. The revealed run prints secrets by design: (c) does not read it, (f) does."""
        before = self.w.snapshot()
        r = self.sh("cat", f"~/{rel}")
        assert r.rc in (0, 2), f"cat of a planted file:\n{r}"
        in_sync = self.oracle_in_sync()
        revealed = self.w.run("cat", "--reveal", f"~/{rel}")
        self.ran_from = len(self.w.ran)  # not through (c): --reveal prints the key
        assert "Traceback" not in revealed.err and revealed.rc == r.rc, f"{r}\n{revealed}"
        assert self.w.snapshot() == before, f"cat wrote:\n{r}"
        if in_sync and r.rc == 0 and checking("b"):
            assert revealed.out == (self.w.home / rel).read_text(), (
                f"(b) cat of a file in sync differs from it:\n{revealed}")

    @action("unset_mcp_secret")
    def unset_mcp_secret(self):
        """The MCP secret's variable is unset (or set again): bad input, said as such."""
        if MCP_VAR in self.w.env:
            del self.w.env[MCP_VAR]
        else:
            self.w.env[MCP_VAR] = self.mcp

    @action("shell_style_key", spelling=st.sampled_from(["$NAME", "${NAME}", "{env:NAME}"]))
    def shell_style_key(self, spelling):
        """A key written as a shell would (``$ST_GATEWAY_KEY``) is bad input, located,
        and nothing is written (issue 22, build item 7)."""
        before = self.w.snapshot()
        self.main["gateway"]["key"] = spelling.replace("NAME", KEY_VAR)
        self.write_fleet()
        r = self.sh("apply", "--no-verify")
        self.main["gateway"]["key"] = self.key_reference()
        self.write_fleet()
        assert r.rc == 2 and "${env:" in r.err and self.w.snapshot() == before, (
            f"a shell-style key was taken:\n{r}")

    @action("damaged_state", how=st.sampled_from(["truncated", "not-json", "wrong-shape"]))
    def damaged_state(self, how):
        """A damaged state.json: status and apply say so (exit 2), no traceback; then
        it is put back."""
        path = self.w.state_dir / "state.json"
        if not path.exists():
            return
        saved = path.read_bytes()
        damaged = {"truncated": saved[: len(saved) // 2], "not-json": b"\x00\xff{",
                   "wrong-shape": b'{"version": 1, "files": []}'}[how]
        path.write_bytes(damaged)
        try:
            for args in (("status",), ("plan", "--check"), ("apply", "--no-verify")):
                r = self.sh(*args)
                assert r.rc == 2, f"a damaged state.json ({how}) not reported:\n{r}"
        finally:
            path.write_bytes(saved)

    def oracle_in_sync(self) -> bool | None:
        try:
            wanted, unmanaged = self.w.render()
        except Exception:  # noqa: BLE001 - the fleet does not load
            return None
        return not self.w.differences(wanted, unmanaged)

    @action("rollback", yes=st.booleans())
    def rollback(self, yes):
        before = self.w.snapshot()
        r = self.sh("rollback", *(["--yes"] if yes else []))
        self.after_history(r)
        if r.rc == 0:
            self.forget_replaced_user_keys()
        self.unconfirmed(r, before)

    @action("redo", yes=st.booleans())
    def redo(self, yes):
        before = self.w.snapshot()
        r = self.sh("rollback", "--redo", *(["--yes"] if yes else []))
        self.after_history(r)
        if r.rc == 0:
            self.forget_replaced_user_keys()
        self.unconfirmed(r, before)

    def forget_replaced_user_keys(self):
        """A rollback or redo puts back whole files, replacing later edits (README says
        so): the keys added by hand since are no longer expected."""
        for (rel, kp) in list(self.user_keys):
            doc = read_doc(self.w.home / rel, fmt_of(Path(rel)))
            if doc is MISSING or get_path(doc, kp) != self.user_keys[(rel, kp)]:
                del self.user_keys[(rel, kp)]

    @action("destroy")
    def destroy(self):
        r = self.sh("destroy", "--yes")
        self.after_history(r)
        if r.rc == 0 and checking("d"):
            self.check_given_back(r)

    @action("forget", client=st.sampled_from(sorted(CLIENTS)))
    def forget(self, client):
        if client in self.frozen:
            return
        try:
            wanted, _ = self.w.render()
        except Exception:  # noqa: BLE001 - an invalid fleet: forget says so itself
            wanted = {}
        paths = {str(p.relative_to(self.w.home)) for p, want in wanted.items()
                 if want.client == client}
        before = self.file_bytes(paths)
        r = self.sh("forget", client)
        self.after_history(r)
        after = self.file_bytes(paths)
        if checking("e"):
            assert after == before, f"(e) forget {client} changed its files:\n{r}"
        self.reload_fleet()
        self.log_unknown = True  # taosync wrote fleet.yaml: (i) starts afresh
        if r.rc == 0 and paths:
            self.frozen[client] = after
            self.ever_forgotten.add(client)

    @action("manage_again", client=st.sampled_from(sorted(CLIENTS)))
    def manage_again(self, client):
        cfg = self.main["clients"].get(client)
        if cfg is None or cfg.get("managed", True):
            return
        del cfg["managed"]
        self.frozen.pop(client, None)
        self.write_fleet()

    @action("adopt", client=st.sampled_from(sorted(CLIENTS)))
    def adopt(self, client):
        self.after_history(self.sh("adopt", client, "--yes"))
        self.reload_fleet()
        self.log_unknown = True  # taosync wrote fleet.yaml: (i) starts afresh

    # -- rules: fleet edits ------------------------------------------------------------

    @action("route_pin", route=st.sampled_from(["fast", "balanced"]),
            model=st.sampled_from(MODELS))
    def route_pin(self, route, model):
        self.main["routes"][route] = model
        self.write_fleet()

    @action("route_candidates", pair=st.permutations(MODELS).flatmap(
        lambda p: st.sampled_from([p[:2], p[:3]])))
    def route_candidates(self, pair):
        self.main["routes"]["balanced"] = {"candidates": list(pair), "policy": "failover"}
        self.write_fleet()

    @action("toggle_failover", client=st.sampled_from(sorted(CHAINS)))
    def toggle_failover(self, client):
        """``failover: false`` for a client with in-client failover, or back to the
        default (the option left out), and apply: the chain goes, or comes back."""
        cfg = self.main["clients"].get(client)
        if cfg is None:
            return
        if cfg.pop("failover", True):
            cfg["failover"] = False
        self.write_fleet()
        self.same_answer("apply", "--no-verify", "--yes")
        self.after_apply()

    @action("context_window", model=st.sampled_from(MODELS),
            window=st.sampled_from([None, 32000, 128000]))
    def context_window(self, model, window):
        self.main["models"][model] = {} if window is None else {"context_window": window}
        self.write_fleet()

    @action("rotate_key")
    def rotate_key(self):
        self.key = self.new_secret("sk")
        self.w.env[KEY_VAR] = self.key
        self.w.stub._key = self.key
        if self.in_keyring:
            self.store_in_keyring()

    def key_reference(self) -> str:
        return KEYRING_REFERENCE if self.in_keyring else f"${{env:{KEY_VAR}}}"

    def store_in_keyring(self) -> None:
        """``taosync secret set`` puts the key into the world's file-backed keyring: it
        prints the reference and nothing of the value ((c) reads its output)."""
        r = self.w.run("secret", "set", KEYRING_USER, "--service", KEYRING_SERVICE,
                       input=self.key + "\n")
        trace(f"  secret set {KEYRING_USER} → {r.rc}")
        self.check_output()
        assert r.rc == 0 and r.out.strip() == KEYRING_REFERENCE, f"secret set:\n{r}"

    @action("keyring_key")
    def keyring_key(self):
        """gateway.key moves into the OS keyring (``${keyring:…}``, a file-backed one), with
        Claude Code given it by reference (its apiKeyHelper runs ``taosync secret get``),
        or back to ``${env:…}``; every invariant holds either way (issue 27)."""
        self.in_keyring = not self.in_keyring
        claude = self.main["clients"].get("claude-code")
        if self.in_keyring:
            self.store_in_keyring()
            if isinstance(claude, dict):
                claude["secrets"] = "reference"
        elif isinstance(claude, dict):
            claude.pop("secrets", None)
        self.main["gateway"]["key"] = self.key_reference()
        self.write_fleet()

    @action("rotate_mcp_secret")
    def rotate_mcp_secret(self):
        self.mcp = self.new_secret("ghp")
        self.w.env[MCP_VAR] = self.mcp

    @action("team_server")
    def team_server(self):
        """Add or drop, in the team file in use, a server that takes the gateway key."""
        servers = self.teams[self.team]["mcp_servers"]
        if "extra" in servers:
            del servers["extra"]
        else:
            servers["extra"] = {"command": "uvx", "args": ["mcp-extra"],
                                "env": {"EXTRA_KEY": "${gateway.key}",
                                        "EXTRA_MODEL": "${routes.balanced}"}}
        self.write_fleet()

    @action("switch_team")
    def switch_team(self):
        """Point $ST_TEAM at the other team's directory: fleet.yaml is byte for byte the
        same, what it includes is not."""
        self.team = "team-b" if self.team == "team-a" else "team-a"
        self.w.env[TEAM_VAR] = str(self.w.root / self.team)
        if not self.use_include:
            self.write_fleet()  # the servers are inline: as a user copying them in

    @action("toggle_include")
    def toggle_include(self):
        """Take the MCP servers from the team file through ``include:``, or inline."""
        self.use_include = not self.use_include
        self.write_fleet()

    # -- rules: the user and the clients -----------------------------------------------

    def managed_files(self) -> list[tuple[str, str]]:
        """(rel path, client) of each client file on disk of a managed client."""
        owners = {}
        try:
            wanted, _ = self.w.render()
        except Exception:  # noqa: BLE001 - an invalid fleet: only planted files then
            wanted = {}
        for path, want in wanted.items():
            owners[str(path.relative_to(self.w.home))] = want.client
        out = []
        for rel in sorted(self.w.snapshot(state=False)):
            client = owners.get(rel)
            if client is not None and client not in self.frozen:
                out.append((rel, client))
        return out

    @action("hand_edit_owned")
    def hand_edit_owned(self, data):
        """Change an owned key by hand: a model-like value, or a token of the user's own
        at a key that holds a secret."""
        try:
            wanted, _ = self.w.render()
        except Exception:  # noqa: BLE001
            return
        choices = []
        for path, want in sorted(wanted.items()):
            rel = str(path.relative_to(self.w.home))
            if want.client in self.frozen or not path.exists() or want.fmt == "yaml":
                continue
            for kp, value in want.values.items():
                if not all(isinstance(s, str) for s in kp):
                    continue
                if isinstance(value, str) and (want.fmt != "toml" or len(kp) == 1):
                    choices.append((rel, want.fmt, kp, kp in want.secret_paths))
                elif isinstance(value, list) and want.fmt == "json" and \
                        all(isinstance(v, str) for v in value):  # a fallback chain
                    choices.append((rel, want.fmt, kp, None))
        if not choices:
            return
        rel, fmt, kp, is_secret = data.draw(st.sampled_from(choices), label="owned key")
        self.n += 1
        value = self.new_secret("tok") if is_secret else f"user-model-{self.n}"
        if is_secret is None:  # the user reorders a chain and adds a model of their own
            have = get_path(read_doc(self.w.home / rel, fmt), kp)
            value = [*reversed(have if isinstance(have, list) else []), value]
        self.edit_file(rel, fmt, kp, value)
        self.touched.add((rel, kp))
        self.after_hand_edit()

    @action("hand_add_user_key")
    def hand_add_user_key(self, data):
        """Add a key of the user's own (never taosync's) to a client file."""
        files = [(rel, c) for rel, c in self.managed_files() if fmt_of(Path(rel)) != "yaml"]
        if not files:
            return
        rel, _client = data.draw(st.sampled_from(files), label="file")
        self.n += 1
        kp, value = (f"user_key_{self.n}",), f"user-value-{self.n}"
        self.edit_file(rel, fmt_of(Path(rel)), kp, value)
        self.user_keys[(rel, kp)] = value
        self.touched.add((rel, kp))
        self.after_hand_edit()

    def edit_file(self, rel: str, fmt: str, kp: tuple, value: str):
        path = self.w.home / rel
        text = path.read_text()
        if fmt in ("json", "jsonc"):
            doc = json.loads(text) if text.strip() else {}
            node = doc
            for seg in kp[:-1]:
                node = node.setdefault(seg, {})
            node[kp[-1]] = value
            text = json.dumps(doc, indent=2) + "\n"
        elif fmt == "toml":  # a top-level key: before the first table
            (name,) = kp
            line = f"{name} = {json.dumps(value)}\n"
            lines = text.splitlines(keepends=True)
            tables = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")),
                          len(lines))
            at = next((i for i in range(tables)
                       if re.match(rf"{re.escape(name)}\s*=", lines[i])), None)
            if at is None:
                lines.insert(0, line)
            else:
                lines[at] = line
            text = "".join(lines)
        else:  # dotenv, keyvalue
            (name,) = kp
            lines = [ln for ln in text.splitlines() if not ln.startswith(f"{name}=")]
            text = "\n".join([*lines, f"{name}={value}"]) + "\n"
        path.write_text(text)

    @action("client_rewrite", how=st.sampled_from(["reformat", "reorder", "updated_at",
                                                   "sgpt_first_run"]))
    def client_rewrite(self, data, how):
        """What clients do to their own files: rewrite JSON in another layout or key
        order (same data), bump Cline's ``updatedAt``, or rewrite ``.sgptrc`` as
        shell-gpt does on its first run (its defaults appended). Written by another
        program, as a hand edit is: a watch did not write it."""
        try:
            self._client_rewrite(data, how)
        finally:
            self.after_hand_edit()

    def _client_rewrite(self, data, how):
        files = [rel for rel, _c in self.managed_files() if rel.endswith(".json")]
        if how == "updated_at":
            files = [rel for rel in files if rel.endswith("settings/providers.json")]
        if how == "sgpt_first_run":
            rel = ".config/shell_gpt/.sgptrc"
            if (rel, "shell-gpt") not in self.managed_files():
                return
            path = self.w.home / rel
            lines = [ln for ln in path.read_text().splitlines()
                     if ln.strip() and not ln.startswith("#")]
            for name, value in (("DEFAULT_COLOR", "magenta"), ("REQUEST_TIMEOUT", "60")):
                if not any(ln.startswith(name + "=") for ln in lines):
                    lines.append(f"{name}={value}")
                    self.user_keys[(rel, (name,))] = value
                    self.touched.add((rel, (name,)))
            path.write_text("\n".join(lines) + "\n")
            return
        if not files:
            return
        rel = data.draw(st.sampled_from(files), label="file")
        path = self.w.home / rel
        doc = json.loads(path.read_text())
        if how == "reformat":
            path.write_text(json.dumps(doc, indent=4))
        elif how == "reorder":
            path.write_text(json.dumps(dict(reversed(list(doc.items()))), indent=2) + "\n")
        else:
            for provider in (doc.get("providers") or {}).values():
                if isinstance(provider, dict) and "updatedAt" in provider:
                    self.n += 1
                    provider["updatedAt"] = f"2027-01-01T00:00:{self.n % 60:02d}.000Z"
            path.write_text(json.dumps(doc, indent=2) + "\n")

    # -- rules: the gateway ------------------------------------------------------------

    @action("set_fault", kind=st.sampled_from(["server_error", "unknown_model"]),
          model=st.sampled_from(MODELS))
    def set_fault(self, kind, model):
        self.w.stub.add_fault(f"{kind}@{model}")

    @action("fail_choice")
    def fail_choice(self):
        """The model the balanced route chose starts failing and verify sees it: the
        route moves to another healthy candidate, and the next apply rewrites every slot
        on it, and the fallback chains with it."""
        target = self.main["routes"].get("balanced")
        if not isinstance(target, dict):
            return
        state = self.w.state().get("routes", {}).get("balanced", {})
        chosen = state.get("model") if isinstance(state, dict) else None
        if chosen not in target["candidates"]:
            chosen = target["candidates"][0]
        self.w.stub.add_fault(f"server_error@{chosen}")
        self.sh("verify")
        self.same_answer("apply", "--no-verify", "--yes")
        self.after_apply()

    @action("clear_faults")
    def clear_faults(self):
        self.w.stub.clear_faults()

    # -- lane project (issue 26, Build 3) ----------------------------------------------
    # The project scope: its own overlay, state and files; never the user scope's.

    def project_repo(self) -> Path:
        """The repository (created on first use): git-ignores the files that hold secrets
        and has an overlay."""
        repo = self.w.root / "project"
        if not (repo / ".git").exists():
            git(repo.parent, "init", "-q", str(repo))
            (repo / ".git/info/exclude").write_text("\n".join(PROJECT_IGNORED) + "\n")
            self.w.env[PROJECT_KEY_VAR] = self.new_secret("sk")
            self.project_fast = "gpt-4.1"
            self.write_overlay()
        return repo

    def write_overlay(self) -> None:
        overlay = {"version": 1,
                   "gateway": {"base_url": self.w.stub.root, "gemini_base_url": self.w.stub.root,
                               "key": f"${{env:{PROJECT_KEY_VAR}}}"},
                   "routes": {"fast": self.project_fast}}
        (self.w.root / "project" / "taosync.yaml").write_text(dump_yaml(overlay))

    def user_scope(self) -> dict[str, str]:
        """Every file of the home but the project states: client files, the user scope's
        state and its certificate."""
        return {rel: h for rel, h in self.w.snapshot().items()
                if not rel.startswith(".local/state/taosync/projects/")}

    def project_files(self) -> dict[str, str]:
        repo = self.project_repo()
        out = {}
        for path in sorted(repo.rglob("*")):
            if path.is_file() and ".git" not in path.relative_to(repo).parts:
                out[str(path.relative_to(repo))] = path.read_text()
        return out

    @action("project_overlay_edit", model=st.sampled_from(MODELS))
    def project_overlay_edit(self, model):
        self.project_repo()
        self.project_fast = model
        self.write_overlay()

    @action("project_apply")
    def project_apply(self):
        repo = self.project_repo()
        before = self.user_scope()
        r = self.sh("apply", "--project", str(repo), "--no-verify", "--yes")
        assert r.rc in (0, 2), f"apply --project:\n{r}"
        assert self.user_scope() == before, f"apply --project changed the user scope:\n{r}"
        settings = repo / ".claude/settings.local.json"
        if r.rc == 0 and settings.exists() and "claude-code" not in self.ever_forgotten:
            env = json.loads(settings.read_text())["env"]
            assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == self.project_fast, env
            assert env["ANTHROPIC_BASE_URL"] == self.w.stub.root

    @action("project_status")
    def project_status(self):
        repo = self.project_repo()
        before, files = self.w.snapshot(), self.project_files()
        r = self.sh("status", "--project", str(repo))
        assert r.rc in (0, 1, 2), f"status --project:\n{r}"
        assert self.w.snapshot() == before and self.project_files() == files, (
            f"status --project wrote:\n{r}")

    @action("project_destroy")
    def project_destroy(self):
        repo = self.project_repo()
        before = self.user_scope()
        r = self.sh("destroy", "--project", str(repo), "--yes")
        assert r.rc == 0, f"destroy --project:\n{r}"
        assert self.user_scope() == before, f"destroy --project changed the user scope:\n{r}"
        assert list(self.project_files()) == ["taosync.yaml"], self.project_files()

    @invariant()
    def no_secret_in_a_tracked_project_file(self):
        """No secret in a file git would track in the project (tracked, or untracked and
        not ignored)."""
        repo = self.w.root / "project"
        if not self.ready or not (repo / ".git").exists():
            return
        import subprocess

        listed = subprocess.run(["git", "-C", str(repo), "ls-files", "--cached", "--others",
                                 "--exclude-standard", "-z"], capture_output=True, text=True,
                                check=True).stdout
        for rel in filter(None, listed.split("\0")):
            leaked = find_secrets((repo / rel).read_text(errors="replace"), self.secrets)
            assert not leaked, f"{', '.join(leaked)} in {rel}, a file git tracks"

    # -- end of lane project -------------------------------------------------------------
    # -- lane profiles: declare a profile; apply, verify, status, destroy --profile ------
    # Invariant (check_profiles_apart): a profile run never changes the user scope's
    # files or state, and no other step changes a profile's (docs/profiles.md).

    PROFILES = ("p1", "p2")

    def profile_area(self) -> dict[str, str]:
        return self.w.snapshot(profiles=True)

    @action("profile_declare", profile=st.sampled_from(PROFILES),
            model=st.sampled_from(MODELS), drop=st.sampled_from([None, *sorted(CLIENTS)]))
    def profile_declare(self, profile, model, drop):
        """Declare (or redeclare) profile ``profile``: fast on ``model``, ``drop`` left out."""
        name = profile
        overlay: dict = {"routes": {"fast": model}}
        if drop is not None:
            overlay["clients"] = {drop: {"enabled": False}}
        self.main.setdefault("profiles", {})[name] = overlay
        self.write_fleet()

    @action("profile_run", profile=st.sampled_from(PROFILES),
            op=st.sampled_from(["apply", "verify", "status", "destroy"]))
    def profile_run(self, profile, op):
        name = profile
        user = self.w.snapshot()
        args = {"apply": ["apply", "--no-verify", "--yes"], "verify": ["verify"],
                "status": ["status"], "destroy": ["destroy", "--yes"]}[op]
        r = self.sh("--profile", name, *args)
        assert self.w.snapshot() == user, (
            f"a profile run changed the user scope's files or state:\n{r}")
        declared = name in (self.main.get("profiles") or {})
        if not declared:  # never applied either: destroy (it reads the state) has nothing
            if op == "destroy":
                assert r.rc == 0 and "nothing to do" in r.out, r
            else:
                assert r.rc == 2 and f"no profile {name!r}" in " ".join(r.err.split()), r
            assert self.profile_area() == getattr(self, "profiles_seen", {}), (
                f"an unknown profile wrote:\n{r}")
        elif op == "apply" and r.rc == 0:
            # the option and $TAOSYNC_PROFILE (which the fast path may read) agree
            full = self.sh("--profile", name, "status")
            self.w.env["TAOSYNC_PROFILE"] = name
            try:
                env = self.sh("status")
            finally:
                del self.w.env["TAOSYNC_PROFILE"]
            assert full.rc == 0 and "nothing to do" in full.out, full
            assert env.words == full.words, f"the env spelling answered otherwise:\n{env}\n{full}"
        elif op == "destroy" and r.rc == 0:
            root = self.w.home / PROFILE_AREAS[0] / name
            held = [str(p) for p in root.rglob("*") if p.is_file()
                    and any(v in p.read_text(errors="replace")
                            for n, v in self.secrets.items() if n.startswith(("sk#", "ghp#")))]
            assert not held, f"destroy --profile left the fleet's secrets in {held}:\n{r}"
        self.profiles_seen = self.profile_area()

    @invariant()
    def check_profiles_apart(self):
        """No step but a profile run changes a profile's files or state."""
        if not self.ready:
            return
        assert self.profile_area() == getattr(self, "profiles_seen", {}), (
            "a step that was no profile run changed a profile's files or state")

    # -- the one rule ------------------------------------------------------------------

    @precondition(lambda self: self.ready)
    @rule(data=st.data())
    def act(self, data):
        names = [n for n in RULES + PROFILE_RULES if n in self.rules_here and n in ACTIONS
                 and (_ONLY is None or n in _ONLY) and n not in _SKIP]
        weighted = [n for n in names for _ in range(ACTIONS[n][2])]
        name = data.draw(st.sampled_from(weighted), label="action")
        method, strategies, _ = ACTIONS[name]
        kwargs = {arg: data.draw(s, label=arg) for arg, s in strategies.items()}
        trace(f"{name} {kwargs}" if kwargs else name)
        f = getattr(self, method)
        if "data" in inspect.signature(f).parameters:
            kwargs["data"] = data
        f(**kwargs)

    # -- the invariants ----------------------------------------------------------------

    def file_bytes(self, rels) -> dict[str, bytes | None]:
        out = {}
        for rel in rels:
            try:
                out[rel] = (self.w.home / rel).read_bytes()
            except FileNotFoundError:
                out[rel] = None
        return out

    def fixed_step(self, f, *args, then=None):
        """One step of a fixed sequence: ``f(*args)``, the checks after every step (and
        ``then``, a lane's own invariant); the step's own command, where it ran one."""
        n = len(self.w.ran)
        f(*args)
        self.check_after_every_step()
        if then is not None:
            then()
        return self.w.ran[n] if len(self.w.ran) > n else None

    @invariant()
    def check_after_every_step(self):
        if not self.ready:
            return
        self.settle()
        self.check_output()
        plan, _ = self.same_answer("plan", "--check")
        status, _ = self.same_answer("status")
        if checking("b"):
            self.check_sync_claims(plan, status)
        if checking("g"):
            self.check_fallback_chains()
        if checking("e"):
            for client, was in self.frozen.items():
                now = self.file_bytes(was)
                changed = sorted(rel for rel in was if now[rel] != was[rel])
                assert not changed, f"(e) forgotten {client}'s files written: {changed}"
        for (rel, kp), value in self.user_keys.items():
            doc = read_doc(self.w.home / rel, fmt_of(Path(rel)))
            assert doc is not MISSING and get_path(doc, kp) == value, (
                f"the user's {rel} {'.'.join(kp)} was lost")
        if checking("i") and self.checks_log:
            self.check_log_changes()

    #: (i) runs here; a watch alongside applies at moments the model does not see
    checks_log = True

    def check_log_changes(self):
        """(i): every apply record since the last look names exactly the keys the
        model changed since the apply record before it — the first of them, the changes
        of this step; any later one in the same step, none — and keeps its note."""
        if self.last_record_id() <= self.log_seen:
            return  # nothing new (read from state.json: no process per step)
        r = self.sh("log", "--json")
        records = sorted(json.loads(r.out)["records"], key=lambda rec: rec["id"])
        now = (self.fleet_keys(), self.key)
        fresh = [rec for rec in records if rec["id"] > self.log_seen]
        self.log_seen = max([self.log_seen, *(rec["id"] for rec in records)])
        for rec in fresh:
            if rec["id"] in self.notes:
                assert rec["message"] == self.notes.pop(rec["id"]), f"(i) the note:\n{rec}"
            if rec["kind"] != "apply":
                continue
            if rec["changes"] is None or self.log_unknown:
                self.log_base, self.log_unknown = now, False
                continue
            base_keys, base_key = self.log_base
            expected = changed_keys(base_keys, now[0], key_rotated=base_key != now[1])
            assert set(rec["changes"]) == expected, (
                f"(i) log names {rec['changes']} for #{rec['id']}; the model changed "
                f"{sorted(expected)}")
            self.log_base = now

    def check_sync_claims(self, plan, status):
        """(b): the claims of plan --check and status against the oracle."""
        try:
            wanted, unmanaged = self.w.render()
        except Exception as e:  # noqa: BLE001 - the fleet does not load: bad input
            assert plan.rc == 2 and status.rc == 2, (
                f"(b) the fleet does not load ({e}), yet:\n{plan}\n{status}")
            return
        diffs = self.w.differences(wanted, unmanaged)
        in_sync = not diffs
        why = "\n".join(diffs[:12]) or "(every owned key equals the render)"
        assert (plan.rc == 0) == in_sync, f"(b) plan --check vs the files:\n{why}\n{plan}"
        assert "nothing to do" in plan.out if in_sync else "nothing to do" not in plan.out, (
            f"(b) plan's words vs the files:\n{why}\n{plan}")
        assert (status.rc == 0) == in_sync, f"(b) status vs the files:\n{why}\n{status}"

    def check_fallback_chains(self):
        """(g): for each client with in-client failover, managed and in sync, the chain
        its file holds against fleet.yaml as the machine wrote it."""
        try:
            wanted, unmanaged = self.w.render()
        except Exception:  # noqa: BLE001 - the fleet does not load
            return
        if self.w.differences(wanted, unmanaged):
            return  # a hand edit not applied yet: (b) holds the claims to that
        for client, chain in CHAINS.items():
            cfg = self.main["clients"].get(client)
            if cfg is None or client in unmanaged or client in self.frozen:
                continue
            doc = read_doc(self.w.home / chain.file, chain.fmt)
            if doc is MISSING:
                continue
            chosen, held = get_path(doc, chain.chosen), get_path(doc, chain.fallbacks)
            target = self.main["routes"].get(cfg.get(chain.slot) or self.main["default_route"])
            if not isinstance(target, dict) or cfg.get("failover") is False:
                trace(f"  (g) {client}: no chain (route {target!r}, failover "
                      f"{cfg.get('failover', True)})")
                assert held is MISSING, (
                    f"(g) {client}: {chain.file} {'.'.join(chain.fallbacks)} is {held!r}, "
                    f"but the route is {target!r} and failover {cfg.get('failover', True)}")
                continue
            candidates = target["candidates"]
            trace(f"  (g) {client}: {candidates} chose {chosen!r}, chain {held!r}")
            assert chosen in candidates, f"(g) {client} chose {chosen!r}, not in {candidates}"
            expected = [m for m in candidates if m != chosen]
            assert held is not MISSING and chain.models(held) == expected, (
                f"(g) {client}: {chain.file} {'.'.join(chain.fallbacks)} is "
                f"{'(missing)' if held is MISSING else held!r}; the route's candidates "
                f"{candidates} but {chosen!r} are {expected}")

    def check_given_back(self, ran):
        """(d): after destroy, every planted file holds the user's values again (keys
        edited by hand since excepted, keys added by hand kept), every file taosync
        created is gone (or holds only what the user put there), and no client file
        holds a key of the fleet's."""
        problems = []
        on_disk = self.w.snapshot(state=False)
        for rel in sorted(on_disk):
            client = next((c for c, was in self.frozen.items() if rel in was), None)
            if client is not None or self.owner_forgotten_once(rel):
                # a forgotten client's files are left as they are; what taosync had
                # written there became the user's at forget (README: forget), so a
                # later destroy gives that back
                continue
            text = (self.w.home / rel).read_text(errors="replace")
            for name, value in self.secrets.items():
                if name.startswith(("sk#", "ghp#")) and value in text:
                    problems.append(f"{rel} still holds {name}")
        forgotten_files = {rel for was in self.frozen.values() for rel in was}
        for rel in sorted(set(self.originals) | set(on_disk)):
            if rel in forgotten_files or self.owner_forgotten_once(rel):
                continue
            original = self.originals.get(rel)
            have = read_doc(self.w.home / rel, fmt_of(Path(rel)))
            want = MISSING if original is None else self.parse_text(rel, original)
            have_leaves = {} if have is MISSING else dict(leaves(have))
            want_leaves = {} if want is MISSING else dict(leaves(want))
            for kp in sorted(set(have_leaves) | set(want_leaves), key=str):
                if self.is_touched(rel, kp):
                    continue
                a, b = have_leaves.get(kp, MISSING), want_leaves.get(kp, MISSING)
                if a != b and not (b is MISSING and a in ({}, [], "")):
                    shown = "(secret)" if any(isinstance(v, str) and v in self.secrets.values()
                                              for v in (a, b)) else f"{b!r} → {a!r}"
                    problems.append(f"{rel} {'.'.join(map(str, kp))}: user had {shown}"
                                    if b is not MISSING else
                                    f"{rel} {'.'.join(map(str, kp))}: left behind")
        assert not problems, "(d) destroy did not give back:\n" + "\n".join(problems) + f"\n{ran}"

    def parse_text(self, rel, text):
        tmp = self.w.root / "parse" / Path(rel).name
        tmp.parent.mkdir(exist_ok=True)
        tmp.write_text(text)
        return read_doc(tmp, fmt_of(Path(rel)))

    def is_touched(self, rel: str, kp: tuple) -> bool:
        for r, t in self.touched:
            if r == rel and (kp[:len(t)] == t or t[:len(kp)] == kp):
                return True
        return False

    def owner_forgotten_once(self, rel: str) -> bool:
        """A client forgotten once lost its record of the user's values (forget drops
        them from the state): its files are not held to (d)."""
        prefixes = {"claude-code": (".claude",), "codex": (".codex/",), "cline": (".cline/",),
                    "continue": (".continue/",), "shell-gpt": (".config/shell_gpt/",),
                    "qwen-code": (".qwen/",), "gemini-cli": (".gemini/",),
                    "hermes": (".hermes/",), "droid": (".factory/",), "pi": (".pi/",)}
        return any(rel.startswith(prefixes[c]) for c in self.ever_forgotten)


class WatchMachine(TaosyncMachine):
    """The same world with ``taosync watch`` running alongside (build item 2): a one-shot
    rollback, redo, destroy, forget or adopt is the new baseline — watch writes nothing
    after it until fleet.yaml changes again — and a fleet edit (or, while the baseline is
    the fleet's, a hand edit of an owned key) ends in sync. Rules whose input is the
    environment (key rotation, $ST_TEAM) are left out: a running watch keeps the
    environment it started with."""

    watched = True

    rules_here = frozenset(RULES) - {"rotate_key", "rotate_mcp_secret", "switch_team",
                                     "unset_mcp_secret", "damaged_state", "update"}
    checks_log = False

    @initialize()
    def start(self):
        super().start()
        self.watch = Watch(self.w)
        self.watch.wait_for("watching")
        self.since_history: dict[str, str] | None = None  # files right after one
        self.fleet_baseline = True  # watch's baseline is the fleet (no history step since)
        self.expect_sync = False
        self.edit_mark: int | None = None  # watch lines before a fleet save while held

    def teardown(self):
        if getattr(self, "watch", None) is not None:
            self.watch.stop()
        super().teardown()

    def after_history(self, ran):
        if ran.rc == 0:
            self.since_history = self.w.snapshot(state=False)
            self.fleet_baseline, self.expect_sync = False, False

    def after_apply(self):
        """A watch holding a rollback's (or destroy's…) baseline keeps holding through a
        one-shot apply, which applies as always (README: watch and one-shot commands):
        the files that apply wrote are the new "as the one-shot command left them"."""
        if self.since_history is not None:
            self.since_history = self.w.snapshot(state=False)

    def after_fleet_edit(self):
        if getattr(self, "watch", None) is None:
            return
        if self.fleet_baseline:
            self.since_history, self.expect_sync = None, True
        else:  # held: only a save that changes the render resumes it (README); settle tells
            self.edit_mark = len(self.watch.lines)

    def after_hand_edit(self):
        self.since_history = None  # the user wrote: not what the history step left
        self.expect_sync = self.fleet_baseline

    def settle(self):
        self.watch.settle()
        assert self.watch.proc.poll() is None, "watch ended:\n" + "".join(self.watch.lines)
        if getattr(self, "edit_mark", None) is not None:
            # a fleet save while held: "resumed" (it renders otherwise: the files must
            # reach fleet.yaml) or "held" (it renders the same: the hold, and the
            # no-write check, go on)
            since = [json.loads(line).get("event") for line in self.watch.lines[self.edit_mark:]
                     if line.startswith("{")]
            self.edit_mark = None
            if "resumed" in since or "applied" in since:
                self.since_history, self.fleet_baseline, self.expect_sync = None, True, True
        text = "".join(self.watch.lines)
        if checking("f"):
            assert "Traceback" not in text, f"(f) watch printed a traceback:\n{text}"
        if checking("c"):
            leaked = [n for n in find_secrets(text, self.secrets) if n not in _UNCHECKED_SECRETS]
            assert not leaked, f"(c) watch printed {', '.join(leaked)}:\n{text}"
        if self.since_history is not None:
            now = self.w.snapshot(state=False)
            changed = sorted(rel for rel in set(now) | set(self.since_history)
                             if now.get(rel) != self.since_history.get(rel))
            assert not changed, ("watch wrote after a one-shot command, before any fleet "
                                 f"edit: {changed}\n" + "".join(self.watch.lines[-12:]))
        if self.expect_sync and checking("b"):
            wanted, unmanaged = self.w.render()
            diffs = self.w.differences(wanted, unmanaged)
            assert not diffs, ("watch left the files out of step with fleet.yaml:\n"
                               + "\n".join(diffs[:12]) + "\n" + "".join(self.watch.lines[-12:]))


# -- running it -----------------------------------------------------------------------

MINUTES = float(os.environ.get("TAOSYNC_STATEFUL_MINUTES", "0") or 0)


def explore(machine, *, examples: int, steps: int, share: float) -> None:
    """In the normal run: ``examples`` sequences of up to ``steps`` steps, derandomized
    (the same ones each run: CI neither flakes nor needs a database, and a failure
    reproduces as it is). With TAOSYNC_STATEFUL_MINUTES=M: random sequences of up to 25
    steps, batch after batch, for ``share`` of M minutes."""
    common = dict(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
    if os.environ.get("TAOSYNC_STATEFUL_SHRINK", "0") != "1":
        # no shrinking: a sequence is at most a few dozen steps, readable as it is, while
        # shrinking one through subprocesses takes minutes
        common["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
    if not MINUTES:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=examples, stateful_step_count=steps, derandomize=True,
            database=None, **common))
        return
    end = time.monotonic() + MINUTES * 60 * share
    while time.monotonic() < end:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=5, stateful_step_count=25, database=None, **common))


def test_the_whole_tool_keeps_one_truth():
    explore(TaosyncMachine, examples=6, steps=10, share=2 / 3)


def test_a_watch_alongside_agrees_with_every_other_command():
    explore(WatchMachine, examples=3, steps=8, share=1 / 3)


def test_the_fallback_chains_follow_every_route_move():
    """The same machine and invariants through one fixed sequence, so every run drives the
    fallback chains whatever the sequences above draw: the chosen model fails (the route
    moves, the chain with it), three candidates, failover off and on again, the user
    reordering a chain by hand — where apply and rollback without --yes stop and write
    nothing (h), and apply --yes puts the chain back."""
    m = TaosyncMachine()
    settings_json = m.w.home / ".claude/settings.json"

    def claude() -> tuple:
        doc = json.loads(settings_json.read_text())
        return doc["env"]["ANTHROPIC_MODEL"], doc.get("fallbackModel")

    step = m.fixed_step

    try:
        m.start()
        assert claude() == ("claude-sonnet-4-20250514", ["gpt-4.1"])
        step(m.fail_choice)
        assert claude() == ("gpt-4.1", ["claude-sonnet-4-20250514"])
        step(m.clear_faults)
        step(m.route_candidates, ["nvidia/deepseek-r1", "gpt-4.1", "intel/llama-7b"])
        step(m.apply, False, True)  # gpt-4.1 is healthy and stays chosen (dwell)
        assert claude() == ("gpt-4.1", ["nvidia/deepseek-r1", "intel/llama-7b"])
        step(m.fail_choice)
        assert claude() == ("nvidia/deepseek-r1", ["gpt-4.1", "intel/llama-7b"])
        step(m.toggle_failover, "claude-code")
        assert claude() == ("nvidia/deepseek-r1", None)
        step(m.toggle_failover, "claude-code")
        assert claude()[1] == ["gpt-4.1", "intel/llama-7b"]
        m.edit_file(".claude/settings.json", "json", ("fallbackModel",),
                    ["intel/llama-7b", "gpt-4.1"])
        m.touched.add((".claude/settings.json", ("fallbackModel",)))
        m.after_hand_edit()
        m.check_after_every_step()  # (b): plan and status see the reordered chain
        for f, *args in ((m.apply, False, False), (m.rollback, False)):
            n = len(m.w.ran)  # (h): a script without --yes keeps the hand edit
            step(f, *args)
            assert m.w.ran[n].rc == 1 and "pass --yes" in m.w.ran[n].err, m.w.ran[n]
            assert claude()[1] == ["intel/llama-7b", "gpt-4.1"]
        step(m.apply, False, True)
        assert claude()[1] == ["gpt-4.1", "intel/llama-7b"]
        step(m.route_pin, "balanced", "gpt-4o-mini")
        step(m.apply, False, True)
        assert claude() == ("gpt-4o-mini", None)
    finally:
        m.teardown()


def test_update_and_what_log_says_changed_follow_the_model():
    """The same machine and invariants through one fixed sequence, so every run drives
    ``update`` (a refusal over an uncommitted fleet edit, then a teammate's commit
    pulled) and ``apply -m``, with (i) checking what ``log`` names after each step."""
    m = TaosyncMachine()

    step = m.fixed_step

    try:
        m.start()
        step(m.route_pin, "fast", "intel/llama-7b")  # the user's edit, not committed
        step(m.update, False, "gpt-4.1")  # refused: nothing pulled
        step(m.apply, False, True, "why: a note")
        step(m.update, True, "gpt-4.1")  # committed, pushed; the teammate's pin pulled
        assert m.main["routes"]["fast"] == "gpt-4.1"
        step(m.team_server)
        step(m.rotate_key)
        step(m.apply, False, True, None)
        changes = json.loads(m.w.run("log", "--json").out)["records"][0]["changes"]
        assert set(changes) == {"mcp_servers.extra (added)", "key rotated"}, changes
        notes = [r["message"] for r in json.loads(m.w.run("log", "--json").out)["records"]]
        assert any(n and n.startswith("why: a note") for n in notes), notes
        assert any(n and n.startswith("update: ") for n in notes), notes
    finally:
        m.teardown()


def test_a_key_in_the_keyring_keeps_one_truth():
    """The same machine and invariants through one fixed sequence with gateway.key in a
    file-backed OS keyring (issue 27), so every run drives it whatever the sequences above
    draw: stored by ``taosync secret set``, applied (Claude Code by reference, the others
    inline), rotated in the keyring, verified, rolled back, and moved back to ``${env:}``.
    The state and the render cache never hold a key from the keyring."""
    from conftest import keyring_or_skip

    keyring_or_skip()
    m = TaosyncMachine()

    step = m.fixed_step

    def no_key_in_state():
        for path in m.w.state_dir.glob("*.json"):
            text = path.read_text()
            assert not [n for n in find_secrets(text, m.secrets) if n.startswith("sk#")], path

    try:
        m.start()
        step(m.keyring_key)
        assert m.main["gateway"]["key"] == KEYRING_REFERENCE
        step(m.apply, False)
        settings = json.loads((m.w.home / ".claude/settings.json").read_text())
        assert settings["apiKeyHelper"].endswith(f"secret get '{KEYRING_REFERENCE}'")
        no_key_in_state()
        step(m.rotate_key)  # a new key in the keyring: plan and status see it
        step(m.apply, True)
        no_key_in_state()
        step(m.verify)
        step(m.rollback, True)
        step(m.keyring_key)
        assert m.main["gateway"]["key"] == f"${{env:{KEY_VAR}}}"
        step(m.apply, False)
    finally:
        m.teardown()


# -- lane project (issue 26, Build 3) -----------------------------------------------------

def test_a_project_scope_keeps_to_itself():
    """The same machine and invariants through one fixed sequence, so every run drives the
    project scope: an overlay applied, its status, the user's own apply and rollback in
    between, the overlay edited and applied again, and the project destroyed — each
    project step leaving the user scope's files and state as they were."""
    m = TaosyncMachine()

    step = functools.partial(m.fixed_step, then=m.no_secret_in_a_tracked_project_file)

    try:
        m.start()
        assert step(m.project_apply).rc == 0
        assert (m.w.root / "project/.claude/settings.local.json").exists()
        assert step(m.project_status).rc == 0
        step(m.route_pin, "fast", "intel/llama-7b")
        step(m.apply, False, True)
        step(m.project_overlay_edit, "gpt-4o-mini")
        assert step(m.project_status).rc == 1  # the overlay's change is pending
        assert step(m.project_apply).rc == 0
        step(m.rollback, True)
        assert step(m.project_status).rc == 0  # the user's rollback is not the project's
        assert step(m.project_destroy).rc == 0
    finally:
        m.teardown()
# -- end of lane project ---------------------------------------------------------------------
# -- lane profiles ----------------------------------------------------------------------

def test_profiles_stay_apart_from_the_user_scope():
    """The same machine and invariants through one fixed sequence of profile steps, so
    every run drives them: two profiles declared, applied, verified, hand-edited, checked
    and destroyed between user-scope applies, rollbacks and destroys — and no profile run
    touches the user scope, no user-scope step a profile (check_profiles_apart)."""
    m = TaosyncMachine()

    step = functools.partial(m.fixed_step, then=m.check_profiles_apart)

    try:
        m.start()
        step(m.profile_run, "p1", "status")  # not declared yet: exit 2, nothing written
        step(m.profile_declare, "p1", "gpt-4.1", None)
        step(m.profile_declare, "p2", "intel/llama-7b", "codex")
        step(m.profile_run, "p1", "apply")
        step(m.profile_run, "p2", "apply")
        assert (m.w.home / PROFILE_AREAS[0] / "p1/.claude/settings.json").exists()
        assert not (m.w.home / PROFILE_AREAS[0] / "p2/.codex").exists()
        step(m.apply, False, True)
        step(m.profile_run, "p1", "verify")
        step(m.rotate_key)
        step(m.apply, False, True)
        step(m.profile_run, "p2", "status")
        step(m.profile_run, "p2", "apply")
        step(m.rollback, True)
        step(m.destroy)
        step(m.profile_run, "p1", "status")
        step(m.profile_run, "p1", "destroy")
        step(m.profile_run, "p2", "destroy")
        step(m.apply, False, True)
    finally:
        m.teardown()


# -- lane gateways (issue 26, build 1): named gateways ------------------------------------------
# A second gateway ("work": its own stand-in, key and secret header), a client moved onto
# it and back, its key rotated, and `taosync use NAME --only CLIENT` / `use default`. Every
# invariant above holds as it is: (b) against the oracle's render (each client on its own
# gateway), (c) no spelling of the work key or header in any output. `use work` without
# --only is not drawn: it makes the work key the fleet's "resolved key", which (i)'s model
# of "key rotated" (self.key) does not follow; tests/test_gateways.py proves that switch.

WORK_KEY_VAR, WORK_HEADER_VAR = "ST_WORK_KEY", "ST_WORK_HEADER"
#: the clients drawn to move (Gemini CLI too: "work" has a Gemini root)
MOVABLE = ["claude-code", "codex", "gemini-cli", "qwen-code", "continue"]


def _work_gateway(self) -> dict:
    return {"base_url": self.w.stub_work.root, "key": f"${{env:{WORK_KEY_VAR}}}",
            "gemini_base_url": self.w.stub_work.root,
            "headers": {"X-Work-Auth": f"${{env:{WORK_HEADER_VAR}}}"}}


@action("add_gateway")
def _add_gateway(self):
    """Add (or drop, when no client is on it) the named gateway "work"."""
    if "gateways" in self.main:
        if not any(isinstance(c, dict) and c.get("gateway") == "work"
                   for c in self.main["clients"].values()):
            del self.main["gateways"]
            self.write_fleet()
        return
    if WORK_KEY_VAR not in self.w.env:
        _rotate_work_key_now(self)
    self.w.env[WORK_HEADER_VAR] = self.new_secret("hdr")
    self.main["gateways"] = {"work": _work_gateway(self)}
    self.write_fleet()


@action("move_client", client=st.sampled_from(MOVABLE))
def _move_client(self, client):
    """Move a client onto "work" (when it exists), or back to the default gateway."""
    entry = self.main["clients"].get(client)
    if not isinstance(entry, dict):
        return
    if entry.get("gateway"):
        entry.pop("gateway")
    elif "gateways" in self.main:
        entry["gateway"] = "work"
    else:
        return
    self.write_fleet()


def _rotate_work_key_now(self):
    self.w.env[WORK_KEY_VAR] = key = self.new_secret("sk")
    self.w.stub_work._key = key


@action("rotate_work_key")
def _rotate_work_key(self):
    """A new key for "work" (the stand-in accepts only it): the next plan, status and
    apply see it, from a shell too, never "nothing to do" over it."""
    _rotate_work_key_now(self)


@action("use_gateway", gateway=st.sampled_from(["default", "work", "wrok"]),
        client=st.sampled_from(MOVABLE))
def _use_gateway(self, gateway, client):
    """``taosync use NAME --only CLIENT`` (``use default``: the default gateway by name):
    a comment-kept fleet.yaml edit and an apply; an unknown NAME or a client not in the
    fleet is bad input that writes nothing."""
    name = gateway
    before = self.w.snapshot()
    only = not (name == "default" and client == "codex")  # else: plain `use default`
    args = ["use", name, *(["--only", client] if only else []), "--no-verify", "--yes"]
    known = name in ("default", *self.main.get("gateways", {}))
    configured = isinstance(self.main["clients"].get(client), dict)
    r = self.sh(*args)
    if not known or (only and not configured):
        assert r.rc == 2, f"use {name}: bad input:\n{r}"
        if not self.watched:  # a watch alongside writes on its own
            assert self.w.snapshot() == before, f"use {name}: bad input wrote:\n{r}"
        return
    if self.unconfirmed(r, before):
        self.reload_fleet()
        self.log_unknown = True
        return
    assert r.rc == 0, f"use {name}:\n{r}"
    assert f"→ {name}" in r.out, r
    self.reload_fleet()
    self.log_unknown = True  # taosync edited fleet.yaml (as forget and adopt do)
    self.after_fleet_edit()
    self.after_apply()


TaosyncMachine._add_gateway = _add_gateway
TaosyncMachine._move_client = _move_client
TaosyncMachine._rotate_work_key = _rotate_work_key
TaosyncMachine._use_gateway = _use_gateway
# a running watch keeps the environment it started with, which holds no work key yet
WatchMachine.rules_here = WatchMachine.rules_here - {"add_gateway", "move_client",
                                                     "rotate_work_key", "use_gateway"}


def test_named_gateways_keep_one_truth():
    """The machine and its invariants through one fixed sequence with a second named
    gateway, so every run drives it: add "work", move Claude Code and Codex onto it,
    apply, rotate its key (seen from a shell: never "nothing to do"), verify (each client
    at its own stand-in with its own key), `use default --only claude-code`, and back."""
    m = TaosyncMachine()

    step = m.fixed_step

    try:
        m.start()
        step(m._add_gateway)
        step(m._move_client, "claude-code")
        step(m._move_client, "codex")
        step(m.apply, False, True)
        settings = json.loads((m.w.home / ".claude/settings.json").read_text())
        assert settings["env"]["ANTHROPIC_BASE_URL"] == m.w.stub_work.root
        step(m._rotate_work_key)
        plan = m.w.run("plan", "--check")
        assert plan.rc == 1 and "nothing to do" not in plan.out, plan
        step(m.apply, True, True)
        assert any(r.path.startswith("/v1/messages") for r in m.w.stub_work.requests)
        step(m.verify)
        step(m._use_gateway, "default", "claude-code")
        assert "gateway" not in m.main["clients"]["codex"] or \
            m.main["clients"]["codex"]["gateway"] == "work"
        settings = json.loads((m.w.home / ".claude/settings.json").read_text())
        assert settings["env"]["ANTHROPIC_BASE_URL"] == m.w.stub.root
        step(m._use_gateway, "work", "gemini-cli")
        step(m.rotate_key)
        step(m.apply, False, True)
        step(m.rollback, True)
    finally:
        m.teardown()


def test_watch_takes_a_route_another_process_moved():
    """A sequence the exploration found: with watch running, the team file gains a server,
    verify runs, then the balanced route's choice fails, a one-shot verify moves the
    route and a one-shot apply writes the other candidate. Watch once judged that write
    as drift and put the failing model back (its render still held the old choice); the
    moved route is the fleet's now, so the files must stay on it (invariant b)."""
    m = WatchMachine()

    step = m.fixed_step

    try:
        m.start()
        m.check_after_every_step()
        step(m.cat, ".continue/config.yaml")
        step(m.team_server)
        step(m.verify)
        step(m.fail_choice)
    finally:
        m.teardown()
