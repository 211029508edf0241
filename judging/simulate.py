"""The judging simulator: Yan 2022's Figure 4.1 experiment, as pure functions.

A run shuffles the pool, hands the algorithm's pairs to simulated assessors in tasks of
``batch`` pairs (a live campaign hands out ten), draws each judgment from the preference
matrix and feeds it back, until the algorithm is done; then it scores the returned set
against the known winners. Yan 2022, §4: "I treat T=1000 as a fixed budget and halt
simulations after 1,000 comparisons" and "I determined the maximum number of independent
assessors according to the number of times the simulation requested a judgment for each
specific pair".

The cases (Yan 2022, §4, K = 100, items 0..99):

* **Case A** (total order, no ties): ``i < j  =>  q_ij = 0.75, q_ji = 0.25`` — *every*
  better item beats every worse one with probability 0.75, however far apart (it is not a
  utility model: item 0 beats item 1 exactly as often as it beats item 99).
* **Case B** (two winners, many ties): ``q_01 = q_10 = 0.5``; items 0 and 1 beat every
  other item with probability 0.75; every other pair is a tie, ``q_ij = 0.5``.

Fairness and reproducibility.

* Run ``r`` uses seed ``seed + r``; its ``SeedSequence`` gives independent streams for the
  item shuffle, the judgments, the algorithm and the task scheduler, so the results do not
  depend on the number of processes (``jobs``).
* The pool is shuffled per run (the algorithm sees item ``k`` as matrix item
  ``perm[k]``): an algorithm cannot profit from the winners being listed first, nor from
  breaking ties by lower index.
* Common random numbers: the ``k``-th judgment of a pair in run ``r`` is the same coin for
  every algorithm (a table of uniforms per pair and judgment), so differences between
  algorithms are paired and sharper than independent runs would give.
* Ties (``p = 0.5``) are fair coins: assessors must choose a side (§3.1).

Delays. With ``in_flight > 1`` several tasks are out at once and come back in random
order, judgments within a task in random order: the algorithm must cope with judgments
arriving late and out of order, as in a live campaign.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bandits.common import wilson_interval
from judging import make_judge


# ---------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    """A preference matrix and its winners."""

    name: str
    P: np.ndarray
    winners: tuple[int, ...]


def case_a(K: int = 100, p: float = 0.75) -> Case:
    """Yan 2022's Case A: a total order, ``q_ij = p`` for every ``i < j``.

    Examples
    --------
    >>> c = case_a(4)
    >>> c.P
    array([[0.5 , 0.75, 0.75, 0.75],
           [0.25, 0.5 , 0.75, 0.75],
           [0.25, 0.25, 0.5 , 0.75],
           [0.25, 0.25, 0.25, 0.5 ]])
    >>> c.winners
    (0,)
    """
    P = np.full((K, K), 0.5)
    iu = np.triu_indices(K, 1)
    P[iu] = p
    P[iu[1], iu[0]] = 1.0 - p
    return Case("A", P, (0,))


def case_b(K: int = 100, p: float = 0.75) -> Case:
    """Yan 2022's Case B: items 0 and 1 tie and beat everything else with ``p``; all
    other pairs tie.

    Examples
    --------
    >>> c = case_b(4)
    >>> c.P
    array([[0.5 , 0.5 , 0.75, 0.75],
           [0.5 , 0.5 , 0.75, 0.75],
           [0.25, 0.25, 0.5 , 0.5 ],
           [0.25, 0.25, 0.5 , 0.5 ]])
    >>> c.winners
    (0, 1)
    """
    P = np.full((K, K), 0.5)
    P[:2, 2:] = p
    P[2:, :2] = 1.0 - p
    return Case("B", P, (0, 1))


CASES: dict[str, Callable[..., Case]] = {"A": case_a, "B": case_b}

#: Yan 2022, Figure 4.1 (1,000 simulations each; counts as the thesis makes them: a run
#: "found" a winner when its returned set contains it, §4.4), for the printed comparison.
THESIS_FIGURE_4_1: dict[str, dict[str, str]] = {
    "A": {
        "PARWiS": "best found 537, comparisons 1000, assessors 17-68",
        "Active Ranking": "best found 175, comparisons 1000, assessors 3-11",
        "Mohajer et al. (SELECT)": "best found 715, comparisons 990, assessors 10",
        "Clarke et al. (extra final phase)": "best found 510, comparisons 624-781, assessors 3-6",
        "Clarke et al.": "best found 502, comparisons 599-759, assessors 2-5",
        "Round-Efficient Dueling Bandits": "best found 141, comparisons 1000, assessors 2-5",
        "Double Thompson Sampling": "best found 124, comparisons 1000, assessors 4-24",
        "MergeDTS": "best found 108, comparisons 1000, assessors 31-93",
    },
    "B": {
        "PARWiS": "one 686, both 287, comparisons 1000, assessors 7-83",
        "Active Ranking": "one 405, both 545, comparisons 1000, assessors 3-11",
        "Mohajer et al. (SELECT)": "one 905, both 0, comparisons 990, assessors 10",
        "Mohajer et al. (TOP-2)": "one 588, both 277, comparisons 980, assessors 5",
        "Clarke et al. (extra final phase)": "one 733, both 81, comparisons 616-795, "
                                             "assessors 3-6",
        "Clarke et al.": "one 666, both 94, comparisons 592-764, assessors 2-5",
        "Round-Efficient Dueling Bandits": "one 680, both 89, comparisons 1000, assessors 2-5",
        "Double Thompson Sampling": "one 710, both 7, comparisons 1000, assessors 4-20",
        "MergeDTS": "one 581, both 58, comparisons 1000, assessors 28-81",
    },
}


def default_winners(P: np.ndarray) -> tuple[int, ...]:
    """The items no other item beats (``P[i, j] >= ½`` for every ``j``); if there are none,
    the Copeland winners (most items beaten).

    Examples
    --------
    >>> default_winners(case_b(5).P)
    (0, 1)
    >>> default_winners(np.array([[.5, .6, .4], [.4, .5, .6], [.6, .4, .5]]))  # a cycle
    (0, 1, 2)
    """
    P = np.asarray(P, dtype=float)
    undominated = np.flatnonzero((P >= 0.5).all(axis=1))
    if undominated.size:
        return tuple(int(x) for x in undominated)
    copeland = (P > 0.5).sum(axis=1)
    return tuple(int(x) for x in np.flatnonzero(copeland == copeland.max()))


def validate_matrix(P: np.ndarray) -> np.ndarray:
    """A square matrix of probabilities with ``P + P.T == 1`` off the diagonal."""
    P = np.atleast_2d(np.asarray(P, dtype=float))
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"preference matrix must be square, got shape {P.shape}")
    if not np.all((P >= 0) & (P <= 1)):
        raise ValueError("preference matrix entries must lie in [0, 1]")
    off = ~np.eye(P.shape[0], dtype=bool)
    if not np.allclose((P + P.T)[off], 1.0, atol=1e-6):
        raise ValueError("preference matrix must satisfy P[i, j] + P[j, i] = 1")
    return P


# ---------------------------------------------------------------------- one run
@dataclass
class RunResult:
    """One simulated run, in the matrix's item indices."""

    seed: int
    returned: list[int]
    judgments: int
    per_pair_max: int
    confidence: float
    finished: bool


