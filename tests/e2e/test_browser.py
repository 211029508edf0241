"""The browser path (issue 13), in a real headless Chromium (Debian's, driven by
Playwright: ``demo.browser``): the demo search page (``demo.web``) on one origin, the
API on another with that origin in ``RANKDUEL_CORS_ORIGINS``, world rankers whose results
link to the page's documents, the session's real Redis and Celery worker.

A click in the same tab, a click through the redirect into a new tab, a click followed
by closing the page, a click whose report is lost on the way (the end carries it), and
clicks whose dwell decides their credit: each is recorded once (the impression's click
set) and credited into W once (the impression's credited outcomes are what its stored
record and clicks give, and W's total equals the decisive impressions). A page on an
origin not allowed gets nothing from the API and records nothing. Plus the new routes'
answers to bad input, and the dwell rule, over plain HTTP (the dwell rule of the pure
credit step: tests/unit/test_credit_step.py).
"""

from __future__ import annotations

import json

import pytest
import requests
from conftest import ADMIN

import interleaving
from demo.client import Client
from demo.faults import check_invariant
from demo.stack import wait_until
from demo.web import create_web_app
from demo.world_rankers import create_ranker_app, demo_world
from demo.wsgi_server import ThreadedServer
from service.app import create_app
from service.store.keys import clicks_key, imp_key, pending_key

DWELL_S = 5  # the dwell rule of the second experiment


@pytest.fixture(scope="module")
def site(api, worker):
    """Pages, rankers and an API allowing two of the pages' origins; two experiments
    (the second with the dwell rule)."""
    web = ThreadedServer(create_web_app())
    web_dwell = ThreadedServer(create_web_app())
    stranger = ThreadedServer(create_web_app())  # the same page on an origin not allowed
    rankers = ThreadedServer(create_ranker_app(seed=1, n_rankers=3, doc_base=web.url))
    # impressions close by their end here, not by the 1.5 s inactivity of the session
    server = ThreadedServer(create_app(api.config.replace(
        cors_origins=f"{web.url}, {web_dwell.url}", inactivity_s=120)))
    client = Client(server.url, ADMIN)
    ranker_list = [{"name": f"r{n}", "url": f"{rankers.url}/rankers/{n}", "timeout_ms": 2000}
                   for n in range(3)]
    exp = client.create_experiment(name="browser", algorithm="uniform",
                                   interleaving="team_draft", seed=4, rankers=ranker_list)
    dwell_exp = client.create_experiment(name="dwell", algorithm="uniform",
                                         interleaving="team_draft", seed=9,
                                         dwell_unsatisfied_s=DWELL_S, rankers=ranker_list)
    world = demo_world(1, 3)
    queries = [world.query_text(q) for q in range(6)]
    for app_server, exp_id in ((web, exp["id"]), (stranger, exp["id"]),
                               (web_dwell, dwell_exp["id"])):
        app_server.server.app.config["RANKDUEL"] = {"api": server.url, "experiment": exp_id,
                                                    "queries": queries}
    worker.ensure()
    yield type("Site", (), {"web": web, "web_dwell": web_dwell, "stranger": stranger,
                            "api": server, "client": client, "exp": exp["id"],
                            "dwell_exp": dwell_exp["id"], "queries": queries})
    for s in (server, rankers, stranger, web_dwell, web):
        s.close()


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


def _search(page, web, q: str) -> dict:
    page.goto(web.url + "/")
    page.fill("#q", q)
    page.click("button")
    page.wait_for_function("window.lastPage !== undefined")
    return page.evaluate("window.lastPage")


def _fields(rd, exp: str, imp: str) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in rd.hgetall(imp_key(exp, imp)).items()}


def _recorded(rd, exp: str, imp: str, positions: set[int]) -> None:
    """Wait until the impression is closed; then its click set is ``positions``."""
    wait_until(lambda: rd.hget(imp_key(exp, imp), "closed") == b"1", 30, "impression ended")
    assert {int(p) for p in rd.smembers(clicks_key(exp, imp))} == positions


