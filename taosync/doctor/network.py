"""``taosync doctor``'s checks of the machine rather than the files: local runtimes,
proxies and DNS of the gateway host, and whether the gateway is local (the runtime checks
only make sense then). One :class:`Check` per line of the report."""

from __future__ import annotations

import concurrent.futures
import ipaddress
import shutil
import socket
import subprocess
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from taosync.clients.base import safe_url

#: backend label → (name, argv) of the commands that show its local runtime answers
RUNTIMES: dict[str, list[tuple[str, list[str]]]] = {
    "cuda": [("nvidia-smi", ["nvidia-smi", "-L"]), ("nvcc", ["nvcc", "--version"])],
    "oneapi": [("sycl-ls", ["sycl-ls"])],
    "rocm": [("rocm-smi", ["rocm-smi", "--showproductname"])],
}
RUN_TIMEOUT = 5.0
DNS_TIMEOUT = 3.0
PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")


@dataclass
class Check:
    section: str
    name: str
    status: str  # ok | warn | fail | info | missing
    detail: str


# -- runtimes ------------------------------------------------------------------------------

def _run(argv: list[str], path: str | None) -> tuple[str, str]:
    exe = shutil.which(argv[0], path=path)
    if exe is None:
        return "missing", "not installed (not on PATH)"
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "warn", f"installed ({exe}) but did not answer within {RUN_TIMEOUT:g} s"
    except OSError as exc:
        return "warn", f"installed ({exe}) but cannot run: {exc.strerror or exc}"
    # most print on stdout; some only on stderr (Pi 0.73.1's ``pi --version``)
    lines = [ln.strip() for ln in (proc.stdout or proc.stderr or "").splitlines()
             if ln.strip()]
    if proc.returncode != 0:
        err = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
        return "warn", (f"installed but failing (exit {proc.returncode}): "
                        f"{err[-1][:120] if err else 'no output'}")
    release = [ln for ln in lines if "release" in ln.lower()]
    summary = (release or lines or ["answers"])[0][:120]
    if len(lines) > 1 and not release:
        summary += f" (+{len(lines) - 1} more line{'s' if len(lines) > 2 else ''})"
    return "ok", summary


def runtime_checks(fleet: Any, environ: Mapping[str, str]) -> list[Check]:
    labels: dict[str, list[str]] = {}
    for model_id, model in fleet.models.items():
        if model.backend:
            labels.setdefault(model.backend, []).append(model_id)
    jobs = []
    out: list[Check] = []
    path = environ.get("PATH")
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        for label, model_ids in labels.items():
            known = RUNTIMES.get(label.lower())
            if not known:
                out.append(Check("runtime", label, "info",
                                 f"no local check known for backend {label!r} "
                                 f"({', '.join(model_ids)})"))
                continue
            for name, argv in known:
                jobs.append((label, name, pool.submit(_run, argv, path)))
        for label, name, fut in jobs:
            status, detail = fut.result()
            out.append(Check("runtime", f"{label}: {name}", status, detail))
    return out


# -- proxies and DNS ---------------------------------------------------------------------------

