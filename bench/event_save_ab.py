"""What the event log adds to a search's impression write, before against after, in
alternated rounds on one Redis.

The event log's whole cost on the search path is in the impression's save: the event's
JSON built from the fields already encoded, the user's keyed hash, and one ``XADD`` inside
the save script (docs/segments-and-export.md). The end-to-end bench
(:mod:`bench.proxy_ab`) measures a search's added latency, but on a shared 2-core machine
its noise is milliseconds; this one times only that call, ``Store.save_impression`` as
``service/search/serve.py`` makes it (with its segment labels, and, where the code has the
event log, the ranker names, the user's hash and ``events_maxlen``), so a difference of
microseconds can be seen.

One process per checkout (``--before``, ``--after``: each with its ``.venv``, on
``PYTHONPATH``) creates an experiment and writes 200 unmeasured impressions (a
two-ranker team draft of 10 results); then each round times ``--calls`` more in each
process in turn (the order swapped every round, so the two blocks of a round run within
a second or two of each other): the wall time per call (median and mean, µs: the latency
the search waits for) and the thread CPU per call. The per-round paired differences
(after minus before) and their median are printed last.

    .venv/bin/python bench/event_save_ab.py --before /tmp/old --after /tmp/new [--rounds 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.stack import Stack  # noqa: E402

#: run in the checkout measured (its own ``service``): one experiment, warm-up, timed saves
CHILD = r'''
import inspect, json, secrets, statistics, sys, time
import bandits
from service.store import Store, audit_entry
from service.store.client import connect
from service.store.keys import new_impression_id
from service.store.records import Ranker

url = sys.argv[1]
store = Store(connect(url))
exp_id = secrets.token_hex(6)
now = time.time()
meta = {"id": exp_id, "name": "save-ab", "algorithm": "uniform", "params": {},
        "interleaving": "team_draft", "seed": 1, "created_at": now,
        "segments": {"device": ["mobile", "desktop"], "market": ["de", "fr", "us"]}}
rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300, arm=a,
                  added_at=now) for a in range(2)]
store.experiments.create_experiment(exp_id, meta=meta, rankers=rankers,
                                    bandit=bandits.make_bandit("uniform", 2, seed=1), truth=None,
                                    audit=audit_entry(now, "created", actor="bench"))
has_log = "events_maxlen" in inspect.signature(store.impressions.save_impression).parameters
if has_log:
    from service.search.serve import user_hash
secret = secrets.token_bytes(32)
shown = [f"doc-{d}" for d in range(10)]
record = {"teams": [d % 2 for d in range(10)]}

def one(k):
    extra = {}
    if has_log:
        extra = {"user_hash": user_hash(secret, exp_id, f"user-{k % 500}"),
                 "rankers": ["r0", "r1"], "events_maxlen": 0}
    store.impressions.save_impression(
        new_impression_id(exp_id), exp_id=exp_id, t=k, arms=[0, 1], shown=shown,
        record=record, duel=True, forfeits=[], token_expires=2**31, ttl_s=3600,
        inactivity_s=600, counters={"impressions": 1, "duel": 1},
        segments=["device=mobile", "market=de"], **extra)

for k in range(200):
    one(k)
print("ready", flush=True)
done = 200
for line in sys.stdin:  # one block of timed calls per line read
    calls = int(line)
    wall = []
    cpu0 = time.thread_time()
    for k in range(calls):
        t0 = time.perf_counter()
        one(done + k)
        wall.append(time.perf_counter() - t0)
    done += calls
    cpu = (time.thread_time() - cpu0) / calls
    print(json.dumps({"event_log": has_log,
                      "wall_us_p50": round(statistics.median(wall) * 1e6, 2),
                      "wall_us_mean": round(statistics.fmean(wall) * 1e6, 2),
                      "cpu_us": round(cpu * 1e6, 2)}), flush=True)
'''


class Writer:
    """One checkout's process: started once (experiment, warm-up), then timed block by
    block on request, so that before and after alternate within seconds."""

    def __init__(self, code: Path, redis_url: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(code))
        env.pop("RANKDUEL_CONFIG", None)
        self.code = code
        self.proc = subprocess.Popen([str(code / ".venv/bin/python"), "-c", CHILD, redis_url],
                                     cwd=str(code), env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        if self._line() != "ready":
            raise RuntimeError(f"{code}: the writer did not start")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.code}: the writer exited ({self.proc.wait()})")
        return line.strip()

    def block(self, calls: int) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{calls}\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="a checkout without the event log")
    ap.add_argument("--after", default=str(ROOT), help="a checkout with it (default: this)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    codes = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    rows: dict[str, list[dict]] = {"before": [], "after": []}
    loads = []
    with tempfile.TemporaryDirectory(prefix="rankduel-save-ab-") as work, Stack(work) as stack:
        redis_url = stack.start_redis()
        writers = {name: Writer(code, redis_url) for name, code in codes.items()}
        for r in range(args.rounds):
            for name in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
                row = writers[name].block(args.calls)
                rows[name].append(row)
                print(f"round {r + 1} {name:6s} {json.dumps(row)}", flush=True)
            loads.append(os.getloadavg()[0])
        for w in writers.values():
            w.close()
    keys = ["wall_us_p50", "wall_us_mean", "cpu_us"]
    paired = {k: [round(a[k] - b[k], 2) for a, b in zip(rows["after"], rows["before"],
                                                        strict=True)] for k in keys}
    summary = {k: {"before": statistics.median(x[k] for x in rows["before"]),
                   "after": statistics.median(x[k] for x in rows["after"]),
                   "paired_median": statistics.median(paired[k]),
                   "paired_min": min(paired[k]), "paired_max": max(paired[k])} for k in keys}
    print(f"\nmedians over {args.rounds} rounds, load average {min(loads):.1f}-{max(loads):.1f}")
    for k, s in summary.items():
        print(f"{k:14s} before {s['before']:8.2f}  after {s['after']:8.2f}  paired "
              f"difference {s['paired_median']:+.2f} (rounds {s['paired_min']:+.2f} to "
              f"{s['paired_max']:+.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rounds": rows,
                                               "paired": paired, "summary": summary,
                                               "load_average": [min(loads), max(loads)]},
                                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
