"""MergeDTS, Merge Double Thompson Sampling (seed 000, Li et al. 2020, Algorithms 1–3).

Also home of :class:`MergeBandit`, the batch/stage machinery MergeDTS shares with
MergeRUCB (seed 003, Algorithm 4; :mod:`bandits.merge_rucb`): the two papers differ only
in how a pair is chosen *inside* a batch (seed 000 §4.3: "MergeDTS and MergeRUCB follow
the same 'merge' strategy. The difference ... is in their strategy of choosing rankers").

Where the code departs from the pseudo-code, and why
----------------------------------------------------
*Elimination and merges happen at update time* (Algorithm 1 lines 10–14 and 18–22).
The paper evaluates them at the top of every step, but ``W`` only changes in
``update()`` (with delayed feedback, many selections happen between two updates). Between
updates every ``u_ij`` only *grows* (``log(t + C)`` grows with ``t``, the counts do not
move), so the only pair that can newly fall below ½ is the one just compared: checking
that pair in ``update()`` is exact and O(1) instead of O(M²) per step. The check uses
``t + 1``, the step at which the paper would next evaluate line 11. Batches that a merge
brings together are checked in full (line 11 over all their pairs) right away.

*Ties*: an outcome of ½ adds ½ to both ``w_ij`` and ``w_ji`` (the base class does it);
the Beta posteriors then have half-integer parameters, which the samplers accept.

*Adding and retiring rankers mid-run* (not in the papers):

- a new arm joins the *smallest* batch of the current stage with zero counts (every
  ``u`` involving it is ``x/0 := 1``, so it cannot be eliminated before it is compared);
  a field that had converged to one arm becomes a live batch again;
- a retired arm leaves its batch and is never chosen again; a batch left with one arm
  (while other batches exist) is merged with the next one exactly as line 12–13 merges
  a batch emptied by elimination, and an emptied batch is dropped;
- stages: line 18's threshold ``K / 2^s`` is kept *relative to the stage*: a stage ends
  when the arms left in batches are at most half of the stage's field, where the field
  is the number of arms in batches when the stage began, plus arms added, minus arms
  retired during it. Without additions and retirements this is exactly ``K / 2^s``
  (eliminations come one at a time, so the field of stage ``s + 1`` is
  ``floor(K / 2^s)``).

*Initial batches* (line 4): ``b_1 = ceil(K/M)`` batches, but filled as evenly as possible
(sizes differ by at most one) instead of ``M, M, ..., rest``, so no batch starts tiny
(a 1-arm batch would merge away at once under line 12–13 anyway). MergeRUCB uses its own
``b_1 = floor(K/p)`` (seed 003, Algorithm 4 line 2).

*Stage merge* (line 19, "pair the larger size batches with the smaller ones, making sure
the size of every batch is in [0.5M, 1.5M]"): see :func:`pair_batches`.

*Batch index*: ``m = t mod b_s`` (line 6) with batches numbered from 0.

*Phase I sampling* (Algorithm 2): only the indicators ``1(θ_ij > ½)`` enter ``κ``, and
for ``θ_ij ~ Beta(w_ij + 1, w_ji + 1)`` that indicator is a Bernoulli draw with mean
``I_½(w_ji + 1, w_ij + 1)`` (the regularised incomplete beta function). We keep those
probabilities per batch (only the pair just compared changes) and draw the indicators
from uniforms: the same distribution of ``a_c`` as sampling the ``θ`` themselves, at a
fraction of the cost. Random tie-breaking in line 6 adds a uniform in [0, 1) to the
integer tallies ``(|B_m| - 1) κ_i`` and takes the arg max.

*Phase II* (Algorithm 3): ``φ_j ~ Beta(w_jc + 1, w_cj + 1)`` is drawn as
``g/(g + h)`` with independent ``g ~ Gamma(w_jc + 1)``, ``h ~ Gamma(w_cj + 1)`` (one
array draw for many arms; small batches use one Beta draw per arm). Line 4 sets
``φ_c = 1``; we keep ``a_c`` out of the arg min altogether instead (``h_c = Gamma(0) =
0``), so it cannot tie with a ``φ_j`` that rounds to exactly 1.0 (the paper's intent:
"avoid self-comparison").

*When draws happen*: the pairs of all batches are drawn together once a round, and with
few large batches several rounds ahead, each prepared draw corrected exactly for the
comparisons made since (see :class:`MergeDTS`); every step's pair has the law of
Algorithms 2–3 for the counts of that step.

``best_arm()``: the last remaining arm once there is one (line 8); before that, see
:meth:`MergeBandit.best_arm`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import betainc

from bandits.base import ACTIVE, Comparison, DuelingBandit

#: the papers' default exploration parameter (seed 000 §5.5: "the default α = 1.01")
DEFAULT_ALPHA = 1.01
#: the papers' default batch size (seed 000 §5.5 "M = 4"; seed 003 §6.4 "p = 4")
DEFAULT_BATCH_SIZE = 4
#: default horizon T for ``C(ε)`` with ε = 1/T when ``c`` is not given
DEFAULT_HORIZON = 10**6


# ---------------------------------------------------------------------- pure helpers
def confidence_constant(alpha: float, n_arms: int, horizon: int) -> float:
    """``C(ε) = ((4α − 1) K² / ((2α − 1) ε))^(1/(2α − 1))`` with ``ε = 1/horizon``.

    Seed 000, Algorithm 1 line 2 (and Table 1); seed 003, Algorithm 4 line 3. Defined only
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
    if log_c > 700:
        raise ValueError(f"C(eps) = exp({log_c:.0f}) overflows for alpha={alpha}; pass c directly")
    return math.exp(log_c)


