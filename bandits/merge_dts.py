"""MergeDTS, Merge Double Thompson Sampling (Li et al. 2020, Algorithms 1–3).

Where each line of the pseudo-code is
-------------------------------------
Algorithm 1 (MergeDTS); the framework lines are shared by every Merge policy and live in
:mod:`bandits.merge_base` and its batch structure :mod:`bandits.merge_structure` (their
comments cite the same line numbers); MergeDTS is that
framework with two components of this module, the pair rule :class:`DTSPairs` and the
elimination test :class:`HoeffdingElimination`:

- line 1, ``W = 0``: :class:`bandits.base.DuelingBandit`;
- line 2, ``C(ε)``: :func:`bandits.merge_base.confidence_constant` (``preset="theoretical"``;
  the tuned preset gives ``C`` directly);
- line 3, ``s = 1``: :class:`~bandits.merge_base.MergeBandit` (``stage``);
- line 4, ``B_1`` with ``b_1 = ceil(K/M)``: :func:`bandits.merge_partition.initial_batches`;
- line 5, ``for t = 1, 2, ...``: each :meth:`~MergeDTS.select` is one step ``t``;
- line 6, ``m = t mod b_s``: ``MergeBandit._select`` (and ``MergeBandit.select_at``);
- lines 7–8, one ranker left: ``MergeBandit._select`` plays it against itself;
  ``best_arm()`` names it;
- line 10, ``U``, and line 11, elimination by ``u_ij < ½``: :class:`HoeffdingElimination`
  (``beaten`` and ``purge``), applied by ``MergeBandit._merge_update`` to the pair just
  compared and by ``BatchStructure._purge`` to batches a merge formed;
- lines 12–13, a one-arm batch merges with the next: ``BatchStructure._settle``;
- line 15, Phase I (Algorithm 2) and line 16, Phase II (Algorithm 3):
  ``DTSPairs.pair_for`` with the kernels of :mod:`bandits.merge_sampling`;
- line 17, compare and count: the caller's ``update()`` (``W`` in the base class), then
  ``DTSPairs.pair_changed`` refreshes the batch's sampling rows;
- lines 18–22, next stage with the batches paired up: ``BatchStructure._settle`` with
  :func:`bandits.merge_partition.pair_batches`.

Algorithm 2 (SampleTournament: lines 1–4 sample, line 5 tally, line 6 arg max with random
ties) and Algorithm 3 (RelativeTournament: lines 1–3 sample, line 4 ``φ_c``, line 5 arg
min) are the kernels of :mod:`bandits.merge_sampling`, whose docstring gives the
shortcuts they take and why each kernel exists.

Where the code departs from the pseudo-code, and why
----------------------------------------------------
*Horizonless.* ``T`` enters only through ``C(ε)`` with ε = 1/T (``horizon``, for the
theoretical preset); the loop never ends: with one arm left, ``select()`` returns
``(a, a)`` for ever instead of returning the arm (line 8), so a live experiment keeps
serving its champion, and ``best_arm()`` names it.

*Delayed feedback.* ``t`` counts selections (``select()`` calls, or the global counter
passed to ``select_at(t, rng)``), not comparisons: live, many selections are in flight
before their outcomes arrive, and a selection uses the counts known at the time. The
feedback transaction moves ``t`` to the global step (``sync_step``) before ``update()``,
so the bounds of line 10 use ``log(t + C)`` of the experiment.

*Elimination and merges happen at update time* (lines 10–14 and 18–22). The paper
evaluates them at the top of every step, but ``W`` only changes in ``update()`` (with
delayed feedback, many selections happen between two updates). Between updates every
``u_ij`` only *grows* (``log(t + C)`` grows with ``t``, the counts do not move), so the
only pair that can newly fall below ½ is the one just compared: checking that pair in
``update()`` is exact and O(1) instead of O(M²) per step. The check uses ``t + 1``, the
step at which the paper would next evaluate line 11. Batches that a merge brings
together are checked in full (line 11 over all their pairs) right away.

*Ties*: an outcome of ½ adds ½ to both ``w_ij`` and ``w_ji`` (the base class does it);
the Beta posteriors then have half-integer parameters, which the samplers accept.

*Adding and retiring rankers mid-run* (not in the papers):

- a new arm joins the *smallest* batch of the current stage with zero counts (every
  ``u`` involving it is ``x/0 := 1``, so it cannot be eliminated before it is compared);
  a field that had converged to one arm becomes a live batch again;
- a retired arm leaves its batch and is never chosen again; a batch left with one arm
  (while other batches exist) is merged with the next one exactly as lines 12–13 merge
  a batch emptied by elimination, and an emptied batch is dropped;
- stages: line 18's threshold ``K / 2^s`` is kept *relative to the stage*: a stage ends
  when the arms left in batches are at most half of the stage's field, where the field
  is the number of arms in batches when the stage began, plus arms added, minus arms
  retired during it. Without additions and retirements this is exactly ``K / 2^s``
  (eliminations come one at a time, so the field of stage ``s + 1`` is
  ``floor(K / 2^s)``).

*Initial batches* (line 4): ``b_1 = ceil(K/M)`` batches, but filled as evenly as possible
(sizes differ by at most one) instead of ``M, M, ..., rest``, so no batch starts tiny
(a 1-arm batch would merge away at once under lines 12–13 anyway).

*Stage merge* (line 19, "pair the larger size batches with the smaller ones, making sure
the size of every batch is in [0.5M, 1.5M]"): see :func:`~bandits.merge_partition.pair_batches`.

*Batch index*: ``m = t mod b_s`` (line 6) with batches numbered from 0.

*Sampling* (Algorithms 2–3): Phase I draws the indicators ``1(θ_ij > ½)`` directly,
Phase II draws ``φ_j`` as a gamma ratio and keeps ``a_c`` out of the arg min instead of
setting ``φ_c = 1``; see :mod:`bandits.merge_sampling`. Same law as the pseudo-code.

*When draws happen*: ``select()`` draws the pairs of all batches together once a round,
and with few large batches several rounds ahead, each prepared draw corrected exactly
for the comparisons made since (:class:`~bandits.merge_sampling.Lookahead`); every step's
pair has the law of Algorithms 2–3 for the counts of that step. Those prepared draws are
a cache, not state: ``state_dict()`` drops them, and ``select_at(t, rng)`` never uses
them (its draw is a function of the state, ``t`` and ``rng``).

*Parameters*: the default ``preset="tuned"`` is Li et al. 2020's tuned α = 0.8⁶, M = 16,
C = 4·10⁶ (§5.5); α = 0.8⁶ < ½ is outside the range of the regret bound, which the
paper's experiments accept. ``preset="theoretical"`` gives α = 1.01, M = 4 and ``C(ε)``
of line 2 with ε = 1/T, T = ``horizon`` (10⁶ by default).

``best_arm()``: the last remaining arm once there is one (line 8); before that, see
:meth:`~bandits.merge_base.MergeBandit.best_arm`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from bandits import special
from bandits.merge_base import THEORETICAL, TUNED_ALPHA, MergeBandit
from bandits.merge_components import Batch, EliminationTest, PairRule
from bandits.merge_sampling import (
    AHEAD_MAX_BATCHES,
    AHEAD_STEPS,
    SMALL_BATCH,
    Lookahead,
    draw_one,
    draw_scalar,
    draw_stacked,
    dts_rows,
    incidence,
    pair_table,
)


class _DTSBatch(Batch):
    """A batch with MergeDTS's caches: its rows ``PP`` (Phase II shapes) and ``pu``
    (Phase I probabilities) of :func:`~bandits.merge_sampling.dts_rows`, as views into
    the policy's stacked arrays, and the pair a stacked draw prepared for it."""

    __slots__ = ("PP", "choice", "pu")

    def __init__(self, arms: list[int]) -> None:
        super().__init__(arms)
        self.choice: tuple[int, int] | None = None  # local indices


