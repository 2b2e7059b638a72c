"""``taosync stub``: serve the stand-in gateway on loopback until Ctrl-C."""

from __future__ import annotations

import os

import click

from taosync.errors import BadInput
from taosync.settings import common_options, current
from taosync.commands.route import complete_model


@click.command("stub", epilog="Faults (KIND[=ARG][@MODEL]): unauthorized, forbidden, oauth, "
               "unknown_model, no_choices, error_in_200, rate_limited[=N], server_error[=N], "
               "status=CODE, close, delay=SECONDS, answer_as=MODEL.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--key", "key_value", metavar="KEY",
              help="The only key accepted (prefer --key-env: a command line is visible to "
                   "other users).")
@click.option("--key-env", metavar="NAME", help="Accept the key in environment variable NAME.")
@click.option("--model", "models", multiple=True, metavar="ID", shell_complete=complete_model,
              help="A model the stand-in serves (repeatable; default: fleet.yaml's catalogue "
                   "if there is one, else any model).")
@click.option("--fault", "faults", multiple=True, metavar="SPEC",
              help="Fail in one way, globally or @MODEL (repeatable), e.g. unknown_model@gw-small.")
@click.option("--prefix", default="", metavar="PATH",
              help="Serve under this path (root = http://127.0.0.1:PORT/PATH).")
@common_options
def stub(port: int, key_value: str | None, key_env: str | None, models: tuple[str, ...],
         faults: tuple[str, ...], prefix: str) -> int:
    """Serve a stand-in gateway on loopback (for demos and tests).

    Anthropic Messages (/v1/messages, /v1/messages/count_tokens), OpenAI Responses
    (/v1/responses), Chat Completions (/v1/chat/completions) and Gemini
    (/v1beta/models/MODEL:generateContent, :streamGenerateContent), streaming and not, and
    /v1/models; it checks the key. Key: --key, --key-env, else the fleet's key when
    fleet.yaml resolves one, else any key is accepted. Prints the root URL to put in
    gateway.base_url, then serves until Ctrl-C.
    """
    import json

    from taosync import ui
    from taosync.stub import Fault, Stub

    s = current()
    try:
        parsed = [Fault.parse(f) for f in faults]
    except ValueError as exc:
        raise BadInput(f"--fault: {exc}") from None
    if key_value and key_env:
        raise BadInput("give --key or --key-env, not both")
    key = key_value
    key_note = "the key from --key"
    if key_env:
        key = os.environ.get(key_env, "").strip()
        if not key:
            raise BadInput(f"--key-env {key_env}: the variable is not set or empty")
        key_note = f"the key in ${key_env}"
    catalogue = list(models) or None
    if key is None or catalogue is None:
        loaded = _fleet(s, resolve_key=key is None)
        if loaded is not None:
            if catalogue is None and loaded.fleet is not None:
                catalogue = list(loaded.fleet.models)
            if key is None and loaded.key is not None:
                key = loaded.key.reveal()
                key_note = f"the fleet's key ({loaded.key.redacted()})"
    if key is None:
        key_note = "any key"
    server = Stub(key=key, models=catalogue, faults=parsed, port=port, prefix=prefix)
    try:
        server.bind()
    except OSError as exc:
        raise BadInput(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    previous = _stop_on_signals()  # before the root is printed: whoever reads it may signal
    try:
        if s.verbosity > 0:
            server.log = lambda line: click.echo(ui.untrusted(line), err=True)
        if s.json:
            click.echo(json.dumps({"ok": True, "exit_code": 0,
                                   "format_version": ui.JSON_FORMAT_VERSION, "root": server.root, "openai_base_url": server.root + "/v1",
                                   "models": catalogue, "faults": [str(f) for f in parsed]}))
        else:
            click.echo(server.root)
            ui.problem(f"stand-in gateway on {server.root} (OpenAI: {server.root}/v1); accepts "
                       f"{key_note}; models: {', '.join(catalogue) if catalogue else 'any'}"
                       + (f"; faults: {', '.join(str(f) for f in parsed)}" if parsed else "")
                       + "; Ctrl-C stops it")
        import sys

        sys.stdout.flush()
        server.serve_forever()
    except (_Stopped, KeyboardInterrupt):
        pass
    finally:
        server.stop()
        _restore_signals(previous)
    return 0


class _Stopped(BaseException):
    """SIGINT or SIGTERM arrived: leave ``serve_forever`` (the socket is then closed).

    A BaseException, as KeyboardInterrupt is: socketserver catches ``Exception`` around
    each request it dispatches, and a signal landing there was swallowed (seen under load).
    """


def _stop_on_signals() -> dict:
    """Stop cleanly on SIGINT and SIGTERM with handlers of its own: a shell gives a job it
    starts in the background SIGINT ignored, Python then never raises KeyboardInterrupt,
    and the stub outlived the shell (or test) that started it. Returns what to restore."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    stopping: list[int] = []

    def stop(signum, frame):
        if not stopping:  # once: a second signal must not interrupt the clean-up
            stopping.append(signum)
            raise _Stopped

    return {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}


def _restore_signals(previous: dict) -> None:
    import signal

    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _fleet(s, *, resolve_key: bool):
    from taosync.errors import TaosyncError

    try:
        path = s.config_path()
        if not path.exists():
            return None
        from taosync.fleet.load import load_fleet

        try:
            return load_fleet(path, home=s.home_dir, resolve_key=resolve_key,
                              profile=s.profile_name())
        except TaosyncError:
            if not resolve_key:
                return None
            return load_fleet(path, home=s.home_dir, resolve_key=False,
                              profile=s.profile_name())
    except TaosyncError:
        return None
