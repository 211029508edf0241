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

*Phase II* (Algorithm 3, line 4): ``φ_c`` is set to 2 rather than 1, so that ``a_c`` can
never be the arg min even if a sampled ``φ_j`` rounds to exactly 1.0 (the paper's intent:
"avoid self-comparison").

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
        raise ValueError(
            f"C(eps) is defined for alpha > 0.5 only (got {alpha}); pass c directly"
        )
    if horizon < 1 or n_arms < 1:
        raise ValueError("horizon and n_arms must be positive")
    log_c = (
        math.log(4 * alpha - 1) + 2 * math.log(n_arms) - math.log(2 * alpha - 1)
        + math.log(horizon)
    ) / (2 * alpha - 1)
    if log_c > 700:
        raise ValueError(
            f"C(eps) = exp({log_c:.0f}) overflows for alpha={alpha}; pass c directly"
        )
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
class _Batch:
    """One batch and the per-batch caches of its algorithm (rebuilt when it changes)."""

    __slots__ = ("A", "R", "S", "W1", "ar", "arms", "m", "n", "pidx", "pos", "pu", "xf")

    def __init__(self, arms: list[int]) -> None:
        self.arms = list(arms)
        self.n = len(self.arms)
        self.pos = {a: k for k, a in enumerate(self.arms)}