def _proxies(environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """scheme → (variable, value); lower-case spelling wins, as in curl and urllib."""
    out = {}
    for scheme in ("https", "http", "all", "no"):
        for var in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            value = (environ.get(var) or "").strip()
            if value:
                out[scheme] = (var, value)
                break
    return out


def _bypass(host: str, no_proxy: str) -> bool:
    if not no_proxy:
        return False
    if no_proxy.strip() == "*":
        return True
    host = host.lower()
    for entry in no_proxy.split(","):
        entry = entry.strip().lower().lstrip(".")
        if entry.startswith("*."):
            entry = entry[2:]
        entry = entry.split(":")[0]
        if entry and (host == entry or host.endswith("." + entry)):
            return True
        try:
            if "/" in entry and ipaddress.ip_address(host) in ipaddress.ip_network(entry, False):
                return True
        except ValueError:
            pass
    return False


def _is_loopback(host: str) -> bool:
    if host in ("localhost",) or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _listening(host: str, port: int, timeout: float = 0.5) -> bool:
    """A TCP connect — only ever to a loopback address."""
    if not _is_loopback(host):
        raise ValueError("doctor connects to loopback only")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def gateway_urls(fleet: Any) -> list[str]:
    urls = [url for name in fleet.gateways_all()  # every named gateway (docs/gateways.md)
            for view in (fleet.on_gateway(name),)
            for url in (view.gateway.base_url, view.anthropic_url, view.openai_url)]
    return list(dict.fromkeys(urls))


def proxy_checks(fleet: Any, environ: Mapping[str, str]) -> tuple[list[Check], set[str]]:
    """Checks, and the gateway hosts that go through a proxy (their DNS is the proxy's)."""
    out: list[Check] = []
    proxied: set[str] = set()
    proxies = _proxies(environ)
    for scheme in ("https", "http", "all", "no"):
        if scheme in proxies:
            var, value = proxies[scheme]
            out.append(Check("proxy", var, "info", safe_url(value)))
    if fleet is None:
        return out, proxied
    no_proxy = proxies.get("no", ("", ""))[1]
    checked: set[tuple[str, int]] = set()
    warned: set[str] = set()
    for url in gateway_urls(fleet):
        parts = urlsplit(url)
        host = parts.hostname or ""
        chosen = proxies.get(parts.scheme) or proxies.get("all")
        if not chosen or _bypass(host, no_proxy):
            continue
        if _is_loopback(host):
            if host not in warned:
                warned.add(host)
                out.append(Check("proxy", f"{host} not in NO_PROXY", "warn",
                                 f"the gateway {safe_url(url)} is on this machine, but "
                                 f"{chosen[0]} is set and NO_PROXY does not name {host}: "
                                 "clients that honour proxies send its requests to the proxy; "
                                 f"add {host} to NO_PROXY"))
            continue
        var, value = chosen
        proxied.add(host)
        purl = urlsplit(value if "://" in value else "http://" + value)
        phost, pport = purl.hostname or "", purl.port or (443 if purl.scheme == "https" else 80)
        if (phost, pport) in checked:
            continue
        checked.add((phost, pport))
        if _is_loopback(phost):
            if _listening(phost, pport):
                out.append(Check("proxy", f"{host} via {var}", "ok",
                                 f"the local proxy {phost}:{pport} is listening"))
            else:
                out.append(Check("proxy", f"{host} via {var}", "fail",
                                 f"local proxy failed — nothing listens on {phost}:{pport}; "
                                 f"start it, or unset {var} / add {host} to NO_PROXY"))
        else:
            out.append(Check("proxy", f"{host} via {var}", "info",
                             f"requests to the gateway go through {safe_url(value)}"))
    return out, proxied


def _resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))  # an IP address


def dns_checks(fleet: Any, proxied: set[str]) -> list[Check]:
    out: list[Check] = []
    hosts: dict[str, int] = {}
    for url in gateway_urls(fleet):
        parts = urlsplit(url)
        if parts.hostname:
            hosts.setdefault(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(hosts)))
    try:
        futures = {}
        for host, port in hosts.items():
            try:
                ipaddress.ip_address(host.strip("[]"))
                out.append(Check("dns", host, "ok", "an IP address: nothing to resolve"))
                continue
            except ValueError:
                pass
            if host in proxied:
                out.append(Check("dns", host, "info", "resolved by the proxy, not here"))
                continue
            futures[host] = pool.submit(_resolve, host, port)
        for host, fut in futures.items():
            try:
                addrs = fut.result(timeout=DNS_TIMEOUT)
            except concurrent.futures.TimeoutError:
                out.append(Check("dns", host, "warn",
                                 f"no DNS answer within {DNS_TIMEOUT:g} s (slow or offline?)"))
            except socket.gaierror as exc:
                out.append(Check("dns", host, "fail",
                                 f"does not resolve ({exc.strerror or exc}); check the host in "
                                 "gateway.base_url, or the VPN a private gateway needs"))
            except OSError as exc:
                out.append(Check("dns", host, "warn", f"cannot resolve: {exc}"))
            else:
                shown = ", ".join(addrs[:3]) + (", …" if len(addrs) > 3 else "")
                out.append(Check("dns", host, "ok", f"resolves to {shown}"))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return out


# -- runtime gating ---------------------------------------------------------------------------

#: host name endings that only resolve on a private network
PRIVATE_SUFFIXES = (".local", ".lan", ".internal", ".home.arpa", ".localhost")


def is_private_host(host: str) -> bool:
    """A loopback, private or link-local address, or a name only a LAN resolves."""
    host = host.strip("[]").lower()
    if not host:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(PRIVATE_SUFFIXES)
    return ip.is_loopback or ip.is_private or ip.is_link_local
