"""Uniformly random pairs: the floor every other policy must beat."""

from __future__ import annotations

import numpy as np

from bandits.base import ACTIVE, Comparison, DuelingBandit


class Uniform(DuelingBandit):
    """Duel two distinct active arms drawn uniformly at random; never eliminates.

    Examples
    --------
    >>> from bandits.uniform import Uniform
    >>> b = Uniform(4, seed=1)
    >>> i, j = b.select()
    >>> i != j and {i, j} <= {0, 1, 2, 3}
    True
    >>> b.update(i, j, 1.0)
    >>> float(b.W[i, j])
    1.0
    """

    name = "uniform"

    def _select(self) -> Comparison:
        active = np.flatnonzero(self.status == ACTIVE)
        if active.size == 1:
            return (int(active[0]), int(active[0]))
        i, j = self.rng.choice(active, size=2, replace=False)
        return (int(i), int(j))
