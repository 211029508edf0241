"""The components a Merge policy is made of: its batch record, its pair rule and its
elimination test (the interfaces; the implementations live with each policy).

Why they are separate from the framework (:class:`bandits.merge_base.MergeBandit`): the
Merge papers differ only in these pieces. Li et al. 2020, §4.3: "MergeDTS and MergeRUCB
follow the same 'merge' strategy. The difference ... is in their strategy of choosing
rankers" (the :class:`PairRule`: :class:`bandits.merge_dts.DTSPairs`,
:class:`bandits.merge_rucb.RUCBPairs`), and MergeMED changes only the test of Algorithm 1
lines 10–11 (the :class:`EliminationTest`: :class:`bandits.merge_dts.HoeffdingElimination`,
:class:`bandits.merge_med.DivergenceElimination`). A policy declares them (``PAIRS``,
``ELIMINATION``) and the framework calls them; nothing here holds state of the policy's.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from bandits.base import DuelingBandit


class Batch:
    """One batch ``B_m``: its arms, their positions in it, and its row ``k`` in the
    pair rule's stacked caches. A pair rule adds its per-batch caches as slots."""

    __slots__ = ("arms", "k", "n", "pos")

    def __init__(self, arms: list[int]) -> None:
        self.arms = list(arms)
        self.n = len(self.arms)
        self.pos = {a: k for k, a in enumerate(self.arms)}
        self.k = -1


class PairRule:
    """How a batch chooses its pair (Li et al. 2020, Algorithm 1 lines 15–16; Zoghi
    2017, Algorithm 4 lines 9–10), with the per-batch caches it needs: a component a
    Merge policy declares (``PAIRS``) and builds with itself as ``policy`` (a
    :class:`bandits.merge_base.MergeBandit`, which imports this module).

    The policy calls :meth:`build_all` when the batch list changed, :meth:`build_one`
    when one batch's arms changed, :meth:`pair_changed` after each comparison,
    :meth:`pair_for` in ``select()`` and :meth:`pair_from` in ``select_at()``; the rule
    reads the policy's batches (``policy._batches``), wins (``policy._sub``), step and
    generator, and changes nothing of the policy.
    """

    #: the per-batch record, with this rule's caches
    batch_type: ClassVar[type[Batch]] = Batch

    def __init__(self, policy: DuelingBandit) -> None:
        self.policy = policy

    def build_all(self) -> None:
        """Rebuild the caches of every batch (after the batch list changed)."""
        for k, bt in enumerate(self.policy._batches):
            bt.k = k
            self.build_one(bt)

    def build_one(self, bt: Batch) -> None:
        """Rebuild the caches of one batch whose arms changed."""
        raise NotImplementedError

    def pair_changed(self, bt: Batch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        """Local pair ``(a, b)`` of ``bt`` now has ``w_ab`` and ``w_ba`` wins."""
        raise NotImplementedError

    def pair_for(self, bt: Batch) -> tuple[int, int]:
        """Local indices ``(c, d)`` of the pair ``bt`` plays at step ``policy.t``."""
        raise NotImplementedError

    def pair_from(self, W_sub: np.ndarray, t: int, rng: np.random.Generator) -> tuple[int, int]:
        """The same choice from a batch's wins matrix alone (``select_in_batch``)."""
        raise NotImplementedError

    def shrink(self, old: Batch, new: Batch, p: int) -> bool:
        """Optionally update the caches of ``new``, which is ``old`` without the arm at
        position ``p``, in place; return False to have them rebuilt from ``W``."""
        return False

    def drop_prepared(self) -> None:
        """Forget draws prepared ahead for ``select()`` (none by default)."""


class EliminationTest:
    """When a pair's counts eliminate an arm (Li et al. 2020, Algorithm 1 lines 10–11):
    a component a Merge policy declares (``ELIMINATION``). Every method takes ``a``,
    the policy's ``α log(t + 1 + C)`` at the step of the test.
    """

    #: whether :meth:`volatility_q` bounds a divergence (``Volatility.divergence``)
    divergence: ClassVar[bool] = False

    def beaten(self, w: float, n: float, a: float) -> bool:
        """``w`` wins in ``n`` comparisons lose with confidence."""
        raise NotImplementedError

    def purge(self, w: np.ndarray, a: float) -> list[tuple[int, int]]:
        """The test over every pair of a batch's wins ``w``: ``(loser, by)`` local
        indices for each arm some arm beats with confidence."""
        raise NotImplementedError

    def volatility_q(self, a: float) -> float:
        """``q`` of :class:`bandits.volatility.Volatility`: a pair condition met by every
        outcome that may eliminate, at ``a`` of an earlier step."""
        raise NotImplementedError