def _credited_once(rd, client: Client, exp: str, imp: str, dwell_s: float | None = None
                   ) -> dict:
    """Wait for the credit; check that it is what the stored impression gives (its
    record, its click set, less the clicks the dwell rule leaves out) and that W holds
    every decisive impression of the experiment once. Returns the credit result."""
    wait_until(lambda: rd.zscore(pending_key(exp), imp) is None
               and rd.hget(imp_key(exp, imp), "credited") is not None, 60,
               "impression credited")
    h = _fields(rd, exp, imp)
    clicks = sorted(int(p) for p in rd.smembers(clicks_key(exp, imp)))
    dwell = {int(k.partition(":")[2]): int(v) for k, v in h.items() if k.startswith("dwell:")}
    short = [p for p in clicks if dwell_s and p in dwell and dwell[p] < dwell_s * 1000]
    counted = [p for p in clicks if p not in short]
    arms, forfeits = json.loads(h["arms"]), json.loads(h["forfeits"])
    expected = [[w, loser, 1.0] for w, loser in forfeits]
    if h["duel"] == "1":
        expected += [[arms[a], arms[b], float(s)]
                     for a, b, s in interleaving.credit(json.loads(h["record"]), counted)]
    result = json.loads(h["credited"])
    assert result.get("outcomes", []) == expected, (result, expected)
    assert result.get("unsatisfied", []) == short
    wait_until(lambda: not rd.zcard(pending_key(exp)), 60, "nothing pending")
    inv = check_invariant(rd, client, exp)
    assert inv["ok"], inv  # W: nothing lost, nothing twice
    return result


def test_same_tab_click_is_recorded_and_credited_once(browser, site, rd):
    page = browser.new_page()
    found = _search(page, site.web, site.queries[0])
    first = page.locator("a.result").first
    doc = first.get_attribute("data-rd-doc")
    with page.expect_navigation():
        first.click()
    assert page.url.endswith(f"/doc/{doc}")
    imp = found["impression_id"]
    _recorded(rd, site.exp, imp, {0})  # the page left: pagehide ended it
    _credited_once(rd, site.client, site.exp, imp)
    page.close()


def test_new_tab_through_the_redirect(browser, site, rd):
    context = browser.new_context()
    page = context.new_page()
    found = _search(page, site.web, site.queries[1])
    link = page.locator("a.newtab").nth(1)
    doc = link.get_attribute("data-rd-doc")
    with context.expect_page() as opened:
        link.click()
    tab = opened.value
    tab.wait_for_load_state()
    assert tab.url.endswith(f"/doc/{doc}")  # 302 from /r to the result
    imp = found["impression_id"]
    wait_until(lambda: rd.sismember(clicks_key(site.exp, imp), 1), 30, "the redirect's click")
    page.close(run_before_unload=True)  # the results page goes: its impression ends
    _recorded(rd, site.exp, imp, {1})
    _credited_once(rd, site.client, site.exp, imp)
    context.close()


def test_click_then_close_the_page(browser, site, rd):
    context = browser.new_context()
    page = context.new_page()
    found = _search(page, site.web, site.queries[2])
    with context.expect_page():
        page.locator("a.result").nth(2).click(modifiers=["Control"])  # a background tab
    page.close(run_before_unload=True)  # closed right after the click
    imp = found["impression_id"]
    _recorded(rd, site.exp, imp, {2})
    _credited_once(rd, site.client, site.exp, imp)
    context.close()


def test_a_click_report_lost_on_the_way_comes_with_the_end(browser, site, rd):
    """The click's own report never reaches the API (dropped in the network: the one
    fault injected here); the end, sent on pagehide, carries the page's clicks."""
    context = browser.new_context()
    page = context.new_page()
    found = _search(page, site.web, site.queries[3])
    dropped = []
    page.route(site.api.url + "/clicks", lambda route: (dropped.append(1), route.abort()))
    with context.expect_page():
        page.locator("a.result").nth(0).click(modifiers=["Control"])
    wait_until(lambda: dropped, 30, "the click report dropped")
    imp = found["impression_id"]
    assert not rd.smembers(clicks_key(site.exp, imp))
    page.close(run_before_unload=True)
    _recorded(rd, site.exp, imp, {0})
    _credited_once(rd, site.client, site.exp, imp)
    context.close()


