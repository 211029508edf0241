"""The browser path (issue 13), in a real headless Chromium (Debian's, driven by
Playwright: ``demo.browser``): the demo search page (``demo.web``) on one origin, the
API on another with that origin in ``RANKDUEL_CORS_ORIGINS``, world rankers whose results
link to the page's documents, the session's real Redis and Celery worker.

A click in the same tab, a click through the redirect into a new tab, and a click
followed by closing the page: each is recorded once (the impression's click set and its
report count) and credited into W once (W's total equals what the stored impressions
give). A page on an origin not allowed gets nothing from the API. Plus the new routes'
answers to bad input, over plain HTTP.
"""

from __future__ import annotations

import json

import pytest
import requests
from conftest import ADMIN

from demo.client import Client
from demo.faults import check_invariant
from demo.stack import ThreadedServer, wait_until
from demo.web import create_web_app
from demo.world_rankers import create_ranker_app, demo_world
from service.app import create_app
from service.keys import clicks_key, imp_key, pending_key


@pytest.fixture(scope="module")
def site(api, worker):
    """Page, rankers and an API allowing the page's origin; one experiment."""
    web = ThreadedServer(create_web_app())
    stranger = ThreadedServer(create_web_app())  # the same page on an origin not allowed
    rankers = ThreadedServer(create_ranker_app(seed=1, n_rankers=3, doc_base=web.url))
    server = ThreadedServer(create_app(api.config.replace(cors_origins=web.url)))
    client = Client(server.url, ADMIN)
    exp = client.create_experiment(
        name="browser", algorithm="uniform", interleaving="team_draft", seed=4,
        rankers=[{"name": f"r{n}", "url": f"{rankers.url}/rankers/{n}", "timeout_ms": 2000}
                 for n in range(3)])
    world = demo_world(1, 3)
    queries = [world.query_text(q) for q in range(5)]
    for app_server in (web, stranger):
        app_server.server.app.config["RANKDUEL"] = {"api": server.url, "experiment": exp["id"],
                                                    "queries": queries}
    worker.ensure()
    yield type("Site", (), {"web": web, "stranger": stranger, "api": server, "client": client,
                            "exp": exp["id"], "queries": queries})
    for s in (server, rankers, stranger, web):
        s.close()


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


def _search(page, site, q: str) -> dict:
    page.goto(site.web.url + "/")
    page.fill("#q", q)
    page.click("button")
    page.wait_for_function("window.lastPage !== undefined")
    return page.evaluate("window.lastPage")


def _recorded(rd, site, imp: str, position: int) -> None:
    """Wait until ``position`` is in the impression's clicks and the impression is
    closed; then check it was reported once."""
    exp = site.exp
    wait_until(lambda: str(position).encode() in rd.smembers(clicks_key(exp, imp)), 30,
               f"click at position {position} recorded")
    wait_until(lambda: rd.hget(imp_key(exp, imp), "closed") == b"1", 30, "impression ended")
    assert int(rd.hget(imp_key(exp, imp), "reports")) == 1  # one report, not two


def _credited(rd, site, imp: str) -> None:
    wait_until(lambda: rd.zscore(pending_key(site.exp), imp) is None
               and rd.hget(imp_key(site.exp, imp), "credited") is not None, 60,
               "impression credited")


def test_same_tab_click_is_recorded_and_credited_once(browser, site, rd):
    page = browser.new_page()
    found = _search(page, site, site.queries[0])
    first = page.locator("a.result").first
    doc = first.get_attribute("data-rd-doc")
    with page.expect_navigation():
        first.click()
    assert page.url.endswith(f"/doc/{doc}")
    imp = found["impression_id"]
    _recorded(rd, site, imp, 0)  # the page left: pagehide ended it
    _credited(rd, site, imp)
    page.close()


def test_new_tab_through_the_redirect(browser, site, rd):
    context = browser.new_context()
    page = context.new_page()
    found = _search(page, site, site.queries[1])
    link = page.locator("a.newtab").nth(1)
    doc = link.get_attribute("data-rd-doc")
    with context.expect_page() as opened:
        link.click()
    tab = opened.value
    tab.wait_for_load_state()
    assert tab.url.endswith(f"/doc/{doc}")  # 302 from /r to the result
    page.close(run_before_unload=True)  # the results page goes: its impression ends
    imp = found["impression_id"]
    _recorded(rd, site, imp, 1)
    _credited(rd, site, imp)
    context.close()


def test_click_then_close_the_page(browser, site, rd):
    context = browser.new_context()
    page = context.new_page()
    found = _search(page, site, site.queries[2])
    with context.expect_page():
        page.locator("a.result").nth(2).click(modifiers=["Control"])  # a background tab
    page.close(run_before_unload=True)  # closed right after the click
    imp = found["impression_id"]
    _recorded(rd, site, imp, 2)
    _credited(rd, site, imp)
    context.close()
    # W is the sum of what the stored impressions give: nothing lost, nothing twice
    wait_until(lambda: not rd.zcard(pending_key(site.exp)), 60, "nothing pending")
    inv = check_invariant(rd, site.client, site.exp)
    assert inv["ok"], inv


def test_a_page_from_an_origin_not_allowed_gets_nothing(browser, site, rd):
    before = site.client.experiment(site.exp)["counters"].get("impressions", 0)
    page = browser.new_page()
    page.goto(site.stranger.url + "/")
    page.fill("#q", site.queries[0])
    page.click("button")
    page.wait_for_function("window.lastError !== undefined")
    assert "lastPage" not in page.evaluate("Object.keys(window)")
    # and a beacon from that page records nothing either
    page.evaluate("""api => navigator.sendBeacon(api + "/impressions/x.y/end",
                                               new Blob(['{}'], {type: 'text/plain'}))""",
                  site.api.url)
    assert site.client.experiment(site.exp)["counters"].get("impressions", 0) == before
    page.close()


