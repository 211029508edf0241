"""Relative Upper Confidence Bound (RUCB), Zoghi 2017, Algorithm 2.

Its helpers :func:`~bandits.common.ucb_column` and :class:`~bandits.common.LossCounter`,
shared with the other UCB-style policies, live in :mod:`bandits.common`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import LossCounter, rand_argmax, ucb_column
from bandits.params import ALPHA, Param


class RUCB(DuelingBandit):
    """Relative Upper Confidence Bound, Zoghi 2017, Algorithm 2.

    Each step (line numbers of Algorithm 2):

    I. an optimistic tournament: ``U = W/(W+Wᵀ) + sqrt(alpha ln t/(W+Wᵀ))`` with
       ``x/0 := 1`` and ``u_ii = 1/2`` (lines 5–6); the candidates ``C`` are the arms
       with ``u_cj >= 1/2`` for every ``j`` (line 7). The hypothesised best arm ``B``
       (empty or one arm) keeps only members of ``C`` (line 9), becomes ``C`` when
       ``|C| = 1`` (line 10); with ``|C| > 1`` the champion ``c`` is the arm in ``B``
       with probability ½, else uniform over ``C \\ B`` (lines 11–12); with ``C``
       empty, ``c`` is uniform over all arms (line 8).
    II. ``d = argmax_j u_jc`` with random tie-breaking that avoids ``d = c``
        (line 14).
    III. the caller compares ``(c, d)`` and reports it through :meth:`update`
         (line 16).

    Departures, all forced by live operation:

    - horizonless (the thesis' ``T = ∞``); ``t`` is the number of ``select()`` calls,
      so with delayed feedback ``ln t`` runs ahead of the counts, which only widens
      the bounds;
    - "all arms" means the ACTIVE arms: a retired arm is neither a candidate nor an
      opponent (it is dropped from ``B`` too); an added arm starts with zero counts,
      so every ``u`` involving it is 2 and it is immediately a candidate;
    - ``C`` is computed with :class:`LossCounter` instead of the full matrix ``U``
      (same set, O(1) amortized instead of O(K²) per step);
    - a tie (outcome ½) adds ½ to both ``w_cd`` and ``w_dc``;
    - ``B`` is stored with the state and advanced by the feedback, not by the
      selection: :meth:`update` applies lines 9–10 (``B <- B ∩ C``; ``B <- C`` when
      ``|C| = 1``) with ``C`` computed as the step's selection computed it (``W``
      before this outcome, ``ln t`` of the current step), and :meth:`select` uses the
      same ``B`` without storing it. With immediate feedback the stored ``B`` after
      step ``t`` is the thesis' ``B_t`` exactly (same ``C_t``, same random draws), so
      this is Algorithm 2. Live, where many selections share one stored state, ``B``
      moves once per recorded comparison, at the step of the feedback transaction:
      Algorithm 2's ``B`` on that subsequence of steps (a ``C`` seen only between two
      feedbacks cannot drop or install the hypothesis).

    ``best_arm()`` is the thesis' output ("Ensure"): the active arm beating the most
    arms empirically, ``#{j : w_cj/(w_cj+w_jc) > 1/2}``, ties broken by win rate.

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha
        Exploration parameter, ``alpha > 1/2`` for the thesis' guarantees (0.51 in its
        experiments; Li et al. 2020 tunes 0.8^6 ≈ 0.26 for the Merge variants).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.rucb import RUCB
    >>> P = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.7], [0.1, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = RUCB(3, alpha=0.51, seed=1)
    >>> for _ in range(2000):
    ...     c, d = b.select()
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> b.best_arm()
    0
    >>> c, d = b.select()
    >>> (c, d)
    (0, 0)
    """

    name = "rucb"
    PARAMS: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA,
    }
    serial_updates = True  # _commit advances selection state at every step

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
        #: the hypothesised best arm B (line 2), empty or one arm
        self.B: list[int] = []
        self._lc: LossCounter | None = None
        #: (t, n_updates, C, B after lines 9-10) of the last evaluation
        self._next: tuple[int, int, np.ndarray, list[int]] | None = None

    # ------------------------------------------------------------------ hooks
    def _counter(self) -> LossCounter:
        if self._lc is None:
            self._lc = LossCounter(self.W, self.status == ACTIVE, strict=True)
        return self._lc

    def _hypothesis(self) -> tuple[np.ndarray, list[int]]:
        """Lines 5–10 at step ``t``: the candidates ``C`` and ``B`` after lines 9–10,
        without storing ``B`` (cached for the :meth:`_commit` of the same step)."""
        nxt = self._next
        if nxt is not None and nxt[0] == self.t and nxt[1] == self.n_updates:
            return nxt[2], nxt[3]
        lc = self._counter()
        lc.set_threshold(self.alpha * math.log(max(self.t, 1)))
        # line 7: C = {c | u_cj >= 1/2 for all j} (inactive arms carry a count offset)
        cand = np.flatnonzero(lc.counts == 0)
        B = self.B
        if cand.size == 0:
            B = []  # line 8 (and line 9 empties B)
        elif B and not (cand == B[0]).any():
            B = []  # line 9: B <- B ∩ C
        if cand.size == 1:
            B = [int(cand[0])]  # line 10
        self._next = (self.t, self.n_updates, cand, B)
        return cand, B

    def _select(self) -> Comparison:
        lc = self._counter()
        if lc.arms.size == 0:
            raise RuntimeError("no active arms")
        rng = self.rng
        cand, B = self._hypothesis()
        if cand.size == 0:
            # line 8
            c = int(lc.arms[rng.integers(lc.arms.size)])
        elif cand.size == 1:
            # line 10
            c = int(cand[0])
        elif B and rng.random() < 0.5:
            # line 12, the arm in B with probability 1/2
            c = B[0]
        else:
            # line 12, the rest uniformly (all of C when B is empty)
            rest = cand[cand != B[0]] if B else cand
            c = int(rest[rng.integers(rest.size)])
        # line 14: d = argmax_j u_jc over the active arms
        u = ucb_column(self.W, c, self.alpha * math.log(self.t))
        if not lc.all_active:
            u[~lc.active] = -np.inf
        d = rand_argmax(u, rng, avoid=c)
        return (c, d)

    def _commit(self, i: int, j: int) -> None:
        # lines 9-10 as this step's selection applied them
        self.B = self._hypothesis()[1]

    def _update(self, i: int, j: int, outcome: float) -> None:
        if self._lc is not None:
            self._lc.update_pair(i, j, self.W[i, j], self.W[j, i])

    def _add_arm(self, arm: int) -> None:
        self._lc = self._next = None

    def _retire_arm(self, arm: int) -> None:
        self.B = [b for b in self.B if b != arm]
        self._lc = self._next = None

    def _extra_state(self) -> dict[str, Any]:
        return {"B": list(self.B)}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.B = [int(b) for b in state.get("B", [])]
        self._lc = self._next = None
