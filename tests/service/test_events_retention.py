"""Retention of the event log (``RANKDUEL_EVENTS_MAXLEN``): where it is applied and what
it bounds, on a real Redis.

The trim runs in the impression's save (``save.lua``: ``XADD ... MAXLEN ~ N``), and it
trims the whole stream, click and outcome events included: so while searches arrive the
log holds about ``N`` events (Redis trims whole nodes of ``stream-node-max-entries``),
whatever their type. Clicks and outcomes (``click.lua``, ``credit.lua``, the hold's
transaction) append without a trim of their own, by design
(docs/segments-and-export.md, "Retention"): after the last search they add at most the
click reports and one outcome of each impression still pending, and the next save trims
them with the rest.
"""

from __future__ import annotations

import secrets
import time

import bandits
from service.credit.protocol import credit_batch
from service.store import Store, audit_entry
from service.store.keys import events_key, new_impression_id
from service.store.records import Ranker

MAXLEN = 200


def make_experiment(store: Store) -> str:
    exp_id = secrets.token_hex(6)
    now = time.time()
    meta = {"id": exp_id, "name": "retention", "algorithm": "uniform", "params": {},
            "interleaving": "team_draft", "seed": 1, "created_at": now}
    rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300, arm=a,
                      added_at=now) for a in range(2)]
    store.experiments.create_experiment(
        exp_id, meta=meta, rankers=rankers, bandit=bandits.make_bandit("uniform", 2, seed=1),
        truth=None, audit=audit_entry(now, "created", actor="test"))
    return exp_id


def save(store: Store, exp_id: str, t: int, maxlen: int) -> str:
    """One impression as the API stores it (a two-ranker team draft of 4 results), with
    a click on the first result."""
    imp = new_impression_id(exp_id)
    store.impressions.save_impression(
        imp, exp_id=exp_id, t=t, arms=[0, 1], shown=["a", "b", "c", "d"],
        record={"teams": [0, 1, 0, 1]}, duel=True, forfeits=[], token_expires=2**31,
        ttl_s=3600, inactivity_s=600, counters={"impressions": 1, "duel": 1},
        rankers=["r0", "r1"], events_maxlen=maxlen)
    store.impressions.add_clicks(imp, exp_id, [0], inactivity_s=600, ttl_s=3600)
    return imp


def test_the_save_trims_every_type_and_clicks_and_outcomes_add_only_the_pending(rd):
    store = Store(rd)
    exp_id = make_experiment(store)
    key = events_key(exp_id)
    node = int(rd.config_get("stream-node-max-entries")["stream-node-max-entries"])
    # about MAXLEN: Redis trims whole nodes, so up to one node more, plus the click
    # appended after the last save
    bound = MAXLEN + node + 1

    ids, most = [], 0
    for t in range(6 * bound):  # impressions and clicks: 2 events a search
        ids.append(save(store, exp_id, t, MAXLEN))
        most = max(most, rd.xlen(key))
    assert MAXLEN <= most <= bound  # trimmed all along, clicks included
    kinds = {f[b"type"] for _, f in rd.xrange(key)}
    assert kinds == {b"impression", b"click"}

    # no search now: crediting the last 150 (the others left pending) appends one outcome
    # each, untrimmed
    before = rd.xlen(key)
    last = ids[-150:]
    for i in range(0, len(last), 50):
        credit_batch(store, exp_id, last[i:i + 50], t=len(ids))
    assert rd.xlen(key) == before + len(last)
    outcomes = [f[b"id"].decode() for _, f in rd.xrange(key) if f[b"type"] == b"outcome"]
    assert sorted(outcomes) == sorted(last)  # each once, the newest events kept

    # the next search's save trims them with the rest
    save(store, exp_id, len(ids), MAXLEN)
    assert MAXLEN <= rd.xlen(key) <= bound


def test_no_maxlen_keeps_every_event(rd):
    store = Store(rd)
    exp_id = make_experiment(store)
    ids = [save(store, exp_id, t, 0) for t in range(400)]
    credit_batch(store, exp_id, ids, t=len(ids))
    assert rd.xlen(events_key(exp_id)) == 3 * len(ids)
