"""Do the policies find the winner? Seeded runs of every dueling bandit on Bradley-Terry
(and one non-Condorcet) instances; each test states how many runs must succeed and why.

Long statistical runs of pure code, so in the stats tier (``scripts/test stats``); the
mechanics of each policy are checked quickly in tests/unit/test_baseline_bandits.py and
tests/unit/test_merge_bandits.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from policy_references import play

from bandits import get_algorithm, make_bandit
from bandits.ccb import CCB
from bandits.matrices import bradley_terry, condorcet_winner, copeland_winners, non_condorcet
from bandits.mdb import MDB
from bandits.merge_base import MergeBandit

PAIRWISE = ["rucb", "rcs", "ccb", "dts", "self_sparring", "rmed1"]


# ---------------------------------------------------------------------- the baselines
STEPS = {"rucb": 3000, "rcs": 3000, "ccb": 2000, "dts": 3000, "self_sparring": 3000, "rmed1": 3000}


@pytest.mark.parametrize("name", PAIRWISE)
def test_finds_condorcet_winner(name):
    # 10 seeded runs on 8-arm Bradley-Terry instances (smallest gap 0.1); at least 9
    # must name the Condorcet winner: one miss is allowed for an unlucky run, more
    # would mean the policy does not converge at this budget.
    hits = 0
    for seed in range(10):
        P = bradley_terry(8, gap=0.1, spread=3.0, seed=100 + seed)
        b = make_bandit(name, 8, seed=seed)
        play(b, P, STEPS[name], np.random.default_rng(1000 + seed))
        hits += b.best_arm() == condorcet_winner(P)
    assert hits >= 9, f"{name}: {hits}/10"


def test_mdb_selects_sets_and_learns_from_update_many():
    hits = 0
    for seed in range(10):
        P = bradley_terry(8, gap=0.1, spread=3.0, seed=100 + seed)
        b = MDB(8, seed=seed)
        first = b.select()
        assert first == tuple(range(8))  # Algorithm 1 line 2: play all arms
        b.update_many([(i, j, float(P[i, j] > 0.5)) for i in first for j in first if i < j])
        assert b.n_updates == 1 and b.W.sum() == 8 * 7 / 2
        chosen = play(b, P, 800, np.random.default_rng(1000 + seed))
        for S in chosen:
            assert isinstance(S, tuple) and len(S) >= 1 and len(set(S)) == len(S)
        assert max(len(S) for S in chosen) > 2  # it did multileave
        # At the end it exploits one arm, the winner; 9 of 10 runs (same tolerance as
        # the pairwise policies).
        hits += chosen[-1] == (condorcet_winner(P),) and b.best_arm() == condorcet_winner(P)
    assert hits >= 9, f"{hits}/10"


def test_ccb_finds_a_copeland_winner_without_condorcet_winner():
    # No Condorcet winner, two Copeland winners; 10 runs, at least 9 must name one of
    # them (tolerance as above).
    hits = 0
    for seed in range(10):
        P = non_condorcet(8, n_winners=2, gap=0.1, spread=3.0, seed=seed)
        assert condorcet_winner(P) is None
        b = CCB(8, seed=seed)
        play(b, P, 2000, np.random.default_rng(50 + seed))
        hits += b.best_arm() in copeland_winners(P)
    assert hits >= 9, f"{hits}/10"


# ---------------------------------------------------------------------- the Merge family
MERGE = {
    "mergedts": dict(alpha=0.51, batch_size=8, c=1000.0),
    "mergerucb": dict(alpha=0.51, batch_size=4, c=1000.0),
    "mergeguard": dict(alpha=0.51, batch_size=8, c=1000.0),
}


def make_merge(name: str, k: int, seed: int) -> MergeBandit:
    return get_algorithm(name)(k, seed=seed, **MERGE[name])


def play_until_converged(b: MergeBandit, P: np.ndarray, steps: int,
                         env: np.random.Generator) -> None:
    """At most ``steps`` comparisons, until the policy plays its champion alone."""
    for u in env.random(steps):
        i, j = b.select()
        if i == j:
            break
        b.update(i, j, float(u < P[i, j]))


@pytest.mark.parametrize("name", sorted(MERGE))
def test_merge_family_finds_condorcet_winner(name):
    # 20 seeded instances (K=32, smallest gap 0.05). With alpha = 0.51 > 1/2 a wrong
    # elimination is unlikely but possible, so we allow one miss in 20 (the runs are
    # deterministic; the tolerance is for robustness against harmless code changes).
    correct = 0
    for s in range(20):
        P = bradley_terry(32, gap=0.05, seed=1000 + s)
        b = make_merge(name, 32, seed=s)
        play_until_converged(b, P, 12_000, np.random.default_rng(2000 + s))
        correct += b.best_arm() == condorcet_winner(P)
        # converged runs play the champion against itself (Algorithm 1 lines 7-8)
        if len(b.active_arms()) == 1:
            a = b.active_arms()[0]
            assert b.select() == (a, a)
    assert correct >= 19
