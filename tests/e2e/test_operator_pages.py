"""The operator page ``/ui/`` in a real headless Chromium (Debian's, driven by Playwright:
``demo.browser``) against the session's API, Redis and Celery worker:

* a placement's page (``/ui/#placement=NAME``, reached from the list) shows the control
  ranker and its share, each experiment with its share now, its ramp and next step, and
  the guardrail that paused one whose rankers are all down (tripped by searching the
  placement until the rule's ``min_calls``), with the API's own reason; an experiment
  whose name holds a ``<script>`` shows that name as text and runs nothing;
* the report page of an experiment with segments (the matrix world, where users on
  mobile prefer m1 to the overall champion m0: tests/service/test_segment_report.py)
  shows one table per dimension, the mobile row of m1 flagged, and the verdict's sentence;
* the report page of an experiment with metrics (users click m0's document, buy m1's)
  shows each metric's verdict, the primary marked, and the sentence saying they disagree.

Every assertion reads visible text once the page shows what it waits for.
"""

from __future__ import annotations

import os
import re
import secrets
from urllib.parse import urlencode

import pytest
from conftest import ADMIN, ROOT
from helpers.api import all_credited
from helpers.wait import wait_for

from demo import matrix_world
from demo.client import Client
from demo.stack import wait_until
from demo.wsgi_server import ThreadedServer
from tests.service.test_segment_report import SEARCHES, drive

#: set to 1 to regenerate the docs' screenshots of these pages (as tests/e2e/test_report.py
#: does docs/operator-ui.png); otherwise they go to a temporary folder
UPDATE_SCREENSHOT = "RANKDUEL_UPDATE_DOCS_SCREENSHOT"
#: an experiment name that would run if the page rendered names as HTML
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> dead'


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def matrix_rankers():
    server = ThreadedServer(matrix_world.create_app())
    yield server
    server.close()


def _ranker(server, name: str, path: str) -> dict:
    return {"name": name, "url": f"{server.url}/r/{path}", "timeout_ms": 2000}


def _experiment(rc: Client, name: str, place: str, traffic, rankers: list[dict],
                **extra) -> str:
    status, body = rc.request("POST", "/experiments", {
        "name": name, "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": rankers, "placement": place, "traffic": traffic, "probe": False,
        **extra}, admin=True)
    assert status == 201, body
    return body["id"]


def _screenshot(target, name: str, tmp_path) -> None:
    """``target`` (a page, or a locator: that element) as docs/NAME on request, else in
    ``tmp_path``; a PNG either way."""
    shot = (ROOT / "docs" if os.environ.get(UPDATE_SCREENSHOT) == "1" else tmp_path) / name
    target.screenshot(path=str(shot), **({"full_page": True} if hasattr(target, "goto") else {}))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _sign_in(page, url: str) -> None:
    page.goto(url)
    page.fill("input[name=token]", ADMIN)
    page.click("form#login button[type=submit]")


@pytest.fixture(scope="module")
def tripped(api, ranker_server):
    """A placement with two experiments: one whose rankers are all down (paused by the
    failures guardrail after searches of the placement) and a ramp still running."""
    rc = Client(api.url, ADMIN)
    name = f"ui-{secrets.token_hex(3)}"
    status, body = rc.request("POST", "/placements", {
        "name": name, "control": _ranker(ranker_server, "prod", "good")}, admin=True)
    assert status == 201, body
    dead = _experiment(rc, HOSTILE, name, 0.3,
                       [_ranker(ranker_server, "down-a", "broken"),
                        _ranker(ranker_server, "down-b", "broken")],
                       guardrails={"min_calls": 20})
    ramp = _experiment(rc, "ramp", name,
                       [{"after": "0m", "share": 0.1}, {"after": "2h", "share": 0.25}],
                       [_ranker(ranker_server, "ramp-a", "mid"),
                        _ranker(ranker_server, "ramp-b", "alt")],
                       guardrails={"max_p95_ratio": 3})
    users = iter(range(10**6))
    statuses: list[int] = []

    def searched_until_paused() -> bool:
        for _ in range(10):
            statuses.append(rc.request("GET", "/search?" + urlencode(
                {"placement": name, "q": "shoes", "k": 5, "user": f"u{next(users)}"}))[0])
        return rc.experiment(dead)["lifecycle"] == "paused"

    wait_until(searched_until_paused, 120, "the failures guardrail paused the experiment")
    assert set(statuses) == {200}, statuses  # a dead experiment never fails a search
    yield type("Tripped", (), {"name": name, "dead": dead, "ramp": ramp, "rc": rc,
                               "state": rc.request("GET", f"/placements/{name}",
                                                   admin=True)[1]})
    rc.close()


