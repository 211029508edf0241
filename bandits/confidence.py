"""Verdicts with a stated, anytime-valid error rate δ: which rankers are *shown worse*
at ``1 − δ``, and whether a champion is *certified* the best.

Pure numpy. The edge test is a betting confidence sequence (Waudby-Smith & Ramdas 2023,
"Estimating means of bounded random variables by betting", JRSS-B): a mixture of
constant bets against "``i`` wins at most half its comparisons with ``j``", computed
from the two counts ``w_ij``, ``w_ji`` of ``W`` alone; this module adds the union
argument that makes a verdict, not one test, wrong with probability at most δ.

The edge (the test)
-------------------
Rankers ``i`` and ``j`` compared ``n = w_ij + w_ji`` times: each outcome ``X`` lies in
[0, 1] (1: ``i`` won, ½: a tie) with conditional mean ``p_ij`` given the past, whatever
adaptive rule chose when to compare them. To test ``p_ij ≤ ½``, a gambler starts with
wealth 1 and bets a constant fraction ``μ = 2θ − 1`` of it on ``i`` at every comparison:
the capital ``K_n(θ) = Π (1 + μ(2X − 1))`` is a nonnegative supermartingale when
``p_ij ≤ ½`` (Waudby-Smith & Ramdas 2023, the capital process; there ``λ(X − m)``
with ``m = ½`` and ``λ = 2μ``). ``log(1 + μu)`` is concave in ``u = 2X − 1 ∈ [−1, 1]``,
so it lies above its chord, and

    log K_n(θ) ≥ w log(2θ) + (n − w) log(2(1 − θ)),     w = w_ij,

with equality when every outcome is a win or a loss. The gambler spreads the initial
wealth evenly over ``D = 20`` constant bets ``θ_k = ½ + 0.45 · 2^(−k/2)`` (gaps 0.45
down to 0.0006): the mixture ``M_n = (1/D) Σ_k K_n(θ_k)`` is a nonnegative
supermartingale too, and Ville's inequality bounds the chance that it *ever* reaches
``1/a`` by ``a``. The edge "``i`` beats ``j``" is drawn when

    log M_n = log( (1/D) Σ_k exp( w log 2θ_k + (n − w) log 2(1 − θ_k) ) ) ≥ log(1/a)

(:func:`log_wealth`, :func:`crossed`), wrongly (``p_ij ≤ ½``) at any step of a run of
any length with probability at most ``a``. It is checked as often as one likes, after
every comparison if need be (every check is a stopping time), and an edge once drawn is
kept.

Why it is tighter than the normal mixture it replaces (Robbins 1970; Howard, Ramdas,
McAuliffe & Sekhon 2021, still the guard's in :mod:`bandits.condorcet_check`):
that boundary is Hoeffding's, variance ¼ at every preference, and its mixture costs
``½ log(1 + n/40)`` nats that grow with ``n``. A constant bet earns
``n (kl(p, ½) − kl(p, θ))`` nats on win/loss outcomes at preference ``p``, the Bernoulli
likelihood ratio, so the bet next to ``p`` collects nearly the information floor
``kl(p, ½)`` per comparison (the rate of Kaufmann, Cappé & Garivier 2016, Lemma 1),
which exceeds Hoeffding's ``2(p − ½)²`` more the more lopsided the pair; and the
geometric grid makes the evidence a crossing needs nearly flat in ``n``:
``n · kl(p̂, ½) ≈ log(1/a) + 2.1 to 2.5`` nats at every ``n`` (:func:`evidence_floor`).

Where it departs from the paper: the bets are a fixed geometric grid mixed with equal
weights (their "diversified Kelly" mixes a grid of constant bets; their recommended
strategies bet a predictable, data-dependent fraction instead, which needs each edge's
sequence of outcomes); and the capital is read through the chord above, so it is a
function of ``W`` alone, which the live credit path keeps in Redis without calling the
policy for most outcomes (:mod:`bandits.volatility`). The price: a tie counts as half a
win and half a loss, so this test gains nothing from ties, where the capital of the
bets themselves (and an empirical-Bernstein bound) would; outcomes that are wins or
losses, as interleaving's mostly are, lose nothing.

The union (what δ covers)
-------------------------
Every edge of a run of ``K`` rankers is drawn at ``a = δ / (2(K − 1))``
(:func:`per_edge_level`).

* **"X is the best" (certified).** Stated when every other ranker of the field is shown
  worse by some ranker (:func:`certified_best`). If the field has a Condorcet winner
  ``c`` and ``X ≠ c``, then ``c`` was shown worse: one of the ``K − 1`` edges *into* ``c``
  was drawn, and each of them is wrong. So P(a certified champion is not the Condorcet
  winner, ever in the run) ≤ ``(K − 1) a = δ/2``. If two or more rankers are tied best
  (an A/A test, where nobody should be certified), any certificate shows one of two of
  them, ``b₁`` or ``b₂``, worse: one of the ``2(K − 1)`` edges into them, all wrong, so
  P(any certificate) ≤ δ.
* **"Y is shown worse" at 1 − δ.** It covers the statement "*Y is not the best ranker*":
  on the same event (no wrong edge into the winner, probability ≥ 1 − δ/2) the winner
  is never among the rankers shown worse, jointly with the champion claim. The witness
  ``X`` that showed it ("worse than X") is right edge by edge at ``1 − a`` each, but
  the family of *all* pairwise orderings is not covered at δ (that would need a union
  over all ``K(K − 1)/2`` pairs); the report says "not the best", not a full ranking.

These unions hold for every rule that decides *when* to look, so a policy may check
its edges after every comparison (``recommended`` does: :mod:`bandits.certifier_verdicts`)
and a report may be read at any moment.

A ranker *no longer shown* (soft-eliminated by a policy's cheaper test) is not shown
worse: it can come back, and it carries no claim.

Arms added mid-run raise ``K`` and tighten every later edge; edges drawn before were at
the looser level, so the bound is ``δ · K_final / K_first`` at worst then (as for the
guard, :mod:`bandits.condorcet_check`).

Examples
--------
>>> W = np.array([[0, 700, 800], [300, 0, 500], [200, 500, 0]], dtype=float)
>>> shown_worse(W, [0, 1, 2], delta=0.05)
{1: 0, 2: 0}
>>> certified_best(W, [0, 1, 2], delta=0.05)
0
>>> certified_best(W[:2, :2] * 0.01, [0, 1], delta=0.05) is None  # 7 wins in 10: not yet
True
>>> certified_best(W[:2, :2] * 0.08, [0, 1], delta=0.05)  # 56 in 80: certified
0
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: the default error rate of a verdict
DEFAULT_ERROR_RATE = 0.05

#: the gaps ``θ_k − ½`` of the constant bets: a geometric grid, ratio √2, from 0.45 down
#: to 0.0006 (below that a pair needs more than 10⁷ comparisons at any level used here)
BET_GAPS = 0.45 * 2.0 ** (-0.5 * np.arange(20))
#: ``log 2θ_k`` and ``log 2(1 − θ_k)``: the log-capital one win and one loss add to bet k
_WIN = np.log(1.0 + 2.0 * BET_GAPS)
_LOSS = np.log(1.0 - 2.0 * BET_GAPS)
_LOG_D = math.log(BET_GAPS.size)
_WIN_T, _LOSS_T = tuple(_WIN.tolist()), tuple(_LOSS.tolist())


def per_edge_level(n_arms: int, delta: float) -> float:
    """``δ / (2(K − 1))``: the level of each edge, so that the union of the module
    docstring bounds a wrong verdict by δ, with a Condorcet winner or with tied best."""
    return float(delta) / (2.0 * max(int(n_arms) - 1, 1))


def log_wealth(w: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``log M_n``: the log-capital of the mixture of bets on "the side with ``w`` wins
    in ``n`` comparisons wins more than half" (module docstring), a lower bound of the
    bets' actual capital, equal to it on win/loss outcomes. 0 at ``n = 0``.

    >>> [round(float(x), 2) for x in log_wealth(np.array([14.0, 550.0]), np.array([20.0, 1000.0]))]
    [0.59, 2.99]
    """
    w = np.asarray(w, dtype=float)
    n = np.asarray(n, dtype=float)
    w, n = np.broadcast_arrays(w, n)
    comp = w[..., None] * _WIN + (n - w)[..., None] * _LOSS
    top = comp.max(axis=-1)
    return top + np.log(np.exp(comp - top[..., None]).sum(axis=-1)) - _LOG_D


