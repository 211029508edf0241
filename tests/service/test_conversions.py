"""Metrics beyond the click (docs/conversions.md): declared at creation (422 naming the
field), outcome events by ``POST /outcomes`` attributed by last touch and counted once
per ``event_id``, credited to each metric's W by the workers exactly once (through a
worker killed mid-batch and a replayed batch), replayed from the event log exactly, and
reported per metric; an experiment without metrics is today's.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import interleaving
from demo.client import ApiResponseError
from service.outcomes.metrics import bounded
from service.store.events import event as log_event
from service.store.keys import imp_key, pending_key
from tests.conftest import ADMIN
from tests.service.test_workers_credit import all_credited, rankers_for, wait_for

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


class SimClock:
    """The API's store clock moved forward (the searches' times stay real): an event sent
    ``delay`` seconds after its page in simulated time, at once in real time."""

    def __init__(self, store):
        self.store, self.real, self.offset = store, store.clock, 0.0

    def __call__(self):
        return self.real() + self.offset

    def at(self, t: float) -> None:
        self.offset = t - self.real()


def recompute(rd, exp_id, credited):
    """Each metric's W from the events sent (``credited``: (impression, position, value),
    once per event_id), each impression's record read from its hash."""
    W = {"orders": np.zeros((2, 2)), "revenue": np.zeros((2, 2))}
    values = {}
    for imp, pos, value, in_revenue in credited:
        raw = rd.hgetall(imp_key(exp_id, imp))
        arms, record = json.loads(raw[b"arms"]), json.loads(raw[b"record"])
        for a, b, s in interleaving.credit(record, [pos]):
            i, j = arms[a], arms[b]
            W["orders"][i, j] += s
            W["orders"][j, i] += 1 - s
            if in_revenue:
                W["revenue"][i, j] += bounded(s, value, 100)
                W["revenue"][j, i] += 1 - bounded(s, value, 100)
                winner = i if s == 1 else j
                values[winner] = values.get(winner, 0) + value
    return W, values


def test_clicks_name_the_clickbait_ranker_and_revenue_the_buyers(client, ranker_server,
                                                                  worker, rd, api):
    # users click the clickbait ranker's eye-catching documents and buy the buyer's
    # ranker's; orders come from a back end (by user) 1-60 s after the page in simulated
    # time, some retried, some outside revenue's 40 s window, some of documents never
    # shown; a worker is killed mid-batch while it credits them, and a batch replayed
    worker.ensure()
    rt = api.server.app.extensions["rankduel"]
    exp = client.create_experiment(name="clickbait", rankers=two_rankers(ranker_server),
                                   algorithm="uniform", interleaving="team_draft", seed=11,
                                   metrics=METRICS)
    exp_id = exp["id"]
    rng = np.random.default_rng(5)
    last = {}  # user -> (page, time) of the last page showing a bought document
    for n in range(70):
        user = f"u{n % 60}"  # ten users come twice: the later page is the last touch
        page = client.search(exp_id, "gift ideas", k=4, user=user)
        ids = [r["id"] for r in page["results"]]
        bait = [d for d in CLICKBAIT if d in ids]
        if bait and rng.random() < 0.9:
            client.click(page, [(bait[0], ids.index(bait[0]) + 1)])
        client.end(page)
        entry = json.loads(rd.get(f"rd:{{{exp_id}}}:ax:{page['impression_id']}"))
        last[user] = (page, entry[0])
    wait_for(all_credited(client, exp_id), timeout=60, what="the clicks credited")

    worker.restart(delay_ms=60)  # slow: the kill lands while it credits the orders
    clock = SimClock(rt.store)
    rt.store.clock = clock
    sent, credited = [], []
    try:
        for n, (user, (page, t)) in enumerate(sorted(last.items())):
            ids = [r["id"] for r in page["results"]]
            doc = next((d for d in BOUGHT if d in ids), None)
            if doc is None:
                continue
            delay, value = float(rng.integers(1, 61)), float(rng.choice([50, 75, 100, 100]))
            clock.at(t + delay)
            body = {"user": user, "action": "purchase", "id": doc, "value": value,
                    "event_id": f"order-{n}"}
            status, out = outcome(client, body, headers=BACK_END)
            assert status == 202 and out["attributed"], out
            assert out["experiments"][0]["impression_id"] == page["impression_id"]
            metrics = ["orders", "revenue"] if delay <= 40 else ["orders"]
            assert out["experiments"][0]["metrics"] == metrics
            credited.append((page["impression_id"], ids.index(doc), value, delay <= 40))
            sent.append(body)
            if n % 4 == 0:  # the order service retries: counted once
                status, again = outcome(client, body, headers=BACK_END)
                assert status == 202 and again["duplicate"]
            if n % 9 == 0:  # an order of a document this user was never shown
                status, out = outcome(client, {**body, "id": "d15",
                                               "event_id": f"other-{n}"}, headers=BACK_END)
                assert status == 202 and out["reason"] == "no_impression"
    finally:
        rt.store.clock = clock.real

    def claimed():
        now = time.time()
        return any(m.startswith(b"~") and s > now
                   for m, s in rd.zrange(pending_key(exp_id), 0, -1, withscores=True))
    wait_for(claimed, what="the orders claimed")
    worker.kill9()
    assert int(rd.hget(f"rd:{{{exp_id}}}:counters", "outcome_events") or 0) < len(sent)
    worker.restart(delay_ms=0)
    wait_for(lambda: int(rd.hget(f"rd:{{{exp_id}}}:counters", "outcome_events") or 0)
             == len(sent), timeout=60, what="every order credited")
    state = client.experiment(exp_id)
    W, values = recompute(rd, exp_id, credited)
    assert state["metric_W"] == {m: w.tolist() for m, w in W.items()}  # exactly
    assert state["metric_values"]["revenue"] == {
        {0: "clickbait", 1: "buyers"}[a]: v for a, v in sorted(values.items())}
    assert sum(r for *_, r in credited) < len(credited)  # some outside revenue's window

    # a replayed batch (a duplicate delivery) changes nothing
    from service.credit.outcome_events import credit_events

    members = [e["id"] for e in (log_event(i, f)
                                 for i, f in rd.xrange(f"rd:{{{exp_id}}}:events"))
               if e["type"] == "metric"]
    assert len(members) == len(sent)
    assert {r["status"] for r in credit_events(rt.store, exp_id, members).values()} == {
        "already"}
    assert client.experiment(exp_id)["metric_W"] == state["metric_W"]

    # replay equals live, per metric, exactly
    from cli.commands.replay import replay

    events = [log_event(i, f) for i, f in rd.xrange(f"rd:{{{exp_id}}}:events")]
    again = replay(events)
    assert again["metric_W"] == state["metric_W"] and again["W"] == state["W"]

    report = client.report(exp_id)
    by = {m["name"]: m for m in report["metrics"]}
    assert by["click"]["champion"] == "clickbait" and by["click"]["certified"], by["click"]
    assert by["revenue"]["champion"] == "buyers" and by["revenue"]["certified"], by["revenue"]
    assert by["orders"]["champion"] == "buyers" and by["orders"]["primary"] is False
    assert by["revenue"]["error_rate"] == pytest.approx(0.05 / 3)
    assert report["metrics_disagree"].startswith("clickbait wins click, buyers wins orders")