def test_the_placement_page_shows_shares_control_and_a_tripped_guardrail(
        api, browser, tripped, tmp_path):
    state = tripped.state
    by_id = {e["experiment"]: e for e in state["experiments"]}
    reason = by_id[tripped.dead]["guardrail"]["reason"]
    assert by_id[tripped.dead]["guardrail"]["rule"] == "failures"
    assert state["control_share"] == pytest.approx(0.9)

    page = browser.new_page(viewport={"width": 1280, "height": 520})
    _sign_in(page, f"{api.url}/ui/")
    link = f"#placements a[href='#placement={tripped.name}']"
    page.wait_for_selector(link)
    page.click(link)
    page.wait_for_selector("#placement-experiments td.guardrail.tripped")
    assert page.url.endswith(f"#placement={tripped.name}")
    assert page.inner_text("#placement-name") == tripped.name
    control = page.inner_text("#placement-control")
    assert "prod" in control and "90.00 %" in control

    dead = page.locator(f"#placement-experiments tr[data-experiment='{tripped.dead}']")
    cells = dead.locator("td")
    # the hostile name is text: the same characters, no element made of it, nothing ran
    assert cells.nth(0).locator("a").inner_text() == HOSTILE
    assert page.locator("#placement script, #placement img").count() == 0
    assert page.evaluate("window.pwned") is None
    assert cells.nth(1).inner_text().startswith("paused")
    assert cells.nth(2).inner_text() == "0.00 %"
    assert cells.nth(3).inner_text() == "30.00 %"
    guard = cells.nth(5).inner_text()
    assert "tripped: failures" in guard and "on ranker down-" in guard
    assert reason in guard and " UTC" in guard

    ramp = page.locator(f"#placement-experiments tr[data-experiment='{tripped.ramp}']")
    cells = ramp.locator("td")
    assert cells.nth(0).locator("a").inner_text() == "ramp"
    assert cells.nth(1).inner_text().startswith("running")
    assert cells.nth(2).inner_text() == "10.00 %"
    assert "after 0m: 10.00 %" in cells.nth(3).inner_text()
    assert ramp.locator("ol.ramp li.now").inner_text() == "after 0m: 10.00 %"
    assert re.search(r"^25\.00 % at .* UTC \(in [12]\.\d h\)$", cells.nth(4).inner_text())
    ok = cells.nth(5).inner_text()
    assert ok.startswith("ok") and "max_p95_ratio 3" in ok
    assert page.locator("#placement-experiments tr.control").inner_text().count("90.00 %") == 1

    # each experiment's report is one click away, with the same reason
    dead.locator("a", has_text="report").click()
    page.wait_for_selector("#guardrail.error")
    assert page.url.endswith(f"#exp={tripped.dead}")
    assert reason in page.inner_text("#guardrail")
    assert page.inner_text("#experiment h1").startswith(HOSTILE)
    assert page.evaluate("window.pwned") is None

    # back on the placement's page, it refreshes: a new name shows without a reload
    page.go_back()
    page.wait_for_selector("#placement-experiments")
    status, body = tripped.rc.request("PATCH", f"/experiments/{tripped.dead}",
                                      {"name": "dense-v2"}, admin=True)
    assert status == 200, body
    page.wait_for_selector(f"tr[data-experiment='{tripped.dead}'] a:text-is('dense-v2')",
                           timeout=30_000)
    _screenshot(page, "operator-placement.png", tmp_path)
    page.close()


def test_an_unknown_placement_says_so(api, browser):
    page = browser.new_page()
    _sign_in(page, f"{api.url}/ui/#placement=nowhere")
    page.wait_for_selector("#error:has-text('nowhere')")  # (the CSP forbids eval'd waits)
    assert "no placement 'nowhere'" in page.inner_text("#error")
    assert page.locator("#placement").is_hidden()
    assert page.locator("#login").is_hidden()  # signed in: the error alone, and home
    page.click("#home")
    page.wait_for_selector("#list:not([hidden])")
    assert page.inner_text("#error") == ""
    page.close()


