"""``taosync secret set NAME`` / ``taosync secret get REF``: the OS keyring, from taosync.

``set`` stores a value in the keyring (the ``keyring`` library: macOS Keychain, Secret
Service, Windows Credential Manager) under service ``--service`` (default ``taosync``) and
user NAME, and prints the reference fleet.yaml uses: ``${keyring:taosync/NAME}``. The value
is asked for on a terminal (not echoed, typed twice) or read from stdin's first line when
stdin is not one (``pass show x | taosync secret set gw``); it is never printed.

``get`` is what a client runs for its key under ``secrets: reference`` (Claude Code's
``apiKeyHelper``, Pi's ``!command`` hold ``<python> -m taosync secret get
'${keyring:…}'``): it prints the value of a password store reference on stdout, for the
client's pipe. It refuses a terminal (exit 2): a value shown on a screen is in its
scrollback; this command is for programs, not for looking at a key.
"""

from __future__ import annotations

import sys

import click

from taosync.errors import BadInput, WriteFailed
from taosync.settings import common_options

DEFAULT_SERVICE = "taosync"


@click.group("secret", epilog="""\b
Examples:
  taosync secret set gateway          # asks for the value, prints ${keyring:taosync/gateway}
  printf %s "$KEY" | taosync secret set gateway --service work
""")
@common_options
def secret():
    """Store a key in the OS keyring (set); print one for a client's key command (get)."""


@secret.command("set")
@common_options
@click.argument("name")
@click.option("--service", default=DEFAULT_SERVICE, show_default=True,
              help="The keyring service the value is stored under.")
def set_(name: str, service: str) -> int:
    """Store a value in the OS keyring as NAME and print the reference to use.

    The value is asked for (not echoed) on a terminal, else read from stdin's first
    line. fleet.yaml then says gateway.key: ${keyring:SERVICE/NAME}.
    """
    from taosync import ui
    from taosync.fleet.secrets import Reference
    from taosync.fleet.stores import StoreError, keyring_module, keyring_problem

    if not name.strip() or "/" in name or "}" in name or "}" in service:
        raise BadInput(f"NAME {name!r} must be a word without '/' or '}}' (the reference is "
                       f"${{keyring:SERVICE/NAME}})")
    if not service.strip():
        raise BadInput("--service must not be empty")
    try:
        keyring = keyring_module()
    except StoreError as exc:
        raise BadInput(str(exc)) from None
    value = _ask(name)
    try:
        keyring.set_password(service.strip(), name.strip(), value)
    except Exception as exc:  # the library's errors (locked, no backend) and its backends'
        raise WriteFailed(f"could not store {name} in the keyring: {keyring_problem(exc)}") \
            from None
    reference = Reference("keyring", f"{service.strip()}/{name.strip()}").describe()
    if ui.current().json:
        ui.emit_json({"reference": reference, "service": service.strip(), "user": name.strip()})
        return 0
    ui.echo(reference)
    ui.detail(f"stored in the keyring; in fleet.yaml: gateway: {{key: '{reference}'}}")
    return 0


def _ask(name: str) -> str:
    """The value: prompted twice without echo on a terminal, else stdin's first line."""
    if sys.stdin is not None and sys.stdin.isatty():
        value = click.prompt(f"Value for {name}", hide_input=True, confirmation_prompt=True,
                             err=True)
    else:
        line = sys.stdin.readline() if sys.stdin is not None else ""
        value = line.rstrip("\r\n")
    if not value.strip():
        raise BadInput("the value is empty: nothing stored")
    return value.strip()


@secret.command("get")
@common_options
@click.argument("reference")
def get(reference: str) -> int:
    """Print the value of a password store REFERENCE for a program (a client's key
    command): ${keyring:SERVICE/USER}, ${op://…} or ${pass:PATH}.

    Refuses a terminal: it is for a pipe, never for showing a key on a screen.
    """
    import os

    from taosync.fleet.secrets import SecretError, parse_reference, resolve
    from taosync.fleet.stores import KINDS

    ref = parse_reference(reference)
    if ref.kind not in KINDS:
        raise BadInput(f"{reference!r} is not a password store reference: "
                       f"${{keyring:SERVICE/USER}}, ${{op://VAULT/ITEM/FIELD}} or ${{pass:PATH}}")
    if sys.stdout.isatty():
        raise BadInput("secret get prints a key for a client's key command; stdout is a "
                       "terminal, where it would stay on screen: nothing printed")
    try:
        value = resolve(ref, environ=os.environ)
    except SecretError as exc:
        raise BadInput(f"cannot resolve {ref.describe()}: {exc}") from None
    sys.stdout.write(value.reveal() + "\n")
    sys.stdout.flush()
    return 0
