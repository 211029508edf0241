"""MergeRUCB, Zoghi 2017, Algorithm 4.

The batch, stage and merge machinery is shared with MergeDTS
(:class:`bandits.merge_base.MergeBandit`, :mod:`bandits.merge_structure`). Algorithm 4's
lines map to it as follows: line 1 (``W = 0``) is the base class; line 2 (``B_1``) is
:func:`bandits.merge_partition.initial_batches` with ``round_up=False``; line 3 (``C(δ)``)
is :func:`bandits.merge_base.confidence_constant`; line 4 (``S = 1``) and line 6
(``i = t mod b_S``) are ``MergeBandit``; lines 7–8 (``U`` and elimination) are
:class:`bandits.merge_dts.HoeffdingElimination` (Li et al. 2020's Algorithm 1 lines 10–11,
the same test); lines 9–10 (the pair) are :class:`RUCBPairs` and :func:`_rucb_pair`
below; line 11's comparison is the caller's ``update()``; lines 12–14
(next stage) are :meth:`bandits.merge_structure.BatchStructure._settle` with
:func:`bandits.merge_partition.pair_batches`.

The departures from the pseudo-code that both policies make (horizonless, delayed
feedback, elimination and merges evaluated at update time, ties, added and retired
arms, stage thresholds relative to the stage's field, the stage merge) are listed in
the module docstring of :mod:`bandits.merge_dts`. Specific to MergeRUCB:

- line 2 makes ``b_1 = floor(K/p)`` batches (sizes between ``p`` and ``2p``, filled evenly);
- a batch left with one arm while other batches exist merges with the next batch, as in
  MergeDTS (Li et al. 2020, Algorithm 1 lines 12–13). Algorithm 4 does not say what to do then
  (line 10's ``argmax`` over ``B_i \\ {ρ_c}`` is over an empty set), and it is what the
  same authors' successor algorithm does;
- uncompared pairs have ``U = 2`` by the ``x/0 := 1`` rule of Li et al. 2020's line 10 (as in
  :mod:`bandits.rucb`); ties in line 10's ``argmax`` are broken uniformly at random.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from bandits.merge_base import THEORETICAL, TUNED_ALPHA, MergeBandit
from bandits.merge_components import Batch, PairRule
from bandits.merge_dts import HOEFFDING


class _UCBBatch(Batch):
    """A batch with MergeRUCB's caches: ``U = R + S sqrt(α ln(t + C))`` (line 7) for
    its pairs, as ``R = w/n`` and ``S = 1/sqrt(n)`` (:func:`_ucb_parts`)."""

    __slots__ = ("R", "S")


class RUCBPairs(PairRule):
    """Algorithm 4 lines 9–10 (Zoghi 2017): ``c`` uniform in the batch, ``d`` the arm
    with the largest ``U_dc`` (:func:`_rucb_pair`), from per-batch caches ``R`` and
    ``S`` (:func:`_ucb_parts`)."""

    batch_type = _UCBBatch

    def build_one(self, bt: _UCBBatch) -> None:
        bt.R, bt.S = _ucb_parts(self.policy._sub(bt.arms))

    def pair_changed(self, bt: _UCBBatch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        n = w_ab + w_ba
        bt.R[a, b] = w_ab / n
        bt.R[b, a] = w_ba / n
        bt.S[a, b] = bt.S[b, a] = 1.0 / math.sqrt(n)

    def pair_for(self, bt: _UCBBatch) -> tuple[int, int]:
        policy = self.policy
        return _rucb_pair(bt.R, bt.S, policy.bonus(policy.t), policy.rng)

    def pair_from(self, W_sub: np.ndarray, t: int, rng: np.random.Generator) -> tuple[int, int]:
        R, S = _ucb_parts(W_sub)
        return _rucb_pair(R, S, self.policy.bonus(t), rng)


class MergeRUCB(MergeBandit):
    """MergeRUCB, Zoghi 2017, Algorithm 4.

    The arms are split into ``floor(K/p)`` batches (line 2) visited round robin
    (line 6, ``i = t mod b_S``). In the visited batch ``B_i``, with
    ``U = W/(W + Wᵀ) + sqrt(α ln(t + C)/(W + Wᵀ))`` (line 7):

    - an arm ``ρ_k`` with ``U_kl < ½`` for some ``ρ_l`` of the batch is removed (line 8);
    - ``ρ_c`` is drawn uniformly from the batch (line 9) and
      ``d = argmax_{l ≠ c} U_lc``, the arm most likely to beat it (line 10);
    - the caller compares ``(ρ_c, ρ_d)`` and reports through :meth:`update` (line 11);
    - once at most ``K/2^S`` arms are left the batches are paired up so that each has
      between ``p/2`` and ``3p/2`` arms (lines 12–14).

    With one arm left it is played against itself for ever (horizonless operation).

    Parameters
    ----------
    n_arms
        Number of arms K.
    preset
        ``"tuned"`` (default): Li et al. 2020's values tuned for MergeRUCB, α = 0.8⁶, p = 8,
        C = 4·10⁵ (§5.5); ``"theoretical"``: the thesis' α = 1.01, p = 4 and ``C(δ)`` of
        line 3 with δ = 1/``horizon``. Explicit parameters override the preset's.
    alpha
        Exploration parameter α (the thesis' guarantees want α > ½).
    batch_size
        Batch size p.
    c
        ``C(δ)`` in the confidence bound.
    horizon
        T for ``C(δ)`` with δ = 1/T; given without ``c``, ``c`` is computed from it
        whatever the preset (default T = 10⁶ for the theoretical preset).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.merge_rucb import MergeRUCB
    >>> P = np.array([[0.5, 0.7, 0.8, 0.9],
    ...               [0.3, 0.5, 0.6, 0.8],
    ...               [0.2, 0.4, 0.5, 0.7],
    ...               [0.1, 0.2, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = MergeRUCB(4, alpha=0.51, batch_size=2, c=100, seed=1)
    >>> b.batches
    [[0, 1], [2, 3]]
    >>> for _ in range(5000):
    ...     i, j = b.select()
    ...     b.update(i, j, float(env.random() < P[i, j]))
    >>> b.best_arm(), b.select()
    (0, (0, 0))
    >>> MergeRUCB(40).params()  # the tuned preset
    {'preset': 'tuned', 'alpha': 0.2621440000000001, 'batch_size': 8, 'c': 400000.0}
    """

    name = "mergerucb"
    PRESETS: ClassVar[dict[str, dict[str, float | None]]] = {
        "tuned": {"alpha": TUNED_ALPHA, "batch_size": 8, "c": 4e5},  # Li et al. 2020, §5.5
        "theoretical": THEORETICAL,
    }
    PAIRS = RUCBPairs
    ELIMINATION = HOEFFDING  # lines 7-8: Li et al. 2020's lines 10-11
    _round_up = False


def _ucb_parts(W_sub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``U = R + S sqrt(α ln(t + C))`` (line 7): ``R = w/n`` and ``S = 1/sqrt(n)``, with
    ``R = 2, S = 0`` for an uncompared pair (``x/0 := 1`` in both terms)."""
    n = W_sub + W_sub.T
    with np.errstate(divide="ignore", invalid="ignore"):
        R = np.where(n > 0, W_sub / n, 2.0)
        S = np.where(n > 0, 1.0 / np.sqrt(n), 0.0)
    return R, S


def _rucb_pair(
    R: np.ndarray, S: np.ndarray, bonus: float, rng: np.random.Generator
) -> tuple[int, int]:
    """Lines 9–10: ``c`` uniform in the batch, ``d = argmax_{l != c} U_lc`` (ties at
    random)."""
    n = R.shape[0]
    c = min(int(rng.random() * n), n - 1)  # line 9 (one uniform: cheaper than integers)
    u = S[:, c] * math.sqrt(bonus)
    u += R[:, c]
    u[c] = -np.inf
    top = np.flatnonzero(u == u.max())
    d = int(top[0]) if top.size == 1 else int(top[min(int(rng.random() * top.size), top.size - 1)])
    return c, d
