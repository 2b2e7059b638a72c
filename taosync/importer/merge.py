"""The merge: client observations → gateway, key reference, catalogue and routes, client
entries, MCP servers and headers (see the package docstring for the rules).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from taosync.clients.base import Observation, Seen
from taosync.fleet.logic import expand_all
from taosync.fleet.looks_secret import (AUTH_SCHEME, PREFIXED_TOKEN, could_be_token,
                                        looks_like_token, secret_name)
from taosync.fleet.secrets import Secret, redact
from taosync.pipeline import display_path
from taosync.importer.findings import (DEFAULT_KEY_ENV, _SLOT_LIST, Finding, Proposal, _route_name_for,
                                       _set_slot, _strings, url_root)
from taosync.importer.yaml_out import emit


#: what a migrated profile may be named (it becomes a route and a file name)
_ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class _Builder:
    def __init__(self, observations: list[Observation], *, home: Path,
                 environ: Mapping[str, str]) -> None:
        self.obs = [o for o in observations]
        self.order = {o.client: i for i, o in enumerate(self.obs)}
        self.home = home
        self.environ = environ
        self.findings: list[Finding] = []
        self.read: list[dict] = []
        #: env var name → the MCP secret it stands for (one value per name)
        self.mcp_envs: dict[str, Secret] = {}
        self.mcp_secrets: list[dict] = []
        self.secret_values: list[Secret] = []  # every MCP secret read (to scrub output)
        #: apps that take only MCP servers and hold some (a client entry with no slot)
        self.mcp_apps: list[Observation] = []

    def item(self, client: str, seen: Seen, value: Any = None) -> dict:
        v = seen.value if value is None else value
        if isinstance(v, Secret):
            v = v.redacted()
        return {"client": client, "value": v, "file": display_path(seen.file, self.home),
                "key": seen.key}

    def tilde(self, text: str) -> str:
        """Paths under the home shown as ~/… (as everywhere else in the output)."""
        return text.replace(str(self.home).rstrip("/") + "/", "~/")

    def add(self, kind: str, topic: str, message: str, items=(), chosen=None) -> None:
        self.findings.append(Finding(kind, topic, message, list(items), chosen))

    # ---- 1. which clients are on a gateway

    def partition(self) -> list[Observation]:
        gateway = []
        for o in self.obs:
            for p in o.problems:
                self.add("problem", "file", f"{o.client}: {self.tilde(p)}; that file was skipped")
            for n in o.notes:
                self.add("note", "client", f"{o.client}: {self.tilde(n)}")
            if o.provider is not None:
                self.add("conflict", "provider",
                         f"{o.client} uses {o.provider.value}, not an OpenAI/Anthropic-shaped "
                         f"gateway; left out of the proposal, so apply leaves it alone (add a "
                         f"clients.{o.client} entry to move it to the gateway)",
                         [self.item(o.client, o.provider)])
            elif o.urls:
                gateway.append(o)
            elif o.mcp_only:
                if o.mcp_servers:  # an app that takes only MCP servers: its entry, bare
                    self.mcp_apps.append(o)
            elif o.slots or o.keys:
                self.add("note", "client", f"{o.client}: found models or a key but no gateway "
                         f"base URL; not imported as a gateway client")
        return gateway

    # ---- 2. the gateway

    def gateway(self, clients: list[Observation]) -> tuple[dict, set[str]]:
        """gateway mapping (base_url + overrides) and the clients on the chosen gateway.

        A Gemini-shaped client's URL is ``gemini_base_url`` (its own root, beside the
        others); alone, it also stands for ``base_url``."""
        gemini = [(o, seen) for o in clients if o.protocol == "gemini" for seen in o.urls]
        rest = [o for o in clients if o.protocol != "gemini"]
        if not gemini:
            return self._gateway(rest)
        for o, seen in gemini:
            self.read.append({**self.item(o.client, seen), "what": "url"})
            if seen.value.strip().rstrip("/").endswith("/v1"):
                self.add("note", "gateway", f"{o.client}: {seen.value} ends in /v1, so "
                         f"Gemini CLI calls …/v1/v1beta/models/…; check gemini_base_url in "
                         f"the proposal (the root, without /v1)", [self.item(o.client, seen)])
        first = gemini[0][1].value.strip().rstrip("/")
        gw, chosen = self._gateway(rest) if any(o.urls for o in rest) else (
            {"base_url": first}, set())
        gw["gemini_base_url"] = first
        return gw, chosen | {o.client for o, seen in gemini
                             if seen.value.strip().rstrip("/") == first}

    def _gateway(self, clients: list[Observation]) -> tuple[dict, set[str]]:
        entries = []  # (client, protocol, seen, root, clean)
        for o in clients:
            for seen in o.urls:
                root, clean = url_root(seen.value, o.protocol)
                entries.append((o.client, o.protocol, seen, root, clean))
                self.read.append({**self.item(o.client, seen), "what": "url"})
                if o.protocol == "anthropic" and seen.value.strip().rstrip("/").endswith("/v1"):
                    self.add("note", "gateway",
                             f"{o.client}: {seen.value} ends in /v1, so Claude Code calls "
                             f"…/v1/v1/messages; the gateway root is {root} and apply will "
                             f"write that", [self.item(o.client, seen)])
                elif seen.value != clean:
                    self.add("note", "gateway", f"{o.client}: {seen.value} has a trailing "
                             f"slash; apply writes it without one", [self.item(o.client, seen)])

        def identity(e):
            return e[3] if e[3] is not None else e[4]

        groups: dict[str, list] = {}
        for e in entries:
            groups.setdefault(identity(e), []).append(e)

        def clients_of(group):
            return list(dict.fromkeys(e[0] for e in group))

        if len(groups) == 2:
            (a, ga), (b, gb) = groups.items()
            pa, pb = {e[1] for e in ga}, {e[1] for e in gb}
            ha, hb = urlsplit(a), urlsplit(b)
            if (len(pa) == 1 and len(pb) == 1 and pa != pb
                    and (ha.scheme, ha.netloc) == (hb.scheme, hb.netloc)
                    and len({e[4] for e in ga}) == 1 and len({e[4] for e in gb}) == 1):
                anth, op = (ga, gb) if pa == {"anthropic"} else (gb, ga)
                base = anth[0][3]
                gw = {"base_url": base}
                if op[0][4] != base + "/v1":
                    gw["openai_base_url"] = op[0][4]
                self.add("note", "gateway",
                         f"one gateway with a different path per protocol: base_url {base} "
                         f"(Anthropic-shaped clients) and openai_base_url {op[0][4]} "
                         f"(OpenAI-shaped clients)")
                return gw, set(clients_of(ga) + clients_of(gb))

        ranked = sorted(groups.items(),
                        key=lambda kv: (-len(clients_of(kv[1])), self.order[kv[1][0][0]]))
        primary_id, primary = ranked[0]
        root = primary[0][3]
        gw = {"base_url": root if root is not None else primary_id}
        if root is None:
            gw["openai_base_url"] = primary_id
            self.add("note", "gateway",
                     f"{primary_id} does not end in /v1, so the gateway does not follow "
                     f"root + /v1: the proposal sets gateway.openai_base_url to it exactly")
        chosen = set(clients_of(primary))
        if len(ranked) > 1:
            items = [self.item(e[0], e[2]) | {"root": identity(e)} for e in entries]
            n, total = len(chosen), len({e[0] for e in entries})
            others = [c for c in dict.fromkeys(e[0] for e in entries)
                      if c not in chosen or any(identity(e) != primary_id
                                                for e in entries if e[0] == c)]
            self.add("conflict", "gateway",
                     f"{len(ranked)} different gateways", items,
                     chosen=f"{gw['base_url']} (used by {n} of {total} clients; ties go to "
                            f"the first client in the order {', '.join(self.order)}); apply "
                            f"will point {', '.join(others)} at it")
        return gw, chosen

    def more_gateways(self, clients: list[Observation], primary: set[str]
                      ) -> list[tuple[str, dict, set[str]]]:
        """The gateways beside the primary one, kept apart as named gateways (docs/
        gateways.md) instead of pointing every client at one: (name, gateway, clients)
        per other root (and per other literal key on one root). The conflict "N different
        gateways" becomes a note."""
        groups: list[tuple[str, dict, set[str]]] = []
        taken = {"default"}
        rest = [o for o in clients if o.client not in primary]
        for part in _by_key([o for o in clients if o.client in primary])[1:]:
            chosen = {o.client for o in part}
            groups.append((_gateway_name(self.gateway_root(clients, primary), taken),
                           dict(self.last_gateway), chosen))
        while rest:
            mark_read, mark_found = len(self.read), len(self.findings)
            gw, chosen = self.gateway(rest)
            del self.read[mark_read:]  # each URL was read (and noted) once already
            del self.findings[mark_found:]
            if not chosen:
                break
            if any(_unwritable(v) for v in gw.values()):
                rest = [o for o in rest if o.client not in chosen]
                continue  # a URL no fleet may hold: those clients stay a conflict
            on = [o for o in rest if o.client in chosen]
            for part in _by_key(on):
                groups.append((_gateway_name(gw["base_url"], taken), dict(gw),
                               {o.client for o in part}))
            rest = [o for o in rest if o.client not in chosen]
        if groups and not any(o.client not in primary and
                              o.client not in {c for g in groups for c in g[2]}
                              for o in clients):
            self.findings[:] = [f for f in self.findings
                                if not (f.kind == "conflict" and f.topic == "gateway")]
        if groups:
            self.add("note", "gateway", f"{len(groups) + 1} gateways kept apart: gateway: for "
                     f"{', '.join(sorted(primary - {c for g in groups for c in g[2]}))}; "
                     + "; ".join(f"gateways.{n} for {', '.join(sorted(c))}"
                                 for n, _, c in groups)
                     + " (taosync use NAME switches)")
        return groups

    def gateway_root(self, clients: list[Observation], primary: set[str]) -> str:
        """The primary gateway again, quietly (its base_url; kept in last_gateway)."""
        mark_read, mark_found = len(self.read), len(self.findings)
        self.last_gateway, _ = self.gateway([o for o in clients if o.client in primary])
        del self.read[mark_read:]
        del self.findings[mark_found:]
        return self.last_gateway["base_url"]

    # ---- 3. the key

    def key(self, clients: list[Observation], gw_clients: set[str],
            default_env: str = DEFAULT_KEY_ENV) -> dict:
        names: dict[str, list[str]] = {}
        for o in clients:
            for seen in o.key_envs:
                names.setdefault(seen.value, []).append(o.client)
                self.read.append({**self.item(o.client, seen), "what": "key_env"})
        if names:
            env = sorted(names, key=lambda n: (-len(set(names[n])), n != DEFAULT_KEY_ENV,
                                               min(self.order[c] for c in names[n])))[0]
            reference = f"${{env:{env}}}"
            if len(names) > 1:
                self.add("note", "key",
                         "the clients read the key from different variables: "
                         + "; ".join(f"{', '.join(dict.fromkeys(c))}: ${n}"
                                     for n, c in names.items())
                         + f". The fleet uses ${{env:{env}}}; apply makes every client read "
                           f"${env} (or hold the key inline)")
        else:
            helper = next((o.key_helper for o in clients if o.key_helper is not None), None)
            if helper is not None and not any(o.keys for o in clients):
                from taosync.fleet.secrets import Reference
                from taosync.fleet.stores import command_reference

                stored = command_reference(helper.value)  # what taosync wrote for a store
                env, reference = None, Reference(*stored).describe() if stored is not None \
                    else f"${{shell:{helper.value}}}"
            else:
                env, reference = default_env, f"${{env:{default_env}}}"

        found: list[tuple[str, Seen]] = []
        for o in clients:
            for seen in o.keys:
                found.append((o.client, seen))
                self.read.append({**self.item(o.client, seen), "what": "key"})
        values: list[tuple[str, Secret, dict]] = [
            (c, s.value, self.item(c, s)) for c, s in found]
        for name, users in names.items():
            raw = self.environ.get(name)
            if raw and raw.strip():
                values.append((users[0], Secret(raw.strip(), f"${name}"),
                               {"client": users[0], "value": redact(raw),
                                "file": f"${name} (this shell)", "key": name}))
        distinct: list[Secret] = []
        for _, secret, _ in values:
            if secret not in distinct:
                distinct.append(secret)
        if len(distinct) > 1:
            items = []
            for _, secret, item in values:
                n = distinct.index(secret) + 1
                items.append(item | {"which": f"key {n}"})
            same_tail = len({s.redacted() for s in distinct}) < len(distinct)
            self.add("conflict", "key",
                     f"{len(distinct)} different keys"
                     + (" (some show the same last characters, but they differ)"
                        if same_tail else ""),
                     items,
                     chosen=f"key 1 ({items[0]['file']} {items[0]['key']}) is the one to "
                            f"export; apply writes it everywhere")

        hint = None
        first = found[0] if found else None
        if env is not None and first is not None:
            client, seen = first
            hint = self.export_hint(env, seen.file, _split_key(seen.key))
        already = None
        if env is not None and self.environ.get(env, "").strip():
            already = Secret(self.environ[env].strip())
        return {
            "reference": reference, "env": env,
            "found": [{"client": c, "file": display_path(s.file, self.home), "key": s.key,
                       "redacted": s.value.redacted()} for c, s in found],
            "export_hint": hint,
            "already_set": already is not None,
            "matches": (already in distinct[:1]) if already is not None and distinct else None,
        }

    def export_hint(self, env: str, file: Path, path: list[str], jq_tail: str = "",
                    shown_path: str | None = None) -> str:
        """The line that exports ``env`` from the value at ``path`` in ``file``, read
        there by the shell (jq for JSON), so the value itself is never printed."""
        shown = display_path(file, self.home)
        if file.suffix == ".json":
            jq_path = "".join(f'["{p}"]' if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p)
                              else f".{p}" for p in path)
            return f"export {env}=\"$(jq -r '{jq_path}{jq_tail}' {shown})\""
        return f"export {env}=…  # the value of {shown_path or '.'.join(path)} in {shown}"

    # ---- 4. models, routes, clients

    def routes(self, clients: list[Observation], primary: set[str]):
        models: dict[str, None] = {}
        routes: dict[str, str] = {}
        by_model: dict[str, str] = {}
        assignments: dict[str, dict[str, str]] = {}

        # names that must be kept exactly (a Codex profile is a file named after its
        # route) are reserved first; each enters ``routes`` where it is first used
        reserved: dict[str, str] = {}
        for o in clients:
            for slot, seens in o.slots.items():
                m = _SLOT_LIST.match(slot)
                if not m:
                    continue
                name, model = m.group(2), seens[0].value
                if reserved.get(name, model) != model:
                    self.add("note", "models", f"{o.client}: {slot} uses {model}, but the name "
                             f"{name!r} is already taken by {reserved[name]}; the fleet names "
                             f"the model id there instead")
                    continue
                reserved[name] = model
                by_model.setdefault(model, name)
        for o in clients:
            for slot, seens in o.slots.items():
                model = seens[0].value
                models.setdefault(model)
                for seen in seens:
                    self.read.append({**self.item(o.client, seen), "what": "model",
                                      "slot": slot})
                others = list(dict.fromkeys(s.value for s in seens[1:] if s.value != model))
                for other in others:
                    models.setdefault(other)
                if others:
                    self.add("note", "models",
                             f"{o.client}: {slot} is {model} ({display_path(seens[0].file, self.home)} "
                             f"{seens[0].key}) but also {', '.join(others)} elsewhere; the "
                             f"fleet gives {slot} {model}",
                             [self.item(o.client, s) for s in seens])
                m = _SLOT_LIST.match(slot)
                if m:
                    name = m.group(2)
                    route = name if reserved.get(name) == model else model
                elif model in by_model:
                    route = by_model[model]
                else:
                    base = _route_name_for(slot)
                    route, n = base, 2
                    if route in routes or route in reserved or (route in models and route != model):
                        route = f"{o.client}-{base}"
                    while route in routes or route in reserved:
                        route, n = f"{o.client}-{base}-{n}", n + 1
                    by_model[model] = route
                if route != model or route in reserved:
                    routes.setdefault(route, model)
                    self.fallbacks(o, slot, model, route, routes, models)
                assignments.setdefault(o.client, {})[slot] = route

        default = None
        for o in sorted(clients, key=lambda o: (o.client not in primary, self.order[o.client])):
            if o.client in assignments and assignments[o.client]:
                default = next(iter(assignments[o.client].values()))
                break
        if default is not None and default not in routes:
            default = None  # a slot that names a model id directly
        return list(models), routes, default, assignments

    def fallbacks(self, o: Observation, slot: str, model: str, route: str,
                  routes: dict, models: dict) -> None:
        """A slot with a fallback chain (Claude's ``fallbackModel``) makes its route
        choose among its model and the chain, in that order: apply writes the same
        model and chain back."""
        seen = o.fallbacks.get(slot)
        if seen is None:
            return
        chain = [m for m in dict.fromkeys(seen.value) if m != model]
        if not chain:
            return
        want = {"candidates": [model, *chain]}
        if routes[route] == model:
            routes[route] = want
            for m in chain:
                models.setdefault(m)
        elif routes[route] != want:
            self.add("note", "models",
                     f"{o.client}: {slot} falls back to {', '.join(chain)} "
                     f"({display_path(seen.file, self.home)} {seen.key}), but route "
                     f"{route!r} already chooses among other models; not imported",
                     [self.item(o.client, seen)])

    # ---- 5. MCP servers and headers

    def mcp(self, keys: list[Secret], gw: dict) -> dict:
        def clean(text: str) -> str:
            for key in keys:
                if key.reveal() and key.reveal() in text:
                    text = text.replace(key.reveal(), "${gateway.key}")
            if text == gw["base_url"]:
                return "${gateway.base_url}"
            if text == gw.get("openai_base_url", gw["base_url"] + "/v1"):
                return "${gateway.openai_base_url}"
            return text

        out: dict[str, Any] = {}
        as_read: dict[str, Any] = {}  # what each server's first definition holds
        first: dict[str, tuple[str, Seen]] = {}
        differing: dict[str, list] = {}
        held_key: set[str] = set()
        left_out: set[str] = set()
        for o in self.obs:
            for name, seen in o.mcp_servers.items():
                if name in left_out or (name not in first and
                                        self.token_outside_secrets(name, o.client, seen)):
                    left_out.add(name)
                    continue
                value = expand_all(seen.value, clean)
                if any(k.reveal() and k.reveal() in t for _, t in _strings(seen.value)
                       for k in keys):
                    held_key.add(name)
                if name not in first:
                    first[name] = (o.client, seen)
                    as_read[name] = value
                    out[name] = self.mcp_references(name, value, o.client, seen)
                elif value != as_read[name]:
                    differing.setdefault(name, [self.item(*first[name], describe_mcp(out[name]))]
                                         ).append(self.item(o.client, seen, describe_mcp(value)))
        for name, items in differing.items():
            self.add("conflict", "mcp", f"MCP server {name!r} is defined differently",
                     items, chosen=f"the one in {items[0]['file']} ({items[0]['client']})")
        for name in sorted(held_key):
            self.add("note", "secret", f"MCP server {name!r} held the gateway key literally; "
                     f"the proposal uses ${{gateway.key}} there")
        return out

    def token_outside_secrets(self, server: str, client: str, seen: Seen) -> bool:
        """Whether an MCP server passes a token where fleet.yaml cannot reference one
        (``args``, ``url``, …: only ``env`` and ``headers`` values may be ``${env:…}``):
        copying it would put the token into fleet.yaml and every client's file. Such a
        server is left out of the proposal, said once, and apply leaves it alone."""
        value = seen.value if isinstance(seen.value, dict) else {}
        where = [field_name for field_name, v in value.items()
                 if field_name not in ("env", "headers")
                 and any(PREFIXED_TOKEN.search(t) for _, t in _strings(v))]
        if where:
            self.add("conflict", "mcp",
                     f"MCP server {server!r} passes a token in {', '.join(where)}; taosync "
                     f"can reference a secret only in env or headers, so the server is left "
                     f"out of the proposal (apply leaves it alone) — pass the token through "
                     f"env and import again to share it",
                     [self.item(client, seen, f"{server}: {', '.join(where)}")])
        return bool(where)

    def mcp_references(self, server: str, value: dict, client: str, seen: Seen) -> dict:
        """``value`` (one MCP server, fleet-shaped) with every token-looking env or header
        value replaced by an ``${env:NAME}`` reference; each is recorded with the line
        that exports it from the file it was read from."""
        out = dict(value)
        for field_name in ("env", "headers"):
            values = value.get(field_name)
            if not isinstance(values, dict):
                continue
            replaced = dict(values)
            for label, text in values.items():
                if not _looks_secret(label, text):
                    continue
                scheme, bare = "", text
                m = AUTH_SCHEME.match(text) if field_name == "headers" else None
                if m:
                    scheme, bare = m.group(1), m.group(2)
                secret = Secret(bare.strip(), f"{seen.file} {seen.key}.{field_name}.{label}")
                env = self.mcp_env_name(server, field_name, label, secret)
                reference = f"{scheme}${{env:{env}}}"
                replaced[label] = reference
                where = f"{seen.key}.{field_name}.{label}"
                # Cline nests an entry under "transport"; the others keep it flat
                jq_tail = f' | (.transport // .) | .{field_name}["{label}"]'
                if scheme:
                    jq_tail += f' | sub("^{scheme.strip()}\\\\s+"; "")'
                hint = self.export_hint(env, seen.file, _split_key(seen.key), jq_tail,
                                        shown_path=where)
                already = self.environ.get(env, "").strip()
                self.mcp_secrets.append({
                    "server": server, "key": f"{field_name}.{label}", "env": env,
                    "reference": reference, "client": client,
                    "file": display_path(seen.file, self.home), "read_at": where,
                    "redacted": secret.redacted(), "export_hint": hint,
                    "already_set": bool(already), "matches": already == secret.reveal()
                    if already else None})
                self.add("note", "secret",
                         f"MCP server {server!r}: {field_name}.{label} holds a literal secret "
                         f"({secret.redacted()}); the proposal references {reference} instead "
                         f"and never copies it")
                self.secret_values.append(secret)
            out[field_name] = replaced
        return out

    def mcp_env_name(self, server: str, field_name: str, label: str, secret: Secret) -> str:
        """The variable an MCP secret is read from: an env entry's own name, a header's
        ``<SERVER>_<HEADER>`` (``GITHUB_AUTHORIZATION``); the server's name is put in
        front when another server's different secret already took that name."""
        def upper(text: str) -> str:
            name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()
            return name if re.match(r"[A-Z_]", name or "0") else f"_{name}"

        if field_name == "env" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", label):
            name = label
        else:
            name = upper(f"{server}_{label}")
        if self.mcp_envs.get(name, secret) != secret:
            name = upper(f"{server}_{name}")
        self.mcp_envs[name] = secret
        return name

    def headers(self, clients: list[Observation]) -> dict:
        merged: dict[str, tuple[str, str, Seen]] = {}
        differing: dict[str, list] = {}
        for o in clients:
            for seen in o.headers:
                for name, value in seen.value.items():
                    if secret_name(name):
                        self.add("note", "headers",
                                 f"{o.client}: header {name} looks like a credential; not put "
                                 f"into fleet.yaml (add it under gateway.headers yourself if "
                                 f"the gateway needs it)", [self.item(o.client, seen, name)])
                        continue
                    if name not in merged:
                        merged[name] = (value, o.client, seen)
                    elif merged[name][0] != value:
                        differing.setdefault(name, [self.item(merged[name][1], merged[name][2],
                                                              f"{name}: {merged[name][0]}")]
                                             ).append(self.item(o.client, seen, f"{name}: {value}"))
        for name, items in differing.items():
            self.add("conflict", "headers", f"header {name} has different values", items,
                     chosen=f"the one in {items[0]['file']}")
        return {n: v for n, (v, _, _) in merged.items()}

    # ---- all of it

    # ---- 0. what the client modules leave to the merge

    def migrate_legacy_profiles(self, o: Observation) -> None:
        """A ``[profiles.NAME]`` table in a TOML file the client read (the form Codex stopped
        reading in 0.134) becomes the slot ``profiles[NAME]`` — so ``profiles: [NAME]`` and
        a route — unless a profile file of that name was found (it is what the client
        reads). Only profiles on the file's own provider (or none) are taken."""
        from taosync.clients.base import read_plain

        for path in [p for p in o.files if p.suffix == ".toml"]:
            config = read_plain(path, "toml", Observation(o.client))
            tables = config.get("profiles") if isinstance(config, dict) else None
            if not isinstance(tables, dict) or not tables:
                continue
            provider = config.get("model_provider")
            migrated = []
            for name, table in tables.items():
                if not isinstance(table, dict):
                    continue
                model = table.get("model")
                if f"profiles[{name}]" in o.slots or not (isinstance(model, str) and model.strip()):
                    continue
                if not _ROUTE_NAME.fullmatch(str(name)):
                    self.add("note", "client", f"{o.client}: {self.tilde(str(path))}: legacy "
                             f"profile {name!r} cannot be a route name; not imported")
                    continue
                if table.get("model_provider") not in (None, provider):
                    continue
                o.slots[f"profiles[{name}]"] = [Seen(model.strip(), path,
                                                     f"profiles.{name}.model")]
                migrated.append(str(name))
            if migrated:
                o.notes = [n for n in o.notes if not (n.startswith(f"{path}: [profiles.")
                                                      and "not imported" in n)]
                self.add("note", "client",
                         f"{o.client}: {self.tilde(str(path))}: migrated the legacy "
                         f"[profiles.{', '.join(migrated)}] table(s), which the client no longer "
                         f"reads, to profiles: [{', '.join(migrated)}] and a route each; apply "
                         "writes each as its own profile file")

    def duplicate_names(self, clients: list[Observation]) -> None:
        """List entries found by a display name (``models[name=…]``, Continue's) where one
        name would stand for two models: two entries with one name, or an entry named after
        another entry's model id — taosync names its entries by model id, so apply would
        rewrite the first one. A conflict: the user renames one first."""
        from taosync.formats.base import Match, keypath_parse

        for o in clients:
            by_name: dict[str, dict[str, Seen]] = {}
            for seen in (s for found in o.slots.values() for s in found):
                try:
                    path = keypath_parse(seen.key)
                except ValueError:
                    continue
                for seg in path:
                    if isinstance(seg, Match) and seg.field == "name":
                        by_name.setdefault(seg.value, {})[str(seen.value)] = seen
            models = {m: seen for found in by_name.values() for m, seen in found.items()}
            for name, found in by_name.items():
                clash = dict(found)
                if name in models and name not in found:
                    clash[name] = models[name]
                if len(clash) < 2:
                    continue
                self.add("conflict", "models",
                         f"{o.client}: the display name {name!r} would stand for "
                         f"{len(clash)} models ({', '.join(sorted(clash))}); taosync names its "
                         "entries by model id, so apply would rewrite the wrong one — rename "
                         "the entry first",
                         [self.item(o.client, seen, model) for model, seen in clash.items()],
                         "the routes below still name each model id")

    def build(self) -> Proposal:
        sources = {o.client: [display_path(p, self.home) for p in o.files] for o in self.obs if o.files}
        for o in self.obs:
            self.migrate_legacy_profiles(o)
        clients = self.partition()
        self.duplicate_names(clients)
        if not clients:
            apps = ", ".join(o.client for o in self.mcp_apps)
            self.add("problem", "gateway",
                     "no client is configured for a gateway (no base URL found); nothing to "
                     "import — start from `taosync init`" + (
                         f" ({apps} take{'s' if len(self.mcp_apps) == 1 else ''} only MCP "
                         f"servers: import them with a gateway client)" if apps else ""))
            return Proposal(None, "", self.findings, self.read, sources,
                            {"reference": None}, {})
        gw, primary = self.gateway(clients)
        named = self.more_gateways(clients, primary)
        if named:  # the clients on the other gateways have keys of their own
            primary = primary - {c for _, _, chosen in named for c in chosen}
        key = self.key([o for o in clients if not named or o.client in primary], primary)
        model_ids, routes, default, assignments = self.routes(clients, primary)
        if not model_ids:
            self.add("problem", "models",
                     f"found the gateway {gw['base_url']} but no model id in any client; add "
                     f"one to a client (or start from `taosync init` with this base_url)")
            return Proposal(None, "", self.findings, self.read, sources, key, gw)
        secrets = [s.value for o in clients for s in o.keys]
        headers = self.headers(clients)
        if headers:
            gw["headers"] = headers
        gw["key"] = key["reference"]

        gateways: dict[str, dict] = {}
        on: dict[str, str] = {}
        for name, g, chosen in named:
            from taosync.fleet.gateways import env_prefix

            group = [o for o in clients if o.client in chosen]
            found = self.key(group, chosen, default_env=env_prefix(name) + "API_KEY")
            g["key"] = found["reference"]
            gateways[name] = g
            on.update({c: name for c in chosen})
            if found["env"] is not None and found["export_hint"]:
                self.add("note", "key", f"gateway {name} ({', '.join(sorted(chosen))}): "
                         f"{found['export_hint']}")
        client_cfg: dict[str, dict] = {}
        for o in clients:
            cfg: dict = {"gateway": on[o.client]} if o.client in on else {}
            for slot, route in assignments.get(o.client, {}).items():
                _set_slot(cfg, slot, route)
            settings = dict(o.settings)
            if settings.get("secrets") == "reference" and key["env"] is None \
                    and o.key_helper is None:
                settings.pop("secrets")
            cfg.update(settings)
            client_cfg[o.client] = cfg
        for o in self.mcp_apps:
            client_cfg[o.client] = dict(o.settings)

        data: dict = {"version": 1, "gateway": {"base_url": gw["base_url"], "key": gw["key"]}}
        for extra in ("anthropic_base_url", "openai_base_url", "gemini_base_url", "headers"):
            if extra in gw:
                data["gateway"][extra] = gw[extra]
        if gateways:
            data["gateways"] = gateways
        data["models"] = {m: {} for m in model_ids}
        data["routes"] = routes
        if default is not None:
            data["default_route"] = default
        data["clients"] = client_cfg
        mcp = self.mcp(secrets, gw)
        if mcp:
            data["mcp_servers"] = mcp
        gateway_info = {"base_url": gw["base_url"], "clients": sorted(primary, key=lambda c: self.order[c]),
                        "others": [o.client for o in clients if o.client not in primary
                                   and o.client not in on],
                        **({"gateways": {n: sorted(c) for n, _, c in named}} if named else {})}
        text = emit(data, self, key, gateway_info, sources)
        return Proposal(data, text, self.findings, self.read, sources, key, gateway_info,
                        mcp_secrets=self.mcp_secrets, secrets=list(self.secret_values))


