"""Which recorded outcomes may change a policy's structure: the declaration a policy makes
(:meth:`bandits.base.DuelingBandit.volatility`) for the live credit path.

Why: live, the Celery worker records outcomes of many impressions at once
(:mod:`service.credit`). An outcome that changes nothing but ``W`` and ``n_updates``
commutes with every other such outcome, so the worker may credit them in any order and
in one transaction; an outcome that may eliminate, readmit, flag or advance selection
state must be applied in order, alone. The policy knows which are which; the credit
path's guard (:class:`service.credit.guard.Guard`) only reads this declaration, so no
caller probes a policy for its capabilities. Every declaration is checked against
``update()`` by tests/service/test_credit_path.py.

Pure: a frozen dataclass and a constant, no numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Volatility:
    """Which recorded outcomes may change a policy's structure (everything in its
    ``state_dict`` but ``W``, ``t``, ``n_updates`` and caches rebuilt from them), declared by
    the policy (:meth:`bandits.base.DuelingBandit.volatility`) for the live credit path
    (:class:`service.credit.guard.Guard`): an outcome it does not flag only adds to ``W`` and
    ``n_updates``, so outcomes it does not flag commute.

    ``every``: every outcome may (the policy's ``update()`` advances selection state at
    each step). Otherwise an outcome ``(i, j)`` on two arms of one ``group`` may when its
    new counts satisfy ``(w_ji − w_ij)² > q · (w_ij + w_ji)`` (either side losing); an
    outcome between ``champion`` and one of ``challengers`` may when they satisfy it with
    the champion losing; and the outcome that makes ``n_updates`` a multiple of
    ``period`` (0: none) may whatever it is. With ``divergence`` the pair condition is
    ``n · kl(p, ½) > q`` instead, ``p`` the losing side's share of ``n``.

    ``edge_level`` (0: none) adds a second, independent condition for verdicts: an
    outcome between two of ``edge_arms`` may when its new counts draw the betting edge
    test at that level (:func:`bandits.confidence.crossed`, either side), the test the
    policy itself runs after every comparison. It is exact, so the credit path holds an
    outcome of such a pair only when that outcome can cross the boundary, not every
    outcome of a pair that has the evidence floor (a pair near a tie stays above the floor
    for hundreds of comparisons before it crosses).
    """

    every: bool = False
    q: float = 0.0
    groups: dict[int, int] = field(default_factory=dict)
    period: int = 0
    champion: int = -1
    challengers: frozenset[int] = frozenset()
    divergence: bool = False
    edge_arms: frozenset[int] = frozenset()
    edge_level: float = 0.0


#: every outcome may change the structure
EVERY_OUTCOME = Volatility(every=True)
