"""The guard: which outcomes could change a policy's structure, in a form the credit script
checks (the protocol: :mod:`service.credit`).

The check exists in two languages, this module and ``service/store/guard.lua`` (the credit
script's); ``tests/cases/guard.json`` is the one table of cases both are
tested against (``tests/unit/test_guard_cases.py`` here,
``tests/service/test_guard_lua.py`` in a real Redis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bandits import confidence
from bandits.base import DuelingBandit
from service.store.scripts import Guard as ScriptGuard
from service.store.scripts import encode_guard


@dataclass(frozen=True)
class Guard:
    """Which outcomes could change a policy's structure, in a form the credit script
    checks (see the module docstring).

    For the Merge policies an outcome on arms ``i`` and ``j`` of one batch can eliminate
    one of them: ``u_ij = w_ij/n + sqrt(a/n) < ½`` with ``n = w_ij + w_ji`` and
    ``a = α log(t + 1 + C)`` (the pair's next step, as ``update()`` checks it), that is
    ``d = w_ji − w_ij > 0`` and ``d² > 4an``; the same with ``i`` and ``j`` swapped.
    The guard is that condition with ``q = 4a`` taken at an earlier ``t`` (the bound only
    grows with ``t``) and shaved by 1e-9 for rounding, so it fires on every outcome that
    eliminates, and on a few that do not (``update()`` then decides nothing changed).
    Outcomes on arms in different batches (or out of play) change no structure.
    MergeMED's divergence test has ``q = 2a``; MergeGuard and MergeMED also watch the
    champion's pairs with eliminated arms once converged (a readmission) and hold the
    outcome that makes ``n`` a multiple of ``check_every`` (``period``: the check may
    flag). Each policy declares this (:meth:`~bandits.base.DuelingBandit.volatility`).

    ``recommended`` also states verdicts after every comparison: an outcome between two
    of ``edge_arms`` (the rankers not shown worse) is held when its new counts draw the
    betting edge test (:func:`bandits.confidence.may_cross`, the policy's own test with a
    margin of :data:`bandits.confidence.GUARD_SLACK` nats), so exactly the outcome that
    crosses the boundary is held, not every outcome of a pair with the evidence floor.
    ``edge_big`` and ``edge_floor`` (:func:`bandits.confidence.guard_bounds`) are what the
    script needs for it; its code is the pair's code above plus 4.

    Policies whose ``update()`` advances selection state at every step (RUCB, RCS, CCB,
    RMED1: ``serial_updates`` in :mod:`bandits.base`) get a guard that trips on every
    outcome: their credits are applied one by one by ``update()``, in order (correct, and
    serial). The other policies without a structure (DTS, Self-Sparring, MDB, Uniform)
    have no guard (:meth:`of` returns None): their ``update()`` changes nothing but ``W``
    and ``n_updates``. ``tests/unit/test_credit_path.py`` checks these claims on every
    policy; the cases of
    ``tests/cases/guard.json`` check :meth:`trips` and :meth:`periodic` here and in Lua.

    Examples
    --------
    >>> from bandits import make_bandit
    >>> g = Guard.of(make_bandit("mergedts", 4, seed=1, alpha=0.5, c=1.0), t=60)
    >>> g.watches(0, 1), g.trips(0.0, 9.0), g.trips(0.0, 8.0)
    (1, True, False)
    >>> Guard.of(make_bandit("dts", 4, seed=1), t=60) is None
    True
    >>> Guard.of(make_bandit("rucb", 4, seed=1), t=60).trips(0.0, 1.0)
    True
    """

    q: float
    batch_of: dict[int, int]
    #: the outcome that makes ``n`` a multiple of this may change the structure (0: none)
    period: int = 0
    #: an outcome of ``champion`` against one of ``challengers`` trips only when the
    #: champion loses (a readmission)
    champion: int = -1
    challengers: frozenset[int] = frozenset()
    #: the pair condition is ``n · kl(p, ½) > q`` (MergeMED's test), not ``d² > q n``
    divergence: bool = False
    #: outcomes between two of these may draw a verdict's edge (0 ``edge_big``: none)
    edge_arms: frozenset[int] = frozenset()
    edge_big: float = 0.0
    edge_floor: float = 0.0

    @classmethod
    def of(cls, bandit: DuelingBandit, t: int) -> Guard | None:
        """The guard of ``bandit``'s current structure, with the bound at step ``t``
        (any step up to the global one): the policy's own declaration
        (:meth:`~bandits.base.DuelingBandit.volatility`) in the script's terms."""
        v = bandit.volatility(int(t))
        if v is None:
            return None
        if v.every:
            # its update() advances selection state at every step (RUCB's B, RCS's N_c,
            # CCB's sets, RMED1's rounds): no outcome commutes, every one is held and
            # applied by update() in order
            return cls(-1.0, {a: 0 for a in range(bandit.K)})
        big, floor = (confidence.guard_bounds(v.edge_level) if v.edge_level > 0
                      else (0.0, 0.0))
        return cls(float(v.q), dict(v.groups), int(v.period), int(v.champion),
                   frozenset(v.challengers), bool(v.divergence),
                   frozenset(v.edge_arms) if v.edge_level > 0 else frozenset(), big, floor)

    def arg(self) -> str:
        """The guard as the credit script's argument: ``q``, ``q:period``,
        ``q:period:kl`` or ``q:period:kl:big:floor`` (encoded by its declaration,
        :data:`service.store.scripts.CREDIT`)."""
        return encode_guard(self.script_arg())

    def script_arg(self) -> ScriptGuard:
        """The guard as the credit script's ``guard`` argument takes it (values)."""
        return ScriptGuard(float(self.q), int(self.period), bool(self.divergence),
                           float(self.edge_big), float(self.edge_floor))

    def periodic(self, n: int) -> bool:
        """Whether the outcome that makes the policy's ``n_updates`` equal to ``n`` is
        held whatever it is (a periodic check runs then)."""
        return self.period > 0 and n % self.period == 0

    def watches(self, i: int, j: int) -> int:
        """Whether an outcome on ``(i, j)`` can change the structure at all, as the
        script's code: 0 no, 1 either side losing, 2 only ``i`` losing (``w_ji >
        w_ij``), 3 only ``j`` losing by the pair condition; plus 4 when the pair's
        verdict edge is watched too (4 alone: only it)."""
        i, j = int(i), int(j)
        code = 0
        b = self.batch_of.get(i)
        if b is not None and b == self.batch_of.get(j):
            code = 1
        elif i == self.champion and j in self.challengers:
            code = 2
        elif j == self.champion and i in self.challengers:
            code = 3
        if i != j and i in self.edge_arms and j in self.edge_arms:
            code += 4
        return code

    def trips(self, w_ij: float, w_ji: float, side: int = 1) -> bool:
        """The condition the script checks on a watched pair's new counts (``side``:
        the code :meth:`watches` gave). The script's copy is ``service/store/guard.lua``;
        both are tested against the cases of ``tests/cases/guard.json``."""
        if side >= 4:
            if self.edge_big > 0 and confidence.may_cross(w_ij, w_ji, self.edge_big,
                                                          self.edge_floor):
                return True
            side -= 4
            if side == 0:
                return False
        d = w_ji - w_ij
        if (side == 2 and d <= 0) or (side == 3 and d >= 0):
            return False
        n = w_ij + w_ji
        if not self.divergence:
            return d * d > self.q * n
        w = min(w_ij, w_ji)
        if 2.0 * w >= n:
            return False
        p = w / n
        kl = (1.0 - p) * math.log(2.0 * (1.0 - p)) + (p * math.log(2.0 * p) if p > 0 else 0.0)
        return n * kl > self.q
