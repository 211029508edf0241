"""Sensitivity, measured: searches until a correct decision at δ = 0.05, interleaving
against an A/B test of the same rankers, on the demo's world (``World(1, 12, 200,
clear_best=True)``), with the same users and click model (navigational).

* **Interleaving**: the offline path of ``rankduel simulate``: the world's team-draft
  preference matrix (:func:`interleaving.estimate.estimate_matrix`, ``--comparisons``
  per pair, with the share of comparisons that got a click), then ``recommended``
  (:class:`bandits.sparring_certifier.SparringCertifier`, verdicts at ``error_rate`` δ)
  in :func:`bandits.simulator.simulate_run` until it certifies a champion. A step of the
  simulator is a comparison with a click (a search without one is no duel), so the
  searches are the steps of each pair divided by that pair's click rate.
* **A/B**: :func:`rollout.ab.simulation.simulate_ab`, users split equally over the
  arms. ``K = 2``: the weaker ranker is the control, decided when the interval of the
  difference of per-user CTR excludes 0. ``K = 8``: all eight rankers as arms, decided
  when one arm is shown better than each of the seven others
  (:func:`rollout.ab.compare.certified_best`, each pair at δ/(2(K − 1)), the same union
  as interleaving's certificate): "which is the best", the question interleaving answers
  (seven treatments against one control answer another question).

A decision is correct when it names the truly better (best) ranker; a run that decides
wrongly or not within the budget counts as the budget (so the medians are lower bounds
then, and say so with ``>``).

Scenarios (gaps as team-draft preference of the best over the runner-up, and CTR lift):

============  ============================  =========================================
scenario      rankers (best first)          gap
============  ============================  =========================================
K2-large      6 vs 2                        p = 0.80, CTR +3.1 %
K2-small      11 vs 3                       p = 0.57, CTR +0.38 %
K8-large      6, 0, 2, 4, 5, 7, 8, 9        p = 0.66 over 0, CTR +0.77 %
K8-small      1, 0, 2, 3, 4, 5, 7, 8        p = 0.54 over 3, CTR +0.36 %
============  ============================  =========================================

    python bench/sensitivity.py --runs 30 --out bench/results/ab/sensitivity.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bandits.simulator import simulate_run
from bandits.sparring_certifier import SparringCertifier
from interleaving.estimate import estimate_matrix
from interleaving.world import World
from rollout.ab.simulation import click_probabilities, simulate_ab

SCENARIOS = {
    "K2-large": [6, 2],
    "K2-small": [11, 3],
    "K8-large": [6, 0, 2, 4, 5, 7, 8, 9],
    "K8-small": [1, 0, 2, 3, 4, 5, 7, 8],
}
DELTA = 0.05
#: how often ``recommended`` checks its verdicts: as shipped, and as often as the A/B looks
#: ``check_every`` as shipped and a fine one: it paces the policy's guard, and until the
#: verdicts were checked after every comparison it was the earliest a certificate came
SHIPPED = 1000
FINE = 10


def interleaving_run(P: np.ndarray, rate: np.ndarray, best: int, seed: int,
                     budget: int, check_every: int) -> dict:
    """One ``recommended`` run on ``P``: duels and searches until its certificate."""
    box: dict = {}

    def factory(k, seed=None, **p):
        box["b"] = SparringCertifier(k, seed=seed, **p)
        return box["b"]

    # the arms shuffled here (as bench/verdict_error.py does), so the verdict maps back
    perm = np.random.default_rng([9001, seed]).permutation(P.shape[0])
    Pr, rr = P[np.ix_(perm, perm)], rate[np.ix_(perm, perm)]
    params = {"error_rate": DELTA, "check_every": check_every}
    simulate_run(Pr, factory, budget, seed, params=params, shuffle=False)
    v = box["b"].verdicts()
    at = v["certified_at"]
    if at is None:
        return {"correct": False, "duels": budget, "searches": None}
    # the same run again, to the certificate, counting the pairs shown (same trajectory)
    r = simulate_run(Pr, factory, max(at, 1), seed, params=params, shuffle=False,
                     record_shown=True)
    searches = float((r.shown.astype(float) / rr).sum())
    return {"correct": int(perm[v["certified"]]) == best, "duels": int(at),
            "searches": searches}


def ab_run(world, rankers: list[int], probs, seed: int, budget: int,
           click_model: str, metric: str) -> dict:
    K = len(rankers)
    if K == 2:
        control, treatment = rankers[1], rankers[0]  # the weaker one is the control
        r = simulate_ab(world, [control, treatment], budget, seed, stop_when_decided=True,
                        per_decade=40, probabilities=probs, n_target=10_000,
                        click_model=click_model, metric=metric)
        t = r.treatments[0]
        return {"correct": t.correct, "searches": t.decided_at if t.correct else None,
                "users": sum(r.users.values())}
    r = simulate_ab(world, rankers, budget, seed, certify=True, stop_when_decided=True,
                    per_decade=40, probabilities=probs, n_target=10_000,
                    click_model=click_model, metric=metric)
    ok = r.best == rankers[0]
    return {"correct": ok, "searches": r.best_at if ok else None,
            "users": sum(r.users.values())}


def median(xs: list, budget: float) -> tuple[float, bool]:
    """The median, counting a run without a correct decision as the budget; and
    whether that median is censored (a lower bound)."""
    vals = sorted(budget if x is None else x for x in xs)
    m = float(np.median(vals))
    return m, m >= budget


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--comparisons", type=int, default=100_000,
                    help="team-draft comparisons per pair for the matrix (default 100000)")
    ap.add_argument("--duels", type=int, default=2_000_000, help="interleaving budget")
    ap.add_argument("--searches", type=int, default=20_000_000, help="A/B budget")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--click-model", default="navigational",
                    help="the users' click model, for both designs (default navigational, "
                         "the demo's)")
    ap.add_argument("--ab-metric", choices=("ctr", "top_click"), default="ctr",
                    help="the A/B's per-user metric (default ctr)")
    ap.add_argument("--method", default="team_draft",
                    help="the interleaving method of the matrix (default team_draft)")
    ap.add_argument("--out")
    args = ap.parse_args()
    world = World(1, 12, 200, clear_best=True)
    t0 = time.time()
    P, N = estimate_matrix(world, args.method, args.click_model, args.comparisons,
                           np.random.default_rng(args.seed), return_counts=True)
    ctr = click_probabilities(world, args.click_model).mean(axis=1)
    probs = click_probabilities(world, args.click_model, metric=args.ab_metric)
    lift = probs.mean(axis=1)
    rate_all = N / args.comparisons
    np.fill_diagonal(rate_all, ctr)  # a ranker shown alone: its own click rate
    print(f"{args.click_model} users, A/B on {args.ab_metric}; {args.method} matrix, "
          f"{args.comparisons:,} comparisons per pair: "
          f"{time.time() - t0:.0f} s")
    rows = []
    for name in args.scenarios.split(","):
        rankers = SCENARIOS[name]
        idx = np.ix_(rankers, rankers)
        Ps, rate = P[idx], rate_all[idx]
        fine = [interleaving_run(Ps, rate, 0, args.seed + r, args.duels, FINE)
                for r in range(args.runs)]
        inter = [interleaving_run(Ps, rate, 0, args.seed + r, args.duels, SHIPPED)
                 for r in range(args.runs)]
        ab = [ab_run(world, rankers, probs, args.seed + r, args.searches, args.click_model,
                     args.ab_metric) for r in range(args.runs)]
        runner = min(rankers[1:], key=lambda j: P[rankers[0], j])  # the closest rival
        mi, ci = median([x["searches"] if x["correct"] else None for x in inter],
                        args.searches)
        mf, cf = median([x["searches"] if x["correct"] else None for x in fine],
                        args.searches)
        ma, ca = median([x["searches"] for x in ab], args.searches)
        row = {"scenario": name, "rankers": rankers, "runner_up": int(runner),
               "preference": float(P[rankers[0], runner]),
               "ctr_lift": float(ctr[rankers[0]] / ctr[runner] - 1),
               "metric_lift": float(lift[rankers[0]] / lift[runner] - 1),
               "interleaving_correct": sum(x["correct"] for x in inter),
               "interleaving_median_duels": float(np.median([x["duels"] for x in inter])),
               "interleaving_median_searches": mi, "interleaving_censored": ci,
               "fine_correct": sum(x["correct"] for x in fine),
               "fine_median_searches": mf, "fine_censored": cf,
               "fine_ratio": ma / mf, "fine": fine,
               "ab_correct": sum(x["correct"] for x in ab),
               "ab_median_searches": ma, "ab_censored": ca,
               "ratio": ma / mi, "runs": args.runs,
               "interleaving": inter, "ab": ab}
        rows.append(row)
        print(f"{name}: done ({time.time() - t0:.0f} s)", flush=True)
    print()
    print(f"searches until a correct decision at δ = {DELTA} (median of {args.runs} runs; "
          f"correct runs in brackets); interleaving with check_every = {SHIPPED:,} as "
          f"shipped, or {FINE} (verdicts are checked after every comparison either way: "
          f"the two columns agree unless the check period matters)")
    print(f"{'scenario':<9} {'pref':>5} {'CTR lift':>8} {'A/B':>12} {'':>7} "
          f"{'interleaving':>12} {'':>7} {'ratio':>7} {'check ' + str(FINE):>12} {'':>7} "
          f"{'ratio':>7}")
    for r in rows:
        ab = (">" if r["ab_censored"] else "") + f"{r['ab_median_searches']:,.0f}"
        gt = ">" if r["ab_censored"] else ""
        print(f"{r['scenario']:<9} {r['preference']:>5.2f} {100 * r['ctr_lift']:>+7.2f}% "
              f"{ab:>12} ({r['ab_correct']:>2}/{r['runs']:<2}) "
              f"{r['interleaving_median_searches']:>12,.0f} "
              f"({r['interleaving_correct']:>2}/{r['runs']:<2}) {gt}{r['ratio']:>6.1f}× "
              f"{r['fine_median_searches']:>12,.0f} ({r['fine_correct']:>2}/{r['runs']:<2}) "
              f"{gt}{r['fine_ratio']:>6.1f}×")
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1)
                                  + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
