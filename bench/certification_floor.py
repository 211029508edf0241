"""What a flat policy must pay on an instance: the information floor and an oracle's cost.

Issue 15 asks for a policy whose regret at 10⁶ steps is below Self-Sparring's *and* stops
growing afterwards, without ever eliminating the Condorcet winner. A policy whose regret
stops growing plays the winner against itself for ever: it has, in effect, certified that
the winner beats every other ranker. This script measures what that certificate costs on
a given preference matrix, in two ways that do not depend on how a policy finds the
winner.

*The information floor.* To stop playing ranker ``i`` for good, with probability at most
``δ`` of doing so on the instance where ``i`` beats the winner instead, a policy must
collect ``Σ_j N_ij kl(p_ij, ½) ≥ log(1/δ)`` (the change-of-measure argument of Kaufmann,
Cappé & Garivier 2016, Lemma 1; the same comparison gives the ``log T`` lower bound of RMED,
Komiyama et al. 2015, Theorem 2). Spending it on the cheapest opponent ``j`` (one that
beats ``i``; usually the winner) costs at least

    floor(δ) = log(1/δ) · Σ_i min_j (Δ_i + Δ_j) / (2 kl(p_ij, ½)),

with ``Δ`` the arms' regrets (Li et al. 2020, eq. 1). No flat policy that loses the winner with
probability at most ``δ`` per ranker pays less in expectation, whatever its horizon.

*The oracle certifier.* A policy that is *told* the Condorcet winner ``c`` at step 1 and
only has to certify it: it compares ``c`` with every other active ranker in turn and
removes ranker ``i`` when MergeMED's divergence test (``bandits.merge_med``: ``n ·
kl(p̂, ½) > 2α log(t + 1 + C)``) says ``c`` beats it, or removes ``c`` when the test says
``i`` beats ``c`` (a lost winner: the run then keeps ``i`` and goes on, and is counted).
Every real policy also has to *find* the winner, so this is a lower estimate of what an
elimination policy with that test pays at that ``α``. With ``--find`` the same loop
starts from a random ranker instead and hands the lead to a challenger that beats the
leader in their duels with a little evidence (``n · kl(p̂, ½) > 2``; king of the hill): a
simple policy that has to find the winner, for comparison. The script prints, per ``α``, the
mean regret when the winner survived, the number of runs that lost it, and when the runs
converged.

    .venv/bin/python bench/certification_floor.py bench/results/floor/P136.txt --runs 100
    .venv/bin/python bench/certification_floor.py P700.txt --runs 20 --alphas 0.236,0.2
    .venv/bin/python bench/certification_floor.py N136.txt --runs 8 --seed 1 --steps 1e6

Instances must have a Condorcet winner.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bandits.matrices import arm_regret
from bandits.merge_med import MED_ALPHA, kl_half
from cli.matrix_files import load_matrix

C = 4e6  #: MergeMED's C


def floor_constant(P: np.ndarray) -> tuple[float, int]:
    """``Σ_i min_j (Δ_i + Δ_j) / (2 kl(p_ij, ½))`` over the rankers ``i`` other than the
    winner (``j`` ranging over the rankers that beat ``i``), and the winner."""
    delta, c, kind = arm_regret(P)
    if kind != "condorcet" or c is None:
        raise SystemExit("the matrix has no Condorcet winner")
    total = 0.0
    for i in range(P.shape[0]):
        if i == c:
            continue
        js = np.flatnonzero(P[:, i] > 0.5)
        cost = (delta[i] + delta[js]) / 2.0 / np.asarray(kl_half(P[i, js]))
        total += float(cost.min())
    return total, int(c)


def _beaten(w: float, n: float, thr: float) -> bool:
    """MergeMED's elimination test for ``w`` wins in ``n`` comparisons."""
    if n == 0 or 2.0 * w >= n:
        return False
    p = w / n
    kl = (p * math.log(2.0 * p) if p > 0.0 else 0.0) + (1.0 - p) * math.log(2.0 * (1.0 - p))
    return n * kl > thr


#: evidence ``n · kl(p̂, ½)`` with which a challenger takes the lead (``--find``)
SWITCH = 2.0


