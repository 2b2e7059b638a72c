"""A failed probe → (code, cause, fix).

Codes: ``auth``, ``oauth``, ``model_not_found``, ``model_mismatch``, ``path``, ``proxy``,
``connect``, ``no_choices``, ``timeout``, ``tls``, ``dns``, ``rate_limited``,
``server_error``, ``bad_request``, ``http_error``, ``network``.

Some causes need one more look at the gateway, with the same client and headers: a 404
page is retried with the other ``/v1`` form to tell a doubled prefix from a missing one,
and an unknown model fetches ``/v1/models`` to suggest close ids. Every text leaves here
through :func:`scrub`, so the key never reaches a message.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
import socket
import ssl
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from taosync.protocols import registry
from taosync.hints import again


def protocol_title(name: str) -> str:
    """The name people know protocol ``name`` by (e.g. OpenAI Chat Completions)."""
    return registry.get(name).TITLE


@dataclass
class Diagnosis:
    """Why a probe failed and what to do. Its texts quote the gateway (error bodies, model
    ids, headers, exception texts): they are made safe to print here, once, for every
    way out (table, -v, --json, watch)."""

    code: str
    cause: str
    fix: str
    #: the client file and key path the failing value was read from (:func:`locate`),
    #: which ``cause`` starts with; probes that differ only there share one diagnosis
    where: str = ""

    def __post_init__(self) -> None:
        from taosync.terminal import untrusted

        self.cause, self.fix = untrusted(self.cause), untrusted(self.fix)
        self.where = untrusted(self.where)

    @property
    def shared(self) -> str:
        """The cause without the file and key path it was located at: what the verify
        table prints once for every probe that failed the same way."""
        lead = self.where + ": "
        return self.cause[len(lead):] if self.where and self.cause.startswith(lead) else self.cause

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "cause": self.cause, "fix": self.fix}


@dataclass
class Failure:
    """Everything known about the last attempt of a failed probe."""

    url: str
    protocol: str
    model: str
    status: int | None = None
    content_type: str = ""
    body: str = ""
    headers: dict[str, str] | None = None
    exc: BaseException | None = None
    completion: Any = None  # probes.Completion for a 2xx answer
    timeout: float = 0.0
    attempts: int = 1
    mismatch: str | None = None  # the model a 200 answer named instead of ours

    @property
    def data(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


# -- secrets ------------------------------------------------------------------------------

def scrub(text: str, key: Any) -> str:
    """``text`` without the key, nor the key stripped of stray quotes/whitespace."""
    if key is None or not text:
        return text
    text = key.scrub(text)
    raw = key.reveal()
    for variant in {raw.strip().strip("\"'`").strip(), "".join(raw.split())}:
        if len(variant) >= 8 and variant in text:
            text = text.replace(variant, key.redacted())
    return text


def key_problem(key: Any) -> str | None:
    """Why a key looks damaged (stray quotes, whitespace, invisible characters), or None."""
    if key is None:
        return None
    raw = key.reveal()
    if len(raw) >= 2 and raw[0] in "\"'`" and raw[-1] == raw[0]:
        return "is wrapped in quotes"
    if raw[:1] in "\"'`" or raw[-1:] in "\"'`":
        return "has a stray quote at one end"
    if any(ch in raw for ch in "\r\n"):
        return "spans more than one line"
    if any(ch.isspace() for ch in raw):
        return "contains whitespace"
    if any(not (32 < ord(ch) < 127) for ch in raw):
        return "contains an invisible or non-ASCII character (often pasted with it)"
    return None


def key_unsendable(key: Any) -> bool:
    """True when no HTTP header can carry the key (a newline, NUL, or non-ASCII)."""
    raw = key.reveal()
    return any(ch in raw for ch in "\r\n\0") or not raw.isascii()


def _key_source(key: Any) -> str:
    if key is None:
        return "gateway.key"
    source = getattr(key, "source", "") or ""
    if source not in ("literal", "stand-in") and not source.startswith("${"):
        return f"{source} ({key.redacted()})"  # read from a client's file
    where = "a literal in fleet.yaml" if source == "literal" else source
    return f"gateway.key ({where}, {key.redacted()})"


#: which value of a probe each diagnosis points at
_ROLE = {"path": "url", "connect": "url", "dns": "url", "tls": "url", "proxy": "url",
         "auth": "key", "oauth": "key", "model_not_found": "model", "model_mismatch": "model"}


def locate(diag: Diagnosis, origins: list[Any]) -> Diagnosis:
    """``diag`` naming the client file and key path its value was read from (on-disk
    probes); where that value is not what fleet.yaml renders, the fix is to apply again."""
    found = [o for o in origins if o.role == _ROLE.get(diag.code)]
    if not found:
        return diag
    where = "; ".join(dict.fromkeys(o.where for o in found))
    cause = f"{where}: {diag.cause}"
    if all(o.drifted for o in found):
        return Diagnosis(diag.code, cause, "the file differs from fleet.yaml there: "
                         f"`{again('apply')}` writes fleet.yaml's value back "
                         f"(`{again('verify --desired')}` probes fleet.yaml's)", where)
    return Diagnosis(diag.code, cause, diag.fix, where)


# -- reading answers -------------------------------------------------------------------------

def error_message(data: Any, body: str = "") -> str:
    """The human message of an error body, whatever its shape."""
    msg = ""
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = str(err.get("message") or err.get("msg") or err.get("detail") or "")
            if not msg and err.get("code"):
                msg = str(err.get("code"))
        elif isinstance(err, str):
            msg = err
        desc = data.get("error_description")
        if desc:
            msg = f"{msg}: {desc}" if msg else str(desc)
        if not msg:
            msg = str(data.get("message") or data.get("detail") or "")
    if not msg and body and "<html" not in body[:200].lower():
        msg = body.strip()
    msg = " ".join(msg.split())
    return msg[:240] + ("…" if len(msg) > 240 else "")


def _blob(data: Any, body: str, headers: dict[str, str] | None = None) -> str:
    text = body if data is None else json.dumps(data)
    if headers:
        text += " " + (headers.get("www-authenticate") or "")
    return text.lower()


def is_oauth(data: Any, body: str, headers: dict[str, str] | None = None) -> bool:
    blob = _blob(data, body, headers)
    return ("invalid_grant" in blob or "oauth token" in blob or "token has expired" in blob
            or "token expired" in blob or "access token expired" in blob
            or ("oauth" in blob and "expired" in blob))


def key_refused(data: Any, body: str) -> bool:
    """A Gemini-shaped refusal of the key itself (reason ``API_KEY_INVALID``, "API key not
    valid", or no key: "unregistered callers"), whatever the HTTP status."""
    blob = _blob(data, body)
    return ("api_key_invalid" in blob or "api key not valid" in blob
            or "unregistered callers" in blob)


def names_model(data: Any, body: str, model: str) -> bool:
    blob = _blob(data, body)
    if model.lower() in blob:
        return True
    return "model_not_found" in blob or bool(re.search(
        r"(unknown|invalid|unsupported|no such) model|model[^.]{0,40}(not found|does not exist|"
        r"not exist|unknown|not supported|unavailable)", blob))


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname or "", port


def is_local(host: str) -> bool:
    """Loopback or a private/link-local address (where local proxies live)."""
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def env_proxy_for(url: str) -> tuple[str, str] | None:
    """(variable, proxy URL) the environment routes ``url`` through, or None."""
    host, _ = _host_port(url)
    if is_local(host) and host in ("localhost", "127.0.0.1", "::1"):
        return None  # verify sends loopback requests directly
    proxies = urllib.request.getproxies_environment()
    scheme = urlsplit(url).scheme
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy:
        return None
    try:
        # in urllib.request since Python 2, though typeshed leaves it out
        if urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]
            return None
    except Exception:  # noqa: BLE001 - malformed NO_PROXY: assume proxied
        pass
    var = f"{scheme.upper()}_PROXY" if proxies.get(scheme) else "ALL_PROXY"
    return var, proxy


