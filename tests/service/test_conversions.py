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
from service.outcomes.declared import bounded
from service.store.event_log import event as log_event
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
    ([{"name": "rev", "action": "purchase"}], "click", "primary"),
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
                    "event_id": f"{exp_id}-order-{n}"}  # an event_id is the event's own
            status, out = outcome(client, body, headers=BACK_END)
            assert status == 202 and out["attributed"], out
            # other running experiments declare purchases too: this user saw none of them
            assert [e["experiment"] for e in out["experiments"]] == [exp_id], out
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
                                               "event_id": f"{exp_id}-other-{n}"},
                                      headers=BACK_END)
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
    from service.reports.schema import Report

    Report.model_validate(report)  # the metrics' entries as the document describes them
    by = {m["name"]: m for m in report["metrics"]}
    assert by["click"]["champion"] == "clickbait" and by["click"]["certified"], by["click"]
    assert by["revenue"]["champion"] == "buyers" and by["revenue"]["certified"], by["revenue"]
    assert by["orders"]["champion"] == "buyers" and by["orders"]["primary"] is False
    assert by["revenue"]["error_rate"] == pytest.approx(0.05 / 3)
    assert report["metrics_disagree"].startswith("clickbait wins click, buyers wins orders")

    # rankduel report prints each metric's verdict, the primary marked, and the sentence
    from cli.commands.report import table

    text = table(report)
    assert "click (primary)" in text and report["metrics_disagree"] in text.splitlines()
    assert all(m["verdict"] in text for m in report["metrics"])

    # and /metrics exports each metric's comparisons, wins, events and values
    from prometheus_client.parser import text_string_to_metric_families

    status, scraped = client.request("GET", "/metrics", admin=True)
    assert status == 200
    got = {(smp.name, tuple(sorted(smp.labels.items()))): smp.value
           for fam in text_string_to_metric_families(scraped) for smp in fam.samples
           if smp.name.startswith("rankduel_metric_")
           and smp.labels.get("experiment") == exp_id}
    for m in ("orders", "revenue"):
        key = (("experiment", exp_id), ("metric", m))
        assert got["rankduel_metric_comparisons_total", key] == by[m]["comparisons"]
        for arm, name in enumerate(("clickbait", "buyers")):
            lab = tuple(sorted((*key, ("ranker", name))))
            assert got["rankduel_metric_wins_total", lab] == pytest.approx(
                sum(state["metric_W"][m][arm]))
            assert got["rankduel_metric_events_total", lab] == by[m]["events"].get(name, 0)
            if m == "revenue":
                assert got["rankduel_metric_value_total", lab] == pytest.approx(
                    by[m]["values"].get(name, 0))
    assert not any(k[1][1] == ("metric", "click") for k in got)  # the click's: the W's own


def conv_experiment(client, ranker_server, name="conv"):
    return client.create_experiment(name=name, rankers=two_rankers(ranker_server),
                                    algorithm="uniform", interleaving="team_draft", seed=2,
                                    metrics=METRICS)


def nothing_counted(rd, exp_id):
    assert not list(rd.scan_iter(match=f"rd:{{{exp_id}}}:oe:*"))
    assert not [m for m in rd.zrange(pending_key(exp_id), 0, -1) if m.startswith(b"~")]
    assert not rd.exists(f"rd:{{{exp_id}}}:metrics")
    assert rd.hget(f"rd:{{{exp_id}}}:counters", "outcome_events") is None


