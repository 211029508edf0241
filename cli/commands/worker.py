"""``rankduel worker``: a Celery worker crediting impressions, with an embedded beat that
runs the inactivity sweep (``--no-beat`` on all but one worker when you run several)."""

from __future__ import annotations

import argparse
import os
import tempfile

from service.config import load_config
from service.multiproc import prepare_multiproc_dir


def run(args: argparse.Namespace) -> int:
    load_config()  # fail early, with one clear line, on a bad configuration
    prepare_multiproc_dir()  # emptied: stale files would add a previous run's counts
    from workers.celery_app import QUEUE, app

    argv = ["worker", "--loglevel", args.loglevel, "--concurrency", str(args.concurrency),
            "-Q", QUEUE, "--without-gossip", "--without-mingle"]
    if args.hostname:
        argv += ["--hostname", args.hostname]
    if args.pool:
        argv += ["--pool", args.pool]
    if not args.no_beat:
        schedule = os.path.join(tempfile.mkdtemp(prefix="rankduel-beat-"), "schedule")
        argv += ["--beat", "--schedule", schedule]
    app.worker_main(argv)
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("worker", help="run a Celery worker that credits impressions",
                              description=__doc__)
    p.add_argument("--concurrency", type=int, default=1, help="pool processes (default 1)")
    p.add_argument("--loglevel", default="info", help="Celery log level (default info)")
    p.add_argument("--hostname", help="Celery node name")
    p.add_argument("--pool", choices=["prefork", "solo", "threads"], help="Celery pool")
    p.add_argument("--no-beat", action="store_true",
                   help="do not run the periodic sweep in this worker")
    p.set_defaults(func=run)
