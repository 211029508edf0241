"""The operator page ``/ui/`` shows an A/B test and the confirmed verdicts, in a real
headless Chromium against the session's API and Redis: an A/B test's report page (its
verdict, its arms with their users and CTRs, each treatment against the control, its
split), and, on the list, the confirmed pairs with the running agreement rate."""

from __future__ import annotations

import pytest
from conftest import ADMIN

from demo.client import Client
from tests.service.test_ab_live import (
    CTR,
    _certify,
    new_placement,
    ranker,
    simulate,
)


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def toy(api):
    from demo.wsgi_server import ThreadedServer
    from tests.service.test_ab_live import _toy_rankers

    server = ThreadedServer(_toy_rankers())
    yield server
    server.close()


def _sign_in(page, url: str) -> None:
    page.goto(url)
    page.fill("input[name=token]", ADMIN)
    page.click("form#login button[type=submit]")


def test_an_ab_report_and_the_confirmed_verdicts_on_the_operator_page(api, browser, toy, rd):
    rc = Client(api.url, ADMIN)
    place = new_placement(rc, toy)
    status, body = rc.request("POST", "/experiments", {
        "name": "which", "algorithm": "recommended", "interleaving": "team_draft",
        "rankers": [ranker(toy, "prod", "good"), ranker(toy, "new", "alt")],
        "placement": place, "traffic": 0.5, "probe": False}, admin=True)
    assert status == 201, body
    _certify(rd, body["id"], winner=1, loser=0)
    assert rc.request("POST", f"/experiments/{body['id']}/stop", admin=True)[0] == 200
    status, ab = rc.request("POST", f"/experiments/{body['id']}/confirm", {"traffic": 1.0},
                            admin=True)
    assert status == 201, ab
    CTR["new"] = CTR["alt"]
    simulate(rc, place, range(300), seed=31)
    page = browser.new_page()
    _sign_in(page, f"{api.url}/ui/#exp={ab['id']}")
    page.wait_for_selector("#ab-arms tbody tr")
    rows = page.locator("#ab-arms tbody tr").all_inner_texts()
    assert [r.split("\t")[0] for r in rows] == ["prod", "new"], rows
    assert "control" in rows[0] and "treatment" in rows[1]
    verdict = page.inner_text("#verdict")
    assert "new: " in verdict and "ctr" in verdict, verdict
    assert page.inner_text("#srm").startswith("Split: "), page.inner_text("#srm")
    assert "ctr" in page.inner_text("#ab-comparisons")
    assert body["id"] in page.inner_text("#experiment")  # the verdict it confirms
    page.goto(f"{api.url}/ui/")
    page.wait_for_selector("#agreements-section:not([hidden]) #agreements tr")
    pair = page.locator("#agreements tr", has_text="new vs prod")
    assert pair.count() >= 1
    assert "confirmed" in page.inner_text("#agreement-rate") or "agree" in page.inner_text(
        "#agreement-rate")
    # the median speed-up over the confirmed pairs, as GET /agreements states it
    status, got = rc.request("GET", "/agreements", admin=True)
    assert status == 200, got
    told = page.inner_text("#speedup-median")
    if got["speedup"]["median"] is None:
        assert told.startswith("No speed-up measured yet"), told
    else:
        assert told.startswith("Interleaving decided with ") and told.endswith(
            f"fewer searches than its A/B confirmation (median over "
            f"{got['speedup']['pairs']} pair{'' if got['speedup']['pairs'] == 1 else 's'})."
        ), told
    page.close()
    rc.close()