def split_evenly(arms: list[int], n_batches: int) -> list[list[int]]:
    """``arms`` in ``n_batches`` consecutive batches whose sizes differ by at most one.

    Examples
    --------
    >>> split_evenly(list(range(7)), 3)
    [[0, 1, 2], [3, 4], [5, 6]]
    """
    n_batches = max(1, min(int(n_batches), len(arms)))
    q, r = divmod(len(arms), n_batches)
    out, start = [], 0
    for k in range(n_batches):
        size = q + (1 if k < r else 0)
        out.append(list(arms[start : start + size]))
        start += size
    return out


def batch_bounds(batch_size: int) -> tuple[int, int]:
    """The integer sizes allowed after a stage merge: ``[ceil(M/2), floor(3M/2)]``."""
    return math.ceil(batch_size / 2), (3 * batch_size) // 2


def pair_batches(batches: list[list[int]], batch_size: int) -> list[list[int]]:
    """Repartition the batches at the end of a stage (seed 000 Alg. 1 line 19; seed 003
    Alg. 4 line 13).

    "Pair the larger size batches with the smaller ones, making sure the size of every
    batch is in [0.5M, 1.5M]" (integer sizes ``[ceil(M/2), floor(3M/2)]``):

    1. a batch larger than ``1.5M`` (possible only through added arms) is first split
       into equal parts that fit;
    2. sorted by size, the smallest batch is paired with the largest while their union
       fits in ``1.5M``; a largest batch that fits with nobody stays on its own (it is
       then larger than ``1.5M − smallest``, hence at least ``0.5M``);
    3. while more than one batch is left and one is below ``0.5M``, the smallest is
       merged with the largest batch it fits with, or, if it fits with none, with the
       smallest other batch and the union is cut in two halves (each then above
       ``0.75M`` and at most ``M``).

    With more than one batch left every size ends in ``[0.5M, 1.5M]``; fewer than
    ``0.5M`` arms in total make one batch. Arms inside a batch are kept sorted.

    Examples
    --------
    >>> pair_batches([[0, 1], [2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], 4)
    [[0, 1, 9, 10, 11, 12], [2, 3, 4], [5, 6, 7, 8]]
    >>> pair_batches([[0], [1, 2, 3, 4, 5, 6]], 4)  # 1 + 6 > 6: merged, then cut
    [[0, 1, 2, 3], [4, 5, 6]]
    >>> pair_batches([[0], [1, 2], [3]], 16)
    [[0, 1, 2, 3]]
    """
    lo, hi = batch_bounds(batch_size)
    parts: list[list[int]] = []
    for b in batches:
        if not b:
            continue
        if len(b) > hi:
            parts.extend(split_evenly(sorted(b), math.ceil(len(b) / hi)))
        else:
            parts.append(sorted(b))
    # step 2: smallest with largest (stable on ties, so the result is deterministic)
    parts.sort(key=len)
    out: list[list[int]] = []
    i, j = 0, len(parts) - 1
    while i < j:
        if len(parts[i]) + len(parts[j]) <= hi:
            out.append(sorted(parts[i] + parts[j]))
            i += 1
        else:
            out.append(parts[j])
        j -= 1
    if i == j:
        out.append(parts[i])
    # step 3: no batch below 0.5M while there is more than one
    while len(out) > 1:
        out.sort(key=len)
        small = out[0]
        if len(small) >= lo:
            break
        rest = out[1:]
        fits = [k for k, b in enumerate(rest) if len(small) + len(b) <= hi]
        if fits:
            k = fits[-1]  # the largest it fits with
            rest[k] = sorted(small + rest[k])
        else:
            both = sorted(small + rest[0])
            rest[0:1] = split_evenly(both, 2)
        out = rest
    out.sort(key=lambda b: b[0])
    return out


# ---------------------------------------------------------------------- the shared machinery
# ---------------------------------------------------------------------- the shared machinery
class _Batch:
    """One batch: its arms, and the handles of its algorithm's caches."""

    __slots__ = ("PP", "R", "S", "arms", "choice", "k", "n", "pos", "pu")

    def __init__(self, arms: list[int]) -> None:
        self.arms = list(arms)
        self.n = len(self.arms)
        self.pos = {a: k for k, a in enumerate(self.arms)}
        self.k = -1  # row in the algorithm's stacked caches
        self.choice: tuple[int, int] | None = None  # a prepared pair (local indices)


