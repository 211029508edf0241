"""The anytime-valid interval of an A/B comparison: the asymptotic confidence sequence
of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2023, for a difference of means.

The boundary
------------
For i.i.d. values ``X₁, X₂, …`` with mean ``μ`` and finite variance, Waudby-Smith et al.
2023, §2.2 (Theorem 2.2, the Gaussian-mixture asymptotic CS) show that

    μ̂ₙ ± σ̂ₙ · sqrt( 2 (nρ² + 1) / (n² ρ²) · log( sqrt(nρ² + 1) / δ ) )      (:func:`margin`)

covers ``μ`` at every ``n`` at once with probability tending to ``1 − δ``. It is the
two-sided Robbins (1970) normal mixture: the mixture of ``exp(λSₙ − λ²n/2)`` over
``λ ~ N(0, ρ²)`` is ``(nρ² + 1)^(-1/2) exp(ρ²Sₙ² / (2(nρ² + 1)))``, and Ville's
inequality bounds the chance that it ever reaches ``1/δ``; the strong (KMT) approximation
of the standardised sum ``Sₙ`` by a Brownian motion carries this from Gaussian to any
finite-variance data, with the sample standard deviation ``σ̂ₙ`` in place of ``σ``. The
guarantee is asymptotic (the CLT's kind, made time-uniform): it holds as the experiment
grows, checked as often as one likes, not at a fixed small ``n``.

``ρ`` is free; it sets where the sequence is tightest. :func:`rho_for` gives the ``ρ``
that minimises the width at a target number of users ``n*`` (the root of
``x = log(1 + x) + 2 log(1/δ)`` for ``x = n*ρ²``, a Lambert-W expression, as in the
authors' R package ``sequential.causal``, ``best_rho2_exact``). The width far from
``n*`` grows only by a log factor.

The difference of two arms
--------------------------
A comparison of a treatment ``T`` and the control ``C`` sees ``n = n_T + n_C`` users, each
assigned independently to ``T`` with probability ``p`` (the shares) and contributing one
value (:mod:`rollout.ab.moments`). The difference of means ``Δ̂ = X̄_T − X̄_C`` equals, up
to a term of order ``log log n / n`` (the law of the iterated logarithm for ``n_T/n − p``
times that for ``X̄_T − μ_T``), the mean of the i.i.d. terms
``φᵢ = Aᵢ(Yᵢ − μ_T)/p − (1 − Aᵢ)(Yᵢ − μ_C)/(1 − p) + (μ_T − μ_C)`` (the efficient
influence function of a randomised experiment, Waudby-Smith et al. 2023, §4), whose
variance is ``σ²_T/p + σ²_C/(1 − p)``. That remainder is smaller than the boundary's
``sqrt(log n / n)``, so the boundary above applies to ``Δ̂`` with
``σ̂² = n · (s²_T/n_T + s²_C/n_C)`` (:func:`difference_margin`): the usual two-sample
standard error, times ``sqrt(n)``, in the mixture. The arms need not be the same size.

The relative lift ``Δ/μ_C`` uses the delta method (:func:`lift_margin`): the lift
``X̄_T/X̄_C − 1`` is a smooth function of the two means, its linearisation is again a mean
of i.i.d. terms, of variance ``σ²_T/(p μ²_C) + μ²_T σ²_C/((1 − p) μ⁴_C)``, and the same
argument applies (the second-order term is ``O(log log n / n)``). It is not a bound
derived from the interval of ``Δ``: the two intervals are each asymptotically valid,
and the *decision* is taken on ``Δ`` only.

Pure: numpy and scipy only.

Examples
--------
>>> rho = rho_for(10_000, 0.05)
>>> round(rho, 4)
0.0287
>>> [round(float(m), 4) for m in margin(np.array([1_000, 10_000, 100_000]), 0.05, rho)]
[0.1209, 0.0304, 0.0103]
>>> round(float(margin(10_000, 0.05, rho)) / (1.959964 / 100), 2)   # vs a fixed-n CI
1.55
>>> users_to_decide(0.01, 1.0, 0.05, rho)   # a gap of 0.01 standard deviations
105887
"""

from __future__ import annotations

import math

import numpy as np

from bandits import special

