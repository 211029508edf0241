"""Runs for the estimate's validation, saved, and estimators compared on them.

``--save FILE`` runs each policy to convergence on the validation instances
(:mod:`bench.estimate_validation`'s runs, same seeds, same trajectories) and pickles, per
run, the convergence point ``N`` and a copy of the policy at the last checkpoint at or
before ``--at`` × ``N``. ``--load FILE --estimators a,b`` then scores estimators on those
copies without rerunning the policies, so variants are compared on one set of runs (the
tuning seeds), and the chosen one is scored once on the evaluation seeds.

    .venv/bin/python bench/estimate_tuning.py --seed 5001 --runs 5 --save /tmp/tune.pkl
    .venv/bin/python bench/estimate_tuning.py --load /tmp/tune.pkl --estimators analytic,forward
"""

from __future__ import annotations

import argparse
import copy
import math
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from estimate_validation import INSTANCES, run

from bandits import decision
from bandits.base import ACTIVE, RETIRED, DuelingBandit

# --------------------------------------------------------------------------------------
# The alternative measured against the analytic estimate (and not adopted): a forward
# simulation of the policy itself from a copy of its state, on preference matrices drawn
# from a posterior of the preferences; the median of the comparisons until one active
# ranker is left.

def posterior_sample(W: np.ndarray, arms: np.ndarray, rng: np.random.Generator,
                     prior: float) -> np.ndarray:
    """One preference matrix (over all ``K`` arms; rows and columns of ``arms`` filled)
    drawn from a posterior of the preferences: for each pair ``a < b`` of ``arms``,
    ``p_ab ~ Beta(1 + w_ab + prior·bt_ab, 1 + w_ba + prior·(1 − bt_ab))`` with ``bt`` the
    Bradley–Terry fit of ``W`` (the shrinkage of :func:`preference_estimate` as a Beta
    prior), ``p_ba = 1 − p_ab``."""
    s = decision.bradley_terry_scores(W, arms)
    bt = s[:, None] / (s[:, None] + s[None, :])
    sub = W[np.ix_(arms, arms)]
    p = rng.beta(1.0 + sub + prior * bt, 1.0 + sub.T + prior * bt.T)
    upper = np.triu(p, 1)
    p = upper + (1.0 - upper.T) * np.tri(arms.size, k=-1)
    np.fill_diagonal(p, 0.5)
    P = np.full((bandit_size := W.shape[0], bandit_size), 0.5)
    P[np.ix_(arms, arms)] = p
    return P


def run_forward(bandit: DuelingBandit, P: np.ndarray, rng: np.random.Generator,
                max_steps: int) -> tuple[DuelingBandit, int, bool]:
    """Run a copy of ``bandit`` (its generator reseeded from ``rng``; ``bandit`` itself is
    untouched) on preferences ``P`` until one active ranker is left or ``max_steps``
    comparisons have been made: (the copy, comparisons made, converged)."""
    b = copy.deepcopy(bandit)
    b.rng = np.random.default_rng(int(rng.integers(2**63)))
    Pl = P.tolist()
    select, update = b.select, b.update
    eliminated = b.eliminated
    seen = -1
    steps = 0
    while steps < max_steps:
        if len(eliminated) != seen:  # eliminations (and merges) only follow updates
            seen = len(eliminated)
            if int(np.count_nonzero(b.status == ACTIVE)) <= 1:
                return b, steps, True
        for u in rng.random(min(256, max_steps - steps)).tolist():
            i, j = select()
            update(i, j, 1.0 if u < Pl[i][j] else 0.0)
            steps += 1
            if len(eliminated) != seen:
                break
    return b, steps, int(np.count_nonzero(b.status == ACTIVE)) <= 1


def forward_estimate(bandit: DuelingBandit, samples: int, max_steps: int,
                     prior: float
                     ) -> tuple[int | None, int]:
    """The median, over ``samples`` preference matrices drawn by
    :func:`posterior_sample`, of the comparisons a copy of the policy makes from its
    current state until one active ranker is left (:func:`run_forward`); a simulation
    stopped at ``max_steps`` counts its steps plus the analytic estimate at the state it
    reached (None if that has none). Returns (estimate, simulations stopped at the cap).
    Deterministic: the generator is seeded from the policy's counters."""
    rng = np.random.default_rng([int(bandit.n_updates), int(bandit.t), int(bandit.K), 2025])
    arms = np.flatnonzero(bandit.status != RETIRED)
    out: list[float] = []
    capped = 0
    for _ in range(samples):
        P = posterior_sample(bandit.W, arms, rng, prior)
        b, steps, done = run_forward(bandit, P, rng, max_steps)
        if done:
            out.append(float(steps))
            continue
        capped += 1
        active = [int(a) for a in np.flatnonzero(b.status == ACTIVE)]
        rest, _, _ = decision._estimate(b, int(b.best_arm()), active)
        out.append(math.inf if rest is None else float(steps + rest))
    med = float(np.median(out))
    return (None if not math.isfinite(med) else math.ceil(med)), capped



