"""``rankduel traffic``: simulated users against a rankduel API that is already running.

Where ``rankduel demo`` starts the whole platform itself, this command only plays the
users: it creates an experiment over the simulated world's rankers served at
``--rankers-url`` (``gunicorn 'service.demo_rankers:create_ranker_app(...)'``), with the
world's true preference matrix so that the true-regret metric is exported, then sends
rounds of ``--queries`` searches, clicks and ends through the API at ``--api``, as the
demo does (:meth:`service.demo.Demo.user_session`). The docker compose ``demo`` profile
runs it against the ``api`` service; the metrics tests run it against their own stack.

The operator token comes from ``RANKDUEL_ADMIN_TOKEN``.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.client import Client
from service.demo import Demo, DemoOptions
from service.demo_rankers import ranker_name


@dataclass
class Run:
    """An experiment of simulated users: what :func:`start` made, what :func:`send` uses."""

    demo: Demo
    client: Client
    exp_id: str
    P: np.ndarray
    best: int
    sent: int = 0


def start(api_url: str, admin_token: str, rankers_url: str, opts: DemoOptions,
          *, name: str | None = None) -> Run:
    """Create the experiment over the world's ``opts.rankers`` rankers; return the run."""
    demo = Demo(opts)
    w = demo.world
    pairwise = opts.interleaving in ("team_draft", "probabilistic", "balanced")
    P = w.preference_matrix(opts.interleaving if pairwise else "team_draft", opts.click_model,
                            comparisons=2000, seed=opts.seed)
    client = Client(api_url, admin_token)
    rankers = [{"name": ranker_name(n), "url": f"{rankers_url.rstrip('/')}/rankers/{n}",
                "timeout_ms": 1000} for n in range(w.n_rankers)]
    params = demo.params() if hasattr(demo, "params") else dict(opts.params)
    exp = client.create_experiment(
        name=name or f"simulated traffic, world {opts.seed}", rankers=rankers,
        algorithm=opts.algorithm, params=params, interleaving=opts.interleaving,
        seed=opts.seed, true_preferences=P.tolist(), true_best=ranker_name(w.true_best))
    return Run(demo=demo, client=client, exp_id=exp["id"], P=P, best=w.true_best)


def send(run: Run, queries: int, concurrency: int | None = None) -> None:
    """Send ``queries`` more user sessions (search, clicks, end), ``concurrency`` at a time.
    Session ``n`` is seeded by ``(seed, n)``; numbering continues across calls."""
    demo = run.demo
    concurrency = concurrency or demo.opts.concurrency
    clients = [Client(run.client.base_url, run.client.admin_token)
               for _ in range(concurrency)]
    first = run.sent
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(demo.user_session, clients[n % concurrency], run.exp_id,
                               first + n, run.P, run.best) for n in range(queries)]
        for f in futures:
            f.result()
    run.sent += queries


def wait_credited(run: Run, timeout: float = 120) -> dict[str, Any]:
    """Wait until every impression of the run is credited; the experiment's state."""
    return run.demo.wait_credited(run.client, run.exp_id, timeout=timeout)


def _run(args: argparse.Namespace) -> int:
    token = os.environ.get("RANKDUEL_ADMIN_TOKEN", "")
    if not token:
        raise ValueError("set RANKDUEL_ADMIN_TOKEN to the API's operator token")
    if args.queries < 1 or args.concurrency < 1:
        raise ValueError("--queries and --concurrency must be >= 1")
    opts = DemoOptions(queries=args.queries, rankers=args.rankers, algorithm=args.algorithm,
                       interleaving=args.interleaving, click_model=args.click_model,
                       seed=args.seed, concurrency=args.concurrency, quiet=True)
    deadline = time.monotonic() + args.wait
    while True:  # in compose, the API may still be starting
        try:
            run = start(args.api, token, args.rankers_url, opts)
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                raise ValueError(f"cannot reach the API at {args.api}: {exc}") from None
            time.sleep(2)
    print(f"experiment {run.exp_id}: {opts.algorithm} over {opts.rankers} rankers at "
          f"{args.rankers_url}; true best {ranker_name(run.best)}", flush=True)
    n = 0
    while args.rounds == 0 or n < args.rounds:
        t0 = time.monotonic()
        send(run, args.queries)
        state = run.client.experiment(run.exp_id)
        active = sum(r["status"] == "active" for r in state["rankers"])
        t = run.demo.tally
        print(f"round {n + 1}: {t.queries} queries ({args.queries / (time.monotonic() - t0):.0f}"
              f" q/s), {t.errors} errors, comparisons {state['comparisons']}, active "
              f"{active}/{len(state['rankers'])}, champion {state['champion']}, true regret "
              f"{t.regret:.1f}", flush=True)
        n += 1
        if args.heartbeat:  # the compose healthcheck looks at its age
            with open(args.heartbeat, "w") as f:
                f.write(f"{time.time():.0f} {t.queries}\n")
        if args.pause:
            time.sleep(args.pause)
    return 0 if run.demo.tally.errors == 0 else 1


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("traffic", help="simulated users against a running API",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--api", required=True, help="base URL of the rankduel API")
    p.add_argument("--rankers-url", required=True,
                   help="base URL of the simulated world's rankers (service.demo_rankers)")
    p.add_argument("--rankers", type=int, default=12,
                   help="world rankers; must match the rankers app (default 12)")
    p.add_argument("--seed", type=int, default=1,
                   help="world and experiment seed; must match the rankers app (default 1)")
    p.add_argument("--algorithm", default="mergedts", help="dueling bandit (default mergedts)")
    p.add_argument("--interleaving", default="team_draft", help="(default team_draft)")
    p.add_argument("--click-model", default="navigational", help="(default navigational)")
    p.add_argument("--queries", type=int, default=500, help="searches per round (default 500)")
    p.add_argument("--rounds", type=int, default=0, help="rounds to send; 0 = forever")
    p.add_argument("--pause", type=float, default=1.0, help="seconds between rounds")
    p.add_argument("--concurrency", type=int, default=8, help="concurrent users (default 8)")
    p.add_argument("--heartbeat", metavar="PATH",
                   help="file rewritten after every round (for a container healthcheck)")
    p.add_argument("--wait", type=float, default=120,
                   help="seconds to wait for the API to come up (default 120)")
    p.set_defaults(func=_run)

