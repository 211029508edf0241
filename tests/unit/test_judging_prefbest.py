"""prefBest (Yan 2022, Figure 3.2): pairings, pruning, finalization, extra phase, limits."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from judging import judge_from_state, make_judge
from judging.prefbest import PrefBest, PrefBestExtra, complete_pairings, random_pairings


def degrees(edges, items):
    c = Counter(x for e in edges for x in e)
    return {i: c[i] for i in items}


# ---------------------------------------------------------------------- randomPairings
@pytest.mark.parametrize("K,n", [(100, 7), (51, 7), (12, 7), (9, 4), (10, 1), (3, 1)])
def test_random_pairings_are_n_regular_without_repeats(K, n):
    rng = np.random.default_rng(K * 31 + n)
    for _ in range(5):
        E = random_pairings(range(K), n, rng)
        assert len(set(E)) == len(E)  # no pairing repeated
        assert all(a < b for a, b in E)  # no self-pairing
        deg = sorted(degrees(E, range(K)).values())
        if (K * n) % 2 == 0:
            assert deg == [n] * K
        else:  # one item paired with n + 1 others (§3.3.4)
            assert deg == [n] * (K - 1) + [n + 1]
        assert len(E) == (K * n + (K * n) % 2) // 2


def test_random_pairings_complete_when_n_too_large_and_forbidden_respected():
    rng = np.random.default_rng(0)
    assert sorted(random_pairings([3, 5, 8], 7, rng)) == complete_pairings([3, 5, 8])
    forbidden = {(0, 1), (2, 3), (4, 5)}
    E = random_pairings(range(20), 5, rng, forbidden=forbidden)
    assert not set(E) & forbidden
    assert sorted(degrees(E, range(20)).values()) == [5] * 20


def test_random_pairings_cover_pairs_evenly():
    # every pair is equally likely: over many draws no pair is systematically favoured
    rng = np.random.default_rng(7)
    hits = Counter()
    draws = 400
    for _ in range(draws):
        hits.update(random_pairings(range(8), 3, rng))
    expected = draws * 12 / 28  # 12 edges of 28 possible pairs
    counts = np.array([hits[p] for p in complete_pairings(range(8))])
    # binomial sd ~ sqrt(171 * 0.57) ~ 10: a 5-sd band is far wider than the noise
    assert np.all(np.abs(counts - expected) < 50), counts


# ---------------------------------------------------------------------- Figure 3.2
def test_prune_keeps_exactly_the_items_at_or_above_one_half():
    K, n = 40, 7
    rng = np.random.default_rng(1)
    quality = rng.random(K)  # a noisy world: the better item wins with probability 0.8
    outcomes = rng.random(10_000)
    it = iter(outcomes)

    def oracle(a, b):
        p = 0.8 if quality[a] > quality[b] else 0.2
        return float(next(it) < p)

    j = PrefBest(K, n=n, m=9, seed=5)
    pool_before = list(j.pool)
    first = j.request(10_000)  # the whole first phase at once
    # the pruning phase is an n-regular pairing of the pool, no pair twice
    assert len(first) == K * n // 2 and len(set(first)) == len(first)
    assert set(degrees(first, pool_before).values()) == {n}
    wins, count = Counter(), Counter()
    for a, b in first:
        s = oracle(a, b)
        wins[a] += s
        wins[b] += 1 - s
        count[a] += 1
        count[b] += 1
        j.record(a, b, s)
    expected = sorted(i for i in pool_before if wins[i] / count[i] >= 0.5)
    assert sorted(j.pool) == expected
    for i in set(pool_before) - set(expected):  # pruned items carry their evidence
        assert j.excluded[i]["wins"] == wins[i] and j.excluded[i]["n"] == count[i]
    assert j.history[0] == {"phase": "prune", "pool": K, "pairs": K * n // 2,
                            "kept": len(expected)}


def test_prunes_until_m_then_finalizes_with_complete_pairings():
    K = 100
    rng = np.random.default_rng(2)
    j = PrefBest(K, seed=3)  # n = 7, m = 9 (Clarke et al.'s defaults)

    def oracle(a, b):  # Case A with p = 0.75
        return float(rng.random() < (0.75 if a < b else 0.25))

    phases = []
    while not j.done:
        phase, pool, h = j.phase, sorted(j.pool), len(j.history)
        judged = []
        while len(j.history) == h and not j.done:
            for a, b in j.request(10):
                s = oracle(a, b)
                j.record(a, b, s)
                judged.append((a, b, s))
        phases.append((phase, pool, judged))
    *prunes, (last, final_pool, final_judged) = phases
    assert len(prunes) >= 3 and last == "final" and len(final_pool) <= 9
    for phase, pool, judged in prunes:  # "while K > m: Pool <- prune(Pool, K, n)"
        pairs = [(a, b) for a, b, _ in judged]
        assert phase == "prune" and len(pool) > 9
        assert {x for e in pairs for x in e} <= set(pool)
        assert len(set(pairs)) == len(pairs)
        deg = sorted(degrees(pairs, pool).values())
        assert deg[0] == 7 and deg[-1] <= 8 and deg.count(8) <= 1
    # finalize: every pair of the final pool once; the items with the top phase score
    assert sorted((a, b) for a, b, _ in final_judged) == complete_pairings(final_pool)
    wins = Counter()
    for a, b, s in final_judged:
        wins[a] += s
        wins[b] += 1 - s
    top = max(wins[i] for i in final_pool)
    assert j.best() == frozenset(i for i in final_pool if wins[i] == top)
    assert j.result().finished


def test_extra_final_phase_judges_every_final_pair_twice():
    j = PrefBestExtra(6, seed=0)  # 6 <= m: final phase at once
    asked = Counter()
    rng = np.random.default_rng(0)
    while not j.done:
        for a, b in j.request(10):
            asked[(a, b)] += 1
            j.record(a, b, float(rng.random() < 0.5))
    assert set(asked) == set(complete_pairings(range(6)))
    assert set(asked.values()) == {2}
    # scores come from both rounds: the best set is the top of W's row sums
    wins = j.W.sum(axis=1)
    assert j.best() == frozenset(np.flatnonzero(wins == wins.max()).tolist())
    assert [h["phase"] for h in j.history] == ["final", "extra"]


# ---------------------------------------------------------------------- ties, duplicates
def test_all_ties_return_the_whole_final_pool():
    j = PrefBest(5, seed=1)
    while not j.done:
        for a, b in j.request(10):
            j.record(a, b, 0.5)  # a tie adds half a win to each
    assert j.best() == frozenset(range(5))
    assert len(j.result().statement) > 0 and j.W[0, 1] == 0.5


def test_exact_duplicates_of_the_best_item_tie_for_best():
    # items 0 and 3 are the same passage: both beat everything, and between them it is a
    # coin flip; with the extra phase the pair is judged twice: 1-1 keeps both on top
    def oracle(a, b):
        best = {0, 3}
        if a in best and b in best:
            return 0.5
        return 1.0 if a in best else 0.0 if b in best else 0.5

    j = PrefBestExtra(8, seed=2)
    while not j.done:
        for a, b in j.request(10):
            j.record(a, b, oracle(a, b))
    assert j.best() == frozenset({0, 3})


# ---------------------------------------------------------------------- limits, state
def test_budget_and_per_pair_cap_are_respected():
    rng = np.random.default_rng(3)
    j = PrefBest(100, seed=4, budget=300, max_per_pair=1)
    while not j.done:
        batch = j.request(10)
        assert j.n_judgments + j.n_pending <= 300
        for a, b in batch:
            j.record(a, b, float(rng.random() < 0.5))
    assert j.n_judgments == 300
    assert j.N.max() <= 1
    r = j.result()
    assert not r.finished and r.best and "still running" not in r.statement


def test_state_round_trip_mid_run_continues_identically():
    rng = np.random.default_rng(5)
    outcomes = rng.random(5000)
    a = make_judge("prefbest_extra", 60, seed=11, budget=1000)
    pos = 0
    for _ in range(30):  # mid-phase, with judgments pending
        for p, q in a.request(10)[:7]:
            a.record(p, q, float(outcomes[pos] < 0.6))
            pos += 1
    state = json.loads(json.dumps(a.state_dict()))
    b = judge_from_state(state)
    assert isinstance(b, PrefBestExtra) and b.state_dict() == a.state_dict()
    for judge in (a, b):  # the pending pairs come back, then both run on the same coins
        k = pos
        for p, q in sorted(judge.pending):
            for _ in range(judge.pending[(p, q)]):
                judge.record(p, q, 1.0)
        while not judge.done:
            for p, q in judge.request(10):
                judge.record(p, q, float(outcomes[k] < 0.6))
                k += 1
    assert a.state_dict() == b.state_dict()
    assert a.result() == b.result()


def test_cancelled_pairs_are_asked_again():
    j = PrefBest(20, seed=0)
    first = j.request(5)
    j.cancel(*first[0])
    again = []
    while len(again) < 200:
        batch = j.request(50)
        if not batch:
            break
        again += batch
    assert first[0] in again
    with pytest.raises(ValueError):
        j.record(0, 0, 1.0)
    with pytest.raises(ValueError):
        j.cancel(*first[0]) if first[0] not in j.pending else j.cancel(99, 98)
