"""How often tests/e2e/test_cluster.py's MergeDTS experiments name a wrong champion.

The cluster test runs 20 MergeDTS experiments (alpha 0.8**6, c 10, batch size 8) of 5
rankers of ``demo_world(1, 8)`` (the true best and 4 others drawn with
``np.random.default_rng(e)``), 150 sessions each, team-draft interleaving, perfect users.
Offline, each experiment is :func:`bandits.simulator.simulate_run` for 150 steps on its
5×5 block of the world's preference matrix (team draft, perfect clicks, a tie ½, as the
live credit counts it), over ``--seeds`` seeds, for each live-like feedback setting
``DELAY:BATCH`` (``simulate_run``'s ``delay`` and ``feedback_batch``). A run is wrong
when its ``best_arm()`` is not the true best. Printed per experiment: the wrong rate and
the comparisons made (steps that showed two different rankers: the decisive impressions,
less the ~2 % without a click live); then for X, the number of wrong experiments out of
20: P(X >= k) from the measured rates and from a uniform rate at the 99 % upper
Clopper-Pearson bound of the pooled rate; and the test's pooled check (the true best
wins more than it loses against every other ranker on W summed over the 20 experiments):
how many of the ``--seeds`` simulated tests fail it, and the smallest win share seen.

    .venv/bin/python bench/cluster_champion_rate.py [--seeds 1000] [--feedback 0:1,10:5]
        [--alpha 0.262144 --c 10]  (other MergeDTS params than the test's)
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import beta

from bandits import make_bandit
from bandits.simulator import simulate_run
from demo.world_rankers import demo_world
from interleaving.estimate import estimate_matrix

PARAMS = {"alpha": 0.8**6, "c": 10.0, "batch_size": 8}
EXPERIMENTS, STEPS = 20, 150


def at_least(rates: np.ndarray) -> np.ndarray:
    """``out[k]`` = P(at least ``k`` of independent events with probabilities ``rates``)."""
    dist = np.array([1.0])
    for p in rates:
        dist = np.convolve(dist, [1.0 - p, p])
    return dist[::-1].cumsum()[::-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--feedback", default="0:1,10:5", help="DELAY:BATCH,...")
    ap.add_argument("--alpha", type=float, default=PARAMS["alpha"])
    ap.add_argument("--c", type=float, default=PARAMS["c"])
    a = ap.parse_args()
    params = dict(PARAMS, alpha=a.alpha, c=a.c)
    world = demo_world(1, 8)
    best = world.true_best
    P = estimate_matrix(world, "team_draft", "perfect", 20_000, np.random.default_rng(1))
    others = [r for r in range(8) if r != best]
    exps = []
    for e in range(EXPERIMENTS):
        rng = np.random.default_rng(e)
        exps.append(sorted([best, *(int(r) for r in rng.choice(others, 4, replace=False))]))
    made = []  # the policy of the last run, to read its W

    def policy(K, seed, **params):
        made[:] = [make_bandit("mergedts", K, seed=seed, **params)]
        return made[0]

    print(f"MergeDTS {params}, {STEPS} steps, {a.seeds} seeds per experiment")
    for fb in a.feedback.split(","):
        delay, batch = (int(x) for x in fb.split(":"))
        pooled = np.zeros((a.seeds, 8, 8))
        rates, n_wrong = [], 0
        print(f"\ndelay {delay}, feedback batch {batch}\n  exp  rankers           "
              "min p(best)  wrong  rate    comparisons: median (min)")
        for e, chosen in enumerate(exps):
            sub = P[np.ix_(chosen, chosen)]
            b = chosen.index(best)
            wrong, compared = 0, []
            for s in range(a.seeds):
                seed = 100_000 * e + s
                res = simulate_run(sub, policy, STEPS, seed=seed, params=params,
                                   fast_forward=False, delay=delay, feedback_batch=batch,
                                   record_shown=True)
                wrong += res.identified != b
                compared.append(int(res.shown.sum() - np.trace(res.shown)))
                perm = np.random.default_rng(
                    np.random.SeedSequence(seed).spawn(4)[0]).permutation(5)
                W = np.zeros((5, 5))
                W[np.ix_(perm, perm)] = made[0].W
                pooled[s][np.ix_(chosen, chosen)] += W
            rates.append(wrong / a.seeds)
            n_wrong += wrong
            margin = min(sub[b, j] for j in range(5) if j != b)
            print(f"  {e:>3}  {chosen!s:<17} {margin:>8.3f}  {wrong:>5}  "
                  f"{rates[-1]:.4f}  {int(np.median(compared)):>5} ({min(compared)})")
        r = np.array(rates)
        n_runs = EXPERIMENTS * a.seeds
        hi = float(beta.ppf(0.99, n_wrong + 1, n_runs - n_wrong))
        share = pooled[:, best, others] / (pooled[:, best, others] + pooled[:, others, best])
        print(f"  pooled rate {n_wrong}/{n_runs} = {n_wrong / n_runs:.4f}, 99% upper "
              f"bound {hi:.4f}")
        print("  P(X >= k), k = 1..6, measured rates: "
              + "  ".join(f"{x:.1e}" for x in at_least(r)[1:7]))
        print(f"  P(X >= k), k = 1..6, uniform {hi:.4f}:  "
              + "  ".join(f"{x:.1e}" for x in at_least(np.full(EXPERIMENTS, hi))[1:7]))
        print(f"  pooled check failed in {(share <= 0.5).any(axis=1).sum()} of {a.seeds} "
              f"tests; smallest win share of the best {share.min():.3f}")


if __name__ == "__main__":
    main()
