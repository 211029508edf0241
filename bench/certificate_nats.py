"""What a certificate costs per pair, in nats: the evidence ``n_ij · kl(p_ij, ½)`` each
edge had collected when it showed a ranker worse, ``p_ij`` the true preference of the
witness ``i`` over the ranker ``j`` and ``n_ij`` their comparisons then.

``log(1/a)`` nats per pair (``a`` the per-edge level, δ/270 at K = 136: 8.59 nats) is the
floor for any test at that level (Kaufmann, Cappé & Garivier 2016, Lemma 1); what a
policy pays above it is its test's cost (the mixture's), the overshoot of a boundary
crossed between two checks (a check period), and for the witness the choice of opponent.
``recommended`` runs on a matrix (arms shuffled per run, as bench/verdict_error.py does)
until it certifies or ``--steps`` pass; the script prints the mean and median over all
edges of all runs and the sum per run.

    .venv/bin/python bench/certificate_nats.py bench/results/policy/P136.txt --runs 10
    .venv/bin/python bench/certificate_nats.py bench/results/policy/P136.txt --runs 10 \\
        --tree /path/to/another/checkout     # the same measure on another version
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("matrix")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the checkout whose bandits/ is measured (default: this one)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree))
    import numpy as np

    from bandits.sparring_certifier import SparringCertifier

    P = np.loadtxt(args.matrix, ndmin=2)  # "#" lines are comments
    nats, per_run, steps = [], [], []
    for r in range(args.runs):
        seed = args.seed + r
        perm = np.random.default_rng([9001, seed]).permutation(P.shape[0])
        Pr = P[np.ix_(perm, perm)]
        env = np.random.default_rng([77, seed])
        b = SparringCertifier(Pr.shape[0], seed=seed)
        seen: set[int] = set()
        run_nats = []
        for _ in range(args.steps):
            i, j = b.select()
            b.update(i, j, float(env.random() < Pr[i, j]) if i != j else 0.5)
            if len(b.worse) != len(seen):
                for e, (by, _at) in b.worse.items():
                    if e not in seen:
                        seen.add(e)
                        p = float(Pr[by, e])
                        n = float(b.W[by, e] + b.W[e, by])
                        kl = p * math.log(2 * p) + (1 - p) * math.log(2 * (1 - p))
                        run_nats.append(n * kl)
            if b.certificate is not None:
                break
        nats += run_nats
        per_run.append(sum(run_nats))
        steps.append(b.n_updates if b.certificate is not None else None)
        print(f"run {r + 1}: {len(run_nats)} edges, {np.mean(run_nats):.2f} nats per pair, "
              f"certified at {steps[-1]}", flush=True)
    arr = np.asarray(nats)
    print(f"{args.tree.name}: {arr.size} edges over {args.runs} runs: nats per pair mean "
          f"{arr.mean():.2f}, median {np.median(arr):.2f}; per certificate "
          f"{np.mean(per_run):,.0f}; certified at (median) "
          f"{np.median([s for s in steps if s is not None]):,.0f}")
    if args.out:
        args.out.write_text(json.dumps({"nats": nats, "per_run": per_run, "steps": steps}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
