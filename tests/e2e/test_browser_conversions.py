"""rankduel.js's ``track()`` in a real browser (headless Chromium): a search page
reports a purchase of a document it showed; sent twice, it counts once; a worker credits
it to the experiment's metrics (docs/conversions.md)."""

from __future__ import annotations

import json

import pytest
from conftest import ADMIN

import interleaving
from demo.client import Client
from demo.stack import wait_until
from demo.web import create_web_app
from demo.world_rankers import create_ranker_app, demo_world
from demo.wsgi_server import ThreadedServer
from service.app import create_app
from service.outcomes.declared import bounded
from service.store.keys import imp_key


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


def test_a_tracked_purchase_counts_once_for_its_metrics(browser, api, worker, rd):
    web = ThreadedServer(create_web_app())
    rankers = ThreadedServer(create_ranker_app(seed=1, n_rankers=2, doc_base=web.url))
    server = ThreadedServer(create_app(api.config.replace(cors_origins=web.url,
                                                          inactivity_s=120)))
    try:
        client = Client(server.url, ADMIN)
        exp = client.create_experiment(
            name="track", algorithm="uniform", interleaving="team_draft", seed=2,
            rankers=[{"name": f"r{n}", "url": f"{rankers.url}/rankers/{n}",
                      "timeout_ms": 2000} for n in range(2)],
            metrics=[{"name": "click"},
                     {"name": "revenue", "action": "purchase", "value": "sum",
                      "window_s": 600, "cap": 40}])
        query = demo_world(1, 2).query_text(0)
        web.server.app.config["RANKDUEL"] = {"api": server.url, "experiment": exp["id"],
                                             "queries": [query]}
        worker.ensure()
        page = browser.new_page()
        page.goto(web.url + "/")
        page.fill("#q", query)
        page.click("button")
        page.wait_for_function("window.lastPage !== undefined")
        found = page.evaluate("window.lastPage")
        doc = found["results"][1]["id"]
        for _ in range(2):  # a double call: the default event_id makes it one event
            page.evaluate("([d]) => handle.track('purchase', {id: d, value: 10})", [doc])
        wait_until(lambda: client.experiment(exp["id"])["counters"].get("outcome_events")
                   == 1, 60, "the purchase credited")
        state = client.experiment(exp["id"])
        raw = rd.hgetall(imp_key(exp["id"], found["impression_id"]))
        arms, record = json.loads(raw[b"arms"]), json.loads(raw[b"record"])
        (a, b, s), = interleaving.credit(record, [1])
        expected = [[0.0, 0.0], [0.0, 0.0]]
        expected[arms[a]][arms[b]] = bounded(s, 10, 40)
        expected[arms[b]][arms[a]] = 1 - bounded(s, 10, 40)
        assert state["metric_W"] == {"revenue": expected}
        page.close()
    finally:
        for s in (server, rankers, web):
            s.close()