# headless Chromium keeps every page visible: the user's leaving and coming back are
# these two events (the page's own visibilityState made to say so), the rest is real
HIDE = """() => { Object.defineProperty(document, "visibilityState",
                                        {value: "hidden", configurable: true});
                  document.dispatchEvent(new Event("visibilitychange")); }"""
SHOW = """() => { Object.defineProperty(document, "visibilityState",
                                        {value: "visible", configurable: true});
                  document.dispatchEvent(new Event("visibilitychange")); }"""


def test_dwell_measured_on_return_decides_the_credit(browser, site, rd):
    """Two results opened in new tabs (one through the redirect, one by ctrl-click):
    the user comes back after 1.2 s from the first (under the experiment's 5 s:
    unsatisfied) and after 30 s from the second (the page's clock moved on); the
    dwell reports reach the API, and the credit leaves the first click out."""
    context = browser.new_context()
    page = context.new_page()
    page.clock.install()
    found = _search(page, site.web_dwell, site.queries[4])
    imp, exp = found["impression_id"], site.dwell_exp
    # the page's time stands still but for the jumps below: dwells exact on a busy machine
    page.clock.pause_at(page.evaluate("Date.now()") + 1_000)
    with context.expect_page() as opened:
        page.locator("a.newtab").nth(0).click()  # through /r
    opened.value.close()
    page.evaluate(HIDE)
    page.clock.fast_forward(1_200)
    page.evaluate(SHOW)
    wait_until(lambda: rd.hget(imp_key(exp, imp), "dwell:0") is not None, 30, "dwell of 1")
    with context.expect_page() as opened:
        page.locator("a.result").nth(1).click(modifiers=["Control"])
    opened.value.close()
    page.evaluate(HIDE)
    page.clock.fast_forward(30_000)
    page.evaluate(SHOW)
    wait_until(lambda: rd.hget(imp_key(exp, imp), "dwell:1") is not None, 30, "dwell of 2")
    page.close(run_before_unload=True)
    _recorded(rd, exp, imp, {0, 1})
    h = _fields(rd, exp, imp)
    assert (int(h["dwell:0"]), int(h["dwell:1"])) == (1_200, 30_000)
    result = _credited_once(rd, site.client, exp, imp, dwell_s=DWELL_S)
    assert result["unsatisfied"] == [0]
    context.close()


def test_a_page_from_an_origin_not_allowed_gets_nothing(browser, site, rd):
    before = site.client.experiment(site.exp)["counters"].get("impressions", 0)
    page = browser.new_page()
    page.goto(site.stranger.url + "/")
    page.fill("#q", site.queries[0])
    page.click("button")
    page.wait_for_function("window.lastError !== undefined")  # the browser refused
    assert "lastPage" not in page.evaluate("Object.keys(window)")
    assert site.client.experiment(site.exp)["counters"].get("impressions", 0) == before
    # with a real impression and its token, neither a fetch nor a beacon from that page
    # records a click or ends it
    shown = site.client.search(site.exp, site.queries[5], k=3)
    imp, token, doc = shown["impression_id"], shown["token"], shown["results"][0]["id"]
    args = [site.api.url, imp, token, doc]
    got = page.evaluate("""([api, imp, token, doc]) => fetch(api + "/clicks", {
        method: "POST", headers: {"Content-Type": "text/plain"},
        body: JSON.stringify({impression_id: imp, token, clicks: [{id: doc, rank: 1}]})})
      .then(r => "read " + r.status, e => "refused: " + e.message)""", args)
    assert got.startswith("refused"), got
    with page.expect_response(lambda r: r.url.endswith("/end")) as answer:
        page.evaluate("""([api, imp, token, doc]) => navigator.sendBeacon(
            api + "/impressions/" + imp + "/end",
            new Blob([JSON.stringify({token, clicks: [{id: doc, rank: 1}]})],
                     {type: "text/plain"}))""", args)
    assert answer.value.status == 403
    assert not rd.smembers(clicks_key(site.exp, imp))
    assert rd.hget(imp_key(site.exp, imp), "closed") == b"0"
    assert rd.hget(imp_key(site.exp, imp), "reports") is None
    site.client.end(shown)
    page.close()


