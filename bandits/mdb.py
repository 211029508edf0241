"""Multi-Dueling Bandit (MDB), Brost et al. 2016, Algorithm 1."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import LossCounter
from bandits.params import ALPHA, Param


class MDB(DuelingBandit):
    """Multi-Dueling Bandit, Brost et al. 2016, Algorithm 1: selects a *set* of arms.

    Two upper confidence bounds per pair (Brost et al. 2016, eqs. 2 and 3; Algorithm 1 lines 4–5):
    ``u_ij = w_ij/n_ij + sqrt(alpha ln t / n_ij)`` and the wider
    ``v_ij = w_ij/n_ij + sqrt(beta alpha ln t / n_ij)``, ``u_ii = v_ii = 1/2``. The
    potential Condorcet winners are ``E = {i : min_j u_ij >= 1/2}`` (line 6) and, by the
    wider bound, ``F = {i : min_j v_ij >= 1/2}`` (line 7). Each step:

    - ``|E| > 1``: multileave all of ``F`` (line 9) — several candidates, so explore,
      and explore the arms that the wider bound still admits in parallel;
    - ``|E| = 1``: show only that arm (line 12), a 1-tuple;
    - ``E`` empty: multileave all arms (line 15).

    :meth:`select` returns the set as a tuple of distinct arms (``multi = True``); all
    pairwise outcomes of the multileaved comparison come back through
    :meth:`update_many` and count as one step.

    Line 2 ("play all arms") needs no special case: before any feedback every pair is
    uncompared, which this implementation scores ``u = v = 2`` ("x/0 := 1" as in
    RUCB), so ``E`` holds every arm and line 9 plays all of ``F``, i.e. all arms.

    Departures and choices:

    - ties: Brost et al. 2016 breaks tied pairwise outcomes randomly "so that
      n_ij = w_ij + w_ji"; here a tie (outcome ½) adds ½ to each side of ``W``, the
      expectation of that coin, with the same ``n_ij = w_ij + w_ji`` and no extra noise;
    - horizonless (``T`` unknown); ``t`` is the number of ``select()`` calls, so with
      delayed feedback ``ln t`` runs ahead of the counts;
    - only ACTIVE arms are candidates or opponents; an added arm has zero counts, so it
      is in ``E`` and ``F`` and is multileaved on the next step; MDB never eliminates;
    - ``E`` and ``F`` come from two :class:`~bandits.common.LossCounter` (thresholds
      ``alpha ln t`` and ``beta alpha ln t``) instead of the full matrices ``U``, ``V``.

    ``best_arm()``: the single member of ``E`` when there is one (the arm MDB exploits);
    otherwise the member of ``E`` (or of the active arms, if ``E`` is empty) with the
    most empirical wins, ties by win rate.

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha, beta
        Width of the narrow bound and how much wider the wide one is (``beta >= 1``);
        Brost et al. 2016, §4.1.1 found ``alpha = 0.5``, ``beta = 1.5`` best.
    seed
        Seed or ``numpy.random.Generator`` (MDB itself draws nothing at random).

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.mdb import MDB
    >>> P = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.7], [0.1, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = MDB(3)
    >>> b.select()  # line 2: all arms
    (0, 1, 2)
    >>> b.update_many([(0, 1, 1.0), (0, 2, 1.0), (1, 2, 0.0)])
    >>> for _ in range(500):
    ...     S = b.select()
    ...     b.update_many([(i, j, float(env.random() < P[i, j]))
    ...                    for x, i in enumerate(S) for j in S[x + 1:]])
    >>> b.select()
    (0,)
    >>> b.best_arm()
    0
    """

    name = "mdb"
    PARAMS: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA.override(default=0.5),  # Brost et al. 2016, §4.1.1
        "beta": Param(float, 1.5,
                      "how much wider the wide bound is than the narrow one (β ≥ 1)",
                      ge=1, le=1000),
    }
    multi = True

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
        self.beta = float(p["beta"])
        self._narrow: LossCounter | None = None
        self._wide: LossCounter | None = None

    def _counters(self) -> tuple[LossCounter, LossCounter]:
        if self._narrow is None or self._wide is None:
            active = self.status == ACTIVE
            self._narrow = LossCounter(self.W, active, strict=True)
            self._wide = LossCounter(self.W, active, strict=True)
        bonus = self.alpha * math.log(max(self.t, 1))
        self._narrow.set_threshold(bonus)
        self._wide.set_threshold(self.beta * bonus)
        return self._narrow, self._wide

    def candidates(self) -> tuple[list[int], list[int]]:
        """``(E, F)`` of lines 6–7 at the current ``t``."""
        narrow, wide = self._counters()
        return (
            np.flatnonzero(narrow.counts == 0).tolist(),
            np.flatnonzero(wide.counts == 0).tolist(),
        )

    def _select(self) -> Comparison:
        narrow, wide = self._counters()
        if narrow.arms.size == 0:
            raise RuntimeError("no active arms")
        E = np.flatnonzero(narrow.counts == 0)  # line 6 (inactive rows never 0)
        if E.size > 1:
            return tuple(int(a) for a in np.flatnonzero(wide.counts == 0))  # line 9
        if E.size == 1:
            return (int(E[0]),)  # line 12
        return tuple(int(a) for a in narrow.arms)  # line 15

    def _update(self, i: int, j: int, outcome: float) -> None:
        for lc in (self._narrow, self._wide):
            if lc is not None:
                lc.update_pair(i, j, self.W[i, j], self.W[j, i])

    def _update_many(self, outcomes: list[tuple[int, int, float]]) -> None:
        if not outcomes:
            return
        ii = np.array([o[0] for o in outcomes], dtype=np.intp)
        jj = np.array([o[1] for o in outcomes], dtype=np.intp)
        for lc in (self._narrow, self._wide):
            if lc is not None:
                lc.update_pairs(self.W, ii, jj)

    def _add_arm(self, arm: int) -> None:
        self._narrow = self._wide = None

    def _retire_arm(self, arm: int) -> None:
        self._narrow = self._wide = None

    def best_arm(self) -> int:
        active = self.status == ACTIVE
        if not active.any():
            return super().best_arm()
        E, _ = self.candidates()
        if len(E) == 1:
            return E[0]
        pool = np.asarray(E) if E else np.flatnonzero(active)
        arms = np.flatnonzero(active)
        sub = self.W[np.ix_(pool, arms)]
        rev = self.W[np.ix_(arms, pool)].T
        copeland = (sub > rev).sum(axis=1)
        rate = sub.sum(axis=1) / np.maximum((sub + rev).sum(axis=1), 1.0)
        return int(pool[np.lexsort((-rate, -copeland))[0]])

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._narrow = self._wide = None
