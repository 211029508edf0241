"""Offline A/B tests on the demo's world, over many seeded runs: coverage of the true
lift, false decisions on an A/A, false SRM alarms on clean splits, SRM detection on a
broken one (``rollout.ab.simulation.simulate_ab``, as ``rankduel simulate --design ab``).

Scenarios (world ``1:12``, the demo's; navigational users; δ = 0.05; SRM at p < 0.001):

``aa``        ranker 2 twice (an A/A), 50/50;
``large``     ranker 0 → 6 (the clear best), true lift +0.77 %, 50/50;
``small``     ranker 3 → 11, true lift +0.38 %, 50/50;
``ramp10``    ranker 2 → 6 (+3.07 %) at 90/10 (a treatment on a tenth of the users);
``broken``    ranker 2 → 6 at 50/50, a tenth of the treatment's users fall back to the control.

Every rate is printed with its Clopper–Pearson 95 % interval.

    python bench/ab_offline.py --runs 1000 --searches 100000 --out bench/results/ab/offline.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interleaving.world import World
from rollout.ab.simulation import click_probabilities, simulate_ab

SCENARIOS = {
    "aa": {"rankers": [2, 2]},
    "large": {"rankers": [0, 6]},
    "small": {"rankers": [3, 11]},
    "ramp10": {"rankers": [2, 6], "shares": [0.9, 0.1]},
    "broken": {"rankers": [2, 6], "fallback": 0.1},
}


def cp(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def _run(task):
    name, seed, searches = task
    world = _run.world
    spec = SCENARIOS[name]
    r = simulate_ab(world, spec["rankers"], searches, seed, shares=spec.get("shares"),
                    fallback=spec.get("fallback", 0.0), probabilities=_run.probs)
    t = r.treatments[0]
    return {"scenario": name, "seed": seed, "decided": t.decided, "correct": t.correct,
            "decided_at": t.decided_at, "covered": t.covered, "lift_covered": t.lift_covered,
            "ever_missed": t.ever_missed, "true_lift": t.true_lift, "lift": t.lift,
            "srm_flagged": r.srm_flagged, "srm_flagged_at": r.srm_flagged_at,
            "srm_message": r.srm_message if r.srm_flagged else None}


def _init():
    _run.world = World(1, 12, 200, clear_best=True)
    _run.probs = click_probabilities(_run.world)


def summarise(rows: list[dict]) -> dict:
    out = {}
    for name in SCENARIOS:
        rs = [r for r in rows if r["scenario"] == name]
        if not rs:
            continue
        n = len(rs)
        s: dict = {"runs": n, "true_lift": rs[0]["true_lift"]}
        for key in ("decided", "correct", "covered", "lift_covered", "srm_flagged"):
            k = sum(bool(r[key]) for r in rs)
            s[key] = [k, k / n, *cp(k, n)]
        k = sum(not r["ever_missed"] for r in rs)
        s["never_missed"] = [k, k / n, *cp(k, n)]
        at = [r["decided_at"] for r in rs if r["decided_at"] is not None]
        s["median_decided_at"] = int(np.median(at)) if at else None
        at = [r["srm_flagged_at"] for r in rs if r["srm_flagged_at"] is not None]
        s["median_srm_flagged_at"] = int(np.median(at)) if at else None
        out[name] = s
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--searches", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args()
    names = args.scenarios.split(",")
    tasks = [(nm, args.seed + r, args.searches) for nm in names for r in range(args.runs)]
    t0 = time.time()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, initializer=_init) as pool:
            rows = list(pool.map(_run, tasks, chunksize=20))
    else:
        _init()
        rows = [_run(t) for t in tasks]
    summary = summarise(rows)
    print(f"{args.runs} runs of {args.searches:,} searches per scenario, "
          f"{time.time() - t0:.0f} s")
    print(f"{'scenario':<8} {'true lift':>9} {'decided':>16} {'correct':>9} "
          f"{'never missed':>22} {'lift covered':>13} {'SRM flagged':>22} {'at':>8}")
    for name, s in summary.items():
        d, c, nm, lc, f = (s[k] for k in ("decided", "correct", "never_missed",
                                          "lift_covered", "srm_flagged"))
        print(f"{name:<8} {100 * s['true_lift']:>+8.2f}% {d[1]:>7.1%} "
              f"(≤{d[3]:.1%}) {c[1]:>9.1%} {nm[1]:>7.1%} ({nm[2]:.1%}–{nm[3]:.1%}) "
              f"{lc[1]:>13.1%} {f[1]:>7.1%} ({f[2]:.1%}–{f[3]:.1%}) "
              f"{s['median_srm_flagged_at'] or '-':>8}")
    if args.out:
        # one line per run, so the file stays small and diffs stay readable
        lines = ",\n".join(json.dumps(r) for r in rows)
        Path(args.out).write_text(
            f'{{"args": {json.dumps(vars(args))},\n"summary": {json.dumps(summary)},\n'
            f'"runs": [\n{lines}\n]}}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
