"""UBI in: ``POST /ubi/events`` (service.ubi.receive). A malformed event answers 4xx naming
its field (``events[i]...``) and nothing of the request is counted; a click is recorded
as ``POST /clicks`` records it, so the same simulated users reach the same ``W`` through
either route; other actions go to the event log uncredited; a server-side sender uses a
front-end key instead of the token.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.api import all_credited, rankers_for
from helpers.wait import wait_for

from cli.commands.export import pages
from tests.conftest import ADMIN


def ubi_click(page, rank, **attrs):
    """A click as ubi.js builds it (UbiEvent + UbiEventAttributes), on ``rank`` (1-based)."""
    doc = page["results"][rank - 1]["id"]
    return {"application": "shop", "action_name": "click", "client_id": "browser-1",
            "session_id": None, "user_id": "", "query_id": page["impression_id"],
            "timestamp": "2025-03-01T10:00:00.000Z", "message_type": "INFO", "message": "",
            "event_attributes": {"token": page["token"], **attrs,
                                 "object": {"object_id": doc, "object_id_field": "id",
                                            "description": "a doc"},
                                 "position": {"ordinal": rank, "x": None, "y": None}}}


def post(client, body, headers=None, raw=None):
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    if raw is None:
        raw = json.dumps(body).encode()
    return client.request("POST", "/ubi/events", raw=raw, headers=hdrs)


def logged(api, exp_id):
    """The click and ubi events of the log."""
    return [e for events, _ in pages(api.url, ADMIN, exp_id)
            for e in events if e["type"] in ("click", "ubi")]


@pytest.fixture
def page(client, ranker_server):
    exp = client.create_experiment(name="ubi-in", rankers=rankers_for(
        ranker_server, "good", "bad"), algorithm="uniform", interleaving="team_draft")
    return client.search(exp["id"], "q", k=5)


def _bad(page):
    """(event, status, the field its error names): each malformed in one way."""
    good = ubi_click(page, 2)
    attrs = good["event_attributes"]

    def with_attrs(**kw):
        return {**good, "event_attributes": {**attrs, **kw}}

    other = page["results"][2]["id"]
    return [
        ({k: v for k, v in good.items() if k != "action_name"}, 400, "action_name"),
        ({**good, "action_name": 5}, 400, "action_name"),
        ({**good, "action_name": ""}, 400, "action_name"),
        ({**good, "action_name": "x" * 101}, 400, "action_name"),
        ({**good, "query_id": 12}, 400, "query_id"),
        ({**good, "timestamp": "yesterday"}, 400, "timestamp"),
        ({**good, "client_id": "c" * 101}, 400, "client_id"),
        ({**good, "message": "m" * 1025}, 400, "message"),
        ({**good, "event_attributes": "x"}, 400, "event_attributes"),
        (with_attrs(position={"ordinal": "2"}), 400, "event_attributes.position.ordinal"),
        (with_attrs(position={"ordinal": 0}), 400, "event_attributes.position.ordinal"),
        (with_attrs(position={"ordinal": 1.5}), 400, "event_attributes.position.ordinal"),
        (with_attrs(position=[2]), 400, "event_attributes.position"),
        (with_attrs(object={"object_id": []}), 400, "event_attributes.object.object_id"),
        (with_attrs(object={"object_id": ""}), 400, "event_attributes.object.object_id"),
        (with_attrs(token=5), 400, "event_attributes.token"),
        (with_attrs(object=None), 422, "event_attributes.object.object_id"),
        (with_attrs(position={"x": 1, "y": 2}), 422, "event_attributes.position.ordinal"),
        (with_attrs(object={"object_id": other}), 422, "event_attributes.position.ordinal"),
        (with_attrs(token="9999999999." + "0" * 64), 403, "event_attributes.token"),
        ({**good, "event_attributes": {k: v for k, v in attrs.items() if k != "token"}},
         403, "event_attributes.token"),
        ("click", 400, ""),
    ]


def test_a_bad_event_names_its_field_and_nothing_is_counted(client, api, page):
    exp_id = page["experiment"]
    cases = _bad(page)
    assert len(cases) >= 15
    for n, (event, status, field) in enumerate(cases):
        # a good click and a good add_to_cart first: neither may be counted
        body = [ubi_click(page, 1), {**ubi_click(page, 1), "action_name": "add_to_cart"},
                event]
        got, out = post(client, body)
        name = f"events[2].{field}" if field else "events[2]"
        assert got == status, (n, event, out)
        assert name in out["error"], (n, out["error"])
    assert logged(api, exp_id) == []  # nothing recorded, nothing stored
    # the same good events alone are counted
    got, out = post(client, [ubi_click(page, 1),
                             {**ubi_click(page, 1), "action_name": "add_to_cart"}])
    assert got == 202 and (out["credited"], out["accepted"], out["ignored"]) == (1, 1, 0)
    assert [e["type"] for e in logged(api, exp_id)] == ["click", "ubi"]


def test_bodies_and_encodings(client, api, page):
    one = ubi_click(page, 3)
    # a single event, as text/plain (navigator.sendBeacon with a string)
    got, out = post(client, None, {"Content-Type": "text/plain;charset=UTF-8"},
                    raw=json.dumps(one).encode())
    assert got == 202 and out["events"] == [
        {"index": 0, "status": "credited", "reason": "recorded as a click at rank 3"}]
    got, out = client.request("POST", "/ubi_events", [one])  # again, at ubi.js's path
    assert got == 202 and out["events"][0]["status"] == "ignored"
    assert "already" in out["events"][0]["reason"]
    for raw, ctype, status in ((b"not json", "application/json", 400),
                               (b"[]", "application/json", 400),
                               (b"", "application/json", 400),
                               (json.dumps([one] * 101).encode(), "application/json", 400),
                               (b"a=1", "application/x-www-form-urlencoded", 415)):
        got, out = post(client, None, {"Content-Type": ctype}, raw=raw)
        assert got == status, (raw[:20], out)
    # events of no rankduel impression are ignored, with the reason
    got, out = post(client, [{"action_name": "view", "query_id": "0f9a-uuid-like"},
                             {"action_name": "view"},
                             {"action_name": "view", "query_id": "gone.123"}])
    assert got == 202 and out["ignored"] == 3
    assert "not an impression" in out["events"][0]["reason"]
    # an action that is no click is stored, not credited, its token not kept
    got, out = post(client, [{**one, "action_name": "watch"}])
    assert got == 202 and out["events"][0]["status"] == "accepted"
    stored = [e for e in logged(api, page["experiment"]) if e["type"] == "ubi"]
    assert stored[-1]["action"] == "watch"
    assert "token" not in stored[-1]["data"]["event_attributes"]


def test_a_server_side_sender_uses_a_front_end_key(client, api, page):
    one = ubi_click(page, 2)
    del one["event_attributes"]["token"]
    got, out = post(client, [one], {"Authorization": f"Bearer {ADMIN}"})
    assert got == 202 and out["credited"] == 1
    got, out = post(client, [one], {"Authorization": "Bearer wrong"})
    assert got == 401


def _users(client, exp_id, n, seed, report):
    """``n`` searches of seeded simulated users: each clicks the first result of the
    best ranker's top five (the ``good`` list starts d00..d04), with probability 0.9;
    ``report(page, rank)`` reports the click; then the impression ends."""
    rng = np.random.default_rng(seed)
    for s in range(n):
        page = client.search(exp_id, f"query {s % 7}", k=6, user=f"u{s % 9}")
        ranks = [r for r, item in enumerate(page["results"], 1) if item["id"] < "d05"]
        if ranks and rng.random() < 0.9:
            report(page, ranks[0])
        client.end(page)


def test_the_same_users_reach_the_same_w_through_clicks_or_ubi(client, ranker_server,
                                                               worker, api):
    worker.ensure()
    ws = []
    for route in ("clicks", "ubi"):
        exp = client.create_experiment(name=f"same-{route}", rankers=rankers_for(
            ranker_server, "good", "bad", "mid"), algorithm="uniform",
            interleaving="team_draft", seed=21)

        def report(page, rank, route=route):
            if route == "clicks":
                client.click(page, [(page["results"][rank - 1]["id"], rank)])
            else:
                got, out = post(client, [ubi_click(page, rank)])
                assert got == 202 and out["credited"] == 1, out

        _users(client, exp["id"], 30, 5, report)
        ws.append(wait_for(all_credited(client, exp["id"]), timeout=60, what="crediting")["W"])
    assert ws[0] == ws[1]
    w = np.array(ws[0])
    assert w.sum() > 10  # the users clicked: a real comparison
    assert w[0, 1] > w[1, 0]  # and good beats bad


def test_a_ubi_purchase_is_credited_to_the_experiments_metrics(client, ranker_server, worker):
    # what ubi.js logs for an order on the page: credited as POST /outcomes would be,
    # once (a resent event is the same event), and kept in the log as received
    worker.ensure()
    metrics = [{"name": "click"}, {"name": "orders", "action": "purchase", "window_s": 3600},
               {"name": "revenue", "action": "purchase", "value": "sum", "window_s": 3600,
                "cap": 100}]
    exp = client.create_experiment(name="ubi-conv", rankers=rankers_for(
        ranker_server, "good", "bad"), algorithm="uniform", interleaving="team_draft",
        seed=2, metrics=metrics)
    page = client.search(exp["id"], "q", k=4, user="bob")
    order = ubi_click(page, 1)
    order = {**order, "action_name": "purchase", "event_attributes": {
        **order["event_attributes"], "object": {**order["event_attributes"]["object"],
                                                "value": 40}}}
    status, out = post(client, [order])
    assert status == 202 and out["credited"] == 1, out
    assert out["events"][0]["reason"] == "recorded as an outcome of the metrics orders, revenue"
    status, again = post(client, [order])
    assert status == 202 and again["events"][0]["status"] == "ignored", again
    # an action no metric declares is only logged; so is a purchase of no document
    cart = {**order, "action_name": "add_to_cart"}
    status, out = post(client, [cart])
    assert out["events"][0]["status"] == "accepted", out
    state = wait_for(lambda: (s := client.experiment(exp["id"]))["metric_W"]["orders"] != [
        [0, 0], [0, 0]] and s, what="the purchase credited")
    assert sum(map(sum, state["metric_W"]["orders"])) == 1.0  # one event, counted once
    assert sum(state["metric_values"]["revenue"].values()) == 40.0


def test_the_schema_and_the_behaviour_agree(client, api, page):
    """What ``/openapi.json`` allows is taken, what it refuses is refused naming the
    field (the contract fuzz found a null ``object_id`` the schema refused answered 202,
    and an ``ordinal`` of ``2.0``, an integer to JSON Schema, answered 400)."""
    import requests

    doc = requests.get(f"{api.url}/openapi.json", timeout=10).json()
    object_id = doc["components"]["schemas"]["UbiObject"]["properties"]["object_id"]
    assert {"type": "null"} in object_id["anyOf"]
    view = {"action_name": "view", "event_attributes": {"object": {"object_id": None}}}
    got, out = post(client, [view])
    assert got == 202 and out["ignored"] == 1, out
    click = ubi_click(page, 2)
    click["event_attributes"]["position"]["ordinal"] = 2.0
    got, out = post(client, [click])
    assert got == 202 and out["credited"] == 1, out
    for bad, field in (({"object_id": True}, "object.object_id"),
                       ({"object_id": 1.5}, "object.object_id")):
        got, out = post(client, [{**view, "event_attributes": {"object": bad}}])
        assert got == 400 and f"events[0].event_attributes.{field}" in out["error"], out
