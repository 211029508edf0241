"""An anytime-valid test that the comparison counts contradict a Condorcet winner.

Pure numpy, usable by any policy (or offline on a stored ``W``).

The test
--------
For a pair ``(i, j)`` compared ``n = w_ij + w_ji`` times, the outcomes of its comparisons
are i.i.d. in [0, 1] with mean ``p_ij`` whatever rule chose *when* to compare them, so
Hoeffding's inequality holds for the first ``n`` of them at every fixed ``n``. A union
bound over the ``P = K(K-1)/2`` pairs and over ``n = 1, 2, ...`` with weights
``1/(n(n+1))`` (they sum to 1) gives the radius

    r(n) = sqrt( log(2 P n (n+1) / δ) / (2 n) )

and the guarantee: with probability at least ``1 - δ``, *over the whole run* (any number
of steps, any adaptive sampling), ``|w_ij/n - p_ij| < r(n)`` for every pair and every
``n`` at once. An edge "``i`` beats ``j`` with confidence" is ``w_ij/n - r(n) > ½``.

A Condorcet winner beats every other arm, so it is beaten by no one. The test flags when
**every** non-retired arm is beaten with confidence by some arm: on that event, if all
the confident edges are right (probability ≥ 1 − δ), no arm beats all the others. So on
an instance that has a Condorcet winner the flag is raised, ever, with probability at
most δ. The evidence names, for each arm, one arm that beats it (its *witness*); following
witnesses from any arm must close a cycle, which is reported as the human-readable
evidence (for the Merge policies: a cycle among survivors, or an eliminated arm beating
the champion).

``K`` in ``P`` is the number of arms the test ranges over; when arms are added later the
union bound grows, so callers pass the current count (the guarantee then holds for the
largest field, conservatively).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: the default false-flag rate over a whole run
DEFAULT_DELTA = 0.01


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


def confident_beats(W: np.ndarray, arms: list[int] | np.ndarray, delta: float) -> np.ndarray:
    """Boolean matrix over ``arms``: ``B[a, b]`` iff ``arms[a]`` beats ``arms[b]`` with
    confidence (the lower bound of ``p`` above ½, every pair in one union bound)."""
    idx = np.asarray(arms, dtype=np.intp)
    k = idx.size
    sub = W[np.ix_(idx, idx)]
    n = sub + sub.T
    r = radius(n, k * (k - 1) // 2, delta)
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
    W: np.ndarray, champion: int, others: list[int], n_arms: int, delta: float = DEFAULT_DELTA
) -> list[int]:
    """The arms of ``others`` that beat ``champion`` with confidence (same union bound
    as :func:`check` over ``n_arms`` arms)."""
    if not others:
        return []
    o = np.asarray(others, dtype=np.intp)
    w = W[o, champion]
    n = w + W[champion, o]
    r = radius(n, n_arms * (n_arms - 1) // 2, delta)
    lower = np.where(n > 0, w / np.maximum(n, 1e-300), 0.0) - r
    return [int(a) for a in o[lower > 0.5]]
