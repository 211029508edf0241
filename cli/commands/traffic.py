"""``rankduel traffic``: simulated users against a rankduel API that is already running.

Where ``rankduel demo`` starts the whole platform itself, this command only plays the
users: it creates an experiment over the simulated world's rankers served at
``--rankers-url`` (``gunicorn 'demo.world_rankers:create_ranker_app(...)'``), with the
world's true preference matrix so that the true-regret metric is exported, then sends
rounds of ``--queries`` searches, clicks and ends through the API at ``--api``, as the
demo does (:mod:`demo.traffic`). The docker compose ``demo`` profile runs it against the
``api`` service.

The operator token comes from ``RANKDUEL_ADMIN_TOKEN``. The simulated users come through
a server-side front end: with a front-end key (``--frontend-token``, or
``RANKDUEL_FRONTEND_TOKEN``; one of the API's ``RANKDUEL_FRONTEND_TOKENS``) their clicks
are not held to the per-address click limit.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from cli.help_text import plain


def _run(args: argparse.Namespace) -> int:
    from demo.client import ApiResponseError
    from demo.run import DemoOptions
    from demo.traffic import send, start
    from demo.world_rankers import ranker_name

    token = os.environ.get("RANKDUEL_ADMIN_TOKEN", "")
    if not token:
        raise ValueError("set RANKDUEL_ADMIN_TOKEN to the API's operator token")
    if args.queries < 1 or args.concurrency < 1:
        raise ValueError("--queries and --concurrency must be >= 1")
    opts = DemoOptions(queries=args.queries, rankers=args.rankers, algorithm=args.algorithm,
                       interleaving=args.interleaving, click_model=args.click_model,
                       seed=args.seed, concurrency=args.concurrency, quiet=True)
    # in compose, the API and the rankers may still be starting: retried up to --wait
    try:
        run = start(args.api, token, args.rankers_url, opts,
                    frontend_token=args.frontend_token
                    or os.environ.get("RANKDUEL_FRONTEND_TOKEN") or None,
                    wait=max(args.wait, 0.001),
                    say=lambda msg: print(f"rankduel traffic: {msg}", file=sys.stderr,
                                          flush=True))
    except ApiResponseError as exc:
        hint = (" (is RANKDUEL_ADMIN_TOKEN the API's operator token?)"
                if exc.status in (401, 403) else "")
        raise ValueError(f"the API at {args.api} refused the experiment: {exc}{hint}") \
            from None
    print(f"experiment {run.exp_id}: {opts.algorithm} over {opts.rankers} rankers at "
          f"{args.rankers_url}; true best {ranker_name(run.best)}", flush=True)
    n = 0
    while args.rounds == 0 or n < args.rounds:
        t0 = time.monotonic()
        send(run, args.queries)
        t = run.demo.tally
        line = (f"round {n + 1}: {t.queries} queries ({args.queries / (time.monotonic() - t0):.0f}"
                f" q/s), {t.errors} errors")
        try:  # the API briefly away (a Redis restart): the next round reports again
            state = run.client.experiment(run.exp_id)
        except (ApiResponseError, OSError) as exc:
            print(f"{line}; experiment state unavailable ({exc})", flush=True)
        else:
            active = sum(r["status"] == "active" for r in state["rankers"])
            print(f"{line}, comparisons {state['comparisons']}, active "
                  f"{active}/{len(state['rankers'])}, champion {state['champion']}, true "
                  f"regret {t.regret:.1f}", flush=True)
        n += 1
        if args.heartbeat:  # the compose healthcheck looks at its age
            with open(args.heartbeat, "w") as f:
                f.write(f"{time.time():.0f} {t.queries}\n")
        if args.pause:
            time.sleep(args.pause)
    return 0 if run.demo.tally.errors == 0 else 1


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("traffic", help="simulated users against a running API",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--api", required=True, help="base URL of the rankduel API")
    p.add_argument("--rankers-url", required=True,
                   help="base URL of the simulated world's rankers (demo.world_rankers)")
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
    p.add_argument("--frontend-token", metavar="KEY",
                   help="front-end key sent with searches, clicks and ends (default: "
                        "$RANKDUEL_FRONTEND_TOKEN; none: the per-address click limit "
                        "applies)")
    p.add_argument("--wait", type=float, default=120,
                   help="seconds to wait for the API and the rankers to come up: an unreachable "
                        "API, a 502/503/504 or a ranker that misses the API's test query is "
                        "retried that long (default 120)")
    p.set_defaults(func=_run)

