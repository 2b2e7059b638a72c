"""Steps 4 and 6 of loading: URL normalisation and the cross-checks (routes, slots,
reserved values, requirements, references) a schema cannot say.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from taosync.fleet.schema import client_entries
from taosync.fleet.logic import FLEET_REFERENCE, SLOT, SLOT_LIST, SLOT_MAP, url_userinfo
from taosync.fleet.problems import PathT, closest, did_you_mean
from taosync.fleet.schema_errors import _URL_FIELDS
from taosync.terminal import C0_C1

#: what a gateway's name may be (it becomes part of a variable name: TAOTOKEN_<NAME>_…)
GATEWAY_NAME = r"[A-Za-z][A-Za-z0-9_-]*"

if TYPE_CHECKING:
    from taosync.fleet.problems import Reporter


class CrossChecks:
    """Steps 4 and 6 of loading, reporting through ``report``."""

    def __init__(self, report: Reporter) -> None:
        self.report = report

    # ---- 4. URLs

    def normalise_urls(self, data: dict) -> None:
        from taosync.fleet.gateways import named, paths

        where = paths(data)
        for gateway_name, gateway in named(data).items():
            self.normalise_gateway(gateway, where[gateway_name])

    def normalise_gateway(self, gateway: dict, at: PathT) -> None:
        for name in _URL_FIELDS:
            url = gateway.get(name)
            if not isinstance(url, str):
                continue
            path = (*at, name)
            problem = _url_problem(url)
            if problem:
                self.report.error(path, problem)
                self.report.reported.add(path)
                continue
            if ":" in (url_userinfo(url) or ""):
                self.report.warn(path, "a literal password in fleet.yaml (user:password@ in the "
                                 "URL): anyone who can read this file (or your dotfiles repo) has "
                                 "it; taosync writes it only into files of mode 0600, but a header "
                                 "(gateway.headers with ${env:NAME}) keeps it out of fleet.yaml")
            if name == "gemini_base_url" and url.rstrip("/").endswith("/v1"):
                self.report.warn(path, f"{_safe_url(url)} ends in /v1, but Gemini CLI "
                                 f"appends /v1beta/models/… itself (…/v1/v1beta/…): give the "
                                 f"root where the gateway serves Gemini's protocol, without /v1")
            if name != "base_url":
                continue  # overrides are exact URLs, taken as written
            root = url
            while root.endswith("/"):
                root = root[:-1]
            dropped_v1 = root.endswith("/v1")
            if dropped_v1:
                root = root[:-3].rstrip("/")
            if dropped_v1 and root.endswith("/v1"):  # …/v1/v1: a slip, not a gateway's path
                while root.endswith("/v1"):
                    root = root[:-3].rstrip("/")
                self.report.error(path, f"{_safe_url(url)} doubles /v1; give the gateway "
                                  f"root: base_url: {_safe_url(root)} (taosync adds /v1 where "
                                  "a client needs it)")
                self.report.reported.add(path)
                continue
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
            self.report.warn(path, f"normalised {_safe_url(url)} to {_safe_url(root)}: {why}")

    # ---- 6. cross-checks

    def cross_check(self, data: dict) -> None:
        raw_models, raw_routes = data.get("models"), data.get("routes", {})
        models_ok = isinstance(raw_models, dict)
        routes_ok = isinstance(raw_routes, dict)
        models: dict = raw_models if isinstance(raw_models, dict) else {}
        routes: dict = raw_routes if isinstance(raw_routes, dict) else {}
        model_ids, route_names = list(models), list(routes)

        if models_ok and routes_ok:
            for name, target in routes.items():
                if isinstance(target, str) and target not in models:
                    msg = (f"route '{name}' names '{target}', which is not in models"
                           f"{did_you_mean(target, model_ids)}")
                    if target in routes:
                        msg += " (a route names a model, not another route)"
                    self.report.error(("routes", name), msg)
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
            self.report.error(("default_route",), msg)

        clients = data.get("clients")
        if isinstance(clients, dict):
            for name, value in clients.items():
                if value is None and name in client_entries():
                    self.report.warn(("clients", name), f"empty, so taosync leaves {name} "
                                     f"alone; write `{name}: {{}}` to configure it with "
                                     "defaults, or `enabled: false` to make that explicit",
                                     at="key")
            if models_ok and routes_ok:
                for path, slot in _slots(clients):
                    if slot not in routes and slot not in models:
                        self.report.error(path, f"'{slot}' is neither a route nor a catalogue "
                                          f"model{did_you_mean(slot, route_names + model_ids)}")
            for path, why in _reserved(clients):
                self.report.error(path, why)
            for path, why in _unmet_requirements(clients, data):
                self.report.error(path, why)
            for path, why in _unspoken_protocols(clients, data):
                self.report.error(path, why)
        self.check_gateways(data)

        servers = data.get("mcp_servers")
        if isinstance(servers, dict) and models_ok and routes_ok:
            from taosync.fleet.gateways import named

            known = fleet_reference_names(model_ids, route_names, list(named(data)))
            for name, server in servers.items():
                self.check_references(("mcp_servers", name), server, known)

    def check_gateways(self, data: dict) -> None:
        """Named gateways: ``default`` named once, ``default_gateway`` and every client's
        ``gateway:`` name a gateway the fleet has, and some gateway is the default."""
        from taosync.fleet.gateways import DEFAULT, default_name, named

        more = data.get("gateways")
        for name in (more if isinstance(more, dict) else ()):
            if not re.fullmatch(GATEWAY_NAME, str(name)):
                self.report.error(("gateways", name), f"{str(name)!r} is not a gateway name: "
                                  "start with a letter; letters, digits, _ and - (it becomes "
                                  "part of a variable name: TAOTOKEN_<NAME>_BASE_URL)", at="key")
        if isinstance(more, dict) and DEFAULT in more and isinstance(data.get("gateway"), dict):
            self.report.error(("gateways", DEFAULT), "the gateway named default is gateway: "
                              "already; give this one another name, or move gateway: here",
                              at="key")
        table = named(data)
        listing = f" (gateways: {', '.join(table)})" if table else ""
        if not table:
            if "gateway" not in data and "gateways" not in data:
                self.report.error((), "no gateway: write gateway: (base_url, key), or "
                                  "gateways: {NAME: {base_url, key}} with default_gateway",
                                  at="key")
            return
        chosen = data.get("default_gateway")
        if isinstance(chosen, str) and chosen not in table:
            self.report.error(("default_gateway",), f"'{chosen}' is not a gateway"
                              f"{did_you_mean(chosen, list(table))}{listing}")
        elif default_name(data) is None:
            self.report.error(("gateways",), f"{len(table)} named gateways and no "
                              f"gateway: — say which one clients use by default: "
                              f"default_gateway: {next(iter(table))}", at="key")
        clients = data.get("clients")
        for client, entry in (clients.items() if isinstance(clients, dict) else ()):
            own = entry.get("gateway") if isinstance(entry, dict) else None
            if isinstance(own, str) and own not in table:
                self.report.error(("clients", client, "gateway"), f"'{own}' is not a gateway"
                                  f"{did_you_mean(own, list(table))}{listing}")

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
                self.report.error(path, msg)
            elif model in seen:
                self.report.error(path, f"route '{name}' names candidate '{model}' twice")
            seen.add(model)

    def check_references(self, path: PathT, value: Any, known: list[str]) -> None:
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
                    self.report.error(path, f"unknown reference ${{{ref}}}{guess}")
        elif isinstance(value, dict):
            for k, v in value.items():
                self.check_references(path + (k,), v, known)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.check_references(path + (i,), v, known)


#: C0 controls (CR, LF, NUL, TAB, ESC, …), DEL and the C1 controls
_CONTROL = re.compile(f"[{C0_C1}]")


def control_character(text: str) -> str | None:
    """``U+000A`` for the first control character in ``text``, or None."""
    match = _CONTROL.search(text)
    return f"U+{ord(match.group(0)):04X}" if match else None


def fleet_reference_names(model_ids: Iterable[str], route_names: Iterable[str],
                          gateway_names: Iterable[str] = ()) -> list[str]:
    """Every ``${…}`` name :meth:`Fleet.reference_value` can satisfy for this catalogue
    (and these named gateways: ``${gateways.NAME.key}``, … — docs/gateways.md)."""
    from taosync.fleet.logic import GATEWAY_REFERENCE_FIELDS

    return (["gateway.base_url", "gateway.key", "gateway.anthropic_base_url",
             "gateway.openai_base_url", "default_route"]
            + [f"routes.{r}" for r in route_names] + [f"models.{m}" for m in model_ids]
            + [f"gateways.{g}.{f}" for g in gateway_names for f in GATEWAY_REFERENCE_FIELDS])


def _client_options(clients: dict) -> Iterator[tuple[str, dict, str, dict]]:
    """(client id, its entry, option name, option schema) for every configured client."""
    for name, entry in client_entries().items():
        cfg = clients.get(name)
        if isinstance(cfg, dict):
            for option, prop in entry.get("properties", {}).items():
                yield name, cfg, option, prop


def _slots(clients: dict) -> Iterator[tuple[PathT, str]]:
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


def _reserved(clients: dict) -> Iterator[tuple[PathT, str]]:
    """(path, why) of every client option set to a value its client reserves
    (``x-reserved`` in the schema, e.g. Codex's built-in provider id)."""
    for name, cfg, option, prop in _client_options(clients):
        why = prop.get("x-reserved", {}).get(cfg.get(option)) if isinstance(
            cfg.get(option), str) else None
        if why:
            yield ("clients", name, option), why


def _unmet_requirements(clients: dict, data: dict) -> Iterator[tuple[PathT, str]]:
    """(path, why) of every enabled client whose fleet key it requires is missing
    (``x-requires`` in the schema: dotted fleet path → why, e.g. Gemini CLI's
    ``gateway.gemini_base_url``). A ``gateway.…`` key is read from the client's own
    gateway (``clients.X.gateway``, else the default one)."""
    from taosync.fleet.gateways import DEFAULT, client_gateway, named

    table = named(data)
    for name, entry in client_entries().items():
        cfg = clients.get(name)
        if not isinstance(cfg, dict) or cfg.get("enabled") is False:
            continue
        gateway_name = client_gateway(data, name)
        for dotted, why in entry.get("x-requires", {}).items():
            value: Any = data
            parts = dotted.split(".")
            shown = dotted
            if parts[0] == "gateway" and gateway_name is not None:
                if gateway_name not in table:
                    continue  # an unknown gateway name is reported on its own
                value = table[gateway_name]
                parts = parts[1:]
                if gateway_name != DEFAULT or "gateway" not in data:
                    shown = ".".join(("gateways", gateway_name, *parts))
            for part in parts:
                value = value.get(part) if isinstance(value, dict) else None
            if value in (None, ""):
                on = (f" (its gateway is {gateway_name})"
                      if gateway_name is not None and len(table) > 1 else "")
                yield ("clients", name), f"needs {shown}{on}: {why}"


def _unspoken_protocols(clients: dict, data: dict) -> Iterator[tuple[PathT, str]]:
    """(path, why) of every enabled client on a gateway whose ``protocols:`` list leaves
    out the protocol the client speaks (``x-speaks`` in the schema; a client's own
    ``protocol`` option, e.g. Hermes' ``anthropic-messages``, says which it uses)."""
    from taosync.fleet.gateways import client_gateway, named

    table = named(data)
    for name, entry in client_entries().items():
        cfg = clients.get(name)
        speaks = entry.get("x-speaks")
        if not isinstance(cfg, dict) or cfg.get("enabled") is False or not speaks:
            continue
        gateway_name = client_gateway(data, name)
        gateway = table.get(gateway_name or "")
        served = gateway.get("protocols") if isinstance(gateway, dict) else None
        if not isinstance(served, list):
            continue
        chosen = cfg.get("protocol", entry.get("properties", {}).get("protocol", {})
                         .get("default"))
        family = chosen.split("-")[0] if isinstance(chosen, str) else speaks
        if family not in served:
            at = ("clients", name, "gateway") if "gateway" in cfg else ("clients", name)
            yield at, (f"{name} speaks {family}, and gateway {gateway_name} serves only "
                       f"{', '.join(map(str, served)) or 'nothing'} (its protocols:); put "
                       f"{name} on a gateway that serves {family}")


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
