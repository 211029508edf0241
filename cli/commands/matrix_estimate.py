"""``rankduel matrix estimate``: a preference matrix from simulated interleaved comparisons.

Contract (scripts call it exactly so)::

    rankduel matrix estimate --world SEED:K --method probabilistic \\
        --click-model navigational --comparisons N --seed S --out P.txt

builds the synthetic world of ``K`` rankers from ``SEED`` (:class:`interleaving.world.World`,
default parameters unless ``--queries``/``--clear-best`` say otherwise), runs ``N``
simulated comparisons per pair of rankers with ``--method`` and ``--click-model`` (the
papers' proxy method, Li et al. 2020, §5.3; :func:`interleaving.estimate.estimate_matrix`) and
writes the K×K matrix as whitespace text that ``numpy.loadtxt`` and ``rankduel simulate
--matrix`` read (``#`` lines on top record the command, the world's best ranker by NDCG@10
and the run time). ``--jobs`` spreads the work over processes without changing the result.

Registered under ``rankduel matrix`` by :mod:`cli.commands.matrix`, which calls
``add_parser`` with its sub-subparsers.
"""

from __future__ import annotations

import argparse
import shlex
import time

import numpy as np

from cli.matrix_files import save_matrix
from cli.progress import Progress


def run(args: argparse.Namespace) -> int:
    from interleaving import METHODS
    from interleaving.clicks import CLICK_MODELS
    from interleaving.estimate import estimate_matrix
    from interleaving.world import World

    if args.method not in METHODS:
        raise ValueError(f"unknown --method {args.method!r}; choose from {', '.join(METHODS)}")
    if args.click_model not in CLICK_MODELS:
        raise ValueError(
            f"unknown --click-model {args.click_model!r}; choose from {', '.join(CLICK_MODELS)}"
        )
    if args.comparisons < 1:
        raise ValueError("--comparisons must be at least 1")
    world_kwargs = {"clear_best": args.clear_best}
    if args.queries is not None:
        world_kwargs["n_queries"] = args.queries
    world = World.from_spec(args.world, **world_kwargs)
    R = world.n_rankers
    total = R * (R - 1) // 2 * args.comparisons
    started = time.monotonic()
    with Progress(total, label=f"estimate {R}x{R}") as bar:
        P, N = estimate_matrix(
            world,
            args.method,
            args.click_model,
            args.comparisons,
            np.random.default_rng(args.seed),
            k=args.k,
            batch_size=args.batch_size,
            jobs=args.jobs,
            progress=bar.advance,
            return_counts=True,
        )
    elapsed = time.monotonic() - started
    words = ["rankduel", "matrix", "estimate", "--world", args.world, "--method", args.method,
             "--click-model", args.click_model, "--comparisons", str(args.comparisons),
             "--seed", str(args.seed), "--out", str(args.out)]
    if args.k != 10:
        words += ["--k", str(args.k)]
    if args.queries is not None:
        words += ["--queries", str(args.queries)]
    if args.clear_best:
        words.append("--clear-best")
    nd = world.ndcg_all(10)
    off = N[~np.eye(R, dtype=bool)]
    header = "\n".join([
        shlex.join(words),
        f"world: {R} rankers, {world.n_queries} queries; best by NDCG@10: ranker "
        f"{world.true_best} ({nd[world.true_best]:.4f})",
        f"comparisons with clicks per pair: min {off.min():.0f}, mean {off.mean():.0f}"
        if off.size else "one ranker: no pairs",
        f"{total} comparisons in {elapsed:.1f} s",
        "p[i,j] = probability that ranker i beats ranker j (ties count 1/2)",
    ])
    path = save_matrix(args.out, P, header=header)
    print(f"wrote {path}: {R}x{R}, {args.comparisons} comparisons per pair, "
          f"{elapsed:.1f} s ({total / max(elapsed, 1e-9):,.0f} comparisons/s)")
    return 0


def add_parser(matrix_subparsers: argparse._SubParsersAction) -> None:
    """Register ``estimate`` under ``rankduel matrix``."""
    p = matrix_subparsers.add_parser(
        "estimate",
        help="estimate a preference matrix by simulated interleaving in a synthetic world",
        description=(
            "Estimate the preference matrix of a synthetic world's rankers by simulated "
            "interleaved comparisons with simulated users (Li et al. 2020, §5.3)."
        ),
    )
    p.add_argument("--world", required=True, metavar="SEED:K",
                   help="the synthetic world: its seed and number of rankers")
    p.add_argument("--method", default="probabilistic",
                   help="interleaving method (default probabilistic)")
    p.add_argument("--click-model", default="navigational",
                   help="perfect, navigational, informational, almost_random or pbm "
                   "(default navigational)")
    p.add_argument("--comparisons", type=int, required=True,
                   help="simulated comparisons per pair of rankers")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, help="output file (.txt, .csv or .npy)")
    p.add_argument("--k", type=int, default=10, help="page length (default 10)")
    p.add_argument("--queries", type=int, default=None,
                   help="queries in the world (default: the world's default, 200)")
    p.add_argument("--clear-best", action="store_true",
                   help="build the world with one clearly best ranker")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes (default 1; the result does not depend on it)")
    p.add_argument("--batch-size", type=int, default=100_000,
                   help="comparisons per vectorized batch (default 100000)")
    p.set_defaults(func=run)
