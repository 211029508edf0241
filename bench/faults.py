"""Faults under load, the long form: the whole platform as deployed — Redis
with its append-only file, ``rankduel serve`` (gunicorn, 2 workers), ``rankduel worker``
(pool of 2, running the sweep), three rankers of which one can be made to fail — under
simulated users who search, click and end half their impressions (the rest are closed by
the sweep). One fault after another; after each, the users pause, and the bench waits
until nothing is pending and checks that W's total equals the decisive impressions
recomputed from Redis (no credited click lost, none counted twice).

Per fault it prints: the 5xx the users saw while it lasted (only 503 is documented, and
only while Redis is unreachable), the recovery time (fault over → first successful
search), the drain time (load paused → nothing pending), lost and double credits.

    .venv/bin/python bench/faults.py [--rounds 2] [--users 6] [--load-s 20] [--json OUT]

``--quick`` runs every fault once with a short load (what
``tests/service/test_faults_under_load.py`` runs, in smaller pieces).
Exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.faults import FAULTS, Platform, run_fault  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="times each fault is injected")
    ap.add_argument("--users", type=int, default=6)
    ap.add_argument("--load-s", type=float, default=20.0,
                    help="seconds of load after each fault before the pause")
    ap.add_argument("--quick", action="store_true", help="one round, 3 s of load")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.load_s = 1, 3.0
    rows = []
    with tempfile.TemporaryDirectory(prefix="rankduel-faults-") as work:
        p = Platform(Path(work), args.users)
        try:
            for r in range(args.rounds):
                for name in FAULTS:
                    row = run_fault(p, name, args.load_s)
                    row["round"] = r + 1
                    rows.append(row)
                    print(f"{name:34s} fault {row['fault_s']:5.1f}s  5xx {row['5xx'] or '-'}"
                          f"  recovery {row['recovery_s']:5.2f}s  drain {row['drain_s']:5.2f}s"
                          f"  W {row['w_total']:.0f} = decisive {row['decisive']}"
                          f"  lost {row['lost']} double {row['double']}"
                          f"  {'ok' if row['ok'] else 'FAILED'}", flush=True)
            statuses = dict(p.users.tally.statuses)
        finally:
            p.close()
    total = sum(v for k, v in statuses.items())
    print(f"\nrequests {total}: {statuses}")
    print(f"faults {len(rows)}, failed {sum(not r['ok'] for r in rows)}; "
          f"max recovery {max(r['recovery_s'] for r in rows):.2f}s, "
          f"max drain {max(r['drain_s'] for r in rows):.2f}s")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "statuses": statuses}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
