"""Live versus offline: every policy, driven by the same preference matrix, through the
real service and through the simulator with the same feedback delay.

Live: a real Redis, ``rankduel serve`` (gunicorn, 2 workers), a Celery worker and the
matrix world's rankers (:mod:`demo.matrix_world`: a user shown (i, j) clicks i's document
with probability P[i, j], so team-draft credit draws Bernoulli(P[i, j])); ``--concurrency``
users at a time, each search ended at once, credited by the worker in batches. Each
impression records the step t of its selection and of its credit; their difference is
the feedback delay the live path produced.

Offline: :func:`bandits.simulator.simulate_run` with ``delay`` = the live median delay,
``feedback_batch`` = the live mean batch and ``reload_every`` = the selections between
two snapshot re-reads, over ``--runs`` seeds (:func:`demo.matrix_world.compare`).

Per policy: the total-variation distance between the live and the pooled offline
distributions of pairs shown, beside the mean distance between two offline runs (the
sampling noise at this length); whether each named the winner; the cumulative regret
live against the offline mean ± 2 sd.

    .venv/bin/python bench/live_vs_offline.py --searches 3000 --runs 8 [--policies a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLICIES = ["mergedts", "mergerucb", "rucb", "rcs", "ccb", "dts", "self_sparring", "rmed1",
            "mdb", "uniform"]
STATE_MAX_AGE_S = 0.1


def instance(K: int = 6, seed: int = 11) -> np.ndarray:
    """A Bradley-Terry instance with a clear Condorcet winner (the project's generator)."""
    from bandits.matrices import bradley_terry

    return bradley_terry(K, gap=0.05, spread=2.0, seed=seed)


class Live:
    """The platform on this machine for one harness run."""

    def __init__(self, workdir: str, concurrency: int) -> None:
        from demo.client import Client
        from demo.matrix_world import create_app
        from demo.stack import Stack, ThreadedServer, free_port

        self.stack = Stack(workdir).__enter__()
        self.redis_url = self.stack.start_redis()
        admin = secrets.token_hex(16)
        env = dict(os.environ, REDIS_URL=self.redis_url, RANKDUEL_ADMIN_TOKEN=admin,
                   RANKDUEL_SECRET_KEY=secrets.token_hex(16), RANKDUEL_INACTIVITY_S="5",
                   RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
                   RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0",
                   RANKDUEL_SWEEP_INTERVAL_S="0.5", PYTHONPATH=str(ROOT),
                   RANKDUEL_STATE_MAX_AGE_MS=str(STATE_MAX_AGE_S * 1000),
                   PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp(dir=workdir))
        self.rankers = ThreadedServer(create_app())
        bind = f"127.0.0.1:{free_port()}"
        self.stack.start_api(env, bind=bind, workers=2, threads=8)
        worker_env = dict(env, PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp(dir=workdir))
        self.stack.wait_worker(self.stack.start_worker(worker_env), self.redis_url)
        self.client = Client(f"http://{bind}", admin)
        self.concurrency = concurrency

    def close(self) -> None:
        self.rankers.close()
        self.stack.close()

    def run(self, P: np.ndarray, policy: str, searches: int, seed: int) -> dict[str, Any]:
        import redis

        from demo.matrix_world import run_live

        return run_live(self.client, redis.Redis.from_url(self.redis_url), self.rankers.url,
                        P, policy, searches, seed, concurrency=self.concurrency,
                        state_max_age_s=STATE_MAX_AGE_S)


def main(argv: list[str] | None = None) -> int:
    from demo.matrix_world import compare

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--searches", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=8, help="offline runs per policy")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the table here")
    args = ap.parse_args(argv)
    P = instance(args.k)
    rows = []
    with tempfile.TemporaryDirectory(prefix="rankduel-lvo-") as work:
        live = Live(work, args.concurrency)
        try:
            for policy in args.policies.split(","):
                lv = live.run(P, policy, args.searches, args.seed)
                row = compare(P, policy, lv, searches=args.searches, runs=args.runs,
                              seed=args.seed)
                row["errors"] = lv["errors"]
                rows.append(row)
                print(f"{policy:>14}  TV live/offline {row['tv_live_offline']:.3f} "
                      f"(offline/offline {row['tv_offline_offline']:.3f})  "
                      f"winner live {row['winner_live']} offline {row['winner_offline']:.2f}  "
                      f"regret live {row['regret_live']:.1f} offline "
                      f"{row['regret_offline_mean']:.1f} ± {2 * row['regret_offline_sd']:.1f}"
                      f"  delay {row['delay']:.0f} batch {row['feedback_batch']:.1f} "
                      f"reload {row['reload_every']}", flush=True)
        finally:
            live.close()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
