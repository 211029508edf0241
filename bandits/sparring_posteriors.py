"""The Sparring Certifier's posteriors: each active arm's wins and losses against the
other active arms, their Gaussian moments and the two draws of a selection
(:mod:`bandits.sparring_certifier`, "How it selects").

Why a module of its own: this is the policy's hot path (every step draws from it and
every outcome between two active arms updates it), kept small and free of the policy's
bookkeeping. The moments are those of the Beta posterior,
``μ = (S + 1)/(S + F + 2)`` and ``σ² = (S + 1)(F + 1)/((S + F + 2)²(S + F + 3))``, and a
draw is ``θ = z·σ + μ`` with ``z`` standard normal.

Speed without a different run. Up to :data:`SCALAR_ARMS` active arms the moments are
plain lists and a draw is computed in Python floats; above it they are numpy arrays and
a draw is two array operations. Both do the same IEEE operations in the same order
(``z·σ``, then ``+ μ``; the first maximum wins, as ``argmax``), from the same normals
(``standard_normal(2n)`` fills the same values as ``standard_normal((2, n))``), so a
run is bit for bit the same either way: at K = 2..16 a numpy call costs more than the
arithmetic it does, at K = 136 the arrays win.

>>> W = np.array([[0.0, 30.0], [10.0, 0.0]])
>>> p = Posteriors(W, np.array([0, 1]))
>>> [round(m, 3) for m in p.mu], p.best()
([0.738, 0.262], 0)
>>> p.add_duel(1, 0, 1.0); p.wins, p.losses
([30.0, 11.0], [11.0, 30.0])
"""

from __future__ import annotations

import math

import numpy as np

#: up to this many active arms the moments are lists and a draw is scalar Python
SCALAR_ARMS = 16


class Posteriors:
    """The active arms' counts and moments, by slot (position in the active list
    ``act``): ``wins[k]``, ``losses[k]`` are arm ``act[k]``'s against active arms."""

    __slots__ = ("_z", "losses", "mu", "n", "scalar", "sd", "wins")

    def __init__(self, W: np.ndarray, act: np.ndarray) -> None:
        s = W[:, act].sum(axis=1)[act]
        f = W[act, :].sum(axis=0)[act]
        mu = (s + 1.0) / (s + f + 2.0)
        sd = np.sqrt((s + 1.0) * (f + 1.0) / ((s + f + 2.0) ** 2 * (s + f + 3.0)))
        self.n = int(act.size)
        self.scalar = self.n <= SCALAR_ARMS
        self._z = np.empty(2 * self.n)  # the normals of a draw (scalar path)
        self.wins: list[float] | np.ndarray
        self.losses: list[float] | np.ndarray
        self.mu: list[float] | np.ndarray
        self.sd: list[float] | np.ndarray
        if self.scalar:  # exact copies of the arrays
            self.wins, self.losses = s.tolist(), f.tolist()
            self.mu, self.sd = mu.tolist(), sd.tolist()
        else:
            self.wins, self.losses, self.mu, self.sd = s, f, mu, sd

    def best(self) -> int:
        """The slot with the highest posterior mean (the first of equals)."""
        return int(np.argmax(self.mu))

    def draw(self, rng: np.random.Generator) -> tuple[int, int]:
        """The slots of the highest of two draws ``θ = z·σ + μ`` (one per row of
        ``rng.standard_normal((2, n))``)."""
        n = self.n
        if self.scalar:
            rng.standard_normal(out=self._z)  # the values of standard_normal(2n)
            z = self._z.tolist()
            mu, sd = self.mu, self.sd
            top, x1 = z[0] * sd[0] + mu[0], 0
            for k in range(1, n):
                v = z[k] * sd[k] + mu[k]
                if v > top:  # strictly: the first maximum, as argmax
                    top, x1 = v, k
            top, x2 = z[n] * sd[0] + mu[0], 0
            for k in range(1, n):
                v = z[n + k] * sd[k] + mu[k]
                if v > top:
                    top, x2 = v, k
            return x1, x2
        zz = rng.standard_normal((2, n))
        zz *= self.sd
        zz += self.mu
        x1, x2 = zz.argmax(axis=1).tolist()
        return x1, x2

    def add_duel(self, ki: int, kj: int, won: float) -> None:
        """One more duel of the slots ``ki`` and ``kj`` (``ki ≠ kj``), ``won`` of it by
        ``ki``."""
        wins, losses, mu, sd = self.wins, self.losses, self.mu, self.sd
        lost = 1.0 - won
        if self.scalar:
            si, fi = wins[ki] + won, losses[ki] + 1.0 - won
            sj, fj = wins[kj] + lost, losses[kj] + 1.0 - lost
        else:
            si, fi = wins.item(ki) + won, losses.item(ki) + 1.0 - won
            sj, fj = wins.item(kj) + lost, losses.item(kj) + 1.0 - lost
        wins[ki], losses[ki], wins[kj], losses[kj] = si, fi, sj, fj
        n = si + fi + 2.0
        mu[ki] = (si + 1.0) / n
        sd[ki] = math.sqrt((si + 1.0) * (fi + 1.0) / (n * n * (n + 1.0)))
        n = sj + fj + 2.0
        mu[kj] = (sj + 1.0) / n
        sd[kj] = math.sqrt((sj + 1.0) * (fj + 1.0) / (n * n * (n + 1.0)))
