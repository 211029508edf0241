"""A policy that learns from a metric other than the click (``primary``,
docs/conversions.md): ``W`` is the primary metric's, fed by the policy's own update of
each attributed event exactly once (through a worker killed mid-batch and a replayed
batch); the clicks feed the click metric's ``W``; replay equals live for both; the
report's headline is the primary's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import interleaving
from service.outcomes.declared import bounded
from service.store.event_log import event as log_event
from service.store.keys import imp_key, pending_key
from tests.service.test_conversions import (
    BACK_END,
    BOUGHT,
    CLICKBAIT,
    METRICS,
    outcome,
    two_rankers,
)
from tests.service.test_workers_credit import all_credited, wait_for


def _credit(W: np.ndarray, record, arms, pos: int, value: float | None) -> None:
    for a, b, s in interleaving.credit(record, [pos]):
        i, j = arms[a], arms[b]
        x = s if value is None else bounded(s, value, 100)
        W[i, j] += x
        W[j, i] += 1 - x


def test_the_policy_learns_from_revenue_once_per_order(client, ranker_server, worker, rd,
                                                        api):
    worker.ensure()
    rt = api.server.app.extensions["rankduel"]
    exp = client.create_experiment(name="learns-revenue", rankers=two_rankers(ranker_server),
                                   algorithm="uniform", interleaving="team_draft", seed=12,
                                   metrics=METRICS, primary="revenue")
    exp_id = exp["id"]
    assert exp["primary"] == "revenue" and set(exp["metric_W"]) == {"click", "orders",
                                                                     "revenue"}
    rng = np.random.default_rng(8)
    clicks_W = np.zeros((2, 2))
    pages = []
    for n in range(40):
        user = f"p{n}"
        page = client.search(exp_id, "gift ideas", k=4, user=user)
        ids = [r["id"] for r in page["results"]]
        raw = rd.hgetall(imp_key(exp_id, page["impression_id"]))
        record, arms = json.loads(raw[b"record"]), json.loads(raw[b"arms"])
        bait = [d for d in CLICKBAIT if d in ids]
        if bait and rng.random() < 0.9:
            client.click(page, [(bait[0], ids.index(bait[0]) + 1)])
            _credit(clicks_W, record, arms, ids.index(bait[0]), None)
        client.end(page)
        pages.append((user, ids, record, arms))
    wait_for(all_credited(client, exp_id), timeout=60, what="the clicks credited")
    state = client.experiment(exp_id)
    # the clicks are the click metric's, and the policy has learnt nothing yet
    assert state["metric_W"]["click"] == clicks_W.tolist()
    assert state["W"] == [[0.0, 0.0], [0.0, 0.0]] and state["comparisons"] == 0

    worker.restart(delay_ms=60)  # slow: the kill lands while it credits the orders
    revenue_W, sent = np.zeros((2, 2)), 0
    for n, (user, ids, record, arms) in enumerate(pages):
        doc = next((d for d in BOUGHT if d in ids), None)
        if doc is None:
            continue
        value = float(rng.choice([50, 75, 100]))
        body = {"user": user, "action": "purchase", "id": doc, "value": value,
                "event_id": f"{exp_id}-order-{n}"}
        status, out = outcome(client, body, headers=BACK_END)
        assert status == 202 and out["attributed"], out
        _credit(revenue_W, record, arms, ids.index(doc), value)
        sent += 1
        if n % 3 == 0:  # the order service retries: learnt from once
            status, again = outcome(client, body, headers=BACK_END)
            assert status == 202 and again["duplicate"]

    def claimed():
        return any(m.startswith(b"~") for m in rd.zrange(pending_key(exp_id), 0, -1))
    wait_for(claimed, what="the orders claimed")
    worker.kill9()
    worker.restart(delay_ms=0)
    wait_for(lambda: int(rd.hget(f"rd:{{{exp_id}}}:counters", "outcome_events") or 0)
             == sent, timeout=60, what="every order credited")
    state = client.experiment(exp_id)
    # the policy's W is revenue's (halves, quarters and eighths: exact in any order), its
    # comparisons one per order; the clicks' W unchanged
    assert state["W"] == revenue_W.tolist() == state["metric_W"]["revenue"]
    assert state["comparisons"] == sent > 10
    assert state["metric_W"]["click"] == clicks_W.tolist()
    assert int(rd.hget(f"rd:{{{exp_id}}}:counters", "primary_credited")) == sent

    # a replayed batch (a duplicate delivery) changes nothing
    from service.credit.outcome_events import credit_events

    log = [log_event(i, f) for i, f in rd.xrange(f"rd:{{{exp_id}}}:events")]
    members = [e["id"] for e in log if e["type"] == "outcome"]
    assert len(members) == sent and all(m.startswith("~") for m in members)
    assert {r["status"] for r in credit_events(rt.store, exp_id, members).values()} == {
        "already"}
    assert client.experiment(exp_id)["W"] == state["W"]

    # replay equals live: W (the primary's) and every metric's
    from cli.commands.replay import replay

    again = replay(log)
    assert again["W"] == state["W"] and again["metric_W"] == state["metric_W"]

    # the report: the headline is the policy's (revenue); each metric's verdict beside it
    report = client.report(exp_id)
    by = {m["name"]: m for m in report["metrics"]}
    assert by["revenue"]["primary"] and not by["click"]["primary"]
    assert by["click"]["W"] == clicks_W.tolist()
    assert by["click"]["champion"] == "clickbait" and by["revenue"]["champion"] == "buyers"
    assert by["revenue"]["comparisons"] == sent


def test_a_primary_of_an_action_is_accepted_and_an_undeclared_one_is_not(client,
                                                                         ranker_server):
    rankers = two_rankers(ranker_server)
    ok = client.create_experiment(name="p-ok", rankers=rankers, algorithm="mergedts",
                                  interleaving="team_draft", metrics=METRICS,
                                  primary="orders")
    assert ok["primary"] == "orders"
    status, body = client.request("POST", "/experiments", {
        "name": "p-bad", "rankers": rankers, "algorithm": "uniform", "interleaving": "team_draft",
        "metrics": [{"name": "click"}], "primary": "orders"}, admin=True)
    assert status == 422 and "primary" in body["error"]


@pytest.mark.parametrize("primary", [None, "click"])
def test_learning_from_clicks_keeps_the_click_metric_in_w(client, ranker_server, primary):
    extra = {} if primary is None else {"primary": primary}
    exp = client.create_experiment(name="p-click", rankers=two_rankers(ranker_server),
                                   algorithm="uniform", interleaving="team_draft",
                                   metrics=METRICS, **extra)
    assert exp["primary"] == "click" and set(exp["metric_W"]) == {"orders", "revenue"}
