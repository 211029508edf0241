"""Server-side front ends with a key (``RANKDUEL_FRONTEND_TOKENS``): a front-end server
reports the clicks of all its users from one address, so with its key it skips the
per-address click limit; the per-impression limit and the impression token still apply,
a wrong key is 401 (never served as a browser), and no key keeps the browser's limit.

Against an app on a real loopback port with the session's real Redis.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest
from conftest import ADMIN
from helpers.api import rankers_for

from demo.client import Client
from demo.wsgi_server import ThreadedServer
from service.app import create_app

OLD, NEW = "fe-key-old-0123456789abcdef", "fe-key-new-0123456789abcdef"


@pytest.fixture
def keyed_app(api):
    """An app with the default per-address limit (600 a minute) and two front-end keys
    (a rotation in progress)."""
    # impressions stay open while their clicks are sent (the session's inactivity is
    # 1.5 s, for the worker tests; the session's worker would close them under load)
    server = ThreadedServer(create_app(api.config.replace(
        clicks_per_client_per_minute=600, frontend_tokens=f"{OLD}, {NEW}",
        inactivity_s=600.0)))
    yield server
    server.close()


def _experiment(client: Client, ranker_server) -> str:
    return client.create_experiment(name="front end", algorithm="uniform",
                                    interleaving="team_draft", seed=3,
                                    rankers=rankers_for(ranker_server, "good", "bad"))["id"]


def _reports(client: Client, exp_id: str, impressions: int, per_impression: int) -> list[int]:
    """``impressions`` searches, then ``per_impression`` click reports on each, 8 at a
    time; the statuses of the click reports."""
    pages = [client.search(exp_id, "q", k=4) for _ in range(impressions)]
    jobs = [(p, n % 4 + 1) for p in pages for n in range(per_impression)]
    clients = [Client(client.base_url, ADMIN, frontend_token=client.frontend_token)
               for _ in range(8)]

    def report(i: int) -> int:
        page, rank = jobs[i]
        return clients[i % 8].request("POST", "/clicks", {
            "impression_id": page["impression_id"], "token": page["token"],
            "clicks": [{"id": page["results"][rank - 1]["id"], "rank": rank}]},
            headers=clients[i % 8]._front())[0]

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(report, range(len(jobs))))


def test_a_keyed_front_end_is_not_throttled_and_a_browser_is(keyed_app, ranker_server):
    keyed = Client(keyed_app.url, ADMIN, frontend_token=NEW)
    exp_id = _experiment(keyed, ranker_server)
    t0 = time.monotonic()
    statuses = _reports(keyed, exp_id, impressions=40, per_impression=75)  # 3,000 reports
    elapsed = time.monotonic() - t0
    assert len(statuses) == 3000 and set(statuses) == {202}, {s: statuses.count(s)
                                                              for s in set(statuses)}
    # the limit counts in fixed one-minute windows: the reports span at most this many, so
    # one of them held more than the browser limit of 600 (within 60 s on an idle machine;
    # a busy one may take up to about 3 minutes and the claim still holds)
    windows = int(elapsed // 60) + 2
    assert 3000 / windows > 600, elapsed
    # the same from the same address without a key: the browser's limit of 600 a minute.
    # The windows are fixed minutes of the clock, so 1,900 reports that span w of them
    # (w = 1 to 3 at any plausible speed) have at most 600 w accepted and the rest refused
    anonymous = Client(keyed_app.url, ADMIN)
    start = time.time()
    statuses = _reports(anonymous, exp_id, impressions=20, per_impression=95)
    spanned = int(time.time() // 60) - int(start // 60) + 1
    accepted, refused = statuses.count(202), statuses.count(429)
    assert accepted + refused == 1900, {s: statuses.count(s) for s in set(statuses)}
    assert spanned <= 3, f"1,900 reports took {time.time() - start:.0f} s"
    assert accepted <= 600 * spanned and refused >= 1900 - 600 * spanned, (
        accepted, refused, spanned)


def test_the_per_impression_limit_still_applies_with_a_key(keyed_app, ranker_server):
    keyed = Client(keyed_app.url, ADMIN, frontend_token=OLD)  # the old key of the rotation
    exp_id = _experiment(keyed, ranker_server)
    statuses = _reports(keyed, exp_id, impressions=1, per_impression=110)
    assert statuses.count(202) == 100 and statuses.count(429) == 10


def test_a_wrong_key_is_401_on_every_front_end_endpoint(keyed_app, ranker_server):
    good = Client(keyed_app.url, ADMIN, frontend_token=NEW)
    exp_id = _experiment(good, ranker_server)
    page = good.search(exp_id, "q", k=4)
    doc = page["results"][0]
    wrong = {"Authorization": "Bearer not-a-key"}
    r = {"i": page["impression_id"], "t": page["token"], "d": doc["id"], "p": 1,
         "u": "https://example.com/x"}
    for method, path, body in [
            ("GET", f"/search?experiment={exp_id}&q=q", None),
            ("POST", "/clicks", {"impression_id": page["impression_id"], "token": page["token"],
                                 "clicks": [{"id": doc["id"], "rank": 1}]}),
            ("POST", f"/impressions/{page['impression_id']}/end", {"token": page["token"]}),
            ("GET", "/r?" + urlencode(r), None)]:
        status, out = good.request(method, path, body, headers=wrong)
        assert status == 401 and "front-end key" in out["error"], (path, status, out)
        assert "not-a-key" not in str(out)
    # the click token still applies with a key
    status, _ = good.request("POST", "/clicks", {
        "impression_id": page["impression_id"], "token": "forged",
        "clicks": [{"id": doc["id"], "rank": 1}]}, headers=good._front())
    assert status == 403
    # a key is never shown: not in /metrics, not in the configuration's repr
    status, text = good.request("GET", "/metrics", admin=True)
    assert status == 200 and NEW not in text and OLD not in text
    assert NEW not in repr(keyed_app.server.app.extensions["rankduel"].config)


def test_no_keys_configured_means_any_key_but_the_admin_token_is_wrong(api, client,
                                                                    ranker_server):
    exp_id = _experiment(client, ranker_server)
    status, out = client.request("GET", f"/search?experiment={exp_id}&q=q",
                                 headers={"Authorization": "Bearer anything"})
    assert status == 401, out
    assert client.request("GET", f"/search?experiment={exp_id}&q=q")[0] == 200
    status, _ = client.request("GET", f"/search?experiment={exp_id}&q=q",
                               headers={"Authorization": f"Bearer {ADMIN}"})
    assert status == 200  # the operator may do anything
