"""Each treatment against the control: difference, relative lift, their anytime-valid
intervals, the decision, and the users still needed.

:func:`analyse` takes the per-arm :class:`~rollout.ab.moments.Moments` of one metric
(what the service reads from its counters) and returns one :class:`Comparison` per
treatment. The intervals are :mod:`rollout.ab.sequence`'s (Waudby-Smith et al. 2023),
so they hold at every look at once: the report can be read as often as one likes.

* **Several treatments** (``K − 1`` of them against one control): each comparison is
  made at ``δ/(K − 1)`` (Bonferroni), so that the chance that *any* interval of the
  experiment ever misses its true difference is at most δ. A treatment added later
  raises ``K``; a comparison decided at the looser level before keeps that level, as in
  :mod:`bandits.confidence`.
* **The decision** is taken when the interval of the difference excludes 0, and only once
  each arm has ``min_users`` users (the sample variance of a handful of users is not to
  be trusted with an asymptotic guarantee; a later start only removes looks, so it keeps
  the guarantee). ``direction`` is the sign of the difference; whether that is better
  depends on the metric (:data:`rollout.ab.moments.METRICS`).
* **A bounded metric's variance** (a rate, :data:`rollout.ab.moments.METRICS`'s
  ``bounds``) is computed with two pseudo-users added, one at each end of the range
  (the idea of Agresti & Coull 1998's "add two successes and two failures", for the
  variance only; the estimate is the plain mean). Without it, an arm whose first
  hundred users all clicked (a CTR of 0.99 is common) has a sample variance of 0 and
  an interval of width 0, which the offline runs showed missing the true difference
  in a third of the runs; the pseudo-users weigh ``2/n`` and vanish as ``n`` grows, so
  the asymptotic guarantee is unchanged.
* **Users still needed**: with the difference and the per-user variance as observed,
  :func:`rollout.ab.sequence.users_to_decide` solves the boundary for the number of
  users (of the two arms together) at which the interval would exclude 0; the report
  gives how many more that is. An estimate, not a promise: the observed difference is
  noisy, and a true difference of 0 is never decided.

Pure: numpy and scipy only.

Examples
--------
>>> control = Moments(n=20_000, total=11_000.0, squares=8_000.0)   # mean 0.55
>>> treat = Moments(n=20_000, total=11_600.0, squares=8_500.0)     # mean 0.58
>>> c = compare(treat, control, delta=0.05)
>>> round(c.difference, 3), [round(x, 4) for x in c.interval], c.decided, c.direction
(0.03, [0.0204, 0.0396], True, 1)
>>> round(c.lift, 4), [round(x, 4) for x in c.lift_interval]
(0.0545, [0.0367, 0.0724])
>>> c.sentence("ctr")
'ctr: 0.58 against 0.55, +0.03 (+5.5 %), interval +0.0204 to +0.0396 at 95 %: higher (better)'
>>> small = compare(Moments(400, 232.0, 170.0), Moments(400, 220.0, 160.0), delta=0.05)
>>> small.decided, small.users_needed > 0
(False, True)
>>> sorted(analyse({"prod": control, "new": treat, "alt": control}, "prod", 0.05))
['alt', 'new']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rollout.ab.moments import METRICS, Moments
from rollout.ab.sequence import (
    DEFAULT_TARGET_USERS,
    difference_margin,
    lift_margin,
    rho_for,
    users_to_decide,
)

#: users each arm needs before a comparison may decide
MIN_USERS = 100


@dataclass(frozen=True)
class Comparison:
    """One treatment against the control, on one metric, at level ``delta`` (already
    the Bonferroni share when the experiment has several treatments)."""

    n_treatment: int
    n_control: int
    mean_treatment: float
    mean_control: float
    difference: float
    interval: tuple[float, float]
    lift: float
    lift_interval: tuple[float, float]
    decided: bool
    #: +1 the treatment's mean is higher, −1 lower, 0 undecided
    direction: int
    #: users (both arms) still needed for a decision at the current estimate; 0 once
    #: decided, None when no estimate can be made (no difference, or too few users)
    users_needed: int | None
    delta: float

    def covers(self, true_difference: float) -> bool:
        """Whether the interval holds ``true_difference``."""
        return self.interval[0] <= true_difference <= self.interval[1]

    def sentence(self, metric: str | None = None) -> str:
        """The comparison in one line a product manager can read."""
        lo, hi = self.interval
        pct = f"{100.0 * (1.0 - self.delta):g} %"
        lift = f" ({100.0 * self.lift:+.1f} %)" if math.isfinite(self.lift) else ""
        verdict = ("higher" if self.direction > 0 else "lower" if self.direction < 0
                   else "not decided")
        name = f"{metric}: " if metric else ""
        if metric in METRICS and self.direction:
            good = (self.direction > 0) == METRICS[metric].higher_is_better
            verdict += f" ({'better' if good else 'worse'})"
        return (f"{name}{self.mean_treatment:.3g} against {self.mean_control:.3g}, "
                f"{self.difference:+.3g}{lift}, interval {lo:+.3g} to {hi:+.3g} at {pct}: "
                f"{verdict}")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else
                    [None if not math.isfinite(x) else x for x in v] if isinstance(v, tuple)
                    else v) for k, v in out.items()}


def _variance(m: Moments, bounds: tuple[float, float] | None) -> float:
    if bounds is None:
        return m.variance
    lo, hi = bounds
    return Moments(m.n + 2, m.total + lo + hi, m.squares + lo * lo + hi * hi).variance


def compare(treatment: Moments, control: Moments, delta: float, *,
            n_target: float = DEFAULT_TARGET_USERS, min_users: int = MIN_USERS,
            rho: float | None = None, bounds: tuple[float, float] | None = None,
            estimate: bool = True) -> Comparison:
    """The treatment against the control at level ``delta`` (module docstring).

    Parameters
    ----------
    treatment, control
        The arms' per-user moments of one metric.
    delta
        The comparison's error rate (pass ``δ/(K − 1)`` yourself, or use :func:`analyse`).
    n_target
        Users of the two arms together at which the interval is tuned to be narrowest
        (:func:`rollout.ab.sequence.rho_for`); ignored when ``rho`` is given.
    min_users
        Users each arm needs before the comparison may decide.
    rho
        The boundary's ``ρ``, when already computed.
    bounds
        The range of a user's value for a bounded metric (a rate: ``(0, 1)``), which
        the variance is computed with (module docstring); None for an unbounded one.
    estimate
        Estimate the users still needed (False: ``users_needed`` is None when undecided).
    """
    rho = rho_for(n_target, delta) if rho is None else rho
    nt, nc = treatment.n, control.n
    mt, mc = treatment.mean, control.mean
    vt, vc = _variance(treatment, bounds), _variance(control, bounds)
    diff = mt - mc if nt and nc else math.nan
    half = difference_margin(vt, nt, vc, nc, delta, rho)
    lift = mt / mc - 1.0 if nt and nc and mc > 0 else math.nan
    lhalf = lift_margin(mt, vt, nt, mc, vc, nc, delta, rho)
    lo, hi = diff - half, diff + half
    decided = nt >= min_users and nc >= min_users and (lo > 0 or hi < 0)
    needed: int | None = 0
    if not decided:
        needed = None
        if estimate and nt >= 2 and nc >= 2 and math.isfinite(half):
            n = nt + nc
            total = users_to_decide(diff, math.sqrt(n * (vt / nt + vc / nc)), delta, rho)
            if total is not None:
                needed = max(total, n, 2 * min_users) - n
    return Comparison(
        n_treatment=nt, n_control=nc, mean_treatment=mt, mean_control=mc,
        difference=diff, interval=(lo, hi), lift=lift, lift_interval=(lift - lhalf,
                                                                      lift + lhalf),
        decided=decided, direction=(1 if lo > 0 else -1) if decided else 0,
        users_needed=needed, delta=float(delta))


def analyse(arms: Mapping[str, Moments], control: str, delta: float, *,
            n_target: float = DEFAULT_TARGET_USERS, min_users: int = MIN_USERS,
            metric: str | None = None) -> dict[str, Comparison]:
    """Every treatment of ``arms`` (name → moments of one metric) against ``control``,
    each at ``δ/(K − 1)`` (Bonferroni over the ``K − 1`` treatments): the chance that any
    of the intervals ever misses is at most δ. ``metric`` (a name of
    :data:`~rollout.ab.moments.METRICS`) gives the bounds of a rate."""
    if control not in arms:
        raise ValueError(f"the control {control!r} is not one of the arms {sorted(arms)}")
    treatments = [a for a in arms if a != control]
    level = float(delta) / max(len(treatments), 1)
    rho = rho_for(n_target, level)
    bounds = METRICS[metric].bounds if metric is not None else None
    return {t: compare(arms[t], arms[control], level, rho=rho, min_users=min_users,
                       bounds=bounds) for t in treatments}


def certified_best(arms: Mapping[str, Moments], delta: float, *,
                   n_target: float = DEFAULT_TARGET_USERS, min_users: int = MIN_USERS,
                   metric: str | None = None, higher_is_better: bool = True) -> str | None:
    """The arm shown better than every other arm, or None: "which of the ``K`` is best",
    the question interleaving answers, asked of an A/B test with ``K`` arms.

    Every pair is compared at ``δ/(2(K − 1))``, the per-edge level of
    :mod:`bandits.confidence`, and its union argument carries over: an arm other than
    the best is certified only if the best was shown worse by it, one of the ``K − 1``
    comparisons into the best, each wrong with probability at most ``δ/(2(K − 1))``; with
    two arms tied best, one of the ``2(K − 1)`` comparisons into them. So a certificate is
    wrong, ever, with probability at most δ.

    >>> a, b = Moments.of([0.0, 1.0] * 3000), Moments.of([0.0, 1.0, 1.0] * 2000)
    >>> certified_best({"a": a, "b": b, "c": a}, 0.05, metric="ctr")
    'b'
    >>> certified_best({"a": a, "c": a}, 0.05) is None
    True
    """
    names = list(arms)
    K = len(names)
    if K < 2:
        return None
    level = float(delta) / (2.0 * (K - 1))
    rho = rho_for(n_target, level)
    bounds = METRICS[metric].bounds if metric is not None else None
    sign = 1 if higher_is_better else -1
    for x in names:
        if all(compare(arms[x], arms[y], level, rho=rho, min_users=min_users,
                       bounds=bounds, estimate=False).direction == sign
               for y in names if y != x):
            return x
    return None


__all__ = ["MIN_USERS", "Comparison", "analyse", "certified_best", "compare"]