def test_malformed_outcomes_are_4xx_naming_the_field_and_count_nothing(client,
                                                                        ranker_server, rd):
    exp = conv_experiment(client, ranker_server, "malformed")
    page = client.search(exp["id"], "q", k=4, user="bob")
    doc = page["results"][0]["id"]
    good = {"user": "bob", "action": "purchase", "id": doc, "value": 10, "event_id": "o-1"}
    imp = {"impression_id": page["impression_id"], "token": page["token"],
           "action": "purchase", "id": doc, "value": 10, "event_id": "o-2"}
    drop = object()

    def with_(base, **change):
        out = {**base, **change}
        return {k: v for k, v in out.items() if v is not drop}

    cases = [  # (body, status, the field named)
        (with_(good, action=drop), 422, "action"),
        (with_(good, action="refund"), 422, "action"),
        (with_(good, action="Purchase!"), 422, "action"),
        (with_(good, id=drop), 422, "id"),
        (with_(good, id=""), 422, "id"),
        (with_(good, id=["d00"]), 422, "id"),
        (with_(good, id="x" * 2000), 422, "id"),
        (with_(good, value=-1), 422, "value"),
        (with_(good, value="12"), 422, "value"),
        (with_(good, value=1e12), 422, "value"),
        (with_(good, value=True), 422, "value"),
        (with_(good, value=drop), 422, "value"),  # revenue sums values
        (with_(good, event_id=drop), 422, "event_id"),
        (with_(good, event_id="has space"), 422, "event_id"),
        (with_(good, event_id="e" * 200), 422, "event_id"),
        (with_(good, user=""), 422, "user"),
        (with_(good, user="u" * 300), 422, "user"),
        (with_(good, **{"impression_id": page["impression_id"]}), 422, "impression_id"),
        (with_(good, user=drop), 422, "impression_id"),
        (with_(imp, token="1.00"), 403, "token"),
        (with_(imp, token=drop), 403, "token"),
        (with_(imp, impression_id="nodot"), 422, "impression_id"),
        (with_(imp, value=-5), 422, "value"),
    ]
    for body, status, name in cases:
        got, out = outcome(client, body, headers=BACK_END)
        assert got == status and name in out["error"], (body, got, out)
    # NaN and Infinity are not JSON, but the field that holds one is named
    for text in ("NaN", "Infinity", "-Infinity"):
        raw = json.dumps(with_(good, value=0)).replace('"value": 0', f'"value": {text}')
        got, out = outcome(client, None, raw=raw.encode(), headers=BACK_END)
        assert got == 422 and "value" in out["error"], (text, out)
    got, out = outcome(client, good)  # a back end's event without a key
    assert got == 401 and "user" in out["error"]
    got, out = outcome(client, None, raw=b"<order/>", content_type="application/xml",
                       headers=BACK_END)
    assert got == 415
    assert len(cases) + 5 >= 20
    nothing_counted(rd, exp["id"])


def test_the_browser_tracks_by_impression_within_the_window(client, ranker_server, rd, api):
    exp = conv_experiment(client, ranker_server, "browser")
    page = client.search(exp["id"], "q", k=4)  # no user: the impression form
    ids = [r["id"] for r in page["results"]]
    body = {"impression_id": page["impression_id"], "token": page["token"],
            "action": "purchase", "id": ids[2], "value": 50, "event_id": "b-1"}
    raw = json.dumps(body).encode()  # as navigator.sendBeacon sends it
    got, out = outcome(client, None, raw=raw, content_type="text/plain;charset=UTF-8")
    assert got == 202 and out["experiments"][0]["metrics"] == ["orders", "revenue"], out
    got, out = outcome(client, {**body, "id": "d15", "event_id": "b-2"})
    assert got == 202 and out == {"attributed": False, "event_id": "b-2",
                                  "reason": "not_shown"}
    rt = api.server.app.extensions["rankduel"]
    clock = SimClock(rt.store)
    rt.store.clock = clock
    try:
        created = json.loads(rd.get(f"rd:{{{exp['id']}}}:ax:{page['impression_id']}"))[0]
        clock.at(created + 600)  # beyond revenue's 40 s, within orders' hour
        got, out = outcome(client, {**body, "event_id": "b-3"})
        assert got == 202 and out["experiments"][0]["metrics"] == ["orders"], out
        clock.at(created + 4000)  # beyond every window: refused, by name
        got, out = outcome(client, {**body, "event_id": "b-4"})
        assert got == 422 and "impression_id" in out["error"] and "window" in out["error"]
    finally:
        rt.store.clock = clock.real
    assert not rd.exists(f"rd:{{{exp['id']}}}:oe:" + __import__(
        "service.outcomes.attribution", fromlist=["digest"]).digest("b-4"))


#: the fields of an experiment's state and report before metrics existed
STATE_FIELDS = {
    "id", "name", "algorithm", "interleaving", "lifecycle", "champion", "comparisons",
    "active_rankers", "rankers", "params", "seed", "created_at", "version", "t",
    "selections", "counters", "arms", "stage", "batches", "non_condorcet", "W",
    "preferences", "dwell_unsatisfied_s", "rollout", "segments", "segment_W"}
#: what varies between two experiments created the same way (times, ids, how the credit
#: was cut into batches: ``version``)
VARYING = {"id", "created_at", "generated_at", "history", "timeline", "version",
           "comparisons_over_time", "estimated_seconds_to_decide", "estimate_basis", "name"}


