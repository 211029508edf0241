"""Metrics beyond the click (docs/conversions.md): declared at creation (422 naming the
field), outcome events by ``POST /outcomes`` attributed by last touch and counted once
per ``event_id``, credited to each metric's W by the workers exactly once (through a
worker killed mid-batch and a replayed batch), replayed from the event log exactly, and
reported per metric; an experiment without metrics is today's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import interleaving
from demo.client import ApiResponseError
from service.outcomes.metrics import bounded
from service.store.events import event as log_event
from service.store.keys import imp_key, pending_key
from tests.conftest import ADMIN
from tests.service.test_workers_credit import rankers_for, wait_for

BACK_END = {"Authorization": f"Bearer {ADMIN}"}
#: the clickbait ranker's eye-catching documents come first in its list ("bad": d29,
#: d28, ...); the buyer's ranker's first are what users buy ("good": d00, d01, ...)
CLICKBAIT, BOUGHT = ("d29", "d28"), ("d00", "d01")
METRICS = [{"name": "click"},
           {"name": "orders", "action": "purchase", "window_s": 3600},
           {"name": "revenue", "action": "purchase", "value": "sum", "window_s": 40,
            "cap": 100}]


def two_rankers(server):
    return [{"name": "clickbait", "url": f"{server.url}/r/bad", "timeout_ms": 1000},
            {"name": "buyers", "url": f"{server.url}/r/good", "timeout_ms": 1000}]


def outcome(client, body, *, headers=None, raw=None, content_type="application/json"):
    h = {"Content-Type": content_type, **(headers or {})}
    return client.request("POST", "/outcomes", body, headers=h, raw=raw)


@pytest.mark.parametrize("metrics, primary, words", [
    ([{"name": f"m{i}", "action": "a"} for i in range(6)], None, "metrics"),
    ([{"name": "rev", "action": "purchase", "window_s": 7 * 86400 + 1}], "rev", "window_s"),
    ([{"name": "click"}, {"name": "click"}], None, "declared twice"),
    ([{"name": "rev", "action": "purchase", "value": "avg"}], None, "value"),
    ([{"name": "click"}], "revenue", "primary"),
    ([{"name": "click"}, {"name": "rev", "action": "purchase"}], "rev", "not supported yet"),
    (None, "click", "primary"),
    ([{"name": "click", "action": "purchase"}], None, "click metric"),
    ([{"name": "cart"}], None, "metrics[0].action"),
    ([{"name": "cart", "action": "add_to_cart", "cap": 5}], None, "cap"),
    ([{"name": "Cart!", "action": "add_to_cart"}], None, "name"),
    ([], None, "metrics"),
])
def test_bad_declarations_are_422_naming_the_field(client, ranker_server, metrics, primary,
                                                   words):
    body = {"name": "bad", "rankers": rankers_for(ranker_server, "a", "b"),
            "algorithm": "uniform", "interleaving": "team_draft"}
    if metrics is not None:
        body["metrics"] = metrics
    if primary is not None:
        body["primary"] = primary
    with pytest.raises(ApiResponseError) as err:
        client.create_experiment(**body)
    assert err.value.status == 422, err.value.body
    assert words in json.dumps(err.value.body), err.value.body


def test_an_order_by_user_is_attributed_credited_once_and_logged(client, ranker_server,
                                                                  worker, rd):
    worker.ensure()
    exp = client.create_experiment(name="conv", rankers=two_rankers(ranker_server),
                                   algorithm="uniform", interleaving="team_draft", seed=3,
                                   metrics=METRICS)
    assert exp["metrics"][1] == {"name": "orders", "action": "purchase", "value": "count",
                                 "window_s": 3600}
    assert exp["primary"] == "click" and exp["metric_W"]["orders"] == [[0, 0], [0, 0]]
    page = client.search(exp["id"], "q", k=4, user="alice")
    pos = [r["id"] for r in page["results"]].index("d00")
    order = {"user": "alice", "action": "purchase", "id": "d00", "value": 75,
             "event_id": "order-1"}
    status, out = outcome(client, order, headers=BACK_END)
    assert status == 202 and out["attributed"] and not out["duplicate"], out
    assert out["experiments"] == [{"experiment": exp["id"],
                                   "impression_id": page["impression_id"],
                                   "metrics": ["orders", "revenue"]}]
    status, again = outcome(client, order, headers=BACK_END)  # a retry: counted once
    assert status == 202 and again["duplicate"]
    status, none = outcome(client, {**order, "event_id": "order-2", "id": "d15"},
                           headers=BACK_END)
    assert status == 202 and none == {"attributed": False, "event_id": "order-2",
                                      "reason": "no_impression"}
    state = wait_for(lambda: (s := client.experiment(exp["id"]))["metric_W"]["orders"] != [
        [0, 0], [0, 0]] and s, what="the order credited")
    record = json.loads(rd.hget(imp_key(exp["id"], page["impression_id"]), "record"))
    arms = json.loads(rd.hget(imp_key(exp["id"], page["impression_id"]), "arms"))
    (a, b, s), = interleaving.credit(record, [pos])
    W = np.zeros((2, 2))
    W[arms[a], arms[b]], W[arms[b], arms[a]] = s, 1 - s
    assert state["metric_W"]["orders"] == W.tolist()
    R = np.zeros((2, 2))
    R[arms[a], arms[b]] = bounded(s, 75, 100)
    R[arms[b], arms[a]] = 1 - bounded(s, 75, 100)
    assert state["metric_W"]["revenue"] == R.tolist()
    assert state["metric_values"] == {"revenue": {"buyers": 75.0}}
    assert not [m for m in rd.zrange(pending_key(exp["id"]), 0, -1) if m.startswith(b"~")]
    events = [log_event(i, f) for i, f in rd.xrange(f"rd:{{{exp['id']}}}:events")]
    metric = [e for e in events if e["type"] == "metric"]
    assert len(metric) == 1 and metric[0]["mark"]["outcomes"]["orders"] == [
        [arms[a], arms[b], s]]
    report = client.report(exp["id"])
    assert [m["name"] for m in report["metrics"]] == ["click", "orders", "revenue"]
    assert report["metrics"][0]["primary"] and report["metrics"][2]["values"] == {
        "buyers": 75.0}