def _log_wealth_one(w: float, n: float) -> float:
    """:func:`log_wealth` of one pair, in plain floats (the policy's per-comparison check)."""
    lose = n - w
    comp = [w * a + lose * b for a, b in zip(_WIN_T, _LOSS_T, strict=True)]
    top = max(comp)
    return top + math.log(sum(math.exp(c - top) for c in comp)) - _LOG_D


def _kl_half(p: np.ndarray) -> np.ndarray:
    """``kl(p, ½)`` of Bernoulli laws, elementwise (0 log 0 = 0)."""
    p = np.clip(p, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(2.0 * p), 0.0)
        b = np.where(p < 1, (1.0 - p) * np.log(2.0 * (1.0 - p)), 0.0)
    return a + b


@functools.lru_cache(maxsize=256)
def evidence_floor(level: float) -> float:
    """The least evidence ``n · kl(w/n, ½)`` (nats) at which an edge at ``level`` can be
    drawn: :func:`crossed` implies ``n · kl(w/n, ½) ≥`` this, at any ``n``. A cheap
    necessary condition, for the per-comparison check and for the live credit path's
    guard (:meth:`bandits.sparring_certifier.SparringCertifier.volatility`).

    Why it is computable: with ``p = w/n`` each bet's log-capital is ``n (kl(p, ½) −
    kl(p, θ_k))``, so with ``u = n kl(p, ½)`` the crossing condition is
    ``F(u) = u + log Σ_k exp(−u ρ_k) − log D − log(1/level) ≥ 0``, ``ρ_k = kl(p, θ_k) /
    kl(p, ½)``: convex in ``u`` and negative at 0, so for each ``p`` the evidence needed is
    one root ``u*(p)``. The floor is the least root over a fine grid of ``p`` (1,000 gaps,
    log-spaced; ``u*`` moves by about 10⁻³ nats between neighbours), less 0.01 nats.
    About ``log(1/level) + 2.1`` (K = 2) to ``+ 2.5`` (K = 136).

    >>> round(evidence_floor(0.025), 2), round(evidence_floor(0.05 / 270), 2)
    (5.8, 11.09)
    """
    big = math.log(1.0 / level)
    gaps = np.geomspace(BET_GAPS[-1] / 4.0, 0.5 - 1e-9, 1000)
    p = 0.5 + gaps
    theta = 0.5 + BET_GAPS
    with np.errstate(divide="ignore"):
        kl_pt = (p[:, None] * np.log(p[:, None] / theta[None, :])
                 + (1.0 - p[:, None]) * np.log((1.0 - p[:, None]) / (1.0 - theta[None, :])))
    rho = kl_pt / _kl_half(p)[:, None]
    top = big + _LOG_D + 80.0

    def f(u: np.ndarray) -> np.ndarray:
        e = -u[:, None] * rho
        m = e.max(axis=1)
        return u + m + np.log(np.exp(e - m[:, None]).sum(axis=1)) - _LOG_D - big

    lo, hi = np.zeros(p.size), np.full(p.size, top)
    reach = f(hi) >= 0
    for _ in range(44):
        mid = 0.5 * (lo + hi)
        up = f(mid) >= 0
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    return float(np.where(reach, hi, top).min()) - 0.01


