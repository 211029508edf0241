"""Regret per seed for every registered policy: the check that a refactor changed no run.

Runs :func:`bandits.simulator.simulate_run` for every policy of
:data:`bandits.ALGORITHMS` with its default parameters on two matrices
(``bradley_terry(16, gap=0.05, seed=2)`` = bt16 and
``non_condorcet(12, gap=0.05, upset=0.3, seed=1)`` = nc12), seeds 1 and 2, and prints
one line per run: ``policy/matrix/seed``, the final cumulative regret and the SHA-1 of
the whole regret curve (every checkpoint, float64). Then the non-Condorcet guard's paths
that default runs rarely take (a flag, the switch to the Copeland rule, readmissions,
state reloads, delayed feedback in batches): MergeGuard and MergeMED with
``check_every=200, on_non_condorcet="switch"`` on ``non_condorcet(8, gap=0.05,
upset=0.3, seed=s)``, s = 0, 1, 2, 60,000 steps, the last seed with feedback 50 steps
late in batches of 5 and the policy rebuilt from its state every 5,000 steps; each line
adds the flag and the update count it was raised at. Run it on two commits and ``diff``
the outputs: an empty diff means every run is identical. ``--speed`` instead prints
the simulator's steps per second of process CPU time (no fast-forward) for a few
policies on ``bradley_terry(K, gap, seed=2)``, for an A/B of two commits run
alternately.

    python bench/regret_identity.py [--steps 20000] > after.txt
    python bench/regret_identity.py --speed [--steps 20000] [--policies a,b] [-K 64]
        [--gap 0.01] [--best-of 3]
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

from bandits import ALGORITHMS
from bandits.matrices import bradley_terry, non_condorcet
from bandits.simulator import simulate_run

#: the matrices of bench/results/regret_identity.md
MATRICES = {
    "bt16": lambda: bradley_terry(16, gap=0.05, seed=2),
    "nc12": lambda: non_condorcet(12, gap=0.05, upset=0.3, seed=1),
}
SEEDS = (1, 2)
#: the guard's runs: policies, seeds of non_condorcet(8, ...), steps
GUARD_POLICIES = ("mergeguard", "mergemed")
GUARD_SEEDS = (0, 1, 2)
GUARD_STEPS = 60_000
#: the policies whose speed --speed measures (the Merge family and two baselines)
SPEED_POLICIES = ("mergedts", "mergeguard", "mergemed", "recommended", "mergerucb", "dts")


def regret_lines(steps: int) -> list[str]:
    """``policy/matrix/seed final-regret curve-sha1`` for every policy, matrix and seed."""
    out = []
    for name in sorted(ALGORITHMS):
        for m, make in MATRICES.items():
            P = make()
            for seed in SEEDS:
                r = simulate_run(P, name, steps, seed)
                reg = np.asarray(r.regret, dtype=np.float64)
                sha = hashlib.sha1(reg.tobytes()).hexdigest()[:12]
                out.append(f"{name}/{m}/{seed} {reg[-1]:.3f} {sha}")
    for name in GUARD_POLICIES:
        for seed in GUARD_SEEDS:
            P = non_condorcet(8, gap=0.05, upset=0.3, seed=seed)
            late = seed == GUARD_SEEDS[-1]
            r = simulate_run(P, name, GUARD_STEPS, seed,
                             params={"check_every": 200, "on_non_condorcet": "switch"},
                             delay=50 if late else 0, feedback_batch=5 if late else 1,
                             reload_every=5000 if late else 0)
            reg = np.asarray(r.regret, dtype=np.float64)
            sha = hashlib.sha1(reg.tobytes()).hexdigest()[:12]
            out.append(f"{name}/nc8-switch/{seed} {reg[-1]:.3f} {sha} "
                       f"flagged={r.flagged_non_condorcet} at={r.flagged_at}")
    return out


def speed_lines(steps: int, policies: tuple[str, ...] = SPEED_POLICIES, K: int = 16,
                gap: float = 0.05, best_of: int = 1) -> list[str]:
    """``policy steps-per-CPU-second`` on ``bradley_terry(K, gap, seed=2)``, seed 1,
    without fast-forward (the best of ``best_of`` runs in this process)."""
    P = bradley_terry(K, gap=gap, seed=2)
    out = []
    for name in policies:
        best = 0.0
        for _ in range(best_of):
            t0 = time.process_time()
            simulate_run(P, name, steps, 1, fast_forward=False)
            best = max(best, steps / (time.process_time() - t0))
        out.append(f"{name} {best:.0f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--speed", action="store_true", help="steps/s instead of regret")
    ap.add_argument("--policies", default=",".join(SPEED_POLICIES),
                    help="--speed: the policies timed (comma-separated)")
    ap.add_argument("-K", type=int, default=16, help="--speed: bradley_terry's K (16)")
    ap.add_argument("--gap", type=float, default=0.05, help="--speed: its gap (0.05)")
    ap.add_argument("--best-of", type=int, default=1, help="--speed: runs per policy (1)")
    args = ap.parse_args()
    if args.speed:
        lines = speed_lines(args.steps, tuple(args.policies.split(",")), args.K, args.gap,
                            args.best_of)
    else:
        lines = regret_lines(args.steps)
    for line in lines:
        print(line, flush=True)


if __name__ == "__main__":
    main()
