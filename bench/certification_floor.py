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

Instances must have a Condorcet winner, except with ``--non-condorcet``.

*The non-Condorcet floor* (``--non-condorcet``, for a matrix without a Condorcet
winner). Flagging "no Condorcet winner" at confidence ``δ`` means flagging with
probability at most ``δ`` on every instance that has one. For each ranker ``i`` take the
alternative instance in which ``i`` is a Condorcet winner: every ``p_ji > ½`` is moved to
½ (just below), nothing else changes. A test that flags on ``P`` (with probability → 1)
and on that alternative with probability ≤ ``δ`` must, by the change of measure
(Kaufmann, Cappé & Garivier 2016, Lemma 1), collect ``Σ_j N_ij kl(p_ji, ½) ≥ kl(1 − δ',
δ) ≈ log(1/δ)``, so at least ``log(1/δ) / max_j kl(p_ji, ½)`` comparisons of ``i`` with
the rankers that beat it. A comparison of ``i`` with ``j`` enters only the constraint of
its loser (the alternative for ``j`` changes no pair that ``j`` already wins), so the
constraints use disjoint comparisons and add up:

    nc_floor(δ) = Σ_i min_{j: p_ji > ½} log(1/δ) / kl(p_ji, ½)   comparisons.

It is a floor in comparisons (steps of ``rankduel simulate``), for any test and any
sampling rule, whatever the horizon. Beside it the script prints what the guard of
:mod:`bandits.condorcet_check` needs with its anytime edge test (a normal-mixture
boundary, each edge at ``δ/(K − 1)``): per ranker the fewest comparisons ``n`` with one
of its beaters at which ``p_ji − r(n) > ½`` (the observed frequency taken at its mean),
summed; and the same for the ranker that is hardest to refute alone (after convergence
the guard flags as soon as every ranker still in play is beaten with confidence, so one
ranker's cost is what a policy converged on it must spend).

    .venv/bin/python bench/certification_floor.py bench/results/policy/I64.txt --non-condorcet
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


def non_condorcet_floor(P: np.ndarray, delta: float = 0.01,
                        rhs: float | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """The fewest comparisons that can show at confidence ``δ`` that ``P`` has no
    Condorcet winner (module docstring, "The non-Condorcet floor"): ``(total, cost,
    witness)`` with ``cost[i] = rhs / max_j kl(p_ji, ½)`` over the rankers ``j`` with
    ``p_ji > ½`` (``rhs`` defaults to ``log(1/δ)``), ``witness[i]`` that cheapest ``j``,
    and ``total = Σ_i cost[i]``. A ranker that nobody beats (a Condorcet winner, or one
    only tied) costs ``inf``, witness -1.

    Examples
    --------
    >>> P = np.array([[0.5, 0.6, 0.4], [0.4, 0.5, 0.6], [0.6, 0.4, 0.5]])
    >>> total, cost, witness = non_condorcet_floor(P, 0.01)
    >>> round(total), witness.tolist()
    (686, [2, 0, 1])
    """
    P = np.asarray(P, dtype=float)
    K = P.shape[0]
    r = math.log(1.0 / delta) if rhs is None else float(rhs)
    cost = np.full(K, math.inf)
    witness = np.full(K, -1, dtype=int)
    for i in range(K):
        js = np.flatnonzero(P[:, i] > 0.5)
        js = js[js != i]
        if js.size == 0:
            continue
        kl = np.asarray(kl_half(P[js, i]), dtype=float)
        b = int(np.argmax(kl))
        cost[i] = r / float(kl[b])
        witness[i] = int(js[b])
    return float(cost.sum()), cost, witness


def guard_comparisons(p: float, n_arms: int, delta: float = 0.01) -> int:
    """The fewest comparisons ``n`` of a pair with ``p > ½`` at which the guard's edge
    test (:func:`bandits.condorcet_check.edge_radius` among ``n_arms`` arms) gives
    ``p − r(n) > ½``: what the guard needs when the observed frequency sits at its
    mean. ``0`` for ``p ≤ ½`` would be wrong, so that raises.

    Examples
    --------
    >>> guard_comparisons(0.6, 3, 0.01)
    359
    """
    from bandits.common import first_true
    from bandits.condorcet_check import edge_radius

    gap = p - 0.5
    if gap <= 0:
        raise ValueError("p must be above 1/2")

    n = first_true(lambda m: bool(edge_radius(np.array([float(m)]), n_arms, delta)[0] < gap))
    assert n is not None  # no limit: the radius shrinks to 0
    return n


def non_condorcet_report(P: np.ndarray, delta: float = 0.01) -> int:
    """Print the non-Condorcet floor of ``P`` and what the guard needs (``--non-condorcet``)."""
    from bandits.matrices import condorcet_winner, copeland_winners

    K = P.shape[0]
    c = condorcet_winner(P)
    score = (P > 0.5).sum(axis=1)  # rankers each one beats
    print(f"K = {K}; Condorcet winner: {c}; Copeland winners: {copeland_winners(P)} "
          f"(beat {int(score.max())} of {K - 1})")
    if c is not None:
        print(f"ranker {c} beats every other: no test can show there is no Condorcet winner")
        return 0
    lg = math.log(1.0 / delta)
    total, cost, witness = non_condorcet_floor(P, delta)
    total95, _, _ = non_condorcet_floor(P, delta, rhs=float(_kl(0.95, delta)))
    guard = np.array([guard_comparisons(float(P[witness[i], i]), K, delta)
                      for i in range(K)], dtype=float)
    print(f"non-Condorcet floor at δ = {delta:g}: Σ_i min_j log(1/δ) / kl(p_ji, ½) = "
          f"{total:,.0f} comparisons (log(1/δ) = {lg:.3f}; with kl(0.95, δ) = "
          f"{_kl(0.95, delta):.3f} for 95 % detection: {total95:,.0f})")
    print(f"the guard (anytime edge test, each edge at δ/(K − 1), δ = {delta:g}), "
          f"each ranker against its cheapest beater: Σ_i = {guard.sum():,.0f} comparisons "
          f"({guard.sum() / total:.1f}× the floor)")
    order = np.argsort(-cost)
    print("the rankers hardest to refute (floor and guard cost, comparisons with the witness):")
    print(f"{'ranker':>6} {'beats':>8} {'witness':>7} {'p_ji':>7} {'gap':>7} "
          f"{'floor':>12} {'guard':>12} {'share':>6}")
    for i in order[:10]:
        j = witness[i]
        print(f"{i:>6} {int(score[i]):>8} {j:>7} {P[j, i]:>7.4f} {P[j, i] - 0.5:>7.4f} "
              f"{cost[i]:>12,.0f} {guard[i]:>12,.0f} {cost[i] / total:>6.1%}")
    return 0


def _kl(p: float, q: float) -> float:
    """Bernoulli ``kl(p, q)``."""
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


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
    ap.add_argument("--per-run", action="store_true",
                    help="also print each run's seed, regret, last step and lost winner")
    ap.add_argument("--non-condorcet", action="store_true",
                    help="for a matrix without a Condorcet winner: the floor of showing "
                         "that (at --delta) and what the guard needs; no oracle runs")
    ap.add_argument("--delta", type=float, default=0.01,
                    help="confidence of --non-condorcet (default 0.01, the guard's)")
    args = ap.parse_args(argv)
    P = load_matrix(args.matrix)
    if args.non_condorcet:
        print(f"{args.matrix}:")
        return non_condorcet_report(P, args.delta)
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
            if args.per_run:
                print(f"  run seed {args.seed + r}: regret {reg:,.1f}, last step {t:,}, "
                      f"lost winner {was_lost}", flush=True)
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
