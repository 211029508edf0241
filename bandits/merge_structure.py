"""The batch structure of the Merge framework: the batches ``B_s``, their stages, and the
rules that keep them consistent (Li et al. 2020, Algorithm 1 lines 11–13 and 18–22;
Zoghi 2017, Algorithm 4), as a mixin of :class:`bandits.merge_base.MergeBandit`.

Why a module of its own: this is the part of Algorithm 1 that neither chooses a pair nor
tests one. After an elimination (line 11) the loser leaves its batch; a one-arm batch
merges with the next one (lines 12–13); once half of the stage's field is eliminated the
batches are paired up for the next stage (lines 18–22,
:func:`bandits.merge_partition.pair_batches`), and batches a merge formed are tested
again at once (a pair that already fails the test is not left to be played).
:meth:`BatchStructure._settle` applies these until nothing changes and then brings the
pair rule's per-batch caches (:class:`bandits.merge_components.PairRule`) in step with
the batches, rebuilding only those that changed.

The host (:class:`~bandits.merge_base.MergeBandit`) provides ``W``, ``t``, ``alpha``,
``c``, ``batch_size``, ``stage``, ``stage_field``, the pair rule ``_pairs``, the
elimination test ``ELIMINATION`` and :meth:`~bandits.base.DuelingBandit.eliminate`;
this mixin owns ``_batches`` (the :class:`~bandits.merge_components.Batch` records in
round-robin order), ``_where`` (arm -> its batch) and the record of what changed since
the caches were last synchronised.
"""

from __future__ import annotations

import math

import numpy as np

from bandits.merge_components import Batch
from bandits.merge_partition import pair_batches


class BatchStructure:
    """The batches and stages of a Merge policy and the operations that change them (see
    the module docstring); mixed into :class:`bandits.merge_base.MergeBandit`."""

    # ------------------------------------------------------------------ reading
    @property
    def batches(self) -> list[list[int]]:
        """The current batches ``B_s`` (arm indices), in round-robin order."""
        return [list(b.arms) for b in self._batches]

    def current_batch(self, t: int | None = None) -> list[int]:
        """The batch ``B_m`` with ``m = t mod b_s`` (line 6) that step ``t`` plays
        (default: the next step, ``self.t + 1``)."""
        if not self._batches:
            return []
        t = self.t + 1 if t is None else int(t)
        return list(self._batches[t % len(self._batches)].arms)

    def _sub(self, arms: list[int]) -> np.ndarray:
        idx = np.asarray(arms, dtype=np.intp)
        return self.W.take(idx, axis=0).take(idx, axis=1)  # W[np.ix_(idx, idx)], faster

    # ------------------------------------------------------------------ changing
    def _build_all(self) -> None:
        self._pairs.build_all()

    def _make(self, arms: list[int]) -> Batch:
        bt = self._pairs.batch_type(arms)
        for a in bt.arms:
            self._where[a] = bt
        return bt

    def _set_batches(self, batches: list[list[int]]) -> None:
        self._where: dict[int, Batch] = {}
        self._batches: list[Batch] = [self._make(b) for b in batches if b]
        self._list_changed = True
        self._touched: list[Batch] = []

    def _replace(self, k: int, arms: list[int]) -> Batch:
        old = self._batches[k]
        self._batches[k] = bt = self._make(arms)
        bt.k = old.k
        self._touched.append(bt)
        return bt

    def _remove(self, arm: int) -> None:
        """Take ``arm`` out of its batch (an emptied batch is dropped)."""
        bt = self._where.pop(arm)
        k = self._batches.index(bt)
        rest = [a for a in bt.arms if a != arm]
        if rest:
            new = self._replace(k, rest)
            if not self._list_changed and self._pairs.shrink(bt, new, bt.pos[arm]):
                self._touched.remove(new)  # caches already up to date
        else:
            del self._batches[k]
            self._list_changed = True

    def _sync(self) -> None:
        """Bring the algorithm's caches in line with the batches."""
        if self._list_changed:
            self._build_all()
        else:
            for bt in self._touched:
                if self._where.get(bt.arms[0]) is bt:
                    self._pairs.build_one(bt)
        self._list_changed = False
        self._touched = []

    def _eliminate_arms(self, losers: list[tuple[int, int]]) -> None:
        """Line 11: remove each ``(arm, by)`` from its batch, then settle the structure."""
        self._remove_losers(losers)
        self._settle([])

    def _remove_losers(self, losers: list[tuple[int, int]]) -> None:
        """Eliminate each ``(arm, by)`` still in a batch and take it out of its batch."""
        for arm, by in losers:
            if arm in self._where:
                self.eliminate(arm, by)
                self._remove(arm)

    def _purge(self, bt: Batch) -> list[tuple[int, int]]:
        """Lines 10–11 over every pair of ``bt``: ``(arm, by)`` for each arm with some
        arm of the batch beating it with confidence (``ELIMINATION.purge``)."""
        a = self.alpha * math.log(self.t + 1 + self.c)
        return [(bt.arms[x], bt.arms[y]) for x, y in self.ELIMINATION.purge(self._sub(bt.arms), a)]

    def _settle(self, fresh: list[Batch]) -> None:
        """Apply line 11 to batches formed by merges, lines 12–13 and lines 18–22 until
        nothing changes (each round removes an arm or a batch, so it ends), then bring
        the caches up to date."""
        while True:
            fresh = [b for b in fresh if b in self._batches]
            losers = [x for b in fresh for x in self._purge(b)]
            fresh = []
            if losers:
                self._remove_losers(losers)
                continue
            batches = self._batches
            # lines 12-13: a one-arm batch merges with the next one
            single = next((k for k, b in enumerate(batches) if b.n == 1), None)
            if single is not None and len(batches) > 1:
                nxt = (single + 1) % len(batches)
                merged = sorted(batches[single].arms + batches[nxt].arms)
                fresh = [self._replace(nxt, merged)]
                del batches[single]
                self._list_changed = True
                continue
            # lines 18-22: half of the stage's field eliminated -> next stage
            remaining = sum(b.n for b in batches)
            if batches and 2 * remaining <= self.stage_field:
                if len(batches) > 1:
                    old = {tuple(b.arms) for b in batches}
                    new = pair_batches([b.arms for b in batches], self.batch_size)
                    self._set_batches(new)
                    fresh = [b for b in self._batches if tuple(b.arms) not in old]
                self.stage += 1
                self.stage_field = remaining
                continue
            break
        self._sync()
