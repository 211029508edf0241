"""Diagnostic: after a recommended run on a non-Condorcet matrix, how many comparisons
each ranker has had with the rankers that beat it, against the floor and the guard."""
import sys, json, math
import numpy as np
sys.path.insert(0, '/work/wt-policy'); sys.path.insert(0, '/work/wt-policy/bench')
from bandits import get_algorithm, ACTIVE
from bandits.simulator import simulate_run
from bandits.condorcet_check import check, radius
from cli.matrix_files import load_matrix
import certification_floor as cf

path, steps, seeds = sys.argv[1], int(float(sys.argv[2])), [int(x) for x in sys.argv[3].split(',')]
P = load_matrix(path); K = P.shape[0]
total, cost, wit = cf.non_condorcet_floor(P, 0.01)
cls = get_algorithm('recommended')
for seed in seeds:
    box = {}
    def f(K, seed=None, **kw):
        b = cls(K, seed=seed, **kw); box['b'] = b; return b
    res = simulate_run(P, f, steps, seed)
    b = box['b']
    s_perm = np.random.SeedSequence(seed).spawn(4)[0]
    perm = np.random.default_rng(s_perm).permutation(K)
    W = np.zeros((K, K)); W[np.ix_(perm, perm)] = b.W
    N = W + W.T
    active = sorted(int(perm[a]) for a in np.flatnonzero(b.status == ACTIVE))
    beaten_by = P.T > 0.5  # beaten_by[i, j]: j beats i
    # evidence collected per ranker: sum_j N_ij kl(p_ji, 1/2) over its beaters, in units of log(1/delta)
    klm = np.where(beaten_by, np.asarray(cf.kl_half(P.T)), 0.0)
    ev = (N * klm).sum(axis=1) / math.log(100)
    ch = check(W, list(range(K)), 0.01)
    print(f"seed {seed}: regret {res.final_regret:,.1f}, identified {res.identified}, flagged {b.flagged}, "
          f"active {active[:10]}{'...' if len(active) > 10 else ''} ({len(active)}), "
          f"comparisons (i != j) {int(N.sum() / 2):,}")
    print(f"  rankers with floor evidence >= log(1/delta): {(ev >= 1).sum()}/{K}; "
          f"beaten with the guard's confidence: {K - len(ch['unbeaten'])}/{K}")
    for i in np.argsort(-cost)[:6]:
        j = wit[i]; n = N[i, j]
        print(f"  ranker {i}: witness {j} (p {P[j, i]:.4f}) compared {int(n):,} times "
              f"(floor {cost[i]:,.0f}), p_hat {W[j, i] / max(n, 1):.4f}, "
              f"radius {float(radius(np.array([n]), K * (K - 1) // 2, 0.01)[0]):.4f}; "
              f"evidence vs all beaters {ev[i]:.2f} x log(1/delta); comparisons with all beaters {int(N[i][beaten_by[i]].sum()):,}")
    sys.stdout.flush()