def crossed(w: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """Whether ``w`` wins in ``n`` comparisons draw the edge at ``level``: the mixture's
    log-capital reaches ``log(1/level)`` (module docstring).

    >>> crossed(np.array([60.0, 580.0]), np.array([100.0, 1000.0]), 0.05 / 8).tolist()
    [False, True]
    """
    w = np.asarray(w, dtype=float)
    n = np.asarray(n, dtype=float)
    w, n = np.broadcast_arrays(w, n)
    s = w - n / 2.0
    # kl(p, ½) ≤ 4(p − ½)²: the evidence floor needs 4 s² ≥ n · floor (cheap, exact maths)
    maybe = (n > 0) & (s > 0) & (4.0 * s * s >= n * evidence_floor(level))
    out = np.zeros(w.shape, dtype=bool)
    if maybe.any():
        out[maybe] = log_wealth(w[maybe], n[maybe]) >= math.log(1.0 / level)
    return out


class EdgeTest:
    """:func:`crossed` for one pair at a time in plain floats, with the level's constants
    computed once: O(1), a few flops unless the pair has the evidence floor
    (:func:`evidence_floor`), then one mixture of 20 bets. What a policy calls after
    every comparison.

    >>> t = EdgeTest(0.025)
    >>> t.crossed(30.0, 50.0), t.crossed(37.0, 50.0), t.crossed(13.0, 50.0)
    (False, True, False)
    """

    __slots__ = ("big", "floor", "level")

    def __init__(self, level: float) -> None:
        self.level = float(level)
        self.big = math.log(1.0 / self.level)
        self.floor = evidence_floor(self.level)

    def crossed(self, w: float, n: float) -> bool:
        """Whether ``w`` wins in ``n`` comparisons draw the edge (:func:`crossed`)."""
        s = w - 0.5 * n
        if s <= 0.0 or 4.0 * s * s < n * self.floor:
            return False
        p = w / n
        if p >= 1.0:
            ev = n * _LN2
        else:
            ev = n * (p * math.log(2.0 * p) + (1.0 - p) * math.log(2.0 * (1.0 - p)))
        return ev >= self.floor and _log_wealth_one(w, n) >= self.big


_LN2 = math.log(2.0)

#: how far (nats) below ``log(1/level)`` the credit path's guard fires
#: (:func:`guard_bounds`): its copy in Lua (``service/store/guard.lua``) computes the bets'
#: constants and logarithms itself and may round a few ulps apart from this module
GUARD_SLACK = 1e-7


def guard_bounds(level: float) -> tuple[float, float]:
    """The two numbers the credit path's guard needs to tell whether an outcome can draw
    an edge at ``level`` (:func:`may_cross`): ``log(1/level)`` less :data:`GUARD_SLACK`,
    and the evidence floor (:func:`evidence_floor`, already 0.01 nats under the least
    crossing)."""
    return math.log(1.0 / float(level)) - GUARD_SLACK, evidence_floor(float(level))


def may_cross(w_ij: float, w_ji: float, big: float, floor: float) -> bool:
    """Whether the counts ``w_ij``, ``w_ji`` of a pair draw the edge, either side, with
    ``big``, ``floor`` from :func:`guard_bounds`: what the policy's own check after every
    comparison (:meth:`EdgeTest.crossed`) can conclude, a hair looser. The credit path's
    guard (:class:`service.credit.guard.Guard`; its Lua twin in
    ``service/store/guard.lua``) holds an outcome whose new counts pass this, so it holds
    every crossing and, within :data:`GUARD_SLACK`, nothing else.

    >>> b, f = guard_bounds(0.025)
    >>> may_cross(37.0, 13.0, b, f), may_cross(13.0, 37.0, b, f), may_cross(30.0, 20.0, b, f)
    (True, True, False)
    """
    w = max(w_ij, w_ji)
    n = w_ij + w_ji
    s = w - 0.5 * n
    if s <= 0.0 or 4.0 * s * s < n * floor:
        return False
    return _log_wealth_one(w, n) >= big


def boundary(n: np.ndarray, level: float) -> np.ndarray:
    """The evidence ``S_n = w − n/2`` that an edge needs after ``n`` comparisons to be
    drawn at ``level`` (the least ``w`` with :func:`crossed`, less ``n/2``; ``inf`` when
    even ``n`` wins of ``n`` do not draw it). Newton's method from ``w = n`` (``log M``
    is convex in ``w``), so the value is at or just above the exact root.

    >>> [round(float(b), 1) for b in boundary(np.array([100.0, 10000.0]), 0.05 / 8)]
    [19.0, 191.7]
    """
    n = np.asarray(n, dtype=float)
    big = math.log(1.0 / level)
    w = n.copy()
    ok = (n > 0) & (log_wealth(w, n) >= big)
    for _ in range(60):
        comp = w[..., None] * _WIN + (n - w)[..., None] * _LOSS
        top = comp.max(axis=-1)
        e = np.exp(comp - top[..., None])
        f = top + np.log(e.sum(axis=-1)) - _LOG_D - big
        slope = (e * (_WIN - _LOSS)).sum(axis=-1) / e.sum(axis=-1)
        step = np.where(ok, f / slope, 0.0)
        w = w - step
        if np.all(np.abs(step) < 1e-9):
            break
    return np.where(ok, w - n / 2.0, np.inf)


def shown_worse(W: np.ndarray, arms: list[int] | np.ndarray, delta: float,
                candidates: list[int] | np.ndarray | None = None) -> dict[int, int]:
    """The rankers of ``candidates`` (default: all of ``arms``) shown worse at ``1 − δ``
    by some ranker of ``arms``: ``{ranker: witness}``, the witness being the ranker with
    the most evidence against it (the largest log-capital). ``K = W.shape[0]`` (every
    ranker ever in the run) sets the per-edge level."""
    idx = np.asarray(arms, dtype=np.intp)
    cand = idx if candidates is None else np.asarray(candidates, dtype=np.intp)
    if idx.size == 0 or cand.size == 0 or (idx.size == 1 and candidates is None):
        return {}
    w = W[np.ix_(idx, cand)]            # w[x, y]: wins of arms[x] over cand[y]
    n = np.rint(w + W[np.ix_(cand, idx)].T)
    level = per_edge_level(W.shape[0], delta)
    hit = crossed(w, n, level)
    hit[idx[:, None] == cand[None, :]] = False
    if not hit.any():
        return {}
    score = np.full(w.shape, -np.inf)
    score[hit] = log_wealth(w[hit], n[hit])
    best = score.argmax(axis=0)
    return {int(cand[y]): int(idx[best[y]]) for y in np.flatnonzero(hit.any(axis=0))}


def any_may_cross(W: np.ndarray, arms: list[int], delta: float) -> bool:
    """Whether some pair of ``arms`` passes :func:`crossed`'s first test (the evidence
    floor) in :func:`shown_worse`: the same operations on the same counts in plain
    floats, so False means :func:`shown_worse` of ``arms`` against themselves is ``{}``.
    O(K²) flops without numpy: what the periodic sweep over a few arms asks first.

    >>> W = np.array([[0, 700, 800], [300, 0, 500], [200, 500, 0]], dtype=float)
    >>> any_may_cross(W, [0, 1, 2], 0.05), any_may_cross(W, [1, 2], 0.05)
    (True, False)
    """
    floor = evidence_floor(per_edge_level(W.shape[0], delta))
    rows = {a: W[a].tolist() for a in arms}
    for x in arms:
        row = rows[x]
        for y in arms:
            if x != y:
                w = row[y]
                n = float(round(w + rows[y][x]))  # np.rint (half to even)
                s = w - n / 2.0
                if n > 0 and s > 0 and 4.0 * s * s >= n * floor:
                    return True
    return False


def certified_best(W: np.ndarray, arms: list[int] | np.ndarray, delta: float,
                   worse: dict[int, int] | None = None) -> int | None:
    """The ranker certified the best of ``arms`` at ``1 − δ`` (every other one shown
    worse), or None. ``worse`` may pass the rankers already shown worse (edges are kept
    once drawn)."""
    idx = [int(a) for a in arms]
    known = dict(worse or {})
    rest = [a for a in idx if a not in known]
    if len(rest) > 1:
        known.update(shown_worse(W, idx, delta, rest))
        rest = [a for a in idx if a not in known]
    return rest[0] if len(rest) == 1 and len(idx) > 1 else None


def meaning(delta: float) -> str:
    """What the confidence means, in one sentence a product manager can read."""
    pct = f"{100.0 * float(delta):g}%"
    per = round(1.0 / float(delta)) if delta > 0 else 0
    return (f"rankduel names a best ranker only when the evidence is strong enough that "
            f"such a call would be wrong in at most {pct} of experiments (1 in {per}), "
            f"however long the experiment runs and however often its report is read; "
            f"a ranker 'shown worse' is, with the same confidence, not the best one")