#: the number of users the boundary is tuned for when none is given
DEFAULT_TARGET_USERS = 10_000


def rho_for(n_target: float, delta: float) -> float:
    """The ``ρ`` for which :func:`margin` is narrowest at ``n_target`` users (module
    docstring): ``x = n_target · ρ²`` solves ``x = log(1 + x) + 2 log(1/δ)``, i.e.
    ``x = −W₋₁(−δ²/e) − 1``.

    >>> x = rho_for(1.0, 0.05) ** 2
    >>> abs(x - math.log1p(x) - 2 * math.log(1 / 0.05)) < 1e-9
    True
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if not n_target > 0:
        raise ValueError(f"n_target must be positive, got {n_target}")
    x = -float(special.lambertw(-(delta**2) / math.e, k=-1).real) - 1.0
    return math.sqrt(x / float(n_target))


def margin(n, delta: float, rho: float):
    """The standardised half-width after ``n`` observations: multiply by the standard
    deviation of one observation. ``inf`` for ``n < 1``; an array for an array ``n``."""
    if isinstance(n, int | float):  # the scalar path (the report, the estimate's search)
        if n < 1:
            return math.inf
        a = n * rho * rho + 1.0
        return math.sqrt(2.0 * a * math.log(math.sqrt(a) / delta) / (n * n * rho * rho))
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = n * rho * rho + 1.0
        out = np.sqrt(2.0 * a * np.log(np.sqrt(a) / delta) / (n * n * rho * rho))
    out = np.where(n >= 1, out, np.inf)
    return out if out.ndim else float(out)


def difference_margin(var_t: float, n_t: int, var_c: float, n_c: int, delta: float,
                      rho: float) -> float:
    """Half-width of the interval of ``X̄_T − X̄_C`` (module docstring): the margin at
    ``n = n_T + n_C`` times ``sqrt(n · (s²_T/n_T + s²_C/n_C))``. ``inf`` while an arm has
    fewer than two users.

    >>> round(difference_margin(0.25, 5_000, 0.25, 5_000, 0.05, rho_for(10_000, 0.05)), 4)
    0.0304
    """
    if n_t < 2 or n_c < 2 or not (math.isfinite(var_t) and math.isfinite(var_c)):
        return math.inf
    n = n_t + n_c
    return math.sqrt(n * (var_t / n_t + var_c / n_c)) * float(margin(n, delta, rho))


def lift_margin(mean_t: float, var_t: float, n_t: int, mean_c: float, var_c: float,
                n_c: int, delta: float, rho: float) -> float:
    """Half-width of the interval of the relative lift ``X̄_T/X̄_C − 1`` by the delta
    method (module docstring); ``inf`` when the control's mean is not positive."""
    if not mean_c > 0 or n_t < 2 or n_c < 2:
        return math.inf
    v = var_t / n_t / mean_c**2 + mean_t**2 * var_c / n_c / mean_c**4
    n = n_t + n_c
    return math.sqrt(n * v) * float(margin(n, delta, rho))


def users_to_decide(effect: float, sd: float, delta: float, rho: float,
                    limit: int = 10**12) -> int | None:
    """The smallest ``n`` at which ``sd · margin(n)`` is below ``|effect|``: the users the
    comparison needs in all for an interval that excludes 0, if the effect and the
    per-user standard deviation ``sd`` (of the pooled term, ``sqrt(n · SE²)``) stay what
    they are now. ``None`` when it is more than ``limit`` (or the effect is 0).

    The margin decreases with ``n``, so a bisection on ``log n`` finds it.
    """
    effect = abs(float(effect))
    if not effect > 0 or not math.isfinite(sd):
        return None
    if sd <= 0:
        return 2
    if sd * float(margin(limit, delta, rho)) > effect:
        return None
    lo, hi = 1, limit
    while hi - lo > 1:
        mid = math.isqrt(lo * hi) if hi > 4 * lo else (lo + hi) // 2
        if sd * float(margin(mid, delta, rho)) <= effect:
            hi = mid
        else:
            lo = mid
    return hi


__all__ = ["DEFAULT_TARGET_USERS", "difference_margin", "lift_margin", "margin", "rho_for",
           "users_to_decide"]
