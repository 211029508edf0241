"""The simulator's steps per second, code A against code B, in alternating processes.

``bandits.simulator.simulate_run`` — the loop behind ``rankduel simulate`` — runs each
policy for ``--steps`` steps on one Bradley–Terry matrix (``--k`` arms, smallest gap
0.05, seed 1), with the fast-forward off so that every step is a real select/update, and
the live loop's ``delay``/``reload_every`` once (what the refactor of declared policy
capabilities touched). A/B: each child process imports the package of one checkout
(``--code DIR``, put first on ``sys.path``) and prints steps/s per policy as CPU time
(``time.process_time``, which a shared machine disturbs less than wall time); the parent
runs ``--pairs`` pairs alternately A, B, A, B, ... under the same conditions and prints
each pair's B/A ratio and the median. To compare against an older commit:

    git worktree add /tmp/before <sha>
    .venv/bin/python bench/simulator_speed.py --a /tmp/before --b . --pairs 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: the policies timed, with the loop each runs: (name, simulate_run keyword arguments)
CASES = [
    ("mergedts", {}),
    ("recommended", {}),
    ("rucb", {}),
    ("dts", {}),
    ("rmed1", {}),
    ("self_sparring", {}),
    ("mergedts live", {"delay": 30, "feedback_batch": 5, "reload_every": 10}),
]


def child(code: str, k: int, steps: int) -> None:
    sys.path.insert(0, str(Path(code).resolve()))
    from bandits.matrices import bradley_terry
    from bandits.simulator import simulate_run

    P = bradley_terry(k, gap=0.05, seed=1)
    out = {}
    for label, extra in CASES:
        name = label.split()[0]
        simulate_run(P, name, 200, seed=0, fast_forward=False, **extra)  # warm caches
        t0 = time.process_time()
        simulate_run(P, name, steps, seed=0, fast_forward=False, **extra)
        out[label] = steps / (time.process_time() - t0)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", default=None, help="checkout A (before)")
    ap.add_argument("--b", default=".", help="checkout B (after)")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.k, args.steps)
        return
    if args.a is None:
        ap.error("--a DIR (the checkout to compare with) is required")
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for n in range(args.pairs):
        for side, code in (("A", args.a), ("B", args.b)):
            res = subprocess.run([sys.executable, __file__, "--child", code, "--k", str(args.k),
                                  "--steps", str(args.steps)],
                                 capture_output=True, text=True, check=True)
            runs[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(f"pair {n + 1} {side}: " + ", ".join(
                f"{k} {v:,.0f}" for k, v in runs[side][-1].items()), flush=True)
    print(f"\nsteps/s (CPU), median of {args.pairs} pairs; B/A per pair")
    print(f"{'policy':<16}{'A':>10}{'B':>10}{'B/A':>8}  per pair")
    for label, _ in CASES:
        a = [r[label] for r in runs["A"]]
        b = [r[label] for r in runs["B"]]
        ratios = [y / x for x, y in zip(a, b, strict=True)]
        print(f"{label:<16}{statistics.median(a):>10,.0f}{statistics.median(b):>10,.0f}"
              f"{statistics.median(ratios):>8.3f}  " + " ".join(f"{r:.2f}" for r in ratios))


if __name__ == "__main__":
    main()
