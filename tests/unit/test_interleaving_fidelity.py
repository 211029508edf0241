"""Fidelity of the interleaving methods (Hofmann et al. 2011/2013's requirements).

Statistical tests use fixed seeds; each states its tolerance and why. Outcomes lie in
[0, 1], so a mean of n outcomes has standard error at most 0.5/sqrt(n).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import interleaving as il
from interleaving.clicks import CLICK_MODELS, PositionBasedModel
from interleaving.estimate import estimate_matrix
from interleaving.world import World

#: random clicks in Hofmann et al.'s sense (CIKM 2011, §3, fidelity condition 1): every
#: shown document is clicked with the same probability, whatever its grade or position
RANDOM_CLICKS = PositionBasedModel("random", [0.3] * 5, examination=[1.0] * 10)


# ---------------------------------------------------------------------- brute force
# The marginalized credit against the enumeration of every assignment, and the shown
# lists' probabilities: in the stats tier, tests/stats/test_probabilistic_interleaving_law.py.


# ---------------------------------------------------------------------- no preference
# Random clicks give no preference (seeded runs of tens of thousands of searches): in the
# stats tier, tests/stats/test_interleaving_no_preference.py.


@pytest.mark.parametrize("method", il.METHODS)
def test_identical_rankers_tie_whatever_is_clicked(method):
    rng = np.random.default_rng(0)
    ranking = [f"d{i}" for i in range(8)]
    m = 2 if method in il.PAIRWISE_METHODS else 3
    for _ in range(20):
        _shown, record = il.interleave(method, [ranking] * m, 6, rng)
        clicked = rng.choice(6, size=rng.integers(1, 7), replace=False).tolist()
        for _, _, s in il.credit(record, clicked):
            assert s == pytest.approx(0.5, abs=1e-12)


# ---------------------------------------------------------------------- preference
@pytest.mark.parametrize("method", il.METHODS)
def test_a_dominating_ranker_wins(method):
    # 10 documents with grades; the good ranker sorts by grade, the bad one reverses it
    grades = {f"d{i}": g for i, g in enumerate([4, 3, 3, 2, 1, 1, 0, 0, 0, 0])}
    good = sorted(grades, key=lambda d: -grades[d])
    bad = good[::-1]
    middle = good[3:] + good[:3]  # grades 2, 1, 1, 0, ... with the best three last
    rankings = [good, bad] if method in il.PAIRWISE_METHODS else [good, bad, middle]
    rng = np.random.default_rng(7)
    model = CLICK_MODELS["navigational"]
    total, n = np.zeros((3, 3)), 0
    for _ in range(1000):
        shown, record = il.interleave(method, rankings, 5, rng)
        g = np.array([grades[d] for d in shown])
        clicked = np.flatnonzero(model.clicks(g, rng))
        for a, b, s in il.credit(record, clicked):
            total[a, b] += s
        n += len(clicked) > 0
    # the good ranker wins the large majority: 0.8 leaves > 5 SE (SE <= 0.017) below
    # every method's true rate
    assert total[0, 1] / n > 0.8
    if len(rankings) == 3:
        assert total[0, 2] / n > 0.6 and total[1, 2] / n < 0.4


@pytest.mark.parametrize("method", il.METHODS)
def test_interleaving_agrees_with_ndcg_for_clearly_separated_rankers(method):
    world = World(5, 6, n_queries=100)
    P = estimate_matrix(world, method, "navigational", 4000, np.random.default_rng(2))
    nd = world.ndcg_all(10)
    separated = [(i, j) for i in range(6) for j in range(6) if nd[i] - nd[j] > 0.05]
    assert len(separated) >= 10
    for i, j in separated:
        # separated by > 0.05 NDCG@10, the preference is far beyond sampling noise
        # (SE ~ 0.008 at 4,000 comparisons)
        assert P[i, j] > 0.5, (method, i, j, P[i, j], nd[i], nd[j])


def test_clear_best_ranker_is_the_condorcet_winner():
    world = World(8, 8, n_queries=100, clear_best=True)
    P = estimate_matrix(world, "probabilistic", "navigational", 3000, np.random.default_rng(0))
    best = world.true_best
    assert world.kinds[best] == "clear best"
    # navigational clicks compress margins, but the clear best wins every pair by more
    # than 0.03 (> 3 SE at ~2,900 duels, SE ~ 0.009)
    assert all(P[best, j] > 0.53 for j in range(8) if j != best)


def test_balanced_interleave_is_biased_under_random_clicks_on_some_lists():
    # Hofmann, Whiteson, de Rijke (CIKM 2011, §3): balanced interleave can prefer a ranker
    # when clicks carry no information. With A = (a, b, c), B = (d, a, b) and a page of 3,
    # both possible pages hold a, b, d, and a click on a or b credits A, one on d B.
    rankings = [["a", "b", "c"], ["d", "a", "b"]]
    rng = np.random.default_rng(1)
    means = {}
    for method in ("balanced", "team_draft", "probabilistic"):
        total, n = 0.0, 0
        for _ in range(4000):
            shown, record = il.interleave(method, rankings, 3, rng)
            clicked = [int(rng.integers(len(shown)))]
            total += il.credit(record, clicked)[0][2]
            n += 1
        means[method] = total / n
    # SE <= 0.008 at 4,000 duels: balanced's 2/3 is far above 0.6; the others stay
    # within 0.04 (5 SE) of 0.5
    assert means["balanced"] > 0.6
    assert means["team_draft"] == pytest.approx(0.5, abs=0.04)
    assert means["probabilistic"] == pytest.approx(0.5, abs=0.04)


# ---------------------------------------------------------------------- multileave vs pairwise
def test_multileaving_two_rankers_is_pairwise_interleaving():
    rankings = [["a", "b", "c", "d", "e"], ["c", "a", "f", "b", "g"]]
    for multi, pair in (("team_draft_multileave", "team_draft"),
                        ("probabilistic_multileave", "probabilistic")):
        for seed in range(20):
            s1, r1 = il.interleave(multi, rankings, 5, np.random.default_rng(seed))
            s2, r2 = il.interleave(pair, rankings, 5, np.random.default_rng(seed))
            assert s1 == s2
            for clicked in ([0], [1, 3], [0, 2, 4]):
                assert il.credit(r1, clicked) == il.credit(r2, clicked)


@pytest.mark.parametrize("multi,pair", [("team_draft_multileave", "team_draft"),
                                        ("probabilistic_multileave", "probabilistic"),
                                        ("sosm", "team_draft"),
                                        ("sosm", "probabilistic")])
def test_multileave_pairwise_outcomes_agree_with_pairwise_interleaving(multi, pair):
    world = World(5, 5, n_queries=100)
    P = estimate_matrix(world, pair, "navigational", 4000, np.random.default_rng(4))
    rng = np.random.default_rng(5)
    total, n = np.zeros((5, 5)), 0
    for _ in range(1500):
        q = world.sample_query(rng)
        shown, record = il.interleave(multi, [world.ranking(r, q, 10) for r in range(5)], 10,
                                      rng)
        clicked = np.flatnonzero(CLICK_MODELS["navigational"].clicks(world.grades(q, shown),
                                                                     rng))
        for a, b, s in il.credit(record, clicked):
            total[a, b] += s
        n += len(clicked) > 0
    M = total / n
    clear = [(a, b) for a, b in itertools.combinations(range(5), 2) if abs(P[a, b] - 0.5) > 0.08]
    assert len(clear) >= 4
    for a, b in clear:
        # pairs the pairwise method separates by > 0.08 are ordered the same way by the
        # multileaved comparison of all five (its SE ~ 0.013 at ~1,450 duels)
        assert (M[a, b] > 0.5) == (P[a, b] > 0.5), (a, b, M[a, b], P[a, b])


# ---------------------------------------------------------------------- vectorized engines
# Each engine against the per-request code (seeded runs of 30,000 searches): in the
# stats tier, tests/stats/test_interleaving_batches_agree.py.
