"""``rankduel simulate``: offline regret simulation on a preference matrix (and, with
``--design ab``, offline A/B tests of the simulated world's rankers:
:mod:`cli.commands.simulate_ab`).

Contract (external scripts call it exactly so)::

    rankduel simulate --matrix P.txt --algorithm mergedts --param alpha=0.262 \\
        --param batch_size=16 --param c=4000000 --steps 1000000 --runs 10 --seed 1 --out DIR

writes ``DIR/summary.json`` and ``DIR/regret.png``. With ``--algorithm a,b,c`` it writes
``DIR/<name>/summary.json`` (and a plot) per algorithm plus a combined ``DIR/regret.png``.
The plots need matplotlib (the ``demo`` extra); without it the command writes the
summaries, says in one line that the plots were not drawn and what to install, and exits 0.

* ``--param key=value`` values are parsed as the type the algorithm declares for ``key``
  (``PARAMS``, :mod:`bandits.params`; a bad one exits 2 with ``--param alpha: expected a
  number, got 'abc'``; an unknown name lists the valid ones), and apply to every
  algorithm named; ``--param name.key=value`` applies only to algorithm ``name``
  (an extension of the contract, for runs comparing algorithms with different settings).
* Run ``r`` (0-based) uses seed ``--seed + r`` for every algorithm, so algorithms meet the
  same arm shuffles; the run itself is :func:`bandits.simulator.simulate_run`.
* ``--jobs N`` runs the runs in N processes; results do not depend on N.
* ``steps_per_second`` (per run and overall) counts steps that went through the policy's
  ``select()``/``update()`` per second of loop time, i.e. before any fast-forward.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from bandits import ALGORITHMS, get_algorithm
from bandits.matrices import arm_regret
from bandits.params import check
from bandits.simulator import RunResult, aggregate, log_checkpoints, simulate_run
from cli import params as cli_params
from cli.matrix_files import load_matrix
from cli.plots import Curve, PlotsUnavailable, plot_regret
from cli.progress import Progress


# ---------------------------------------------------------------------- parsing
def parse_value(text: str) -> int | float | str:
    """``"16"`` → 16, ``"0.262"`` / ``"4e6"`` → float, anything else stays a string."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_params(items: list[str], algorithms: list[str]) -> dict[str, dict[str, Any]]:
    """``--param`` items → parameters per policy (:func:`cli.params.parse_params`, the
    parser every command shares), each value of the type the policy declares."""
    return cli_params.parse_params(items, algorithms, lambda a: get_algorithm(a).PARAMS)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def check_params(name: str, params: dict[str, Any], K: int) -> None:
    """Fail early, with a clear message, on parameters the policy does not declare or
    that are out of their declared bounds, before any process starts; then build the
    policy once for what only it can check (MergeDTS's C(ε) needs alpha > 0.5)."""
    declared = get_algorithm(name).PARAMS
    unknown = [k for k in params if k not in declared]
    if unknown:
        raise ValueError(
            f"{name} does not take parameter(s) {', '.join(unknown)}; it takes: "
            f"{', '.join(declared) or 'none'} (scope a setting to one algorithm with "
            f"--param ALGORITHM.KEY=VALUE)"
        )
    check(name, declared, params)
    try:
        get_algorithm(name)(K, seed=0, **params)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} with {params}: {exc}") from None


# ---------------------------------------------------------------------- output
def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def build_summary(
    name: str,
    params: dict[str, Any],
    P: np.ndarray,
    steps: int,
    results: list[RunResult],
) -> dict[str, Any]:
    """The ``summary.json`` document (exactly these fields: external scripts read them)."""
    _, winner, kind = arm_regret(P)
    agg = aggregate(results)
    effective = {**params, **results[0].params}
    guarded = get_algorithm(name).condorcet_guard
    return _jsonable(
        {
            "algorithm": name,
            "params": effective,
            "K": int(P.shape[0]),
            "steps": int(steps),
            "runs": len(results),
            "winner": winner,
            "winner_kind": kind,
            "checkpoints": agg.checkpoints,
            "regret_mean": agg.mean,
            "regret_stderr": agg.stderr,
            "per_run": [
                {
                    "seed": r.seed,
                    "final_regret": r.final_regret,
                    "identified": r.identified,
                    "correct": r.correct,
                    "steps_per_second": r.steps_per_second,
                    # policies with a non-Condorcet guard (MergeGuard) add
                    # whether and when it was raised; the others keep the base fields
                    **({"flagged_non_condorcet": r.flagged_non_condorcet,
                        "flagged_at": r.flagged_at} if guarded else {}),
                    # --estimate: the report's estimate at each checkpoint
                    **({"estimated_comparisons_to_decide": r.estimates}
                       if r.estimates is not None else {}),
                }
                for r in results
            ],
            "steps_per_second": agg.steps_per_second,
        }
    )


