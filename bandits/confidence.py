"""Verdicts with a stated, anytime-valid error rate δ: which rankers are *shown worse*
at ``1 − δ``, and whether a champion is *certified* the best.

Pure numpy. The one boundary used is the normal-mixture edge test of
:mod:`bandits.condorcet_check` (Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon 2021,
§3.2), reused here at a per-edge level chosen for verdicts; this module adds the
union argument that makes a verdict, not one test, wrong with probability at most δ.

The edge (the boundary)
-----------------------
Rankers ``i`` and ``j`` compared ``n = w_ij + w_ji`` times: each outcome lies in [0, 1]
with mean ``p_ij`` whatever adaptive rule chose when to compare them. With
``S_n = w_ij − n/2`` and ``p_ij ≤ ½``, ``exp(λ S_n − λ² n/8)`` is a nonnegative
supermartingale for every ``λ > 0`` (Hoeffding's lemma), and so is its average over a
half-normal mixing law on ``λ``; Ville's inequality bounds the chance that it *ever*
reaches ``1/a`` by ``a``, so the edge "``i`` beats ``j``",

    S_n ≥ sqrt( 2 (n/4 + ρ) · ( log(1/a) + ½ log(1 + n/(4ρ)) ) )      (:func:`boundary`)

is drawn wrongly (``p_ij ≤ ½``), at any step of a run of any length, with probability at
most ``a``. It is checked as often as one likes (every check is a stopping time), and
an edge once drawn is kept.

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
"""

from __future__ import annotations

import numpy as np

from bandits import condorcet_check

#: the default error rate of a verdict
DEFAULT_ERROR_RATE = 0.05


def per_edge_level(n_arms: int, delta: float) -> float:
    """``δ / (2(K − 1))``: the level of each edge, so that the union of the module
    docstring bounds a wrong verdict by δ, with a Condorcet winner or with tied best."""
    return float(delta) / (2.0 * max(int(n_arms) - 1, 1))


def boundary(n: np.ndarray, level: float) -> np.ndarray:
    """The evidence ``S_n = w − n/2`` that an edge needs after ``n`` comparisons, drawn
    wrongly at most with probability ``level`` over a whole run (the normal mixture of
    :func:`bandits.condorcet_check.edge_radius`, which this calls: one boundary in the
    project). ``inf`` at ``n = 0``.

    >>> [round(float(b), 1) for b in boundary(np.array([100.0, 10000.0]), 0.05 / 8)]
    [20.0, 198.4]
    """
    n = np.asarray(n, dtype=float)
    # edge_radius(n, n_arms, δ) uses log((n_arms − 1)/δ): n_arms = 2 gives log(1/level)
    return condorcet_check.edge_radius(n, 2, level) * np.maximum(n, 1.0)


def crossed(w: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """Whether ``w`` wins in ``n`` comparisons cross :func:`boundary` (the edge is drawn).

    >>> crossed(np.array([60.0, 600.0]), np.array([100.0, 1000.0]), 0.05 / 8).tolist()
    [False, True]
    """
    w = np.asarray(w, dtype=float)
    n = np.asarray(n, dtype=float)
    return (n > 0) & (w - n / 2.0 >= boundary(n, level))


def shown_worse(W: np.ndarray, arms: list[int] | np.ndarray, delta: float,
                candidates: list[int] | np.ndarray | None = None) -> dict[int, int]:
    """The rankers of ``candidates`` (default: all of ``arms``) shown worse at ``1 − δ``
    by some ranker of ``arms``: ``{ranker: witness}``, the witness being the ranker with
    the most evidence against it. ``K = W.shape[0]`` (every ranker ever in the run) sets
    the per-edge level."""
    idx = np.asarray(arms, dtype=np.intp)
    cand = idx if candidates is None else np.asarray(candidates, dtype=np.intp)
    if idx.size == 0 or cand.size == 0 or (idx.size == 1 and candidates is None):
        return {}
    w = W[np.ix_(idx, cand)]            # w[x, y]: wins of arms[x] over cand[y]
    n = w + W[np.ix_(cand, idx)].T
    level = per_edge_level(W.shape[0], delta)
    with np.errstate(invalid="ignore"):
        excess = np.where(n > 0, (w - n / 2.0) - boundary(n, level), -np.inf)
    excess[idx[:, None] == cand[None, :]] = -np.inf
    best = excess.argmax(axis=0)
    hit = excess[best, np.arange(cand.size)] >= 0
    return {int(cand[y]): int(idx[best[y]]) for y in np.flatnonzero(hit)}


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