def simulate_run(
    P: np.ndarray,
    algorithm: str,
    seed: int,
    *,
    params: dict[str, Any] | None = None,
    budget: int | None = 1000,
    max_per_pair: int | None = 10,
    batch: int = 10,
    in_flight: int = 1,
) -> RunResult:
    """Run ``algorithm`` once on ``P`` (see the module docstring)."""
    K = P.shape[0]
    s_perm, s_out, s_judge, s_sched = np.random.SeedSequence(seed).spawn(4)
    perm = np.random.default_rng(s_perm).permutation(K)
    out_rng = np.random.default_rng(s_out)
    sched = np.random.default_rng(s_sched)
    table = None
    if max_per_pair is not None:  # the k-th judgment of a pair: the same coin everywhere
        table = out_rng.random((K, K, max_per_pair))
    judge = make_judge(
        algorithm, K, seed=np.random.default_rng(s_judge), budget=budget,
        max_per_pair=max_per_pair, **(params or {}),
    )
    seen: dict[tuple[int, int], int] = {}
    tasks: list[list[tuple[int, int]]] = []
    while True:
        while len(tasks) < in_flight and not judge.done:
            task = judge.request(batch)
            if not task:
                break
            tasks.append(task)
        if not tasks:
            break
        task = tasks.pop(0 if in_flight == 1 else int(sched.integers(len(tasks))))
        if in_flight > 1:
            task = [task[k] for k in sched.permutation(len(task))]
        for i, j in task:
            a, b = int(perm[i]), int(perm[j])
            lo, hi = (a, b) if a < b else (b, a)
            k = seen.get((lo, hi), 0)
            seen[(lo, hi)] = k + 1
            u = table[lo, hi, k] if table is not None else out_rng.random()
            lo_wins = u < P[lo, hi]
            judge.record(i, j, 1.0 if lo_wins == (a == lo) else 0.0)
    res = judge.result()
    return RunResult(
        seed=int(seed),
        returned=sorted(int(perm[x]) for x in res.best),
        judgments=judge.n_judgments,
        per_pair_max=max(seen.values(), default=0),
        confidence=res.confidence,
        finished=res.finished,
    )


