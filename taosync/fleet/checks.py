"""Steps 4, 6 and 7 of loading: URL normalisation, cross-checks (routes, slots,
reserved values, references), the key and MCP secrets, and scrubbing messages.
"""

from __future__ import annotations

import re
from typing import Iterable

from taosync.fleet import secrets as _secrets
from taosync.fleet.looks_secret import secret_name
from taosync.fleet.secrets import Secret, SecretError, parse_reference
from taosync.fleet.schema import client_entries
from taosync.fleet.logic import (FLEET_REFERENCE, MCP_SECRET_FIELDS, SLOT, SLOT_LIST, SLOT_MAP,
                                  McpSecret, mcp_secret_values, split_secret_reference,
                                  url_userinfo)
from taosync.fleet.problems import PathT, Problem, closest, did_you_mean
from taosync.fleet.schema_errors import _URL_FIELDS
from taosync.terminal import C0_C1





class CrossChecks:
    """Steps 4, 6 and 7 of :class:`~taosync.fleet.load._Loader`."""

    # ---- 4. URLs

    def normalise_urls(self, data: dict) -> None:
        gateway = data.get("gateway")
        if not isinstance(gateway, dict):
            return
        for name in _URL_FIELDS:
            url = gateway.get(name)
            if not isinstance(url, str):
                continue
            path = ("gateway", name)
            problem = _url_problem(url)
            if problem:
                self.error(path, problem)
                self._reported.add(path)
                continue
            if ":" in (url_userinfo(url) or ""):
                self.warn(path, "a literal password in fleet.yaml (user:password@ in the "
                          "URL): anyone who can read this file (or your dotfiles repo) has "
                          "it; taosync writes it only into files of mode 0600, but a header "
                          "(gateway.headers with ${env:NAME}) keeps it out of fleet.yaml")
            if name == "gemini_base_url" and url.rstrip("/").endswith("/v1"):
                self.warn(path, f"{_safe_url(url)} ends in /v1, but Gemini CLI appends "
                          f"/v1beta/models/… itself (…/v1/v1beta/…): give the root where "
                          f"the gateway serves Gemini's protocol, without /v1")
            if name != "base_url":
                continue  # overrides are exact URLs, taken as written
            root = url
            while root.endswith("/"):
                root = root[:-1]
            dropped_v1 = root.endswith("/v1")
            if dropped_v1:
                root = root[:-3].rstrip("/")
            if root == url or _url_problem(root):
                continue
            gateway[name] = root
            if dropped_v1:
                why = ("give the gateway root: taosync adds /v1 for the OpenAI-shaped clients "
                       "(Codex, Cline, Continue) and Claude Code appends /v1/messages itself; "
                       "a gateway that really lives under …/v1 takes openai_base_url and "
                       "anthropic_base_url")
            else:
                why = "dropped the trailing /: the clients append their own paths"
            self.warn(path, f"normalised {_safe_url(url)} to {_safe_url(root)}: {why}")

    # ---- 6. cross-checks

    def cross_check(self, data: dict) -> None:
        models = data.get("models")
        routes = data.get("routes", {})
        models_ok = isinstance(models, dict)
        routes_ok = isinstance(routes, dict)
        model_ids = list(models) if models_ok else []
        route_names = list(routes) if routes_ok else []

        if models_ok and routes_ok:
            for name, target in routes.items():
                if isinstance(target, str) and target not in models:
                    msg = (f"route '{name}' names '{target}', which is not in models"
                           f"{did_you_mean(target, model_ids)}")
                    if target in routes:
                        msg += " (a route names a model, not another route)"
                    self.error(("routes", name), msg)
                elif isinstance(target, dict):
                    self.check_candidates(name, target, models, routes)

        default = data.get("default_route")
        if isinstance(default, str) and routes_ok and default not in routes:
            if default in model_ids:
                msg = (f"'{default}' is a model id, not a route; add a route for it "
                       "under routes: and name that route here")
            else:
                msg = f"'{default}' is not a route{did_you_mean(default, route_names)}"
                if route_names:
                    msg += f" (routes: {', '.join(route_names)})"
            self.error(("default_route",), msg)

        clients = data.get("clients")
        if isinstance(clients, dict):
            for name, value in clients.items():
                if value is None and name in client_entries():
                    self.warn(("clients", name), f"empty, so taosync leaves {name} alone; "
                              f"write `{name}: {{}}` to configure it with defaults, or "
                              "`enabled: false` to make that explicit", at="key")
            if models_ok and routes_ok:
                for path, slot in _slots(clients):
                    if slot not in routes and slot not in models:
                        self.error(path, f"'{slot}' is neither a route nor a catalogue model"
                                   f"{did_you_mean(slot, route_names + model_ids)}")
            for path, why in _reserved(clients):
                self.error(path, why)
            for path, why in _unmet_requirements(clients, data):
                self.error(path, why)

        servers = data.get("mcp_servers")
        if isinstance(servers, dict) and models_ok and routes_ok:
            known = fleet_reference_names(model_ids, route_names)
            for name, server in servers.items():
                self.check_references(("mcp_servers", name), server, known)

    def check_candidates(self, name: str, target: dict, models: dict, routes: dict) -> None:
        """Each candidate of a choosing route is a catalogue model, named once."""
        candidates = target.get("candidates")
        if not isinstance(candidates, list):
            return  # the schema step reported it
        seen = set()
        for i, model in enumerate(candidates):
            if not isinstance(model, str):
                continue
            path = ("routes", name, "candidates", i)
            if model not in models:
                msg = (f"route '{name}' candidate '{model}' is not in models"
                       f"{did_you_mean(model, list(models))}")
                if model in routes:
                    msg += " (a candidate is a model, not another route)"
                self.error(path, msg)
            elif model in seen:
                self.error(path, f"route '{name}' names candidate '{model}' twice")
            seen.add(model)

    def check_references(self, path: PathT, value, known: list[str]) -> None:
        if isinstance(value, str):
            for m in FLEET_REFERENCE.finditer(value):
                ref = m.group(1)
                if ref not in known:
                    kind, dot, rest = ref.partition(".")
                    same_kind = [k.partition(".")[2] for k in known if dot and
                                 k.startswith(kind + ".")]
                    if same_kind:
                        match = closest(rest, same_kind)
                        match = match and f"{kind}.{match}"
                    else:
                        match = closest(ref, known)
                    if match:
                        guess = f"; did you mean ${{{match}}}?"
                    elif same_kind:
                        guess = f" ({kind}: {', '.join(same_kind)})"
                    else:
                        guess = ""
                    self.error(path, f"unknown reference ${{{ref}}}{guess}")
        elif isinstance(value, dict):
            for k, v in value.items():
                self.check_references(path + (k,), v, known)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.check_references(path + (i,), v, known)

    # ---- 7. the key

    def check_key(self, data: dict) -> None:
        gateway = data.get("gateway")
        raw = gateway.get("key") if isinstance(gateway, dict) else None
        if not isinstance(raw, str):
            return  # the schema step reported it
        path = ("gateway", "key")
        if not raw.strip():  # min_length lets "  " (or a no-break space) through
            self.error(path, "the key reference is blank; write ${env:NAME}, ${file:PATH}, "
                       "${cmd:COMMAND} or ${shell:COMMAND}")
            return
        ref = parse_reference(raw)
        self.key_ref = ref
        if ref.kind == "literal":
            name = _secrets.shell_style_variable(raw)
            if name is not None:
                self.error(path, f"{raw.strip()} is not expanded: taosync would write these "
                           f"characters as the key; did you mean `${{env:{name}}}`?")
                return
            if "${" in raw:
                self.error(path, "not a key reference taosync knows; write ${env:NAME}, "
                           "${file:PATH}, ${cmd:COMMAND} or ${shell:COMMAND}")
                return
            self.warn(path, "a literal key in fleet.yaml: anyone who can read this file (or "
                      "your dotfiles repo) has it; use ${env:NAME}, ${file:PATH} or "
                      "${cmd:COMMAND}")
            if self.resolve_key:
                self.key = Secret(raw.strip(), "literal")
            return
        if not self.resolve_key:
            return
        timeout = self.key_timeout if self.key_timeout is not None else _secrets.CMD_TIMEOUT
        try:
            self.key = _secrets.resolve(ref, environ=self.environ, home=self.home,
                                        timeout=timeout)
        except SecretError as exc:
            self.error(path, f"cannot resolve {ref.describe()}: {exc}")
        except (OSError, ValueError) as exc:
            self.error(path, f"cannot resolve {ref.describe()}: {type(exc).__name__}")

    def check_mcp_secrets(self, data: dict) -> None:
        """Resolve each key reference in an MCP ``env``/``headers`` value, as the key is:
        one that cannot be resolved is a located error (nothing is written)."""
        timeout = self.key_timeout if self.key_timeout is not None else _secrets.CMD_TIMEOUT
        for path, name in shell_style_mcp_secrets(data.get("mcp_servers")):
            self.error(path, f"reads {name} as a shell would, and taosync expands no such "
                       f"form (nor do most clients here): the server would get the "
                       f"characters themselves as its secret; did you mean `${{env:{name}}}`?")
        for path, text, parts in mcp_secret_values(data.get("mcp_servers")):
            if isinstance(parts, str):
                self.error(path, parts)
                continue
            if text in self.mcp_secrets:
                continue
            secret = self.resolve_secret(path, text, parts, timeout)
            if secret is not None:
                self.mcp_secrets[text] = secret

    def resolve_secret(self, path, text: str, parts, timeout: float) -> McpSecret | None:
        """A value holding one key reference (``parts``: prefix, reference, suffix) as
        an :class:`McpSecret`, resolved as the key is — a placeholder under ``--no-key``;
        None (and a located error) when it cannot be resolved."""
        prefix, ref, suffix = parts
        if not self.resolve_mcp:  # as --no-key renders the key: a placeholder
            return McpSecret(text, prefix, ref, suffix,
                             Secret(_secrets.NO_KEY_VALUE, "not resolved"))
        try:
            resolved = _secrets.resolve(ref, environ=self.environ, home=self.home,
                                        timeout=timeout)
        except SecretError as exc:
            reason = str(exc).replace("point gateway.key at", "use")
            self.error(path, f"cannot resolve {ref.describe()}: {reason}")
            return None
        except (OSError, ValueError) as exc:
            self.error(path, f"cannot resolve {ref.describe()}: {type(exc).__name__}")
            return None
        return McpSecret(text, prefix, ref, suffix, resolved)

    def check_gateway_headers(self, data: dict) -> None:
        """``gateway.headers``: each name an HTTP token and each value free of control
        characters (a CR/LF would smuggle a header of its own into the client's request);
        each value is a secret, resolved here as an MCP secret is (``${env:…}``,
        ``${file:…}``, ``${cmd:…}``); a literal that looks like a credential is warned
        about as a literal key is."""
        gateway = data.get("gateway")
        headers = gateway.get("headers") if isinstance(gateway, dict) else None
        if not isinstance(headers, dict):
            return
        timeout = self.key_timeout if self.key_timeout is not None else _secrets.CMD_TIMEOUT
        for name, text in headers.items():
            path = ("gateway", "headers", name)
            if not isinstance(name, str) or not _HTTP_TOKEN.fullmatch(name):
                self.error(path, f"{_shown_name(name)} is not an HTTP header name: use "
                           "letters, digits and !#$%&'*+.^_`|~- only (RFC 7230 token)",
                           at="key")
                continue
            if not isinstance(text, str):
                continue  # the schema step reported it
            bad = control_character(text)
            if bad:
                self.error(path, f"holds the control character {bad}: a header value is "
                           "one line of text (a CR or LF would add a header of its own "
                           "to every request)")
                continue
            try:
                parts = split_secret_reference(text)
            except ValueError as exc:
                self.error(path, str(exc))
                continue
            if parts is None:
                shell = _secrets.shell_style_variable(text, whole=False)
                if shell is not None:
                    self.error(path, f"reads {shell} as a shell would, and taosync expands "
                               f"no such form: every client would send the characters "
                               f"themselves; did you mean `${{env:{shell}}}`?")
                    continue
                if looks_like_credential(name, text):
                    self.warn(path, "a literal secret in fleet.yaml: anyone who can read "
                              "this file (or your dotfiles repo) has it; use ${env:NAME}, "
                              "${file:PATH} or ${cmd:COMMAND}")
                self.gateway_secrets[name] = Secret(text, "literal")
                continue
            secret = self.resolve_secret(path, text, parts, timeout)
            if secret is None:
                continue
            bad = control_character(secret.reveal())
            if bad:
                self.error(path, f"{secret.ref.describe()} gives a value holding the "
                           f"control character {bad}: a header value is one line of text")
                continue
            self.gateway_secrets[name] = secret
        references = [name for name, value in self.gateway_secrets.items()
                      if isinstance(value, McpSecret)]
        if references and _reference_mode_anywhere(data):
            self.warn(("gateway", "headers"), f"secrets: reference keeps the key off disk, "
                      f"not gateway.headers: {', '.join(references)} "
                      f"{'is' if len(references) == 1 else 'are'} written resolved into "
                      f"each client's file (mode 0600), as verify then sends them", at="key")

    def scrub(self) -> None:
        """No message may hold a secret: replace any occurrence with its redacted form."""
        values: list[Secret] = [*self.mcp_secrets.values(), *self.gateway_secrets.values()]
        if self.key is not None:
            values.append(self.key)
        if self.key_ref is not None and self.key_ref.kind == "literal" \
                and _secrets.shell_style_variable(self.key_ref.arg) is None:  # not a key
            values.append(Secret(self.key_ref.arg.strip()))
        values = [v for v in values if len(v.reveal()) >= 8]
        if not values:
            return
        for bucket in (self.errors, self.warnings):
            for i, p in enumerate(bucket):
                message = p.message
                for v in values:
                    message = v.scrub(message)
                if message != p.message:
                    bucket[i] = Problem(p.file, p.line, p.column, p.yaml_path, message,
                                        p.severity)


