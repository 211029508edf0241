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

``--certify-two P,...``: the two-ranker case instead. Per preference ``p`` (the better
ranker wins a comparison with probability ``p``), ``--live-runs`` live experiments of
``recommended`` run until their report is certified; the comparisons at the credit that
certified (the report's ``certification``) are set beside the offline median of
``bench/certify_two.py`` at the same ``p`` and δ (issue 47: live within 1.5× offline).

    .venv/bin/python bench/live_vs_offline.py --certify-two 0.6,0.7,0.8,0.9 --live-runs 5
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
        from demo.stack import Stack, free_port
        from demo.wsgi_server import ThreadedServer

        self.stack = Stack(workdir).__enter__()
        self.redis_url = self.stack.start_redis()
        admin = secrets.token_hex(16)
        env = dict(os.environ, REDIS_URL=self.redis_url, RANKDUEL_ADMIN_TOKEN=admin,
                   RANKDUEL_SECRET_KEY=secrets.token_hex(16), RANKDUEL_INACTIVITY_S="5",
                   RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
                   RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0",
                   RANKDUEL_SWEEP_INTERVAL_S="0.5", PYTHONPATH=str(ROOT),
                   RANKDUEL_STORE_BUDGET_MS="1000",  # its load shares the machine
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


def certify_live(live: Live, p: float, seed: int, *, chunk: int = 20,
                 budget: int = 20_000, timeout: float = 300) -> dict[str, Any]:
    """One live two-ranker experiment of ``recommended`` at preference ``p``: searches in
    chunks of ``chunk`` until its report is certified (or ``budget`` searches). The
    comparisons are those the certifying credit recorded (searches sent meanwhile are not
    counted: they reached the policy after its verdict)."""
    import time

    from demo.matrix_world import drive, rankers

    P = np.array([[0.5, p], [1.0 - p, 0.5]])
    client = live.client
    exp = client.create_experiment(
        name=f"two-{p}-{seed}", algorithm="recommended", interleaving="team_draft",
        seed=seed, rankers=rankers(live.rankers.url, 2), true_preferences=P.tolist())
    sent, report = 0, {}
    deadline = time.monotonic() + timeout
    while sent < budget and time.monotonic() < deadline:
        drive(client, exp["id"], P, 0, chunk, concurrency=live.concurrency,
              seed=seed * 1_000_003 + sent)
        sent += chunk
        report = client.report(exp["id"])
        if report.get("certification"):
            break
    cert = report.get("certification") or {}
    client.lifecycle(exp["id"], "stop")
    return {"p": p, "seed": seed, "searches_sent": sent,
            "comparisons": cert.get("comparisons"),
            "right": cert.get("champion") == "m0" if cert else False}


def certify_two(live: Live, preferences: list[float], live_runs: int, seed: int,
                offline_runs: int) -> list[dict[str, Any]]:
    """Live against offline comparisons to certify, one row per preference."""
    sys.path.insert(0, str(ROOT / "bench"))
    from certify_two import run as offline_run

    rows = []
    for p in preferences:
        lives = [certify_live(live, p, seed + r) for r in range(live_runs)]
        offs = [offline_run(p, seed + r)[0] for r in range(offline_runs)]
        ns = [x["comparisons"] for x in lives if x["comparisons"] is not None]
        off = [n for n in offs if n is not None]
        row = {"p": p, "live": lives,
               "live_median": float(np.median(ns)) if ns else None,
               "offline_median": float(np.median(off)) if off else None,
               "live_right": sum(x["right"] for x in lives), "live_runs": live_runs}
        row["ratio"] = (row["live_median"] / row["offline_median"]
                        if ns and off else None)
        rows.append(row)
        print(f"p = {p:.2f}  live median {row['live_median']}  offline median "
              f"{row['offline_median']}  ratio {row['ratio']}  right "
              f"{row['live_right']}/{live_runs}", flush=True)
    return rows


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
    ap.add_argument("--certify-two", default="",
                    help="preferences p,...: live against offline comparisons to certify "
                         "a two-ranker experiment (the other options but --seed, "
                         "--concurrency and --json are not used)")
    ap.add_argument("--live-runs", type=int, default=5,
                    help="with --certify-two: live experiments per preference")
    ap.add_argument("--offline-runs", type=int, default=200,
                    help="with --certify-two: offline runs per preference")
    args = ap.parse_args(argv)
    if args.certify_two:
        prefs = [float(x) for x in args.certify_two.split(",")]
        with tempfile.TemporaryDirectory(prefix="rankduel-lvo-") as work:
            live = Live(work, args.concurrency)
            try:
                rows = certify_two(live, prefs, args.live_runs, args.seed,
                                   args.offline_runs)
            finally:
                live.close()
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
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
