"""Helpers shared by several policies (pure numpy).

:func:`preferences`
    the empirical preference matrix ``W / (W + Wᵀ)`` (½ for pairs never compared).
:func:`ucb_column`
    the upper confidence bounds ``u_jc`` of every arm against one arm (RUCB, RCS).
:func:`rand_argmax`
    an arg max with ties broken at random.
:func:`first_true`
    the smallest ``n ≥ 1`` at which a monotone condition holds (doubling, then bisection).
:class:`LossCounter`
    per arm, the number of opponents it optimistically loses to, kept without
    recomputing the K×K matrix ``U`` on every step (RUCB, DTS, MDB, CCB).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def preferences(W: np.ndarray) -> np.ndarray:
    """The empirical preference matrix: ``W / (W + Wᵀ)`` elementwise, ½ where a pair
    was never compared (and on the diagonal).

    ``W[i, j]`` counts the wins of ``i`` over ``j`` (a tie adds ½ to each side).

    Examples
    --------
    >>> preferences(np.array([[0.0, 3.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])).tolist()
    [[0.5, 0.75, 0.5], [0.25, 0.5, 0.5], [0.5, 0.5, 0.5]]
    """
    W = np.asarray(W, dtype=float)
    n = W + W.T
    compared = n > 0
    return np.where(compared, W / np.where(compared, n, 1.0), 0.5)


#: the two-sided 95 % normal quantile
Z95 = 1.959963984540054


def wilson_interval(wins: Any, n: Any, z: float = Z95) -> tuple[Any, Any]:
    """Wilson score interval of the success rate ``wins / n``, elementwise; ``[0, 1]``
    where ``n == 0``. Arrays in, arrays out; numbers in, floats out.

    The one implementation: the API's preference intervals and the judging simulator's
    success rates both call it.

    Examples
    --------
    >>> lo, hi = wilson_interval(np.array([8.0]), np.array([10.0]))
    >>> round(float(lo[0]), 3), round(float(hi[0]), 3)
    (0.49, 0.943)
    >>> lo, hi = wilson_interval(502, 1000, z=1.96)
    >>> round(lo, 3), round(hi, 3)
    (0.471, 0.533)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    wins = np.asarray(wins, dtype=float)
    n = np.asarray(n, dtype=float)
    n_safe = np.maximum(n, 1e-12)
    p = wins / n_safe
    denom = 1 + z * z / n_safe
    centre = (p + z * z / (2 * n_safe)) / denom
    half = z * np.sqrt(p * (1 - p) / n_safe + z * z / (4 * n_safe * n_safe)) / denom
    lo = np.where(n > 0, np.clip(centre - half, 0, 1), 0.0)
    hi = np.where(n > 0, np.clip(centre + half, 0, 1), 1.0)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def first_true(holds: Callable[[int], bool], limit: int | None = None) -> int | None:
    """The smallest ``n ≥ 1`` with ``holds(n)``, for a condition that stays true once it
    holds: doubling until it holds, then bisection (``O(log n)`` calls). None when it
    does not hold by ``limit`` (no limit: search until it does).

    >>> first_true(lambda n: n * n >= 1000), first_true(lambda n: False, limit=64)
    (32, None)
    """
    hi = 1
    while not holds(hi):
        hi *= 2
        if limit is not None and hi > limit:
            return None
    lo = hi // 2  # fails (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


def ucb_column(W: np.ndarray, c: int, bonus: float) -> np.ndarray:
    """``u_jc`` for every arm ``j`` against arm ``c`` (Zoghi 2017, Algorithm 2 line 5).

    ``u_jc = w_jc / n_jc + sqrt(bonus / n_jc)`` with ``bonus = alpha * ln t`` and
    ``n_jc = w_jc + w_cj``; "x/0 := 1" makes an uncompared pair ``1 + 1 = 2``; and
    ``u_cc = 1/2`` (line 6).
    """
    wins = W[:, c]
    n = wins + W[c, :]
    zero = n == 0
    n = n + zero  # n = 0 -> 1; overwritten below
    # w/n + sqrt(bonus/n) = (w + sqrt(bonus n)) / n, without a division by zero
    u = (wins + np.sqrt(bonus * n)) / n
    u[zero] = 2.0
    u[c] = 0.5
    return u


def rand_argmax(values: np.ndarray, rng: np.random.Generator, avoid: int | None = None) -> int:
    """Index of the maximum, ties broken uniformly at random.

    With ``avoid`` given, that index is dropped from a tie (RUCB line 14: "if there is a
    tie, d is not allowed to be equal to c"). ``rng`` is only consulted on a tie.
    """
    top = values.max()
    idx = np.flatnonzero(values == top)
    if idx.size == 1:
        return int(idx[0])
    if avoid is not None:
        idx = idx[idx != avoid]
    return int(idx[rng.integers(idx.size)])


class LossCounter:
    """Per arm, the number of active opponents it optimistically loses to.

    Arm ``i`` optimistically loses to ``j`` when ``u_ij < 1/2`` (``strict=True``) or
    ``u_ij <= 1/2`` (``strict=False``), where ``u_ij = w_ij/n + sqrt(thr/n)`` and
    ``thr = alpha * ln t``. Solving for ``thr``: the loss holds exactly when
    ``w_ij <= n/2`` and ``thr < e_ij`` (resp. ``<=``) with the *evidence*
    ``e_ij = (n/2 - w_ij)**2 / n``. ``e`` changes only for the pair just compared, and a
    loss can only disappear as ``thr`` grows, so the counts stay valid until ``thr``
    reaches the smallest evidence among current losses; only then is the K×K count redone.
    This turns the O(K²) "optimistic tournament" of RUCB, DTS and MDB into O(1) amortized
    work per step. Uncompared pairs (u = 2 by the "x/0 := 1" rule) are never losses.

    Parameters
    ----------
    W
        The wins matrix (read, not kept).
    active
        Boolean mask of the arms that count as opponents.
    strict
        ``True``: count ``u_ij < 1/2``; ``False``: count ``u_ij <= 1/2``.

    Inactive arms never count as opponents, and their own count carries an offset of
    :attr:`INACTIVE` so that ``counts == 0`` or ``counts == counts.min()`` never
    selects them.

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[0.0, 9.0], [1.0, 0.0]])
    >>> lc = LossCounter(W, np.array([True, True]))
    >>> lc.set_threshold(0.5)          # u_10 = 0.1 + sqrt(0.05) < 1/2
    >>> lc.counts.tolist()
    [0, 1]
    >>> lc.set_threshold(2.0)          # u_10 = 0.1 + sqrt(0.2) >= 1/2
    >>> lc.counts.tolist()
    [0, 0]
    """

    INACTIVE = 1 << 40

    def __init__(self, W: np.ndarray, active: np.ndarray, *, strict: bool = True) -> None:
        self.strict = strict
        self.active = np.asarray(active, dtype=bool).copy()
        #: the active arms, ascending, and whether that is every arm
        self.arms = np.flatnonzero(self.active)
        self.all_active = bool(self.arms.size == self.active.size)
        self.E = self._evidence(W, W.T)
        np.fill_diagonal(self.E, -np.inf)
        self.thr = -1.0
        self.counts = np.zeros(W.shape[0], dtype=np.int64)
        self.next_cross = -np.inf  # forces a full count on the first set_threshold

    @staticmethod
    def _evidence(w: np.ndarray, w_rev: np.ndarray) -> np.ndarray:
        n = w + w_rev
        gap = 0.5 * n - w
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.where((n > 0) & (gap >= 0), gap * gap / n, -np.inf)
        return e

    def _is_loss(self, e: np.ndarray | float) -> np.ndarray | bool:
        return e > self.thr if self.strict else e >= self.thr

    def recount(self) -> None:
        """Redo the counts from ``E`` at the current threshold (O(K²))."""
        loss = self._is_loss(self.E) & self.active[None, :]
        self.counts = loss.sum(axis=1)
        self.counts[~self.active] += self.INACTIVE
        self.next_cross = float(self.E[loss].min()) if loss.any() else np.inf

    def set_threshold(self, thr: float) -> None:
        """Move to ``thr = alpha * ln t`` (non-decreasing over a run)."""
        if thr < self.thr or thr >= self.next_cross:
            self.thr = thr
            self.recount()
        else:
            self.thr = thr

    def update_pair(self, i: int, j: int, w_ij: float, w_ji: float) -> None:
        """Pair ``(i, j)`` now has ``w_ij`` wins for ``i`` and ``w_ji`` for ``j``."""
        if i == j:
            return
        for a, b, wa, wb in ((i, j, w_ij, w_ji), (j, i, w_ji, w_ij)):
            n = wa + wb
            gap = 0.5 * n - wa
            e = gap * gap / n if (n > 0 and gap >= 0) else -np.inf
            if self.active[b]:
                self.counts[a] += int(self._is_loss(e)) - int(self._is_loss(self.E[a, b]))
            self.E[a, b] = e
            if self._is_loss(e) and e < self.next_cross:
                self.next_cross = e

    def update_pairs(self, W: np.ndarray, ii: np.ndarray, jj: np.ndarray) -> None:
        """Bulk version of :meth:`update_pair` (multileaving); recounts in full."""
        if len(ii) == 0:
            return
        ii = np.asarray(ii, dtype=np.intp)
        jj = np.asarray(jj, dtype=np.intp)
        keep = ii != jj
        ii, jj = ii[keep], jj[keep]
        self.E[ii, jj] = self._evidence(W[ii, jj], W[jj, ii])
        self.E[jj, ii] = self._evidence(W[jj, ii], W[ii, jj])
        self.recount()