# ---------------------------------------------------------------------- plain HTTP
def test_preflight_and_headers(site):
    from service.api import cors

    # the routes CORS names are the app's (a renamed view would silently lose CORS)
    assert set(site.api.server.app.view_functions) >= cors.FRONTEND
    allowed, other = site.web.url, "https://evil.example"
    pre = {"Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "content-type"}
    for path in ("/clicks", "/search", "/impressions/x.y/end", "/r"):
        ok = requests.options(site.api.url + path, headers={"Origin": allowed, **pre},
                              timeout=10)
        assert ok.status_code == 204, path
        assert ok.headers["Access-Control-Allow-Origin"] == allowed
        assert "POST" in ok.headers["Access-Control-Allow-Methods"]
        assert "content-type" in ok.headers["Access-Control-Allow-Headers"].lower()
        assert int(ok.headers["Access-Control-Max-Age"]) > 0
        assert "Origin" in ok.headers["Vary"]
        bad = requests.options(site.api.url + path, headers={"Origin": other, **pre},
                               timeout=10)
        assert bad.status_code == 403 and "not allowed" in bad.json()["error"], path
        assert "Access-Control-Allow-Origin" not in bad.headers
    # the operator API never takes part
    op = requests.options(site.api.url + "/experiments", headers={"Origin": allowed, **pre},
                          timeout=10)
    assert "Access-Control-Allow-Origin" not in op.headers
    got = requests.get(site.api.url + f"/experiments/{site.exp}",
                       headers={"Origin": allowed, "Authorization": f"Bearer {ADMIN}"},
                       timeout=10)
    assert "Access-Control-Allow-Origin" not in got.headers
    # an error on a front-end route is readable by the allowed page
    err = requests.get(site.api.url + "/search", params={"experiment": "nope", "q": "x"},
                       headers={"Origin": allowed}, timeout=10)
    assert err.status_code == 404 and err.headers["Access-Control-Allow-Origin"] == allowed
    script = requests.get(site.api.url + "/static/rankduel.js", timeout=10)
    assert script.status_code == 200 and "javascript" in script.headers["Content-Type"]
    # 8,500 bytes: 8,000 before the 503 retry with backoff (issue 49) added 462
    assert "RankDuel" in script.text and len(script.content) < 8_500
    assert "max-age" in script.headers["Cache-Control"]
    again = requests.get(site.api.url + "/static/rankduel.js", timeout=10,
                         headers={"If-None-Match": script.headers["ETag"]})
    assert again.status_code == 304 and not again.content


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
        ({"u": "//evil.example/"}, 422, "not the one shown"),
        ({"p": 2}, 422, "not shown at rank 2"),
        ({"t": "1.forged"}, 403, "malformed token"),
        ({"t": page["token"][:-1] + ("0" if page["token"][-1] != "0" else "1")}, 403,
         "invalid token"),
        ({"p": "x"}, 400, "p"),
        ({"i": "nope"}, 404, "no impression"),
    ]:
        resp = r(**change)
        assert resp.status_code == status, (change, resp.text)
        assert fragment in resp.json()["error"]
        assert "Location" not in resp.headers
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


def _report(site, raw: bytes, ctype: str, path: str = "/clicks") -> tuple[int, dict]:
    return site.client.request("POST", path, raw=raw, headers={"Content-Type": ctype})


