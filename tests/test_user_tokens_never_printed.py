"""Issue #23, Build 3: the user's own tokens are never printed, by any command.

A home holds the user's own credentials in files taosync writes into but does not own
all of: a GitHub token of their own MCP server in ``~/.claude.json`` (in its ``env``,
and one in its ``args``), API keys in Claude's ``settings.json`` ``env``, a Slack token
and a password in ``~/.gemini/.env``, a Hugging Face token in Vibe's ``.env``, a GitLab
token under an innocent name in Qwen's ``.env``, a key under a provider's name in llm's
``keys.json``. Every command of the CLI (the list comes from the click group: a new
command fails :func:`test_every_command_is_run` until it is added here) runs as a real
``python -m taosync`` process — text, ``--json`` and ``-v`` — before and after an apply
verified against a stand-in gateway, after the user hand-edits those files, through a
rollback, a redo, one watch cycle and a destroy. No token, nor any 10-character piece of
one, is in any stdout or stderr.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click

from conftest import ROOT, TEST_KEY, wait_until
from taosync.cli import COMMANDS, main

#: the user's own credentials (no two share a 10-character piece, nor with the key)
TOKENS = {
    "mcp_env": "ghp_R7kQ2mZx9VbN4tLw8HcJ5pYd3FgS1aEu",
    "mcp_args": "github_pat_11AbCdEf0_Gh1Ij2Kl3Mn4Op5Qr6St7Uv8Wx9",
    "openai": "sk-proj-Wq4Er7Ty1Ui8Op5As2Df9Gh6Jk3Lz0Xc",
    "own_name": "msvc.Ny3Bv6Cx9Zq2Wp5Em8Rt1Yu4Io7",
    "slack": "xoxb-2741936580-8305172946-Qm7Hn2Kd9Lx4Vc1Bz6Fj3Ws8",
    "password": "Tr0ub4dor&3-horse-bAttery",
    "hugging_face": "hf_Kp3Lm6Nq9Rs2Tu5Vw8Xy1Za4Bc7De0Fg",
    "gitlab": "glpat-Tz5Ky8Md1Nq4Rh7Jv0Lb3X",
    "llm_mistral": "Mst9Xq2Lw5Kv8Jz1Hy4Gt7Fs0Dr3",
    # what the user puts there by hand after taosync's apply
    "edited": "msvc.Pe2Ag5Dk8Fm1Hs4Jw7Lq0Zo3Ix6",
    "pasted_key": "AIzaSyB3k9Qw7Er5Ty1Ui3Op8As6Df4Gh2Jk0L",
}
MODELS = ["gpt-4o-mini", "claude-sonnet-4-20250514", "nvidia/deepseek-r1", "intel/llama-7b"]


def seed(home: Path) -> None:
    """The user's own files, before taosync ever ran."""
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"github": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github",
                                   "--pat", TOKENS["mcp_args"]],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKENS["mcp_env"]}}}}, indent=2) + "\n")
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(json.dumps({"env": {
        "OPENAI_API_KEY": TOKENS["openai"], "MY_SERVICE_TOKEN": TOKENS["own_name"],
        "MY_OWN_VAR": "mine"}}, indent=2) + "\n")
    (home / ".gemini").mkdir()
    (home / ".gemini/.env").write_text(f"SLACK_BOT_TOKEN={TOKENS['slack']}\n"
                                       f"DB_PASSWORD=\"{TOKENS['password']}\"\n")
    (home / ".vibe").mkdir()
    (home / ".vibe/.env").write_text(f"HF_TOKEN={TOKENS['hugging_face']}\n")
    (home / ".qwen").mkdir()
    (home / ".qwen/.env").write_text(f"export REPO_ACCESS={TOKENS['gitlab']}\n")
    llm = home / ".config/io.datasette.llm"
    llm.mkdir(parents=True)
    (llm / "keys.json").write_text(json.dumps({"mistral": TOKENS["llm_mistral"]}, indent=2))


