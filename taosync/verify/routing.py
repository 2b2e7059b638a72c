"""Which candidate a choosing route resolves to, from the verify history.

Pure and deterministic: the same spec, history and clock give the same choice, whatever
order the history's records come in (they are sorted on their own content first). No
proxy sits in the request path: taosync writes the chosen model into each client's file.

* A candidate is **healthy** when, for every protocol the route's clients speak (those
  its probes used within ``max_age``; else every protocol the candidate was probed with),
  its latest probe passed and is not older than ``max_age``. Never probed (by one of
  them) is **unknown**, not healthy.
* ``failover``: the first healthy candidate in preference order.
* ``score``: the healthy candidate with the best
  ``weight / (median latency s × median tokens × cost)`` over its last ``window``
  passing probes; a tie keeps the earlier candidate.
* No healthy candidate: keep the previous choice (else the preferred one), and say so.
* Hysteresis (``dwell``, default 10m): a route on a healthy choice made from a healthy
  history stays on it for ``dwell`` after it moved there, whatever the policy now
  prefers ("held on X until 12:34 (dwell 10m)"), so a flapping backend rewrites the
  clients at most once a dwell each way. A choice that is no longer healthy is left at
  once: a broken backend is never kept for hysteresis.
* A probe dated more than :data:`FUTURE_SKEW` after now does not count (yet).

Standard library only: the no-op fast path calls it to check the render cache.
"""

from __future__ import annotations

import calendar
import json
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

#: base(task) by route name, when the route gives no ``weight``
DEFAULT_WEIGHTS = {"fast": 1.0, "balanced": 0.7, "deep": 0.4}
OTHER_WEIGHT = 0.5
DEFAULT_WINDOW = 20
DEFAULT_MAX_AGE = "24h"
#: the least time on a healthy choice before another healthy candidate takes over: two
#: rounds of the 5m ``watch --reverify`` README suggests, so one good probe of a backend
#: that just failed does not move every client back (and again at its next failure)
DEFAULT_DWELL = "10m"

HEALTHY, FAILING, STALE, UNKNOWN = "healthy", "failing", "stale", "unknown"
#: how far in the future a probe may be dated and still count (clock skew between the
#: machines that share a history); a later one — a clock set wrong, a forged line —
#: would stay "the latest probe" of its candidate, pinning the route, so it is left out
#: until the clock reaches it
FUTURE_SKEW = 300.0


