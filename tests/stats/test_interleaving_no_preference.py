"""Random clicks give no preference (Hofmann et al., CIKM 2011, §3, fidelity condition
1), for every interleaving method: tens of thousands of seeded simulated searches, each
test stating its tolerance from the standard error (outcomes lie in [0, 1], so a mean of
n outcomes has standard error at most 0.5/sqrt(n)).

Long statistical runs of pure code, so in the stats tier (``scripts/test stats``); the
other fidelity checks are in tests/unit/test_interleaving_fidelity.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import interleaving as il
from interleaving.clicks import PositionBasedModel
from interleaving.estimate import estimate_matrix
from interleaving.world import World

#: random clicks in Hofmann et al.'s sense (CIKM 2011, §3, fidelity condition 1): every
#: shown document is clicked with the same probability, whatever its grade or position
RANDOM_CLICKS = PositionBasedModel("random", [0.3] * 5, examination=[1.0] * 10)


def test_random_clicks_give_no_preference_for_every_method():
    world = World(5, 6, n_queries=100)
    for method in il.METHODS:
        P, N = estimate_matrix(world, method, RANDOM_CLICKS, 20000, np.random.default_rng(1),
                               return_counts=True)
        # ~19,500 clicked comparisons per pair: SE <= 0.0036; 15 pairs, 0.02 is > 5 SE
        assert N[0, 1] > 15000
        assert np.abs(P - 0.5).max() < 0.02, method


@pytest.mark.parametrize("method", il.METHODS)
def test_random_clicks_per_request_give_no_preference(method):
    # the per-request code on one fixed pair (plus a third ranker for multileaving)
    world = World(2, 3, n_queries=50)
    rng = np.random.default_rng(3)
    m = 2 if method in il.PAIRWISE_METHODS else 3
    total, n = np.zeros((m, m)), 0
    for _ in range(3000):
        q = world.sample_query(rng)
        shown, record = il.interleave(method, [world.ranking(r, q, 10) for r in range(m)], 10,
                                      rng)
        clicked = np.flatnonzero(RANDOM_CLICKS.clicks(world.grades(q, shown), rng))
        for a, b, s in il.credit(record, clicked):
            total[a, b] += s
        n += len(clicked) > 0
    # ~2,900 duels: SE <= 0.0093 per pair; 0.045 is ~5 SE
    assert n > 2500
    for a, b in itertools.combinations(range(m), 2):
        assert total[a, b] / n == pytest.approx(0.5, abs=0.045)
