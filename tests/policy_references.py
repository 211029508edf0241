"""Shared by the policies' tests in tests/unit and tests/stats: the loop that drives a
policy on a preference matrix, and the papers' pseudo-code written literally (dense and
slow) as references for the fast code."""

from __future__ import annotations

import numpy as np


def play(bandit, P: np.ndarray, steps: int, env: np.random.Generator) -> list[tuple[int, ...]]:
    """Drive ``bandit`` on preference matrix ``P`` (the simulator's proxy method)."""
    chosen = []
    for _ in range(steps):
        arms = bandit.select()
        chosen.append(arms)
        if bandit.multi:
            bandit.update_many(
                [
                    (i, j, float(env.random() < P[i, j]))
                    for x, i in enumerate(arms)
                    for j in arms[x + 1 :]
                ]
            )
        else:
            i, j = arms
            bandit.update(i, j, float(env.random() < P[i, j]))
    return chosen


def dense_u(W: np.ndarray, bonus: float) -> np.ndarray:
    """The thesis' U (Algorithm 2 lines 5-6) computed directly, for reference."""
    n = W + W.T
    with np.errstate(divide="ignore", invalid="ignore"):
        U = np.where(n > 0, W / n + np.sqrt(bonus / n), 2.0)
    np.fill_diagonal(U, 0.5)
    return U


def reference_dts_pair(W: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Algorithms 2 and 3 of Li et al. 2020 written literally (Beta draws for every pair)."""
    n = W.shape[0]
    theta = np.full((n, n), 0.5)
    for i in range(n):
        for j in range(i + 1, n):
            theta[i, j] = rng.beta(W[i, j] + 1, W[j, i] + 1)
            theta[j, i] = 1 - theta[i, j]
    kappa = (theta > 0.5).sum(axis=1) / (n - 1)
    top = np.flatnonzero(kappa == kappa.max())
    c = int(rng.choice(top))
    phi = np.array([rng.beta(W[j, c] + 1, W[c, j] + 1) for j in range(n)])
    phi[c] = 1.0
    return c, int(phi.argmin())