#: an RFC 7230 token: what a header name may be made of
_HTTP_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: C0 controls (CR, LF, NUL, TAB, ESC, …), DEL and the C1 controls
_CONTROL = re.compile(f"[{C0_C1}]")


def control_character(text: str) -> str | None:
    """``U+000A`` for the first control character in ``text``, or None."""
    match = _CONTROL.search(text)
    return f"U+{ord(match.group(0)):04X}" if match else None


def _shown_name(name) -> str:
    """A header name for a message: control characters escaped, never raw."""
    return ascii(name) if isinstance(name, str) else repr(name)


def _reference_mode_anywhere(data: dict) -> bool:
    """``secrets: reference`` for the fleet or for any client."""
    clients = data.get("clients") if isinstance(data.get("clients"), dict) else {}
    return data.get("secrets") == "reference" or any(
        isinstance(c, dict) and c.get("secrets") == "reference" for c in clients.values())


def looks_like_credential(name: str, value: str) -> bool:
    """A header value worth a warning when written literally: a secret-looking name
    (``…-Secret``, ``Authorization``, ``…-Auth``, ``…-Key``) or a credential-looking value
    (``Bearer …``, ``Basic …``, a known token prefix)."""
    from taosync.fleet.looks_secret import AUTH_SCHEME, looks_like_token

    return bool(secret_name(name) or re.search(r"auth", name, re.IGNORECASE)
                or AUTH_SCHEME.match(value.strip()) or looks_like_token(value.strip()))


