"""The fast policies against the papers' pseudo-code written literally: CCB's choices step
for step (Zoghi et al., 2015, Algorithm 5), and the sampling shortcuts of DTS (Wu and Liu,
2016), RCS (Zoghi et al., 2014) and MergeDTS (Li et al., 2020, Algorithms 2 and 3), whose
pairs must have the law of the papers' full sampling (seeded; each test states its
tolerance).

Long runs of pure code, so in the stats tier (``scripts/test stats``); the policies'
mechanics are checked quickly in tests/unit/test_baseline_bandits.py and
tests/unit/test_merge_bandits.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from policy_references import dense_u, play, reference_dts_pair

from bandits import ACTIVE
from bandits.ccb import CCB
from bandits.dts import DTS
from bandits.matrices import bradley_terry, non_condorcet
from bandits.merge_dts import MergeDTS
from bandits.rcs import RCS
from bandits.rucb import rand_argmax

# ---------------------------------------------------------------------- CCB step for step


class DenseCCB(CCB):
    """Algorithm 5 with the full matrices U and L, consuming random numbers like CCB, and
    changing ``B_t``, ``B_t^i``, ``L̄_C`` at selection time as the pseudo-code does."""

    def _commit(self, i, j):
        pass

    def _select(self):
        A = np.flatnonzero(self.status == ACTIVE)
        k = A.size
        if k == 1:
            return (int(A[0]), int(A[0]))
        rng = self.rng
        Wa = self.W[np.ix_(A, A)]
        n = Wa + Wa.T
        zero = n == 0
        mean = Wa / (n + zero)
        radius = np.sqrt(self.alpha * math.log(self.t) / (n + zero))
        U, L = mean + radius, mean - radius
        U[zero], L[zero] = 2.0, 0.0
        np.fill_diagonal(U, 0.5)
        np.fill_diagonal(L, 0.5)
        off = ~np.eye(k, dtype=bool)
        up = ((U >= 0.5) & off).sum(axis=1)  # line 7
        lo = ((L >= 0.5) & off).sum(axis=1)
        C = up == up.max()  # line 8
        Bb = self.shortlist[A]
        Bo = self.opponents[np.ix_(A, A)]
        LC = self.max_losses
        if (Bo & (L > 0.5)).any():  # 9A
            Bb[:], Bo[:], LC = True, False, k
        drop = Bb & (up < lo.max())  # 9B
        if drop.any():
            Bb[drop] = False
            refill = drop & (Bo.sum(axis=1) != LC + 1)
            Bo[refill] = U[refill] < 0.5
            if not Bb.any():
                Bb[:], Bo[:], LC = True, False, k
        trim = None  # 9C's random choices: CCB's generator for this step
        for i in np.flatnonzero(C & (up == lo)):  # 9C
            Bb[i] = True
            Bo[i] = False
            LC = int(k - 1 - up[i])
            sizes = Bo.sum(axis=1)
            Bo[sizes < LC + 1] = False
            for j in np.flatnonzero(sizes > LC + 1):
                trim = self._trim_rng() if trim is None else trim
                keep = trim.choice(np.flatnonzero(Bo[j]), size=LC + 1, replace=False)
                Bo[j] = False
                Bo[j, keep] = True
        self.shortlist[A] = Bb
        self.opponents[np.ix_(A, A)] = Bo
        self.max_losses = LC
        if rng.random() < 0.25:  # line 10
            pairs = np.flatnonzero(Bo & (L <= 0.5) & (U >= 0.5))
            if pairs.size:
                p = int(pairs[rng.integers(pairs.size)])
                return (int(A[p // k]), int(A[p % k]))
        both = Bb & C  # line 11
        if both.any() and rng.random() < 2.0 / 3.0:
            C = both
        cs = np.flatnonzero(C)  # line 12
        c = int(cs[rng.integers(cs.size)])
        eligible = L[:, c] <= 0.5  # line 13
        if rng.random() < 0.5 and (Bo[c] & eligible).any():
            eligible = Bo[c] & eligible
        d = rand_argmax(np.where(eligible, U[:, c], -np.inf), rng, avoid=c)
        return (int(A[c]), int(A[d]))


@pytest.mark.parametrize("condorcet", [True, False])
def test_ccb_equals_dense_algorithm(condorcet):
    # CCB evaluates U and L only where Algorithm 5 reads them and stores line 9's sets
    # at the feedback, not the selection; its choices must be those of the dense
    # pseudo-code, step for step. After a retirement and an addition
    # every preference is reversed, so learnt hypotheses are disproven (line 9A resets)
    # and the sets B^i are rebuilt (9B) and trimmed (9C).
    if condorcet:
        P = bradley_terry(9, gap=0.1, seed=2)
    else:
        P = non_condorcet(9, n_winners=2, gap=0.1, seed=3)
    P10 = np.full((10, 10), 0.5)
    P10[:9, :9] = P
    P10[9, :9], P10[:9, 9] = 0.3, 0.7
    P10 = P10.T.copy()
    fast, dense = CCB(9, seed=3), DenseCCB(9, seed=3)
    e1, e2 = np.random.default_rng(9), np.random.default_rng(9)
    assert play(fast, P, 1500, e1) == play(dense, P, 1500, e2)
    assert fast.opponents.any()  # 9B filled some B^i
    for b in (fast, dense):
        b.retire_arm(4)
        b.add_arm()
    assert play(fast, P10, 1500, e1) == play(dense, P10, 1500, e2)
    assert fast.max_losses == dense.max_losses
    np.testing.assert_array_equal(fast.opponents, dense.opponents)
    np.testing.assert_array_equal(fast.shortlist, dense.shortlist)
    assert fast.best_arm() == 9  # the reversed field's Condorcet winner


# ---------------------------------------------------------------------- exact-law shortcuts
def _fixed_state(cls, **params):
    """A policy with a fixed, partly informative W on 4 arms and t held at 50."""
    W = np.array([[0, 6, 3, 1], [4, 0, 5, 2], [2, 3, 0, 0], [1, 1, 0, 0]], dtype=float)
    b = cls(4, seed=11, **params)
    b.W = W.copy()
    b._load_extra_state(b.state_dict())  # drop caches built from the old W
    return b


def _frequencies(draw, n: int) -> dict:
    out: dict = {}
    for _ in range(n):
        k = draw()
        out[k] = out.get(k, 0) + 1
    return {k: v / n for k, v in out.items()}


def _assert_same_law(f1: dict, f2: dict, n: int):
    # Two independent samples of n draws: each frequency differs by at most
    # 5 standard errors of a difference (sqrt(2 p (1 - p) / n)) plus 0.002; a false
    # alarm over the handful of outcomes compared has probability well below 1e-5.
    for k in set(f1) | set(f2):
        p = max(f1.get(k, 0.0), f2.get(k, 0.0))
        tol = 5 * math.sqrt(2 * p * (1 - p) / n) + 0.002
        assert abs(f1.get(k, 0.0) - f2.get(k, 0.0)) <= tol, (k, f1.get(k), f2.get(k))


def test_dts_choices_have_the_law_of_the_papers_sampling():
    # DTS draws only what decides the pair (Bernoulli indicators, truncated Betas);
    # its pairs must be distributed as with the paper's full Beta sampling.
    n = 12000
    b = _fixed_state(DTS, alpha=0.51)
    t0 = 50

    def fast():
        b.t = t0 - 1
        return b.select()

    W = b.W
    rng = np.random.default_rng(5)
    K = 4
    U = dense_u(W, 0.51 * math.log(t0))
    L = 1 - U.T
    up_cpld = ((U > 0.5) & ~np.eye(K, dtype=bool)).sum(axis=1)
    C = np.flatnonzero(up_cpld == up_cpld.max())

    def reference():
        theta = np.full((K, K), 0.5)
        for i in range(K):
            for j in range(i + 1, K):
                theta[i, j] = rng.beta(W[i, j] + 1, W[j, i] + 1)
                theta[j, i] = 1 - theta[i, j]
        score = (theta > 0.5).sum(axis=1)
        first = int(C[rand_argmax(score[C], rng)])
        th2 = np.array(
            [0.5 if i == first else rng.beta(W[i, first] + 1, W[first, i] + 1) for i in range(K)]
        )
        th2[L[:, first] > 0.5] = -1.0
        return (first, int(np.argmax(th2)))

    assert C.size > 1  # the instance exercises Phase 1's sampling
    _assert_same_law(_frequencies(fast, n), _frequencies(reference, n), n)


def test_rcs_champion_has_the_law_of_the_sampled_tournament():
    n = 12000
    b = _fixed_state(RCS)
    W = b.W
    rng = np.random.default_rng(6)

    def fast():
        b.t = 49
        b.champion_counts[:] = [0, 0, 0, 10**9]  # fallback champion: the least often
        return b.select()[0]

    def reference():
        K = 4
        theta = np.full((K, K), 0.5)
        for i in range(K):
            for j in range(i + 1, K):
                theta[i, j] = rng.beta(W[i, j] + 1, W[j, i] + 1)
                theta[j, i] = 1 - theta[i, j]
        beats_all = np.flatnonzero((theta >= 0.5).all(axis=1))
        return int(beats_all[0]) if beats_all.size else int(rng.integers(3))

    _assert_same_law(_frequencies(fast, n), _frequencies(reference, n), n)


@pytest.mark.parametrize(("n_batches", "size"), [(1, 6), (1, 12), (3, 6), (6, 6)])
def test_mergedts_pairs_follow_algorithms_2_and_3(n_batches, size):
    """MergeDTS draws its pairs with shortcuts (Bernoulli indicators for Phase I, gamma
    ratios, vectorized rounds over the batches, scalar code for a small lone batch); the
    pair distribution
    must be that of the literal pseudo-code. On fixed counts (no updates, so every draw
    is from the same distribution) we compare 3000 pairs of the batch with a literal
    implementation's 3000: the total variation distance between the two empirical
    distributions stays below 0.06 (its sampling noise here is about 0.02-0.03)."""
    K = size * n_batches
    b = MergeDTS(K, alpha=0.51, batch_size=size, c=1e9, seed=7)
    assert len(b.batches) == n_batches
    gen = np.random.default_rng(1)
    # fixed, informative counts inside the first batch (ties included)
    arms = b.batches[0]
    for _ in range(400):
        i, j = gen.choice(arms, 2, replace=False)
        b.update(int(i), int(j), [0.0, 0.5, 1.0][int(gen.integers(3)) if i < j else 2])
    assert not b.eliminated
    W = b.W[np.ix_(arms, arms)]
    ours, ref, service = {}, {}, {}
    for _ in range(3000):
        while (pair := b.select()) and pair[0] not in arms:
            pass
        ours[pair] = ours.get(pair, 0) + 1
        c, d = reference_dts_pair(W, gen)
        key = (arms[c], arms[d])
        ref[key] = ref.get(key, 0) + 1
        key = b.select_in_batch(arms, W, b.t, gen)
        service[key] = service.get(key, 0) + 1
    keys = set(ours) | set(ref) | set(service)
    tv = sum(abs(ours.get(k, 0) - ref.get(k, 0)) for k in keys) / 2 / 3000
    tv_service = sum(abs(service.get(k, 0) - ref.get(k, 0)) for k in keys) / 2 / 3000
    assert tv < 0.06, tv
    assert tv_service < 0.06, tv_service
    assert len(keys) > 5  # the distribution is not degenerate
