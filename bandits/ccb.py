"""Copeland Confidence Bounds (CCB), Zoghi 2017, Algorithm 5."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import LossCounter, rand_argmax
from bandits.params import ALPHA, Param


def _pairs_of(opponents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All ``(i, j)`` with ``a_j ∈ B^i`` (row-major) and the row sizes ``|B^i|``."""
    ii, jj = np.nonzero(opponents)
    return ii, jj, np.bincount(ii, minlength=opponents.shape[0])


class _Sets:
    """``B_t`` (on the active arms ``arms``), ``B_t^i`` and ``L̄_C`` at one step, with
    ``C_t``; ``Bo`` is the stored matrix until :meth:`writable` copies it."""

    def __init__(self, arms, Bb, Bo, LC, pairs) -> None:
        self.key: tuple[int, int] | None = None
        self.arms: np.ndarray = arms
        self.Bb: np.ndarray = Bb
        self.Bo: np.ndarray = Bo
        self.LC: int = LC
        self.C: np.ndarray = np.zeros(arms.size, dtype=bool)
        self.shared = True
        self._pairs = pairs

    def writable(self) -> np.ndarray:
        """``Bo``, copied first if it is still the stored matrix."""
        if self.shared:
            self.Bo = self.Bo.copy()
            self.shared = False
        self._pairs = None
        return self.Bo

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._pairs is None:
            self._pairs = _pairs_of(self.Bo)
        return self._pairs

    def reset(self, k: int) -> None:
        """Lines 2–4 (``k`` active arms)."""
        self.Bb[:] = True
        self.Bo = np.zeros_like(self.Bo)
        self.shared = False
        self._pairs = None
        self.LC = k


