"""The Thompson-sampling kernels of MergeDTS: Li et al. 2020's Algorithms 2 and 3 in one batch.

Every kernel draws a pair with exactly the law of the pseudo-code for the counts of the
step; they differ only in how many steps one generator call serves. Three remain, each
the fastest in a regime of its own (``bench/bandit_speed.py --kernels`` times every
kernel in every regime; BENCHMARKS.md, "Bandit speed", has the figures). Which kernel
serves which regime (``DTSPairs.pair_for``) also fixes the numbers drawn from a seed,
so the thresholds below stay as they are as long as the regret figures are to be
reproduced draw for draw:

:func:`draw_stacked` — *many batches, or one large batch*
    Phases I and II of a stack of ``B`` batches in two generator calls, whatever ``B``
    (a batch's counts change only when its own pair is reported, so in the simulator one
    stacked draw serves a whole round of ``b_s`` steps). With ``B = 1`` it is the plain
    vectorized draw of one batch (:func:`draw_one` for batches above ``SMALL_BATCH``).
:func:`draw_scalar` — *one small batch* (at most ``SMALL_BATCH`` arms)
    the same draw in scalar Python: there numpy's fixed cost per call (above all the
    argument checks of an array-parameter gamma draw) exceeds the arithmetic.
:class:`Lookahead` — *at most* ``AHEAD_MAX_BATCHES`` *batches of more than* ``SMALL_BATCH``
    a round shares too little there, so one stacked draw prepares ``AHEAD_STEPS`` steps'
    worth of rounds, and each prepared draw is corrected exactly for the comparisons
    made since (see the class). It pays for a lone batch (about 30 % against the
    stacked kernel) and a little with two; with three or four batches the stacked
    kernel is faster, but a lower ``AHEAD_MAX_BATCHES`` would change the draws of a
    seed. It is a cache of random numbers for the *simulator's* consecutive steps:
    never part of a policy's state, and never used by ``select_at(t, rng)``, whose
    draw must be a function of (state, t, rng).

Tried and dropped (BENCHMARKS.md): a separate one-batch vector kernel (it drew exactly
what :func:`draw_stacked` draws with ``B = 1``, now its only form), gamma pools kept
exact by Gamma additivity, per-pair pools of Beta samples, lookahead for small batches.

Shortcuts that keep the law (Li et al. 2020's line numbers):

* *Phase I* (Algorithm 2): only the indicators ``1(θ_ij > ½)`` enter ``κ``, and for
  ``θ_ij ~ Beta(w_ij + 1, w_ji + 1)`` that indicator is a Bernoulli draw with mean
  ``I_½(w_ji + 1, w_ij + 1)`` (the regularised incomplete beta function, kept per pair
  in ``pu``, see :func:`dts_rows`). The indicators are drawn from uniforms (lines 1–4);
  the tallies are one matrix product with the pair incidence matrix (line 5); a uniform
  in [0, 1) added to each integer tally breaks ties at random (line 6).
* *Phase II* (Algorithm 3): ``φ_j ~ Beta(w_jc + 1, w_cj + 1)`` is drawn as
  ``g/(g + h)`` with independent ``g ~ Gamma(w_jc + 1)``, ``h ~ Gamma(w_cj + 1)``
  (lines 1–3); ``arg min φ = arg max h/g`` (line 5). Line 4 sets ``φ_c = 1``; we keep
  ``a_c`` out of the arg min altogether instead (``h_c = Gamma(0) = 0``), so it cannot
  tie with a ``φ_j`` that rounds to exactly 1.0 (the paper's intent: "avoid
  self-comparison"). The scalar kernel draws ``φ_j`` with one ``rng.beta`` per arm.

Positions are local to a batch (``0..n-1``); stacked batches are padded to the largest
size ``N`` with positions that can never be drawn (see :func:`dts_rows`).
"""

from __future__ import annotations

import numpy as np

from bandits import special

#: up to this batch size a lone batch is drawn with scalar Python code
SMALL_BATCH = 10
#: with at most this many batches (of more than ``SMALL_BATCH`` arms), draws are
#: prepared several rounds ahead (:class:`Lookahead`)
AHEAD_MAX_BATCHES = 4
#: steps prepared ahead per lookahead draw, shared among the batches
AHEAD_STEPS = 8