def _chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _exc_text(exc: BaseException | None) -> str:
    return " | ".join(f"{type(e).__name__}: {e}" for e in _chain(exc))


# -- the diagnosis -------------------------------------------------------------------------

def _endpoint_split(url: str, protocol: str) -> tuple[str, str, str] | None:
    """(origin, prefix before the endpoint, endpoint + query) — None if the URL has no
    recognisable endpoint."""
    parts = urlsplit(url)
    module = registry.get(protocol)
    path = parts.path.rstrip("/")
    start = module.endpoint_at(path)  # Gemini's has the model in the path
    if start is None:
        return None
    origin = f"{parts.scheme}://{parts.netloc}"
    tail = path[start:] + (f"?{parts.query}" if parts.query else "")
    return origin, path[:start], tail


async def _answers(client: Any, request: Any, url: str, timeout: float) -> bool:
    """Does ``url`` exist (anything but a 404/405 page)?"""
    try:
        resp = await client.request(request.method, url, headers=request.headers,
                                    json=request.body, timeout=timeout)
    except Exception:  # noqa: BLE001 - unreachable counts as "no"
        return False
    ctype = resp.headers.get("content-type", "")
    return resp.status_code not in (404, 405) and "html" not in ctype


async def _path(failure: Failure, client: Any, request: Any, timeout: float,
                how: str) -> Diagnosis:
    protocol, url = registry.get(failure.protocol), failure.url
    endpoint = protocol.SUFFIX
    split = _endpoint_split(url, failure.protocol)
    cause = f"{url} is {how}"
    if split is None:
        return Diagnosis("path", cause, f"the URL must end in {endpoint}; check "
                         "gateway.base_url is the gateway root (the part before /v1)")
    origin, prefix, tail = split
    if prefix.endswith("/v1/v1"):
        label, other = "doubled", prefix[:-3]
    elif not prefix.endswith("/v1"):
        label, other = "missing", prefix + "/v1"
    else:
        label, other = "extra", prefix[:-3]
    alternative = origin + other + tail
    works = await _answers(client, request, alternative, timeout)
    if not works:
        name = protocol.TITLE
        return Diagnosis("path", cause + f"; {alternative} does not exist either",
                         f"this host serves no {name} endpoint ({endpoint}) under "
                         f"{origin + prefix or origin}: check gateway.base_url is the "
                         f"gateway's API root, and that the gateway supports {name}")
    what = {"doubled": "/v1 is doubled", "missing": "/v1 is missing",
            "extra": "this gateway serves the endpoint without /v1"}[label]
    if label == "extra" and not protocol.ENDPOINT.startswith("/v1/"):
        what = f"/v1 is doubled (the client adds its own /{protocol.ENDPOINT.split('/')[1]})"
    cause += f"; {alternative} answers: {what}"
    if label == "doubled":
        fix = _doubled_fix(protocol, origin + other)
    else:
        fix = protocol.path_fix(origin, other, alternative)
    return Diagnosis("path", cause, fix + f"; then `{again('apply')}`")