def fleet_reference_names(model_ids: Iterable[str], route_names: Iterable[str]) -> list[str]:
    """Every ``${…}`` name :meth:`Fleet.reference_value` can satisfy for this catalogue."""
    return (["gateway.base_url", "gateway.key", "gateway.anthropic_base_url",
             "gateway.openai_base_url", "default_route"]
            + [f"routes.{r}" for r in route_names] + [f"models.{m}" for m in model_ids])


def shell_style_mcp_secrets(servers):
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


def _client_options(clients: dict):
    """(client id, its entry, option name, option schema) for every configured client."""
    for name, entry in client_entries().items():
        cfg = clients.get(name)
        if isinstance(cfg, dict):
            for option, prop in entry.get("properties", {}).items():
                yield name, cfg, option, prop


def _slots(clients: dict):
    """(path, value) of every client slot that names a route or a model (``x-slot`` in the
    schema: one value, a list of them, or a mapping's values)."""
    for name, cfg, option, prop in _client_options(clients):
        kind, value = prop.get("x-slot"), cfg.get(option)
        if kind == SLOT and isinstance(value, str):
            yield ("clients", name, option), value
        elif kind == SLOT_LIST and isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, str):
                    yield ("clients", name, option, i), v
        elif kind == SLOT_MAP and isinstance(value, dict):
            for key, v in value.items():
                if isinstance(v, str):
                    yield ("clients", name, option, key), v


