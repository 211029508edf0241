"""Interleave + credit operations per second, per method, at k = 10.

What a live request spends in :mod:`interleaving`: seeding a generator from
``seed_for(user, query, salt)``, one ``interleave`` of the
participants' top-10 lists plus, later, one ``credit`` of the stored record (after a
JSON round trip, as the service stores it) with the clicks of a navigational user.
Rankings come from the synthetic world (real overlaps between rankers). Multileaving
methods are timed with 2 and with 5 participants. The second table is the vectorized
engine the matrix estimator uses (simulated comparisons per second, clicks included).

    .venv/bin/python bench/interleave_speed.py [--seconds 1.0] [--k 10]

The machine is shared with other work: times are CPU time of this process
(``time.process_time``; wall time would add the wait for a core), and each figure is the
fastest of several rounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import interleaving as il
from interleaving.batch import ENGINES, prepare
from interleaving.clicks import CLICK_MODELS
from interleaving.world import World

#: CPU time of this process: what the code costs, whatever else runs on the machine
clock = time.process_time


def per_request(
    method: str, m: int, k: int, seconds: float
) -> tuple[float, float, float, float]:
    """(ops/s, µs seeding the generator, µs in interleave, µs in credit), ``m`` rankers."""
    world = World(1, max(m, 2), n_queries=200)
    rng = np.random.default_rng(0)
    model = CLICK_MODELS["navigational"]
    cases = []
    for _ in range(500):
        q = world.sample_query(rng)
        rankings = [world.ranking(r, q, k) for r in range(m)]
        cases.append((q, rankings))
    # the machine is shared: time rounds of all 500 cases and keep the fastest round
    best: tuple[float, float, float] | None = None
    deadline = clock() + seconds
    n = len(cases)
    while best is None or clock() < deadline:
        t_rng = t_mix = t_credit = 0.0
        for i, (q, rankings) in enumerate(cases):
            tr = clock()
            gen = np.random.default_rng(il.seed_for(f"user{i}", world.query_text(q), "exp"))
            t0 = clock()
            shown, record = il.interleave(method, rankings, k, gen)
            t1 = clock()
            stored = json.loads(json.dumps(record))
            clicked = np.flatnonzero(model.clicks(world.grades(q, shown), rng)).tolist()
            t2 = clock()
            il.credit(stored, clicked)
            t3 = clock()
            t_rng += t0 - tr
            t_mix += t1 - t0
            t_credit += t3 - t2
        if best is None or t_rng + t_mix + t_credit < sum(best):
            best = (t_rng, t_mix, t_credit)
    t_rng, t_mix, t_credit = best
    return n / sum(best), t_rng / n * 1e6, t_mix / n * 1e6, t_credit / n * 1e6


def vectorized(method: str, k: int, n: int = 200_000) -> float:
    """Simulated comparisons per second of the estimator's engine (clicks included)."""
    world = World(1, 20, n_queries=200)
    rng = np.random.default_rng(0)
    top = world.top_k(k)
    mix, credit = ENGINES[method]
    q = rng.integers(world.n_queries, size=n)
    a = rng.integers(20, size=n)
    b = (a + 1 + rng.integers(19, size=n)) % 20
    A, B = top[a, q], top[b, q]
    mix(A[:100], B[:100], rng)  # build the lookup tables outside the timing
    best = float("inf")
    for _ in range(3):  # shared machine: keep the fastest of three runs
        t0 = clock()
        shown, info = mix(A, B, rng, prepare(A, B))
        grades = np.where(shown >= 0, world.grade_table[q[:, None], np.maximum(shown, 0)], -1)
        clicks = CLICK_MODELS["navigational"].clicks_batch(grades, rng)
        credit(info, clicks)
        best = min(best, clock() - t0)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="time per row; the fastest round of 500 requests counts (default 1)")
    ap.add_argument("--k", type=int, default=10, help="page length (default 10)")
    args = ap.parse_args()
    print(f"per request, k={args.k}: seed_for + default_rng, interleave, credit "
          "(the JSON round trip of the record and the clicks are not timed)")
    print(f"{'method':<26}{'rankers':>8}{'ops/s':>10}{'seed µs':>9}{'interleave µs':>15}"
          f"{'credit µs':>11}{'total µs':>10}")
    rows = []
    for method in il.METHODS:
        for m in ([2] if method in il.PAIRWISE_METHODS else [2, 5]):
            ops, t_rng, t_mix, t_credit = per_request(method, m, args.k, args.seconds)
            rows.append((method, m, ops))
            print(f"{method:<26}{m:>8}{ops:>10,.0f}{t_rng:>9.1f}{t_mix:>15.1f}"
                  f"{t_credit:>11.1f}{t_rng + t_mix + t_credit:>10.1f}")
    base = next(ops for method, m, ops in rows if method == "team_draft")
    print("\nrelative to team_draft (same run): " + ", ".join(
        f"{method}/{m}: {ops / base:.2f}" for method, m, ops in rows))
    print(f"\nvectorized engine (estimator), k={args.k}, navigational clicks included")
    print(f"{'method':<26}{'comparisons/s':>15}{'x per-request':>15}")
    for method in il.METHODS:
        rate = vectorized(method, args.k)
        single = next(ops for name, m, ops in rows if name == method and m == 2)
        print(f"{method:<26}{rate:>15,.0f}{rate / single:>15.1f}")


if __name__ == "__main__":
    main()
