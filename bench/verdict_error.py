"""P(wrong certified verdict) of ``recommended``, and whether the Condorcet winner is ever
lost for good, over many seeded runs.

A run's verdict is *wrong* when the policy certifies a champion
(:meth:`bandits.sparring_certifier.SparringCertifier.verdicts`) that is not the matrix's
Condorcet winner, at any step of the run (a certificate is never withdrawn, so the end of
the run tells). The winner is *lost for good* when it was shown worse at ``1 − δ`` (the
only irreversible state: an arm merely no longer shown can be readmitted). The rate is
printed with its Clopper–Pearson 95 % interval; the claim checked is that it is at most δ.

Two kinds of instance:

``near-tied``
    one new 8-ranker instance per run, from :func:`bandits.matrices.utility_matrix`
    (Brost et al.'s user model): the winner 0.003–0.01 ahead of three rivals (gaps drawn
    uniformly per rival), 0.03–0.2 ahead of the four others; the rivals are as close to
    one another. Where the test bites: a near-tie is where a boundary is crossed wrongly.
``matrix FILE``
    one fixed matrix (e.g. the K = 136 development instances of bench/results/policy),
    arms shuffled per run as ``rankduel simulate`` does; regret at the end is printed.

    python bench/verdict_error.py near-tied --runs 2000 --steps 100000 --seed 1 \\
        --out bench/results/verdicts/near_tied.json
    python bench/verdict_error.py matrix bench/results/policy/P136.txt --runs 30 \\
        --steps 1000000 --seed 1 --out bench/results/verdicts/p136.json

Runs one process (the machine is shared); ``--resume`` continues a JSON file of runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bandits.matrices import condorcet_winner, utility_matrix
from bandits.simulator import simulate_run
from bandits.sparring_certifier import SparringCertifier


def near_tied(seed: int, close: tuple[float, float] = (0.003, 0.01)) -> np.ndarray:
    """An 8-ranker instance: the winner (arm 0 before shuffling) ``close`` (default
    0.003–0.01) ahead of three rivals, 0.03–0.2 ahead of four others."""
    rng = np.random.default_rng([7103, seed])
    gaps = np.concatenate([rng.uniform(*close, 3), rng.uniform(0.03, 0.2, 4)])
    # p = Φ((u_w − u)/√2) = ½ + g  ⇔  u = −√2 Φ⁻¹(½ + g)
    from scipy.special import ndtri

    u = np.concatenate([[0.0], -math.sqrt(2.0) * ndtri(0.5 + gaps)])
    return utility_matrix(u)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval for ``k`` of ``n``."""
    a = (1.0 - level) / 2.0
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1.0 - a, k + 1, n - k))
    return lo, hi


def one_run(P: np.ndarray, steps: int, seed: int, params: dict) -> dict:
    """One seeded run; the arms are shuffled here (so the verdict maps back)."""
    rng = np.random.default_rng([9001, seed])
    perm = rng.permutation(P.shape[0])
    Pr = P[np.ix_(perm, perm)]  # run arm a is matrix arm perm[a]
    box: dict = {}

    def factory(k: int, seed=None, **p):
        box["b"] = SparringCertifier(k, seed=seed, **p)
        return box["b"]

    t0 = time.perf_counter()
    r = simulate_run(Pr, factory, steps, seed, params=params, shuffle=False)
    b: SparringCertifier = box["b"]
    v = b.verdicts()
    w = condorcet_winner(Pr)
    cert = v["certified"]
    return {
        "seed": seed,
        "winner": int(perm[w]),
        "certified": None if cert is None else int(perm[cert]),
        "certified_at": v["certified_at"],
        "wrong": bool(cert is not None and cert != w),
        "lost_for_good": bool(w in v["shown_worse"]),
        "winner_in_play": bool(b.status[w] == 0),
        "champion_correct": bool(b.best_arm() == w),
        "shown_worse": len(v["shown_worse"]),
        "revived": len(b.revived),
        "readmitted": len(b.readmitted),
        "flagged": bool(b.flagged),
        "regret": float(r.final_regret),
        "seconds": round(time.perf_counter() - t0, 2),
    }


def summary(runs: list[dict], delta: float) -> str:
    n = len(runs)
    k = sum(r["wrong"] for r in runs)
    lo, hi = clopper_pearson(k, n)
    cert = sum(r["certified"] is not None for r in runs)
    lost = sum(r["lost_for_good"] for r in runs)
    reg = np.array([r["regret"] for r in runs])
    se = reg.std(ddof=1) / math.sqrt(n) if n > 1 else 0.0
    return (f"runs {n}: wrong certified verdicts {k} ({k / n:.4f}, 95% CP [{lo:.4f}, {hi:.4f}]"
            f", δ = {delta:g}: {'within' if lo <= delta else 'ABOVE'}); certified {cert}/{n}; "
            f"winner lost for good {lost}; winner in play at the end "
            f"{sum(r['winner_in_play'] for r in runs)}/{n}; champion correct "
            f"{sum(r['champion_correct'] for r in runs)}/{n}; readmissions before / after "
            f"convergence {sum(r['revived'] for r in runs)} / "
            f"{sum(r['readmitted'] for r in runs)}; flagged {sum(r['flagged'] for r in runs)}; "
            f"regret at the end {reg.mean():,.0f} ± {se:,.0f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["near-tied", "matrix"])
    ap.add_argument("matrix", nargs="?", help="the matrix file (kind 'matrix')")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--steps", type=float, default=1e5)
    ap.add_argument("--seed", type=int, default=1, help="first seed; runs use seed..seed+runs-1")
    ap.add_argument("--error-rate", type=float, default=0.05)
    ap.add_argument("--close", default="0.003,0.01",
                    help="near-tied: the winner's gaps to its three rivals, LO,HI")
    ap.add_argument("--out", type=Path, help="JSON file of the runs (written as they finish)")
    ap.add_argument("--resume", action="store_true", help="continue the runs in --out")
    a = ap.parse_args(argv)
    if a.kind == "matrix":
        if not a.matrix:
            ap.error("kind 'matrix' needs a matrix file")
        from cli.matrix_files import load_matrix

        fixed = load_matrix(a.matrix)
        if condorcet_winner(fixed) is None:
            ap.error(f"{a.matrix} has no Condorcet winner: a wrong verdict is undefined")
    params = {"error_rate": a.error_rate}
    runs: list[dict] = []
    if a.resume and a.out and a.out.exists():
        runs = json.loads(a.out.read_text())["runs"]
    done = {r["seed"] for r in runs}
    for seed in range(a.seed, a.seed + a.runs):
        if seed in done:
            continue
        lo, hi = (float(x) for x in a.close.split(","))
        P = near_tied(seed, (lo, hi)) if a.kind == "near-tied" else fixed
        runs.append(one_run(P, int(a.steps), seed, params))
        if a.out and (a.kind == "matrix" or len(runs) % 10 == 0
                      or seed == a.seed + a.runs - 1):
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps({"kind": a.kind, "matrix": a.matrix, "close": a.close,
                                         "steps": int(a.steps), "params": params,
                                         "summary": summary(runs, a.error_rate),
                                         "runs": runs}, indent=1))
        if len(runs) % 100 == 0:
            print(summary(runs, a.error_rate), flush=True)
    print(summary(runs, a.error_rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
