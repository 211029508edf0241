"""``rankduel matrix``: build and read preference matrices.

``rankduel matrix generate --kind KIND --out P.txt [--k K] [--gap G] [--seed S]
[--uninformative-share X] ...`` writes a seeded test instance as whitespace text that
``numpy.loadtxt`` (and ``rankduel simulate --matrix``) reads; ``#`` lines on top record the
command and the winner. ``rankduel matrix estimate`` lives in
:mod:`cli.commands.matrix_estimate`; both write through :mod:`cli.matrix_files`.
"""

from __future__ import annotations

import argparse
import shlex

import numpy as np

from bandits import matrices as M
from cli.commands import matrix_estimate
from cli.matrix_files import save_matrix


def describe(P: np.ndarray) -> str:
    """One line: K, the winner and how hard it is to spot."""
    K = P.shape[0]
    c = M.condorcet_winner(P)
    if c is not None:
        d = np.delete(P[c], c) - 0.5
        return f"K={K}, Condorcet winner {c}, its smallest gap {d.min():.4g}" if d.size else (
            f"K={K}, Condorcet winner {c}"
        )
    cw = M.copeland_winners(P)
    return f"K={K}, no Condorcet winner, Copeland winners {cw}"


# ---------------------------------------------------------------------- generate
def generate(args: argparse.Namespace) -> np.ndarray:
    """The matrix ``--kind`` and the options ask for."""
    kind = args.kind
    if kind in M.UTILITY_SETS:
        P = M.utility_set(kind)
        if args.k is not None and args.k != P.shape[0]:
            raise ValueError(f"--kind {kind} has K={P.shape[0]} fixed; drop --k {args.k}")
        return P
    if kind in ("cycle", "cycle2"):
        fn = M.cycle if kind == "cycle" else M.cycle2
        opts = {}
        if args.p_winner is not None:
            opts["p_winner"] = args.p_winner
        if args.p_cycle is not None:
            opts["p_cycle"] = args.p_cycle
        return fn(20 if args.k is None else args.k, **opts)
    k = 20 if args.k is None else args.k
    gap = 0.01 if args.gap is None else args.gap
    if kind in ("bradley-terry", "uninformative"):
        share = args.uninformative_share
        if share is None:
            share = 0.25 if kind == "uninformative" else 0.0
        return M.bradley_terry(
            k,
            gap=gap,
            spread=args.spread,
            uninformative_share=share,
            uninformative_gap=args.uninformative_gap,
            winner_gap=args.winner_gap,
            seed=args.seed,
        )
    if kind == "non-condorcet":
        return M.non_condorcet(
            32 if args.k is None else args.k,
            n_winners=args.winners,
            gap=gap,
            spread=args.spread,
            upset=args.upset,
            seed=args.seed,
        )
    raise ValueError(f"unknown kind {kind!r}")  # argparse's choices stop this earlier


#: the options each kind uses (the utility sets use none)
_OPTIONS = {
    "cycle": ("k", "p_winner", "p_cycle"),
    "cycle2": ("k", "p_winner", "p_cycle"),
    "bradley-terry": ("k", "gap", "spread", "uninformative_share", "uninformative_gap",
                      "winner_gap", "seed"),
    "uninformative": ("k", "gap", "spread", "uninformative_share", "uninformative_gap",
                      "winner_gap", "seed"),
    "non-condorcet": ("k", "winners", "gap", "spread", "upset", "seed"),
}


def _command_line(args: argparse.Namespace) -> str:
    """The ``rankduel matrix generate`` command that reproduces this matrix."""
    words = ["rankduel", "matrix", "generate", "--kind", args.kind]
    for opt in _OPTIONS.get(args.kind, ()):
        value = getattr(args, opt)
        if value is not None:
            words += ["--" + opt.replace("_", "-"), str(value)]
    words += ["--out", str(args.out)]
    return shlex.join(words)


def run_generate(args: argparse.Namespace) -> int:
    P = generate(args)
    P = M.validate_matrix(P)
    header = (
        f"{_command_line(args)}\n"
        f"{describe(P)}\n"
        "p[i,j] = probability that arm i beats arm j"
    )
    path = save_matrix(args.out, P, header=header)
    print(f"wrote {path}: {describe(P)}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "matrix",
        help="build or estimate preference matrices",
        description="Build (generate) or estimate preference matrices.",
    )
    msub = parser.add_subparsers(dest="matrix_command", required=True, metavar="SUBCOMMAND")
    kinds = [*M.KINDS, *M.UTILITY_SETS]
    gen = msub.add_parser(
        "generate",
        help="write a seeded test instance",
        description=(
            "Write a preference matrix as loadtxt-able text. Kinds: cycle, cycle2 (Li et al. 2020 "
            "§5.2); bradley-terry (any K, minimum gap --gap); uninformative (Bradley-Terry "
            "with --uninformative-share arms tied at 0.5 among themselves and losing to all "
            "others); non-condorcet (--winners Copeland winners); and Brost et al. 2016's Table 1 "
            "utility sets: " + ", ".join(M.UTILITY_SETS) + "."
        ),
    )
    gen.add_argument("--kind", required=True, choices=kinds, metavar="KIND",
                     help="one of: " + ", ".join(kinds))
    gen.add_argument("--out", required=True, help="output file (.txt, .csv or .npy)")
    gen.add_argument("--k", type=int, default=None, help="number of arms (default 20; 32 "
                     "for non-condorcet; fixed for the utility sets)")
    gen.add_argument("--gap", type=float, default=None,
                     help="smallest |p_ij - 0.5| between informative arms (default 0.01)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument("--uninformative-share", type=float, default=None,
                     help="share of uninformative arms (default 0.25 for kind "
                     "uninformative, else 0)")
    gen.add_argument("--uninformative-gap", type=float, default=None,
                     help="smallest margin by which informative arms beat uninformative "
                     "ones (default: --gap)")
    gen.add_argument("--winner-gap", type=float, default=None,
                     help="bradley-terry/uninformative: p - 0.5 between the best and the "
                     "second-best arm (default: random, at least --gap)")
    gen.add_argument("--spread", type=float, default=4.0,
                     help="logit range of the Bradley-Terry strengths: the best informative "
                     "arm beats the worst with probability sigmoid(spread) (default 4)")
    gen.add_argument("--winners", type=int, default=2,
                     help="Copeland winners for non-condorcet (default 2)")
    gen.add_argument("--upset", type=float, default=0.1,
                     help="non-condorcet: margin of the weak arms' upsets (default 0.1)")
    gen.add_argument("--p-winner", type=float, default=None,
                     help="cycle/cycle2: p of the winner against the rest (0.51 / 0.6)")
    gen.add_argument("--p-cycle", type=float, default=None,
                     help="cycle/cycle2: p round the table (1.0 / 0.51)")
    gen.set_defaults(func=run_generate)
    matrix_estimate.add_parser(msub)