def _run_chunk(P, algorithm, seeds, kwargs) -> list[RunResult]:
    return [simulate_run(P, algorithm, s, **kwargs) for s in seeds]


def run_all(
    P: np.ndarray,
    algorithms: Sequence[str],
    runs: int,
    seed: int = 0,
    *,
    params: dict[str, dict[str, Any]] | None = None,
    jobs: int = 1,
    chunk: int = 25,
    progress: Callable[[int], None] | None = None,
    **kwargs: Any,
) -> dict[str, list[RunResult]]:
    """``runs`` runs of every algorithm (run ``r`` uses ``seed + r``), in ``jobs`` processes.

    The result does not depend on ``jobs`` or ``chunk``.
    """
    P = validate_matrix(P)
    params = params or {}
    work = [
        (a, list(range(seed + r0, seed + min(r0 + chunk, runs))))
        for a in algorithms
        for r0 in range(0, runs, chunk)
    ]
    out: dict[str, dict[int, RunResult]] = {a: {} for a in algorithms}

    def take(a: str, results: list[RunResult]) -> None:
        for res in results:
            out[a][res.seed] = res
        if progress:
            progress(len(results))

    if jobs <= 1:
        for a, seeds in work:
            take(a, _run_chunk(P, a, seeds, {"params": params.get(a), **kwargs}))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [
                (a, pool.submit(_run_chunk, P, a, seeds, {"params": params.get(a), **kwargs}))
                for a, seeds in work
            ]
            for a, fut in futures:
                take(a, fut.result())
    return {a: [out[a][seed + r] for r in range(runs)] for a in algorithms}


