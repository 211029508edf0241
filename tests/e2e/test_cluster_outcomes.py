"""Outcome events on a real Redis Cluster (3 masters): the attribution index written by
the impression's save, a back end's event attributed in several experiments at once (one
pipeline across shards), credited once per metric by the workers' code
(docs/conversions.md). Every key an outcome touches carries its experiment's hash tag."""

from __future__ import annotations

import secrets
import time

import numpy as np

import bandits
import interleaving as il
from service.credit.outcome_events import credit_events
from service.outcomes.actions import Actions
from service.outcomes.attribution import digest, record
from service.store import Store, audit_entry
from service.store.client import connect
from service.store.keys import new_impression_id
from service.store.records import Ranker
from service.tokens import user_hash

SECRET = b"cluster-secret-0123456789"
METRICS = [{"name": "click"},
           {"name": "orders", "action": "purchase", "window_s": 600},
           {"name": "revenue", "action": "purchase", "value": "sum", "window_s": 600,
            "cap": 100.0}]


def test_outcomes_are_attributed_and_credited_on_a_cluster(stack):
    store = Store(connect(stack.start_redis_cluster(3), cluster=True))
    now = time.time()
    exps, pages = [], {}
    for n in range(6):  # spread over the shards by their hash tags
        exp_id = secrets.token_hex(6)
        meta = {"id": exp_id, "name": f"c{n}", "algorithm": "uniform", "params": {},
                "interleaving": "team_draft", "seed": n, "created_at": now,
                "metrics": METRICS, "primary": "click"}
        store.experiments.create_experiment(exp_id, meta=meta, rankers=[
            Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300, arm=a,
                   added_at=now) for a in range(2)],
            bandit=bandits.make_bandit("uniform", 2, seed=1), truth=None,
            audit=audit_entry(now, "created", actor="test"))
        shown, rec = il.interleave("team_draft", [["a", "b", "c"], ["c", "d", "a"]], 3,
                                   np.random.default_rng(n))
        imp = new_impression_id(exp_id)
        store.impressions.save_impression(
            imp, exp_id=exp_id, t=0, arms=[0, 1], shown=shown, record=rec, duel=True, forfeits=[],
            token_expires=2**31, ttl_s=600, inactivity_s=600, counters={"impressions": 1},
            user_hash=user_hash(SECRET, exp_id, "ann"), rankers=["r0", "r1"], attribution_ttl_s=600)
        exps.append(exp_id)
        pages[exp_id] = (imp, shown, rec)
    assert len({store.r.keyslot(f"rd:{{{e}}}") for e in exps}) > 1
    view = Actions(lambda: store.outcomes.declarations(store.list_ids()))
    out = record(store, SECRET, view, action="purchase", doc="a", value=50.0,
                 event_id="order-7", user="ann", keyed=True)
    assert out["attributed"] and not out["duplicate"]
    assert {e["experiment"] for e in out["experiments"]} == set(exps)
    again = record(store, SECRET, view, action="purchase", doc="a", value=50.0,
                   event_id="order-7", user="ann", keyed=True)
    assert again["duplicate"]
    for exp_id in exps:
        member = "~" + digest("order-7")
        assert credit_events(store, exp_id, [member])[member]["status"] == "credited"
        assert credit_events(store, exp_id, [member])[member]["status"] == "already"
        imp, shown, rec = pages[exp_id]
        (a, b, s), = il.credit(rec, [shown.index("a")])
        counts = store.outcomes.metric_counts(exp_id)
        assert {(a, b): s, (b, a): 1 - s} == counts["orders"].W
        assert counts["orders"].n == counts["revenue"].n == 1
