"""Step 7 of loading: the secrets — the key, each key reference in an MCP ``env`` or
``headers`` value, each ``gateway.headers`` value — checked and resolved, every one that
cannot be a located error; and what they resolved to.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from taosync.fleet import secrets as _secrets
from taosync.fleet.checks import control_character
from taosync.fleet.logic import (MCP_SECRET_FIELDS, McpSecret, mcp_secret_values,
                                  prefetch_stores, split_secret_reference)
from taosync.fleet.looks_secret import secret_name
from taosync.fleet.problems import PathT, closest
from taosync.fleet.secrets import Reference, Secret, SecretError, parse_reference

if TYPE_CHECKING:
    from taosync.fleet.problems import Reporter


class SecretSteps:
    """Resolve the fleet's secrets as ``--home``, the environment and the options say;
    report through ``report``. ``resolve_key=False`` checks the key reference without
    resolving it; ``resolve_mcp=False`` renders each MCP secret as the ``--no-key``
    placeholder."""

    def __init__(self, report: Reporter, *, home: Path, environ: Mapping[str, str] | None,
                 resolve_key: bool, resolve_mcp: bool, timeout: float | None) -> None:
        self.report = report
        self.home = home
        self.environ = environ
        self.resolve_key = resolve_key
        self.resolve_mcp = resolve_mcp
        self._timeout = timeout
        #: the resolved key (None: not resolved)
        self.key: Secret | None = None
        #: the key reference as written (None: the key is missing or blank)
        self.key_ref: Reference | None = None
        #: MCP env/header value text → its resolved secret
        self.mcp_secrets: dict[str, McpSecret] = {}
        #: gateway.headers name → its value as a secret (the default gateway's)
        self.gateway_secrets: dict[str, Secret] = {}
        #: gateway name → its headers as secrets, for every gateway
        self.gateway_secrets_by: dict[str, dict[str, Secret]] = {}
        #: gateway name → its resolved key, for each gateway but the default one (an
        #: McpSecret for a reference, so the render cache keeps the reference, not the key)
        self.gateway_keys: dict[str, Secret] = {}
        #: gateway name → its key reference as written, for each gateway but the default
        self.gateway_key_refs: dict[str, Reference] = {}

    @property
    def timeout(self) -> float:
        """Seconds a ``${cmd:…}``/``${shell:…}`` may take (``--key-timeout``)."""
        return self._timeout if self._timeout is not None else _secrets.CMD_TIMEOUT

    def run(self, data: dict) -> None:
        from taosync.fleet.gateways import default_name, named, paths

        self.prefetch(data)
        table, where, default = named(data), paths(data), default_name(data)
        found: tuple[Secret | None, Reference | None] = (None, None)
        for name, gateway in table.items():
            if name == default:
                found = self.check_key(gateway, where[name])
            else:
                key, ref = self.check_key(gateway, where[name])
                if ref is not None:
                    self.gateway_key_refs[name] = ref
                if key is not None:
                    raw = gateway["key"]
                    self.gateway_keys[name] = key if ref is None or ref.kind == "literal" \
                        else McpSecret(raw, "", ref, "", key)
        self.key, self.key_ref = found
        self.check_mcp_secrets(data)
        for name, gateway in table.items():
            self.gateway_secrets_by[name] = self.check_gateway_headers(gateway, where[name],
                                                                       data)
        self.gateway_secrets = self.gateway_secrets_by.get(default or "", {})

    def prefetch(self, data: dict) -> None:
        """Every 1Password reference of the fleet (key, MCP secrets, gateway headers) read
        in one call before any is resolved, so one unlock serves the run (fleet/stores.py);
        what fails is reported where each reference stands, as it is resolved."""
        from taosync.fleet.gateways import named

        gateways = list(named(data).values())
        keys = [g.get("key") for g in gateways]
        refs = [parse_reference(k) for k in keys if self.resolve_key and isinstance(k, str)]
        texts: list[str] = []
        if self.resolve_mcp:
            texts = [text for _, text, _ in mcp_secret_values(data.get("mcp_servers"))]
            for gateway in gateways:
                headers = gateway.get("headers")
                if isinstance(headers, dict):
                    texts += [v for v in headers.values() if isinstance(v, str)]
        prefetch_stores(refs, texts, self.environ if self.environ is not None else os.environ,
                        self.timeout)

    def known(self) -> list[Secret]:
        """Every secret a message must not hold: what was resolved, and a literal key."""
        values: list[Secret] = [*self.mcp_secrets.values(), *self.gateway_secrets.values()]
        for headers in self.gateway_secrets_by.values():
            values += headers.values()
        values += self.gateway_keys.values()
        if self.key is not None:
            values.append(self.key)
        for ref in (self.key_ref, *self.gateway_key_refs.values()):
            if ref is not None and ref.kind == "literal" \
                    and _secrets.shell_style_variable(ref.arg) is None:  # not a key
                values.append(Secret(ref.arg.strip()))
        return values

    def check_key(self, gateway: dict, at: PathT = ("gateway",)
                  ) -> tuple[Secret | None, Reference | None]:
        """``gateway.key`` (or a named gateway's key, at ``at``): a reference taosync
        knows, resolved (a literal is warned about). Returns (key, reference)."""
        self.key_ref = None
        self.key = None
        self._check_key(gateway, at)
        return self.key, self.key_ref

    def _check_key(self, gateway: Any, at: PathT) -> None:
        raw = gateway.get("key") if isinstance(gateway, dict) else None
        if not isinstance(raw, str):
            return  # the schema step reported it
        path = (*at, "key")
        if not raw.strip():  # min_length lets "  " (or a no-break space) through
            self.report.error(path, f"the key reference is blank; write {_secrets.FORMS}")
            return
        ref = parse_reference(raw)
        self.key_ref = ref
        if ref.kind == "literal":
            name = _secrets.shell_style_variable(raw)
            if name is not None:
                self.report.error(path, f"{raw.strip()} is not expanded: taosync would write these "
                                  f"characters as the key; did you mean `${{env:{name}}}`?")
                return
            if "${" in raw:
                self.report.error(path, "not a key reference taosync knows"
                                  + (_reference_hint(raw) or f"; write {_secrets.FORMS}"))
                return
            self.report.warn(path, "a literal key in fleet.yaml: anyone who can read this file (or "
                             "your dotfiles repo) has it; use ${env:NAME}, ${file:PATH} or "
                             "${cmd:COMMAND}")
            if self.resolve_key:
                self.key = Secret(raw.strip(), "literal")
            return
        if not self.resolve_key:
            return
        try:
            self.key = _secrets.resolve(ref, environ=self.environ, home=self.home,
                                        timeout=self.timeout)
        except SecretError as exc:
            self.report.error(path, f"cannot resolve {ref.describe()}: "
                              f"{_near_variable(str(exc), ref, self.environ)}")
        except (OSError, ValueError) as exc:
            self.report.error(path, f"cannot resolve {ref.describe()}: {type(exc).__name__}")

    def check_mcp_secrets(self, data: dict) -> None:
        """Resolve each key reference in an MCP ``env``/``headers`` value, as the key is:
        one that cannot be resolved is a located error (nothing is written)."""
        for path, name in shell_style_mcp_secrets(data.get("mcp_servers")):
            self.report.error(path, f"reads {name} as a shell would, and taosync expands no "
                              f"such form (nor do most clients here): the server would get "
                              f"the characters themselves as its secret; did you mean "
                              f"`${{env:{name}}}`?")
        for path, text, parts in mcp_secret_values(data.get("mcp_servers")):
            if isinstance(parts, str):
                self.report.error(path, parts)
                continue
            if text in self.mcp_secrets:
                continue
            secret = self.resolve_secret(path, text, parts)
            if secret is not None:
                self.mcp_secrets[text] = secret

    def resolve_secret(self, path: PathT, text: str,
                       parts: tuple[str, Reference, str]) -> McpSecret | None:
        """A value holding one key reference (``parts``: prefix, reference, suffix) as
        an :class:`McpSecret`, resolved as the key is — a placeholder under ``--no-key``;
        None (and a located error) when it cannot be resolved."""
        prefix, ref, suffix = parts
        if not self.resolve_mcp:  # as --no-key renders the key: a placeholder
            return McpSecret(text, prefix, ref, suffix,
                             Secret(_secrets.NO_KEY_VALUE, "not resolved"))
        try:
            resolved = _secrets.resolve(ref, environ=self.environ, home=self.home,
                                        timeout=self.timeout)
        except SecretError as exc:
            reason = _near_variable(str(exc), ref, self.environ).replace(
                "point gateway.key at", "use")
            self.report.error(path, f"cannot resolve {ref.describe()}: {reason}")
            return None
        except (OSError, ValueError) as exc:
            self.report.error(path, f"cannot resolve {ref.describe()}: {type(exc).__name__}")
            return None
        return McpSecret(text, prefix, ref, suffix, resolved)

    def check_gateway_headers(self, gateway: Any, at: PathT, data: dict
                              ) -> dict[str, Secret]:
        """``gateway.headers``: each name an HTTP token and each value free of control
        characters (a CR/LF would smuggle a header of its own into the client's request);
        each value is a secret, resolved here as an MCP secret is (``${env:…}``,
        ``${file:…}``, ``${cmd:…}``); a literal that looks like a credential is warned
        about as a literal key is. Returns header name → its value as a secret."""
        out: dict[str, Secret] = {}
        headers = gateway.get("headers") if isinstance(gateway, dict) else None
        if not isinstance(headers, dict):
            return out
        for name, text in headers.items():
            path = (*at, "headers", name)
            if not isinstance(name, str) or not _HTTP_TOKEN.fullmatch(name):
                self.report.error(path, f"{_shown_name(name)} is not an HTTP header name: use "
                                  "letters, digits and !#$%&'*+.^_`|~- only (RFC 7230 token)",
                                  at="key")
                continue
            if not isinstance(text, str):
                continue  # the schema step reported it
            bad = control_character(text)
            if bad:
                self.report.error(path, f"holds the control character {bad}: a header value is "
                                  "one line of text (a CR or LF would add a header of its own "
                                  "to every request)")
                continue
            try:
                parts = split_secret_reference(text)
            except ValueError as exc:
                self.report.error(path, str(exc))
                continue
            if parts is None:
                shell = _secrets.shell_style_variable(text, whole=False)
                if shell is not None:
                    self.report.error(path, f"reads {shell} as a shell would, and taosync expands "
                                      f"no such form: every client would send the characters "
                                      f"themselves; did you mean `${{env:{shell}}}`?")
                    continue
                if looks_like_credential(name, text):
                    self.report.warn(path, "a literal secret in fleet.yaml: anyone who can read "
                                     "this file (or your dotfiles repo) has it; use ${env:NAME}, "
                                     "${file:PATH} or ${cmd:COMMAND}")
                out[name] = Secret(text, "literal")
                continue
            secret = self.resolve_secret(path, text, parts)
            if secret is None:
                continue
            bad = control_character(secret.reveal())
            if bad:
                self.report.error(path, f"{secret.ref.describe()} gives a value holding the "
                                  f"control character {bad}: a header value is one line of text")
                continue
            out[name] = secret
        references = [name for name, value in out.items() if isinstance(value, McpSecret)]
        if references and _reference_mode_anywhere(data):
            self.report.warn((*at, "headers"), f"secrets: reference keeps the key off disk, "
                             f"not gateway.headers: {', '.join(references)} "
                             f"{'is' if len(references) == 1 else 'are'} written resolved into "
                             f"each client's file (mode 0600), as verify then sends them", at="key")
        return out


#: an RFC 7230 token: what a header name may be made of
_HTTP_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _shown_name(name: object) -> str:
    """A header name for a message: control characters escaped, never raw."""
    return ascii(name) if isinstance(name, str) else repr(name)


def _reference_mode_anywhere(data: dict) -> bool:
    """``secrets: reference`` for the fleet or for any client."""
    raw = data.get("clients")
    clients: dict = raw if isinstance(raw, dict) else {}
    return data.get("secrets") == "reference" or any(
        isinstance(c, dict) and c.get("secrets") == "reference" for c in clients.values())


def looks_like_credential(name: str, value: str) -> bool:
    """A header value worth a warning when written literally: a secret-looking name
    (``…-Secret``, ``Authorization``, ``…-Auth``, ``…-Key``) or a credential-looking value
    (``Bearer …``, ``Basic …``, a known token prefix)."""
    from taosync.fleet.looks_secret import AUTH_SCHEME, looks_like_token

    return bool(secret_name(name) or re.search(r"auth", name, re.IGNORECASE)
                or AUTH_SCHEME.match(value.strip()) or looks_like_token(value.strip()))


def shell_style_mcp_secrets(servers: object) -> Iterator[tuple[PathT, str]]:
    """(path, NAME) for each MCP ``env``/``headers`` value that reads a variable in a
    form taosync does not expand (``$NAME``, ``${NAME}``, ``{env:NAME}``: see
    :func:`~taosync.fleet.secrets.shell_style_variable`), when it is a secret: its own name
    or the variable's looks like one (``Authorization``, ``GITHUB_TOKEN``). Any other
    ``${…}`` (``HOME_DIR: ${HOME}``) is written as it is, as README promises."""
    if not isinstance(servers, dict):
        return
    for server_name, server in servers.items():
        if not isinstance(server, dict):
            continue
        for field in MCP_SECRET_FIELDS:
            values = server.get(field)
            if not isinstance(values, dict):
                continue
            for var, text in values.items():
                if not isinstance(text, str):
                    continue
                name = _secrets.shell_style_variable(text, whole=False)
                if name is not None and (secret_name(str(var)) or secret_name(name)):
                    yield ("mcp_servers", server_name, field, var), name


def _reference_hint(raw: str) -> str:
    """Why ``raw`` (holding ``${``) is no reference, when that can be told: a kind in
    the wrong case or mistyped (``${ENV:X}``, ``${evn:X}``), or no closing ``}`` (a
    `` #`` in an unquoted value starts a YAML comment and cuts the value there)."""
    text = raw.strip()
    if text.startswith("${") and "}" not in text:
        return ("; it has no closing '}' — a ' #' in an unquoted value starts a YAML "
                "comment and cuts the value there: quote the value (key: \"${cmd:… #…}\")")
    match = re.match(r"\$\{([A-Za-z_-]+):(.*)\}$", text, re.DOTALL)
    if match is None:
        return ""
    meant = closest(match.group(1), _secrets.KINDS)
    return f"; did you mean ${{{meant}:{match.group(2)}}}?" if meant else ""


def _near_variable(message: str, ref: Reference, environ: Mapping[str, str] | None) -> str:
    """``message`` (an unset ``${env:NAME}``) naming the set variable NAME is most likely
    a slip of — its name only, never its value."""
    if ref.kind != "env" or "is not set;" not in message:
        return message
    import os

    near = closest(ref.arg, os.environ if environ is None else environ)
    return message.replace("is not set;", f"is not set (did you mean {near}, which is set?);",
                           1) if near else message