def _reserved(clients: dict):
    """(path, why) of every client option set to a value its client reserves
    (``x-reserved`` in the schema, e.g. Codex's built-in provider id)."""
    for name, cfg, option, prop in _client_options(clients):
        why = prop.get("x-reserved", {}).get(cfg.get(option)) if isinstance(
            cfg.get(option), str) else None
        if why:
            yield ("clients", name, option), why


def _unmet_requirements(clients: dict, data: dict):
    """(path, why) of every enabled client whose fleet key it requires is missing
    (``x-requires`` in the schema: dotted fleet path → why, e.g. Gemini CLI's
    ``gateway.gemini_base_url``)."""
    for name, entry in client_entries().items():
        cfg = clients.get(name)
        if not isinstance(cfg, dict) or cfg.get("enabled") is False:
            continue
        for dotted, why in entry.get("x-requires", {}).items():
            value = data
            for part in dotted.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value in (None, ""):
                yield ("clients", name), f"needs {dotted}: {why}"


def _url_problem(url: str) -> str | None:
    from urllib.parse import urlsplit

    bad = control_character(url)  # before urlsplit, which drops a CR, LF or TAB unseen
    if bad:
        return f"{_safe_url(url)!r} holds the control character {bad}"
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"{_safe_url(url)!r} is not a URL"
    if parts.scheme.lower() not in ("http", "https"):
        return (f"must be an http:// or https:// URL, got {_safe_url(url)!r}"
                + (" (no scheme: add https://)" if "://" not in url else ""))
    if not parts.netloc or not parts.hostname:
        return f"{_safe_url(url)!r} has no host"
    if any(c.isspace() for c in url):
        return f"{_safe_url(url)!r} contains whitespace"
    return None


def _safe_url(url: str) -> str:
    """A URL for messages: credentials in it (``user:pass@``) are hidden, control
    characters escaped."""
    url = re.sub(r"(://)[^/@]*@", r"\1…@", url)
    url = _CONTROL.sub(lambda m: ascii(m.group(0))[1:-1], url)
    return url if len(url) <= 120 else url[:117] + "…"