def oracle_run(P: np.ndarray, winner: int, alpha: float, seed: int, find: bool = False,
               max_steps: int = 10**8) -> tuple[float, int, bool]:
    """One run of the oracle certifier (``find``: of king of the hill from a random
    ranker): (regret until one ranker is left, the step it was left alone, whether the
    winner was eliminated)."""
    rng = np.random.default_rng(seed)
    delta, _, _ = arm_regret(P)
    K = P.shape[0]
    W = np.zeros((K, K))
    leader = int(rng.integers(K)) if find else winner
    active = [a for a in rng.permutation(K).tolist() if a != leader]
    regret = 0.0
    lost = False
    t = 0
    k = 0
    block = rng.random(4096)
    while active and t < max_steps:
        k = k % len(active)
        e = active[k]
        t += 1
        u = block[t % 4096]
        if t % 4096 == 0:
            block = rng.random(4096)
        regret += (delta[leader] + delta[e]) / 2.0
        if u < P[leader, e]:
            W[leader, e] += 1
        else:
            W[e, leader] += 1
        n = W[leader, e] + W[e, leader]
        thr = 2.0 * alpha * math.log(t + 1 + C)
        if _beaten(W[e, leader], n, thr):
            active.pop(k)
        elif _beaten(W[leader, e], n, thr):
            lost = lost or leader == winner
            active.pop(k)
            active.append(leader)
            leader = e
        elif find and W[e, leader] > W[leader, e] and _beaten(W[leader, e], n, SWITCH):
            active[k], leader = leader, e
            k += 1
        else:
            k += 1
    return regret, t, lost


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("matrix", help="preference matrix with a Condorcet winner")
    ap.add_argument("--runs", type=int, default=100, help="oracle runs per α (default 100)")
    ap.add_argument("--seed", type=int, default=1001, help="seed of run 0 (default 1001)")
    ap.add_argument("--alphas", default=f"{MED_ALPHA},0.2,0.17,0.15",
                    help="comma-separated α values for the oracle (default MergeMED's "
                         "and three smaller)")
    ap.add_argument("--deltas", default="0.1,0.01,0.001", help="δ values for the floor")
    ap.add_argument("--find", action="store_true",
                    help="start from a random ranker (king of the hill), not the winner")
    ap.add_argument("--steps", type=float, default=1e8,
                    help="stop a run after this many steps (default 1e8); the regret "
                         "column is then the regret at that step for runs that had not "
                         "converged (near-ties that need more comparisons)")
    args = ap.parse_args(argv)
    P = load_matrix(args.matrix)
    const, winner = floor_constant(P)
    print(f"{args.matrix}: K = {P.shape[0]}, Condorcet winner {winner}")
    print(f"floor constant Σ_i min_j (Δ_i + Δ_j) / (2 kl(p_ij, ½)) = {const:,.1f}")
    for d in (float(x) for x in args.deltas.split(",")):
        print(f"  floor at δ = {d:g}: {const * math.log(1 / d):,.0f}")
    who = ("king of the hill (starts at a random ranker)" if args.find
           else "oracle certifier (winner known at step 1)")
    print(f"{who}, MergeMED's test, C = 4e6:")
    print(f"{'alpha':>7} {'threshold':>9} {'floor(thr)':>10} {'regret (kept)':>16} "
          f"{'lost winner':>11} {'converged at (median)':>22}")
    for alpha in (float(x) for x in args.alphas.split(",")):
        thr = 2.0 * alpha * math.log(1 + C)
        kept, steps, lost = [], [], 0
        for r in range(args.runs):
            reg, t, was_lost = oracle_run(P, winner, alpha, args.seed + r, args.find,
                                          max_steps=int(args.steps))
            steps.append(t)
            if was_lost:
                lost += 1
            else:
                kept.append(reg)
        if kept:
            m = float(np.mean(kept))
            se = float(np.std(kept, ddof=1) / math.sqrt(len(kept))) if len(kept) > 1 else 0.0
            cell = f"{m:,.0f} ± {se:,.0f}"
        else:
            cell = "-"
        capped = sum(s >= int(args.steps) for s in steps)
        note = f"  ({capped} runs stopped at {int(args.steps):,})" if capped else ""
        print(f"{alpha:7.3f} {thr:9.2f} {const * thr:10,.0f} {cell:>16} "
              f"{lost:>5d}/{args.runs:<5d} {int(np.median(steps)):>22,}{note}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