def _doubled_fix(protocol: Any, right_base: str) -> str:
    """The fix for a doubled /v1, naming the field that produced it: loading drops a /v1
    from ``gateway.base_url``, so only the protocol's override can double it."""
    if protocol.BASE_SUFFIX:  # OpenAI-shaped: clients append to root + /v1
        field, root, right = "gateway.openai_base_url", right_base[:-3], right_base
        how = "taosync then gives OpenAI-shaped clients gateway.base_url + /v1"
    else:  # clients append /v1/… to the root themselves
        field, root = "gateway.anthropic_base_url", right_base[:-3]
        right = root
        how = "Claude Code appends /v1/messages itself"
    return (f"the URL comes from `{field}` (taosync drops a /v1 from gateway.base_url, so "
            f"only the override can double it): write `{field}: {right}` in fleet.yaml, or "
            f"remove it when `gateway.base_url: {root}` is the same gateway ({how})")


async def _model_ids(client: Any, request: Any, url: str, protocol: str,
                     timeout: float) -> list[str] | None:
    split = _endpoint_split(url, protocol)
    if split is None:
        return None
    origin, prefix, _ = split
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-type"}
    headers["Accept"] = "application/json"
    module = registry.get(protocol)
    try:
        resp = await client.get(origin + prefix + (module.MODELS_PATH or "/models"),
                                headers=headers, timeout=timeout)
        data = resp.json() if resp.status_code == 200 else None
    except Exception:  # noqa: BLE001 - no list: no suggestion
        return None
    return module.model_ids(data)


