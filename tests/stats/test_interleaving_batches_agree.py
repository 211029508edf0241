"""The batch paths of interleaving agree with the others: each method's vectorized engine
(``interleaving.batch``) with the per-request code, and the preference-matrix estimator
with many comparisons per query prepared once with few prepared row by row. Seeded runs
of tens of thousands of simulated searches; each test states its tolerance.

Long statistical runs of pure code, so in the stats tier (``scripts/test stats``); the
other fidelity checks are in tests/unit/test_interleaving_fidelity.py and the estimator's
in tests/unit/test_interleaving_estimate.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import interleaving as il
from interleaving.batch import ENGINES
from interleaving.clicks import CLICK_MODELS
from interleaving.estimate import estimate_matrix
from interleaving.world import World

# ---------------------------------------------------------------------- vectorized engines


@pytest.mark.parametrize("method", il.METHODS)
def test_vectorized_engine_matches_the_per_request_code(method):
    world = World(3, 4, n_queries=40, docs_per_query=(4, 14))  # some lists shorter than k
    a, b, k = 0, 3, 10
    model = CLICK_MODELS["informational"]
    rng = np.random.default_rng(6)
    per_request, n = 0.0, 0
    first_doc = {}
    for _ in range(3000):
        q = world.sample_query(rng)
        rankings = [world.ranking(a, q, k), world.ranking(b, q, k)]
        shown, record = il.interleave(method, rankings, k, rng)
        first_doc[shown[0] == rankings[0][0]] = first_doc.get(shown[0] == rankings[0][0], 0) + 1
        clicked = np.flatnonzero(model.clicks(world.grades(q, shown), rng))
        if len(clicked):
            per_request += il.credit(record, clicked)[0][2]
            n += 1
    mix, credit = ENGINES[method]
    top = world.top_k(k)
    q = rng.integers(world.n_queries, size=30000)
    A, B = top[a, q], top[b, q]
    shown, info = mix(A, B, rng)
    assert ((shown >= 0).sum(axis=1) == np.minimum(k, world.n_docs[q])).all()
    assert all(len(set(row[row >= 0])) == (row >= 0).sum() for row in shown[:500])
    grades = np.where(shown >= 0, world.grade_table[q[:, None], np.maximum(shown, 0)], -1)
    clicks = model.clicks_batch(grades, rng)
    has = clicks.any(axis=1)
    batch = credit(info, clicks)[has].mean()
    # per-request mean over ~2,900 duels (SE <= 0.0093) vs batch over ~29,000
    # (SE <= 0.003): 0.04 is > 4 combined SE
    assert per_request / n == pytest.approx(batch, abs=0.04)
    # the shown lists agree too: how often A's top document leads the page
    p_request = first_doc.get(True, 0) / 3000
    p_batch = (shown[:, 0] == A[:, 0]).mean()
    assert p_request == pytest.approx(p_batch, abs=0.04)


# ---------------------------------------------------------------------- the estimator's batches
def test_batches_with_many_comparisons_per_query_match_few():
    # large batches prepare each (pair, query) once; small ones prepare each row: the
    # two paths must estimate the same matrix (different random streams, so statistically)
    w = World(4, 3, n_queries=100)
    big = estimate_matrix(w, "probabilistic", "navigational", 8000, np.random.default_rng(1),
                          batch_size=24000)  # 3 pairs x 100 queries < 24,000 rows
    small = estimate_matrix(w, "probabilistic", "navigational", 8000, np.random.default_rng(2),
                            batch_size=90)  # < 100 queries: each row prepared
    # ~7,700 duels each: SE <= 0.0057 per entry, 0.03 is ~3.7 combined SE
    assert np.abs(big - small).max() < 0.03