def hand_edit(home: Path) -> None:
    """The user rotates their own token and pastes a key of their own where taosync
    writes the gateway key (drift at a secret-bearing key)."""
    settings = home / ".claude/settings.json"
    data = json.loads(settings.read_text())
    data["env"]["MY_SERVICE_TOKEN"] = TOKENS["edited"]
    settings.write_text(json.dumps(data, indent=2) + "\n")
    env = home / ".gemini/.env"
    env.write_text("".join(
        f"GEMINI_API_KEY={TOKENS['pasted_key']}\n" if line.startswith("GEMINI_API_KEY=")
        else line + "\n" for line in env.read_text().splitlines()))


def forbidden() -> dict[str, str]:
    """Every token, the gateway key and each 10-character piece of them → its name."""
    out = {}
    for name, token in {**TOKENS, "gateway key": TEST_KEY}.items():
        for i in range(len(token) - 9):
            out[token[i:i + 10]] = name
    return out


def leaked(text: str) -> list[str]:
    pieces = forbidden()
    low = text.lower()
    return sorted({f"{pieces[p]} ({p!r})" for p in pieces if p.lower() in low})


def variants(name: str) -> list[tuple[str, ...]]:
    """The command as it is, and with ``--json`` and ``-v`` where it has them (read from
    its click options)."""
    command = main.get_command(click.Context(main), name)
    flags = {opt for p in command.params for opt in p.opts}
    return [()] + [(f,) for f in ("--json", "-v") if f in flags]


class Home:
    """Runs ``python -m taosync`` in the seeded home and keeps every output."""

    def __init__(self, home: Path, fleet: Path, scratch: Path) -> None:
        self.home, self.fleet, self.scratch = home, fleet, scratch
        self.ran: set[str] = set()
        self.outputs: list[tuple[str, int, str]] = []

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "taosync", "--home", str(self.home), "-c",
                str(self.fleet), *args]

    def run(self, *args: str, every_variant: bool = True) -> None:
        name = args[0]
        self.ran.add(name)
        for extra in variants(name) if every_variant else [()]:
            proc = subprocess.run(self.argv(*args, *extra), cwd=ROOT, capture_output=True,
                                  text=True, timeout=300, stdin=subprocess.DEVNULL)
            self.keep(" ".join((*args, *extra)), proc.returncode, proc.stdout + proc.stderr)

    def keep(self, what: str, rc: int, text: str) -> None:
        assert rc != 70 and "Traceback" not in text, f"{what} crashed:\n{text}"
        self.outputs.append((what, rc, text))

    def output(self, what: str) -> str:
        return next(text for w, _, text in self.outputs if w == what)

    def fresh(self) -> None:
        """What a user runs first in a home taosync never wrote to."""
        for args in [("plan",), ("diff",), ("plan", "--check"), ("apply", "--dry-run"),
                     ("status",), ("managed",), ("doctor",), ("import",),
                     ("verify", "--stub", "--desired")]:
            self.run(*args)

    def read_only(self) -> None:
        """Every command that writes nothing the next step depends on."""
        for args in [("validate",), ("schema",), ("plan",), ("diff",), ("plan", "--check"),
                     ("apply", "--dry-run"), ("status",), ("managed",), ("log",),
                     ("stats",), ("doctor",), ("import",), ("route",), ("route", "fast"),
                     ("env",), ("verify", "--stub"), ("verify", "--stub", "--desired"),
                     ("rollback", "--dry-run"), ("destroy", "--dry-run"),
                     ("adopt", "--dry-run"), ("forget", "codex", "--dry-run"),
                     ("prune", "--dry-run"), ("completion", "bash"),
                     ("cat", "~/.claude/settings.json"), ("cat", "~/.gemini/.env"),
                     ("cat", "~/.claude.json"), ("where",), ("source-path",),
                     ("help", "apply"), ("help",),
                     ("secret", "get", "${env:TAOTOKEN_API_KEY}"),
                     ("use", "default", "--dry-run"),
                     ("exec", "nope", "--", "true")]:  # no such profile: said, exit 2
            self.run(*args)

    def watch_one_cycle(self) -> None:
        """``watch`` until it has re-asserted a hand edit, then SIGTERM."""
        self.ran.add("watch")
        for extra in variants("watch"):
            proc = subprocess.Popen(self.argv("watch", "--no-verify", *extra), cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, stdin=subprocess.DEVNULL)
            target = self.home / ".gemini/.env"
            try:
                wait_until(lambda: b"GEMINI_API_KEY" in target.read_bytes()
                           and TOKENS["pasted_key"] not in target.read_text(), 60,
                           "watch's first apply")
                hand_edit(self.home)
                wait_until(lambda: TOKENS["pasted_key"] not in target.read_text(), 60,
                           "watch to re-assert the gateway key")
                time.sleep(0.5)
            finally:
                proc.send_signal(signal.SIGTERM)
                text = proc.communicate(timeout=60)[0]
            self.keep(" ".join(("watch", *extra)), proc.returncode, text)

    def stub(self, log) -> tuple[subprocess.Popen, str]:
        """A stand-in gateway (``taosync stub``, ``-v``: it logs every request into
        ``log``) for apply's and verify's probes."""
        self.ran.add("stub")
        proc = subprocess.Popen(self.argv("stub", "--port", "0", "-v"), cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=log, text=True)
        return proc, proc.stdout.readline().strip()