def _curve(summary: dict[str, Any]) -> Curve:
    return Curve(
        name=summary["algorithm"],
        checkpoints=summary["checkpoints"],
        mean=summary["regret_mean"],
        stderr=summary["regret_stderr"],
        runs=summary["runs"],
    )


# ---------------------------------------------------------------------- running
def run_all(
    P: np.ndarray,
    algorithms: list[str],
    params: dict[str, dict[str, Any]],
    steps: int,
    runs: int,
    seed: int,
    jobs: int = 1,
    *,
    fast_forward: bool = True,
    per_decade: int = 20,
    progress: Progress | None = None,
    **live: Any,
) -> dict[str, list[RunResult]]:
    """Every (algorithm, run) pair, in order; in ``jobs`` processes when ``jobs > 1``.
    ``live``: ``delay``, ``feedback_batch``, ``reload_every`` and ``estimate`` of
    ``simulate_run``."""
    cps = log_checkpoints(steps, per_decade)
    tasks = [(a, r) for a in algorithms for r in range(runs)]
    results: dict[tuple[str, int], RunResult] = {}
    kwargs = {"checkpoints": cps, "fast_forward": fast_forward, **live}
    if jobs <= 1:
        for a, r in tasks:
            results[a, r] = simulate_run(
                P, a, steps, seed + r, params=params[a],
                progress=progress.advance if progress else None, **kwargs,
            )
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(simulate_run, P, a, steps, seed + r, params=params[a], **kwargs):
                (a, r)
                for a, r in tasks
            }
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                if progress:
                    progress.advance(steps)
    return {a: [results[a, r] for r in range(runs)] for a in algorithms}


def _run_ab(args: argparse.Namespace) -> int:
    from cli.commands.simulate_ab import run_ab

    return run_ab(args)


#: the offline run of a design other than interleaving, by ``--design``
DESIGN_RUNS = {"ab": _run_ab}