class HoeffdingElimination(EliminationTest):
    """Algorithm 1 lines 10–11 (Li et al. 2020): ``a_i`` is eliminated once
    ``u_ij = w_ij/n + sqrt(α log(t + C)/n) < ½`` for an arm ``a_j`` of its batch, i.e.
    ``2n(½ − p̂_ij)² > 2α log(t + C)`` (Hoeffding's bound); MergeRUCB's Algorithm 4
    lines 7–8 (Zoghi 2017) are the same test. ``a = α log(t + 1 + C)``, the step at
    which line 11 next runs (see the module docstring)."""

    def beaten(self, w: float, n: float, a: float) -> bool:
        """Algorithm 1 line 11 for one pair: ``u_ij < ½`` (line 10's bound)."""
        if 2.0 * w >= n:  # a pair it wins or ties (or n = 0) cannot eliminate it
            return False
        return w / n + math.sqrt(a / n) < 0.5  # line 10: u_ij; line 11: < ½

    def purge(self, w: np.ndarray, a: float) -> list[tuple[int, int]]:
        """Algorithm 1 line 11 over every pair of a batch: ``(i, j)`` for each ``a_i`` with some
        ``u_ij < ½``, ``j`` the arm with the smallest ``u_ij`` (``x/0 := 1``)."""
        n = w + w.T
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(n > 0, w / n + np.sqrt(a / n), 2.0)
        np.fill_diagonal(u, 0.5)
        return [(int(i), int(u[i].argmin())) for i in np.flatnonzero((u < 0.5).any(axis=1))]

    def volatility_q(self, a: float) -> float:
        """``u_ij < ½`` is ``d = w_ji − w_ij > 0`` and ``d² > 4an``: ``q = 4a`` (shaved
        by 1e-9 for rounding) flags every outcome that eliminates, and a few that do
        not."""
        return 4.0 * a * (1.0 - 1e-9)