def estimators() -> dict:
    """name -> function(policy) -> estimate (int or None)."""
    out = {
        "analytic": lambda b: decision._estimate(
            b, int(b.best_arm()), [int(a) for a in np.flatnonzero(b.status == 0)])[0],
        "decide": lambda b: decision.decide(b).estimate,
    }
    for samples in (5, 9):
        for steps in (1000, 2000, 4000, 100000):
            for prior in (20.0, 200.0):
                out[f"fwd{samples}x{steps}p{prior:g}"] = (
                    lambda b, s=samples, m=steps, p=prior:
                    forward_estimate(b, s, m, p)[0])
    for stretch in (1.0, 1.25):
        out[f"fwdbt{stretch:g}"] = lambda b, x=stretch: forward_bt(b, x)
    for prior in (50.0, 200.0):
        out[f"anpost{prior:g}"] = lambda b, x=prior: analytic_posterior(b, x)
    return out


def analytic_posterior(bandit: DuelingBandit, prior: float, samples: int = 9
                       ) -> int | None:
    """The median over ``samples`` posterior draws of the preferences
    (:func:`posterior_sample`) of the analytic estimate computed on each draw."""
    rng = np.random.default_rng([int(bandit.n_updates), 2025])
    arms = np.flatnonzero(bandit.status != RETIRED)
    saved = decision.preference_estimate
    out = []
    try:
        for _ in range(samples):
            P = posterior_sample(bandit.W, arms, rng, prior)[np.ix_(arms, arms)]
            decision.preference_estimate = lambda W, a, prior=None, P=P: P
            e = decision._estimate(bandit, int(bandit.best_arm()),
                                   [int(a) for a in np.flatnonzero(bandit.status == ACTIVE)])[0]
            out.append(math.inf if e is None else e)
    finally:
        decision.preference_estimate = saved
    med = float(np.median(out))
    return math.ceil(med) if math.isfinite(med) else None


def forward_bt(bandit: DuelingBandit, stretch: float, samples: int = 3,
               max_steps: int = 20000) -> int | None:
    """Forward simulations on the Bradley-Terry fit itself (log-strengths times
    ``stretch``), no pair-level noise: the median."""
    arms = np.flatnonzero(bandit.status != RETIRED)
    s = decision.bradley_terry_scores(bandit.W, arms) ** stretch
    P = np.full((bandit.K, bandit.K), 0.5)
    P[np.ix_(arms, arms)] = s[:, None] / (s[:, None] + s[None, :])
    rng = np.random.default_rng([int(bandit.n_updates), 2025])
    out = []
    for _ in range(samples):
        _, steps, done = run_forward(bandit, P, rng, max_steps)
        out.append(steps if done else math.inf)
    med = float(np.median(out))
    return int(med) if math.isfinite(med) else None


def oracle(algorithm: str, label: str, seed: int, b, samples: int = 5) -> int:
    """The median of ``samples`` forward simulations on the run's true preferences (a
    ceiling: no estimator knows them)."""
    rng = np.random.default_rng(seed)
    P = INSTANCES[label](seed)
    perm = rng.permutation(P.shape[0])
    Pr = P[np.ix_(perm, perm)]
    sim = np.random.default_rng(seed + 99)
    return int(np.median([run_forward(b, Pr, sim, 10**7)[1]
                          for _ in range(samples)]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algorithms", default="mergemed,mergedts")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=5001)
    ap.add_argument("--at", type=float, default=0.2)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--save")
    ap.add_argument("--load")
    ap.add_argument("--estimators", default="analytic")
    args = ap.parse_args(argv)
    if args.save:
        rows = []
        for algorithm in args.algorithms.split(","):
            for label, make in INSTANCES.items():
                for r in range(args.runs):
                    seed = args.seed + r
                    N, records = run(make(seed), algorithm, seed, args.every, 3_000_000)
                    at = [(n, b) for n, b in records if N is not None and n <= args.at * N]
                    n, b = at[-1] if at else (None, None)
                    rows.append((algorithm, label, seed, N, n, b))
                    print(algorithm, label, seed, N, n, flush=True)
        with open(args.save, "wb") as f:
            pickle.dump(rows, f)
        return 0
    with open(args.load, "rb") as f:
        rows = pickle.load(f)
    est = estimators()
    for name in args.estimators.split(","):
        fn = est.get(name)
        ok = total = 0
        per: dict[tuple[str, str], list[float]] = {}
        secs = []
        for algorithm, label, seed, N, n, b in rows:
            total += 1
            if b is None:
                continue
            t0 = time.perf_counter()
            e = oracle(algorithm, label, seed, b) if name == "oracle" else fn(b)
            secs.append(time.perf_counter() - t0)
            ratio = math.inf if e is None else e / (N - n)
            per.setdefault((algorithm, label), []).append(ratio)
            ok += 0.5 <= ratio <= 2.0
        print(f"{name}: {ok}/{total} within 2x; median time {np.median(secs):.3f}s")
        for (algorithm, label), rs in per.items():
            good = sum(0.5 <= x <= 2 for x in rs)
            print(f"   {algorithm:<9} {label:<16} {good}/{len(rs)}  "
                  + " ".join(f"{x:.2f}" for x in rs), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
