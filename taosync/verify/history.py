"""Verify history: one JSON line per probe result in ``<state dir>/history.jsonl``.

The record holds what stats needs (model, backend, ok, latency, tokens), the diagnosis
code and which key the probe sent (where it was read, its redacted form and a keyed hash)
— never the key, the prompt or the answer. ``taosync stats`` summarises it per model:
the measure a routing table can be tuned by. Standard library only.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

FILE = "history.jsonl"
#: past this size the file is rewritten, keeping the newest KEEP records and, per model,
#: at least ``keep`` (the routing window) of its latest: bounded, and the score still reads
MAX_BYTES = 2 * 1024 * 1024
KEEP = 4000


def path(state_dir: Path) -> Path:
    return Path(state_dir) / FILE


def records_for(results: Iterable[Any], *, stub: bool = False, when: float | None = None,
                run_id: str | None = None, hmac_key: bytes | None = None) -> list[dict[str, Any]]:
    from taosync.verify.runner import key_source

    when = time.time() if when is None else when
    run_id = run_id or uuid.uuid4().hex[:12]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
    out = []
    for r in results:
        out.append({
            "ts": stamp, "t": round(when, 3), "run": run_id, "stub": stub,
            "model": r.model, "backend": r.backend, "protocol": r.protocol,
            "clients": list(r.clients), "routes": [x for x in r.routes if x],
            "url": r.url, "ok": r.ok, "status": r.status,
            "code": r.diagnosis.code if r.diagnosis else None,
            "latency_ms": None if r.latency is None else round(r.latency * 1000, 1),
            "ttfb_ms": None if r.ttfb is None else round(r.ttfb * 1000, 1),
            "tokens_in": r.tokens_in, "tokens_out": r.tokens_out,
            "attempts": r.attempts,
            **_key_record(getattr(r, "key", None), key_source, hmac_key),
        })
    return out


def _key_record(key: Any, source: Any, hmac_key: bytes | None) -> dict[str, Any]:
    if key is None:
        return {}
    out = {"key_source": source(key), "key": key.redacted()}
    if hmac_key is not None:
        from taosync.fleet.secrets import value_hash

        out["key_hash"] = value_hash(hmac_key, key.reveal())
    return out


def append(state_dir: Path, results: Iterable[Any], *, stub: bool = False,
           key: Any = None, keep: int = 20) -> Path:
    """Append one run's results (one write, so concurrent runs never interleave lines)
    through the System in effect,
    scrubbed of ``key`` and of every key a probe sent. The key hash uses taosync's
    per-machine hashing key (the one state.json's hashes use), when there is one."""
    from taosync.engine.state import StateStore
    from taosync.verify.diagnose import scrub

    results = list(results)
    store = StateStore(Path(state_dir))
    hmac_key = store.hmac_key(create=False)
    lines = records_for(results, stub=stub,
                        hmac_key=None if store.hmac_is_ephemeral else hmac_key)
    target = path(state_dir)
    if not lines:
        return target
    text = "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in lines)
    for used in [key, *(getattr(r, "key", None) for r in results)]:
        text = scrub(text, used)
    system = store.system  # a dry run or a read-only proof sees this write too
    system.make_private_dir(target.parent)  # the state directory: 0700 whatever the umask
    system.append(target, text.encode("utf-8"), 0o600)
    _cap(system, target, keep)
    return target


def _cap(system: Any, target: Path, keep: int, max_bytes: int | None = None) -> None:
    """Rewrite an oversized history (atomically) down to its newest :data:`KEEP` records,
    plus the latest ``keep`` of every model that would otherwise lose them."""
    try:
        if system.stat(target).st_size <= (MAX_BYTES if max_bytes is None else max_bytes):
            return
        lines = system.read_bytes(target).splitlines(keepends=True)
    except OSError:
        return
    per_model: dict[str, int] = {}
    kept: list[bytes] = []
    for index in range(len(lines) - 1, -1, -1):
        try:  # a damaged line (not UTF-8 included) is dropped, never mended into a record
            model = json.loads(lines[index].decode("utf-8")).get("model")
        except (ValueError, AttributeError):
            continue
        seen = per_model.get(model, 0)
        if len(kept) < KEEP or seen < keep:
            kept.append(lines[index])
            per_model[model] = seen + 1
    system.write_atomic(target, b"".join(reversed(kept)), 0o600)


def read(state_dir: Path) -> list[dict[str, Any]]:
    """Every record; a damaged line — not JSON, not UTF-8, a field of the wrong type —
    is skipped, not fatal (the file is taosync's, but a crash or an editor may damage
    it; plan, status, route and stats read it)."""
    from taosync.engine.system import current

    try:
        raw = current().read_bytes(path(state_dir))
    except OSError:  # absent, or not a regular file: no history to go by
        return []
    out = []
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError too
            continue
        if isinstance(rec, dict) and _well_formed(rec):
            out.append(rec)
    return out


#: the fields readers do arithmetic or comparisons on → the types records_for writes
_NUMBER = (int, float)
_FIELDS = {"ts": (str,), "t": _NUMBER, "ok": (bool,), "latency_ms": _NUMBER,
           "ttfb_ms": _NUMBER, "tokens_in": (int,), "tokens_out": (int,),
           "backend": (str,), "code": (str,), "stub": (bool,)}


def _well_formed(rec: dict[str, Any]) -> bool:
    """``rec`` has a model, and each field it has holds the type taosync wrote (or null)."""
    if not isinstance(rec.get("model"), str):
        return False
    for name, types in _FIELDS.items():
        value = rec.get(name)
        if value is None:
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return False
    routes = rec.get("routes")
    return routes is None or (isinstance(routes, list) and
                              all(isinstance(r, str) for r in routes))


def summarize(records: Iterable[dict[str, Any]], *, include_stub: bool = False,
              by: str = "model") -> list[dict]:
    """Per model (or ``by="route"``: per route the probe stood for): runs, failures,
    median and p95 latency, median TTFB (passing probes), tokens in/out."""
    per: dict[str, dict[str, Any]] = {}
    for rec in records:
        if rec.get("stub") and not include_stub:
            continue
        if by == "route":
            for route in rec.get("routes") or ():
                _add(per, route, rec, by)
        else:
            _add(per, rec["model"], rec, by)
    out = []
    for row in per.values():
        lat, ttfb = row.pop("_lat"), row.pop("_ttfb")
        row["median_latency_ms"] = round(statistics.median(lat)) if lat else None
        p95 = _p95(lat)  # None for no latencies
        row["p95_latency_ms"] = round(p95) if p95 is not None else None
        row["median_ttfb_ms"] = round(statistics.median(ttfb)) if ttfb else None
        row["failure_rate"] = round(row["failures"] / row["runs"], 3) if row["runs"] else 0.0
        out.append(row)
    out.sort(key=lambda r: r[by])
    return out


def _p95(values: list[float]) -> float | None:
    from taosync.verify.routing import p95

    return p95(values)


def _add(per: dict, name: str, rec: dict, by: str) -> None:
    row = per.setdefault(name, {
        by: name, "backend": None, "runs": 0, "failures": 0,
        "_lat": [], "_ttfb": [], "tokens_in": 0, "tokens_out": 0,
        "last": None, "last_ok": None, "last_code": None})
    row["backend"] = rec.get("backend") or row["backend"]
    row["runs"] += 1
    if not rec.get("ok"):
        row["failures"] += 1
    elif isinstance(rec.get("latency_ms"), (int, float)):
        row["_lat"].append(rec["latency_ms"])
        if isinstance(rec.get("ttfb_ms"), (int, float)):
            row["_ttfb"].append(rec["ttfb_ms"])
    row["tokens_in"] += rec.get("tokens_in") or 0
    row["tokens_out"] += rec.get("tokens_out") or 0
    if row["last"] is None or (rec.get("ts") or "") >= row["last"]:
        row["last"], row["last_ok"], row["last_code"] = (rec.get("ts"), rec.get("ok"),
                                                         rec.get("code"))


def route_choices(spec: dict, store: Any) -> dict:
    """Route → :class:`~taosync.verify.routing.Choice` for the routes with candidates in
    ``spec`` (:meth:`FleetLogic.routing_spec`), from this history (``store``: the
    StateStore whose directory holds it, and whose state remembers the last choices, kept
    when no candidate is healthy). Reads nothing without such a route."""
    if not spec:
        return {}
    from taosync.engine.system import current
    from taosync.verify import routing

    recorded = store.load().routes
    previous = {name: rec.get("model") for name, rec in recorded.items()}
    since = {name: t for name, t in ((n, routing.chosen_since(rec))
                                     for n, rec in recorded.items()) if t is not None}
    records = read(store.root)
    system = current()
    now = system.now()
    # a choice hangs on the clock only where a record ages past max_age, or a dwell ends:
    # until the first such moment it stays as made (a certified answer holds until then)
    age = routing.parse_duration(spec.get("max_age", routing.DEFAULT_MAX_AGE))
    later = [t for t in (routing.when(r) + age for r in records) if t > now]
    choices = routing.choose_all(spec, records, now=now, previous=previous, since=since)
    later += [c.held_until for c in choices.values() if c.held_until is not None]
    # … or where a record dated ahead of the clock starts to count
    later += [routing.when(r) - routing.FUTURE_SKEW for r in records
              if routing.dated_ahead(r, now)]
    system.holds_until(min(later) if later else float("inf"))
    return choices
