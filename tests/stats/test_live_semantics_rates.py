"""Live and offline select alike in distribution: for every registered policy, seeded
simulator runs that select from copies of the stored state reloaded every few steps (as
the API processes do) against runs that select from the one stored state, with the same
delayed, batched feedback.

Long statistical runs of pure code, so in the stats tier (``scripts/test stats``); the
exact checks of the same semantics are in tests/unit/test_live_semantics.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bandits import ALGORITHMS
from bandits.matrices import bradley_terry, condorcet_winner
from bandits.simulator import simulate_run


# ---------------------------------------------------------------------- statistical
def shown_distribution(res, K: int) -> np.ndarray:
    """Share of selections per unordered pair ``{i, j}`` (and per lone arm ``(i, i)``)."""
    S = res.shown + res.shown.T - np.diag(np.diag(res.shown))
    v = S[np.triu_indices(K)].astype(float)
    return v / v.sum()


def tv(a: np.ndarray, b: np.ndarray) -> float:
    """Total variation distance between the mean distributions of two sets of runs."""
    return 0.5 * float(np.abs(a.mean(axis=0) - b.mean(axis=0)).sum())


STAT_K, STAT_RUNS = 6, 8
#: enough steps for every run to name the Condorcet winner (MergeDTS converges later)
STAT_STEPS = {"mergedts": 2000}


@pytest.mark.parametrize("name", ALGORITHMS)
def test_reloaded_copies_agree_with_one_stored_state(name):
    # Same delayed, batched feedback (D = 30 selections, groups of B = 5), selections
    # either from the stored state itself ("plain") or from a copy reloaded every
    # R = 10 selections with a per-step generator ("reloaded"), as live. 8 seeds each,
    # paired (a seed fixes the arm shuffle and the outcome draws), 1,200 steps.
    #
    # Statistic: the total variation (TV) between the two mean distributions of the
    # pairs shown. Tolerance from the sampling noise: with per-pair spread σ_k across
    # runs of the plain configuration, the difference of two means of n runs has
    # standard deviation s_k = σ_k √(2/n) per pair, and the expected TV under "same
    # behaviour" is E0 = ½ Σ_k s_k √(2/π) (normal approximation). The tolerance is
    # 3·E0; on these runs it is 1.3 to 8 times the 99th percentile of the TV over all
    # 2^8 relabelings of the pairs (the noise of this very design, which the test also
    # checks), and the observed TV is at most 0.55 of it. Losing the stored state at
    # reloads (the bug of issue 10) gives RMED1 a TV of 0.85 against a tolerance of
    # 0.08 (2,000 steps).
    P = bradley_terry(STAT_K, gap=0.1, spread=3.0, seed=7)
    steps = STAT_STEPS.get(name, 1200)
    live = {"delay": 30, "feedback_batch": 5}
    plain = [simulate_run(P, name, steps, seed=s, **live) for s in range(STAT_RUNS)]
    reloaded = [
        simulate_run(P, name, steps, seed=s, reload_every=10, **live) for s in range(STAT_RUNS)
    ]
    a = np.array([shown_distribution(r, STAT_K) for r in plain])
    b = np.array([shown_distribution(r, STAT_K) for r in reloaded])
    s = a.std(axis=0, ddof=1) * math.sqrt(2 / STAT_RUNS)
    tolerance = 3 * 0.5 * float((s * math.sqrt(2 / math.pi)).sum())
    noise = [
        tv(np.where(f, b, a), np.where(f, a, b))
        for f in (
            np.array(x, dtype=bool)[:, None]
            for x in itertools.product((False, True), repeat=STAT_RUNS)
        )
    ]
    assert np.quantile(noise, 0.99) <= tolerance, "tolerance narrower than the noise"
    assert tv(a, b) <= tolerance, (tv(a, b), tolerance)
    # identified winner: the same arm for (at least) all seeds but one, and it is the
    # Condorcet winner
    same = sum(x.identified == y.identified for x, y in zip(plain, reloaded, strict=True))
    assert same >= STAT_RUNS - 1
    named = [r.identified for r in plain + reloaded]
    assert max(set(named), key=named.count) == condorcet_winner(P)
