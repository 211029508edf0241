"""``rankduel migrate-keys``: convert the previous key layout (``rd:exp:{e}…``,
``rd:imp:{i}…``) to the current one (every key of an experiment under its hash tag,
``rd:{e}…``; :mod:`service.store.keys`), in place or onto another Redis or a Redis Cluster.

Stop the API processes and the workers first; start the new version after. The target is
the configured state store (``REDIS_URL``, ``RANKDUEL_REDIS_CLUSTER``); the source is the
same Redis (in place: each old key is deleted once copied) or ``--from URL`` (left as it
is). Safe to run again. See :mod:`service.store.migration` for what is copied.
"""

from __future__ import annotations

import argparse

from cli.help_text import plain


def run(args: argparse.Namespace) -> int:
    from service.config import load_config
    from service.store.client import connect, connect_state
    from service.store.keys import WORKERS_READY
    from service.store.migration import migrate

    config = load_config()
    dst = connect_state(config, socket_timeout=30)
    src = connect(args.source, socket_timeout=30) if args.source else dst
    in_place = args.source is None
    if not args.force and not args.dry_run and dst.scard(WORKERS_READY):
        raise ValueError(f"{dst.scard(WORKERS_READY)} worker(s) are consuming: stop the "
                         "workers and the API first (or pass --force)")
    report = migrate(src, dst, in_place=in_place, dry_run=args.dry_run,
                     say=(lambda m: None) if args.quiet else print)
    verb = "would migrate" if args.dry_run else "migrated"
    print(f"{verb} {len(report.experiments)} experiments and {report.impressions} "
          f"impressions ({'in place' if in_place else 'from ' + args.source.split('@')[-1]})"
          f"; {len(report.skipped)} already in the current layout"
          + (f"; {report.deleted} old keys deleted" if report.deleted else ""))
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("migrate-keys", help="convert the previous Redis key layout",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="source", metavar="URL",
                   help="a Redis holding the previous layout (default: REDIS_URL itself)")
    p.add_argument("--dry-run", action="store_true", help="list what would be migrated")
    p.add_argument("--force", action="store_true",
                   help="migrate even while workers are registered as consuming")
    p.add_argument("--quiet", action="store_true", help="print the summary only")
    p.set_defaults(func=run)
