"""Every project-level file or ``.env`` a client reads that can change its URL, key or
model: the facts the key-redirection guard (:mod:`taosync.doctor.redirection`,
docs/guard.md) judges a repository by, from clients.md §18 and §15–17 (verified by
running each client against stand-in gateways). Data only: client ids are spelt here,
under ``clients/``, and nowhere above it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One key path of a project file that changes what the client talks to.

    ``path``: the key path (``*`` any mapping key or list element; in a ``.env``, the
    variable). ``changes``: ``url``, ``key``, ``key_var`` (names the variable the key is
    read from), ``model`` or ``config`` (moves the client's whole configuration).
    ``ignored``: the client refuses it at project level (why). ``loses_to``: a key path of
    the user's own file that beats it (aider's ``openai-api-base`` over a ``.env``'s
    ``OPENAI_API_BASE``)."""

    path: tuple[str, ...]
    changes: str
    ignored: str = ""
    loses_to: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectFile:
    """Files of one kind a client reads at project level.

    ``reach``: ``cwd`` (only in the directory the client starts in), ``down`` (from the
    git root down to that directory) or ``up`` (the nearest one from that directory
    upward). ``hides``: finding one hides the user-level file of that name entirely
    (Gemini CLI's ``~/.gemini/.env``)."""

    client: str
    names: tuple[str, ...]
    format: str
    reach: str
    settings: tuple[Setting, ...]
    hides: str = ""
    #: a key set at project level replaces the user's only when it is the same key path
    #: the user's file holds; a different one is sent beside it (Claude Code, §18.0 item 7)
    mixes: bool = False
    note: str = ""
    #: whose key a provider or custom-model entry the file adds gets: "" the user's (any
    #: entry) · "merged" only the user's when it is the user's own entry, merged key by key
    #: (opencode, Kilo) · "own" never the user's, unless it names the user's key variable
    #: (Factory Droid; Mistral Vibe 3.0.3, whose project ``[[providers]]`` entry replaces
    #: the user's of that name as a whole, ``api_key_env_var`` defaulting to "": proven by
    #: hand with the real binary — a same-named entry setting only ``api_base`` sends the
    #: prompt there without a key)
    entries: str = ""


def _s(path: str, changes: str, **kw: Any) -> Setting:
    return Setting(tuple(path.split(".")), changes, **kw)


_OPENCODE = (_s("provider.*.options.baseURL", "url"), _s("provider.*.options.apiKey", "key"),
             _s("model", "model"), _s("small_model", "model"))
_DOTENV_OPENAI = (_s("OPENAI_BASE_URL", "url"), _s("OPENAI_API_KEY", "key"),
                  _s("OPENAI_MODEL", "model"))
CODEX_IGNORED = "ignored at project level"

#: every project-level file or ``.env`` a client reads that can change its URL, key or
#: model (clients.md §18 and §15–17); Hermes, llm and shell-gpt read none
PROJECT_FILES: tuple[ProjectFile, ...] = (
    ProjectFile("claude-code", (".claude/settings.json", ".claude/settings.local.json"),
                "json", "cwd",
                (_s("env.ANTHROPIC_BASE_URL", "url"), _s("env.ANTHROPIC_AUTH_TOKEN", "key"),
                 _s("env.ANTHROPIC_API_KEY", "key"), _s("apiKeyHelper", "key"),
                 _s("model", "model"), _s("env.ANTHROPIC_MODEL", "model")),
                mixes=True,
                note="read only in the directory claude starts in (not from a subdirectory)"),
    ProjectFile("codex", (".codex/config.toml",), "toml", "down",
                (_s("model_provider", "url", ignored=CODEX_IGNORED),
                 _s("model_providers.*.base_url", "url", ignored=CODEX_IGNORED),
                 _s("openai_base_url", "url", ignored=CODEX_IGNORED),
                 _s("model", "model")),
                note="trusted projects only; a project can change the model, never the "
                     "endpoint or the key"),
    ProjectFile("opencode", ("opencode.json", "opencode.jsonc", ".opencode/opencode.json",
                             ".opencode/opencode.jsonc"), "jsonc", "down", _OPENCODE, entries="merged"),
    ProjectFile("kilo", ("kilo.json", "kilo.jsonc", "opencode.json", ".kilo/kilo.json",
                         ".kilo/opencode.json", ".kilocode/kilo.json"), "jsonc", "down",
                _OPENCODE, entries="merged"),
    ProjectFile("qwen-code", (".qwen/settings.json",), "json", "cwd",
                (_s("security.auth.baseUrl", "url"), _s("security.auth.apiKey", "key"),
                 _s("env.OPENAI_BASE_URL", "url"), _s("env.OPENAI_API_KEY", "key"),
                 _s("model.name", "model"))),
    ProjectFile("qwen-code", (".qwen/.env", ".env"), "dotenv", "up", _DOTENV_OPENAI,
                note="its OPENAI_* beat ~/.qwen/settings.json"),
    ProjectFile("gemini-cli", (".gemini/settings.json",), "json", "cwd",
                (_s("model.name", "model"),)),
    ProjectFile("gemini-cli", (".gemini/.env", ".env"), "dotenv", "up",
                (_s("GOOGLE_GEMINI_BASE_URL", "url"), _s("GEMINI_API_KEY", "key"),
                 _s("GEMINI_MODEL", "model")), hides="~/.gemini/.env"),
    ProjectFile("aider", (".aider.conf.yml",), "yaml", "down",
                (_s("openai-api-base", "url"), _s("openai-api-key", "key"),
                 _s("model", "model"))),
    ProjectFile("aider", (".env",), "dotenv", "down",
                (_s("AIDER_OPENAI_API_BASE", "url"), _s("AIDER_OPENAI_API_KEY", "key"),
                 _s("AIDER_MODEL", "model"),
                 _s("OPENAI_API_BASE", "url", loses_to=("openai-api-base",)),
                 _s("OPENAI_API_KEY", "key", loses_to=("openai-api-key",)))),
    ProjectFile("mistral-vibe", (".vibe/config.toml",), "toml", "down",
                (_s("providers.*.api_base", "url"), _s("providers.*.api_key_env_var", "key_var"),
                 _s("active_model", "model")), entries="own",
                note="read only in a folder the user trusted"),
    ProjectFile("continue", (".env",), "dotenv", "cwd",
                (_s("CONTINUE_GLOBAL_DIR", "config"),)),
    ProjectFile("cline", (".env", ".env.local"), "dotenv", "cwd",
                (_s("CLINE_DIR", "config"), _s("CLINE_DATA_DIR", "config"),
                 _s("CLINE_PROVIDER_SETTINGS_PATH", "config"))),
    ProjectFile("droid", (".factory/settings.json", ".factory/settings.local.json"), "json",
                "down", (_s("customModels.*.baseUrl", "url"), _s("customModels.*.apiKey", "key"),
                         _s("model", "model")), entries="own"),
    ProjectFile("pi", (".pi/settings.json",), "json", "cwd",
                (_s("defaultProvider", "model"), _s("defaultModel", "model"))),
    ProjectFile("gptme", ("gptme.toml", ".github/gptme.toml", "gptme.local.toml"), "toml",
                "cwd", (_s("env.MODEL", "model"), _s("env.*_API_KEY", "key"))),
)

#: clients with no project-level file that changes their URL, key or model
NO_PROJECT_FILES = {"hermes": "context files only (.hermes.md, AGENTS.md)",
                    "llm": "no project configuration", "shell-gpt": "no project configuration"}