def test_every_command_is_run():
    """Every command of the CLI (its click group) is run below: a new command fails here,
    named, until it is added (the run itself checks it too)."""
    source = Path(__file__).read_text()
    missing = [name for name in COMMANDS if f'("{name}"' not in source]
    assert not missing, f"commands this test does not run yet: {missing}"


def test_no_command_prints_the_users_own_tokens(tmp_path, home, fleet_file, monkeypatch):
    monkeypatch.setenv("EDITOR", "true")  # edit: an editor that saves nothing
    seed(home)
    h = Home(home, fleet_file, tmp_path)
    log = tmp_path / "stub.log"
    with log.open("w") as log_file:
        stub, root = h.stub(log_file)
    try:
        assert root.startswith("http://127.0.0.1:"), root
        fleet_file.write_text(fleet_file.read_text()
                              .replace("https://taotoken.net/api", root)
                              .replace("timeout: 20}", "timeout: 10, retries: 0}"))
        h.run("init", str(tmp_path / "starter.yaml"), every_variant=False)
        h.fresh()
        # the user's lines are shown as diff context: hidden, not absent
        assert "SLACK_BOT_TOKEN=(sensitive value)" in h.output("plan")
        assert '"MY_SERVICE_TOKEN": "(sensitive value)"' in h.output("plan")
        h.run("apply", "-v", every_variant=False)
        assert h.outputs[-1][1] == 0, h.outputs[-1][2]
        h.run("apply")  # nothing to do: the fast path's answer
        h.run("verify")
        hand_edit(home)
        h.read_only()
        h.run("apply", "--json", every_variant=False)
        h.run("rollback", "-v", every_variant=False)
        h.run("rollback", "--redo", "--json", every_variant=False)
        hand_edit(home)
        h.run("rollback", "--dry-run")
        h.run("adopt", "--yes", every_variant=False)
        h.run("edit")
        h.run("update")  # this fleet.yaml is in no git repository: refused, said so
        h.run("forget", "codex", "-v", every_variant=False)
        h.watch_one_cycle()
        h.run("prune", "--secrets", "-v", every_variant=False)
        h.run("destroy", "--yes", "-v", every_variant=False)
        h.run("log")
    finally:
        stub.send_signal(signal.SIGTERM)
        out = stub.communicate(timeout=30)[0]
    h.keep("stub -v", 0, out + log.read_text())
    assert set(COMMANDS) <= h.ran, sorted(set(COMMANDS) - h.ran)
    found = [(f"#{i} {what}", pieces, text) for i, (what, _, text) in enumerate(h.outputs)
             if (pieces := leaked(text))]
    assert not found, "printed:\n" + "\n".join(
        f"{what}: {', '.join(pieces)}\n{text}" for what, pieces, text in found)
    # the user's files still hold their own values where taosync does not write
    assert TOKENS["edited"] in (home / ".claude/settings.json").read_text()
    assert TOKENS["mcp_env"] in (home / ".claude.json").read_text()