def parse_duration(text: str | float | int) -> float:
    """``30s`` / ``5m`` / ``24h`` / ``7d`` (or a number of seconds) → seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text))
    if not m:
        raise ValueError(f"{text!r} is not a duration (e.g. 30s, 5m, 24h, 7d)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def weight_of(route: str, weight: float | None) -> float:
    return float(weight) if weight is not None else DEFAULT_WEIGHTS.get(route, OTHER_WEIGHT)


def when(record: dict) -> float:
    """A record's time (epoch seconds): ``t`` when it has one, else its ``ts`` stamp."""
    t = record.get("t")
    if isinstance(t, (int, float)):
        return float(t)
    try:
        return float(calendar.timegm(time.strptime(record.get("ts") or "", "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


def dated_ahead(record: dict, now: float) -> bool:
    """Is ``record`` dated beyond :data:`FUTURE_SKEW` after ``now`` (not counted yet)?"""
    return when(record) > now + FUTURE_SKEW


def _order(record: dict) -> tuple:
    # time first; records at the same instant in a fixed order (a failure last, so it
    # wins a tie: a pessimistic, order-independent reading)
    return (when(record), bool(record.get("ok")) is False,
            json.dumps(record, sort_keys=True, default=str))


@dataclass
class Candidate:
    """One candidate as the choice saw it."""

    model: str
    health: str = UNKNOWN
    cost: float = 1.0
    runs: int = 0
    median_latency_ms: float | None = None
    p95_latency_ms: float | None = None
    median_tokens: float | None = None
    score: float | None = None
    last: dict | None = None  # the latest record that decided its health

    @property
    def why(self) -> str:
        """``HTTP 500 at 12:03``, ``timeout at 12:03``, ``no probe yet``, …"""
        if self.health == UNKNOWN:
            return "no probe yet"
        rec = self.last or {}
        at = time.strftime("%H:%M", time.gmtime(when(rec)))
        if self.health == STALE:
            return f"last probe at {at} is older than max_age"
        if self.health == FAILING:
            what = f"HTTP {rec['status']}" if rec.get("status") else (rec.get("code") or "failed")
            return f"{what} at {at}"
        return f"passed at {at}"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "health": self.health, "why": self.why,
                "runs": self.runs, "median_latency_ms": self.median_latency_ms,
                "p95_latency_ms": self.p95_latency_ms, "median_tokens": self.median_tokens,
                "cost": self.cost, "score": self.score}


@dataclass
class Choice:
    route: str
    policy: str
    model: str
    reason: str
    healthy: bool  # False: no candidate is healthy (the previous choice was kept)
    candidates: list[Candidate] = field(default_factory=list)
    #: held by the dwell (hysteresis): until when (epoch s), and the model the policy
    #: alone would choose now
    held_until: float | None = None
    instead: str | None = None

    @property
    def preferred(self) -> str:
        return self.candidates[0].model

    def to_dict(self) -> dict[str, Any]:
        return {"route": self.route, "policy": self.policy, "model": self.model,
                "reason": self.reason, "healthy": self.healthy, "preferred": self.preferred,
                "candidates": [c.to_dict() for c in self.candidates],
                **({"held_until": _stamp(self.held_until), "instead": self.instead}
                   if self.held_until is not None else {})}


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def p95(values: list[float]) -> float | None:
    """The 95th percentile (nearest rank), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def assess(model: str, records: Iterable[dict], *, now: float, window: int, max_age: float,
           cost: float = 1.0, weight: float = 1.0,
           protocols: Iterable[str] | None = None) -> Candidate:
    """One candidate's health, medians and score from the (non-stand-in) history."""
    mine = sorted((r for r in records if r.get("model") == model), key=_order)
    out = Candidate(model, cost=float(cost), runs=len(mine))
    if not mine:
        return out
    latest: dict[str, dict] = {}
    for rec in mine:
        latest[rec.get("protocol") or ""] = rec  # sorted: the last one wins
    wanted = list(protocols) if protocols else list(latest)
    deciding = [latest[p] for p in wanted if p in latest]
    if len(deciding) < len(wanted):  # a protocol with no record yet
        out.health = UNKNOWN
    else:
        failed = [rec for rec in deciding if not rec.get("ok")]
        if failed:
            out.health, out.last = FAILING, max(failed, key=_order)
        else:
            out.last = min(deciding, key=_order)
            out.health = STALE if now - when(out.last) > max_age else HEALTHY
    passing = [r for r in mine if r.get("ok") and isinstance(r.get("latency_ms"), (int, float))]
    passing = passing[-window:]
    if passing:
        lat = [float(r["latency_ms"]) for r in passing]
        tokens = [float((r.get("tokens_in") or 0) + (r.get("tokens_out") or 0)) for r in passing]
        out.median_latency_ms = statistics.median(lat)
        out.p95_latency_ms = p95(lat)
        out.median_tokens = statistics.median(tokens)
        seconds = max(out.median_latency_ms / 1000, 1e-3)
        out.score = weight / (seconds * max(out.median_tokens, 1.0) * out.cost)
    return out


def choose(route: str, spec: dict, records: Iterable[dict], *, now: float | None = None,
           window: int = DEFAULT_WINDOW, max_age: float | str = DEFAULT_MAX_AGE,
           previous: str | None = None, protocols: Iterable[str] | None = None,
           since: float | None = None) -> Choice:
    """The candidate ``route`` resolves to. ``spec``: ``{candidates, policy, weight,
    dwell, cost: {model: multiplier}}`` (:meth:`FleetLogic.routing_spec`); ``records``:
    verify history (stand-in runs are left out here); ``previous``: the last choice;
    ``since``: when the route moved to it, if it was chosen healthy (the dwell runs
    from there)."""
    now = time.time() if now is None else now
    choice = _choose(route, spec, records, now=now, window=window, max_age=max_age,
                     previous=previous, protocols=protocols)
    return _hold(choice, spec, previous, since, now)


def _hold(choice: Choice, spec: dict, previous: str | None, since: float | None,
          now: float) -> Choice:
    """Hysteresis: keep a healthy ``previous`` choice until ``dwell`` after ``since``
    when the policy would move the route to another healthy candidate."""
    if (since is None or previous is None or previous == choice.model or not choice.healthy
            or previous not in spec["candidates"]):
        return choice
    dwell = parse_duration(DEFAULT_DWELL if spec.get("dwell") is None else spec["dwell"])
    kept = next(c for c in choice.candidates if c.model == previous)
    if kept.health != HEALTHY or not since <= now < since + dwell:
        # never held on a broken (or unproven) backend, nor by a switch dated in the
        # future (a skewed clock would pin the route); or it dwelt enough
        return choice
    until = since + dwell
    at = time.strftime("%H:%M", time.gmtime(until))
    return Choice(choice.route, choice.policy, previous,
                  f"held on {previous} until {at} (dwell {_span(dwell)}); then "
                  f"{choice.model}: {choice.reason}", True, choice.candidates,
                  held_until=until, instead=choice.model)


def _span(seconds: float) -> str:
    """``10m``, ``90s``, ``2h`` — a duration as fleet.yaml spells it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _choose(route: str, spec: dict, records: Iterable[dict], *, now: float,
            window: int, max_age: float | str, previous: str | None,
            protocols: Iterable[str] | None) -> Choice:
    """The policy's choice from the history alone (no hysteresis)."""
    age = parse_duration(max_age)
    records = [r for r in records if not r.get("stub") and not dated_ahead(r, now)]
    policy = spec.get("policy") or "failover"
    weight = weight_of(route, spec.get("weight"))
    costs = spec.get("cost") or {}
    if protocols is None:  # the protocols the route's clients spoke within max_age
        protocols = sorted({r.get("protocol") or "" for r in records
                            if route in (r.get("routes") or ()) and now - when(r) <= age}) or None
    candidates = [assess(m, records, now=now, window=window, max_age=age,
                         cost=costs.get(m, 1.0), weight=weight, protocols=protocols)
                  for m in spec["candidates"]]
    healthy = [c for c in candidates if c.health == HEALTHY]
    first = candidates[0]
    if not healthy:
        keep = (previous if previous is not None and previous in spec["candidates"]
                else first.model)
        return Choice(route, policy, keep, f"no healthy candidate ({_troubles(candidates)}); "
                      f"kept {keep}", False, candidates)
    if policy == "score":
        best = healthy[0]
        for c in healthy[1:]:
            if (c.score or 0) > (best.score or 0):  # strictly better: a tie keeps the earlier
                best = c
        reason = f"best score {best.score:.4g}" if best.score is not None else "healthy"
        others = [c for c in candidates if c is not best]
        if others:
            reason += " (" + "; ".join(
                f"{c.model}: " + (f"score {c.score:.4g}" if c.health == HEALTHY and c.score
                                  is not None else c.why) for c in others) + ")"
        return Choice(route, policy, best.model, reason, True, candidates)
    best = healthy[0]
    if best is first:
        return Choice(route, policy, best.model, "preferred candidate healthy", True, candidates)
    skipped = candidates[:candidates.index(best)]
    return Choice(route, policy, best.model, _troubles(skipped), True, candidates)


def _troubles(candidates: list[Candidate]) -> str:
    return "; ".join(f"{c.model}: {c.why}" for c in candidates)


def choose_all(spec: dict, records: Iterable[dict], *, now: float | None = None,
               previous: dict[str, str] | None = None,
               since: dict[str, float] | None = None) -> dict[str, Choice]:
    """Every choosing route of a :meth:`FleetLogic.routing_spec` → its :class:`Choice`.
    ``since``: route → when it moved to its ``previous`` choice, chosen healthy."""
    if not spec:
        return {}
    records = list(records)
    previous, since = previous or {}, since or {}
    return {name: choose(name, route, records, now=now, window=spec.get("window", DEFAULT_WINDOW),
                         max_age=spec.get("max_age", DEFAULT_MAX_AGE),
                         previous=previous.get(name), since=since.get(name))
            for name, route in spec["routes"].items()}


def chosen_since(recorded: dict) -> float | None:
    """When a route moved to the choice the state recorded (its ``since`` stamp), if that
    choice was made healthy — the start of its dwell; None: no dwell to honour."""
    if not recorded.get("healthy"):
        return None
    try:
        return float(calendar.timegm(time.strptime(recorded.get("since") or "",
                                                   "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None