def _by_key(clients: list[Observation]) -> list[list[Observation]]:
    """Clients on one gateway root, split by the literal key their files hold (the first
    key found first; a client holding none goes with the first)."""
    parts: list[tuple[Any, list[Observation]]] = []
    loose: list[Observation] = []
    for o in clients:
        secret = o.keys[0].value if o.keys else None
        if secret is None:
            loose.append(o)
            continue
        for held, members in parts:
            if held == secret:
                members.append(o)
                break
        else:
            parts.append((secret, [o]))
    if not parts:
        return [loose]
    parts[0][1].extend(loose)
    return [members for _, members in parts]


def _unwritable(value: Any) -> bool:
    """A value holding a control character or a line separator (refused by the loader)."""
    return isinstance(value, str) and any(
        ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in value)


#: host labels that name no gateway (``api.``, ``llm.``, ``.com``)
_GENERIC_LABELS = frozenset("api www gateway llm ai com net org io dev".split())


def _gateway_name(url: str, taken: set[str]) -> str:
    """A gateway name from its URL's host (``llm.corp.example`` → ``corp``; an address
    or localhost → ``gateway2``…), not yet ``taken`` (which it joins)."""
    import re as _re

    host = (urlsplit(url).hostname or "").lower()
    labels = [p for p in host.split(".") if p and p not in _GENERIC_LABELS]
    base = labels[0] if labels and not _re.fullmatch(r"[0-9]+", labels[0]) \
        and host != "localhost" else "gateway"
    base = _re.sub(r"[^a-z0-9_-]", "-", base)
    if not _re.match(r"[a-z]", base):
        base = "gw-" + base
    name, n = base, 2
    while name in taken or name == "gateway":
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def _looks_secret(label: str, text: Any) -> bool:
    """A literal MCP env/header value that is a token: by its name or by its prefix."""
    if not isinstance(text, str) or not text.strip() or "${" in text:
        return False
    # by name only when the value could be a token (TOKEN_LIMIT: 4000 is not)
    return looks_like_token(text) or (secret_name(label) and could_be_token(text))


def describe_mcp(value: dict) -> str:
    """An MCP entry in one line, naming env and header variables but never their values."""
    if "command" in value:
        text = " ".join([value["command"], *value.get("args", [])])
        if value.get("env"):
            text += f" (env: {', '.join(value['env'])})"
        if value.get("cwd"):
            text += f" (cwd: {value['cwd']})"
        return text
    text = value["url"] + (" (sse)" if value.get("transport") == "sse" else "")
    if value.get("headers"):
        text += f" (headers: {', '.join(value['headers'])})"
    return text


def _split_key(key: str) -> list[str]:
    from taosync.formats.base import keypath_parse

    return [str(s) for s in keypath_parse(key)]


def build(observations: list[Observation], *, home: Path,
          environ: Mapping[str, str]) -> Proposal:
    """Merge what the clients say into a proposed fleet (see the module docstring)."""
    proposal = _Builder(observations, home=home, environ=environ).build()
    proposal.secrets = [s.value for o in observations for s in o.keys
                        if isinstance(s.value, Secret)] + proposal.secrets
    return proposal
