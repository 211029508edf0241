"""Relative Confidence Sampling (RCS), Zoghi 2017, Algorithm 3."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits import special
from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import rand_argmax, ucb_column
from bandits.dts import beta_win_prob
from bandits.params import ALPHA, Param


class RCS(DuelingBandit):
    """Relative Confidence Sampling, Zoghi 2017, Algorithm 3.

    Each step (line numbers of Algorithm 3):

    I. a simulated tournament: ``Θ_ii = 1/2`` (line 5), ``Θ_ij ~ Beta(w_ij + 1,
       w_ji + 1)`` for ``i < j`` and ``Θ_ji = 1 - Θ_ij`` (lines 6–8); the champion
       ``c`` is the arm with ``Θ_cj >= 1/2`` for every ``j``, or, if there is none, the
       arm chosen champion least often so far (line 9).
    II. UCB relative to ``c``: ``U = W/(W+Wᵀ) + sqrt(alpha ln t/(W+Wᵀ))``, ``x/0 := 1``,
        ``U_ii = 1/2`` (lines 11–12), ``d = argmax_j U_jc`` (line 13).
    III. the caller compares ``(c, d)`` and reports it through :meth:`update`
         (line 15).

    How line 9 is evaluated without sampling the K(K-1)/2 pairs: only the identity of
    the arm that beats all others in the sampled tournament matters. At most one arm can
    (two would need ``Θ_cc' = Θ_c'c = 1/2``, probability 0), so the events "arm ``i``
    beats all" are disjoint, and each has probability ``π_i = ∏_{j≠i} q_ij`` with
    ``q_ij = P(Beta(w_ij + 1, w_ji + 1) > 1/2)`` because row ``i`` is independent draws.
    One uniform picks ``c`` from ``(π_1, ..., π_K, 1 - Σπ)``, the last outcome meaning
    "no such arm". That is exactly the law of line 9; ``log π`` is kept as row sums of
    ``log q``, refreshed for the two rows each comparison changes, so a step costs O(K).
    Only the part of ``U`` line 13 reads (column ``c``) is computed.

    Choices the pseudo-code leaves open: ties in line 9's "least often" and in line 13's
    argmax are broken uniformly at random, and, as in RUCB (Algorithm 2 line 14), a tie
    in line 13 never makes ``d = c``. ``N_i`` counts every step in which ``i`` was the
    champion ``c``, by either branch of line 9.

    ``N_i`` is stored with the state and counted by the feedback, not by the selection:
    :meth:`update` adds 1 to ``N_c`` for the comparison ``(c, d)`` it records (the
    champion is the first arm, as :meth:`select` returned it). With immediate feedback
    that is the thesis' count at every step, so this is Algorithm 3 (same draws). Live,
    ``N_c`` counts the champion's comparisons whose feedback has been recorded: a
    selection sees the counts of the feedback received so far (as it sees ``W``), and a
    comparison that is never credited (a lone ranker shown, a search without clicks)
    is not counted.

    Departures: horizonless (the thesis' RCS is); ``t`` is the number of ``select()``
    calls; only ACTIVE arms take part; an added arm starts with zero counts
    (``Beta(1, 1)``, ``U = 2``) and ``N = 0``, so it is the next "least often" champion;
    a tie adds ½ to each side of ``W``. RCS never eliminates.

    ``best_arm()``: the base rule, the active arm beating the most others empirically
    (as RUCB's "Ensure"), ties by win rate; RCS itself "does not have an output: as time
    goes by it chooses the best arm more and more frequently" (§5.1).

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha
        Exploration parameter of line 11, ``alpha > 1/2`` (line 1).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.rcs import RCS
    >>> P = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.7], [0.1, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = RCS(3, seed=1)
    >>> for _ in range(2000):
    ...     c, d = b.select()
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> b.best_arm()
    0
    >>> int(b.champion_counts[0]) > 1900
    True
    """

    name = "rcs"
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
        #: N_i of line 9: how often each arm was the champion c
        self.champion_counts = np.zeros(self.K, dtype=np.int64)
        self._lq: np.ndarray | None = None
        self._rows = np.zeros(self.K)

    def _log_row_probs(self) -> np.ndarray:
        """``log P(i beats every other active arm in the sampled tournament)`` per arm.

        Row ``i`` of the tournament is independent draws, so that probability is
        ``∏_j q_ij`` with ``q_ij = P(Θ_ij > 1/2)`` (:func:`bandits.dts.beta_win_prob`).
        Kept as row sums of ``log q``, refreshed for the two rows a comparison touches.
        """
        if self._lq is None:
            active = self.status == ACTIVE
            with np.errstate(divide="ignore"):
                lq = np.log(beta_win_prob(self.W))
            np.fill_diagonal(lq, 0.0)
            lq[:, ~active] = 0.0  # inactive arms are no opponents
            self._lq = lq
            self._rows = np.array([row.sum() for row in lq])
        return self._rows

    def _select(self) -> Comparison:
        active = self.status == ACTIVE
        arms = np.flatnonzero(active)
        if arms.size == 0:
            raise RuntimeError("no active arms")
        # line 9: c beats every j in the sampled tournament Θ. At most one arm can
        # (two would need Θ_cc' = Θ_c'c = 1/2, probability 0), so the events
        # "c = i" are disjoint with probabilities π_i = ∏_j q_ij: draw c from them.
        log_pi = self._log_row_probs()[arms]
        pi = np.exp(log_pi)
        u = self.rng.random()
        cum = np.cumsum(pi)
        k = int(np.searchsorted(cum, u, side="right"))
        if k < arms.size:
            c = int(arms[k])
        else:
            # line 9, second branch: the arm chosen champion least often
            counts = self.champion_counts[arms]
            c = int(arms[rand_argmax(-counts, self.rng)])
        # lines 11-13: d = argmax_j U_jc over the active arms
        u = ucb_column(self.W, c, self.alpha * math.log(self.t))
        u[~active] = -np.inf
        d = rand_argmax(u, self.rng, avoid=c)
        return (c, d)

    def _commit(self, i: int, j: int) -> None:
        # line 9's N_c: c = i was this comparison's champion
        self.champion_counts[i] += 1

    def _update(self, i: int, j: int, outcome: float) -> None:
        if self._lq is None or i == j:
            return
        lq, W = self._lq, self.W
        with np.errstate(divide="ignore"):
            if self.status[j] == ACTIVE:
                lq[i, j] = np.log(special.betainc(W[j, i] + 1.0, W[i, j] + 1.0, 0.5))
            if self.status[i] == ACTIVE:
                lq[j, i] = np.log(special.betainc(W[i, j] + 1.0, W[j, i] + 1.0, 0.5))
        self._rows[i] = lq[i].sum()
        self._rows[j] = lq[j].sum()

    def _add_arm(self, arm: int) -> None:
        self.champion_counts = np.append(self.champion_counts, 0)
        self._lq = None

    def _retire_arm(self, arm: int) -> None:
        self._lq = None

    def _extra_state(self) -> dict[str, Any]:
        return {"champion_counts": self.champion_counts.tolist()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.champion_counts = np.asarray(state["champion_counts"], dtype=np.int64)
        self._lq = None
