"""How the Merge policies partition the arms into batches: pure functions on lists of arm
indices, shared by MergeDTS (Li et al. 2020, Algorithm 1) and MergeRUCB (Zoghi 2017, Algorithm 4).

:func:`initial_batches`
    the first stage's batches (Li et al. 2020, Alg. 1 line 4; Zoghi 2017, Alg. 4 line 2), filled
    as evenly as possible;
:func:`pair_batches`
    the repartition at the end of a stage (Li et al. 2020, Alg. 1 line 19; Zoghi 2017, Alg. 4
    line 13), every size in ``[0.5M, 1.5M]`` (:func:`batch_bounds`);
:func:`split_evenly`
    consecutive batches whose sizes differ by at most one.

The framework that applies them (when a stage ends, how an emptied batch merges) is
:class:`bandits.merge_base.MergeBandit`.
"""

from __future__ import annotations

import math


def split_evenly(arms: list[int], n_batches: int) -> list[list[int]]:
    """``arms`` in ``n_batches`` consecutive batches whose sizes differ by at most one.

    Examples
    --------
    >>> split_evenly(list(range(7)), 3)
    [[0, 1, 2], [3, 4], [5, 6]]
    >>> split_evenly([4, 5], 5)  # never more batches than arms
    [[4], [5]]
    """
    n_batches = max(1, min(int(n_batches), len(arms)))
    q, r = divmod(len(arms), n_batches)
    out, start = [], 0
    for k in range(n_batches):
        size = q + (1 if k < r else 0)
        out.append(list(arms[start : start + size]))
        start += size
    return out


def initial_batches(n_arms: int, batch_size: int, *, round_up: bool = True) -> list[list[int]]:
    """The batches ``B_1`` of the first stage: ``b_1`` batches of the arms ``0..K-1``.

    ``b_1 = ceil(K/M)`` (MergeDTS, Li et al. 2020, Algorithm 1 line 4) or, with
    ``round_up=False``, ``max(1, floor(K/p))`` (MergeRUCB, Zoghi 2017, Algorithm 4 line 2).
    The papers fill ``M, M, ..., rest``; we fill as evenly as possible (sizes differ by
    at most one), so no batch starts tiny (a one-arm batch would merge away at once under
    Li et al. 2020's lines 12–13 anyway).

    Examples
    --------
    >>> initial_batches(10, 4)
    [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    >>> initial_batches(10, 4, round_up=False)
    [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    >>> initial_batches(3, 4, round_up=False)
    [[0, 1, 2]]
    """
    nb = math.ceil(n_arms / batch_size) if round_up else max(1, n_arms // batch_size)
    return split_evenly(list(range(n_arms)), nb)


def batch_bounds(batch_size: int) -> tuple[int, int]:
    """The integer sizes allowed after a stage merge: ``[ceil(M/2), floor(3M/2)]``.

    Examples
    --------
    >>> batch_bounds(16), batch_bounds(5)
    ((8, 24), (3, 7))
    """
    return math.ceil(batch_size / 2), (3 * batch_size) // 2


def pair_batches(batches: list[list[int]], batch_size: int) -> list[list[int]]:
    """Repartition the batches at the end of a stage (Li et al. 2020, Alg. 1 line 19; Zoghi 2017
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
