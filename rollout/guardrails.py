"""Guardrails: the rules that pause an experiment automatically when it hurts users.

Per experiment of a placement, from counters the service keeps (below), :func:`evaluate`
returns the rules that trip, each with a sentence saying why; the service then pauses the
experiment (its share goes to control at once), writes an audit entry, sets
``rankduel_guardrail_tripped{placement, experiment, rule} 1`` and shows the reason in the
report and on ``/ui/``. The rules:

``failures``
    a ranker of the experiment fails (error or timeout) on more than
    ``max_failure_rate`` of its calls;
``empty``
    a ranker's empty-result rate (answers with no result, over answered calls) exceeds
    the control ranker's by more than ``max_empty_excess``;
``latency``
    a ranker's p95 latency is over ``max_p95_ratio`` times the control's *and* over it
    by at least ``min_p95_excess_ms``;
``abandonment``
    the abandonment rate of the experiment's pages (settled pages without a click)
    exceeds the control pages' by more than ``max_abandonment_excess``.

Each threshold is a :class:`bandits.params.Param` in :data:`PARAMS` (declared once: the
validation of an experiment's ``guardrails`` object, the defaults and the docs read it).
The defaults are conservative: a rule needs ``min_calls`` calls per ranker (and as many of
the control's), or ``min_pages`` settled pages on both sides, before it can trip, and a
rate rule trips only when the rate's lower confidence bound, ``z`` standard errors below
the observed value (Wilson's score interval for one rate, the normal interval of a
difference for two), is past its threshold, so a handful of bad searches never trips and a
ranker whose every call fails trips as soon as it has ``min_calls`` calls. The service
evaluates the rules repeatedly; ``z = 3`` keeps the rate of false trips over many checks
small, but it is not a sequential guarantee.

Counters the service keeps, per experiment of a placement, since its traffic last
(re)started (reset on resume, or a resumed experiment trips again at once):

* for each of the experiment's rankers, on the experiment's searches, and for the
  control ranker on the placement's control searches (:class:`RankerCounters`):
  ``calls`` (every call), ``failures`` (errors and timeouts), ``empty`` (answers with no
  result) and ``latency``, the answered calls counted per bucket of
  :data:`LATENCY_EDGES_MS` (:func:`latency_bucket` gives the index);
* for the experiment's pages and for the control's pages (:class:`PageCounters`):
  ``settled`` (pages whose outcome is known: credited, or expired without a click) and
  ``abandoned`` (settled without a click).

Pure: no I/O.

Examples
--------
>>> ok = RankerCounters(calls=1000, failures=2, empty=50, latency=(0, 980, 18))
>>> down = RankerCounters(calls=250, failures=250)
>>> [t.rule for t in evaluate(None, {"new": down}, PageCounters(), ok, PageCounters())]
['failures']
>>> trip = evaluate(None, {"new": down}, PageCounters(), ok, PageCounters())[0]
>>> trip.reason  # doctest: +NORMALIZE_WHITESPACE
"ranker 'new' failed 250 of its 250 calls (100 %, errors and timeouts);
 the limit is 5 % (max_failure_rate)"
>>> evaluate(None, {"new": RankerCounters(calls=20, failures=20)}, PageCounters(), ok,
...          PageCounters())
[]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bandits.params import Param, check, resolve

#: the guardrail thresholds, declared once (module docstring)
PARAMS: dict[str, Param] = {
    "enabled": Param(bool, True, "pause the experiment automatically when a rule trips "
                     "(false: never)"),
    "min_calls": Param(int, 200, "calls of a ranker, and of the control ranker, before the "
                       "failures, empty and latency rules apply to it", ge=1),
    "max_failure_rate": Param(float, 0.05, "largest share of a ranker's calls that may fail "
                              "(errors and timeouts)", gt=0, le=1),
    "max_empty_excess": Param(float, 0.05, "how much a ranker's empty-result rate may "
                              "exceed the control ranker's (0.05: 5 points)", gt=0, le=1),
    "max_p95_ratio": Param(float, 2.0, "how many times the control ranker's p95 latency a "
                           "ranker's p95 may reach", gt=1),
    "min_p95_excess_ms": Param(float, 100.0, "the latency rule also needs the ranker's p95 "
                               "to exceed the control's by this many milliseconds", ge=0),
    "min_pages": Param(int, 500, "settled pages of the experiment, and of the control, "
                       "before the abandonment rule applies", ge=1),
    "max_abandonment_excess": Param(float, 0.05, "how much the abandonment rate (settled "
                                    "pages without a click) of the experiment's pages may "
                                    "exceed the control pages' (0.05: 5 points)",
                                    gt=0, le=1),
    "z": Param(float, 3.0, "confidence of the rate rules: a rate trips only when its lower "
               "confidence bound, z standard errors below it, is past the threshold", gt=0),
}
#: upper edges (ms) of the latency buckets; one more bucket counts the slower calls
LATENCY_EDGES_MS: tuple[float, ...] = (5, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300,
                                       400, 500, 750, 1000, 1500, 2000, 3000, 5000)
#: the rules, in the order they are evaluated
RULES = ("failures", "empty", "latency", "abandonment")


@dataclass(frozen=True)
class RankerCounters:
    """What the service counts for one ranker (module docstring)."""

    calls: int = 0
    failures: int = 0
    empty: int = 0
    latency: Sequence[int] = ()

    def __post_init__(self) -> None:
        if min(self.calls, self.failures, self.empty, *self.latency, 0) < 0 or \
                self.failures > self.calls or self.empty > self.calls - self.failures:
            raise ValueError(f"inconsistent ranker counters: {self}; expected "
                             f"0 <= failures <= calls and 0 <= empty <= calls - failures")

    @property
    def answered(self) -> int:
        return self.calls - self.failures


@dataclass(frozen=True)
class PageCounters:
    """What the service counts for the experiment's, or the control's, pages."""

    settled: int = 0
    abandoned: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.abandoned <= self.settled:
            raise ValueError(f"inconsistent page counters: {self}; expected "
                             f"0 <= abandoned <= settled")


@dataclass(frozen=True)
class Trip:
    """A rule that tripped: which, for which ranker (``None`` for the pages), the value
    seen and the threshold, and a sentence for the audit log, the report and ``/ui/``."""

    rule: str
    ranker: str | None
    observed: float
    threshold: float
    reason: str


def check_params(given: Mapping[str, Any]) -> dict[str, Any]:
    """An experiment's ``guardrails`` object checked against :data:`PARAMS` (a
    ``ValueError`` names a bad or unknown threshold)."""
    return check("guardrails", PARAMS, given)


def latency_bucket(ms: float) -> int:
    """The index of the :data:`LATENCY_EDGES_MS` bucket counting a call of ``ms``."""
    return bisect.bisect_left(LATENCY_EDGES_MS, ms)


def p95_ms(counts: Sequence[int]) -> float | None:
    """The 95th percentile of a latency histogram (linear within its bucket; the last,
    open bucket answers its lower edge), or ``None`` when it is empty."""
    total = sum(counts)
    if total == 0:
        return None
    rank, seen = 0.95 * total, 0
    for i, n in enumerate(counts):
        if n and seen + n >= rank:
            if i >= len(LATENCY_EDGES_MS):
                return float(LATENCY_EDGES_MS[-1])
            low = LATENCY_EDGES_MS[i - 1] if i else 0.0
            return low + (LATENCY_EDGES_MS[i] - low) * (rank - seen) / n
        seen += n
    return float(LATENCY_EDGES_MS[-1])


def wilson_lower(x: int, n: int, z: float) -> float:
    """Lower end of Wilson's score interval for a rate of ``x`` in ``n``."""
    if n == 0:
        return 0.0
    p = x / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n))


