"""Comparisons to certify a two-ranker experiment, against the information floor.

Two rankers, the better one winning a comparison with probability ``p`` (win or loss,
no ties). ``recommended`` (:class:`bandits.sparring_certifier.SparringCertifier`) runs
until it certifies a champion at error rate δ; the script prints, per ``p``, the median
number of comparisons it took, how many runs named the right ranker, the information
floor ``log(1/a) / kl(p, ½)`` (``a = δ/2``, the per-edge level at K = 2: Kaufmann, Cappé
& Garivier 2016, Lemma 1: no test at level ``a`` needs fewer comparisons in expectation)
and the target of issue 47, ``12 / kl(p, ½) + 40``. The better ranker is arm 0 or 1 at
random per run.

    .venv/bin/python bench/certify_two.py --runs 200
    .venv/bin/python bench/certify_two.py --runs 50 --check-every 1000  # no floor
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bandits import confidence
from bandits.sparring_certifier import SparringCertifier

PREFERENCES = (0.55, 0.6, 0.65, 0.7, 0.8, 0.9)


def kl_half(p: float) -> float:
    """``kl(p, ½)`` of Bernoulli laws (nats)."""
    return p * math.log(2 * p) + (1 - p) * math.log(2 * (1 - p))


def run(p: float, seed: int, *, delta: float = 0.05, budget: int = 200_000,
        check_every: int | None = None) -> tuple[int | None, bool]:
    """One run: the comparison at which ``recommended`` certified (None: not within
    ``budget``) and whether it named the better ranker."""
    env = np.random.default_rng([47, seed])
    best = int(env.integers(2))
    params = {"error_rate": delta}
    if check_every:
        params["check_every"] = check_every
    b = SparringCertifier(2, seed=seed, **params)
    for _ in range(budget):
        i, j = b.select()
        if i != j:
            p_ij = p if i == best else 1.0 - p
            b.update(i, j, float(env.random() < p_ij))
        else:
            b.update(i, j, 0.5)
        if b.certificate is not None:
            return int(b.certificate["at"]), int(b.certificate["champion"]) == best
    return None, False


def table(runs: int, seed: int, delta: float, check_every: int | None,
          preferences: tuple[float, ...] = PREFERENCES) -> list[dict]:
    """One row per preference: median comparisons, right rankers, floor and target."""
    level = confidence.per_edge_level(2, delta)
    rows = []
    for p in preferences:
        out = [run(p, seed + r, delta=delta, check_every=check_every) for r in range(runs)]
        ns = [n for n, _ in out if n is not None]
        kl = kl_half(p)
        rows.append({"p": p, "runs": runs, "certified": len(ns),
                     "right": sum(ok for _, ok in out),
                     "median": float(np.median(ns)) if ns else None,
                     "q10": float(np.quantile(ns, 0.1)) if ns else None,
                     "q90": float(np.quantile(ns, 0.9)) if ns else None,
                     "floor": math.log(1 / level) / kl, "target": 12 / kl + 40})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--error-rate", type=float, default=0.05)
    ap.add_argument("--check-every", type=int, default=None,
                    help="the policy's check period (default: its own)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = table(args.runs, args.seed, args.error_rate, args.check_every)
    print(f"K = 2, δ = {args.error_rate}, {args.runs} runs per preference; comparisons to "
          "certify (median, 10-90 %), floor log(1/a)/kl(p, ½), target 12/kl + 40")
    print(f"{'p':>5} {'median':>8} {'10-90 %':>13} {'right':>9} {'floor':>7} {'target':>7} "
          f"{'÷ floor':>8}")
    for r in rows:
        print(f"{r['p']:>5.2f} {r['median']:>8.0f} {r['q10']:>6.0f}-{r['q90']:<6.0f} "
              f"{r['right']:>4}/{r['runs']:<4} {r['floor']:>7.0f} {r['target']:>7.0f} "
              f"{r['median'] / r['floor']:>7.2f}×")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