def test_the_encodings_a_browser_sends(site, rd):
    """JSON, JSON as text/plain and form fields are read alike, the token checked in
    each; other encodings answer 415, malformed bodies 400, forged tokens 403."""
    page = site.client.search(site.exp, site.queries[4], k=3)
    imp, token, docs = page["impression_id"], page["token"], [r["id"] for r in page["results"]]
    as_json = json.dumps({"impression_id": imp, "token": token,
                          "clicks": [{"id": docs[0], "rank": 1, "dwell_ms": 1500}]}).encode()
    st, body = _report(site, as_json, "text/plain;charset=UTF-8")
    assert st == 202 and body["accepted"] == 1, body
    form = f"impression_id={imp}&token={token}&id={docs[1]}&rank=2&dwell_ms=900".encode()
    st, body = _report(site, form, "application/x-www-form-urlencoded")
    assert st == 202 and body["accepted"] == 1, body
    assert {int(p) for p in rd.smembers(clicks_key(site.exp, imp))} == {0, 1}
    assert rd.hget(imp_key(site.exp, imp), "dwell:0") == b"1500"
    assert rd.hget(imp_key(site.exp, imp), "dwell:1") == b"900"
    forged = token[:-1] + ("0" if token[-1] != "0" else "1")
    for raw, ctype, status, fragment in [
        (as_json, "multipart/form-data; boundary=x", 415, "application/x-www-form-urlencoded"),
        (b"<clicks/>", "application/xml", 415, "'application/xml' is not read here"),
        (b"clicks", "text/plain", 400, "not a valid JSON object"),
        (f"impression_id={imp}&token={token}&id={docs[2]}&rank=x".encode(),
         "application/x-www-form-urlencoded", 422, "rank"),
        (f"impression_id={imp}&token={token}&id={docs[2]}&rank=3&rank=2".encode(),
         "application/x-www-form-urlencoded", 400, "'rank' is given more than once"),
        (f"impression_id={imp}&token={token}&rank=3".encode(),
         "application/x-www-form-urlencoded", 400, "missing field 'id'"),
        (f"impression_id={imp}&token={forged}&id={docs[2]}&rank=3".encode(),
         "application/x-www-form-urlencoded", 403, "invalid token"),
        (as_json.replace(token.encode(), forged.encode()), "text/plain", 403, "invalid token"),
    ]:
        st, body = _report(site, raw, ctype)
        assert st == status and fragment in body["error"], (ctype, raw, st, body)
    end = f"/impressions/{imp}/end"
    for raw, ctype, status, fragment in [
        (b"token=x", "multipart/form-data; boundary=x", 415, "not read here"),
        (f"token={forged}".encode(), "application/x-www-form-urlencoded", 403, "invalid"),
        (json.dumps({"token": forged}).encode(), "text/plain", 403, "invalid token"),
        (b"{", "text/plain", 400, "not a valid JSON object"),
    ]:
        st, body = _report(site, raw, ctype, end)
        assert st == status and fragment in body["error"], (ctype, raw, st, body)
    assert {int(p) for p in rd.smembers(clicks_key(site.exp, imp))} == {0, 1}  # no more
    st, body = _report(site, f"token={token}".encode(), "application/x-www-form-urlencoded",
                       end)
    assert st == 202 and body["status"] == "closed"


def test_the_end_records_the_clicks_it_carries_once(site, rd):
    page = site.client.search(site.exp, site.queries[5], k=4)
    imp, token, docs = page["impression_id"], page["token"], [r["id"] for r in page["results"]]
    end = f"/impressions/{imp}/end"
    st, _ = site.client.request("POST", "/clicks", {
        "impression_id": imp, "token": token, "clicks": [{"id": docs[0], "rank": 1}]})
    assert st == 202
    for body, status, fragment in [
        ({"clicks": [{"id": docs[1], "rank": 2}]}, 403, "missing token"),
        ({"token": token, "clicks": [{"id": docs[1], "rank": 3}]}, 422, "not 3"),
        ({"token": token, "clicks": [{"id": "not-shown", "rank": 1}]}, 422, "was not shown"),
    ]:
        st, out = site.client.request("POST", end, body)
        assert st == status and fragment in out["error"], (body, out)
    assert rd.hget(imp_key(site.exp, imp), "closed") == b"0"  # a refused end closes nothing
    both = {"token": token, "clicks": [{"id": docs[0], "rank": 1},
                                        {"id": docs[2], "rank": 3, "dwell_ms": 4000}]}
    st, out = site.client.request("POST", end, both)
    assert st == 202 and out["already_closed"] is False, out
    st, out = site.client.request("POST", end, both)  # a repeated end: closed already
    assert st == 202 and out["already_closed"] is True, out
    st, _ = site.client.request("POST", "/clicks", {  # a report that lost the race
        "impression_id": imp, "token": token, "clicks": [{"id": docs[2], "rank": 3}]})
    assert st == 409
    assert {int(p) for p in rd.smembers(clicks_key(site.exp, imp))} == {0, 2}
    assert rd.hget(imp_key(site.exp, imp), "dwell:2") == b"4000"
    _credited_once(rd, site.client, site.exp, imp)