def excess_lower(x1: int, n1: int, x0: int, n0: int, z: float) -> float:
    """Lower end of the normal interval of ``x1/n1 − x0/n0`` (its standard error from
    rates with one success and one failure added to each, so that it is never 0)."""
    a, b = (x1 + 1) / (n1 + 2), (x0 + 1) / (n0 + 2)
    se = math.sqrt(a * (1 - a) / (n1 + 2) + b * (1 - b) / (n0 + 2))
    return x1 / n1 - x0 / n0 - z * se


def _pct(v: float) -> str:
    return f"{100 * v:.3g} %"


def evaluate(params: Mapping[str, Any] | None, rankers: Mapping[str, RankerCounters],
             pages: PageCounters, control: RankerCounters,
             control_pages: PageCounters) -> list[Trip]:
    """The rules that trip for one experiment (module docstring): ``rankers`` its
    rankers' counters, ``pages`` its pages', ``control`` and ``control_pages`` the
    control's. ``params`` overrides :data:`PARAMS`' defaults. Empty: nothing to do."""
    p = resolve("guardrails", PARAMS, params or {})
    if not p["enabled"]:
        return []
    z, trips = p["z"], []
    for name in sorted(rankers):
        c = rankers[name]
        if c.calls >= p["min_calls"] and wilson_lower(c.failures, c.calls, z) > \
                p["max_failure_rate"]:
            trips.append(Trip(
                "failures", name, c.failures / c.calls, p["max_failure_rate"],
                f"ranker {name!r} failed {c.failures} of its {c.calls} calls "
                f"({_pct(c.failures / c.calls)}, errors and timeouts); the limit is "
                f"{_pct(p['max_failure_rate'])} (max_failure_rate)"))
        if c.answered >= p["min_calls"] and control.answered >= p["min_calls"] and \
                excess_lower(c.empty, c.answered, control.empty, control.answered, z) > \
                p["max_empty_excess"]:
            mine, theirs = c.empty / c.answered, control.empty / control.answered
            trips.append(Trip(
                "empty", name, mine - theirs, p["max_empty_excess"],
                f"ranker {name!r} answered {c.empty} of {c.answered} searches with no "
                f"result ({_pct(mine)}), the control {_pct(theirs)}; the limit is "
                f"{100 * p['max_empty_excess']:.3g} points more (max_empty_excess)"))
        mine_p95, ctrl_p95 = p95_ms(c.latency), p95_ms(control.latency)
        if (c.answered >= p["min_calls"] and control.answered >= p["min_calls"]
                and mine_p95 is not None and ctrl_p95 is not None
                and mine_p95 > p["max_p95_ratio"] * ctrl_p95
                and mine_p95 - ctrl_p95 >= p["min_p95_excess_ms"]):
            trips.append(Trip(
                "latency", name, mine_p95, p["max_p95_ratio"] * ctrl_p95,
                f"ranker {name!r} answers in {mine_p95:.0f} ms at p95, the control in "
                f"{ctrl_p95:.0f} ms; the limit is {p['max_p95_ratio']:g} times the "
                f"control's (max_p95_ratio) and {p['min_p95_excess_ms']:g} ms more "
                f"(min_p95_excess_ms)"))
    if pages.settled >= p["min_pages"] and control_pages.settled >= p["min_pages"] and \
            excess_lower(pages.abandoned, pages.settled, control_pages.abandoned,
                         control_pages.settled, z) > p["max_abandonment_excess"]:
        mine = pages.abandoned / pages.settled
        theirs = control_pages.abandoned / control_pages.settled
        trips.append(Trip(
            "abandonment", None, mine - theirs, p["max_abandonment_excess"],
            f"{pages.abandoned} of the experiment's {pages.settled} pages got no click "
            f"({_pct(mine)}), {_pct(theirs)} of the control's; the limit is "
            f"{100 * p['max_abandonment_excess']:.3g} points more (max_abandonment_excess)"))
    return trips


__all__ = ["LATENCY_EDGES_MS", "PARAMS", "RULES", "PageCounters", "RankerCounters", "Trip",
           "check_params", "evaluate", "latency_bucket", "p95_ms"]
