"""Fidelity of the interleaving methods (Hofmann et al. 2011/2013's requirements).

Statistical tests use fixed seeds; each states its tolerance and why. Outcomes lie in
[0, 1], so a mean of n outcomes has standard error at most 0.5/sqrt(n).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import interleaving as il
from interleaving.batch import ENGINES
from interleaving.clicks import CLICK_MODELS, PositionBasedModel
from interleaving.estimate import estimate_matrix
from interleaving.world import World

#: random clicks in Hofmann et al.'s sense (CIKM 2011, §3, fidelity condition 1): every
#: shown document is clicked with the same probability, whatever its grade or position
RANDOM_CLICKS = PositionBasedModel("random", [0.3] * 5, examination=[1.0] * 10)


# ---------------------------------------------------------------------- brute force
def _pi_joint(rankings, shown, tau=3.0):
    """P(shown, assignment) for every assignment, by following the generative process.

    Enumerates all ``m^len`` assignments without using the factorization.
    """
    m = len(rankings)
    out = {}
    for assignment in itertools.product(range(m), repeat=len(shown)):
        remaining = [list(r) for r in rankings]
        prob = 1.0
        for doc, j in zip(shown, assignment, strict=True):
            live = [i for i in range(m) if remaining[i]]
            if j not in live or doc not in remaining[j]:
                prob = 0.0
                break
            weights = {d: (r + 1.0) ** -tau for r, d in enumerate(rankings[j]) if d in
                       remaining[j]}
            prob *= (1.0 / len(live)) * weights[doc] / sum(weights.values())
            for rem in remaining:
                if doc in rem:
                    rem.remove(doc)
        out[assignment] = prob
    return out


def _brute_force_outcomes(rankings, shown, clicked):
    """Expected outcome of every pair, enumerating the posterior over assignments."""
    joint = _pi_joint(rankings, shown)
    z = sum(joint.values())
    m = len(rankings)
    res = []
    for a, b in itertools.combinations(range(m), 2):
        e = 0.0
        for assignment, p in joint.items():
            ca = sum(1 for c in clicked if assignment[c] == a)
            cb = sum(1 for c in clicked if assignment[c] == b)
            e += p / z * (1.0 if ca > cb else 0.5 if ca == cb else 0.0)
        res.append((a, b, e))
    return res


CASES = [
    [["a", "b", "c", "d"], ["b", "d", "a", "e"]],
    [["a", "b", "c"], ["a", "b", "c"]],  # identical
    [["a", "b"], ["c", "d", "e"]],  # disjoint, unequal length
    [["a", "b", "c", "d"], []],  # one empty
    [["a", "b", "c", "d"], ["d", "c", "b", "a"], ["b", "x", "a"]],  # three rankers
    [["a", "b", "c"], ["c"], ["b", "c", "a", "y"]],
]


@pytest.mark.parametrize("rankings", CASES)
def test_marginalized_pi_equals_brute_force_enumeration(rankings):
    method = "probabilistic" if len(rankings) == 2 else "probabilistic_multileave"
    rng = np.random.default_rng(17)
    for _ in range(8):
        shown, record = il.interleave(method, rankings, 5, rng)
        for r in range(1, len(shown) + 1):
            for clicked in itertools.combinations(range(len(shown)), r):
                fast = il.credit(record, list(clicked))
                slow = _brute_force_outcomes(rankings, shown, clicked)
                for (a, b, s), (a2, b2, s2) in zip(fast, slow, strict=True):
                    assert (a, b) == (a2, b2)
                    assert s == pytest.approx(s2, abs=1e-12)


def test_pi_samples_lists_with_the_generative_probabilities():
    # every possible shown list of two 3-document rankings, with its exact probability
    rankings = [["a", "b", "c"], ["c", "a", "d"]]
    docs = ["a", "b", "c", "d"]
    exact = {}
    for shown in itertools.permutations(docs, 3):
        p = sum(_pi_joint(rankings, list(shown)).values())
        if p > 0:
            exact[shown] = p
    assert sum(exact.values()) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    n = 20000
    counts = dict.fromkeys(exact, 0)
    for _ in range(n):
        shown, _ = il.interleave("probabilistic", rankings, 3, rng)
        counts[tuple(shown)] += 1
    # each frequency has SE <= 0.5/sqrt(20000) = 0.0035; 0.015 is > 4 SE
    for shown, p in exact.items():
        assert counts[shown] / n == pytest.approx(p, abs=0.015)


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
