"""Estimate a preference matrix by simulated interleaved comparisons.

The papers' proxy method (MergeDTS, Li et al. 2020, §5.3, after Zoghi et al. WSDM 2015): for
every pair of rankers run many interleaved comparisons on queries drawn at random, with
clicks from a click model, and take ``p_ij`` = the fraction of comparisons ranker ``i``
won (a tie counts ½). The dueling-bandit simulator then draws Bernoulli(``p_ij``)
outcomes from the matrix instead of re-running the interleaving.

Decisions:

* A comparison without clicks is no duel (as in the live service) and is not counted;
  ``p_ij`` is the mean outcome over comparisons with at least one click. Marginalizing
  methods contribute their expected outcome. A pair that never drew a click gets ½.
* The matrix is complementary by construction: ``p_ji = 1 - p_ij``, diagonal ½.
* Pairs are processed in chunks of :data:`CHUNK_PAIRS`, each with its own seed drawn
  from ``rng``; within a chunk all comparisons run in vectorized batches of
  ``batch_size`` rows (:mod:`interleaving.batch`). The result depends on the seed and
  the batch size only — not on how many processes (``jobs``) share the chunks.

Examples
--------
>>> from interleaving.world import World
>>> w = World(seed=1, n_rankers=3, n_queries=30, clear_best=True)
>>> P = estimate_matrix(w, "probabilistic", "navigational", 300, np.random.default_rng(0))
>>> bool(np.allclose(P + P.T, 1.0)), P.shape
(True, (3, 3))
>>> bool(all(P[w.true_best, j] > 0.5 for j in range(3) if j != w.true_best))
True
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np

from interleaving.batch import ENGINES, prepare, take_prep
from interleaving.clicks import ClickModel, get_click_model

#: pairs per independently seeded chunk; chunks are the unit of parallel work, and
#: fixing their size makes the result independent of the number of processes
CHUNK_PAIRS = 32


def estimate_pairs(
    world,
    method: str,
    model: ClickModel,
    comparisons: int,
    rng: np.random.Generator,
    ii: np.ndarray,
    jj: np.ndarray,
    *,
    k: int = 10,
    batch_size: int = 100_000,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Summed outcomes and numbers of clicked comparisons for the pairs ``(ii, jj)``.

    All comparisons of all pairs are laid end to end and run in vectorized batches of
    ``batch_size`` rows; when a batch holds many comparisons of the same (pair, query),
    the pair's shared structure is prepared once per query.
    """
    mix, credit = ENGINES[method]
    top = world.top_k(k)
    grade_table = world.grade_table
    Q = world.n_queries
    n_pairs = len(ii)
    wins = np.zeros(n_pairs)
    counts = np.zeros(n_pairs)
    total = n_pairs * comparisons
    for start in range(0, total, batch_size):
        stop = min(start + batch_size, total)
        pair = np.arange(start, stop) // comparisons
        q = rng.integers(Q, size=stop - start)
        first, last = int(pair[0]), int(pair[-1])
        if (last - first + 1) * Q < stop - start:
            a_all = top[ii[first : last + 1]].reshape(-1, k)
            b_all = top[jj[first : last + 1]].reshape(-1, k)
            row = (pair - first) * Q + q
            A, B = a_all[row], b_all[row]
            prep = take_prep(prepare(a_all, b_all), row)
        else:
            A, B = top[ii[pair], q], top[jj[pair], q]
            prep = prepare(A, B)
        shown, info = mix(A, B, rng, prep)
        grades = np.where(shown >= 0, grade_table[q[:, None], np.maximum(shown, 0)], -1)
        clicks = model.clicks_batch(grades, rng)
        clicked = clicks.any(axis=1)
        s = credit(info, clicks)
        wins += np.bincount(pair, weights=np.where(clicked, s, 0.0), minlength=n_pairs)
        counts += np.bincount(pair, weights=clicked, minlength=n_pairs)
        if progress is not None:
            progress(stop - start)
    return wins, counts


def _chunk(args: tuple[Any, ...]) -> tuple[int, np.ndarray, np.ndarray]:
    """Worker-process entry: one chunk of pairs with its own seed."""
    index, world, method, model, comparisons, seed, ii, jj, k, batch_size = args
    wins, counts = estimate_pairs(
        world, method, model, comparisons, np.random.default_rng(seed), ii, jj,
        k=k, batch_size=batch_size,
    )
    return index, wins, counts


def estimate_matrix(
    world,
    method: str,
    click_model: str | ClickModel,
    comparisons: int,
    rng: np.random.Generator,
    *,
    k: int = 10,
    batch_size: int = 100_000,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    return_counts: bool = False,
):
    """The K×K preference matrix of ``world``'s rankers.

    Parameters
    ----------
    world
        A :class:`interleaving.world.World` (anything with ``n_rankers``, ``n_queries``,
        ``top_k(k)`` and ``grade_table``).
    method
        Any name in :data:`interleaving.METHODS` (multileaving methods run on pairs).
    click_model
        A name in :data:`interleaving.clicks.CLICK_MODELS` or a model object.
    comparisons
        Simulated comparisons per pair of rankers.
    rng
        Seeds every chunk of :data:`CHUNK_PAIRS` pairs.
    k
        Page length (each ranker contributes its top ``k``).
    batch_size
        Comparisons per vectorized batch (memory ~ 1 KB per row).
    jobs
        Worker processes; the result does not depend on it.
    progress
        Called with the number of comparisons finished, as they finish.
    return_counts
        Also return the (K, K) number of comparisons with clicks behind each entry.
    """
    if method not in ENGINES:
        raise ValueError(
            f"unknown interleaving method {method!r}; choose from {', '.join(ENGINES)}"
        )
    model = get_click_model(click_model) if isinstance(click_model, str) else click_model
    comparisons = int(comparisons)
    if comparisons < 1:
        raise ValueError(f"comparisons must be at least 1, got {comparisons}")
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    batch_size = max(1, int(batch_size))
    R = world.n_rankers
    ii, jj = np.triu_indices(R, k=1)
    n_pairs = ii.size
    starts = list(range(0, n_pairs, CHUNK_PAIRS))
    seeds = rng.integers(2**63, size=len(starts))
    wins = np.zeros(n_pairs)
    counts = np.zeros(n_pairs)
    tasks = [
        (c, world, method, model, comparisons, int(seeds[c]), ii[a : a + CHUNK_PAIRS],
         jj[a : a + CHUNK_PAIRS], int(k), batch_size)
        for c, a in enumerate(starts)
    ]
    if int(jobs) <= 1 or len(tasks) <= 1:
        for task in tasks:
            a = starts[task[0]]
            w, n = estimate_pairs(
                world, method, model, comparisons, np.random.default_rng(task[5]),
                task[6], task[7], k=int(k), batch_size=batch_size, progress=progress,
            )
            wins[a : a + len(w)], counts[a : a + len(w)] = w, n
    else:
        with ProcessPoolExecutor(max_workers=int(jobs)) as pool:
            futures = [pool.submit(_chunk, task) for task in tasks]
            for future in as_completed(futures):
                c, w, n = future.result()
                a = starts[c]
                wins[a : a + len(w)], counts[a : a + len(w)] = w, n
                if progress is not None:
                    progress(len(w) * comparisons)
    p = np.where(counts > 0, wins / np.maximum(counts, 1), 0.5)
    P = np.full((R, R), 0.5)
    P[ii, jj] = p
    P[jj, ii] = 1.0 - p
    if return_counts:
        N = np.zeros((R, R))
        N[ii, jj] = N[jj, ii] = counts
        return P, N
    return P
