"""The share of outcomes the live credit path holds for ``recommended`` until
certification, the guard replayed in Python.

The credit script holds an outcome (it is applied alone, in order, by the policy's own
``update()``: :mod:`service.credit`) when the guard built from the policy's declaration
(:class:`service.credit.guard.Guard`, from ``volatility()``) says it may change the
structure; every hold costs a transaction and, with several workers, stalls the others.
Here the policy runs serially on a preference matrix while the guard, rebuilt at every
hold and every 500 steps (as a worker's cached view), says for each outcome whether the
script would hold it, exactly as ``tests/unit/test_credit_path.py`` replays it. Printed:
outcomes held and outcomes until the certificate (or ``--max-steps``).

    .venv/bin/python bench/guard_holds.py [--cases k2,bt8,p136]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bandits  # noqa: E402
from bandits.matrices import bradley_terry  # noqa: E402
from service.credit.guard import Guard  # noqa: E402

#: name -> (matrix, runs, most steps per run)
CASES = {
    "k2": (lambda: np.array([[0.5, 0.6], [0.4, 0.5]]), 5, 10**5),
    "bt8": (lambda: bradley_terry(8, gap=0.05, seed=2), 5, 10**5),
    "p136": (lambda: np.loadtxt(ROOT / "bench/results/policy/P136.txt"), 1, 3 * 10**5),
}


def run(P: np.ndarray, seed: int, max_steps: int) -> tuple[int, int]:
    """Outcomes held and steps until certification (or ``max_steps``), one run."""
    b = bandits.make_bandit("recommended", P.shape[0], seed=seed)
    env = np.random.default_rng(seed + 100)
    guard, built, held = None, -(10**9), 0
    for t in range(max_steps):
        if guard is None or t - built >= 500:
            guard, built = Guard.of(b, t), t
        i, j = b.select()
        o = float(env.random() < P[i, j])
        code = guard.watches(i, j) if guard is not None else 0
        trips = guard is not None and (guard.periodic(b.n_updates + 1) or bool(
            code and guard.trips(b.W[i, j] + o, b.W[j, i] + 1 - o, code)))
        b.update(i, j, o)
        if trips:
            held += 1
            guard, built = Guard.of(b, t + 1), t  # the structure moved: a new view
            if b.verdicts()["certified"] is not None:
                return held, t + 1
    return held, max_steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    for name in args.cases.split(","):
        make, runs, most = CASES[name]
        P = make()
        held = steps = 0
        for seed in range(1, runs + 1):
            h, s = run(P, seed, most)
            held, steps = held + h, steps + s
        print(f"{name}: {runs} run(s), {held} of {steps:,} outcomes held until certification "
              f"({100 * held / steps:.2f} %)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