_INCIDENCE: dict[int, tuple[np.ndarray, list[list[int]], np.ndarray, np.ndarray]] = {}


def incidence(n: int) -> tuple[np.ndarray, list[list[int]], np.ndarray, np.ndarray]:
    """For ``n`` batch positions: the extended transposed pair incidence matrix
    (``n(n−1)/2 + 1`` rows × ``n``; pair ``k = (i, j)``, ``i < j``, has +1 at ``i`` and −1
    at ``j``, and the last row is ``0, 1, ..., n−1``), the pair index table and the pairs'
    row and column indices; cached per ``n``.

    Examples
    --------
    >>> AT, pidx, iu, ju = incidence(3)
    >>> AT.tolist()
    [[1.0, -1.0, 0.0], [1.0, 0.0, -1.0], [0.0, 1.0, -1.0], [0.0, 1.0, 2.0]]
    >>> pidx
    [[-1, 0, 1], [0, -1, 2], [1, 2, -1]]
    """
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


def pair_table(n: int) -> np.ndarray:
    """The pair index table of :func:`incidence` as an array (−1 on the diagonal)."""
    got = _PAIR_TABLE.get(n)
    if got is None:
        got = _PAIR_TABLE[n] = np.asarray(incidence(n)[1], dtype=np.intp)
    return got


