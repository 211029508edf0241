"""Diagnostic: after a ``recommended`` run on a non-Condorcet matrix, how many comparisons
each ranker has had with the rankers that beat it, against the floor and the guard.

    .venv/bin/python bench/results/policy/nc_floor/diag_nc.py \\
        bench/results/policy/I64.txt 1e6 1,2,3,4

Same run as ``rankduel simulate`` with that seed: the policy is built through a factory
that keeps a reference, and the regret printed equals the evaluation's per-run figure.
"""

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import certification_floor as cf  # noqa: E402

from bandits import ACTIVE, get_algorithm  # noqa: E402
from bandits.condorcet_check import check, edge_radius  # noqa: E402
from bandits.simulator import simulate_run  # noqa: E402
from cli.matrix_files import load_matrix  # noqa: E402

DELTA = 0.01


def one_run(P: np.ndarray, steps: int, seed: int) -> None:
    K = P.shape[0]
    _, cost, wit = cf.non_condorcet_floor(P, DELTA)
    cls = get_algorithm("recommended")
    box: dict = {}

    def factory(k, seed=None, **kw):
        box["b"] = cls(k, seed=seed, **kw)
        return box["b"]

    res = simulate_run(P, factory, steps, seed)
    b = box["b"]
    # the simulator relabels the arms: run arm a is matrix arm perm[a]
    perm = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[0]).permutation(K)
    W = np.zeros((K, K))
    W[np.ix_(perm, perm)] = b.W
    N = W + W.T
    active = sorted(int(perm[a]) for a in np.flatnonzero(b.status == ACTIVE))
    beaten_by = P.T > 0.5  # beaten_by[i, j]: j beats i
    # evidence per ranker: Σ_j N_ij kl(p_ji, ½) over its beaters, in units of log(1/δ)
    klm = np.where(beaten_by, np.asarray(cf.kl_half(P.T)), 0.0)
    ev = (N * klm).sum(axis=1) / math.log(1 / DELTA)
    ch = check(W, list(range(K)), DELTA)
    more = "..." if len(active) > 10 else ""
    print(f"seed {seed}: regret {res.final_regret:,.1f}, identified {res.identified}, "
          f"flagged {b.flagged}, active {active[:10]}{more} ({len(active)}), "
          f"comparisons (i != j) {int(N.sum() / 2):,}")
    print(f"  rankers with floor evidence >= log(1/delta): {(ev >= 1).sum()}/{K}; "
          f"beaten with the guard's confidence: {K - len(ch['unbeaten'])}/{K}")
    # the guard's second path flags when every ranker in play is beaten with confidence:
    # the fewest comparisons that needs, each active ranker against its cheapest beater
    need = [cf.guard_comparisons(float(P[wit[a], a]), K, DELTA) for a in active]
    print(f"  guard, rankers in play each against its cheapest beater: "
          f"{sum(need):,} comparisons (largest {max(need):,})")
    for i in np.argsort(-cost)[:6]:
        j = wit[i]
        n = N[i, j]
        r = float(edge_radius(np.array([n]), K, DELTA)[0])
        print(f"  ranker {i}: witness {j} (p {P[j, i]:.4f}) compared {int(n):,} times "
              f"(floor {cost[i]:,.0f}), p_hat {W[j, i] / max(n, 1):.4f}, radius {r:.4f}; "
              f"evidence vs all beaters {ev[i]:.2f} x log(1/delta); "
              f"comparisons with all beaters {int(N[i][beaten_by[i]].sum()):,}")
    sys.stdout.flush()


def main() -> None:
    P = load_matrix(sys.argv[1])
    steps = int(float(sys.argv[2]))
    for seed in (int(x) for x in sys.argv[3].split(",")):
        one_run(P, steps, seed)


if __name__ == "__main__":
    main()
