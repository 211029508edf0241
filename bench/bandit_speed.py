"""Steps per second of every registered dueling-bandit policy, before convergence.

For each K (default 136 and 700) a Bradley–Terry preference matrix is generated
(:func:`bandits.matrices.bradley_terry`, smallest gap 0.01) and each policy runs the
simulator's loop — ``select()``, a Bernoulli outcome per compared pair, ``update()``
(``update_many()`` for multi-dueling policies) — for the first ``--steps`` steps, or until
``--max-seconds`` have passed. Those first steps are before convergence (the script prints
how many arms each policy still had active at the end, so this can be checked): nothing
is fast-forwarded. The outcome uniforms are drawn before the clock starts, as in
:mod:`bandits.simulator`.

Policies that do not import yet (modules being written) are skipped with a note.
Parameters are the tuned values of Li et al. 2020, §5.5 where it gives them (MergeDTS α=0.8⁶,
M=16, C=4·10⁶; MergeRUCB α=0.8⁶, M=8, C=4·10⁵; DTS α=0.8⁷), else the policy's defaults.

The machine is shared, so all runs of one K (``--repeat`` per policy, different seeds)
are advanced in interleaved slices of about 20 ms: every policy sees the same load, and
each figure is total steps over total measured time (wall clock, and CPU time of the
process, which a loaded machine disturbs less). ``x literal`` compares with
``mergedts-literal``, a direct transcription of Algorithms 1–3 measured the same way (it
stands in for the authors' published code, which is not available here).

``--kernels`` measures instead what each of MergeDTS's sampling kernels
(:mod:`bandits.merge_sampling`: scalar, stacked, lookahead) costs in each regime they
compete for: fixed batch layouts (``C = 10^300``, so nothing is eliminated and the regime
holds), each kernel forced in turn through ``DTSPairs.small_batch`` /
``ahead_max_batches`` (MergeDTS's pair rule), all runs of a regime interleaved; µs of CPU per step
(select + update), and the kernel the policy chooses there.

    .venv/bin/python bench/bandit_speed.py
    .venv/bin/python bench/bandit_speed.py --ks 136 --algorithms mergedts,mergerucb
    .venv/bin/python bench/bandit_speed.py --kernels
    .venv/bin/python bench/bandit_speed.py --matrix bench/results/policy/P136.txt \
        --algorithms recommended,mergedts --repeat 2

``--matrix FILE`` times the policies on a stored preference matrix (its own K) instead of
the generated Bradley–Terry ones; ``--ks`` is then ignored.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bandits import ACTIVE, ALGORITHMS, DuelingBandit, get_algorithm
from bandits.matrices import bradley_terry
from bandits.merge_dts import DTSPairs, MergeDTS
from bandits.merge_partition import pair_batches

#: tuned parameters from Li et al. 2020, §5.5 (Table/Section 6.7), where the paper gives them
TUNED = {
    "mergedts": {"alpha": 0.8**6, "batch_size": 16, "c": 4e6},
    "mergerucb": {"alpha": 0.8**6, "batch_size": 8, "c": 4e5},
    "dts": {"alpha": 0.8**7},
}


class LiteralMergeDTS(DuelingBandit):
    """Algorithms 1–3 of Li et al. 2020 transcribed step by step with plain numpy: every step
    builds the batch's ``U`` and purges it (lines 10–14), draws Beta variates for every
    pair and for Phase II (``rng.beta``), and checks line 18. A stand-in for the
    authors' published code (not available here), to give the speed of a direct
    implementation measured in the same run."""

    name = "mergedts-literal"

    def __init__(self, n_arms, *, alpha, batch_size, c, seed=None):
        super().__init__(n_arms, seed=seed)
        self.alpha, self.M, self.C = alpha, batch_size, c
        nb = -(-self.K // batch_size)
        self.B = [list(range(k * batch_size, min(self.K, (k + 1) * batch_size))) for k in range(nb)]
        self.s = 1

    def _select(self):
        m = self.t % len(self.B)
        arms = np.array(self.B[m])
        if len(self.B) == 1 and arms.size == 1:
            return (int(arms[0]), int(arms[0]))
        w = self.W[np.ix_(arms, arms)]
        n = w + w.T
        with np.errstate(divide="ignore", invalid="ignore"):
            U = np.where(n > 0, w / n, 1.0) + np.where(
                n > 0, np.sqrt(self.alpha * np.log(self.t + self.C) / n), 1.0
            )
        np.fill_diagonal(U, 0.5)
        keep = ~(U < 0.5).any(axis=1)
        for a in arms[~keep]:
            self.status[a] = 1
        arms, w = arms[keep], w[np.ix_(keep, keep)]
        self.B[m] = arms.tolist()
        if len(self.B) > 1 and arms.size == 1:
            nxt = (m + 1) % len(self.B)
            self.B[nxt] = sorted(self.B[nxt] + self.B[m])
            del self.B[m]
            return self._select()
        if len(self.B) == 1 and arms.size == 1:
            return (int(arms[0]), int(arms[0]))
        iu, ju = np.triu_indices(arms.size, 1)
        theta = np.full((arms.size, arms.size), 0.5)
        theta[iu, ju] = self.rng.beta(w[iu, ju] + 1, w[ju, iu] + 1)
        theta[ju, iu] = 1 - theta[iu, ju]
        kappa = (theta > 0.5).sum(axis=1)
        top = np.flatnonzero(kappa == kappa.max())
        c = int(top[self.rng.integers(top.size)])
        phi = self.rng.beta(w[:, c] + 1, w[c, :] + 1)
        phi[c] = 1.0
        d = int(phi.argmin())
        return (int(arms[c]), int(arms[d]))

    def _update(self, i, j, outcome):
        if sum(len(b) for b in self.B) <= self.K / 2**self.s:
            self.B = pair_batches(self.B, self.M)
            self.s += 1


def make_policy(name: str, K: int, seed: int):
    if name == LiteralMergeDTS.name:
        return LiteralMergeDTS(K, seed=seed, **TUNED["mergedts"]), TUNED["mergedts"]
    cls = get_algorithm(name)
    params = TUNED.get(name, {})
    try:
        return cls(K, seed=seed, **params), params
    except TypeError:
        return cls(K, seed=seed), {}


class Runner:
    """One policy on one instance, advanced a slice at a time so that all policies of a
    comparison are measured interleaved, under the same machine load."""

    def __init__(self, name: str, P: np.ndarray, steps: int, max_seconds: float, seed: int):
        self.name, self.steps, self.max_seconds = name, steps, max_seconds
        self.K = P.shape[0]
        self.bandit, self.params = make_policy(name, self.K, seed)
        self.Pl = P.tolist()
        self.env = np.random.default_rng(seed + 1)
        self.done = 0
        self.wall = self.cpu = 0.0

    @property
    def finished(self) -> bool:
        return self.done >= self.steps or self.wall >= self.max_seconds

    def advance(self, seconds: float) -> None:
        """Run for about ``seconds`` (in blocks of 50 steps), timing only the policy."""
        b, Pl, K = self.bandit, self.Pl, self.K
        select, update = b.select, b.update
        multi = getattr(b, "multi", False)
        spent = 0.0
        while spent < seconds and not self.finished:
            n = min(50, self.steps - self.done)
            if multi:
                us = self.env.random((n, K)).tolist()
                w0, c0 = time.perf_counter(), time.process_time()
                for row in us:
                    arms = select()
                    outs = []
                    for x in range(len(arms)):
                        for y in range(x + 1, len(arms)):
                            i, j = arms[x], arms[y]
                            outs.append((i, j, 1.0 if row[i] < Pl[i][j] else 0.0))
                    b.update_many(outs)
            else:
                us = self.env.random(n).tolist()
                w0, c0 = time.perf_counter(), time.process_time()
                for u in us:
                    i, j = select()
                    update(i, j, 1.0 if u < Pl[i][j] else 0.0)
            dw = time.perf_counter() - w0
            spent += dw
            self.wall += dw
            self.cpu += time.process_time() - c0
            self.done += n

    @property
    def active(self) -> int:
        return int(np.count_nonzero(self.bandit.status == ACTIVE))


#: kernel -> the thresholds that force it (``None``: the policy's own choice)
KERNELS = {
    "scalar": {"small_batch": 10**9, "ahead_max_batches": 0},  # lone batches only
    "stacked": {"small_batch": 1, "ahead_max_batches": 0},
    "lookahead": {"small_batch": 1, "ahead_max_batches": 10**9},
    "chosen": None,
}
#: (number of batches, batch size) regimes for --kernels
REGIMES = [(1, 4), (1, 8), (1, 10), (1, 12), (1, 16), (1, 24), (2, 16), (3, 16), (4, 16),
           (5, 16), (8, 16), (17, 8)]


def chosen_kernel(n_batches: int, size: int) -> str:
    """The kernel MergeDTS uses for ``n_batches`` batches of ``size`` arms."""
    small = size <= DTSPairs.small_batch
    if small and n_batches == 1:
        return "scalar"
    if not small and n_batches <= DTSPairs.ahead_max_batches:
        return "lookahead"
    return "stacked"


def kernel_table(steps: int, seed: int) -> None:
    """µs of CPU per MergeDTS step, by regime and forced kernel (see the docstring)."""
    print("# MergeDTS: CPU µs per step (select + update) by regime and sampling kernel;")
    print(f"# {steps} steps per kernel and regime, interleaved in blocks of 50 (order rotated),")
    print("# C = 1e300 (nothing is eliminated); chosen = the policy's own choice")
    names = list(KERNELS)
    print(f"{'batches':>7} {'size':>4} " + " ".join(f"{k:>9}" for k in names) + "  chosen is")
    for nb, size in REGIMES:
        K = nb * size
        P = bradley_terry(K, gap=0.01, seed=seed).tolist()
        us = np.random.default_rng(seed + 1).random(steps).tolist()
        runs = {}
        for kernel, force in KERNELS.items():
            if kernel == "scalar" and nb > 1:
                continue
            cls = MergeDTS if force is None else type(
                f"MergeDTS_{kernel}", (MergeDTS,),
                {"PAIRS": type(f"DTSPairs_{kernel}", (DTSPairs,), force)})
            b = cls(K, alpha=0.8**6, batch_size=size, c=1e300, seed=seed)
            assert len(b.batches) == nb, (nb, size, b.batches)
            runs[kernel] = [b, 0, 0.0]
        order = list(runs.values())
        for start in range(0, steps, 50):
            order = order[1:] + order[:1]  # rotate: no kernel always runs first
            for run in order:
                b, _, _ = run
                select, update = b.select, b.update
                c0 = time.process_time()
                for u in us[start : start + 50]:
                    i, j = select()
                    update(i, j, 1.0 if u < P[i][j] else 0.0)
                run[2] += time.process_time() - c0
                run[1] += len(us[start : start + 50])
        cells = []
        for kernel in names:
            if kernel in runs:
                _, n, cpu = runs[kernel]
                cells.append(f"{cpu / n * 1e6:>9.2f}")
            else:
                cells.append(f"{'-':>9}")
        print(f"{nb:>7} {size:>4} " + " ".join(cells) + f"  {chosen_kernel(nb, size)}")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[136, 700])
    ap.add_argument("--steps", type=int, default=20_000, help="steps measured per run")
    ap.add_argument(
        "--max-seconds", type=float, default=5.0, help="cap on the measured time per run"
    )
    ap.add_argument("--repeat", type=int, default=2, help="runs per policy (times are summed)")
    ap.add_argument(
        "--algorithms",
        default=",".join([*ALGORITHMS, LiteralMergeDTS.name]),
        help="comma-separated registered names (plus mergedts-literal, the baseline)",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--matrix", default=None,
        help="time on this stored preference matrix (its own K) instead of --ks",
    )
    ap.add_argument(
        "--kernels", action="store_true",
        help="time MergeDTS's sampling kernels by regime instead (uses --steps)",
    )
    args = ap.parse_args(argv)
    if args.kernels:
        kernel_table(args.steps, args.seed)
        return 0

    names = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    available = []
    for name in names:
        if name == LiteralMergeDTS.name:
            available.append(name)
            continue
        try:
            get_algorithm(name)
        except (ImportError, AttributeError, ValueError) as exc:
            print(f"# skipped {name}: {type(exc).__name__}: {exc}")
            continue
        available.append(name)

    if args.matrix is not None:
        print(f"# matrix {args.matrix}")
    print(
        f"# first {args.steps} steps of each run (measured time capped at "
        f"{args.max_seconds:g} s), {args.repeat} runs per policy, all interleaved"
    )
    print("# wall/s: steps per wall-clock second; cpu/s: per CPU second of the process;")
    print("# x uniform, x literal: wall rate / that of uniform, of mergedts-literal (same K,")
    print("# same load); cpu x lit: the same on CPU rates (steadier on a loaded machine);")
    print("# active: fewest arms still active at the end of a run")
    print(
        f"{'algorithm':<17} {'K':>4} {'steps':>6} {'wall/s':>9} {'cpu/s':>9} {'x uniform':>9} "
        f"{'x literal':>9} {'cpu x lit':>9} {'active':>6}  params"
    )
    if args.matrix is not None:
        from cli.matrix_files import load_matrix

        P0 = load_matrix(args.matrix)
        instances = [(P0.shape[0], P0)]
    else:
        instances = [(K, bradley_terry(K, gap=0.01, seed=args.seed)) for K in args.ks]
    for K, P in instances:
        runs = {
            name: [
                Runner(name, P, args.steps, args.max_seconds, args.seed + 10 * r)
                for r in range(args.repeat)
            ]
            for name in available
        }
        pending = [r for rs in runs.values() for r in rs]
        while pending:
            for r in pending:
                r.advance(0.02)
            pending = [r for r in pending if not r.finished]
        rate = {n: sum(r.done for r in rs) / sum(r.wall for r in rs) for n, rs in runs.items()}
        cpu = {n: sum(r.done for r in rs) / sum(r.cpu for r in rs) for n, rs in runs.items()}
        base = rate.get(LiteralMergeDTS.name, float("nan"))
        cpu_base = cpu.get(LiteralMergeDTS.name, float("nan"))
        floor = rate.get("uniform", float("nan"))
        for name, rs in runs.items():
            done = sum(r.done for r in rs) // len(rs)
            active = min(r.active for r in rs)
            ptxt = ", ".join(f"{k}={v:g}" for k, v in rs[0].params.items())
            print(
                f"{name:<17} {K:>4} {done:>6} {rate[name]:>9,.0f} {cpu[name]:>9,.0f} "
                f"{rate[name] / floor:>9.2f} {rate[name] / base:>9.1f} "
                f"{cpu[name] / cpu_base:>9.1f} {active:>6}  {ptxt}"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
