"""Probabilistic interleaving and multileaving against their generative process
(Hofmann et al., CIKM 2011, §4; Schuth et al., 2015): the marginalized credit equals
the brute-force enumeration of every assignment, exactly, and the shown lists are drawn
with the process's probabilities (seeded; the test states its tolerance).

Long runs of pure code (the enumeration grows as m^len), so in the stats tier
(``scripts/test stats``); the other fidelity checks are in
tests/unit/test_interleaving_fidelity.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import interleaving as il

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