class MergeBandit(DuelingBandit):
    """Batches, stages, eliminations and merges shared by MergeDTS and MergeRUCB.

    Subclasses implement :meth:`_build_all` / :meth:`_build_one` (caches from ``W``),
    :meth:`_pair_changed` (refresh them after one comparison) and :meth:`_pair_for` (the
    pair to play inside a batch), and set ``_round_up`` (how ``b_1`` is rounded).

    Operator-visible state: :attr:`batches` (lists of arm indices, in round-robin order),
    :attr:`stage` (``s``), :attr:`stage_field` (the arms the current stage started with,
    adjusted for additions and retirements), :attr:`c` (``C(ε)``), plus the base class'
    ``W``, ``status`` and ``eliminated``.
    """

    #: ``b_1 = ceil(K/M)`` (MergeDTS) or ``floor(K/M)`` (MergeRUCB)
    _round_up: ClassVar[bool] = True

    def __init__(
        self,
        n_arms: int,
        *,
        alpha: float = DEFAULT_ALPHA,
        batch_size: int = DEFAULT_BATCH_SIZE,
        c: float | None = None,
        horizon: int = DEFAULT_HORIZON,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(n_arms, seed=seed)
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        if int(batch_size) < 2:
            raise ValueError(f"batch_size must be at least 2, got {batch_size}")
        self.alpha = float(alpha)
        self.batch_size = int(batch_size)
        self.horizon = int(horizon)
        if c is None:
            c = confidence_constant(self.alpha, self.K, self.horizon)
        if not (float(c) >= 0 and math.isfinite(float(c))):
            raise ValueError(f"c must be a finite non-negative number, got {c}")
        self.c = float(c)
        self.stage = 1
        if self._round_up:
            nb = math.ceil(self.K / self.batch_size)
        else:
            nb = max(1, self.K // self.batch_size)
        self._set_batches(split_evenly(list(range(self.K)), nb))
        self.stage_field = self.K
        # a 1-arm batch at the start merges away as in line 12-13
        self._settle([])

    # ------------------------------------------------------------------ public helpers
    @property
    def batches(self) -> list[list[int]]:
        """The current batches ``B_s`` (arm indices), in round-robin order."""
        return [list(b.arms) for b in self._batches]

    def structure(self) -> dict[str, Any]:
        """``{"stage": s, "batches": [[arm, ...], ...]}`` (plain ints)."""
        return {"stage": int(self.stage), "batches": [[int(a) for a in b.arms]
                                                      for b in self._batches]}

    def current_batch(self, t: int | None = None) -> list[int]:
        """The batch ``B_m`` with ``m = t mod b_s`` (line 6) that step ``t`` plays
        (default: the next step, ``self.t + 1``)."""
        if not self._batches:
            return []
        t = self.t + 1 if t is None else int(t)
        return list(self._batches[t % len(self._batches)].arms)

    def bonus(self, t: int) -> float:
        """``α log(t + C)``, the numerator of the UCB exploration term (line 10)."""
        return self.alpha * math.log(t + self.c)

    def select_in_batch(
        self, arms: list[int], W_sub: np.ndarray, t: int, rng: np.random.Generator
    ) -> Comparison:
        """Choose the pair inside one batch from that batch's own data only.

        ``arms`` are the batch's arm indices, ``W_sub = W[arms][:, arms]`` its wins, ``t``
        the step and ``rng`` the generator: this is all the choice depends on, so the
        live service can select from the current batch without loading the whole matrix
        (and without this object's prepared pairs). Returns arm indices (``(a, a)`` for a
        one-arm batch). With a single batch, :meth:`select` draws exactly the same.
        """
        arms = [int(a) for a in arms]
        if len(arms) == 1:
            return (arms[0], arms[0])
        c, d = self._pair_from(np.asarray(W_sub, dtype=float), int(t), rng)
        return (arms[c], arms[d])

    def best_arm(self) -> int:
        """The champion.

        The last remaining arm once only one is left (Algorithm 1 line 8: "return the
        remaining ranker"). Before that the papers name no winner; we take the active arm
        that empirically beats the largest share of the active arms it has been compared
        with (arms only meet inside batches, so a plain Copeland count would favour large
        batches), ties broken by how many arms it has eliminated, then by its overall
        win rate. An arm that was never compared scores 0.
        """
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
        return {
            "alpha": self.alpha,
            "batch_size": self.batch_size,
            "c": self.c,
            "horizon": self.horizon,
        }

    def __repr__(self) -> str:
        sizes = ", ".join(str(b.n) for b in self._batches)
        head = (
            f"  stage {self.stage}, {len(self._batches)} batches (sizes {sizes}), "
            f"{len(self.eliminated)} eliminated, alpha={self.alpha:g}, "
            f"M={self.batch_size}, C={self.c:g}"
        )
        lines = super().__repr__().split("\n")
        return "\n".join([lines[0], head, *lines[1:]])

    # ------------------------------------------------------------------ algorithm hooks
    def _build_all(self) -> None:
        """Rebuild the caches of every batch (after the batch list changed)."""
        for k, bt in enumerate(self._batches):
            bt.k = k
            self._build_one(bt)

    def _build_one(self, bt: _Batch) -> None:
        """Rebuild the caches of one batch whose arms changed."""
        raise NotImplementedError

    def _pair_changed(self, bt: _Batch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        """Local pair ``(a, b)`` of ``bt`` now has ``w_ab`` and ``w_ba`` wins."""
        raise NotImplementedError

    def _pair_for(self, bt: _Batch) -> tuple[int, int]:
        """Local indices ``(c, d)`` of the pair ``bt`` plays at step ``self.t``."""
        raise NotImplementedError

    def _shrink(self, old: _Batch, new: _Batch, p: int) -> bool:
        """Optionally update the caches of ``new``, which is ``old`` without the arm at
        position ``p``, in place; return False to have them rebuilt from ``W``."""
        return False

    def _pair_from(self, W_sub: np.ndarray, t: int, rng: np.random.Generator) -> tuple[int, int]:
        """The same choice from a batch's wins matrix alone (:meth:`select_in_batch`)."""
        raise NotImplementedError

    def _sub(self, arms: list[int]) -> np.ndarray:
        idx = np.asarray(arms, dtype=np.intp)
        return self.W[np.ix_(idx, idx)]

    # ------------------------------------------------------------------ base-class hooks
    def _select(self) -> Comparison:
        batches = self._batches
        if not batches:
            raise RuntimeError("no active arms left to select")
        bt = batches[self.t % len(batches)]  # line 6: m = t mod b_s
        if bt.n == 1:
            # lines 7-8: one ranker left (b_s = 1); played against itself for ever
            a = bt.arms[0]
            return (a, a)
        c, d = self._pair_for(bt)
        arms = bt.arms
        return (arms[c], arms[d])

    def _update(self, i: int, j: int, outcome: float) -> None:
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
        self._pair_changed(bt, pos[i], pos[j], w_ij, w_ji)
        # lines 10-11 for the pair just compared, at the step they would next run
        n = w_ij + w_ji
        r = math.sqrt(self.alpha * math.log(self.t + 1 + self.c) / n)
        if w_ij / n + r < 0.5:
            self._eliminate_arms([(i, j)])
        elif w_ji / n + r < 0.5:
            self._eliminate_arms([(j, i)])

    def _add_arm(self, arm: int) -> None:
        if self._batches:
            k = min(range(len(self._batches)), key=lambda q: self._batches[q].n)
            self._replace(k, [*self._batches[k].arms, arm])
        else:
            self._batches.append(self._make([arm]))
            self._list_changed = True
        self.stage_field += 1
        self._settle([])

    def _retire_arm(self, arm: int) -> None:
        if arm not in self._where:
            return  # already eliminated
        self.stage_field -= 1
        self._remove(arm)
        self._settle([])

    def _extra_state(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "stage": self.stage,
            "stage_field": self.stage_field,
            # pairs drawn ahead for a batch (see MergeDTS), as arm indices
            "prepared": [
                None if b.choice is None else [b.arms[b.choice[0]], b.arms[b.choice[1]]]
                for b in self._batches
            ],
        }

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._set_batches([[int(a) for a in b] for b in state["batches"]])
        self.stage = int(state["stage"])
        self.stage_field = int(state["stage_field"])
        self._sync()
        for bt, ch in zip(self._batches, state.get("prepared") or [], strict=False):
            if ch is not None:
                bt.choice = (bt.pos[int(ch[0])], bt.pos[int(ch[1])])

    # ------------------------------------------------------------------ structure
    def _make(self, arms: list[int]) -> _Batch:
        bt = _Batch(arms)
        for a in bt.arms:
            self._where[a] = bt
        return bt

    def _set_batches(self, batches: list[list[int]]) -> None:
        self._where: dict[int, _Batch] = {}
        self._batches: list[_Batch] = [self._make(b) for b in batches if b]
        self._list_changed = True
        self._touched: list[_Batch] = []

    def _replace(self, k: int, arms: list[int]) -> _Batch:
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
            if not self._list_changed and self._shrink(bt, new, bt.pos[arm]):
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
                    self._build_one(bt)
        self._list_changed = False
        self._touched = []

    def _eliminate_arms(self, losers: list[tuple[int, int]]) -> None:
        """Line 11: remove each ``(arm, by)`` from its batch, then settle the structure."""
        for arm, by in losers:
            if arm in self._where:
                self.eliminate(arm, by)
                self._remove(arm)
        self._settle([])

    def _purge(self, bt: _Batch) -> list[tuple[int, int]]:
        """Line 11 over every pair of ``bt``: ``(arm, by)`` for each arm with some
        ``u_ij < ½`` (``by`` = the arm with the smallest ``u_ij``)."""
        w = self._sub(bt.arms)
        n = w + w.T
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(n > 0, w / n + np.sqrt(self.bonus(self.t + 1) / n), 2.0)
        np.fill_diagonal(u, 0.5)
        out = []
        for a in np.flatnonzero((u < 0.5).any(axis=1)):
            out.append((bt.arms[a], bt.arms[int(u[a].argmin())]))
        return out

    def _settle(self, fresh: list[_Batch]) -> None:
        """Apply line 11 to batches formed by merges, lines 12–13 and lines 18–22 until
        nothing changes (each round removes an arm or a batch, so it ends), then bring
        the caches up to date."""
        while True:
            fresh = [b for b in fresh if b in self._batches]
            losers = [x for b in fresh for x in self._purge(b)]
            fresh = []
            if losers:
                for arm, by in losers:
                    if arm in self._where:
                        self.eliminate(arm, by)
                        self._remove(arm)
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


# ---------------------------------------------------------------------- MergeDTS
_INCIDENCE: dict[int, tuple[np.ndarray, list[list[int]], np.ndarray, np.ndarray]] = {}


def _incidence(n: int) -> tuple[np.ndarray, list[list[int]], np.ndarray, np.ndarray]:
    """For ``n`` batch positions: the extended transposed pair incidence matrix
    (``n(n−1)/2 + 1`` rows × ``n``; pair ``k = (i, j)``, ``i < j``, has +1 at ``i`` and −1
    at ``j``, and the last row is ``0, 1, ..., n−1``), the pair index table and the pairs'
    row and column indices; cached per ``n``."""
    got = _INCIDENCE.get(n)
    if got is None:
        iu, ju = np.triu_indices(n, 1)
        m = iu.size
        AT = np.zeros((m + 1, n))
        AT[np.arange(m), iu] = 1.0
        AT[np.arange(m), ju] = -1.0
        AT[m] = np.arange(n)
        pidx = [[-1] * n for _ in range(n)]
        for k in range(m):
            pidx[iu[k]][ju[k]] = pidx[ju[k]][iu[k]] = k
        got = _INCIDENCE[n] = (AT, pidx, iu, ju)
    return got


_PAIR_TABLE: dict[int, np.ndarray] = {}


def _pair_table(n: int) -> np.ndarray:
    """The pair index table of :func:`_incidence` as an array (−1 on the diagonal)."""
    got = _PAIR_TABLE.get(n)
    if got is None:
        got = _PAIR_TABLE[n] = np.asarray(_incidence(n)[1], dtype=np.intp)
    return got


def _dts_rows(W_sub: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """The cache rows of one batch with wins ``W_sub`` (``n × n``), padded to ``N ≥ n``
    positions.

    ``PP`` (``N × 2N``): the Gamma shapes of Phase II; row ``c`` holds ``w_jc + 1`` for
    every ``j`` (1 for padding), then ``w_cj + 1`` (0 for ``j = c`` and for padding:
    ``Gamma(0)`` is 0, which takes those arms out of the arg max without a mask).

    ``pu`` (``N(N−1)/2 + 1``): ``P(θ_ij > ½)`` for every pair ``i < j`` (Algorithm 2), 1
    for pairs with a padding position, and a final 2 (an always-true slot that adds the
    ``+ i`` of the tally through the last row of the incidence matrix). With padding
    pairs at 1 every real arm gains the same ``N − n`` and a padding position tallies at
    most ``N − n − 1``, so padding never wins Phase I.
    """
    n = W_sub.shape[0]
    W1 = np.ones((N, N))
    W1[:n, :n] += W_sub
    H = W1.copy()
    np.fill_diagonal(H, 0.0)
    H[:, n:] = 0.0
    PP = np.concatenate((W1.T, H), axis=1)
    _, _, iu, ju = _incidence(N)
    # P(θ_ij > ½) for θ_ij ~ Beta(w_ij + 1, w_ji + 1) is I_½(w_ji + 1, w_ij + 1)
    pu = np.where(ju < n, betainc(W1[ju, iu], W1[iu, ju], 0.5), 1.0)
    return PP, np.append(pu, 2.0)


#: up to this batch size a lone batch is drawn with scalar Python code (numpy's per-call
#: overhead, above all the checks of an array-parameter gamma draw, costs more there)
SMALL_BATCH = 10


def _sample_tournament(pu: np.ndarray, N: int, rng: np.random.Generator) -> int:
    """Algorithm 2 (SampleTournament) in one batch of ``N`` positions: the local ``a_c``.

    ``x_k = 1(θ_ij > ½)`` is drawn as ``u_k < P(θ_ij > ½)`` (``pu``, the row of
    :func:`_dts_rows`) for every pair at once (lines 1–4); the tallies
    ``(|B| − 1) κ_i = Σ_{j>i} x_ij + Σ_{j<i} (1 − x_ji) = (A x)_i + i`` are one matrix
    product (line 5), and a uniform in [0, 1) added to each breaks ties at random
    (line 6). Small batches do the same in scalar code.
    """
    if N == 2:
        return 0 if rng.random() < pu.item(0) else 1
    m1 = pu.shape[0]
    if N <= SMALL_BATCH:
        m = m1 - 1
        u = rng.random(m + N).tolist()
        p = pu.tolist()
        kappa = u[m:]  # the tie-breaking uniforms, under the integer tallies
        k = 0
        for i in range(N - 1):
            for j in range(i + 1, N):
                if u[k] < p[k]:  # θ_ij > ½
                    kappa[i] += 1.0
                else:
                    kappa[j] += 1.0
                k += 1
        return kappa.index(max(kappa))
    u = rng.random(m1 + N)
    kappa = (u[:m1] < pu).dot(_incidence(N)[0])
    kappa += u[m1:]
    return int(kappa.argmax())


def _relative_tournament(PP: np.ndarray, c: int, rng: np.random.Generator) -> int:
    """Algorithm 3 (RelativeTournament) in one batch: the local ``a_d`` given ``a_c``.

    ``φ_j = g_j / (g_j + h_j) ~ Beta(w_jc + 1, w_cj + 1)`` with independent
    ``g_j ~ Gamma(w_jc + 1)``, ``h_j ~ Gamma(w_cj + 1)`` (lines 1–3, the shapes are row
    ``c`` of ``PP``); ``arg min φ = arg max h/g`` (line 5), and ``h_c = Gamma(0) = 0``
    keeps ``a_c`` out (line 4). Small batches draw the ``φ_j`` one by one.
    """
    N = PP.shape[0]
    if N == 2:
        return 1 - c
    if N <= SMALL_BATCH:
        row = PP[c].tolist()
        beta = rng.beta
        best, d = 2.0, c
        for j in range(N):
            if j != c and row[N + j] > 0.0:
                phi = beta(row[j], row[N + j])
                if phi < best:
                    best, d = phi, j
        return d
    g = rng.standard_gamma(PP[c])
    return int((g[N:] / g[:N]).argmax())


def _draw_one(PP: np.ndarray, pu: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Phases I and II in one batch (the rows of :func:`_dts_rows`): local ``(a_c, a_d)``."""
    c = _sample_tournament(pu, PP.shape[0], rng)
    return c, _relative_tournament(PP, c, rng)


def _sample_tournaments(PU: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`_sample_tournament` for a stack of ``B`` batches at once (``PU``:
    ``B × (N(N−1)/2 + 1)``), in one generator call whatever ``B``."""
    B, m1 = PU.shape
    N = _N_OF_M1[m1]
    u = rng.random((B, m1 + N))
    kappa = (u[:, :m1] < PU).dot(_incidence(N)[0])
    kappa += u[:, m1:]
    return kappa.argmax(axis=1)


#: N from the length N(N-1)/2 + 1 of a ``pu`` row
_N_OF_M1 = {n * (n - 1) // 2 + 1: n for n in range(2, 1024)}


def _relative_tournaments(PP: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> list:
    """:func:`_relative_tournament` for a stack of ``B`` batches at once (``PP``:
    ``B × N × 2N``, ``c``: the ``B`` first candidates), in one generator call (on a flat
    array: numpy's broadcasting path for 2-D parameters is markedly slower)."""
    B, N, N2 = PP.shape
    rows = PP.reshape(B * N, N2).take(c + _offsets(B, N), axis=0)
    g = rng.standard_gamma(rows.ravel()).reshape(B, N2)
    return (g[:, N:] / g[:, :N]).argmax(axis=1).tolist()


#: with at most this many batches, draws are prepared several rounds ahead
AHEAD_MAX_BATCHES = 4
#: steps prepared ahead per lookahead draw, shared among the batches
AHEAD_STEPS = 8


class _Ahead:
    """Draws prepared ``L`` rounds ahead for every batch (see ``MergeDTS._pair_ahead``).

    ``u``: the Phase I uniforms (``L × B × (m1 + N)``); ``kap``: the tallies they give
    with the probabilities ``pu0`` of the moment; ``cpred``: their arg max; ``G``: the
    Phase II gamma rows for ``cpred`` with the shapes ``PP0`` of the moment; ``next``:
    the next round of each batch; ``changed``: per batch, the local pairs compared since.
    """

    __slots__ = ("G", "L", "PP0", "changed", "cpred", "kap", "next", "pu0", "rng_state", "u")

    def __init__(self, PU: np.ndarray, PP: np.ndarray, L: int, rng: np.random.Generator):
        self.rng_state = rng.bit_generator.state
        B, m1 = PU.shape
        N = PP.shape[1]
        self.L = L
        self.pu0 = PU.copy()
        self.PP0 = PP.copy()
        u = self.u = rng.random((L, B, m1 + N))
        kap = self.kap = (u[..., :m1] < PU).dot(_incidence(N)[0])
        kap += u[..., m1:]
        cpred = kap.argmax(axis=2)
        rows = PP.reshape(B * N, 2 * N).take((cpred + _offsets(B, N)).ravel(), axis=0)
        self.G = rng.standard_gamma(rows.ravel()).reshape(L, B, 2 * N)
        self.cpred = cpred.tolist()
        self.next = [0] * B
        self.changed: list[set[tuple[int, int]]] = [set() for _ in range(B)]


_OFFSETS: dict[tuple[int, int], np.ndarray] = {}


def _offsets(B: int, N: int) -> np.ndarray:
    got = _OFFSETS.get((B, N))
    if got is None:
        got = _OFFSETS[(B, N)] = np.arange(0, B * N, N)
    return got


class MergeDTS(MergeBandit):
    """Merge Double Thompson Sampling, seed 000 (Li, Markov, de Rijke, Zoghi 2020),
    Algorithms 1–3.

    The arms are split into batches of about ``M`` (line 4) that are visited round robin
    (line 6). In the visited batch ``B_m``:

    I. *SampleTournament* (Algorithm 2): sample ``θ_ij ~ Beta(w_ij + 1, w_ji + 1)`` for
       every pair (lines 1–4), and take as ``a_c`` the arm that beats most others in
       the sample, ties broken at random (lines 5–6);
    II. *RelativeTournament* (Algorithm 3): sample ``φ_j ~ Beta(w_jc + 1, w_cj + 1)``
        for the others (lines 1–3), set ``φ_c`` out of reach (line 4) and take as
        ``a_d`` the arm with the smallest ``φ_j`` (line 5): the weakest link, to knock
        it out quickly;
    III. the caller compares ``(a_c, a_d)`` and reports through :meth:`update` (line 17).

    An arm ``a_i`` is eliminated once ``u_ij < ½`` for an arm ``a_j`` of its batch
    (lines 10–11, ``u_ij = w_ij/n_ij + sqrt(α log(t + C)/n_ij)``); a batch left with one
    arm merges with the next (lines 12–13); once half of the stage's arms are gone the
    batches are paired up (lines 18–22, :func:`pair_batches`). With one arm left, that
    arm is played against itself for ever (lines 7–8, horizonless operation).
    The module docstring lists every departure from the pseudo-code.

    *Speed.* Phases I and II of a batch depend only on that batch's counts, and those
    change only when the batch's own pair is reported. So when a batch is due and has
    no pair ready, the pairs of *all* batches are drawn at once, vectorized over the
    batches (:func:`_draw_all`: two generator calls in all), and each batch keeps its
    pair until its turn. A report on a batch discards its prepared pair (a fresh one is
    drawn from the new counts when it is next due), so every pair is drawn from exactly
    the counts the paper would use at that step. In the simulator one draw serves a whole
    round of ``b_s`` steps. The prepared pairs are part of :meth:`state_dict`.

    With at most ``AHEAD_MAX_BATCHES`` batches of more than ``SMALL_BATCH`` arms a round
    shares too little, so :meth:`_pair_ahead` prepares ``AHEAD_STEPS`` steps' worth of
    rounds in one draw and corrects each prepared draw exactly for the pairs compared
    since (the state keeps the generator state that produced them, so a restored run
    draws the same). A lone small batch is drawn step by step in scalar code
    (:func:`_draw_one`, exactly as :meth:`select_in_batch` draws it), where numpy's
    per-call overhead would cost more than the arithmetic.

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha
        Exploration parameter α (the theory wants α > ½; seed 000 tunes α = 0.8⁶ ≈ 0.262).
    batch_size
        Batch size M (seed 000 tunes M = 16).
    c
        ``C(ε)`` in the confidence bound (seed 000 tunes C = 4·10⁶). Default: Algorithm 1
        line 2 with ε = 1/``horizon`` (needs α > ½).
    horizon
        T for the default ``c``; the loop itself never ends.
    seed
        Seed or ``numpy.random.Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.merge_dts import MergeDTS
    >>> P = np.array([[0.5, 0.7, 0.8, 0.9],
    ...               [0.3, 0.5, 0.6, 0.8],
    ...               [0.2, 0.4, 0.5, 0.7],
    ...               [0.1, 0.2, 0.3, 0.5]])
    >>> env = np.random.default_rng(0)
    >>> b = MergeDTS(4, alpha=0.51, batch_size=2, c=100, seed=1)
    >>> b.batches
    [[0, 1], [2, 3]]
    >>> for _ in range(5000):
    ...     i, j = b.select()
    ...     b.update(i, j, float(env.random() < P[i, j]))
    >>> b.best_arm(), b.select()
    (0, (0, 0))
    >>> sorted(b.eliminated)
    [1, 2, 3]
    """

    name = "mergedts"
    _round_up = True

    def _build_all(self) -> None:
        batches = self._batches
        B = len(batches)
        N = max([2, *(bt.n for bt in batches)])
        self._N = N
        self._ahead: _Ahead | None = None
        self._PP = np.ones((B, N, 2 * N))
        self._PU = np.ones((B, N * (N - 1) // 2 + 1))
        self._pidx = _incidence(N)[1]
        for k, bt in enumerate(batches):
            bt.k = k
            self._fill(bt)

    def _build_one(self, bt: _Batch) -> None:
        # the padding N is always the largest batch size, so that the draws are a
        # function of the batches alone (and a restored state draws the same)
        N = max([2, *(b.n for b in self._batches)])
        if N != self._N or not 0 <= bt.k < len(self._batches):
            self._build_all()
        else:
            self._fill(bt)

    def _fill(self, bt: _Batch) -> None:
        k = bt.k
        self._PP[k], self._PU[k] = _dts_rows(self._sub(bt.arms), self._N)
        bt.PP = self._PP[k]
        bt.pu = self._PU[k]
        bt.choice = None
        self._ahead = None

    def _shrink(self, old: _Batch, new: _Batch, p: int) -> bool:
        # Move position p to the first padding slot q = n - 1 and give it padding
        # values: the same arrays as _dts_rows on the smaller batch, without recomputing
        # the incomplete beta function of every pair.
        N = self._N
        if max(b.n for b in self._batches) != N or new.n < 2:
            return False  # the padding size changes (or one arm is left): rebuild
        q = new.n
        order = np.array([*range(p), *range(p + 1, q + 1), p, *range(q + 1, N)])
        k = new.k
        PP = self._PP[k]
        PP[:] = PP[np.ix_(order, np.r_[order, order + N])]
        PP[q, :N] = 1.0
        PP[q, N:] = 0.0
        PP[q, N : N + q] = 1.0
        PP[:, q] = 1.0
        PP[:, N + q] = 0.0
        pu = self._PU[k]
        _, _, iu, ju = _incidence(N)
        vals = pu[_pair_table(N)[order[iu], order[ju]]]
        vals[ju >= q] = 1.0
        pu[:-1] = vals
        new.PP, new.pu, new.choice = PP, pu, None
        self._ahead = None
        return True

    def _pair_changed(self, bt: _Batch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        N = self._N
        PP = bt.PP
        x = w_ab + 1.0
        y = w_ba + 1.0
        # PP[c, j] = w_jc + 1 and PP[c, N + j] = w_cj + 1
        PP[b, a] = x
        PP[a, N + b] = x
        PP[a, b] = y
        PP[b, N + a] = y
        bt.pu[self._pidx[a][b]] = betainc(y, x, 0.5) if a < b else betainc(x, y, 0.5)
        bt.choice = None
        if self._ahead is not None:
            self._ahead.changed[bt.k].add((a, b) if a < b else (b, a))

    def _pair_for(self, bt: _Batch) -> tuple[int, int]:
        choice = bt.choice
        if choice is not None:
            bt.choice = None
            return choice
        batches = self._batches
        if len(batches) <= AHEAD_MAX_BATCHES and self._N > SMALL_BATCH:
            return self._pair_ahead(bt)
        if len(batches) == 1:
            return _draw_one(bt.PP, bt.pu, self.rng)
        c_arr = _sample_tournaments(self._PU, self.rng)
        cs = c_arr.tolist()
        ds = _relative_tournaments(self._PP, c_arr, self.rng)
        for other, c, d in zip(batches, cs, ds, strict=True):
            other.choice = (c, d)
        bt.choice = None
        return cs[bt.k], ds[bt.k]

    def _pair_ahead(self, bt: _Batch) -> tuple[int, int]:
        """Phases I and II for ``bt`` from draws prepared rounds ahead, made exact for
        the counts of now.

        With few batches a round cannot share much, so one vectorized draw
        (:class:`_Ahead`) prepares ``AHEAD_STEPS`` steps' worth of rounds. Comparisons
        made since then change a few pairs' Phase I probabilities and Phase II shapes;
        the prepared draw is corrected for exactly those:

        - Phase I keeps its uniforms (independent of the counts) and re-decides only the
          changed pairs' indicators ``u_k < P(θ_ij > ½)``, moving the tallies by ±1;
        - Phase II's gamma row was drawn for the first candidate predicted then, with the
          shapes of then; counts only grow, and ``Gamma(s) + Gamma(δ) ~ Gamma(s + δ)``
          for independent terms, so each changed shape gets a fresh ``Gamma(δ)`` added.
          If the corrected Phase I picks another first candidate, Phase II is drawn
          afresh.

        Every prepared value is used once, so each step's pair has exactly the law of
        Algorithms 2–3 for the current counts.
        """
        ah = self._ahead
        k = bt.k
        if ah is None or ah.next[k] == ah.L:
            L = max(1, AHEAD_STEPS // len(self._batches))
            ah = self._ahead = _Ahead(self._PU, self._PP, L, self.rng)
        r = ah.next[k]
        ah.next[k] = r + 1
        changed = ah.changed[k]
        kap = ah.kap[r, k]
        N = self._N
        if changed:
            kap = kap.copy()
            u = ah.u[r, k]
            pu, pu0, pidx = bt.pu, ah.pu0[k], self._pidx
            for a, b in changed:  # a < b
                q = pidx[a][b]
                x = u.item(q)
                now = x < pu.item(q)
                if now != (x < pu0.item(q)):
                    step = 1.0 if now else -1.0
                    kap[a] += step
                    kap[b] -= step
        c = int(kap.argmax())
        if c != ah.cpred[r][k]:
            return c, _relative_tournament(bt.PP, c, self.rng)
        g = ah.G[r, k]
        if changed:
            shapes, shapes0 = bt.PP[c], ah.PP0[k, c]
            gamma = self.rng.standard_gamma
            for a, b in changed:
                if a == c or b == c:
                    o = b if a == c else a
                    for e in (o, N + o):
                        delta = shapes.item(e) - shapes0.item(e)
                        if delta > 0.0:
                            g[e] += gamma(delta)
        return c, int((g[N:] / g[:N]).argmax())

    def _pair_from(self, W_sub: np.ndarray, t: int, rng: np.random.Generator) -> tuple[int, int]:
        PP, pu = _dts_rows(W_sub, max(2, W_sub.shape[0]))
        return _draw_one(PP, pu, rng)

    def _extra_state(self) -> dict[str, Any]:
        state = super()._extra_state()
        ah = self._ahead
        if ah is not None:
            # the prepared draws are regenerated from the generator state they came
            # from; what changed since is kept as arm pairs
            state["ahead"] = {
                "rng": ah.rng_state,
                "L": ah.L,
                "next": list(ah.next),
                "pu0": ah.pu0.tolist(),
                "PP0": ah.PP0.tolist(),
                "changed": [
                    sorted([bt.arms[a], bt.arms[b]] for a, b in ch)
                    for bt, ch in zip(self._batches, ah.changed, strict=True)
                ],
            }
        return state

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        super()._load_extra_state(state)
        saved = state.get("ahead")
        if saved is None:
            return
        rng = np.random.Generator(type(self.rng.bit_generator)())
        rng.bit_generator.state = saved["rng"]
        PU = np.asarray(saved["pu0"], dtype=float)
        PP = np.asarray(saved["PP0"], dtype=float)
        if PU.shape != self._PU.shape or PP.shape != self._PP.shape:
            return
        ah = self._ahead = _Ahead(PU, PP, int(saved["L"]), rng)
        ah.next = [int(x) for x in saved["next"]]
        for bt, ch, pairs in zip(self._batches, ah.changed, saved["changed"], strict=True):
            for x, y in pairs:
                a, b = bt.pos[int(x)], bt.pos[int(y)]
                ch.add((min(a, b), max(a, b)))