def suggest(model: str, ids: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` listed ids close to ``model`` — never ``model`` itself."""
    lowered = {i.lower(): i for i in ids if i.lower() != model.lower()}
    close = difflib.get_close_matches(model.lower(), list(lowered), n=n, cutoff=0.5)
    tail = model.lower().rsplit("/", 1)[-1]
    for i in lowered.values():
        if len(close) >= n:
            break
        if i.lower() not in close and (tail in i.lower() or i.lower().rsplit("/", 1)[-1] in tail):
            close.append(i.lower())
    return [lowered[c] for c in close]


async def _model_not_found(failure: Failure, client: Any, request: Any,
                           timeout: float) -> Diagnosis:
    model = failure.model
    msg = error_message(failure.data, failure.body)
    cause = f"the gateway does not know model `{model}` (HTTP {failure.status}: {msg})"
    ids = await _model_ids(client, request, failure.url, failure.protocol, timeout)
    where = "in fleet.yaml's models: (and the routes that name it)"
    if ids is not None and model.casefold() in {i.casefold() for i in ids}:
        return Diagnosis("model_not_found",
                         f"`{model}` is listed but refused: access or deployment (the gateway "
                         f"lists it, yet answered HTTP {failure.status}: {msg})",
                         "the id is right: check that this key may use it (plan, organisation, "
                         "region) and that the deployment behind the gateway is up, or route "
                         "these tasks to another model in fleet.yaml's routes:")
    if ids is None:
        fix = (f"use the id exactly as the gateway names it {where}; compare with the "
               f"gateway's model list (GET …/v1/models)")
    else:
        close = suggest(model, ids)
        if close:
            fix = f"did you mean {', '.join(f'`{c}`' for c in close)}? Write that id {where}"
        elif ids:
            sample = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
            fix = f"the gateway serves {len(ids)} models ({sample}); pick one {where}"
        else:
            fix = f"the gateway lists no models for this key; check the key's plan, or {where}"
    return Diagnosis("model_not_found", cause, fix + f", then `{again('apply')}`")


def _from_exception(failure: Failure) -> Diagnosis:
    import httpx

    exc = failure.exc
    host, port = _host_port(failure.url)
    text = _exc_text(exc)
    low = text.lower()
    timeout = failure.timeout
    proxy = env_proxy_for(failure.url)
    if isinstance(exc, (TimeoutError, httpx.TimeoutException)) or any(
            isinstance(e, TimeoutError) for e in _chain(exc)):
        if isinstance(exc, httpx.ConnectTimeout):
            cause = f"could not connect to {host}:{port} within {timeout:g} s"
        else:
            cause = f"no complete answer from {host}:{port} within {timeout:g} s"
        return Diagnosis("timeout", cause,
                         "if the model is just slow (a cold local backend loads on first use) "
                         "raise verify.timeout in fleet.yaml; otherwise check the gateway is up "
                         f"(`{again('doctor')}`)")
    if any(isinstance(e, socket.gaierror) for e in _chain(exc)) or any(s in low for s in (
            "name or service not known", "nodename nor servname", "getaddrinfo failed",
            "temporary failure in name resolution", "no address associated",
            "name resolution")):
        return Diagnosis("dns", f"the gateway host {host} does not resolve (DNS)",
                         "check the host name in gateway.base_url for typos; a VPN-only "
                         f"gateway needs the VPN up (`{again('doctor')}` checks DNS)")
    if any(isinstance(e, ssl.SSLError) for e in _chain(exc)) or any(s in low for s in (
            "ssl", "certificate", "tls")):
        if "wrong_version_number" in low or "wrong version number" in low or \
                "record layer" in low or "http_request" in low or "unknown protocol" in low:
            return Diagnosis("tls", f"{host}:{port} does not speak TLS (a plain-HTTP "
                             "server answered an https:// request)",
                             "write http:// in gateway.base_url, or use the gateway's TLS port")
        if "certificate_verify_failed" in low or "certificate verify failed" in low or \
                "self-signed" in low or "self signed" in low or "certificate" in low:
            reason = "expired" if "expired" in low else (
                "self-signed" if "self" in low and "signed" in low else
                "wrong host name" if "hostname" in low else "not trusted")
            return Diagnosis("tls", f"the TLS certificate of {host} is {reason}",
                             "if a corporate proxy re-signs TLS, point SSL_CERT_FILE at its CA "
                             "bundle; otherwise the gateway's certificate is broken — check "
                             "the host in gateway.base_url")
        return Diagnosis("tls", f"TLS handshake with {host}:{port} failed ({text[:160]})",
                         "check the scheme and port in gateway.base_url, and SSL_CERT_FILE")
    refused = any(isinstance(e, ConnectionRefusedError) for e in _chain(exc)) or \
        "connection refused" in low or "errno 111" in low or "connect call failed" in low
    if isinstance(exc, httpx.ProxyError) or (proxy and isinstance(exc, httpx.ConnectError)):
        var, url = proxy or ("HTTPS_PROXY", "")
        phost, pport = _host_port(url) if url else (host, port)
        return Diagnosis("proxy", f"local proxy failed — nothing listens on {phost}:{pport} "
                         f"({var}) or it refused the request", f"start the proxy, or unset "
                         f"{var} / add {host} to NO_PROXY")
    if isinstance(exc, httpx.ConnectError) and refused:
        if is_local(host):
            # the fleet's own address: the gateway (or a proxy in front of it) is down
            return Diagnosis("proxy", f"nothing listens on {host}:{port}",
                             f"start the gateway there (`{again(f'stub --port {port}')}` "
                             "serves a stand-in), or point gateway.base_url at one that runs")
        return Diagnosis("connect", f"{host}:{port} refused the connection",
                         "check the port in gateway.base_url; the gateway may be down")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return Diagnosis("server_error", f"the server closed the connection without a "
                         f"complete answer ({failure.attempts} attempt"
                         f"{'s' if failure.attempts != 1 else ''})",
                         "an overloaded gateway or a proxy dropping the request: retry later; "
                         "if it persists, check HTTPS_PROXY and the gateway's status")
    if isinstance(exc, httpx.ConnectError):
        return Diagnosis("connect", f"cannot connect to {host}:{port} ({text[:160]})",
                         "check gateway.base_url and your network")
    return Diagnosis("network", f"the request failed: {text[:200]}",
                     f"check gateway.base_url and your network (`{again('doctor')}`)")


def _classify_error(failure: Failure, status: int, data: Any, body: str, key: Any,
                    in_200: bool = False) -> Diagnosis | None:
    """auth / oauth / rate_limited / server_error from an error body, else None."""
    msg = error_message(data, body)
    where = " inside a 200 answer" if in_200 else ""
    if is_oauth(data, body, failure.headers):
        return Diagnosis("oauth", f"the gateway says the OAuth token expired "
                         f"(HTTP {status}{where}: {msg})",
                         "a login/OAuth token was sent where a gateway key was meant: point "
                         "gateway.key at the gateway's API key (not a `claude login`/ChatGPT "
                         f"token), then `{again('apply')}`; if the gateway really uses OAuth, log "
                         "in again")
    # Google's API refuses a key with 400 INVALID_ARGUMENT (or 403): the body says so
    refused = key_refused(data, body)
    if status in (401, 403) or refused:
        problem = key_problem(key)
        if status == 403 and not problem and not refused:
            return Diagnosis("auth", f"the key is refused for `{failure.model}` (HTTP 403"
                             f"{where}: {msg})",
                             "allow this model (or endpoint) for the key in the gateway's "
                             "dashboard, or route this task to a model the key may use")
        cause = f"the gateway rejected the key (HTTP {status}{where}: {msg})"
        if problem:
            return Diagnosis("auth", cause + f"; the key {problem}",
                             f"remove the stray characters where {_key_source(key)} "
                             f"reads it from, then `{again('apply')}`")
        return Diagnosis("auth", cause, f"check the key {_key_source(key)} resolves to: "
                         f"is it this gateway's key, not expired or revoked? Then `{again('apply')}`")
    if status == 429:
        retry = (failure.headers or {}).get("retry-after")
        return Diagnosis("rate_limited", f"the gateway kept answering 429 Too Many Requests "
                         f"after {failure.attempts} attempts{where}: {msg}",
                         "wait and verify again" + (f" (Retry-After: {retry} s)" if retry else "")
                         + "; if it persists the key's quota or rate limit is used up — check "
                         "the gateway dashboard, or raise verify.retries")
    if status >= 500:
        return Diagnosis("server_error", f"the gateway failed (HTTP {status}{where}) after "
                         f"{failure.attempts} attempt{'s' if failure.attempts != 1 else ''}: "
                         f"{msg}", f"a gateway/upstream problem for `{failure.model}`, not your "
                         "config: retry later, or route this task to another model")
    return None


async def diagnose(failure: Failure, *, client: Any = None, request: Any = None,
                   key: Any = None, timeout: float = 5.0) -> Diagnosis:
    """The diagnosis of ``failure``, every text scrubbed of ``key``."""
    diag = await _diagnose(failure, client, request, key, min(timeout, 5.0))
    return Diagnosis(diag.code, scrub(diag.cause, key), scrub(diag.fix, key),
                     scrub(diag.where, key))


async def _diagnose(failure: Failure, client: Any, request: Any, key: Any,
                    timeout: float) -> Diagnosis:
    if failure.exc is not None:
        return _from_exception(failure)
    status = failure.status or 0
    data, body = failure.data, failure.body
    ctype = failure.content_type.lower()
    if 200 <= status < 300:
        c = failure.completion
        if "html" in ctype:
            return Diagnosis("path", f"{failure.url} answered with a web page (text/html), "
                             "not the API", "gateway.base_url must be the gateway's API root, "
                             "not its website; then "
                             f"`{again('apply')}`")
        if failure.mismatch:
            return Diagnosis("model_mismatch", f"asked for `{failure.model}`, the gateway "
                             f"answered as `{failure.mismatch}`",
                             "the gateway aliases or reroutes this id: use the id it answers "
                             "with in fleet.yaml, or fix the alias on the gateway")
        if c is not None and c.error is not None:
            err = c.error if isinstance(c.error, dict) else {"message": str(c.error)}
            code = err.get("code")
            inner = code if isinstance(code, int) and 400 <= code < 600 else status
            wrapped = {"error": err}
            found = _classify_error(failure, inner, wrapped, json.dumps(wrapped), key, in_200=True)
            if found is not None and found.code != "server_error":
                return found
            if names_model(wrapped, "", failure.model) and inner in (400, 404):
                return await _model_not_found(failure, client, request, timeout)
            return Diagnosis("no_choices", "the gateway answered 200 with an error object "
                             f"instead of a completion: {error_message(wrapped)}",
                             f"the provider behind the gateway failed for `{failure.model}`: "
                             "retry later, or route this task to another model; clients show "
                             "this as an empty answer or a 'reading choices' error")
        problem = (c.problem if c is not None else None) or "the body is not a completion"
        return Diagnosis("no_choices", f"the gateway answered 200 but {problem}",
                         f"the gateway returned no completion for `{failure.model}` — clients "
                         "fail on this with 'Cannot read properties of undefined (reading "
                         "'choices')' or an empty reply: try the model in the gateway's "
                         f"playground, or check it supports {protocol_title(failure.protocol)}")
    if 300 <= status < 400:
        location = (failure.headers or {}).get("location", "")
        return Diagnosis("path", f"{failure.url} redirects ({status}) to {location or '?'}",
                         "clients do not follow redirects for API calls: write the redirected "
                         "URL's root in gateway.base_url (often http:// → https://)")
    found = _classify_error(failure, status, data, body, key)
    if found is not None:
        return found
    if status in (400, 404, 422) and data is not None and names_model(data, body, failure.model):
        return await _model_not_found(failure, client, request, timeout)
    if status in (404, 405):
        how = "a 404 page" if status == 404 else "not allowed (405)"
        if "html" in ctype or data is None or not names_model(data, body, failure.model):
            return await _path(failure, client, request, timeout, how)
    if status in (400, 422):
        return Diagnosis("bad_request", f"the gateway rejected the request (HTTP {status}: "
                         f"{error_message(data, body)})",
                         f"the gateway does not accept this {protocol_title(failure.protocol)} "
                         "request as the client sends it: check that it supports this API "
                         "(Codex needs /v1/responses, Claude Code needs /v1/messages)")
    return Diagnosis("http_error", f"HTTP {status}: {error_message(data, body) or 'no message'}",
                     "see the gateway's documentation for this status")
