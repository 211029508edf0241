"""Double Thompson Sampling (DTS), Wu & Liu, NeurIPS 2016.

Li et al. 2020 (the MergeDTS paper) uses DTS as a baseline and describes it only in prose:
§3 ("DTS improves upon RUCB by using TS to break ties when choosing the first ranker ...
one TS to choose the first ranker from a set of candidates that are pre-chosen by UCB.
Then ... another TS to choose the second ranker that performs the best compared to the
first one"), §5.5 (baseline) and §5.6 (tuned ``alpha = 0.8^7``). The steps below follow
the original paper's Algorithm 1 (D-TS).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits import special
from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import LossCounter, rand_argmax
from bandits.params import ALPHA, Param


def beta_win_prob(W: np.ndarray) -> np.ndarray:
    """``q_ij = P(θ_ij > 1/2)`` for ``θ_ij ~ Beta(w_ij + 1, w_ji + 1)``, every pair.

    ``1 - I_{1/2}(a, b) = I_{1/2}(b, a)`` with ``I`` the regularized incomplete beta
    function. Thompson-sampling tournaments (DTS Phase 1, RCS line 9) only look at
    whether ``θ_ij > 1/2``, a Bernoulli(``q_ij``) draw: one uniform instead of a Beta.
    """
    return special.betainc(W.T + 1.0, W + 1.0, 0.5)


def refresh_win_prob(Q: np.ndarray, W: np.ndarray, i: int, j: int) -> None:
    """Update ``Q = beta_win_prob(W)`` in place after pair ``(i, j)`` was compared."""
    if i != j:
        Q[i, j] = special.betainc(W[j, i] + 1.0, W[i, j] + 1.0, 0.5)
        Q[j, i] = special.betainc(W[i, j] + 1.0, W[j, i] + 1.0, 0.5)


def to_threshold32(q: np.ndarray | float) -> np.ndarray:
    """``floor(q · 2³²)`` as uint32 (capped at 2³² - 1): ``r < T`` for a uniform 32-bit
    ``r`` is a Bernoulli(``q``) draw to within 2⁻³², at half the cost of a float64
    uniform (two draws per 64-bit word of the generator)."""
    return np.minimum(np.asarray(q) * 4294967296.0, 4294967295.0).astype(np.uint32)


def random_u32(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform 32-bit integers from ``rng``'s raw 64-bit output (part of its state)."""
    n = math.prod(shape)
    return rng.bit_generator.random_raw((n + 1) // 2).view(np.uint32)[:n].reshape(shape)


_TRI = np.ones((0, 0), dtype=bool)


def _upper(n: int) -> np.ndarray:
    """Boolean n×n mask of the strict upper triangle (a view of one cached mask)."""
    global _TRI
    if _TRI.shape[0] < n:
        _TRI = np.triu(np.ones((2 * n, 2 * n), dtype=bool), 1)
    return _TRI[:n, :n]


class DTS(DuelingBandit):
    """Double Thompson Sampling (Wu & Liu 2016, Algorithm 1), a baseline of Li et al. 2020,
    §3/§5.5.

    Each step, following the original paper (Li et al. 2020 gives only prose, §3):

    Phase 1, first candidate.
        ``U = W/(W+Wᵀ) + sqrt(alpha ln t/(W+Wᵀ))``, ``L = W/(W+Wᵀ) - sqrt(...)``
        with ``x/0 := 1`` and ``u_ii = l_ii = 1/2``; the upper Copeland score
        ``ζ⁺_i = #{j ≠ i : u_ij > 1/2}``; candidates ``C = argmax ζ⁺``. Sample
        ``θ⁽¹⁾_ij ~ Beta(w_ij + 1, w_ji + 1)`` for ``i < j``, ``θ⁽¹⁾_ji = 1 - θ⁽¹⁾_ij``,
        and pick ``a⁽¹⁾ = argmax_{i ∈ C} #{j : θ⁽¹⁾_ij > 1/2}``, ties at random.
    Phase 2, second candidate.
        Sample ``θ⁽²⁾_i ~ Beta(w_{i a⁽¹⁾} + 1, w_{a⁽¹⁾ i} + 1)`` for ``i ≠ a⁽¹⁾``,
        ``θ⁽²⁾_{a⁽¹⁾} = 1/2``; ``a⁽²⁾ = argmax θ⁽²⁾_i`` over the arms with
        ``l_{i a⁽¹⁾} <= 1/2`` (uncertain pairs, ``a⁽¹⁾`` itself included).
    The caller compares ``(a⁽¹⁾, a⁽²⁾)`` and reports it through :meth:`update`.

    (The papers implemented here do not contain the D-TS pseudo-code, so the comments cite
    these two phases rather than line numbers.)

    Why it is fast (the authors' code samples all K(K-1)/2 pairs and rebuilds ``U``
    every step, ~700 steps/s at K=136 per the issue), with the same distribution of
    choices:

    - ``C`` comes from :class:`~bandits.common.LossCounter` (O(1) amortized) instead
      of the K×K matrix ``U``;
    - Phase 1 only uses the indicators ``1(θ⁽¹⁾_ij > 1/2)``, which are drawn directly
      as Bernoulli(``q_ij``) with ``q_ij = P(Beta(w_ij+1, w_ji+1) > 1/2)`` (kept up to
      date per compared pair), one 32-bit uniform each instead of two gamma variates
      (exact to within 2⁻³² per draw, see :func:`to_threshold32`);
    - they are only drawn for rows in ``C`` (the argmax looks at nothing else),
      antisymmetric inside ``C × C``; with ``|C| = 1`` nothing is drawn;
    - Phase 2 first draws, per eligible arm, whether ``θ⁽²⁾_i > 1/2`` (Bernoulli
      ``q_{i a⁽¹⁾}``) and only for those the value, from the Beta truncated to
      ``(1/2, 1]`` (inverse CDF); the others cannot beat ``θ⁽²⁾_{a⁽¹⁾} = 1/2``.
      Skipped samples cannot change the choice, so the policy is the paper's, only the
      random stream differs from a sample-everything implementation.

    Departures: horizonless, ``t`` = number of ``select()`` calls (ahead of the counts
    with delayed feedback); only ACTIVE arms are candidates and opponents; an added arm
    starts with zero counts (``u = 2``, ``l = 0``, ``Beta(1, 1)``); a tie adds ½ to each
    side of ``W`` and so to both Beta parameters. DTS never eliminates.

    ``best_arm()``: among the current candidates ``C``, the arm with the highest
    empirical Copeland score (the posterior-mean tournament), ties by win rate — the
    arm Phase 1 converges to.

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha
        Exploration parameter of the confidence bounds (paper: 0.51; Li et al. 2020, §5.6
        tuned 0.8^7 ≈ 0.21 for K = 136).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.dts import DTS
    >>> P = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.7], [0.1, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = DTS(3, seed=1)
    >>> for _ in range(2000):
    ...     c, d = b.select()
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> b.best_arm()
    0
    >>> b.select()
    (0, 0)
    """

    name = "dts"
    PARAMS: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA,
    }

    def __init__(
        self,
        n_arms: int,
        *,
        seed: int | np.random.Generator | None = None,
        **params: Any,
    ) -> None:
        super().__init__(n_arms, seed=seed)
        p = self.resolve_params(params)
        self.alpha = float(p["alpha"])
        self._lc: LossCounter | None = None
        self._q: np.ndarray | None = None
        self._t32 = np.zeros((0, 0), dtype=np.uint32)

    def _counter(self) -> LossCounter:
        # "not a win" for the upper Copeland score: u_ij <= 1/2 (ζ⁺ counts u_ij > 1/2)
        if self._lc is None:
            self._lc = LossCounter(self.W, self.status == ACTIVE, strict=False)
        return self._lc

    def _candidates(self) -> np.ndarray:
        """``C = argmax_i ζ⁺_i`` over the active arms at the current ``t``."""
        lc = self._counter()
        lc.set_threshold(self.alpha * math.log(max(self.t, 1)))
        non_wins = lc.counts  # inactive arms carry a huge offset
        return np.flatnonzero(non_wins == non_wins.min())

    def _select(self) -> Comparison:
        lc = self._counter()
        if lc.arms.size == 0:
            raise RuntimeError("no active arms")
        W = self.W
        rng = self.rng
        # ---- Phase 1: first candidate
        cand = self._candidates()
        if cand.size == 1:
            first = int(cand[0])
        else:
            T = self._thresholds()
            # 1(θ⁽¹⁾_ij > 1/2) ~ Bernoulli(q_ij), q_ij = P(Beta(w_ij+1, w_ji+1) > 1/2),
            # drawn as r < T_ij with r a uniform 32-bit integer.
            # Inside C × C the tournament is antisymmetric (θ_ji = 1 - θ_ij): only the
            # draws above the diagonal (in C order) are used, and below it p beats q
            # exactly when q lost to p above it. So candidate p scores
            #   (wins outside C) + (wins above the diagonal in row p)
            #   + p - (wins above the diagonal in column p).
            n_c = cand.size
            mask = _upper(n_c)
            if n_c == lc.arms.size:  # C = every active arm
                t = T if lc.all_active else T[np.ix_(cand, cand)]
                up = (random_u32(rng, t.shape) < t) & mask
                score = up.sum(axis=1) - up.sum(axis=0)
            else:
                if lc.all_active:
                    t = T[cand]
                    pos = cand
                else:
                    t = T[np.ix_(cand, lc.arms)]
                    pos = np.searchsorted(lc.arms, cand)
                wins = random_u32(rng, t.shape) < t
                block = wins[:, pos]
                up = block & mask
                score = wins.sum(axis=1) - block.sum(axis=1) + up.sum(axis=1) - up.sum(axis=0)
            score += np.arange(n_c)
            first = int(cand[rand_argmax(score, rng)])
        # ---- Phase 2: a⁽²⁾ = argmax θ⁽²⁾_i over the arms with l_{i first} <= 1/2, with
        # θ⁽²⁾_first = 1/2: only arms with θ⁽²⁾_i > 1/2 can beat ``first``. Draw that
        # event first, Bernoulli(q_{i first}) for every arm, then the value given it,
        # from the Beta truncated to (1/2, 1] by inverting its CDF:
        # 1 - θ ~ Beta(w_{first i} + 1, w_{i first} + 1) restricted to [0, 1/2), whose
        # mass there is q_{i first}. Same law as sampling every θ⁽²⁾_i, a fraction of
        # the cost once ``first`` wins most duels.
        q = self._win_prob()[:, first]
        hit = np.flatnonzero(rng.random(self.K) < q)
        if hit.size:
            # eligible: l_{i first} <= 1/2, i.e. u_{first i} >= 1/2, i.e.
            # w_{first i} + sqrt(alpha ln t * n) >= n / 2 (true for n = 0: x/0 := 1)
            w_f = W[first, hit]
            n = w_f + W[hit, first]
            bonus = self.alpha * math.log(max(self.t, 1))
            keep = (w_f + np.sqrt(bonus * n) >= 0.5 * n) & (hit != first)
            if not lc.all_active:
                keep &= lc.active[hit]
            hit = hit[keep]
        if hit.size == 0:
            return (first, first)
        v = rng.random(hit.size) * q[hit]
        theta = 1.0 - special.betaincinv(W[first, hit] + 1.0, W[hit, first] + 1.0, v)
        return (first, int(hit[rand_argmax(theta, rng)]))

    def _win_prob(self) -> np.ndarray:
        """:func:`beta_win_prob` of ``W``, kept up to date pair by pair."""
        if self._q is None:
            self._q = beta_win_prob(self.W)
            self._t32 = to_threshold32(self._q)
        return self._q

    def _thresholds(self) -> np.ndarray:
        """:func:`to_threshold32` of :meth:`_win_prob`, kept up to date with it."""
        self._win_prob()
        return self._t32

    def _update(self, i: int, j: int, outcome: float) -> None:
        if self._lc is not None:
            self._lc.update_pair(i, j, self.W[i, j], self.W[j, i])
        if self._q is not None and i != j:
            refresh_win_prob(self._q, self.W, i, j)
            self._t32[[i, j], [j, i]] = to_threshold32(self._q[[i, j], [j, i]])

    def _add_arm(self, arm: int) -> None:
        self._lc = None
        self._q = None

    def _retire_arm(self, arm: int) -> None:
        self._lc = None

    def best_arm(self) -> int:
        active = self.status == ACTIVE
        if not active.any():
            return super().best_arm()
        cand = self._candidates()
        sub = self.W[np.ix_(cand, np.flatnonzero(active))]
        rev = self.W[np.ix_(np.flatnonzero(active), cand)].T
        n = sub + rev
        with np.errstate(divide="ignore", invalid="ignore"):
            copeland = ((n > 0) & (sub > rev)).sum(axis=1)
            rate = sub.sum(axis=1) / np.maximum(n.sum(axis=1), 1.0)
        order = np.lexsort((cand, -rate, -copeland))
        return int(cand[order[0]])

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._lc = None
        self._q = None
