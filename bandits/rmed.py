"""Relative Minimum Empirical Divergence (RMED1), Komiyama, Honda, Kashima & Nakagawa, COLT 2015."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits import special
from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import rand_argmax
from bandits.params import Param


def _divergence_terms(w: np.ndarray, w_rev: np.ndarray) -> np.ndarray:
    """``N_ij d(μ̂_ij, 1/2)`` where ``μ̂_ij <= 1/2``, else 0 (uncompared pairs: 0).

    ``d(p, 1/2) = p log 2p + (1 - p) log 2(1 - p)``, the Bernoulli KL divergence, so
    ``N d(μ̂, 1/2) = w log(2w/N) + w' log(2w'/N)`` with ``N = w + w'``.
    """
    n = w + w_rev
    n_safe = np.where(n > 0, n, 1.0)
    term = special.xlogy(w, 2.0 * w / n_safe) + special.xlogy(w_rev, 2.0 * w_rev / n_safe)
    return np.where((n > 0) & (2.0 * w <= n), term, 0.0)


class RMED1(DuelingBandit):
    """RMED1 (Komiyama et al. 2015, Algorithms 1 and 2), a baseline of Li et al. 2020, §3/§5.5.

    Li et al. 2020 describes it in prose only (§3: it extends DMED, "pulling each pair of
    rankers the minimum number of times prescribed by the lower bound"); Brost et al. 2016, §4.1.1
    gives the setting ``f(K) = 0.3 K^1.01``. The steps follow the original paper.

    Statistics: ``μ̂_ij = w_ij / N_ij`` (½ when uncompared); ``Ô_i = {j ≠ i : μ̂_ij <= 1/2}``;
    the empirical divergence ``I_i = Σ_{j ∈ Ô_i} N_ij d(μ̂_ij, 1/2)`` (the evidence
    that ``i`` is not the Condorcet winner); ``î* = argmin_i I_i``; arm ``j`` stays a
    candidate when ``J_j: I_j - I_î* <= log t + f(K)``.

    Algorithm 1:

    - initial phase: draw every pair once (``L = 1``);
    - then rounds: ``L_C = L_R`` = the candidates, ``L_N = ∅``; for each ``l ∈ L_C`` in a
      fixed (ascending) order: choose ``m`` (Algorithm 2), play ``(l, m)``, remove
      ``l`` from ``L_R``, and add to ``L_N`` every arm ``j ∉ L_R`` for which ``J_j``
      holds; at the end of the round ``L_C, L_R <- L_N``.

    Algorithm 2 (RMED1's choice of ``m``): ``m = î*`` if ``Ô_l`` is empty or contains
    ``î*``; otherwise ``m = argmin_{j ≠ l} μ̂_lj``. Once ``î*`` beats everyone
    empirically it is the only candidate and is played against itself.

    Departures, for live operation:

    - horizonless (RMED1 is anytime); ``t`` is the number of ``select()`` calls;
    - an added arm gets its own initial phase (one duel against each active arm) on the
      next steps, then enters ``L_N`` through ``J`` like any arm; a retired arm is
      skipped everywhere, and ``K`` in ``f(K)`` counts the active arms; if a round ends
      with no candidate left (only possible after retirements) all active arms are;
    - ties of ``argmin`` (frequent after the initial phase) are broken at random;
    - a tie (outcome ½) adds ½ to each side of ``W``;
    - ``I`` is kept up to date per compared pair (O(K) per step, not O(K²)).

    Where the state lives (live, many processes select from copies of the stored state
    and only the feedback writes it; see :mod:`bandits.base`). Nothing is advanced by
    :meth:`select`:

    - the initial phase lasts while some pair of active arms has never been compared
      (in ``W``). At step ``t`` it plays the uncompared pair number
      ``(t - 1 - n_updates) mod |U|`` of the list ``U`` of such pairs, in the order
      ``(1, 0), (2, 0), (2, 1), (3, 0), ...``: the selections whose feedback has not come
      yet are skipped, so each pair is drawn once. With immediate feedback
      ``t - 1 = n_updates`` and this is the pairs in that fixed order, as before. Live,
      a pair whose feedback never comes (a search without clicks) is drawn again later;
    - the loop ``for l ∈ L_C`` runs on ``t``: the round ``L_C`` is stored with the step
      at which it began, ``start``, and plays ``l(t) = L_C[t - start]`` (its active
      arms, in ascending order) — a function of ``t``, not a pointer moved by the
      selection. The round's bookkeeping, ``L_R <- L_R \\ {l}`` and
      ``L_N <- L_N ∪ {j ∉ L_R : J_j}``, is done by :meth:`update` for the comparison
      ``(l, m)`` it records, on the statistics and ``t`` the selection saw; the round
      change ``L_C, L_R <- L_N`` by the first feedback at a step past the round's end
      (a selection past it computes the same next round without storing it). With
      immediate feedback that is Algorithm 1's sequence of states, draw for draw.
      Live, a round may end before the feedback of some of its arms came (or with
      none, when ``î*`` plays itself and a lone ranker is shown, which is not
      credited): its ``L_N`` then also takes every ``j`` with ``J_j`` at that step,
      which is what ``L_R = ∅`` at the round's end gives with immediate feedback, so
      ``î*`` (always a candidate) is never lost; rounds that end without any feedback
      repeat ``{j : J_j}``;
    - during an initial phase (an added arm's) the round waits: its arms not yet played
      form the round that resumes after it;
    - retiring an arm the round has already played shifts the later positions by one,
      so one arm may miss that round (with the old pointer it was not skipped).

    ``best_arm()``: ``î*``, the active arm with the least empirical divergence, ties by
    win rate.

    Parameters
    ----------
    n_arms
        Number of arms K.
    f_scale, f_power
        ``f(K) = f_scale * K ** f_power`` (paper: 0.3 and 1.01).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.rmed import RMED1
    >>> P = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.7], [0.1, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = RMED1(3, seed=1)
    >>> [b.select() for _ in range(3)]  # the initial phase: every pair once
    [(1, 0), (2, 0), (2, 1)]
    >>> for (c, d) in [(1, 0), (2, 0), (2, 1)]:
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> for _ in range(2000):
    ...     c, d = b.select()
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> b.best_arm()
    0
    >>> b.select()
    (0, 0)
    """

    name = "rmed1"
    PARAMS: ClassVar[dict[str, Param]] = {
        "f_scale": Param(float, 0.3,
                         "f(K) = f_scale · K^f_power in the likelihood test",
                         ge=0, le=1000),
        "f_power": Param(float, 1.01,
                         "f(K) = f_scale · K^f_power in the likelihood test",
                         ge=0, le=10),
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
        self.f_scale = float(p["f_scale"])
        self.f_power = float(p["f_power"])
        #: L_C, the current round's arms (ascending), and the step it began at
        self.round = np.arange(self.K)
        self.round_start = 1
        #: L_R and L_N as masks
        self.remaining = np.ones(self.K, dtype=bool)
        self.next_round = np.zeros(self.K, dtype=bool)
        self._D: np.ndarray | None = None
        self._I = np.zeros(self.K)
        self._act: tuple[np.ndarray, np.ndarray] | None = None
        self._unc: np.ndarray | None = None
        self._unc_left = np.zeros(0, dtype=bool)
        self._unc_n = self._unc_head = 0

    # ------------------------------------------------------------------ statistics
    def _divergences(self) -> np.ndarray:
        """``I_i`` for every arm (inactive opponents do not count)."""
        if self._D is None:
            D = _divergence_terms(self.W, self.W.T)
            np.fill_diagonal(D, 0.0)
            D[:, self.status != ACTIVE] = 0.0
            self._D = D
            self._I = np.array([row.sum() for row in D])
        return self._I

    def _active(self) -> tuple[np.ndarray, np.ndarray]:
        """The active arms as a mask and as indices (cached until the field changes)."""
        if self._act is None:
            mask = self.status == ACTIVE
            self._act = (mask, np.flatnonzero(mask))
        return self._act

    def _threshold(self) -> float:
        k = self._active()[1].size
        return math.log(max(self.t, 1)) + self.f_scale * k**self.f_power

    def _uncompared(self) -> int:
        """``|U|``: the number of pairs of active arms never compared (the initial phase's
        list ``U`` of their indices ``p = i(i-1)/2 + j``, ``j < i``, is built with it)."""
        if self._unc is None:
            ii, jj = np.tril_indices(self.K, -1)  # (1, 0), (2, 0), (2, 1), ...: p ascending
            active = self.status == ACTIVE
            never = (self.W[ii, jj] + self.W[jj, ii] == 0) & active[ii] & active[jj]
            #: U as it was built, which of it is still uncompared, how many, the first
            self._unc = np.flatnonzero(never)
            self._unc_left = np.ones(self._unc.size, dtype=bool)
            self._unc_n = self._unc.size
            self._unc_head = 0
        return self._unc_n

    def _uncompared_pair(self, k: int) -> int:
        """``U[k]``, the index of the ``k``-th uncompared pair (``0 <= k < |U|``)."""
        if k:
            return int(self._unc[np.flatnonzero(self._unc_left)[k]])
        while not self._unc_left[self._unc_head]:  # amortized O(1) when k = 0
            self._unc_head += 1
        return int(self._unc[self._unc_head])

    @property
    def initial_phase(self) -> bool:
        """Whether some pair of active arms has never been compared."""
        return self._uncompared() > 0

    def _candidates(self) -> np.ndarray:
        """``J_j`` for every arm: ``I_j - I_î* <= log t + f(K)`` (inactive arms: False)."""
        active, arms = self._active()
        div = self._divergences()
        best = div.min() if arms.size == self.K else div[arms].min()
        return active & (div - best <= self._threshold())

    def _rolled(self) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """``(L_C, start, L_R, L_N)`` of the round in progress at step ``t``: the stored
        round, followed by the rounds that ended since (not stored)."""
        active = self._active()[0]
        rnd, start = self.round, self.round_start
        rem, nxt = self.remaining, self.next_round
        live = rnd[active[rnd]]
        rolls = 0
        while self.t >= start + live.size:
            if rolls == 2:  # from here on every round is {j : J_j}: skip them
                start += (self.t - start) // live.size * live.size
                break
            if (rem & active).any():  # feedback of some of its arms never came
                nxt = nxt | self._candidates()
            new = nxt & active
            if not new.any():
                new = active.copy()
            start += live.size
            live = np.flatnonzero(new)
            rem, nxt = new, np.zeros(self.K, dtype=bool)
            rolls += 1
        return live, start, rem, nxt

    # ------------------------------------------------------------------ hooks
    def _select(self) -> Comparison:
        active, arms = self._active()
        if not arms.size:
            raise RuntimeError("no active arms")
        n_unc = self._uncompared()
        if n_unc:
            # initial phase (Algorithm 1, L = 1): the next pair not already in flight
            p = self._uncompared_pair((self.t - 1 - self.n_updates) % n_unc)
            i = (1 + math.isqrt(1 + 8 * p)) // 2
            return (i, p - i * (i - 1) // 2)
        # l(t): the next arm of L_C
        live, start, _, _ = self._rolled()
        l_arm = int(live[max(self.t - start, 0)])
        div = self._divergences()
        star = int(arms[rand_argmax(-div[arms], self.rng)])
        # Algorithm 2: m(t), from row l of the empirical preferences
        row = self.W[l_arm]
        n = row + self.W[:, l_arm]
        mu = np.where(n > 0, row / np.where(n > 0, n, 1.0), 0.5)
        mu[~active] = np.inf
        mu[l_arm] = np.inf
        losers_to = mu <= 0.5  # Ô_l
        # Algorithm 2: î* if Ô_l is empty or holds î*, else the arm l loses to most
        use_star = not losers_to.any() or bool(losers_to[star])
        m = star if use_star else rand_argmax(-mu, self.rng)
        return (l_arm, m)

    def _commit(self, i: int, j: int) -> None:
        active, arms = self._active()
        if not arms.size:
            return
        if self._uncompared():
            # an initial phase: the round resumes after it with the arms not played yet
            self.round = np.flatnonzero(self.remaining & active)
            self.round_start = self.t + 1
            return
        # the rounds that ended since the stored one (new arrays, or the stored ones)
        self.round, self.round_start, self.remaining, self.next_round = self._rolled()
        # Algorithm 1 for l = i: L_R <- L_R \ {l}; L_N <- L_N ∪ {j ∉ L_R : J_j}
        self.remaining[i] = False
        self.next_round |= self._candidates() & ~self.remaining

    def _update(self, i: int, j: int, outcome: float) -> None:
        if i == j:
            return
        if self._unc is not None and self._unc_n:
            p = max(i, j) * (max(i, j) - 1) // 2 + min(i, j)
            k = int(self._unc.searchsorted(p))
            if k < self._unc.size and self._unc[k] == p and self._unc_left[k]:
                self._unc_left[k] = False
                self._unc_n -= 1
        if self._D is None:
            return
        D, W = self._D, self.W
        pair = _divergence_terms(W[[i, j], [j, i]], W[[j, i], [i, j]])
        if self.status[j] == ACTIVE:
            D[i, j] = pair[0]
        if self.status[i] == ACTIVE:
            D[j, i] = pair[1]
        self._I[i] = D[i].sum()
        self._I[j] = D[j].sum()

    def _add_arm(self, arm: int) -> None:
        self.remaining = np.append(self.remaining, False)
        self.next_round = np.append(self.next_round, False)
        self._D = self._unc = self._act = None

    def _retire_arm(self, arm: int) -> None:
        self.remaining[arm] = False
        self.next_round[arm] = False
        self._D = self._unc = self._act = None

    def best_arm(self) -> int:
        arms = np.flatnonzero(self.status == ACTIVE)
        if arms.size == 0:
            return super().best_arm()
        div = self._divergences()[arms]
        n = self.W + self.W.T
        rate = self.W[arms].sum(axis=1) / np.maximum(n[arms].sum(axis=1), 1.0)
        return int(arms[np.lexsort((-rate, div))[0]])

    def _extra_state(self) -> dict[str, Any]:
        return {
            "round": self.round.tolist(),
            "round_start": int(self.round_start),
            "remaining": np.flatnonzero(self.remaining).tolist(),
            "next_round": np.flatnonzero(self.next_round).tolist(),
        }

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.round = np.asarray(state["round"], dtype=np.intp)
        # states stored before the round was tied to t kept a cursor into it
        self.round_start = int(
            state.get("round_start", int(state["t"]) + 1 - int(state.get("cursor", 0)))
        )
        self.remaining = np.zeros(self.K, dtype=bool)
        self.remaining[state["remaining"]] = True
        self.next_round = np.zeros(self.K, dtype=bool)
        self.next_round[state["next_round"]] = True
        self._D = self._unc = self._act = None