def test_an_experiment_without_metrics_is_todays(client, ranker_server, worker, rd):
    # same seed, same searches and clicks: the experiment without metrics and the one
    # with them draw the same pages and the same W; the one without has today's state
    # and report, field for field, and no key of the attribution index
    worker.ensure()
    plain = client.create_experiment(name="same", rankers=two_rankers(ranker_server),
                                     algorithm="uniform", interleaving="team_draft", seed=8)
    withm = client.create_experiment(name="same", rankers=two_rankers(ranker_server),
                                     algorithm="uniform", interleaving="team_draft", seed=8,
                                     metrics=METRICS)
    rng = np.random.default_rng(1)
    for n in range(12):
        # no user: the draws come from (seed, t), the same in both (a user's from the
        # experiment's id)
        pages = [client.search(e["id"], f"q{n}", k=4) for e in (plain, withm)]
        assert pages[0]["results"] == pages[1]["results"]  # the same draws
        ranks = [r for r in range(1, 5) if rng.random() < 0.4]
        for page in pages:
            if ranks:
                client.click(page, [(page["results"][r - 1]["id"], r) for r in ranks])
            client.end(page)
    states = [wait_for(all_credited(client, e["id"]), what="credit") for e in (plain, withm)]
    assert set(states[0]) == STATE_FIELDS
    assert set(states[1]) == STATE_FIELDS | {"metrics", "primary", "metric_W",
                                             "metric_values"}
    def strip(d):
        out = {k: v for k, v in d.items() if k not in VARYING | {
            "metrics", "primary", "metric_W", "metric_values", "metrics_disagree"}}
        out["rankers"] = [{k: v for k, v in r.items() if k != "added_at"}
                          for r in d["rankers"]]
        return out

    assert strip(states[0]) == strip(states[1])
    reports = [client.report(e["id"]) for e in (plain, withm)]
    assert "metrics" not in reports[0] and "metrics_disagree" not in reports[0]
    from cli.commands.report import table

    assert "metrics:" not in table(reports[0])  # rankduel report: today's output
    assert strip(reports[0]) == strip(reports[1])
    keys = {k.decode().split(":")[2] for k in rd.scan_iter(match=f"rd:{{{plain['id']}}}:*")
            if k.count(b":") >= 2}
    assert not keys & {"ax", "au", "oe", "metrics"}
    assert {k.decode().split(":")[2] for k in rd.scan_iter(
        match=f"rd:{{{withm['id']}}}:*")} >= {"ax"}


def test_each_metric_is_counted_per_segment_too(client, ranker_server, worker):
    worker.ensure()
    exp = client.create_experiment(name="seg-conv", rankers=two_rankers(ranker_server),
                                   algorithm="uniform", interleaving="team_draft", seed=4,
                                   metrics=METRICS, segments={"device": ["mobile", "desktop"]})
    for n, device in enumerate(["mobile", "desktop", "mobile"]):
        page = client.search(exp["id"], "q", k=4, user=f"s{n}", segments={"device": device})
        body = {"user": f"s{n}", "action": "purchase", "value": 100,
                "id": page["results"][n]["id"], "event_id": f"{exp['id']}-{n}"}
        # other experiments declare purchases: an API process sees this new one within
        # REFRESH_S (service.outcomes.actions); until then nothing is recorded for it
        wait_for(lambda b=body: outcome(client, b, headers=BACK_END)[1]["attributed"],
                 what="the new experiment seen")
    state = wait_for(lambda: (s := client.experiment(exp["id"]))["counters"].get(
        "outcome_events") == 3 and s, what="three orders credited")
    for name in ("orders", "revenue"):
        by_value = state["metric_segment_W"][name]["device"]
        assert set(by_value) == {"mobile", "desktop", "other"}
        total = sum(np.array(w) for w in by_value.values())
        assert np.array_equal(total, np.array(state["metric_W"][name]))  # halves and ones
        assert np.array(by_value["mobile"]).sum() == 2 and not np.array(
            by_value["other"]).any()


def test_a_document_of_a_next_page_is_attributed_too(client, ranker_server, worker, rd):
    from urllib.parse import urlencode

    worker.ensure()
    exp = conv_experiment(client, ranker_server, "pages")
    first = client.search(exp["id"], "q", k=2, user="carol")
    params = {"experiment": exp["id"], "q": "q", "k": 2, "page": 2, "user": "carol",
              "impression_id": first["impression_id"], "token": first["token"]}
    second = client._ok("GET", "/search?" + urlencode(params), headers=client._front())
    doc = second["results"][0]["id"]
    assert second["results"][0]["rank"] == 3
    body = {"user": "carol", "action": "purchase", "id": doc, "value": 100,
            "event_id": f"{exp['id']}-p2"}
    wait_for(lambda: outcome(client, body, headers=BACK_END)[1]["attributed"],
             what="the order of a page-2 document attributed")
    state = wait_for(lambda: (s := client.experiment(exp["id"]))["counters"].get(
        "outcome_events") == 1 and s, what="credited")
    raw = rd.hgetall(imp_key(exp["id"], first["impression_id"]))
    arms, record = json.loads(raw[b"arms"]), json.loads(raw[b"record"])
    (a, b, s), = interleaving.credit(record, [2])  # rank 3: position 2
    W = np.zeros((2, 2))
    W[arms[a], arms[b]], W[arms[b], arms[a]] = s, 1 - s
    assert state["metric_W"]["orders"] == W.tolist()
    entry = json.loads(rd.get(f"rd:{{{exp['id']}}}:ax:{first['impression_id']}"))
    assert entry[4][2] == doc and "page" not in entry[2]