class CCB(DuelingBandit):
    """Copeland Confidence Bounds, Zoghi 2017, Algorithm 5.

    Targets a *Copeland* winner (an arm beating the most others), so it needs no
    Condorcet winner. Each step (line numbers of Algorithm 5):

    - line 6: ``U``, ``L = W/(W+Wᵀ) ± sqrt(alpha ln t/(W+Wᵀ))``, ``u_ii = l_ii = 1/2``,
      ``x/0 := 1`` (an uncompared pair has ``u = 2``, ``l = 0``);
    - line 7: optimistic and pessimistic Copeland scores ``#{k ≠ i : u_ik >= 1/2}``
      and ``#{k ≠ i : l_ik >= 1/2}``; line 8: ``C_t`` = the optimistic top scorers;
    - line 9: maintain the shortlist ``B_t`` of potential best arms, the sets ``B_t^i``
      of arms likely to beat ``a_i``, and ``L̄_C``, the estimated number of losses of
      a Copeland winner: A. reset everything (lines 2–4) if some ``a_j ∈ B_t^i`` has
      ``l_ij > 1/2``; B. drop from ``B_t`` every arm whose optimistic score is below
      some arm's pessimistic score, refilling its ``B_t^i = {a_k | u_ik < 1/2}``
      unless it holds ``L̄_C + 1`` arms, and reset if ``B_t`` empties; C. for every
      ``a_i ∈ C_t`` with equal scores, add it to ``B_t``, empty ``B_t^i``, set
      ``L̄_C = K - 1 - score``, empty the other ``B_t^j`` smaller than ``L̄_C + 1`` and
      trim the larger ones to ``L̄_C + 1`` random members;
    - line 10: with probability 1/4 play a uniform pair ``(i, j)`` with
      ``a_j ∈ B_t^i`` and ``1/2 ∈ [l_ij, u_ij]``, if there is one;
    - lines 11–12: otherwise ``a_c`` is uniform over ``B_t ∩ C_t`` (with probability
      2/3, when non-empty) or over ``C_t``;
    - line 13: with probability 1/2 the opponent pool is ``B_t^c``, else all arms;
      ``d = argmax u_jc`` over the pool's arms with ``l_jc <= 1/2``, ties avoiding
      ``d = c``;
    - line 14: the caller compares ``(c, d)`` and reports it through :meth:`update`.

    Choices and departures:

    - when the pool ``B_t^c`` of line 13 has no arm with ``l_jc <= 1/2`` (for example
      when it is empty), all arms are used (which always contains ``c``, as
      ``l_cc = 1/2``); the pseudo-code leaves this case open;
    - horizonless (as in the thesis), ``t`` = number of ``select()`` calls;
    - "all arms" and ``K`` mean the ACTIVE arms (``K`` in line 9C counts them); a
      retired arm leaves ``B_t`` and every ``B_t^i``; an added arm starts with zero
      counts, joins ``B_t`` (as every arm does on line 2) with an empty ``B^i``, and
      ``L̄_C`` is kept;
    - a tie (outcome ½) adds ½ to each side of ``W``;
    - CCB never eliminates;
    - ``B_t``, ``B_t^i`` and ``L̄_C`` are stored with the state and advanced by the
      feedback, not by the selection: :meth:`update` applies line 9 at the current
      step ``t`` to ``W`` as the step's selection saw it (before this outcome), and
      :meth:`select` applies the same line 9 to the stored sets and uses the result for
      lines 10–13 without storing it. Line 9C's random choice of ``L̄_C + 1`` members
      is drawn from a generator seeded by ``(trim_key, t, n_updates)`` (``trim_key``
      is drawn once from the policy's generator and stored), so the selection and the
      feedback make the same choice. With immediate feedback the stored sets after
      step ``t`` are the thesis' ``B_t``, ``B_t^i``, ``L̄_C`` exactly and every choice
      has the law of Algorithm 5 (only the random stream of 9C differs). Live, where
      many selections share one stored state, line 9 runs once per recorded
      comparison, at the step of the feedback transaction: Algorithm 5's line 9 on that
      subsequence of steps.

    Cost: the Copeland scores of line 7 come from two
    :class:`~bandits.common.LossCounter` (O(1) amortized per step), and ``U``/``L`` are
    only evaluated where a line reads them (the pairs in the sets ``B^i``, one row on a
    refill, column ``c``), so a step is O(K + Σ|B^i|) instead of O(K²). The choices
    are those of the dense pseudo-code (the tests compare the two).

    ``best_arm()``: the base rule, the active arm with the most empirical wins
    (``w_ij > w_ji``), ties by win rate — an estimate of a Copeland winner.

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha
        Exploration parameter, ``alpha > 1/2``.
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    A 4-arm instance without a Condorcet winner (0 → 1 → 2 → 0 is a cycle; 0 and 1
    both beat two arms, 0 is upset by 2 and 1 by 0): CCB settles on a Copeland winner.

    >>> import numpy as np
    >>> from bandits.ccb import CCB
    >>> P = np.array([[0.5, 0.9, 0.1, 0.9],
    ...               [0.1, 0.5, 0.9, 0.9],
    ...               [0.9, 0.1, 0.5, 0.1],
    ...               [0.1, 0.1, 0.9, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = CCB(4, seed=1)
    >>> for _ in range(3000):
    ...     c, d = b.select()
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> b.best_arm() in (0, 1)
    True
    """

    name = "ccb"
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
        #: B_t, the potential best arms (line 2), as a mask over all arms
        self.shortlist = np.ones(self.K, dtype=bool)
        #: B_t^i as row i of a K×K mask: arms likely to beat a_i (line 3)
        self.opponents = np.zeros((self.K, self.K), dtype=bool)
        #: L̄_C, the estimated max losses of a Copeland winner (line 4)
        self.max_losses = self.K
        #: seeds line 9C's random choices, with the step (see the class notes)
        self.trim_key = int(self.rng.integers(1 << 62))
        self._losses: LossCounter | None = None
        self._beaten: LossCounter | None = None
        #: the pairs of the stored B^i (see :func:`_pairs_of`)
        self._pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: line 9 at the last step it was evaluated
        self._next: _Sets | None = None

    # ------------------------------------------------------------------ helpers
    def _counters(self) -> tuple[LossCounter, LossCounter]:
        """Counters for line 7 at the current ``t``.

        ``losses.counts[i] = #{k : u_ik < 1/2}`` gives the optimistic score
        ``(K - 1) - losses``; ``beaten.counts[i] = #{k : u_ki <= 1/2} = #{k : l_ik >= 1/2}``
        (as ``l_ik = 1 - u_ki``) is the pessimistic score: a counter on ``Wᵀ``.
        """
        if self._losses is None or self._beaten is None:
            active = self.status == ACTIVE
            self._losses = LossCounter(self.W, active, strict=True)
            self._beaten = LossCounter(self.W.T, active, strict=False)
        thr = self.alpha * math.log(max(self.t, 1))
        self._losses.set_threshold(thr)
        self._beaten.set_threshold(thr)
        return self._losses, self._beaten

    def _pair_bounds(self, ii: np.ndarray, jj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Line 6 for the pairs ``(ii[k], jj[k])``: ``(u, l)``, elementwise."""
        w = self.W[ii, jj]
        n = w + self.W[jj, ii]
        zero = n == 0
        n_safe = n + zero
        mean = w / n_safe
        radius = np.sqrt(self.alpha * math.log(max(self.t, 1)) / n_safe)
        u = mean + radius
        lo = mean - radius
        u[zero] = 2.0  # x/0 := 1 in both terms: 1 + 1
        lo[zero] = 0.0  # and 1 - 1
        same = ii == jj
        u[same] = 0.5
        lo[same] = 0.5
        return u, lo

    def _stored_sets(self, arms: np.ndarray) -> _Sets:
        """The stored ``B_t``, ``B_t^i``, ``L̄_C`` (shared until written to)."""
        if self._pairs is None:
            self._pairs = _pairs_of(self.opponents)
        return _Sets(arms, self.shortlist[arms], self.opponents, self.max_losses, self._pairs)

    def _trim_rng(self) -> np.random.Generator:
        """The generator of line 9C's random choice at this step (see the class notes)."""
        return np.random.default_rng([self.trim_key, self.t, self.n_updates])

    def _line9(self) -> _Sets:
        """Lines 7–9 at step ``t``: ``C_t`` and the sets after line 9, applied to the
        stored ones without changing them (cached for the :meth:`_commit` of the step)."""
        key = (self.t, self.n_updates)
        if self._next is not None and self._next.key == key:
            return self._next
        losses, beaten = self._counters()
        A = losses.arms
        k = A.size
        s = self._stored_sets(A)
        s.key = key
        self._next = s
        if k < 2:
            return s
        # line 7: optimistic / pessimistic Copeland scores; line 8: C_t (positions in A)
        cpld_up = (k - 1) - losses.counts[A]
        cpld_lo = beaten.counts[A]
        s.C = cpld_up == cpld_up.max()
        # 9A: reset disproven hypotheses
        ii, jj, _ = s.pairs()
        if ii.size and (self._pair_bounds(ii, jj)[1] > 0.5).any():
            s.reset(k)
        # 9B: remove non-Copeland winners
        drop = s.Bb & (cpld_up < cpld_lo.max())
        if drop.any():
            s.Bb[drop] = False
            sizes = s.pairs()[2][A]
            for p in np.flatnonzero(drop & (sizes != s.LC + 1)):
                i = int(A[p])
                u_row = self._pair_bounds(np.full(k, i), A)[0]
                Bo = s.writable()
                Bo[i] = False
                Bo[i, A[u_row < 0.5]] = True
            if not s.Bb.any():
                s.reset(k)
        # 9C: add Copeland winners
        trim = None
        for p in np.flatnonzero(s.C & (cpld_up == cpld_lo)):
            i = int(A[p])
            s.Bb[p] = True
            s.LC = int(k - 1 - cpld_up[p])
            if s.Bo[i].any():
                s.writable()[i] = False
            sizes = s.pairs()[2]
            small = (sizes > 0) & (sizes < s.LC + 1)
            if small.any():
                s.writable()[small] = False
            for j in np.flatnonzero(sizes > s.LC + 1):
                members = np.flatnonzero(s.Bo[j])
                if trim is None:
                    trim = self._trim_rng()
                keep = trim.choice(members, size=s.LC + 1, replace=False)
                Bo = s.writable()
                Bo[j] = False
                Bo[j, keep] = True
        return s

    # ------------------------------------------------------------------ hooks
    def _select(self) -> Comparison:
        s = self._line9()
        A = s.arms
        k = A.size
        if k == 0:
            raise RuntimeError("no active arms")
        if k == 1:
            return (int(A[0]), int(A[0]))
        rng = self.rng
        C = s.C
        # line 10: with probability 1/4, an uncertain pair (i, j) with a_j in B^i
        if rng.random() < 0.25:
            ii, jj, _ = s.pairs()
            if ii.size:
                u, lo = self._pair_bounds(ii, jj)
                pairs = np.flatnonzero((lo <= 0.5) & (u >= 0.5))
                if pairs.size:
                    p = int(pairs[rng.integers(pairs.size)])
                    return (int(ii[p]), int(jj[p]))
        # line 11: prefer B_t ∩ C_t with probability 2/3
        both = s.Bb & C
        if both.any() and rng.random() < 2.0 / 3.0:
            C = both
        # line 12: a_c uniform over C_t
        cs = np.flatnonzero(C)
        c = int(cs[rng.integers(cs.size)])
        c_arm = int(A[c])
        # line 13: the opponent pool is B^c or all arms, each with probability 1/2
        u_col, l_col = self._pair_bounds(A, np.full(k, c_arm))
        eligible = l_col <= 0.5
        pool = s.Bo[c_arm, A] & eligible
        if rng.random() < 0.5 and pool.any():
            eligible = pool
        u = np.where(eligible, u_col, -np.inf)
        d = rand_argmax(u, rng, avoid=c)
        return (c_arm, int(A[d]))

    def _commit(self, i: int, j: int) -> None:
        # line 9 as this step's selection applied it
        s = self._line9()
        self.shortlist[s.arms] = s.Bb
        self.opponents = s.Bo
        self.max_losses = s.LC
        self._pairs = s.pairs()
        s.shared = True  # the stored sets now: copy before writing again

    def _update(self, i: int, j: int, outcome: float) -> None:
        if self._losses is not None and self._beaten is not None:
            self._losses.update_pair(i, j, self.W[i, j], self.W[j, i])
            self._beaten.update_pair(i, j, self.W[j, i], self.W[i, j])

    def _add_arm(self, arm: int) -> None:
        self.shortlist = np.append(self.shortlist, True)
        Bo = np.zeros((self.K, self.K), dtype=bool)
        Bo[:arm, :arm] = self.opponents
        self.opponents = Bo
        self._losses = self._beaten = self._pairs = self._next = None

    def _retire_arm(self, arm: int) -> None:
        self.shortlist[arm] = False
        self.opponents[arm, :] = False
        self.opponents[:, arm] = False
        self._losses = self._beaten = self._pairs = self._next = None

    def _extra_state(self) -> dict[str, Any]:
        return {
            "shortlist": np.flatnonzero(self.shortlist).tolist(),
            "opponents": [np.flatnonzero(row).tolist() for row in self.opponents],
            "max_losses": int(self.max_losses),
            "trim_key": self.trim_key,
        }

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.shortlist = np.zeros(self.K, dtype=bool)
        self.shortlist[state["shortlist"]] = True
        self.opponents = np.zeros((self.K, self.K), dtype=bool)
        for i, row in enumerate(state["opponents"]):
            self.opponents[i, row] = True
        self.max_losses = int(state["max_losses"])
        self.trim_key = int(state.get("trim_key", 0))
        self._losses = self._beaten = self._pairs = self._next = None
