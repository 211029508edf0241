"""``rankduel judge``: the judging simulator and best-item evaluation (the only I/O of
:mod:`judging`).

Contract (scripts call it exactly so)::

    rankduel judge simulate --matrix FILE --winners 0,1 --algorithm prefbest,NAME,... \\
        --budget 1000 --runs 1000 --seed S --out DIR
    rankduel judge simulate --case A|B --algorithm ... --budget 1000 --runs 1000 --seed S --out DIR
    rankduel judge evaluate --qrels best.qrels --run RUN.trec [--run RUN2.trec ...]

``simulate`` writes ``DIR/summary.json`` — ``{"algorithms": {NAME: {best_found, one_found,
both_found, returned_mean, judgments_min, judgments_max, assessors_per_pair_max, ...}},
...}`` (the fields are those of :func:`judging.simulate.summarize`) — and ``DIR/runs.json``
(every run's returned set, judgments and largest per-pair count), and prints a table like
Yan 2022's Figure 4.1. The matrix file is ``numpy.loadtxt`` text (``.npy`` also read);
ties are ``p = 0.5``; without ``--winners`` the winners are the items nobody beats.
``--param KEY=VALUE`` sets an algorithm parameter (``NAME.KEY=VALUE`` for one algorithm), of
the type the algorithm declares (``PARAMS``; docs/reference/parameters.md).
``--jobs N`` runs in N processes; the results do not depend on N.

``evaluate`` prints the MRR of every run against the best items of the qrels and the
ordering of the runs (``--json`` for machine output).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cli import params as cli_params
from judging import check_params, get_judge
from judging.evaluate import evaluate, read_qrels, read_run
from judging.simulate import (
    CASES,
    THESIS_FIGURE_4_1,
    default_winners,
    format_table,
    run_all,
    summarize,
    validate_matrix,
)


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def parse_params(items: list[str], algorithms: list[str]) -> dict[str, dict[str, Any]]:
    """``--param`` items -> parameters per algorithm (:func:`cli.params.parse_params`, the
    parser every command shares), each value of the type the algorithm declares."""
    return cli_params.parse_params(items, algorithms, lambda a: get_judge(a).PARAMS)


def load_matrix(path: str) -> np.ndarray:
    p = Path(path)
    if not p.exists():
        raise ValueError(f"{path}: no such file")
    P = np.load(p) if p.suffix == ".npy" else np.loadtxt(p, ndmin=2)
    return validate_matrix(P)


def parse_winners(text: str, K: int) -> tuple[int, ...]:
    try:
        w = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise ValueError(f"--winners {text!r}: expected item indices like 0,1") from None
    if not w or any(not 0 <= x < K for x in w):
        raise ValueError(f"--winners {text!r}: need indices in 0..{K - 1}")
    return w


def run_simulate(args: argparse.Namespace) -> int:
    algorithms = [a.strip() for a in args.algorithm.split(",") if a.strip()]
    if not algorithms or len(set(algorithms)) != len(algorithms):
        raise ValueError(f"--algorithm {args.algorithm!r}: name each algorithm once")
    for a in algorithms:
        get_judge(a)  # unknown names fail here, listing the known ones
    if args.case:
        if args.matrix or args.winners:
            raise ValueError("--case replaces --matrix and --winners")
        case = CASES[args.case](args.items)
        P, winners, source = case.P, case.winners, f"case {args.case}"
    else:
        if not args.matrix:
            raise ValueError("give --matrix FILE (with --winners) or --case A|B")
        P = load_matrix(args.matrix)
        winners = parse_winners(args.winners, P.shape[0]) if args.winners else default_winners(P)
        source = str(args.matrix)
    params = parse_params(args.param or [], algorithms)
    for a in algorithms:  # bad parameters fail before any process starts
        for flag in ("budget", "max_per_pair"):
            if flag in params[a]:
                raise ValueError(f"--param {flag}: set it with --{flag.replace('_', '-')}")
        given = {"budget": args.budget, "max_per_pair": args.max_per_pair, **params[a]}
        check_params(a, given)
        get_judge(a)(P.shape[0], seed=0, **given)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = run_all(
        P, algorithms, args.runs, args.seed, params=params, jobs=args.jobs,
        budget=args.budget, max_per_pair=args.max_per_pair, batch=args.batch,
        in_flight=args.in_flight,
    )
    seconds = time.perf_counter() - t0
    summaries = {a: summarize(results[a], winners) for a in algorithms}
    doc = {
        "algorithms": summaries,
        "source": source,
        "K": int(P.shape[0]),
        "winners": list(winners),
        "budget": args.budget,
        "max_per_pair": args.max_per_pair,
        "runs": args.runs,
        "seed": args.seed,
        "batch": args.batch,
        "in_flight": args.in_flight,
        "params": params,
        "seconds": round(seconds, 1),
    }
    (out / "summary.json").write_text(json.dumps(doc, indent=1) + "\n")
    per_run = {a: [[r.returned, r.judgments, r.per_pair_max] for r in results[a]]
               for a in algorithms}
    (out / "runs.json").write_text(json.dumps(per_run) + "\n")
    title = (f"{source}, K={P.shape[0]}, winners {list(winners)}, budget {args.budget}, "
             f"at most {args.max_per_pair} judgments per pair")
    print(format_table(summaries, title))
    if args.case and args.items == 100:
        print(f"\nYan 2022, Figure 4.1, Case {args.case} (1,000 simulations, thesis' counting):")
        for name, row in THESIS_FIGURE_4_1[args.case].items():
            print(f"  {name:<44} {row}")
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    qrels = read_qrels(args.qrels)
    runs = {}
    for path in args.run:
        name = Path(path).name
        if name in runs:
            raise ValueError(f"two runs are named {name!r}")
        runs[name] = read_run(path)
    scores = evaluate(runs, qrels, args.depth)
    if args.json:
        print(json.dumps({
            "qrels": str(args.qrels),
            "depth": args.depth,
            "runs": [{"run": s.name, "mrr": s.mrr, "answered": s.answered,
                      "queries": s.queries} for s in scores],
            "ordering": [s.name for s in scores],
        }, indent=1))
        return 0
    depth = f"@{args.depth}" if args.depth else ""
    width = max(len(s.name) for s in scores)
    print(f"{'run':<{width}}  {'MRR' + depth:>8}  answered")
    for s in scores:
        print(f"{s.name:<{width}}  {s.mrr:>8.4f}  {s.answered}/{s.queries}")
    print("ordering: " + " > ".join(s.name for s in scores))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "judge",
        help="human preference judging: simulate algorithms, evaluate runs on best items",
        description="Find the best items of a pool from preference judgments (Yan 2022).",
    )
    sub = parser.add_subparsers(dest="judge_command", required=True, metavar="SUBCOMMAND")

    sim = sub.add_parser(
        "simulate",
        help="simulate judging algorithms on a preference matrix (Yan 2022, Figure 4.1)",
        description="Run judging algorithms on a preference matrix with simulated "
                    "assessors; write DIR/summary.json and DIR/runs.json.",
    )
    src = sim.add_mutually_exclusive_group()
    src.add_argument("--matrix", help="K×K preference matrix (numpy.loadtxt text, or .npy)")
    src.add_argument("--case", choices=sorted(CASES), help="Yan 2022's Case A or Case B")
    sim.add_argument("--winners", help="the matrix's best items, e.g. 0,1 "
                                       "(default: the items nobody beats)")
    sim.add_argument("--items", type=_positive, default=100,
                     help="pool size of --case (default 100)")
    sim.add_argument("--algorithm", required=True, help="algorithm name(s), comma separated")
    sim.add_argument("--param", action="append", metavar="KEY=VALUE",
                     help="algorithm parameter (repeatable); NAME.KEY=VALUE scopes it")
    sim.add_argument("--budget", type=_positive, default=1000,
                     help="judgments per run (default 1000)")
    sim.add_argument("--max-per-pair", type=_positive, default=10,
                     help="judgments of any one pair (default 10)")
    sim.add_argument("--runs", type=_positive, default=1000, help="runs (default 1000)")
    sim.add_argument("--seed", type=int, default=0, help="seed of run 0; run r uses seed + r")
    sim.add_argument("--out", required=True, help="output directory")
    sim.add_argument("--jobs", type=_positive, default=1, help="processes (default 1)")
    sim.add_argument("--batch", type=_positive, default=10,
                     help="pairs per assessor task (default 10)")
    sim.add_argument("--in-flight", type=_positive, default=1,
                     help="tasks out at once, answered in random order (default 1)")
    sim.set_defaults(func=run_simulate)

    ev = sub.add_parser(
        "evaluate",
        help="MRR of TREC runs against best items (Yan 2022, §5.4)",
        description="Mean reciprocal rank of the first best item, per run, and the "
                    "ordering of the runs.",
    )
    ev.add_argument("--qrels", required=True, help="TREC qrels of best items (rel > 0)")
    ev.add_argument("--run", action="append", required=True, help="TREC run file (repeatable)")
    ev.add_argument("--depth", type=_positive, help="only the top DEPTH documents count")
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.set_defaults(func=run_evaluate)


def main(argv: list[str] | None = None) -> int:  # ``python -m cli.commands.judge``
    parser = argparse.ArgumentParser(prog="judging")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"judge: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