def test_the_report_page_shows_a_table_per_segment_dimension(
        api, worker, browser, matrix_rankers, tmp_path):
    worker.ensure()
    rc = Client(api.url, ADMIN)
    exp = rc.create_experiment(
        name="seg-ui", rankers=matrix_world.rankers(matrix_rankers.url, 3),
        algorithm="uniform", interleaving="team_draft", seed=5,
        segments={"device": ["mobile", "desktop"], "market": ["de", "fr", "us"]})
    drive(api.url, exp["id"], SEARCHES, seed=7)
    wait_for(all_credited(rc, exp["id"]), timeout=120, what="credit")
    rep = rc.report(exp["id"])
    flags = [(f["dimension"], f["value"], f["ranker"]) for f in rep["segments"]["heterogeneous"]]
    assert flags == [("device", "mobile", "m1")], flags  # the world's (its own service test)

    page = browser.new_page(viewport={"width": 1280, "height": 1100})
    _sign_in(page, f"{api.url}/ui/#exp={exp['id']}")
    page.wait_for_selector("table.segment[data-dimension=market]")
    assert page.locator("table.segment").count() == 2
    device = page.locator("table.segment[data-dimension=device]")
    market = page.locator("table.segment[data-dimension=market]")
    assert device.locator("tbody tr").count() == 3 * 2  # mobile, desktop, other x m1, m2
    assert market.locator("tbody tr").count() == 4 * 2
    assert "m0" in device.locator("thead").inner_text()
    flagged = device.locator("tr.flagged")
    assert flagged.count() == 1
    assert flagged.get_attribute("data-value") == "mobile"
    assert "m1" in flagged.inner_text() and "preferred to m0" in flagged.inner_text()
    assert market.locator("tr.flagged").count() == 0
    assert "mobile (device) prefers m1 to m0" in page.inner_text("#segment-flags")
    assert "m0 leads overall, but m1 is preferred on mobile (device)" in \
        page.inner_text("#verdict")
    assert page.locator("#metrics").count() == 0  # no metrics declared: no section
    _screenshot(page.locator("#segments"), "operator-segments.png", tmp_path)
    page.close()
    rc.close()


def test_the_report_page_shows_each_metric_and_their_disagreement(
        api, worker, browser, matrix_rankers, tmp_path):
    # users click m0's document and buy m1's: clicks name m0, revenue m1
    worker.ensure()
    rc = Client(api.url, ADMIN)
    exp = rc.create_experiment(
        name="metrics-ui", rankers=matrix_world.rankers(matrix_rankers.url, 2),
        algorithm="uniform", interleaving="team_draft", seed=3,
        metrics=[{"name": "click"}, {"name": "revenue", "action": "purchase",
                                     "value": "sum", "window_s": 600, "cap": 100}])
    attributed = 0
    for n in range(80):
        page = rc.search(exp["id"], f"q{n}", k=2, user=f"mu{n}")
        ids = [r["id"] for r in page["results"]]
        if "doc0" in ids:
            rc.click(page, [("doc0", ids.index("doc0") + 1)])
        rc.end(page)
        if "doc1" in ids:
            status, out = rc.request("POST", "/outcomes", {
                "user": f"mu{n}", "action": "purchase", "id": "doc1", "value": 100,
                "event_id": f"metrics-ui-{n}"}, admin=True)
            assert status == 202 and out["attributed"], out
            attributed += 1
    wait_for(all_credited(rc, exp["id"]), timeout=120, what="credit")
    wait_for(lambda: rc.experiment(exp["id"])["counters"].get("outcome_events", 0)
             == attributed, timeout=120, what="the purchases credited")
    rep = rc.report(exp["id"])
    assert rep["metrics_disagree"] == "m0 wins click, m1 wins revenue: the metrics disagree."

    page = browser.new_page(viewport={"width": 1280, "height": 1100})
    _sign_in(page, f"{api.url}/ui/#exp={exp['id']}")
    page.wait_for_selector("#metrics-table")
    rows = page.locator("#metrics-table tbody tr")
    assert rows.count() == 2
    click = page.locator("#metrics-table tr[data-metric=click]")
    revenue = page.locator("#metrics-table tr[data-metric=revenue]")
    assert click.get_attribute("class") == "primary" and "(primary)" in click.inner_text()
    assert "(primary)" not in revenue.inner_text()
    assert "m0 (certified)" in click.inner_text() and "m1 (certified)" in revenue.inner_text()
    assert "purchase, sum, within 600 s" in revenue.inner_text()
    by = {m["name"]: m for m in rep["metrics"]}
    assert by["revenue"]["verdict"] in revenue.inner_text()
    assert page.inner_text("#metrics-disagree") == rep["metrics_disagree"]
    _screenshot(page.locator("#metrics"), "operator-metrics.png", tmp_path)
    page.close()
    rc.close()
