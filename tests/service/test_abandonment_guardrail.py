"""The abandonment guardrail on a real API, Redis and Celery worker: control answers
carry a page token, their clicks are reported with it, and the worker's sweep compares
the experiment's pages with the control's (service/placements/control_pages.py,
docs/operations/rollout.md). The session's configuration: RANKDUEL_INACTIVITY_S 1.5 (one-
second buckets, settled about 5 s after the page), the sweep every 0.5 s."""

from __future__ import annotations

import re
import secrets
import time
from urllib.parse import urlencode

from conftest import SECRET

from service.placements import control_pages
from service.placements.guardrails import check
from service.store import Store
from service.store.keys import counters_key, placement_control_key

GUARDS = {"min_pages": 40, "min_calls": 100_000}  # only the abandonment rule can trip


def ranker(server, name: str, path: str) -> dict:
    return {"name": name, "url": f"{server.url}/r/{path}", "timeout_ms": 2000}


def placement(client, server) -> str:
    name = f"pages-{secrets.token_hex(3)}"
    status, body = client.request("POST", "/placements", {
        "name": name, "control": ranker(server, "prod", "good")}, admin=True)
    assert status == 201, body
    return name


def experiment(client, server, place: str) -> str:
    status, body = client.request("POST", "/experiments", {
        "name": "abandon", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [ranker(server, "x-0", "mid"), ranker(server, "x-1", "alt")],
        "placement": place, "traffic": 0.5, "probe": False, "guardrails": GUARDS},
        admin=True)
    assert status == 201, body
    return body["id"]


def search(client, place: str, user: str) -> dict:
    status, body = client.request("GET", "/search?" + urlencode(
        {"placement": place, "q": "shoes", "k": 5, "user": user}))
    assert status == 200, body
    return body


def click_page(client, body: dict) -> dict:
    first = body["results"][0]
    status, out = client.request("POST", "/clicks", {
        "page_token": body["page_token"], "clicks": [{"id": first["id"], "rank": 1}]})
    assert status == 202, out
    return out


def visit(client, place: str, user: str, *, click_control: bool,
          click_experiment: bool) -> str | None:
    """One simulated user's search; its click (or none) reported; the experiment's
    impression ended. Which side answered."""
    body = search(client, place, user)
    if body["experiment"] is None:
        assert body["impression_id"] is None and body["token"] is None
        assert isinstance(body["page_token"], str)
        if click_control:
            click_page(client, body)
        return None
    assert "page_token" not in body
    clicks = [{"id": body["results"][0]["id"], "rank": 1}] if click_experiment else []
    status, out = client.request("POST", f"/impressions/{body['impression_id']}/end",
                                 {"token": body["token"], "clicks": clicks})
    assert status == 202, out
    return body["experiment"]


def counts(rd, exp: str) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in rd.hgetall(counters_key(exp)).items()}


def test_experiment_pages_abandoned_more_than_the_controls_pause_it(
        client, ranker_server, worker, rd):
    place = placement(client, ranker_server)
    exp = experiment(client, ranker_server, place)
    deadline, i = time.monotonic() + 90, 0
    while time.monotonic() < deadline:
        visit(client, place, f"u{i % 400}", click_control=True, click_experiment=False)
        i += 1
        if i % 20 == 0 and client.experiment(exp)["lifecycle"] == "paused":
            break
    state = client.experiment(exp)
    assert state["lifecycle"] == "paused", (state["rollout"], counts(rd, exp))
    tripped = state["rollout"]["guardrail"]
    assert tripped["rule"] == "abandonment" and tripped["ranker"] is None
    # the reason names both rates: every experiment page abandoned, no control page
    assert "of the experiment's" in tripped["reason"] and "(100 %)" in tripped["reason"]
    assert re.search(r"\(100 %\), [0-9.]+ % of the control's", tripped["reason"])
    assert "max_abandonment_excess" in tripped["reason"]
    audit = client.request("GET", f"/experiments/{exp}/audit", admin=True)[1]["audit"]
    assert [a["rule"] for a in audit if a["action"] == "guardrail_tripped"] == ["abandonment"]
    c = counts(rd, exp)
    assert c["g:control_pages"] >= GUARDS["min_pages"] and c.get("g:control_clicked", 0) \
        >= c["g:control_pages"] - 5  # a page served as the bucket flushed: at most a few
    # resumed, it counts afresh (its pages and the control's from now on)
    assert client.request("POST", f"/experiments/{exp}/resume", admin=True)[0] == 200
    c = counts(rd, exp)
    assert "g:control_pages" not in c and c["g:since"] > time.time() - 30


