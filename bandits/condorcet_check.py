"""An anytime-valid test that the comparison counts contradict a Condorcet winner.

Pure numpy, usable by any policy (or offline on a stored ``W``).

The test
--------
For a pair ``(i, j)`` compared ``n = w_ij + w_ji`` times, the outcomes of its comparisons
are independent in [0, 1] with mean ``p_ij`` whatever rule chose *when* to compare them.
Write ``S_n = w_ij − n/2``. When ``p_ij ≤ ½``, Hoeffding's lemma makes
``exp(λ S_n − λ² n / 8)`` a nonnegative supermartingale for every ``λ > 0``, and so is its
average over a half-normal prior on ``λ`` (variance ``1/ρ``). Ville's inequality bounds
the chance that the average *ever* reaches ``1/α`` by ``α``; the average is at least the
closed form of the two-sided normal mixture (Robbins 1970; Howard et al. 2021),
so the edge "``i`` beats ``j`` with confidence" is

    S_n ≥ sqrt( 2 (n/4 + ρ) · ( log(1/α) + ½ log(1 + n/(4ρ)) ) ),

that is ``w_ij/n − r(n) > ½`` with ``r(n)`` that boundary over ``n``
(:func:`edge_radius`). With probability at least ``1 − α`` the edge is never drawn
wrongly, over the whole run (any number of steps, any adaptive sampling). The boundary
grows like ``sqrt(n log n)``, where a Hoeffding radius with a union bound over every
``n`` grows like ``sqrt(n · 2 log n)`` and pays ``log`` of the number of pairs on top:
at ``K = 64`` and ``δ = 0.01`` an edge of gap 0.005 is drawn after 263,000 comparisons
instead of 802,000, one of gap 0.1 after 542 instead of 1,368. With ``ρ = 10`` the
boundary is below that Hoeffding radius at every ``n > 35`` (any ``K``, ``δ = 0.01``;
``n > 116`` down to ``δ = 10⁻¹²``), so no edge is drawn later than before except
among the first few dozen comparisons of a pair.

A Condorcet winner ``c`` beats every other arm, so it is beaten by no one. The test
flags when **every** non-retired arm is beaten with confidence by some arm. On an
instance with a Condorcet winner a flag needs a wrong edge into ``c``: one of its
``K − 1`` pairs. Each edge is drawn at ``α = δ / (K − 1)``, so the flag is raised, ever,
with probability at most ``δ`` — a union bound over ``c``'s row only, not over all
``K(K−1)/2`` pairs, since no other edge can make a flag false. The evidence names, for
each arm, one arm that beats it (its *witness*); following witnesses from any arm must
close a cycle, which is reported as the human-readable evidence (for the Merge
policies: a cycle among survivors, or an eliminated arm beating the champion).

``K`` is the number of arms of ``W`` (every arm ever in the experiment, retired ones
included), so retiring an arm never loosens the test. Arms added mid-run raise ``K`` and
tighten it for every pair; the bound ``δ`` is then exact for the final field only if its
arms were all there from the start, and at most ``δ (K_final − 1)/(K_first − 1)``
otherwise.

:func:`radius` is the older Hoeffding form with a union bound over all pairs and all
``n``. The verification schedule (:mod:`bandits.verification`) still uses it to decide
when the champion has refuted an arm, so that the policies' regret on Condorcet
instances is what it was; an arm that beats the champion stops being compared only once
this test holds the edge too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: the default false-flag rate over a whole run
DEFAULT_DELTA = 0.01
#: the mixture's ρ (in units of the variance bound ``n/4``): 10 keeps the boundary below
#: the Hoeffding radius from n = 36 on; ρ = 100 would draw the edges of the near-ties
#: (gap ≤ 0.01) 5-8 % sooner and those of wide gaps (≥ 0.1) 1.3-2× later
MIXTURE_RHO = 10.0


def radius(n: np.ndarray, n_pairs: int, delta: float) -> np.ndarray:
    """Anytime Hoeffding radius for ``n`` comparisons of one of ``n_pairs`` pairs.

    Examples
    --------
    >>> round(float(radius(np.array([1000.0]), 10, 0.01)[0]), 4)
    0.1035
    """
    n = np.asarray(n, dtype=float)
    safe = np.maximum(n, 1.0)
    log_term = math.log(2.0 * max(n_pairs, 1) / delta) + np.log(safe) + np.log(safe + 1.0)
    r = np.sqrt(log_term / (2.0 * safe))
    return np.where(n > 0, r, np.inf)


def edge_radius(n: np.ndarray, n_arms: int, delta: float) -> np.ndarray:
    """Anytime radius of one edge of the test (module docstring): ``i`` beats ``j`` with
    confidence when ``w_ij/n − edge_radius(n) > ½``, each edge wrong with probability at
    most ``δ/(n_arms − 1)`` over the whole run.

    Examples
    --------
    >>> [round(float(r), 4) for r in edge_radius(np.array([1000.0, 100000.0]), 64, 0.01)]
    [0.0735, 0.008]
    """
    n = np.asarray(n, dtype=float)
    safe = np.maximum(n, 1.0)
    v = safe / 4.0
    log_term = (math.log(max(n_arms - 1, 1) / delta)
                + 0.5 * np.log1p(v / MIXTURE_RHO))
    r = np.sqrt(2.0 * (v + MIXTURE_RHO) * log_term) / safe
    return np.where(n > 0, r, np.inf)


def confident_beats(W: np.ndarray, arms: list[int] | np.ndarray, delta: float) -> np.ndarray:
    """Boolean matrix over ``arms``: ``B[a, b]`` iff ``arms[a]`` beats ``arms[b]`` with
    confidence (:func:`edge_radius` over the ``W.shape[0]`` arms of ``W``)."""
    idx = np.asarray(arms, dtype=np.intp)
    sub = W[np.ix_(idx, idx)]
    n = sub + sub.T
    r = edge_radius(n, W.shape[0], delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(n > 0, sub / np.maximum(n, 1e-300), 0.0) - r
    return lower > 0.5


def check(
    W: np.ndarray,
    arms: list[int] | np.ndarray,
    delta: float = DEFAULT_DELTA,
) -> dict[str, Any]:
    """Whether the counts ``W`` over ``arms`` contradict a Condorcet winner at level δ.

    Returns ``{"flagged": bool, "unbeaten": [arms not yet beaten with confidence],
    "cycle": [a, b, ..., a] or []}``: when flagged, ``cycle`` is a cycle of confident
    edges, each arm beaten by the next (``cycle[i+1]`` beats ``cycle[i]``).

    Examples
    --------
    >>> W = np.array([[0, 900, 100], [100, 0, 900], [900, 100, 0]], dtype=float)
    >>> check(W, [0, 1, 2])["flagged"], check(W, [0, 1, 2])["cycle"]
    (True, [0, 2, 1, 0])
    >>> check(W.T.copy(), [0, 1, 2])["flagged"]  # the reversed cycle is a cycle too
    True
    >>> W[2, 0], W[0, 2] = 100, 900  # now 0 beats 1 and 2: a Condorcet winner
    >>> check(W, [0, 1, 2])
    {'flagged': False, 'unbeaten': [0], 'cycle': []}
    """
    idx = np.asarray(arms, dtype=np.intp)
    if idx.size < 3:
        return {"flagged": False, "unbeaten": idx.tolist(), "cycle": []}
    B = confident_beats(W, idx, delta)
    beaten = B.any(axis=0)
    unbeaten = idx[~beaten].tolist()
    if unbeaten:
        return {"flagged": False, "unbeaten": [int(a) for a in unbeaten], "cycle": []}
    # every arm has a witness: follow witnesses until an arm repeats
    witness = B.argmax(axis=0)  # witness[b] beats b
    seen: dict[int, int] = {}
    path: list[int] = []
    a = 0
    while a not in seen:
        seen[a] = len(path)
        path.append(a)
        a = int(witness[a])
    loop = [*path[seen[a]:], a]
    return {"flagged": True, "unbeaten": [], "cycle": [int(idx[x]) for x in loop]}


def beats_champion(
    W: np.ndarray, champion: int, others: list[int], delta: float = DEFAULT_DELTA
) -> list[int]:
    """The arms of ``others`` that beat ``champion`` with confidence (the edges of
    :func:`check`)."""
    if not others:
        return []
    o = np.asarray(others, dtype=np.intp)
    w = W[o, champion]
    n = w + W[champion, o]
    r = edge_radius(n, W.shape[0], delta)
    lower = np.where(n > 0, w / np.maximum(n, 1e-300), 0.0) - r
    return [int(a) for a in o[lower > 0.5]]


#: at most this many arms the guard first looks for an arm surely unbeaten in plain
#: floats (:func:`surely_unbeaten`); above it the numpy test runs directly
SCALAR_ARMS = 24


def surely_unbeaten(W: np.ndarray, arm: int, others: list[int], delta: float) -> bool:
    """Whether no arm of ``others`` can beat ``arm`` with confidence (:func:`edge_radius`
    over ``W.shape[0]`` arms): a necessary condition of an edge, in plain floats, so
    that the guard's usual case (some arm unbeaten, no flag) costs O(K) flops instead of
    the numpy test. True only when :func:`beats_champion` would return ``[]``.

    Why it is sound: an edge of ``b`` over ``a`` needs ``g = w_ba/n − ½ > r(n)``, and
    ``r(n) ≥ √(2(n/4 + ρ)·L₀)/n`` with ``L₀ = log((K − 1)/δ)`` (the ``½ log(1 + n/4ρ)``
    term is ≥ 0; ``n`` is ``max(n, 1)`` as there); this tests ``g² n² > 2(n/4 + ρ)·L₀``
    with 0.1 % to spare for rounding, so an arm it calls unbeaten is unbeaten.

    >>> W = np.array([[0, 60, 90], [40, 0, 50], [10, 50, 0]], dtype=float)
    >>> surely_unbeaten(W, 0, [1, 2], 0.01), surely_unbeaten(W, 2, [0, 1], 0.01)
    (True, False)
    >>> beats_champion(W, 2, [0, 1], 0.01)
    [0]
    """
    need = 0.999 * 2.0 * math.log(max(W.shape[0] - 1, 1) / delta)
    col, row = W[:, arm].tolist(), W[arm].tolist()
    for b in others:
        w = col[b]
        n = w + row[b]
        if n > 0.0:
            g = w / n - 0.5
            safe = max(n, 1.0)
            if g > 0.0 and g * g * safe * safe > (safe / 4.0 + MIXTURE_RHO) * need:
                return False
    return True
