"""Independent Self-Sparring, Sui, Zhuang, Burdick & Yue, UAI 2017."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.common import rand_argmax
from bandits.params import Param


class SelfSparring(DuelingBandit):
    """Independent (Beta–Bernoulli) Self-Sparring, a baseline of Li et al. 2020, §3 and §5.5.

    Li et al. 2020 describes it in prose only (§3: "employing a single MAB algorithm, but at
    each step samples twice to choose rankers ... Thompson Sampling ... does not
    eliminate rankers"; §5.6: no parameters to tune). The steps follow the original
    paper's Algorithm 2 (Independent Self-Sparring) with ``m = 2`` arms per step:

    - each arm ``i`` has a ``Beta(S_i + 1, F_i + 1)`` posterior on its chance to win a
      duel (all ``S_i = F_i = 0`` at the start);
    - select: twice, independently, draw ``θ_i`` from every posterior and take
      ``argmax_i θ_i`` (ties at random); the two draws may name the same arm;
    - update: for the duel of ``x_1`` and ``x_2`` with outcome ``r`` (1 = ``x_1`` won),
      ``S_{x_1} += η r``, ``F_{x_1} += η (1 - r)`` and symmetrically for ``x_2``.

    So ``S_i = η Σ_j w_ij`` and ``F_i = η Σ_j w_ji``: the posterior follows from ``W``
    (kept as two running sums, saved with the state so a restored run continues
    bit for bit), and a tie (outcome ½) adds ``η/2`` to both ``S`` and ``F`` of both
    arms, as it adds ½ to both sides of ``W``.

    Departures: a duel of an arm with itself (both draws picked it) carries no
    information and changes nothing — in the live service it is one ranker's list
    shown alone, with no duel to credit; only ACTIVE arms are drawn; an added arm
    starts at ``Beta(1, 1)``; a retired arm keeps its past duels in its opponents'
    posteriors. Self-Sparring never eliminates.

    ``best_arm()``: the active arm with the highest posterior mean
    ``(S_i + 1)/(S_i + F_i + 2)`` (the arm it plays more and more), ties to the lowest
    index.

    Parameters
    ----------
    n_arms
        Number of arms K.
    eta
        Learning rate η of the posterior updates (1 in the paper).
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.self_sparring import SelfSparring
    >>> P = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.7], [0.1, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = SelfSparring(3, seed=1)
    >>> for _ in range(2000):
    ...     c, d = b.select()
    ...     b.update(c, d, float(env.random() < P[c, d]))
    >>> b.best_arm()
    0
    """

    name = "self_sparring"
    PARAMS: ClassVar[dict[str, Param]] = {
        "eta": Param(float, 1.0,
                     "learning rate η of the posterior updates (1 in the paper)",
                     gt=0, le=1000),
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
        self.eta = float(p["eta"])
        self._rebuild()

    def _rebuild(self) -> None:
        #: total wins and losses of each arm (S/η and F/η)
        self._wins = self.W.sum(axis=1)
        self._losses = self.W.sum(axis=0)

    def _select(self) -> Comparison:
        arms = np.flatnonzero(self.status == ACTIVE)
        if arms.size == 0:
            raise RuntimeError("no active arms")
        a = self.eta * self._wins[arms] + 1.0
        b = self.eta * self._losses[arms] + 1.0
        theta = self.rng.beta(a, b, size=(2, arms.size))
        first = rand_argmax(theta[0], self.rng)
        second = rand_argmax(theta[1], self.rng)
        return (int(arms[first]), int(arms[second]))

    def _update(self, i: int, j: int, outcome: float) -> None:
        if i == j:
            return
        self._wins[i] += outcome
        self._losses[i] += 1.0 - outcome
        self._wins[j] += 1.0 - outcome
        self._losses[j] += outcome

    def _add_arm(self, arm: int) -> None:
        self._wins = np.append(self._wins, 0.0)
        self._losses = np.append(self._losses, 0.0)

    def best_arm(self) -> int:
        arms = np.flatnonzero(self.status == ACTIVE)
        if arms.size == 0:
            return super().best_arm()
        S = self.eta * self._wins[arms]
        F = self.eta * self._losses[arms]
        return int(arms[np.argmax((S + 1.0) / (S + F + 2.0))])

    def _extra_state(self) -> dict[str, Any]:
        return {"wins": self._wins.tolist(), "losses": self._losses.tolist()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        if "wins" in state:
            self._wins = np.asarray(state["wins"], dtype=float)
            self._losses = np.asarray(state["losses"], dtype=float)
        else:
            self._rebuild()
