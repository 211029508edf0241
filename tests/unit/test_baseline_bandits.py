"""The baseline dueling bandits: RUCB, RCS, CCB, DTS, Self-Sparring, RMED1 and MDB.

Statistical tests use fixed seeds; each states how many seeded runs must succeed and why
that tolerance. Everything here runs in well under a minute.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from policy_references import dense_u, play

from bandits import ACTIVE, bandit_from_state, make_bandit
from bandits.dts import beta_win_prob
from bandits.matrices import bradley_terry, condorcet_winner
from bandits.rmed import RMED1
from bandits.rucb import RUCB, LossCounter, rand_argmax, ucb_column

PAIRWISE = ["rucb", "rcs", "ccb", "dts", "self_sparring", "rmed1"]
ALL = [*PAIRWISE, "mdb", "mergeguard"]


# ---------------------------------------------------------------------- shared helpers
# ``play`` and ``dense_u`` are in tests/policy_references.py (the stats tier uses them too)


def test_loss_counter_matches_direct_count():
    rng = np.random.default_rng(0)
    K = 9
    W = np.zeros((K, K))
    active = np.ones(K, dtype=bool)
    active[[2, 7]] = False
    for strict in (True, False):
        lc = LossCounter(W, active, strict=strict)
        thr = 0.0
        for step in range(3000):
            i, j = rng.choice(K, size=2, replace=False)
            s = rng.choice([0.0, 0.5, 1.0], p=[0.3, 0.1, 0.6] if i < j else [0.6, 0.1, 0.3])
            W[i, j] += s
            W[j, i] += 1 - s
            lc.update_pair(i, j, W[i, j], W[j, i])
            if step % 7 == 0:
                thr = math.log(step + 2) * 0.6
                lc.set_threshold(thr)
                U = dense_u(W, thr)
                loss = (U < 0.5) if strict else (U <= 0.5)
                np.fill_diagonal(loss, False)
                expect = (loss & active[None, :]).sum(axis=1)
                np.testing.assert_array_equal(lc.counts[active], expect[active])
                assert (lc.counts[~active] >= LossCounter.INACTIVE).all()
        W[:] = 0


def test_ucb_column_and_rand_argmax():
    W = np.array([[0.0, 3.0, 0.0], [1.0, 0.0, 2.0], [0.0, 2.0, 0.0]])
    u = ucb_column(W, 1, 0.7)
    np.testing.assert_allclose(u, dense_u(W, 0.7)[:, 1])
    assert u[1] == 0.5
    rng = np.random.default_rng(0)
    # a tie between index 0 and 2 that avoids 2
    assert {rand_argmax(np.array([1.0, 0.0, 1.0]), rng, avoid=2) for _ in range(20)} == {0}
    assert {rand_argmax(np.array([1.0, 0.0, 1.0]), rng) for _ in range(50)} == {0, 2}


class DenseRUCB(RUCB):
    """Algorithm 2 with the full matrix U, consuming random numbers like RUCB, and
    changing ``B`` at selection time as the pseudo-code does."""

    def _commit(self, i, j):
        pass

    def _select(self):
        active = self.status == ACTIVE
        bonus = self.alpha * math.log(self.t)
        U = dense_u(self.W, bonus)
        ok = (U >= 0.5) | ~active[None, :]
        cand = np.flatnonzero(active & ok.all(axis=1))
        if cand.size == 0:
            self.B = []
            arms = np.flatnonzero(active)
            c = int(arms[self.rng.integers(arms.size)])
        else:
            self.B = [b for b in self.B if b in cand]
            if cand.size == 1:
                c = int(cand[0])
                self.B = [c]
            elif self.B and self.rng.random() < 0.5:
                c = self.B[0]
            else:
                rest = cand[~np.isin(cand, self.B)]
                c = int(rest[self.rng.integers(rest.size)])
        u = np.where(active, U[:, c], -np.inf)
        return (c, rand_argmax(u, self.rng, avoid=c))


def test_rucb_candidate_set_equals_dense_algorithm():
    # Same seed, same environment: the incremental candidate set, and B stored by the
    # feedback instead of the selection, must give exactly the choices of the dense
    # pseudo-code, including across a retirement.
    P = bradley_terry(10, gap=0.05, seed=4)
    fast, dense = RUCB(10, seed=3), DenseRUCB(10, seed=3)
    e1, e2 = np.random.default_rng(9), np.random.default_rng(9)
    assert play(fast, P, 1500, e1) == play(dense, P, 1500, e2)
    fast.retire_arm(4)
    dense.retire_arm(4)
    assert play(fast, P, 1500, e1) == play(dense, P, 1500, e2)


# ---------------------------------------------------------------------- exact-law shortcuts
# CCB step for step against Algorithm 5, and the laws of DTS's and RCS's sampling
# shortcuts (12,000 seeded draws each): in the stats tier,
# tests/stats/test_policies_follow_the_papers.py.


def test_beta_win_prob():
    W = np.array([[0.0, 7.0], [2.0, 0.0]])
    rng = np.random.default_rng(0)
    mc = (rng.beta(8, 3, 200_000) > 0.5).mean()
    assert abs(beta_win_prob(W)[0, 1] - mc) < 0.005  # MC standard error ~0.0005
    assert beta_win_prob(W)[0, 1] + beta_win_prob(W)[1, 0] == pytest.approx(1.0)


# Whether each policy finds the winner (seeded runs of a few thousand steps) is in the
# stats tier: tests/stats/test_finding_winners.py.


# ---------------------------------------------------------------------- live operations
@pytest.mark.parametrize("name", ALL)
def test_add_and_retire_mid_run(name):
    K = 6
    P7 = bradley_terry(K + 1, gap=0.1, spread=3.0, seed=21)
    winner = condorcet_winner(P7)
    # arm 6 joins later; make it a loser so the winner stays the same
    if winner == K:
        perm = [*range(K + 1)]
        perm[K], perm[0] = 0, K
        P7 = P7[np.ix_(perm, perm)]
        winner = condorcet_winner(P7)
    env = np.random.default_rng(3)
    b = make_bandit(name, K, seed=7)
    play(b, P7[:K, :K], 400, env)
    gone = next(a for a in range(K) if a != winner)
    b.retire_arm(gone)
    assert b.status[gone] != ACTIVE
    new = b.add_arm()
    assert new == K and b.K == K + 1 and b.W[new].sum() == 0
    chosen = play(b, P7, 2500, env)
    assert all(gone not in arms for arms in chosen)
    assert any(new in arms for arms in chosen)
    assert b.best_arm() == winner
    assert b.best_arm() != gone


@pytest.mark.parametrize("name", ALL)
def test_state_round_trip_continues_identically(name):
    P = bradley_terry(7, gap=0.05, seed=5)
    P8 = bradley_terry(8, gap=0.05, seed=5)
    b = make_bandit(name, 7, seed=13)
    env = np.random.default_rng(2)
    play(b, P, 300, env)
    b.retire_arm(2)
    b.add_arm()
    play(b, P8, 100, env)
    state = json.loads(json.dumps(b.state_dict()))  # as it would live in Redis
    restored = bandit_from_state(state)
    assert type(restored) is type(b)
    assert json.dumps(restored.state_dict()) == json.dumps(b.state_dict())
    e1, e2 = np.random.default_rng(8), np.random.default_rng(8)
    assert play(b, P8, 400, e1) == play(restored, P8, 400, e2)
    assert json.dumps(restored.state_dict()) == json.dumps(b.state_dict())
    assert restored.best_arm() == b.best_arm()


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_run(name):
    P = bradley_terry(7, gap=0.05, seed=6)
    runs = []
    for _ in range(2):
        b = make_bandit(name, 7, seed=42)
        runs.append(play(b, P, 500, np.random.default_rng(4)))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("name", ALL)
def test_repr_and_params(name):
    b = make_bandit(name, 5, seed=1)
    assert repr(b).startswith(type(b).__name__ + "(K=5")
    rebuilt = make_bandit(name, 5, seed=1, **b.params())
    assert rebuilt.params() == b.params()


def test_rmed1_initial_phase_draws_every_pair_once_also_for_added_arms():
    b = RMED1(5, seed=0)
    first = [b.select() for _ in range(10)]
    assert sorted(tuple(sorted(p)) for p in first) == [
        (i, j) for i in range(5) for j in range(i + 1, 5)
    ]
    for i, j in first:
        b.update(i, j, 1.0)
    b.retire_arm(1)
    new = b.add_arm()
    nxt = [b.select() for _ in range(4)]
    assert sorted(nxt) == [(new, 0), (new, 2), (new, 3), (new, 4)]


def test_rucb_keeps_the_hypothesised_best_arm_in_the_state():
    P = bradley_terry(5, gap=0.2, seed=1)
    b = RUCB(5, seed=0)
    play(b, P, 2000, np.random.default_rng(0))
    winner = condorcet_winner(P)
    hypothesis = b.B
    assert hypothesis == [winner]
    assert b.state_dict()["B"] == b.B
    b.retire_arm(b.B[0])
    assert b.B == []


def test_self_duels_carry_no_information():
    # Nothing learnt from a ranker against itself; only the step is counted, and RCS's
    # N_c (Algorithm 3 line 9 counts every step in which c was the champion).
    for name in PAIRWISE:
        b = make_bandit(name, 4, seed=0)
        before = json.dumps(b.state_dict())
        b.update(2, 2, 1.0)
        after = b.state_dict()
        assert after["n_updates"] == 1
        after["n_updates"] = 0
        if name == "rcs":
            assert after["champion_counts"] == [0, 0, 1, 0]
            after["champion_counts"] = [0, 0, 0, 0]
        assert json.dumps(after) == before, name


@pytest.mark.parametrize("name", ALL)
def test_last_active_arm_plays_itself(name):
    b = make_bandit(name, 4, seed=0)
    play(b, bradley_terry(4, gap=0.1, seed=0), 50, np.random.default_rng(0))
    for arm in (0, 1, 3):
        b.retire_arm(arm)
    for _ in range(5):
        arms = b.select()
        assert set(arms) == {2}
        if b.multi:
            b.update_many([])
        else:
            b.update(*arms, 0.5)
    assert b.best_arm() == 2