# ---------------------------------------------------------------------- plain HTTP
def test_preflight_and_headers(site):
    allowed, other = site.web.url, "https://evil.example"
    pre = {"Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "content-type"}
    ok = requests.options(site.api.url + "/clicks", headers={"Origin": allowed, **pre},
                          timeout=10)
    assert ok.status_code == 204
    assert ok.headers["Access-Control-Allow-Origin"] == allowed
    assert "POST" in ok.headers["Access-Control-Allow-Methods"]
    assert "content-type" in ok.headers["Access-Control-Allow-Headers"].lower()
    bad = requests.options(site.api.url + "/clicks", headers={"Origin": other, **pre},
                           timeout=10)
    assert bad.status_code == 403 and "not allowed" in bad.json()["error"]
    assert "Access-Control-Allow-Origin" not in bad.headers
    # the operator API never takes part
    op = requests.options(site.api.url + "/experiments", headers={"Origin": allowed, **pre},
                          timeout=10)
    assert "Access-Control-Allow-Origin" not in op.headers
    got = requests.get(site.api.url + f"/experiments/{site.exp}",
                       headers={"Origin": allowed, "Authorization": f"Bearer {ADMIN}"},
                       timeout=10)
    assert "Access-Control-Allow-Origin" not in got.headers
    script = requests.get(site.api.url + "/static/rankduel.js", timeout=10)
    assert script.status_code == 200 and "javascript" in script.headers["Content-Type"]
    assert "RankDuel" in script.text and len(script.content) < 8_000


def test_redirect_refuses_what_was_not_shown(site):
    page = site.client.search(site.exp, site.queries[3], k=5)
    top = page["results"][0]
    good = {"i": page["impression_id"], "t": page["token"], "d": top["id"], "p": 1,
            "u": top["url"]}

    def r(**change):
        return requests.get(site.api.url + "/r", params={**good, **change}, timeout=10,
                            allow_redirects=False)

    for change, status, fragment in [
        ({"u": "https://evil.example/"}, 422, "not the one shown"),
        ({"u": page["results"][1]["url"]}, 422, "not the one shown"),
        ({"p": 2}, 422, "not shown at rank 2"),
        ({"t": "1.forged"}, 403, ""),
        ({"p": "x"}, 400, "p"),
        ({"i": "nope"}, 404, "no impression"),
    ]:
        resp = r(**change)
        assert resp.status_code == status, (change, resp.text)
        assert fragment in resp.json()["error"]
    ok = r()
    assert ok.status_code == 302 and ok.headers["Location"] == top["url"]
    again = r()  # a second click on the same link: redirected, counted once
    assert again.status_code == 302
    st, body = site.client.request("POST", f"/impressions/{page['impression_id']}/end",
                                   raw=f"token={page['token']}".encode(),
                                   headers={"Content-Type":
                                            "application/x-www-form-urlencoded"})
    assert st == 202 and body["status"] == "closed", body
    # closed: the link still leads on, nothing more is recorded
    assert r().status_code == 302


def test_clicks_as_text_plain_with_dwell(site, rd):
    page = site.client.search(site.exp, site.queries[4], k=3)
    raw = json.dumps({"impression_id": page["impression_id"], "token": page["token"],
                      "clicks": [{"id": page["results"][0]["id"], "rank": 1,
                                  "dwell_ms": 1500}]}).encode()
    st, body = site.client.request(
        "POST", "/clicks", raw=raw,
        headers={"Content-Type": "text/plain;charset=UTF-8", "Origin": site.web.url})
    assert st == 202 and body["accepted"] == 1, body
    assert rd.hget(imp_key(site.exp, page["impression_id"]), "dwell:0") == b"1500"
    st, body = site.client.request("POST", "/clicks", raw=b"{}", headers={
        "Content-Type": "text/plain", "Origin": "https://evil.example"})
    assert st == 403 and "not allowed" in body["error"]


def test_dwell_rule_withdraws_quick_returns(site, rd):
    """With ``dwell_unsatisfied_s``, a click whose user came back sooner is withdrawn
    before credit; a long dwell, or none reported, counts."""
    exp = site.client.create_experiment(
        name="dwell", algorithm="uniform", interleaving="team_draft", seed=9,
        dwell_unsatisfied_s=5, rankers=[
            {"name": r["name"], "url": r["url"], "timeout_ms": 2000}
            for r in site.client.experiment(site.exp)["rankers"][:2]])
    assert site.client.experiment(exp["id"])["dwell_unsatisfied_s"] == 5
    page = site.client.search(exp["id"], site.queries[0], k=4)
    docs = [r["id"] for r in page["results"]]

    def report(rank: int, dwell: int | None):
        click = {"id": docs[rank - 1], "rank": rank}
        if dwell is not None:
            click["dwell_ms"] = dwell
        st, _ = site.client.request("POST", "/clicks", {
            "impression_id": page["impression_id"], "token": page["token"], "clicks": [click]})
        assert st == 202

    report(1, None)
    report(2, None)
    report(3, None)
    report(1, 1_200)    # back after 1.2 s: unsatisfied
    report(2, 30_000)   # 30 s: satisfied
    assert rd.smembers(clicks_key(exp["id"], page["impression_id"])) == {b"1", b"2"}
    site.client.end(page)
    report_after = site.client.request("POST", "/clicks", {
        "impression_id": page["impression_id"], "token": page["token"],
        "clicks": [{"id": docs[1], "rank": 2, "dwell_ms": 10}]})
    assert report_after[0] == 409  # closed: a credited impression never changes
    assert rd.smembers(clicks_key(exp["id"], page["impression_id"])) == {b"1", b"2"}
