"""Generated from the client modules by `python -m taosync.dev regenerate`: do not edit.

Every environment variable a client reads its files' location from, and the
bases (XDG, Windows) every one may move with."""

LOCATION_VARS = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "CLINE_DIR",
    "CLINE_DATA_DIR",
    "CLINE_MCP_SETTINGS_PATH",
    "CONTINUE_GLOBAL_DIR",
    "VIBE_HOME",
    "LLM_USER_PATH",
    "QWEN_HOME",
    "GEMINI_CLI_HOME",
    "XDG_CONFIG_HOME",
    "HERMES_HOME",
    "FACTORY_HOME_OVERRIDE",
    "PI_CODING_AGENT_DIR",
    "APPDATA",
    "LOCALAPPDATA",
)