def dts_rows(W_sub: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """What the kernels read of one batch with wins ``W_sub`` (``n × n``), padded to
    ``N ≥ n`` positions.

    ``PP`` (``N × 2N``): the Gamma shapes of Phase II; row ``c`` holds ``w_jc + 1`` for
    every ``j`` (1 for padding), then ``w_cj + 1`` (0 for ``j = c`` and for padding:
    ``Gamma(0)`` is 0, which takes those arms out of the arg max without a mask).

    ``pu`` (``N(N−1)/2 + 1``): ``P(θ_ij > ½)`` for every pair ``i < j`` (Algorithm 2), 1
    for pairs with a padding position, and a final 2 (an always-true slot that adds the
    ``+ i`` of the tally through the last row of the incidence matrix). With padding
    pairs at 1 every real arm gains the same ``N − n`` and a padding position tallies at
    most ``N − n − 1``, so padding never wins Phase I.

    Examples
    --------
    >>> PP, pu = dts_rows(np.array([[0.0, 3.0], [1.0, 0.0]]), 3)
    >>> PP.tolist()
    [[1.0, 2.0, 1.0, 0.0, 4.0, 0.0], [4.0, 1.0, 1.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]]
    >>> pu.round(4).tolist()  # P(θ_01 > ½) for Beta(4, 2), then padding pairs, then 2
    [0.8125, 1.0, 1.0, 2.0]
    """
    n = W_sub.shape[0]
    W1 = np.ones((N, N))
    W1[:n, :n] += W_sub
    H = W1.copy()
    np.fill_diagonal(H, 0.0)
    H[:, n:] = 0.0
    PP = np.concatenate((W1.T, H), axis=1)
    _, _, iu, ju = incidence(N)
    # P(θ_ij > ½) for θ_ij ~ Beta(w_ij + 1, w_ji + 1) is I_½(w_ji + 1, w_ij + 1)
    pu = np.where(ju < n, special.betainc(W1[ju, iu], W1[iu, ju], 0.5), 1.0)
    return PP, np.append(pu, 2.0)


# ---------------------------------------------------------------------- kernels
def draw_scalar(PP: np.ndarray, pu: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Phases I and II in one batch of ``N ≤ SMALL_BATCH`` positions, in scalar code:
    the local ``(a_c, a_d)``.

    Phase I draws ``N(N−1)/2 + N`` uniforms (one per pair, one per tie-break; one uniform
    in all for ``N = 2``) and tallies in Python; Phase II draws one ``rng.beta`` per
    other arm (none for ``N = 2``) and keeps the smallest.
    """
    N = PP.shape[0]
    # Phase I (Algorithm 2)
    if N == 2:
        c = 0 if rng.random() < pu.item(0) else 1
        return c, 1 - c
    m = pu.shape[0] - 1
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
    c = kappa.index(max(kappa))
    # Phase II (Algorithm 3)
    row = PP[c].tolist()
    beta = rng.beta
    best, d = 2.0, c
    for j in range(N):
        if j != c and row[N + j] > 0.0:
            phi = beta(row[j], row[N + j])
            if phi < best:
                best, d = phi, j
    return c, d


def sample_tournaments(PU: np.ndarray, N: int, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 2 (SampleTournament) for a stack of ``B`` batches (``PU``:
    ``B × (N(N−1)/2 + 1)``) in one generator call: the local ``a_c`` of each.

    ``x_k = 1(θ_ij > ½)`` is drawn as ``u_k < P(θ_ij > ½)`` for every pair at once
    (lines 1–4); the tallies ``(|B| − 1) κ_i = Σ_{j>i} x_ij + Σ_{j<i} (1 − x_ji) =
    (A x)_i + i`` are one matrix product (line 5), and a uniform in [0, 1) added to each
    breaks ties at random (line 6).
    """
    B, m1 = PU.shape
    return _tallies(rng.random((B, m1 + N)), PU, N).argmax(axis=1)


def relative_tournaments(PP: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> list[int]:
    """Algorithm 3 (RelativeTournament) for a stack of ``B`` batches (``PP``:
    ``B × N × 2N``, ``c``: the ``B`` first candidates) in one generator call: the local
    ``a_d`` of each.

    ``φ_j = g_j / (g_j + h_j)`` with ``g_j ~ Gamma(w_jc + 1)``, ``h_j ~ Gamma(w_cj + 1)``
    (the shapes are row ``c`` of ``PP``; ``h_c = Gamma(0) = 0`` keeps ``a_c`` out), and
    ``arg min φ = arg max h/g``. The draw is on a flat array: numpy's broadcasting path
    for 2-D parameters is markedly slower.
    """
    N = PP.shape[1]
    g = _candidate_gammas(PP, c, rng)
    return (g[:, N:] / g[:, :N]).argmax(axis=1).tolist()


def _tallies(u: np.ndarray, PU: np.ndarray, N: int) -> np.ndarray:
    """Phase I's tallies ``(|B| − 1) κ_i`` plus the tie-breaking uniform, from uniforms
    ``u`` (``... × B × (m1 + N)``) and the probabilities ``PU`` (``B × m1``)."""
    m1 = PU.shape[1]
    kappa = (u[..., :m1] < PU).dot(incidence(N)[0])
    kappa += u[..., m1:]
    return kappa


def _candidate_gammas(PP: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Phase II's gamma rows ``(g, h)`` for first candidates ``c`` (``... × B``) of the
    stacked batches ``PP`` (``B × N × 2N``): ``... × B × 2N``, in one generator call."""
    B, N, N2 = PP.shape
    rows = PP.reshape(B * N, N2).take((c + _offsets(B, N)).ravel(), axis=0)
    return rng.standard_gamma(rows.ravel()).reshape(*c.shape, N2)


def draw_stacked(
    PU: np.ndarray, PP: np.ndarray, rng: np.random.Generator
) -> tuple[list[int], list[int]]:
    """Phases I and II for a stack of ``B`` batches in two generator calls: the local
    ``(a_c, a_d)`` of each, as two lists."""
    c = sample_tournaments(PU, PP.shape[1], rng)
    return c.tolist(), relative_tournaments(PP, c, rng)


def draw_one(PP: np.ndarray, pu: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Phases I and II in one batch (rows of :func:`dts_rows`): the local
    ``(a_c, a_d)``, with the kernel that suits its size."""
    N = PP.shape[0]
    if N <= SMALL_BATCH:
        return draw_scalar(PP, pu, rng)
    # draw_stacked of one batch (the same generator calls, so the same draws) without
    # the stacking: numpy's fixed cost per call is most of the time at this size
    m1 = pu.shape[0]
    u = rng.random(m1 + N)
    kappa = (u[:m1] < pu).dot(incidence(N)[0])
    kappa += u[m1:]
    c = int(kappa.argmax())
    g = rng.standard_gamma(PP[c])
    return c, int((g[N:] / g[:N]).argmax())


_OFFSETS: dict[tuple[int, int], np.ndarray] = {}


def _offsets(B: int, N: int) -> np.ndarray:
    got = _OFFSETS.get((B, N))
    if got is None:
        got = _OFFSETS[(B, N)] = np.arange(0, B * N, N)
    return got


# ---------------------------------------------------------------------- lookahead
class Lookahead:
    """Draws prepared ``L`` rounds ahead for a stack of ``B`` batches, corrected at use
    for the comparisons made since.

    With few batches a round cannot share much, so one vectorized draw prepares
    ``L`` rounds: ``u``, the Phase I uniforms (``L × B × (m1 + N)``); ``kap``, the tallies
    they give with the probabilities ``pu0`` of the moment; ``cpred``, their arg max;
    ``G``, the Phase II gamma rows for ``cpred`` with the shapes ``PP0`` of the moment.
    :meth:`draw` takes batch ``k``'s next prepared round and makes it exact for the
    counts of now, knowing from ``changed[k]`` (filled by the policy's update) which
    pairs were compared since:

    - Phase I keeps its uniforms (independent of the counts) and re-decides only the
      changed pairs' indicators ``u_k < P(θ_ij > ½)``, moving the tallies by ±1;
    - Phase II's gamma row was drawn for the first candidate predicted then, with the
      shapes of then; counts only grow, and ``Gamma(s) + Gamma(δ) ~ Gamma(s + δ)`` for
      independent terms, so each changed shape gets a fresh ``Gamma(δ)`` added. If the
      corrected Phase I picks another first candidate, Phase II is drawn afresh.

    Every prepared value is used once, so each step's pair has exactly the law of
    Algorithms 2–3 for the current counts. Dropping a lookahead (a snapshot, a change of
    batches) discards unused random numbers only, which changes no law.
    """

    __slots__ = ("G", "L", "PP0", "changed", "cpred", "kap", "next", "pidx", "pu0", "u")

    def __init__(self, PU: np.ndarray, PP: np.ndarray, L: int, rng: np.random.Generator):
        B, m1 = PU.shape
        N = PP.shape[1]
        self.L = L
        self.pu0 = PU.copy()
        self.PP0 = PP.copy()
        self.pidx = incidence(N)[1]
        self.u = rng.random((L, B, m1 + N))
        self.kap = _tallies(self.u, PU, N)
        cpred = self.kap.argmax(axis=2)
        self.G = _candidate_gammas(PP, cpred, rng)
        self.cpred = cpred.tolist()
        #: the next prepared round of each batch
        self.next = [0] * B
        #: per batch, the local pairs ``(a, b)``, ``a < b``, compared since
        self.changed: list[set[tuple[int, int]]] = [set() for _ in range(B)]

    def draw(
        self, k: int, pu: np.ndarray, PP: np.ndarray, rng: np.random.Generator
    ) -> tuple[int, int]:
        """The local ``(a_c, a_d)`` of batch ``k`` (current rows ``pu`` and ``PP``) from
        its next prepared round; ``rng`` draws the corrections."""
        r = self.next[k]
        self.next[k] = r + 1
        changed = self.changed[k]
        kap = self.kap[r, k]
        N = PP.shape[0]
        if changed:
            kap = kap.copy()
            u = self.u[r, k]
            pu0, pidx = self.pu0[k], self.pidx
            for a, b in changed:  # a < b
                q = pidx[a][b]
                x = u.item(q)
                now = x < pu.item(q)
                if now != (x < pu0.item(q)):
                    step = 1.0 if now else -1.0
                    kap[a] += step
                    kap[b] -= step
        c = int(kap.argmax())
        if c != self.cpred[r][k]:
            return c, relative_tournaments(PP[None], np.array([c]), rng)[0]
        g = self.G[r, k]
        if changed:
            shapes, shapes0 = PP[c], self.PP0[k, c]
            gamma = rng.standard_gamma
            for a, b in changed:
                if a == c or b == c:
                    o = b if a == c else a
                    for e in (o, N + o):
                        delta = shapes.item(e) - shapes0.item(e)
                        if delta > 0.0:
                            g[e] += gamma(delta)
        return c, int((g[N:] / g[:N]).argmax())
