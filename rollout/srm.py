"""Sample ratio mismatch (SRM): did each arm get the share of users it was assigned?

A split that silently sends the wrong share of users to an arm (a treatment that fails
for some users, who then land in the control; a cache keyed on the arm; a bot filter
applied to one arm) biases every comparison of the experiment, and nothing in the
metrics shows it. So every split is checked, sequentially, for as long as it runs.

The test (Lindon & Malek 2022)
------------------------------
Users arrive one at a time and land in arm ``i`` with probability ``θᵢ``; the null says
``θ = θ₀``, the assigned shares. Lindon & Malek 2022 (§3, the Dirichlet–multinomial
test) mix the alternative over a Dirichlet prior ``θ ~ Dir(α)`` and compare it with the
null: after counts ``x`` the Bayes factor is

    Eₙ = [ B(α + x) / B(α) ] / Πᵢ θ₀ᵢ^xᵢ,      B(a) = Πᵢ Γ(aᵢ) / Γ(Σᵢ aᵢ)     (:func:`log_e_value`)

a nonnegative martingale of mean 1 under the null (the posterior predictive over the
null's likelihood, one user at a time), so by Ville's inequality ``P(ever Eₙ ≥ 1/a) ≤ a``
however often it is read: ``1/Eₙ`` is an anytime-valid p-value. The split is flagged at
``p < 0.001``, ``E ≥ 1000`` (the level of Microsoft's ExP, Eppo and GrowthBook). The
prior is ``α = c · θ₀`` with ``c = 100`` (the concentration of Lindon's own SRM code);
any prior fixed in advance keeps the guarantee, ``c`` only trades early power against
power on small deviations. ``Eₙ`` depends on the counts only, not their order, so the
service can compute it from its counters at any time.

Shares that change (ramps, pauses)
----------------------------------
The input is a list of :class:`Period`: the shares in force during the period and the
users first seen in it, per arm. Within a period the test above applies with that
period's ``θ₀``; across periods the per-period factors multiply (each is a martingale of
mean 1 given everything before it, so their product is too). A zero share with users in
it is a mismatch outright (infinite evidence). The *expected* counts, which the message
and the minimum deviation use, are the sums over periods of the period's users times its
shares.

A minimum deviation
-------------------
With millions of users the test detects a deviation too small to matter (0.1 % of the
treatment's users lost to a rare client bug). A split is *flagged* only when the
evidence passes ``1/alpha`` **and** some arm's observed share differs from its expected
share by at least ``min_relative`` of that share (default 1 %) and by at least
``min_absolute`` (default 0.1 percentage point), so a large experiment does not alarm on
nothing. The e-value and p-value are reported either way.

Interleaving's splits
---------------------
Team draft decides by a coin which team picks first, so the first pick is 50/50, and so
is each position's team (with two rankers the pairs of positions after the shared top
are drafted in coin-ordered pairs). :func:`team_balance` counts both from the teams of
each impression; :func:`check` on the first-pick counts, and :func:`check_positions` on
the per-position counts (the level split over the positions, Bonferroni), are the same
sequential test against equal shares.

Pure: numpy and scipy only.

Examples
--------
>>> split = Period({"control": 0.9, "treatment": 0.1}, {"control": 9_190, "treatment": 810})
>>> r = check([split])
>>> r.flagged, r.arm
(True, 'treatment')
>>> print(r.message)  # doctest: +NORMALIZE_WHITESPACE
the treatment got 8.1 % of users where 10 % were assigned
(810 of 10,000; e-value 1.6e+08, p < 0.001)
>>> check([Period({"a": 0.5, "b": 0.5}, {"a": 5_030, "b": 4_970})]).flagged
False
>>> ramp = [Period({"c": 0.99, "t": 0.01}, {"c": 990, "t": 10}),
...         Period({"c": 0.5, "t": 0.5}, {"c": 4_000, "t": 4_000})]
>>> r = check(ramp)
>>> r.expected == {"c": 4_990.0, "t": 4_010.0}, r.flagged
(True, False)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits import special

#: a split is flagged when its anytime p-value is below this (its e-value above 1/ALPHA)
ALPHA = 0.001
#: the Dirichlet prior is CONCENTRATION × the assigned shares
CONCENTRATION = 100.0
#: the smallest deviation flagged: relative to the expected share, and absolute
MIN_RELATIVE = 0.01
MIN_ABSOLUTE = 0.001


@dataclass(frozen=True)
class Period:
    """The shares in force (arm → share; normalised over the arms listed) and the users
    first seen while they were (arm → count)."""

    shares: Mapping[str, float]
    counts: Mapping[str, int]


@dataclass(frozen=True)
class SRMResult:
    """What :func:`check` found: the evidence, the arm furthest from its share, and a
    sentence for the report."""

    log_e: float
    flagged: bool
    #: the arm whose observed share is furthest (relatively) from its expected share
    arm: str | None
    observed: dict[str, int]
    expected: dict[str, float]
    message: str
    alpha: float = ALPHA
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def e_value(self) -> float:
        return math.exp(min(self.log_e, 700.0))

    @property
    def p_value(self) -> float:
        """The anytime p-value ``min(1, 1/E)`` (of this look: the service keeps the
        smallest seen, or the flag once raised, since the guarantee is for ever)."""
        return math.exp(-max(self.log_e, 0.0))

    def to_json(self) -> dict[str, Any]:
        return {"e_value": self.e_value, "p_value": self.p_value, "flagged": self.flagged,
                "arm": self.arm, "observed": self.observed, "expected": self.expected,
                "message": self.message, "alpha": self.alpha}


def log_e_value(counts: Sequence[float], shares: Sequence[float],
                concentration: float = CONCENTRATION) -> float:
    """``log Eₙ`` of the Dirichlet–multinomial test (module docstring) for one period:
    ``counts`` per arm against ``shares`` (normalised here). Arms of share 0 must have
    no users (else ``inf``).

    >>> round(log_e_value([50, 50], [0.5, 0.5]), 3)   # a fair split: evidence for the null
    -0.348
    >>> log_e_value([50, 50], [1.0, 0.0])
    inf
    """
    x = np.asarray(counts, dtype=float)
    theta = np.asarray(shares, dtype=float)
    if x.shape != theta.shape or np.any(x < 0) or np.any(theta < 0) or theta.sum() <= 0:
        raise ValueError("counts and shares must be nonnegative, of the same length, "
                         "and some share positive")
    theta = theta / theta.sum()
    if np.any(x[theta == 0] > 0):
        return math.inf
    keep = theta > 0
    x, theta = x[keep], theta[keep]
    a = concentration * theta
    log_b = float(special.gammaln(a + x).sum() - special.gammaln((a + x).sum()))
    log_b0 = float(special.gammaln(a).sum() - special.gammaln(a.sum()))
    return log_b - log_b0 - float(special.xlogy(x, theta).sum())


def _label(arm: str) -> str:
    """``the treatment``, ``the control``, ``the team 0``; any other name quoted."""
    words = arm.split()
    if words and words[0] in ("control", "treatment", "team") and len(words) <= 2:
        return f"the {arm}"
    return repr(arm)


def _pct(share: float) -> str:
    return f"{100.0 * share:.3g} %"


def check(periods: Sequence[Period], *, alpha: float = ALPHA,
          min_relative: float = MIN_RELATIVE, min_absolute: float = MIN_ABSOLUTE,
          concentration: float = CONCENTRATION, unit: str = "users") -> SRMResult:
    """The sequential SRM test of ``periods`` (module docstring)."""
    arms: list[str] = []
    for p in periods:
        for a in [*p.shares, *p.counts]:
            if a not in arms:
                arms.append(a)
    observed = dict.fromkeys(arms, 0)
    expected = dict.fromkeys(arms, 0.0)
    log_e = 0.0
    for p in periods:
        x = [int(p.counts.get(a, 0)) for a in arms]
        s = [float(p.shares.get(a, 0.0)) for a in arms]
        n = sum(x)
        if n == 0:
            continue
        if sum(s) <= 0:
            raise ValueError(f"a period has {n} {unit} but no arm has a share")
        log_e += log_e_value(x, s, concentration)
        total_share = sum(s)
        for a, xi, si in zip(arms, x, s, strict=True):
            observed[a] += xi
            expected[a] += n * si / total_share
    total = sum(observed.values())
    arm, worst, big = None, 0.0, False
    for a in arms:
        if total == 0:
            break
        obs, exp = observed[a] / total, expected[a] / total
        dev = abs(obs - exp)
        rel = dev / exp if exp > 0 else (math.inf if dev > 0 else 0.0)
        # the arm furthest from its share; on a tie, one that lost users (the usual
        # culprit: a treatment whose users fell back to the control)
        if rel > worst * (1 + 1e-9) or (arm is not None and rel >= worst * (1 - 1e-9)
                                        and obs < exp):
            arm, worst = a, rel
        big = big or (dev >= min_absolute and rel >= min_relative)
    flagged = bool(log_e >= math.log(1.0 / alpha) and big)
    if arm is None or total == 0:
        message = f"no {unit} yet" if total == 0 else "every arm got its assigned share"
    else:
        obs, exp = observed[arm] / total, expected[arm] / total
        e = math.exp(min(log_e, 700.0))
        p = "p < 0.001" if log_e >= math.log(1000.0) else f"p = {min(1.0, 1.0 / e):.2g}"
        message = (f"{_label(arm)} got {_pct(obs)} of {unit} where {_pct(exp)} were assigned "
                   f"({observed[arm]:,} of {total:,}; e-value {e:.2g}, {p})")
        if not flagged and log_e >= math.log(1.0 / alpha):
            message += f"; below the minimum deviation of {100 * min_relative:g} %"
    return SRMResult(log_e=log_e, flagged=flagged, arm=arm, observed=observed,
                     expected={a: round(v, 6) for a, v in expected.items()},
                     message=message, alpha=alpha)


def team_balance(teams: Sequence[Sequence[int]], m: int = 2,
                 positions: int | None = None) -> tuple[list[int], list[list[int]]]:
    """From the teams of each impression (``record["teams"]`` of team draft: the
    participant index per shown slot, ``-1`` for the shared top), the first-pick counts
    (``[m]``: how often each team picked first) and the per-position counts
    (``[positions][m]``, positions counted from the slot of the first pick).

    >>> team_balance([[-1, 0, 1, 1, 0], [1, 0, 0, 1], [-1, -1, -1]])
    ([1, 1], [[1, 1], [1, 1], [1, 1], [1, 1]])
    """
    first = [0] * m
    depth = positions or max((len(t) for t in teams), default=0)
    per_pos = [[0] * m for _ in range(depth)]
    for row in teams:
        drafted = [t for t in row if t >= 0]
        if not drafted:
            continue
        first[drafted[0]] += 1
        for i, t in enumerate(drafted[:depth]):
            per_pos[i][t] += 1
    while per_pos and not any(per_pos[-1]):
        per_pos.pop()
    return first, per_pos


def check_positions(per_position: Sequence[Sequence[int]], *, alpha: float = ALPHA,
                    **kwargs: Any) -> list[SRMResult]:
    """:func:`check` of each position's team counts against equal shares, each at
    ``alpha / positions`` (Bonferroni: any position flagged wrongly with probability at
    most ``alpha``)."""
    level = alpha / max(len(per_position), 1)
    out = []
    for counts in per_position:
        m = len(counts)
        names = [f"team {j}" for j in range(m)]
        out.append(check([Period(dict.fromkeys(names, 1.0 / m),
                                 dict(zip(names, counts, strict=True)))],
                         alpha=level, unit="drafted documents", **kwargs))
    return out


def check_first_pick(first: Sequence[int], *, alpha: float = ALPHA,
                     **kwargs: Any) -> SRMResult:
    """:func:`check` of team draft's first picks against equal shares."""
    names = [f"team {j}" for j in range(len(first))]
    return check([Period(dict.fromkeys(names, 1.0 / len(first)),
                         dict(zip(names, first, strict=True)))],
                 alpha=alpha, unit="first picks", **kwargs)


__all__ = ["ALPHA", "CONCENTRATION", "MIN_ABSOLUTE", "MIN_RELATIVE", "Period", "SRMResult",
           "check", "check_first_pick", "check_positions", "log_e_value", "team_balance"]
