"""``taosync env``: shell exports of the gateway URLs and route models.

``eval "$(taosync env)"`` (sh/bash/zsh), ``taosync env --shell fish | source``,
``taosync env --shell powershell | Invoke-Expression``. Prints TAOTOKEN_BASE_URL (the
root), TAOTOKEN_OPENAI_BASE_URL, TAOTOKEN_ANTHROPIC_BASE_URL, one TAOTOKEN_MODEL_<ROUTE>
per route (upper-cased, anything but A-Z0-9 → _), TAOTOKEN_MODEL (the default route's
model) and, only with --with-key, TAOTOKEN_API_KEY (the resolved key) and every variable
the rendered client files read the key or an MCP secret from (taosync.clients.variables:
``env_key``, ``api_key_env``, aider's OPENAI_API_KEY, an MCP ``${env:NAME}`` a client
expands), so that ``eval "$(taosync env --with-key)"`` in a shell start-up file is all a
client needs beside taosync's files. A route with
candidates exports the candidate chosen from the verify history. With
``gateway.gemini_base_url`` also Gemini CLI's own GOOGLE_GEMINI_BASE_URL (and GEMINI_API_KEY
with --with-key): what a headless run in a folder Gemini does not trust needs, since it
reads ``~/.gemini/.env`` only in trusted folders. Values are single-quoted for the shell,
so nothing in them is expanded. Each named gateway other than the default one gets
TAOTOKEN_<NAME>_BASE_URL, _OPENAI_BASE_URL, _ANTHROPIC_BASE_URL (_GEMINI_BASE_URL) and,
with --with-key, _API_KEY (docs/gateways.md).
"""

from __future__ import annotations

import re

import click

from taosync.settings import common_options, current

KEY_VAR = "TAOTOKEN_API_KEY"


def var_name(route: str) -> str:
    return "TAOTOKEN_MODEL_" + re.sub(r"[^A-Z0-9]", "_", route.upper())


def quote(value: str, shell: str) -> str:
    if shell == "fish":
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if shell == "powershell":
        # single-quoted strings are literal; ' doubles, and so do the typographic quotes
        out = value
        for q in ("'", "\u2018", "\u2019", "\u201a", "\u201b"):
            out = out.replace(q, q + q)
        return "'" + out + "'"
    return "'" + value.replace("'", "'\\''") + "'"


def line(name: str, value: str, shell: str) -> str:
    if shell == "fish":
        return f"set -gx {name} {quote(value, shell)}"
    if shell == "powershell":
        return f"$env:{name} = {quote(value, shell)}"
    return f"export {name}={quote(value, shell)}"


def variables(view: dict, key=None, warn=None) -> dict[str, str]:
    out = {
        "TAOTOKEN_BASE_URL": view["base_url"],
        "TAOTOKEN_OPENAI_BASE_URL": view["openai"],
        "TAOTOKEN_ANTHROPIC_BASE_URL": view["anthropic"],
    }
    owner: dict[str, str] = {}
    for route, model in view["routes"].items():
        name = var_name(route)
        if name in owner:
            if warn is not None:
                warn(f"routes {owner[name]!r} and {route!r} both become {name}; "
                     f"kept {owner[name]!r}")
            continue
        if name == "TAOTOKEN_MODEL_":
            continue
        owner[name] = route
        out[name] = model
    out["TAOTOKEN_MODEL"] = view["default_model"]
    if key is not None:
        out[KEY_VAR] = key.reveal()
    if view.get("gemini"):
        out["GOOGLE_GEMINI_BASE_URL"] = view["gemini"]
        if key is not None:
            out["GEMINI_API_KEY"] = key.reveal()
    if key is None:
        out = _without_userinfo(out, warn)
    return out