def test_dwell_rule_over_http(site, rd):
    """The longest dwell reported for a click decides; a click without one counts; the
    rule applies at credit, and a closed impression takes no more reports."""
    page = site.client.search(site.dwell_exp, site.queries[0], k=4)
    docs = [r["id"] for r in page["results"]]
    assert site.client.experiment(site.dwell_exp)["dwell_unsatisfied_s"] == DWELL_S

    def report(rank: int, dwell: int | None) -> int:
        click = {"id": docs[rank - 1], "rank": rank}
        if dwell is not None:
            click["dwell_ms"] = dwell
        return site.client.request("POST", "/clicks", {
            "impression_id": page["impression_id"], "token": page["token"],
            "clicks": [click]})[0]

    for rank, dwell in [(1, None), (2, None), (3, None), (1, 1_200), (2, 30_000),
                        (2, 800)]:  # rank 2: a long visit, then a short one
        assert report(rank, dwell) == 202
    imp = page["impression_id"]
    assert {int(p) for p in rd.smembers(clicks_key(site.dwell_exp, imp))} == {0, 1, 2}
    site.client.end(page)
    assert report(2, 10) == 409  # closed: a credited impression never changes
    assert rd.hget(imp_key(site.dwell_exp, imp), "dwell:1") == b"30000"
    result = _credited_once(rd, site.client, site.dwell_exp, imp, dwell_s=DWELL_S)
    assert result["unsatisfied"] == [0]
    counters = site.client.experiment(site.dwell_exp)["counters"]
    assert counters.get("unsatisfied_clicks", 0) >= 1


# ---------------------------------------------------------------------- the CLI
@pytest.mark.starts_process  # the demo's processes
def test_rankduel_demo_web(browser, tmp_path):
    """``rankduel demo --web`` as a user runs it: the whole stack, then the search page on
    its own origin with the API's CORS set for it; a search and a click from the page in
    Chromium are recorded and credited; Ctrl-C stops everything within 10 s. The demo
    starts with SIGINT ignored, as a command started with ``&`` does, whatever the
    disposition the suite itself was started with (``scripts/test &`` ignores it)."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import threading
    import time
    from pathlib import Path

    import redis

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RANKDUEL_") and k != "REDIS_URL"}
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "rankduel"), "demo", "--web", "--queries", "20",
         "--rankers", "3", "--concurrency", "2", "--workdir", str(tmp_path / "demo")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        wait_until(lambda: "Ctrl-C stops everything" in "".join(out) or proc.poll() is not None,
                   300, "the demo up and waiting")
        text = "".join(out)
        assert proc.poll() is None, text
        page_url = re.search(r"search page: (\S+)/ ", text).group(1)
        api_url = re.search(r"base URL (\S+)", text).group(1)
        admin = re.search(r"admin token: (\S+)", text).group(1)
        redis_url = re.search(r"on (redis://\S+),", text).group(1)
        assert page_url != api_url  # another origin
        client = Client(api_url, admin)
        exp = client.experiments()[0]["id"]
        before = client.experiment(exp)["counters"]["impressions"]
        page = browser.new_page()
        page.goto(page_url + "/")
        page.click("button")  # the first example query is in the box
        page.wait_for_function("window.lastPage !== undefined")
        found = page.evaluate("window.lastPage")
        first = page.locator("a.result").first
        with page.expect_navigation():
            first.click()
        rd = redis.Redis.from_url(redis_url)
        assert found["experiment"] == exp
        imp = found["impression_id"]
        wait_until(lambda: rd.hget(imp_key(exp, imp), "credited") is not None, 60,
                   "the page's impression ended and credited")
        assert rd.smembers(clicks_key(exp, imp)) == {b"0"}
        assert client.experiment(exp)["counters"]["impressions"] == before + 1
        page.close()
        rd.close()
    finally:
        t0 = time.monotonic()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, "".join(out)
    assert time.monotonic() - t0 < 10, "".join(out)[-2000:]