#: the test of lines 10–11 (stateless: one instance serves every policy)
HOEFFDING = HoeffdingElimination()


#: batches' rows kept by :meth:`DTSPairs.pair_from` (a policy has a few batches; a
#: simulator that calls it after every update only ever refills it)
ROWS_MEMO = 16


class DTSPairs(PairRule):
    """Algorithm 1 lines 15–16 (Li et al. 2020): Phase I (Algorithm 2,
    SampleTournament) picks ``a_c``, Phase II (Algorithm 3, RelativeTournament) picks
    ``a_d``, with the kernels of :mod:`bandits.merge_sampling`. Keeps, per batch, the
    rows ``PP`` (Phase II shapes) and ``pu`` (Phase I probabilities) of
    :func:`~bandits.merge_sampling.dts_rows` in stacked arrays, and the draws a stacked
    or look-ahead draw prepared (see :class:`MergeDTS`, *Speed*)."""

    batch_type = _DTSBatch
    #: the kernel thresholds of :mod:`bandits.merge_sampling` (``bench/bandit_speed.py
    #: --kernels`` varies them to measure what each kernel buys)
    small_batch: ClassVar[int] = SMALL_BATCH
    ahead_max_batches: ClassVar[int] = AHEAD_MAX_BATCHES

    def __init__(self, policy: MergeBandit) -> None:
        super().__init__(policy)
        #: pair_from's rows per batch wins matrix (see there)
        self._rows_memo: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ caches
    def build_all(self) -> None:
        batches = self.policy._batches
        B = len(batches)
        N = max([2, *(bt.n for bt in batches)])
        self._N = N
        self._ahead: Lookahead | None = None
        self._PP = np.ones((B, N, 2 * N))
        self._PU = np.ones((B, N * (N - 1) // 2 + 1))
        self._pidx = incidence(N)[1]
        for k, bt in enumerate(batches):
            bt.k = k
            self._fill(bt)

    def build_one(self, bt: _DTSBatch) -> None:
        # the padding N is always the largest batch size, so that the draws are a
        # function of the batches alone
        N = max([2, *(b.n for b in self.policy._batches)])
        if N != self._N or not 0 <= bt.k < len(self.policy._batches):
            self.build_all()
        else:
            self._fill(bt)

    def _fill(self, bt: _DTSBatch) -> None:
        k = bt.k
        self._PP[k], self._PU[k] = dts_rows(self.policy._sub(bt.arms), self._N)
        bt.PP = self._PP[k]
        bt.pu = self._PU[k]
        bt.choice = None
        self._ahead = None

    def shrink(self, old: _DTSBatch, new: _DTSBatch, p: int) -> bool:
        # Move position p to the first padding slot q = n - 1 and give it padding
        # values: the same arrays as dts_rows on the smaller batch, without recomputing
        # the incomplete beta function of every pair.
        N = self._N
        if max(b.n for b in self.policy._batches) != N or new.n < 2:
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
        _, _, iu, ju = incidence(N)
        vals = pu[pair_table(N)[order[iu], order[ju]]]
        vals[ju >= q] = 1.0
        pu[:-1] = vals
        new.PP, new.pu, new.choice = PP, pu, None
        self._ahead = None
        return True

    def pair_changed(self, bt: _DTSBatch, a: int, b: int, w_ab: float, w_ba: float) -> None:
        N = self._N
        PP = bt.PP
        x = w_ab + 1.0
        y = w_ba + 1.0
        # PP[c, j] = w_jc + 1 and PP[c, N + j] = w_cj + 1
        PP[b, a] = x
        PP[a, N + b] = x
        PP[a, b] = y
        PP[b, N + a] = y
        # P(θ_ij > ½) = I_½(w_ji + 1, w_ij + 1) for the pair i < j
        betainc = special.betainc
        bt.pu[self._pidx[a][b]] = betainc(y, x, 0.5) if a < b else betainc(x, y, 0.5)
        bt.choice = None
        if self._ahead is not None:
            self._ahead.changed[bt.k].add((a, b) if a < b else (b, a))

    def drop_prepared(self) -> None:
        self._ahead = None
        for bt in self.policy._batches:
            bt.choice = None

    # ------------------------------------------------------------------ the pair
    def pair_for(self, bt: _DTSBatch) -> tuple[int, int]:
        # lines 15-16 (Algorithms 2 and 3) in select(): a pair prepared by the last
        # stacked draw, else the kernel that suits the batches (see merge_sampling)
        choice = bt.choice
        if choice is not None:
            bt.choice = None
            return choice
        batches = self.policy._batches
        small = self._N <= self.small_batch  # noqa: SIM300 (_N is no constant)
        if small and len(batches) == 1:
            return draw_scalar(bt.PP, bt.pu, self.policy.rng)
        if not small and len(batches) <= self.ahead_max_batches:
            ah = self._ahead
            if ah is None or ah.next[bt.k] == ah.L:
                L = max(1, AHEAD_STEPS // len(batches))
                ah = self._ahead = Lookahead(self._PU, self._PP, L, self.policy.rng)
            return ah.draw(bt.k, bt.pu, bt.PP, self.policy.rng)
        cs, ds = draw_stacked(self._PU, self._PP, self.policy.rng)
        for other, c, d in zip(batches, cs, ds, strict=True):
            other.choice = (c, d)
        bt.choice = None
        return cs[bt.k], ds[bt.k]

    def pair_from(self, W_sub: np.ndarray, t: int, rng: np.random.Generator) -> tuple[int, int]:
        # lines 15-16 from the batch's wins alone (select_at, select_in_batch). The rows
        # are a function of W_sub alone: the live service draws many steps from one
        # loaded state, so they are kept per W_sub (a few entries: one per batch)
        key = (W_sub.shape[0], W_sub.tobytes())
        memo = self._rows_memo
        rows = memo.get(key)
        if rows is None:
            if len(memo) >= ROWS_MEMO:
                memo.clear()
            rows = memo[key] = dts_rows(W_sub, max(2, W_sub.shape[0]))
        return draw_one(*rows, rng)


class MergeDTS(MergeBandit):
    """Merge Double Thompson Sampling, Li et al. 2020,
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
    batches are paired up (lines 18–22). With one arm left, that arm is played against
    itself for ever (lines 7–8, horizonless operation). The module docstring maps every
    line to the code and lists every departure from the pseudo-code.

    *Speed.* Phases I and II of a batch depend only on that batch's counts, and those
    change only when the batch's own pair is reported. So :meth:`select` draws the pairs
    of *all* batches at once when a batch is due and has none ready, and each batch keeps
    its pair until its turn; a report on a batch discards its prepared pair. With at most
    ``AHEAD_MAX_BATCHES`` batches of more than ``SMALL_BATCH`` arms, draws are prepared
    several rounds ahead (:class:`~bandits.merge_sampling.Lookahead`); a lone small batch
    is drawn step by step in scalar code. :meth:`select_at` draws the batch of step
    ``t`` from the state alone, exactly as :meth:`select_in_batch` does.

    Parameters
    ----------
    n_arms
        Number of arms K.
    preset
        ``"tuned"`` (default): Li et al. 2020's tuned α = 0.8⁶, M = 16, C = 4·10⁶ (§5.5);
        ``"theoretical"``: α = 1.01, M = 4, ``C`` from Algorithm 1 line 2 with
        ε = 1/``horizon``. Explicit parameters override the preset's.
    alpha
        Exploration parameter α (the regret bound wants α > ½).
    batch_size
        Batch size M.
    c
        ``C(ε)`` in the confidence bound.
    horizon
        T for ``C(ε)`` with ε = 1/T; given without ``c``, ``c`` is computed from it
        whatever the preset (default T = 10⁶ for the theoretical preset). The loop itself
        never ends.
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
    >>> MergeDTS(40).params()  # the tuned preset
    {'preset': 'tuned', 'alpha': 0.2621440000000001, 'batch_size': 16, 'c': 4000000.0}
    >>> p = MergeDTS(40, preset="theoretical").params()  # C(ε) of line 2, ε = 1/10⁶
    >>> p["alpha"], p["batch_size"], round(p["c"]), p["horizon"]
    (1.01, 4, 3080498311, 1000000)
    """

    name = "mergedts"
    PRESETS: ClassVar[dict[str, dict[str, float | None]]] = {
        "tuned": {"alpha": TUNED_ALPHA, "batch_size": 16, "c": 4e6},  # Li et al. 2020, §5.5
        "theoretical": THEORETICAL,
    }
    PAIRS = DTSPairs
    ELIMINATION = HOEFFDING
    _round_up = True