def named_variables(fleet, with_key: bool, warn=None) -> dict[str, str]:
    """TAOTOKEN_<NAME>_BASE_URL, _OPENAI_BASE_URL, _ANTHROPIC_BASE_URL (and, with
    ``with_key``, _API_KEY and _GEMINI_BASE_URL when set) for each gateway but the default
    one, whose URLs are the plain TAOTOKEN_* (docs/gateways.md)."""
    from taosync.fleet.gateways import env_prefix

    out: dict[str, str] = {}
    default = fleet.default_gateway_name()
    keys = fleet.gateway_keys()
    for name in fleet.gateways_all():
        if name == default:
            continue
        view = fleet.on_gateway(name)
        prefix = env_prefix(name)
        values = {f"{prefix}BASE_URL": view.gateway.base_url,
                  f"{prefix}OPENAI_BASE_URL": view.openai_url,
                  f"{prefix}ANTHROPIC_BASE_URL": view.anthropic_url}
        if view.gateway.gemini_base_url:
            values[f"{prefix}GEMINI_BASE_URL"] = view.gateway.gemini_base_url
        if with_key and name in keys:
            values[f"{prefix}API_KEY"] = keys[name].reveal()
        out.update(values if with_key else _without_userinfo(values, warn))
    return out


def _without_userinfo(values: dict[str, str], warn=None) -> dict[str, str]:
    """The URLs without their ``user:password@``: a credential, printed (as the key is)
    only with --with-key."""
    from taosync.fleet.logic import url_userinfo

    out = dict(values)
    for name, value in values.items():
        userinfo = url_userinfo(value)
        if userinfo:
            out[name] = value.replace(f"//{userinfo}@", "//", 1)
    dropped = [name for name in values if out[name] != values[name]]
    if dropped and warn is not None:
        warn(f"left the user:password out of {', '.join(dropped)} (a credential, as the key "
             "is); --with-key exports it")
    return out


@click.command("env", epilog="""\b
Examples:
  taosync env --shell powershell
  taosync env --profile work > .envrc      # direnv: this directory uses profile work
  taosync env --aliases >> ~/.bash_aliases # claude-work, codex-home, …
""")
@common_options
@click.option("--shell", "shell", type=click.Choice(["sh", "fish", "powershell"]),
              default="sh", show_default=True,
              help="Syntax of the exports (sh also suits bash and zsh).")
@click.option("--with-key", is_flag=True,
              help=f"Also export {KEY_VAR} with the resolved key, and every variable the "
              "clients' files read the key or an MCP secret from.")
@click.option("--aliases", is_flag=True,
              help="Print instead an alias (fish, PowerShell: a function) per profile and "
              "client binary, e.g. claude-work (docs/profiles.md).")
def env(shell: str, with_key: bool, aliases: bool) -> int:
    """Print shell exports of the gateway URLs and route models (the key only with --with-key)."""
    from taosync import ui
    from taosync.commands.route import load_view

    s = current()
    if aliases:
        from taosync.commands.profile_shell import aliases as profile_aliases

        lines = profile_aliases(shell, quote)
        if s.json:
            ui.emit_json({"aliases": lines})
        else:
            for text in lines:
                click.echo(text)
        return 0
    loaded, view = load_view(resolve_key=with_key)
    if s.verbosity >= 0:
        for p in loaded.warnings:
            ui.warn(p.format())
    values = variables(view, loaded.key if with_key else None, ui.warn)
    values.update(named_variables(loaded.fleet, with_key, ui.warn))
    if with_key:  # every variable taosync's files leave the key or an MCP secret to
        from taosync.clients.variables import exported

        values.update(exported(loaded.fleet, loaded.key, s.client_env()))
    profile = s.profile_name()
    if profile is not None:  # the shell uses the profile's isolated instance (direnv)
        from taosync.commands.profile_shell import home_note, isolation_exports

        values.update(isolation_exports(profile))
        if s.verbosity >= 0 and not s.json:
            ui.warn(home_note(profile))
    if s.json:
        ui.emit_json(values, reveal=with_key)  # the key itself, as asked
        return 0
    for name, value in values.items():
        click.echo(line(name, value, shell))
    return 0
