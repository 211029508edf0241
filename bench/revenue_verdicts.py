"""Purchases to a revenue verdict against purchases to the order-count verdict, in the
demo world, with a fixed cap (as shipped before) and with the predictable scale
(:func:`service.outcomes.declared.scale`, after).

The demo's world (``demo.world_rankers.demo_world``, seed 1, 12 rankers): its buyers'
ranker against the clear best on clicks (which loses the purchases), interleaved by team
draft, users clicking by the navigational model and buying after a click as the world
says (price log-normal, median about 33). Every purchase is one event of two metrics
(as the demo declares them, plus the order count): ``orders`` (a count metric: the
team that placed the bought document wins) and ``revenue`` (a sum metric: that outcome
scaled by the price, ``½ ± ½·min(v, c)/c``), with ``c``:

* ``fixed 1000``: the default cap, as shipped;
* ``fixed 100``: the demo's declared cap, as shipped;
* ``predictable``: :func:`service.outcomes.declared.scale` with cap 1,000, each batch of
  ``--batch`` events scaled by the values credited before it, as a worker's batch is
  (:func:`service.credit.outcome_events.batch_scales`).

After each purchase each metric's verdict is tested as the report tests it
(:func:`bandits.confidence.certified_best`, at δ/M = 0.05/2: the demo's two metrics);
the purchases until each is certified, and whether it named the buyers' ranker, per run
(a run stops at ``--max-purchases``; a metric not certified by then counts as not
certified).
Pure and seeded: no server.

    .venv/bin/python bench/revenue_verdicts.py [--runs 40] [--max-purchases 5000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import interleaving  # noqa: E402
from bandits.confidence import certified_best  # noqa: E402
from demo.world_rankers import demo_world  # noqa: E402
from interleaving.clicks import CLICK_MODELS  # noqa: E402
from service.outcomes.declared import DEFAULT_CAP, bounded, scale  # noqa: E402

METRICS = ("orders", "revenue fixed 1000", "revenue fixed 100", "revenue predictable")


def run(world, a: int, b: int, seed: int, *, delta: float, batch: int,
        max_purchases: int, click_model: str) -> dict[str, dict]:
    """One run: ``a`` (arm 0) against ``b`` (arm 1) until every metric is certified or
    ``max_purchases``; per metric the purchases to its verdict and the arm it named."""
    rng = np.random.default_rng([seed, 47])
    W = {m: np.zeros((2, 2)) for m in METRICS}
    done: dict[str, dict] = {}
    total, events = 0.0, 0  # the values credited before the current batch
    pending: list[float] = []
    c = scale(DEFAULT_CAP, total, events)
    purchases = 0
    clicks = CLICK_MODELS[click_model]
    while purchases < max_purchases:
        q = world.sample_query(rng)
        shown, record = interleaving.interleave(
            "team_draft", [world.ranking(a, q, 10), world.ranking(b, q, 10)], 10, rng)
        clicked = np.flatnonzero(clicks.clicks(world.grades(q, shown), rng))
        for doc, price in world.purchases(q, shown, clicked, rng):
            purchases += 1
            for i, j, s in interleaving.credit(record, [shown.index(doc)]):
                for m, x in (("orders", s),
                             ("revenue fixed 1000", bounded(s, price, 1000.0)),
                             ("revenue fixed 100", bounded(s, price, 100.0)),
                             ("revenue predictable", bounded(s, price, c))):
                    W[m][i, j] += x
                    W[m][j, i] += 1.0 - x
            pending.append(price)
            if len(pending) == batch:  # the batch committed: the next one's scale
                total, events = total + sum(pending), events + len(pending)
                pending = []
                c = scale(DEFAULT_CAP, total, events)
            for m in METRICS:
                if m not in done and (best := certified_best(W[m], [0, 1], delta)) is not None:
                    done[m] = {"purchases": purchases, "named": best}
            if len(done) == len(METRICS):
                return done
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world-seed", type=int, default=1)
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--delta", type=float, default=0.05 / 2)
    ap.add_argument("--batch", type=int, default=16, help="events per worker batch")
    ap.add_argument("--max-purchases", type=int, default=5000,
                    help="a run stops here (the fixed cap of 1,000 rarely certifies)")
    ap.add_argument("--click-model", default="navigational")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    world = demo_world(args.world_seed, args.rankers)
    a, b = world.buyers, world.true_best
    runs = [run(world, a, b, r, delta=args.delta, batch=args.batch,
                max_purchases=args.max_purchases, click_model=args.click_model)
            for r in range(args.runs)]
    out: dict = {"args": vars(args), "buyers": a, "best_on_clicks": b, "metrics": {}}
    print(f"demo world {args.world_seed}: buyers' ranker r{a:02d} against the best on clicks "
          f"r{b:02d}; {args.runs} runs, δ = {args.delta:g}, batches of {args.batch}")
    for m in METRICS:
        got = [r[m] for r in runs if m in r]
        n = sorted(x["purchases"] for x in got)
        right = sum(1 for x in got if x["named"] == 0)
        row = {"certified": len(got), "right": right,
               "median_purchases": statistics.median(n) if n else None,
               "p90_purchases": n[int(0.9 * (len(n) - 1))] if n else None}
        out["metrics"][m] = row
        print(f"  {m:<20} certified {len(got)}/{args.runs} (naming the buyers' ranker "
              f"{right}); purchases to the verdict: median {row['median_purchases']}, "
              f"p90 {row['p90_purchases']} (a run stops at {args.max_purchases:,})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
