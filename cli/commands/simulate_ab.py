"""``rankduel simulate --design ab``: offline A/B tests of the simulated world's rankers.

    rankduel simulate --design ab --world 1:12 --rankers 2,6 --searches 100000 \\
        --runs 200 --seed 1 --out DIR

runs ``--runs`` seeded A/B tests (run ``r`` uses seed ``--seed + r``) of world rankers
``--rankers`` (the control first, then one or more treatments; the same ranker twice is
an A/A test) on the world ``--world SEED:K`` (default ``1:12``, the demo's world, with
its clear best ranker), with the demo's users and click model
(:func:`rollout.ab.simulation.simulate_ab`), and writes ``DIR/summary.json``: the
settings, one summary per run (per treatment: decided, direction, when, the lift and its
interval, whether the intervals held the true difference and lift; the SRM check) and
the rates over the runs, which it also prints.
"""

from __future__ import annotations

import argparse
import json
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from cli.params import parse_steps
from rollout.ab.simulation import ABRun, click_probabilities, simulate_ab


def parse_rankers(text: str, K: int) -> list[int]:
    """``"2,6"`` → ``[2, 6]``: at least two world rankers, each in ``0..K−1``."""
    try:
        rankers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--rankers: expected ranker numbers such as 2,6, got {text!r}") \
            from None
    if len(rankers) < 2:
        raise ValueError("--rankers: name the control and at least one treatment, e.g. 2,6")
    bad = [r for r in rankers if not 0 <= r < K]
    if bad:
        raise ValueError(f"--rankers: the world has rankers 0..{K - 1}, not {bad}")
    return rankers


def parse_shares(text: str | None, n: int) -> list[float] | None:
    if not text:
        return None
    try:
        shares = [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--shares: expected numbers such as 0.9,0.1, got {text!r}") from None
    if len(shares) != n or any(not s > 0 for s in shares):
        raise ValueError(f"--shares: give {n} positive shares, one per ranker of --rankers")
    return shares


def rates(runs: list[ABRun]) -> dict[str, Any]:
    """The rates over the runs, per treatment."""
    out: dict[str, Any] = {"runs": len(runs),
                           "srm_flagged": sum(r.srm_flagged for r in runs) / len(runs)}
    for i, t0 in enumerate(runs[0].treatments):
        ts = [r.treatments[i] for r in runs]
        decided = [t for t in ts if t.decided]
        out[t0.arm] = {
            "ranker": t0.ranker, "true_difference": t0.true_difference,
            "true_lift": t0.true_lift,
            "decided": len(decided) / len(ts),
            "correct": sum(t.correct for t in ts) / len(ts),
            "wrong_direction": sum(t.decided and not t.correct for t in ts) / len(ts),
            "covered": sum(t.covered for t in ts) / len(ts),
            "lift_covered": sum(t.lift_covered for t in ts) / len(ts),
            "never_missed": sum(not t.ever_missed for t in ts) / len(ts),
            "median_decided_at": (sorted(t.decided_at for t in decided)[len(decided) // 2]
                                  if decided else None),
        }
    return out


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return x


def run_ab(args: argparse.Namespace) -> int:
    from interleaving.world import World

    if args.rankers is None:
        raise ValueError("--design ab needs --rankers CONTROL,TREATMENT (world rankers, "
                         "e.g. 2,6)")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out} is a file; give a directory (created if absent)")
    world = World.from_spec(args.world, clear_best=True)
    rankers = parse_rankers(args.rankers, world.n_rankers)
    shares = parse_shares(args.shares, len(rankers))
    if not 0 <= args.fallback < 1:
        raise ValueError("--fallback must be a share in [0, 1)")
    if not 0 < args.delta < 1:
        raise ValueError("--delta must be in (0, 1)")
    probs = click_probabilities(world, args.click_model, metric=args.metric)
    kwargs = dict(shares=shares, click_model=args.click_model, delta=args.delta,
                  fallback=args.fallback, metric=args.metric, probabilities=probs)
    seeds = [args.seed + r for r in range(args.runs)]
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            runs = list(pool.map(_one, [(world, rankers, args.searches, s, kwargs)
                                        for s in seeds]))
    else:
        runs = [simulate_ab(world, rankers, args.searches, s, **kwargs) for s in seeds]
    summary = {"design": "ab", "world": args.world, "rankers": rankers,
               "searches": args.searches, "click_model": args.click_model,
               "metric": args.metric,
               "delta": args.delta, "fallback": args.fallback,
               "shares": runs[0].shares, "rates": rates(runs),
               "per_run": [r.to_json() for r in runs]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(_jsonable(summary), indent=1) + "\n")
    print_rates(summary["rates"])
    return 0


def _one(task: tuple) -> ABRun:
    world, rankers, searches, seed, kwargs = task
    return simulate_ab(world, rankers, searches, seed, **kwargs)


def print_rates(r: dict[str, Any], file=None) -> None:
    """One line per treatment, then the SRM line."""
    print(f"{'arm':<13} {'ranker':>6} {'true lift':>10} {'decided':>8} {'correct':>8} "
          f"{'covered':>8} {'lift cov.':>9} {'never missed':>12} {'median at':>10}", file=file)
    for arm, t in r.items():
        if not isinstance(t, dict):
            continue
        at = t["median_decided_at"]
        print(f"{arm:<13} {t['ranker']:>6} {100 * t['true_lift']:>+9.2f}% "
              f"{t['decided']:>8.1%} {t['correct']:>8.1%} {t['covered']:>8.1%} "
              f"{t['lift_covered']:>9.1%} {t['never_missed']:>12.1%} "
              f"{'-' if at is None else f'{at:,}':>10}", file=file)
    print(f"SRM flagged in {r['srm_flagged']:.1%} of {r['runs']} runs", file=file)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``--design ab`` (``--runs``, ``--seed``, ``--out``, ``--jobs`` are
    shared with the interleaving design)."""
    ab = parser.add_argument_group("--design ab (offline A/B tests on the simulated world)")
    ab.add_argument("--world", metavar="SEED:K", default="1:12",
                    help="the simulated world (default 1:12, the demo's)")
    ab.add_argument("--rankers", metavar="C,T[,T...]",
                    help="world rankers: the control, then the treatments (2,2 is an A/A)")
    ab.add_argument("--searches", type=parse_steps, default=100_000,
                    help="searches per run, all arms (default 100000)")
    ab.add_argument("--shares", metavar="S,S[,S...]",
                    help="each arm's share of the users (default equal)")
    ab.add_argument("--fallback", type=float, default=0.0,
                    help="share of each treatment's users served and counted in the "
                         "control: a broken split (default 0)")
    ab.add_argument("--click-model", default="navigational",
                    help="the users' click model (default navigational, the demo's)")
    ab.add_argument("--metric", choices=("ctr", "top_click"), default="ctr",
                    help="the per-user metric: ctr (searches with a click, the default) or "
                         "top_click (searches whose first result was clicked)")
    ab.add_argument("--delta", type=float, default=0.05,
                    help="the experiment's error rate (default 0.05)")