def test_pages_clicked_alike_on_both_sides_trip_nothing(client, ranker_server, worker, rd):
    place = placement(client, ranker_server)
    exp = experiment(client, ranker_server, place)
    deadline, i = time.monotonic() + 90, 0
    enough = False
    while time.monotonic() < deadline and not enough:
        # every other page clicked on both sides: the same abandonment rate, 50 %
        click = (i // 2) % 2 == 0
        visit(client, place, f"v{i}", click_control=click, click_experiment=click)
        i += 1
        if i % 20 == 0:
            c = counts(rd, exp)
            enough = min(c.get("g:pages", 0), c.get("g:control_pages", 0)) >= \
                2 * GUARDS["min_pages"]
    c = counts(rd, exp)
    assert enough, c
    assert 0.25 < c["g:abandoned"] / c["g:pages"] < 0.75, c
    assert 0.25 < 1 - c["g:control_clicked"] / c["g:control_pages"] < 0.75, c
    # past min_pages on both sides: the sweeps above checked it many times (every
    # 0.5 s), and a check now finds nothing either
    assert check(Store(rd), place, [exp]) == []
    state = client.experiment(exp)
    assert state["lifecycle"] == "running" and state["rollout"]["guardrail"] is None


def test_a_control_pages_token_is_checked_and_its_clicks_count_once(
        client, ranker_server, worker, rd):
    place = placement(client, ranker_server)  # no experiment: every search is control
    body = search(client, place, "w1")
    assert body["experiment"] is None and body["impression_id"] is None
    end = int(body["page_token"].split(".")[0])
    assert click_page(client, body) == {"impression_id": None, "accepted": 1,
                                        "duplicates": 0}
    assert click_page(client, body) == {"impression_id": None, "accepted": 0,
                                        "duplicates": 1}
    # as a form (navigator.sendBeacon with URLSearchParams): a duplicate too
    status, out = client.request("POST", "/clicks", raw=urlencode({
        "page_token": body["page_token"], "id": "d00", "rank": 1}).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 202 and out["accepted"] == 0, out
    assert int(rd.hget(placement_control_key(place), f"c:{end}") or 0) == 1
    # forged: another page id under the same MAC
    e, _page, mac, name = body["page_token"].split(".", 3)
    forged = f"{e}.{'f' * 16}.{mac}.{name}"
    status, out = client.request("POST", "/clicks", {
        "page_token": forged, "clicks": [{"id": "d00", "rank": 1}]})
    assert status == 403 and "invalid page_token" in out["error"], out
    # stale: a genuine token whose click window closed
    old, _ = control_pages.new_page(SECRET.encode(), place, 1.5, now=time.time() - 60)
    status, out = client.request("POST", "/clicks", {
        "page_token": old, "clicks": [{"id": "d00", "rank": 1}]})
    assert status == 409 and "click window" in out["error"], out
    # one kind of report, not both or neither
    for bad in ({"page_token": body["page_token"], "impression_id": "abc",
                 "clicks": [{"id": "d00", "rank": 1}]},
                {"page_token": body["page_token"], "token": "x",
                 "clicks": [{"id": "d00", "rank": 1}]},
                {"clicks": [{"id": "d00", "rank": 1}]}):
        status, out = client.request("POST", "/clicks", bad)
        assert status == 400 and "exactly one of the two" in out["error"], (bad, out)
    # the click redirect is never open: no control page through it
    status, out = client.request("GET", "/r?" + urlencode({
        "pt": body["page_token"], "d": "d00", "p": 1, "u": "https://evil.example/"}))
    assert status == 400 and "POST /clicks" in out["error"], out
    # settled buckets with nothing running are dropped by the sweep: the hash stays small
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and rd.hexists(placement_control_key(place), f"c:{end}"):
        time.sleep(0.2)
    assert not rd.hexists(placement_control_key(place), f"c:{end}")
