"""The Merge framework shared by MergeDTS (Li et al. 2020, Algorithm 1) and MergeRUCB (Zoghi 2017,
Algorithm 4): batches visited round robin, elimination by ``u_ij < ½`` inside a batch,
one-arm batches merged into the next, stages that pair the batches up, arms added and
retired mid-run, and the state round trip.

The two papers differ only in how a pair is chosen *inside* a batch (Li et al. 2020, §4.3:
"MergeDTS and MergeRUCB follow the same 'merge' strategy. The difference ... is in their
strategy of choosing rankers"), so :class:`MergeBandit` does everything else and each
policy declares that choice as a component (:mod:`bandits.merge_components`), a
:class:`~bandits.merge_components.PairRule` with the per-batch caches it needs
(:class:`bandits.merge_dts.DTSPairs`, :class:`bandits.merge_rucb.RUCBPairs`), beside the
elimination test of lines 10–11 (an :class:`~bandits.merge_components.EliminationTest`)
and, for MergeGuard and MergeMED, the non-Condorcet guard
(:class:`bandits.non_condorcet_guard.NonCondorcetGuard`). Every Merge policy is one level
below :class:`MergeBandit`: components, not subclasses, make the differences.

This module holds the policy's side of the framework: parameters and presets, selection,
the update with its elimination test, arms added and retired, the guard's hooks and the
state. How the batches and stages are kept consistent (merges, stage changes, the pair
rule's caches in step) is the mixin :class:`bandits.merge_structure.BatchStructure`;
how the arms are partitioned is :mod:`bandits.merge_partition`.

The line-by-line correspondence with the pseudo-code and every departure from it are in
the module docstring of :mod:`bandits.merge_dts`; the comments below cite the line of
Li et al. 2020's Algorithm 1 each statement implements (:mod:`bandits.merge_rucb` maps them to
Algorithm 4).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits.base import ACTIVE, Comparison, DuelingBandit
from bandits.merge_components import EliminationTest, PairRule
from bandits.merge_partition import initial_batches
from bandits.merge_structure import BatchStructure
from bandits.params import ALPHA, Param, values_of
from bandits.volatility import Volatility

#: the papers' default parameters, the preset "theoretical": α = 1.01 (Li et al. 2020, §5.5:
#: "the default α = 1.01"; Zoghi 2017, §6.4), M = 4 (Li et al. 2020, §5.5;
#: Zoghi 2017, §6.4 "p = 4")
#: and ``C(ε)`` from Algorithm 1 line 2 (``None``)
THEORETICAL: dict[str, float | None] = {"alpha": 1.01, "batch_size": 4, "c": None}
#: T of ``C(ε)`` with ε = 1/T when line 2 computes ``c`` and no ``horizon`` is given
DEFAULT_HORIZON = 10**6
#: Li et al. 2020's tuned exploration parameter (§5.5, for both Merge policies)
TUNED_ALPHA = 0.8**6
#: the presets every Merge policy has (its ``PRESETS`` keys)
PRESET_NAMES = ("tuned", "theoretical")
#: the largest batch size M the API accepts (its largest number of rankers)
MAX_BATCH_SIZE = 1000
#: the largest ``C``: given, or computed by Algorithm 1 line 2 (so that a state's
#: effective ``c`` always passes the declaration when it is rebuilt)
MAX_C = 1e300


def confidence_constant(alpha: float, n_arms: int, horizon: int) -> float:
    """``C(ε) = ((4α − 1) K² / ((2α − 1) ε))^(1/(2α − 1))`` with ``ε = 1/horizon``.

    Li et al. 2020, Algorithm 1 line 2 (and Table 1); Zoghi 2017, Algorithm 4 line 3. Defined only
    for ``alpha > 1/2``; computed in log space, and refused when it overflows a float
    (``alpha`` close to ½): pass ``c`` directly then, as the papers' experiments do.

    Examples
    --------
    >>> round(confidence_constant(1.01, 136, 100))
    4066005
    >>> confidence_constant(0.262, 136, 10**6)
    Traceback (most recent call last):
    ...
    ValueError: C(eps) is defined for alpha > 0.5 only (got 0.262); pass c directly
    """
    if alpha <= 0.5:
        raise ValueError(f"C(eps) is defined for alpha > 0.5 only (got {alpha}); pass c directly")
    if horizon < 1 or n_arms < 1:
        raise ValueError("horizon and n_arms must be positive")
    log_c = (
        math.log(4 * alpha - 1) + 2 * math.log(n_arms) - math.log(2 * alpha - 1) + math.log(horizon)
    ) / (2 * alpha - 1)
    if log_c > math.log(MAX_C):  # beyond the declared bound of c
        raise ValueError(f"C(eps) = exp({log_c:.0f}) overflows for alpha={alpha}; pass c directly")
    return math.exp(log_c)


class MergeBandit(BatchStructure, DuelingBandit):
    """Batches, stages, eliminations and merges shared by the Merge policies (the batch
    structure itself: :class:`~bandits.merge_structure.BatchStructure`).

    A Merge policy is this framework with the components it declares:

    - ``PAIRS``, a :class:`~bandits.merge_components.PairRule` class: the pair a batch
      plays (MergeDTS's Thompson-sampling tournaments, :class:`bandits.merge_dts.DTSPairs`;
      MergeRUCB's UCB rule, :class:`bandits.merge_rucb.RUCBPairs`);
    - ``ELIMINATION``, an :class:`~bandits.merge_components.EliminationTest`: lines
      10–11 (Hoeffding, :class:`bandits.merge_dts.HoeffdingElimination`; the divergence,
      :class:`bandits.merge_med.DivergenceElimination`);
    - ``GUARD`` (optional): the non-Condorcet guard with the champion's verification,
      :class:`bandits.non_condorcet_guard.NonCondorcetGuard`, built with the policy and its
      parameters (``GUARD.PARAMS``).

    and ``name``, ``PRESETS`` (the named defaults of ``alpha``, ``batch_size``, ``c``;
    every policy has ``"tuned"``, the default, and ``"theoretical"``), ``PARAMS`` and
    ``_round_up`` (how ``b_1`` is rounded).

    Parameters ``alpha``, ``batch_size`` and ``c`` default to the named ``preset``
    (``PRESETS``); explicit values override it. ``c`` is the preset's, or comes from
    Algorithm 1 line 2 with ε = 1/``horizon`` when the preset says so (``None``) or when
    ``horizon`` is given without ``c``. :meth:`params` returns the effective values,
    so a policy rebuilt from them (``from_state``) is the same whatever the defaults
    are by then.

    Operator-visible state: :attr:`batches` (lists of arm indices, in round-robin order),
    :attr:`stage` (``s``), :attr:`stage_field` (the arms the current stage started with,
    adjusted for additions and retirements), :attr:`c` (``C(ε)``), plus the base class'
    ``W``, ``status`` and ``eliminated``; :meth:`structure` gives stage and batches as
    plain JSON (and the guard's mode, readmissions and report, for a policy with one).
    """

    #: preset name -> ``alpha``, ``batch_size`` and ``c`` (``None``: Algorithm 1 line 2);
    #: every policy declares "tuned" (the default) and "theoretical"
    PRESETS: ClassVar[dict[str, dict[str, float | None]]] = {"theoretical": THEORETICAL}
    PARAMS: ClassVar[dict[str, Param]] = {
        "preset": Param(str, "tuned", "named defaults for alpha, batch_size and c (explicit "
                        "values override them)", choices=PRESET_NAMES),
        "alpha": ALPHA.override(default=None, desc="exploration α of the elimination bound "
                                "sqrt(α log(t + C) / n) (Algorithm 1 line 10)",
                                default_doc="the preset's"),
        "batch_size": Param(int, None, "batch size M (Algorithm 1 line 1)", ge=2,
                            le=MAX_BATCH_SIZE, default_doc="the preset's"),
        "c": Param(float, None, "C of the bound's log(t + C)", ge=0, le=MAX_C,
                   default_doc="the preset's, or Algorithm 1 line 2 from alpha > 0.5 "
                               "and horizon"),
        "horizon": Param(int, None, "T of Algorithm 1 line 2's C(ε), ε = 1/T, when c is "
                         "not given", ge=1, le=10**15,
                         default_doc=f"{DEFAULT_HORIZON:,} when line 2 computes C"),
    }
    elimination_test = True
    #: the components (see the class docstring)
    PAIRS: ClassVar[type[PairRule]]
    ELIMINATION: ClassVar[EliminationTest]
    #: (a class like :class:`bandits.non_condorcet_guard.NonCondorcetGuard`: built with the
    #: policy and its parameters; not imported here, so that the guard may import this)
    GUARD: ClassVar[type | None] = None
    #: ``b_1 = ceil(K/M)`` (MergeDTS) or ``floor(K/M)`` (MergeRUCB)
    _round_up: ClassVar[bool] = True

    def __init__(
        self,
        n_arms: int,
        *,
        seed: int | np.random.Generator | None = None,
        **params: Any,
    ) -> None:
        super().__init__(n_arms, seed=seed)
        p = self.resolve_params(params)
        #: the non-Condorcet guard component (``GUARD``), or None
        self.guard = None if self.GUARD is None else self.GUARD(self, p)
        self._pairs = self.PAIRS(self)
        preset, alpha, batch_size, c, horizon = (
            p["preset"], p["alpha"], p["batch_size"], p["c"], p["horizon"])
        defaults = self.PRESETS[preset]
        self.preset = preset
        alpha = defaults["alpha"] if alpha is None else alpha
        batch_size = defaults["batch_size"] if batch_size is None else batch_size
        self.alpha = float(alpha)
        self.batch_size = int(batch_size)
        if c is None and horizon is None and defaults["c"] is not None:
            c = defaults["c"]
        if c is None:
            # line 2: C(ε) with ε = 1/T
            horizon = DEFAULT_HORIZON if horizon is None else horizon
            c = confidence_constant(self.alpha, self.K, int(horizon))
        #: T of ``C(ε)`` when ``c`` came from line 2 (or was given with ``c``), else None
        self.horizon = None if horizon is None else int(horizon)
        self.c = float(c)
        self.stage = 1  # line 3
        self._set_batches(initial_batches(self.K, self.batch_size, round_up=self._round_up))
        self.stage_field = self.K
        # a 1-arm batch at the start merges away as in lines 12-13
        self._settle([])

    # ------------------------------------------------------------------ public helpers
    def structure(self) -> dict[str, Any]:
        """``{"stage": s, "batches": [[arm, ...], ...]}`` as plain ints, batches in
        round-robin order (the batch step ``t`` plays is ``batches[t % len(batches)]``).

        Examples
        --------
        >>> from bandits.merge_dts import MergeDTS
        >>> MergeDTS(5, batch_size=2, c=1.0).structure()  # [4] merged into the next batch
        {'stage': 1, 'batches': [[0, 1, 4], [2, 3]]}
        """
        batches = [[int(a) for a in b.arms] for b in self._batches]
        out: dict[str, Any] = {"stage": int(self.stage), "batches": batches}
        if self.guard is not None:
            out.update(self.guard.structure())
        return out

    def volatility(self, t: int) -> Volatility | None:
        """An outcome on two arms of one batch may eliminate one of them (lines 10–11):
        the elimination test's own pair condition ``q`` (``ELIMINATION.volatility_q``) at
        an earlier step, since the bound only grows with ``t``. Merges and stage changes
        follow eliminations only. A guard adds what else may change the structure (or
        says nothing may, after a switch to its Copeland rule)."""
        guard = self.guard
        if guard is not None and guard.mode == "copeland":
            return None
        test = self.ELIMINATION
        v = Volatility(q=test.volatility_q(self.bonus(int(t) + 1)),
                       groups={int(a): m for m, arms in enumerate(self.batches) for a in arms},
                       divergence=test.divergence)
        return v if guard is None else guard.volatility(v)

    def non_condorcet(self) -> dict[str, Any] | None:
        """The guard's report (None without a guard)."""
        return None if self.guard is None else self.guard.report()

    def quiet_steps(self) -> float:
        """The guard's (its verification may still compare); 0 without one."""
        return 0 if self.guard is None else self.guard.quiet_steps()

    def steady(self) -> bool:
        """True when every later step is the champion against itself: always, without
        a guard; with one, when no eliminated arm will ever be due (the simulator's
        fast-forward to the end waits for this)."""
        return self.guard is None or self.guard.quiet_steps() == math.inf

    def bonus(self, t: int) -> float:
        """``α log(t + C)``, the numerator of the UCB exploration term (line 10)."""
        return self.alpha * math.log(t + self.c)

    def select_in_batch(
        self, arms: list[int], W_sub: np.ndarray, t: int, rng: np.random.Generator
    ) -> Comparison:
        """Choose the pair inside one batch from that batch's own data only.

        ``arms`` are the batch's arm indices, ``W_sub = W[arms][:, arms]`` its wins, ``t``
        the step and ``rng`` the generator: this is all the choice depends on, so the
        live service can select from the current batch without loading the whole matrix.
        Returns arm indices (``(a, a)`` for a one-arm batch). :meth:`select_at` is this
        on the batch step ``t`` plays.
        """
        arms = [int(a) for a in arms]
        if len(arms) == 1:
            return (arms[0], arms[0])
        c, d = self._pairs.pair_from(np.asarray(W_sub, dtype=float), int(t), rng)
        return (arms[c], arms[d])

    def select_at(self, t: int, rng: np.random.Generator) -> Comparison:
        """The comparison for global step ``t``, drawn with ``rng`` from the state alone.

        The batch is ``B_m`` with ``m = t mod b_s`` (line 6) and the pair is
        :meth:`select_in_batch` on its wins, so the draw is a function of (state, ``t``,
        ``rng``) and of nothing this object prepared or selected before: draws that
        :meth:`select` prepares ahead are neither used nor disturbed. The policy's own
        generator is left as it was; ``self.t`` becomes ``t``.
        """
        self.t = int(t)
        if self.guard is not None:
            pair = self.guard.special(rng)
            if pair is not None:
                return pair
        if not self._batches:
            raise RuntimeError("no active arms left to select")
        bt = self._batches[self.t % len(self._batches)]
        return self.select_in_batch(bt.arms, self._sub(bt.arms), self.t, rng)

    def best_arm(self) -> int:
        """The champion.

        The last remaining arm once only one is left (Algorithm 1 line 8: "return the
        remaining ranker"). Before that the papers name no winner; we take the active arm
        that empirically beats the largest share of the active arms it has been compared
        with (arms only meet inside batches, so a plain Copeland count would favour large
        batches), ties broken by how many arms it has eliminated, then by its overall
        win rate. An arm that was never compared scores 0. A guard that switched to its
        Copeland rule names that rule's champion.
        """
        if self.guard is not None and self.guard.mode == "copeland":
            champion = self.guard.copeland_champion()
            if champion is not None:
                return champion
        active = np.flatnonzero(self.status == ACTIVE)
        if active.size == 1:
            return int(active[0])
        if active.size == 0:
            return super().best_arm()
        sub = self.W[np.ix_(active, active)]
        n = sub + sub.T
        met = (n > 0).sum(axis=1)
        beats = (sub > sub.T).sum(axis=1)
        share = np.where(met > 0, beats / np.maximum(met, 1), 0.0)
        kills = np.zeros(self.K)
        for v in self.eliminated.values():
            kills[v["by"]] += 1
        played = self.W[active].sum(axis=1) + self.W[:, active].sum(axis=0)
        rate = self.W[active].sum(axis=1) / np.maximum(played, 1.0)
        order = np.lexsort((-rate, -kills[active], -share))
        return int(active[order[0]])

    def params(self) -> dict[str, Any]:
        """The effective parameters (the preset's values where none was given), and
        the guard's."""
        guard = self.guard
        if guard is None:
            return values_of(self, self.PARAMS)
        own = {k: p for k, p in self.PARAMS.items() if k not in guard.PARAMS}
        return {**values_of(self, own), **values_of(guard, guard.PARAMS)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> DuelingBandit:
        """As the base class; a guard may first upgrade a state an earlier version
        stored (``GUARD.upgrade_state``)."""
        if cls.GUARD is not None:
            state = cls.GUARD.upgrade_state(state)
        return super().from_state(state)

    def state_dict(self) -> dict[str, Any]:
        """The whole state (base class fields, batches, stage), and no cache.

        A snapshot is a synchronisation point: draws prepared ahead for :meth:`select`
        (MergeDTS) are random numbers, not state, and are dropped here, so this object
        and any copy restored from the snapshot continue identically. Dropping unused
        random numbers changes the law of no later pair.
        """
        self._drop_prepared()
        return super().state_dict()

    def __repr__(self) -> str:
        sizes = ", ".join(str(b.n) for b in self._batches)
        head = (
            f"  stage {self.stage}, {len(self._batches)} batches (sizes {sizes}), "
            f"{len(self.eliminated)} eliminated, alpha={self.alpha:g}, "
            f"M={self.batch_size}, C={self.c:g}"
        )
        lines = super().__repr__().split("\n")
        return "\n".join([lines[0], head, *lines[1:]])

    # ------------------------------------------------------------------ components
    def _drop_prepared(self) -> None:
        """Forget draws the pair rule prepared ahead for :meth:`select`."""
        self._pairs.drop_prepared()

    def _beaten(self, w: float, n: float) -> bool:
        """Lines 10–11 for one pair at the step the test next runs (``t + 1``): ``w``
        wins in ``n`` comparisons lose with confidence (``ELIMINATION``; used by the
        update, the guard's readmission and :mod:`bandits.decision`)."""
        if 2.0 * w >= n:  # a pair it wins or ties (or n = 0) cannot eliminate it
            return False
        return self.ELIMINATION.beaten(w, n, self.alpha * math.log(self.t + 1 + self.c))

    # ------------------------------------------------------------------ base-class hooks
    def _select(self) -> Comparison:
        if self.guard is not None:
            pair = self.guard.special(self.rng)
            if pair is not None:
                return pair
        batches = self._batches
        if not batches:
            raise RuntimeError("no active arms left to select")
        bt = batches[self.t % len(batches)]  # line 6: m = t mod b_s
        if bt.n == 1:
            # lines 7-8: one ranker left (b_s = 1); played against itself for ever
            a = bt.arms[0]
            return (a, a)
        c, d = self._pairs.pair_for(bt)  # lines 15-16
        arms = bt.arms
        return (arms[c], arms[d])

    def _update(self, i: int, j: int, outcome: float) -> None:
        guard = self.guard
        if guard is None:
            if i != j:  # (a one-arm step: nothing to record; the common case once converged)
                self._merge_update(i, j)
            return
        if guard.before_update(i, j):
            self._merge_update(i, j)
            guard.after_merge_update(i, j)
        guard.after_update()

    def _merge_update(self, i: int, j: int) -> None:
        # line 17 (W itself is updated by the base class)
        if i == j:
            return
        where = self._where
        bt = where.get(i)
        if bt is None or where.get(j) is not bt:
            return  # an eliminated/retired arm, or a pair split since it was chosen
        W = self.W
        w_ij = W.item(i, j)
        w_ji = W.item(j, i)
        pos = bt.pos
        self._pairs.pair_changed(bt, pos[i], pos[j], w_ij, w_ji)
        # lines 10-11 for the pair just compared, at the step they would next run
        n = w_ij + w_ji
        if self._beaten(w_ij, n):
            self._eliminate_arms([(i, j)])
        elif self._beaten(w_ji, n):
            self._eliminate_arms([(j, i)])

    def _add_arm(self, arm: int) -> None:
        if self.guard is not None and not self.guard.arms_changed():
            return
        if self._batches:
            k = min(range(len(self._batches)), key=lambda q: self._batches[q].n)
            self._replace(k, [*self._batches[k].arms, arm])
        else:
            self._batches.append(self._make([arm]))
            self._list_changed = True
        self.stage_field += 1
        self._settle([])

    def _retire_arm(self, arm: int) -> None:
        if self.guard is not None and not self.guard.arms_changed():
            return
        if arm not in self._where:
            return  # already eliminated
        self.stage_field -= 1
        self._remove(arm)
        self._settle([])

    def _extra_state(self) -> dict[str, Any]:
        out = {
            "batches": self.batches,
            "stage": self.stage,
            "stage_field": self.stage_field,
        }
        if self.guard is not None:
            out.update(self.guard.extra_state())
        return out

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        # (states written before the caches left the snapshot may carry "prepared" and
        # "ahead": they are ignored)
        self._set_batches([[int(a) for a in b] for b in state["batches"]])
        self.stage = int(state["stage"])
        self.stage_field = int(state["stage_field"])
        self._sync()
        if self.guard is not None:
            self.guard.load_extra_state(state)
