"""A front end with only UBI events (what ``ubi.js`` sends) runs an experiment, in a real
headless Chromium (``demo.browser``): a page on its own origin searches through the API
and reports each click as a UBI event to ``POST /ubi/events`` (a JSON array, as
``ubi.js``'s ``trackEvent`` posts it, by ``fetch`` or by ``navigator.sendBeacon``), with
no ``rankduel.js`` and no end of the impression (the API closes it after
``RANKDUEL_INACTIVITY_S``). The same seeded simulated users on the same page with
``rankduel.js`` instead give the same ``W``, so the same champion.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ADMIN
from helpers.api import all_credited, rankers_for
from helpers.wait import wait_for

from cli.commands.export import pages
from demo.client import Client
from demo.stack import wait_until
from demo.wsgi_server import ThreadedServer
from service.app import create_app

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>shop</title>%(script)s
</head><body><ol id="results"></ol><script>
const API = %(api)s, EXP = %(exp)s, MODE = %(mode)s;
const results = document.getElementById("results");
let handle = null, n = 0;
window.sent = 0;
function ubiEvent(page, doc, rank) {
  // the fields of ubi.js's UbiEvent and UbiEventAttributes, the token added
  return {application: "shop", action_name: "click", query_id: page.impression_id,
          session_id: null, client_id: "browser-1", user_id: "",
          timestamp: new Date().toISOString(), message_type: "INFO", message: "",
          event_attributes: {token: page.token,
                             object: {object_id: doc, object_id_field: "id",
                                      description: doc},
                             position: {ordinal: rank}}};
}
async function doSearch(q, user) {
  if (handle) { handle.end(); handle.detach(); handle = null; }
  const r = await fetch(API + "/search?experiment=" + EXP + "&k=6&q=" +
                        encodeURIComponent(q) + "&user=" + encodeURIComponent(user));
  const page = await r.json();
  results.innerHTML = page.results.map(x => '<li><a class="result" href="#' + x.id +
    '" data-rd-doc="' + x.id + '" data-rd-rank="' + x.rank + '">' + x.id + '</a></li>'
  ).join("");
  if (MODE === "rankduel") {
    handle = RankDuel.attach(results, {api: API, impression_id: page.impression_id,
                                       token: page.token});
  }
  window.lastPage = page;
  return page;
}
results.addEventListener("click", e => {
  e.preventDefault();
  if (MODE !== "ubi") return;
  const a = e.target.closest("a"), page = window.lastPage;
  const body = JSON.stringify([ubiEvent(page, a.dataset.rdDoc, +a.dataset.rdRank)]);
  if (n++ %% 3 === 2) {  // a beacon (text/plain), as a page that is leaving sends it
    navigator.sendBeacon(API + "/ubi/events", body);
    window.sent++;
  } else {  // ubi.js's POST: application/json
    fetch(API + "/ubi/events", {method: "POST", body: body, keepalive: true,
                                headers: {"Content-Type": "application/json"}})
      .then(r => r.json()).then(out => { if (out.credited === 1) window.sent++; });
  }
});
</script></body></html>"""


def create_page_app():
    """The page, ``/ubi`` or ``/rankduel``, built from ``app.config["PAGE"]`` (``api``,
    the API's URL, and ``exp``, the experiment of each mode), filled in once known."""
    from flask import Flask, Response

    app = Flask("ubi-page")

    @app.get("/<mode>")
    def page(mode: str):
        api, exp = app.config["PAGE"]["api"], app.config["PAGE"]["exp"]
        script = (f'<script src="{api}/static/rankduel.js"></script>'
                  if mode == "rankduel" else "")
        return Response(PAGE % {"script": script, "api": json.dumps(api),
                                "exp": json.dumps(exp[mode]), "mode": json.dumps(mode)},
                        mimetype="text/html")

    return app


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


def _clicks_logged(api: str, exp_id: str) -> int:
    return sum(e["type"] == "click" for events, _ in pages(api, ADMIN, exp_id)
               for e in events)


def test_ubi_events_alone_drive_an_experiment_like_rankduel_js(api, worker, ranker_server,
                                                                browser):
    worker.ensure()
    web = ThreadedServer(create_page_app())
    server = ThreadedServer(create_app(api.config.replace(cors_origins=web.url)))
    exp: dict[str, str] = {}
    web.server.app.config["PAGE"] = {"api": server.url, "exp": exp}
    try:
        _run(browser, web, server, exp, ranker_server)
    finally:
        server.close()
        web.close()


def _run(browser, web, server, exp, ranker_server):
    client = Client(server.url, ADMIN)
    ws, clicked = {}, {}
    for mode in ("ubi", "rankduel"):
        exp[mode] = client.create_experiment(name=f"browser-{mode}", rankers=rankers_for(
            ranker_server, "good", "bad", "mid"), algorithm="uniform",
            interleaving="team_draft", seed=13)["id"]
        page = browser.new_page()
        page.goto(f"{web.url}/{mode}")
        rng = np.random.default_rng(7)  # the same users in both runs
        n = 0
        for s in range(24):
            found = page.evaluate("([q, u]) => doSearch(q, u)", [f"query {s % 5}", f"u{s % 6}"])
            ranks = [x["rank"] for x in found["results"] if x["id"] < "d05"]
            if ranks and rng.random() < 0.9:
                page.click(f"a.result[data-rd-rank='{ranks[0]}']")
                n += 1
        if mode == "ubi":
            wait_until(lambda n=n, page=page: page.evaluate("window.sent") == n, 30,
                       "the UBI clicks sent")
        page.evaluate("() => doSearch('last', 'u0')")  # rankduel.js ends the previous one
        wait_until(lambda mode=mode, n=n: _clicks_logged(server.url, exp[mode]) >= n, 30,
                   "the clicks recorded")
        clicked[mode] = n
        page.close(run_before_unload=True)
        ws[mode] = np.array(wait_for(all_credited(client, exp[mode]), timeout=90,
                                     what="every impression credited")["W"])
    assert clicked["ubi"] == clicked["rankduel"] >= 15
    assert (ws["ubi"] == ws["rankduel"]).all(), ws
    w = ws["ubi"]
    # the same champion: the ranker that beats each other one (good, arm 0)
    assert w[0, 1] > w[1, 0] and w[0, 2] > w[2, 0]
