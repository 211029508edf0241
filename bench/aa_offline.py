"""A/A evidence, offline: identical rankers entered under different names; how often does
``recommended`` certify a winner, and is the pooled preference ½?

Two modes, both through ``recommended`` (:class:`bandits.sparring_certifier.SparringCertifier`)
with the live semantics (selection from the stored state, feedback ``--delay`` selections
late, applied after ``sync_step`` as the worker does):

``world``
    the simulated search world (:class:`interleaving.world.World`): every arm is the same
    ranker of the world (``--ranker``, default its true best) under another name; each
    selection of two arms shows a query's interleaved list (``--method``), a simulated
    user clicks it (``--click-model``), and the method's credit is the outcome, as the
    service does. ``--lengths 5,10`` makes the copies return their top 5 and top 10
    (a list and a prefix of it).
``coin``
    every duel has a winner, drawn with probability ½ (the preference matrix of tied
    rankers): the worst case for the test, where no duel is a tie.

Printed: runs, the fraction certifying a winner (Clopper–Pearson 95 %), the fraction
with any ranker shown worse, and the pooled preference of the lower-numbered arm of each
duel with its interval (outcomes in [0, 1]; the interval is the normal one on their mean
over all duels of all runs).

    python bench/aa_offline.py world --arms 2 --runs 1000 --steps 5000 --seed 1
    python bench/aa_offline.py coin --arms 5 --runs 1000 --steps 20000 --seed 1
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import interleaving as il
from bandits.sparring_certifier import SparringCertifier
from bench.verdict_error import clopper_pearson
from interleaving.clicks import get_click_model
from interleaving.world import World


class Copies:
    """One ranker of a world under ``arms`` names, each returning its top ``length``."""

    def __init__(self, world: World, ranker: int, lengths: list[int]) -> None:
        self.world = world
        top = max(lengths)
        self.lists = [world.ranking(ranker, q, top) for q in range(world.n_queries)]
        self.grades = [world.grades(q, docs) for q, docs in enumerate(self.lists)]
        self.lengths = lengths

    def duel(self, i: int, j: int, method: str, clicks, rng: np.random.Generator
             ) -> list[tuple[int, int, float]]:
        """One search: query, interleaving, clicks, credit; outcomes on arms ``i, j``."""
        q = int(rng.integers(len(self.lists)))
        full = self.lists[q]
        rankings = [full[: self.lengths[i]], full[: self.lengths[j]]]
        shown, record = il.interleave(method, rankings, 10, rng)
        pos = {d: k for k, d in enumerate(full)}
        grades = self.grades[q][[pos[d] for d in shown]]
        clicked = np.flatnonzero(clicks.clicks(grades, rng)).tolist()
        arm = (i, j)
        return [(arm[a], arm[b], s) for a, b, s in il.credit(record, clicked)]


def one_run(args: argparse.Namespace, seed: int, copies: Copies | None) -> dict:
    rng = np.random.default_rng([4242, seed])
    b = SparringCertifier(args.arms, seed=np.random.default_rng([4243, seed]),
                          error_rate=args.error_rate, check_every=args.check_every)
    clicks = get_click_model(args.click_model)
    pending: deque[list[tuple[int, int, float]]] = deque()
    total = wins = sq = 0.0
    for t in range(1, args.steps + 1):
        i, j = b.select()
        if i == j:
            outs: list[tuple[int, int, float]] = []
        elif copies is None:
            outs = [(i, j, float(rng.random() < 0.5))]
        else:
            outs = copies.duel(i, j, args.method, clicks, rng)
        pending.append(outs)
        if len(pending) > args.delay:
            b.sync_step(t)
            for x, y, s in pending.popleft():
                b.update(x, y, s)
                low = s if x < y else 1.0 - s  # the lower-numbered arm's share
                total += 1.0
                wins += low
                sq += low * low
    for outs in pending:
        for x, y, s in outs:
            b.update(x, y, s)
    v = b.verdicts()
    return {"seed": seed, "certified": v["certified"], "shown_worse": len(v["shown_worse"]),
            "duels": total, "low_wins": wins, "low_sq": sq}


def summary(runs: list[dict], delta: float) -> str:
    n = len(runs)
    k = sum(r["certified"] is not None for r in runs)
    lo, hi = clopper_pearson(k, n)
    e = sum(r["shown_worse"] > 0 for r in runs)
    elo, ehi = clopper_pearson(e, n)
    d = sum(r["duels"] for r in runs)
    m = sum(r["low_wins"] for r in runs) / d if d else float("nan")
    var = sum(r["low_sq"] for r in runs) / d - m * m if d else float("nan")
    half = 1.96 * math.sqrt(max(var, 0.0) / d) if d else float("nan")
    return (f"runs {n}: certified a winner in {k} ({k / n:.4f}, 95% CP [{lo:.4f}, {hi:.4f}], "
            f"δ = {delta:g}); any ranker shown worse in {e} ([{elo:.4f}, {ehi:.4f}]); "
            f"pooled preference of the lower-numbered arm {m:.4f} ± {half:.4f} over "
            f"{d:,.0f} duels")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["world", "coin"])
    ap.add_argument("--arms", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=5000, help="selections per run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--error-rate", type=float, default=0.05)
    ap.add_argument("--check-every", type=int, default=100)
    ap.add_argument("--delay", type=int, default=20, help="selections before feedback")
    ap.add_argument("--method", default="team_draft", choices=il.PAIRWISE_METHODS)
    ap.add_argument("--click-model", default="navigational")
    ap.add_argument("--world", type=int, default=1, help="the world's seed")
    ap.add_argument("--ranker", type=int, default=None, help="default: the true best")
    ap.add_argument("--lengths", default="10", help="each copy's list length, cycled")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    copies = None
    if a.mode == "world":
        world = World(a.world, 20, n_queries=200)
        lengths = [int(x) for x in a.lengths.split(",")]
        copies = Copies(world, world.true_best if a.ranker is None else a.ranker,
                        [lengths[k % len(lengths)] for k in range(a.arms)])
    runs = []
    t0 = time.perf_counter()
    for seed in range(a.seed, a.seed + a.runs):
        runs.append(one_run(a, seed, copies))
        if len(runs) % 200 == 0:
            print(summary(runs, a.error_rate), f"({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    text = summary(runs, a.error_rate)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"args": {k: (str(v) if isinstance(v, Path) else v)
                                              for k, v in vars(a).items()},
                                     "summary": text, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