class MergeBandit(DuelingBandit):
    """Batches, stages, eliminations and merges shared by MergeDTS and MergeRUCB.

    Subclasses implement :meth:`_prepare` (build a batch's caches from ``W``),
    :meth:`_pair_changed` (refresh them after one comparison) and :meth:`_choose` (pick
    the pair inside a batch), and set ``_round_up`` (how ``b_1`` is rounded).

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
        arms = list(range(self.K))
        if self._round_up:
            nb = math.ceil(self.K / self.batch_size)
        else:
            nb = max(1, self.K // self.batch_size)
        self._set_batches(split_evenly(arms, nb))
        self.stage_field = self.K
        # a 1-arm batch at the start merges away as in line 12-13
        self._settle([])

    # ------------------------------------------------------------------ public helpers
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

    def bonus(self, t: int) -> float:
        """``α log(t + C)``, the numerator of the UCB exploration term (line 10)."""
        return self.alpha * math.log(t + self.c)

    def select_in_batch(
        self, arms: list[int], W_sub: np.ndarray, t: int, rng: np.random.Generator
    ) -> Comparison:
        """Choose the pair inside one batch from its own data only.

        ``arms`` are the batch's arm indices, ``W_sub = W[arms][:, arms]`` its wins, ``t``
        the step and ``rng`` the generator: this is all the choice depends on, so the
        live service can select from the current batch without loading the whole
        matrix. Returns arm indices (``(a, a)`` for a one-arm batch). Draws from ``rng``
        exactly as :meth:`select` does for the same batch.
        """
        arms = [int(a) for a in arms]
        if len(arms) == 1:
            return (arms[0], arms[0])
        bt = _Batch(arms)
        self._prepare(bt, np.asarray(W_sub, dtype=float))
        c, d = self._choose(bt, int(t), rng)
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
    def _prepare(self, bt: _Batch, W_sub: np.ndarray) -> None:
        """Build the batch's caches from its wins sub-matrix."""
        raise NotImplementedError

    def _pair_changed(self, bt: _Batch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        """Local pair ``(a, b)`` of ``bt`` now has ``w_ab`` and ``w_ba`` wins."""
        raise NotImplementedError

    def _choose(self, bt: _Batch, t: int, rng: np.random.Generator) -> tuple[int, int]:
        """Local indices ``(c, d)`` of the pair to compare inside ``bt`` at step ``t``."""
        raise NotImplementedError

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
        c, d = self._choose(bt, self.t, self.rng)
        return (bt.arms[c], bt.arms[d])

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
        self._pair_changed(bt, bt.pos[i], bt.pos[j], w_ij, w_ji)
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
            arms = [*self._batches[k].arms, arm]
            self._replace(k, arms)
        else:
            self._batches.append(self._make([arm]))
        self.stage_field += 1

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
        }

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._set_batches([[int(a) for a in b] for b in state["batches"]])
        self.stage = int(state["stage"])
        self.stage_field = int(state["stage_field"])

    # ------------------------------------------------------------------ structure
    def _make(self, arms: list[int]) -> _Batch:
        bt = _Batch(arms)
        idx = np.asarray(bt.arms, dtype=np.intp)
        self._prepare(bt, self.W[np.ix_(idx, idx)])
        for a in bt.arms:
            self._where[a] = bt
        return bt

    def _set_batches(self, batches: list[list[int]]) -> None:
        self._where: dict[int, _Batch] = {}
        self._batches: list[_Batch] = [self._make(b) for b in batches if b]

    def _replace(self, k: int, arms: list[int]) -> _Batch:
        self._batches[k] = bt = self._make(arms)
        return bt

    def _remove(self, arm: int) -> None:
        """Take ``arm`` out of its batch (an emptied batch is dropped)."""
        bt = self._where.pop(arm)
        k = self._batches.index(bt)
        rest = [a for a in bt.arms if a != arm]
        if rest:
            self._replace(k, rest)
        else:
            del self._batches[k]

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
        idx = np.asarray(bt.arms, dtype=np.intp)
        w = self.W[np.ix_(idx, idx)]
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
        nothing changes (each round removes an arm or a batch, so it ends)."""
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
            return


# ---------------------------------------------------------------------- MergeDTS
_INCIDENCE: dict[int, tuple[np.ndarray, list[list[int]], np.ndarray, np.ndarray]] = {}


def _incidence(n: int) -> tuple[np.ndarray, list[list[int]], np.ndarray, np.ndarray]:
    """For a batch of ``n`` arms: the pair incidence matrix ``A`` (``n × n(n−1)/2``,
    +1 for the first arm of pair ``k``, −1 for the second), the pair index table and
    the pairs' row and column indices, cached per ``n``."""
    got = _INCIDENCE.get(n)
    if got is None:
        iu, ju = np.triu_indices(n, 1)
        m = iu.size
        A = np.zeros((n, m))
        A[iu, np.arange(m)] = 1.0
        A[ju, np.arange(m)] = -1.0
        pidx = [[-1] * n for _ in range(n)]
        for k in range(m):
            pidx[iu[k]][ju[k]] = pidx[ju[k]][iu[k]] = k
        got = _INCIDENCE[n] = (A, pidx, iu, ju)
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

    def _prepare(self, bt: _Batch, W_sub: np.ndarray) -> None:
        n = bt.n
        bt.W1 = W_sub + 1.0  # Beta parameters w + 1 (Algorithm 2 line 2, Algorithm 3 line 2)
        A, pidx, iu, ju = _incidence(n)
        bt.A, bt.pidx = A, pidx
        bt.m = iu.size
        # P(θ_ij > ½) for θ_ij ~ Beta(w_ij + 1, w_ji + 1), i < j
        bt.pu = betainc(bt.W1[ju, iu], bt.W1[iu, ju], 0.5)
        bt.xf = np.empty(bt.m)
        bt.ar = np.arange(n, dtype=float)

    def _pair_changed(self, bt: _Batch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        bt.W1[a, b] = w_ab + 1.0
        bt.W1[b, a] = w_ba + 1.0
        if a > b:
            a, b, w_ab, w_ba = b, a, w_ba, w_ab
        bt.pu[bt.pidx[a][b]] = betainc(w_ba + 1.0, w_ab + 1.0, 0.5)

    def _choose(self, bt: _Batch, t: int, rng: np.random.Generator) -> tuple[int, int]:
        m = bt.m
        u = rng.random(m + bt.n)
        # Algorithm 2 lines 1-4: x_k = 1(θ_ij > ½) for pair k = (i, j), i < j
        np.less(u[:m], bt.pu, out=bt.xf)
        # line 5: (|B|-1) κ_i = Σ_{j>i} x_ij + Σ_{j<i} (1 - x_ji) = (A x)_i + i
        kappa = bt.A.dot(bt.xf)
        kappa += bt.ar
        kappa += u[m:]  # line 6: random tie-breaking among the integer tallies
        c = int(kappa.argmax())
        # Algorithm 3 lines 1-3: φ_j ~ Beta(w_jc + 1, w_cj + 1)
        phi = rng.beta(bt.W1[:, c], bt.W1[c, :])
        phi[c] = 2.0  # line 4, out of reach (see the module docstring)
        return c, int(phi.argmin())  # line 5