def run_simulate(args: argparse.Namespace) -> int:
    run = DESIGN_RUNS.get(args.design)
    if run is not None:
        return run(args)
    missing = [o for o, v in (("--matrix", args.matrix), ("--algorithm", args.algorithm),
                              ("--steps", args.steps)) if v is None]
    if missing:
        raise ValueError(f"the following arguments are required: {', '.join(missing)}")
    algorithms = [a.strip() for a in args.algorithm.split(",") if a.strip()]
    if not algorithms:
        raise ValueError("--algorithm names no algorithm")
    if len(set(algorithms)) != len(algorithms):
        raise ValueError(f"--algorithm names an algorithm twice: {args.algorithm}")
    for a in algorithms:
        get_algorithm(a)  # unknown names fail here, with the list of known ones
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out} is a file; give a directory (created if absent)")
    P = load_matrix(args.matrix)
    K = P.shape[0]
    if K < 2:
        raise ValueError(f"{args.matrix}: need at least 2 arms, got {K}")
    params = parse_params(args.param or [], algorithms)
    for a in algorithms:
        check_params(a, params[a], K)

    out.mkdir(parents=True, exist_ok=True)
    label = f"simulate {','.join(algorithms)} K={K}"
    with Progress(len(algorithms) * args.runs * args.steps, label) as progress:
        by_alg = run_all(
            P, algorithms, params, args.steps, args.runs, args.seed, args.jobs,
            fast_forward=not args.no_fast_forward, per_decade=args.per_decade,
            progress=progress, delay=args.delay, feedback_batch=args.feedback_batch,
            reload_every=args.reload_every, estimate=args.estimate,
        )

    single = len(algorithms) == 1
    summaries = []
    figures = []  # (curves, path, title)
    for a in algorithms:
        summary = build_summary(a, params[a], P, args.steps, by_alg[a])
        summaries.append(summary)
        where = out if single else out / a
        where.mkdir(parents=True, exist_ok=True)
        (where / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        if not single:
            figures.append(([_curve(summary)], where / "regret.png", f"{a}, K={K}"))
    title = f"K={K}, {args.runs} run{'s' if args.runs != 1 else ''}, {Path(args.matrix).name}"
    figures.append(([_curve(s) for s in summaries], out / "regret.png", title))
    try:
        for curves, path, fig_title in figures:
            plot_regret(curves, path, title=fig_title)
    except PlotsUnavailable as exc:  # the results are written; only the figures are missing
        print(f"rankduel simulate: summary.json written, regret.png not drawn: {exc}",
              file=sys.stderr)
    print_table(summaries, file=sys.stdout)
    if args.estimate:
        print_estimates(summaries, file=sys.stdout)
    return 0


def print_estimates(summaries: list[dict[str, Any]], file=None) -> None:
    """Run 0's estimate of the comparisons still needed, at every few checkpoints."""
    for s in summaries:
        run0 = s["per_run"][0]
        est = run0.get("estimated_comparisons_to_decide") or []
        cps = s["checkpoints"]
        step = max(1, len(cps) // 12)
        print(f"{s['algorithm']} (seed {run0['seed']}): estimated comparisons to decide",
              file=file)
        for k in sorted({*range(0, len(cps), step), len(cps) - 1}):
            if k < len(est):
                e = est[k]
                print(f"  step {cps[k]:>12,}: {'none' if e is None else f'{e:,}'}",
                      file=file)


def print_table(summaries: list[dict[str, Any]], file=None) -> None:
    """A plain table: final regret mean ± stderr, correct runs, steps/s."""
    print(f"{'algorithm':<14} {'final regret':>24} {'correct':>8} {'steps/s':>10}", file=file)
    for s in summaries:
        correct = sum(r["correct"] for r in s["per_run"])
        sps = s["steps_per_second"]
        print(
            f"{s['algorithm']:<14} {s['regret_mean'][-1]:>12.1f} ± {s['regret_stderr'][-1]:<9.1f}"
            f" {correct:>4}/{s['runs']:<3} {sps if sps is not None else float('nan'):>10,.0f}",
            file=file,
        )
        flags = [(r["seed"], r["flagged_at"])
                 for r in s["per_run"] if r.get("flagged_non_condorcet")]
        if get_algorithm(s["algorithm"]).condorcet_guard:
            print(f"  {s['algorithm']}: flagged_non_condorcet in {len(flags)}/{s['runs']} "
                  f"runs; flagged_at (seed, update): {flags}", file=file)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="offline regret simulation on a preference matrix",
        description=(
            "Run dueling-bandit algorithms on a preference matrix (Bernoulli outcomes) and "
            "record cumulative regret: DIR/summary.json and DIR/regret.png, or "
            "DIR/<name>/summary.json per algorithm and a combined DIR/regret.png."
        ),
    )
    parser.add_argument("--design", choices=("interleaving", "ab"), default="interleaving",
                        help="interleaving: dueling bandits on --matrix (default); ab: "
                             "offline A/B tests of the simulated world's rankers")
    parser.add_argument("--matrix",
                        help="K×K preference matrix: .txt (numpy.loadtxt), .csv or .npy "
                             "(required by the interleaving design)")
    parser.add_argument("--algorithm",
                        help="algorithm name, or several separated by commas: "
                             + ", ".join(ALGORITHMS))
    parser.add_argument("--param", action="append", metavar="KEY=VALUE",
                        help="algorithm parameter (repeatable); ALGORITHM.KEY=VALUE scopes it")
    parser.add_argument("--steps", type=cli_params.parse_steps,
                        help="time steps per run (e.g. 100000 or 1e6)")
    parser.add_argument("--runs", type=positive_int, default=1,
                        help="runs per algorithm (default 1)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of run 0; run r uses seed + r (default 0)")
    parser.add_argument("--out", required=True,
                        help="output directory (created if absent; not an existing file)")
    parser.add_argument("--jobs", type=positive_int, default=1,
                        help="parallel processes (default 1)")
    parser.add_argument("--per-decade", type=positive_int, default=20,
                        help="checkpoints per factor 10 of time (default 20)")
    parser.add_argument("--no-fast-forward", action="store_true",
                        help="loop every step even after a single arm remains")
    parser.add_argument("--delay", type=int, default=0, metavar="D",
                        help="apply each outcome after D more selections, as live (default 0)")
    parser.add_argument("--feedback-batch", type=positive_int, default=1, metavar="B",
                        help="apply outcomes in groups of B, as the worker does (default 1)")
    parser.add_argument("--reload-every", type=int, default=0, metavar="R",
                        help="select from a copy of the stored state reloaded every R "
                             "selections, as an API process does (default 0: no copy)")
    parser.add_argument("--estimate", action="store_true",
                        help="record at each checkpoint the report's estimate of the "
                             "comparisons still needed to decide (per_run[]."
                             "estimated_comparisons_to_decide in summary.json; printed)")
    from cli.commands.simulate_ab import add_arguments

    add_arguments(parser)
    parser.set_defaults(func=run_simulate)