# ---------------------------------------------------------------------- scoring
def summarize(results: Sequence[RunResult], winners: Sequence[int]) -> dict[str, Any]:
    """Per-algorithm counts over the runs.

    Strict counts (the returned set holds winners *only*):

    * ``best_found``: runs returning at least one winner and nothing else (with one
      winner: exactly the winner);
    * ``one_found``: runs returning exactly one winner and nothing else;
    * ``both_found``: runs returning exactly the winners (all of them, nothing else).

    Yan 2022's counts (other items may be returned alongside, as the thesis counts them:
    §4.4, "502 simulations ... correctly returned item 0" while 497 returned ties):

    * ``contains_winner``, ``contains_one`` (exactly one winner, whatever else),
      ``contains_all`` (every winner, whatever else), ``nonwinners_returned`` (total).

    Cost: ``returned_mean``, ``judgments_min/mean/max``, and the range over runs of the
    largest number of judgments of one pair, ``assessors_per_pair_min/max`` (the thesis
    reports this range as "assessors").

    Examples
    --------
    >>> rs = [RunResult(0, [0], 10, 2, .9, True), RunResult(1, [0, 5], 12, 3, .5, True)]
    >>> s = summarize(rs, [0])
    >>> s["best_found"], s["contains_winner"], s["nonwinners_returned"], s["returned_mean"]
    (1, 2, 1, 1.5)
    """
    W = set(int(w) for w in winners)
    best = one = both = c_win = c_one = c_all = nonwin = 0
    for r in results:
        got = set(r.returned)
        hit = got & W
        only = bool(got) and got <= W
        best += only
        one += only and len(got) == 1
        both += got == W
        c_win += bool(hit)
        c_one += len(hit) == 1
        c_all += got >= W
        nonwin += len(got - W)
    n = len(results)
    judg = [r.judgments for r in results] or [0]
    ppm = [r.per_pair_max for r in results] or [0]
    return {
        "runs": n,
        "winners": sorted(W),
        "best_found": best,
        "one_found": one,
        "both_found": both,
        "contains_winner": c_win,
        "contains_one": c_one,
        "contains_all": c_all,
        "nonwinners_returned": nonwin,
        "returned_mean": round(sum(len(r.returned) for r in results) / max(n, 1), 4),
        "judgments_min": int(min(judg)),
        "judgments_mean": round(float(np.mean(judg)), 2),
        "judgments_max": int(max(judg)),
        "assessors_per_pair_min": int(min(ppm)),
        "assessors_per_pair_max": int(max(ppm)),
        "confidence_mean": round(float(np.mean([r.confidence for r in results] or [0])), 4),
        "finished": sum(r.finished for r in results),
    }


def format_table(summaries: dict[str, dict[str, Any]], title: str = "") -> str:
    """A plain-text table like Yan 2022's Figure 4.1 (strict counts, then the thesis'
    containment counts)."""
    lines = [title] if title else []
    head = (f"{'algorithm':<16} {'best':>5} {'one':>5} {'both':>5} | {'∋win':>5} {'∋one':>5} "
            f"{'∋all':>5} {'other':>6} | {'returned':>8} {'comparisons':>12} {'assessors':>9}")
    lines += [head, "-" * len(head)]
    for name, s in summaries.items():
        lines.append(
            f"{name:<16} {s['best_found']:>5} {s['one_found']:>5} {s['both_found']:>5} | "
            f"{s['contains_winner']:>5} {s['contains_one']:>5} {s['contains_all']:>5} "
            f"{s['nonwinners_returned']:>6} | {s['returned_mean']:>8.2f} "
            f"{s['judgments_min']:>5}-{s['judgments_max']:<6} "
            f"{s['assessors_per_pair_min']:>4}-{s['assessors_per_pair_max']:<4}"
        )
    runs = max((s["runs"] for s in summaries.values()), default=0)
    lines.append(
        f"{runs} runs. best/one/both: the returned set holds winners only (one winner / "
        "exactly the winners); ∋win/∋one/∋all: it contains a winner / exactly one winner / "
        "every winner, other items allowed (Yan 2022's counting); other: non-winners "
        "returned in all runs."
    )
    return "\n".join(lines)


def binomial_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` runs
    (:func:`bandits.common.wilson_interval`).

    Examples
    --------
    >>> lo, hi = binomial_interval(502, 1000)
    >>> round(lo, 3), round(hi, 3)
    (0.471, 0.533)
    """
    return wilson_interval(k, n, z)


def result_dict(r: RunResult) -> dict[str, Any]:
    return asdict(r)
