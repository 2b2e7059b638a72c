"""How each real client is run once, offline, against the stand-in: its command, its
one-shot arguments and the user's own non-key switches that keep a run from looking
anything up beyond loopback (the same ones each client's own real test uses).

A :class:`OneShot` knows nothing of keys: what a client gets as its key comes from
taosync's files and from the shell it runs in, which is what the reference-mode tests
vary. ``prepare(home)`` writes the user's own offline settings (aider's model metadata,
Qwen/Gemini's privacy switch) before taosync's apply, as a user would have them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from opencode_checks import OFFLINE

#: opencode and Kilo: no model catalogue, update or plugin lookups; any other request goes
#: to a dead loopback proxy
NODE_OFFLINE = OFFLINE
AIDER_QUIET = ["--no-check-update", "--no-show-model-warnings", "--analytics-disable",
               "--no-git", "--yes-always", "--no-pretty", "--no-stream"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _private(where: str) -> Callable[[Path, list[str]], None]:
    """The user's privacy switch (no usage statistics: nothing looked up beyond loopback)."""
    return lambda home, models: _write(home / where / "settings.json",
                                       '{"privacy": {"usageStatisticsEnabled": false}}')


def _aider_offline(home: Path, models: list[str]) -> None:
    """LiteLLM's model metadata, so aider looks nothing up (clients.md §9)."""
    _write(home / ".aider.model.metadata.json", json.dumps({
        f"openai/{m}": {"max_input_tokens": 8192, "max_output_tokens": 1024,
                        "input_cost_per_token": 0, "output_cost_per_token": 0,
                        "litellm_provider": "openai", "mode": "chat"} for m in models}))


@dataclass(frozen=True)
class OneShot:
    client: str  # its id in fleet.yaml
    binary: str  # its command
    args: tuple[str, ...]
    entry: dict = field(default_factory=dict)  # its fleet.yaml entry
    env: dict = field(default_factory=dict)  # the user's non-key switches
    prepare: Callable[[Path, list[str]], None] | None = None
    protocol_path: str = "/v1/chat/completions"
    isolate: bool = False  # looks beyond loopback by itself: run in a namespace


RUNS = [
    OneShot("claude-code", "claude", ("-p", "Reply with OK."), {"model": "main"},
            {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}, protocol_path="/v1/messages"),
    OneShot("codex", "codex", ("exec", "--skip-git-repo-check", "Reply with OK."),
            {"model": "main"}, protocol_path="/v1/responses"),
    OneShot("cline", "cline", ("Reply with OK.",), {"model": "main"}),
    OneShot("continue", "cn", ("-p", "Reply with OK."), {"roles": {"chat": "main"}}),
    OneShot("mistral-vibe", "vibe", ("-p", "Reply with OK."), {"model": "main"},
            isolate=True),
    OneShot("gptme", "gptme", ("--non-interactive", "Reply with OK."), {"model": "main"},
            isolate=True),
    OneShot("aider", "aider", (*AIDER_QUIET, "--message", "Reply with OK."), {"model": "main"},
            {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, _aider_offline),
    OneShot("llm", "llm", ("--no-log", "Reply with OK."), {"model": "main"}),
    OneShot("shell-gpt", "sgpt", ("--no-cache", "Reply with OK."), {"model": "main"}),
    OneShot("qwen-code", "qwen", ("Reply with OK",), {"model": "main"},
            prepare=_private(".qwen")),
    OneShot("gemini-cli", "gemini", ("--skip-trust", "-p", "Reply with OK"), {"model": "main"},
            prepare=_private(".gemini"), protocol_path="/v1beta/models/"),
    OneShot("opencode", "opencode", ("run", "Reply with OK."), {"model": "main"}, NODE_OFFLINE),
    OneShot("kilo", "kilo", ("run", "Reply with OK."), {"model": "main"}, NODE_OFFLINE),
    OneShot("hermes", "hermes", ("-z", "Reply with OK."), {"model": "main"}, isolate=True),
    OneShot("droid", "droid", ("exec", "Reply with OK."), {"model": "main"}, isolate=True),
    OneShot("pi", "pi", ("-p", "Reply with OK."), {"model": "main"},
            {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}),
]
BY_CLIENT = {run.client: run for run in RUNS}
