"""Result pages through the real stack (real HTTP rankers on loopback, real Redis, real
worker): page 2 of an impression continues its interleaving, and clicks on any page
credit the impression once, exactly as the single long list would.

The credit equality: two experiments alike (same rankers, method and seed, so their first
search draws the same comparison with the same generator), one served as pages 1 and 2
of k=5, the other as one page of k=10; the same ranks clicked in both; their ``W`` must
grow by the same amounts.
"""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pytest
from helpers.wait import wait_for
from test_service_flow import make_experiment

from demo.client import ApiResponseError


def _page(client, first: dict, q: str, k: int, page: int, **override) -> dict:
    params = {"experiment": first["experiment"], "q": q, "k": k, "page": page,
              "impression_id": first["impression_id"], "token": first["token"], **override}
    return client._ok("GET", "/search?" + urlencode(params), headers=client._front())


def _status(call) -> tuple[int, str]:
    with pytest.raises(ApiResponseError) as err:
        call()
    return err.value.status, err.value.body["error"]


@pytest.fixture(scope="module")
def fixed_rankers():
    """Rankers that return the same 20 documents whatever ``k`` (so even probabilistic
    interleave, whose softmax covers the list returned, sees the same lists on every
    page), and a record of the ``k``/``offset`` they were asked for."""
    from flask import Flask, jsonify, request

    from demo.wsgi_server import ThreadedServer

    app = Flask("fixed-rankers")
    asked: list[tuple[str, str | None, str | None]] = []
    base = [f"f{i:02d}" for i in range(20)]
    orders = {"up": base, "down": base[::-1], "mix": base[5:] + base[:5]}

    @app.get("/f/<name>")
    def rank(name: str):
        asked.append((name, request.args.get("k"), request.args.get("offset")))
        return jsonify({"results": [{"id": d, "url": f"https://docs.example/{d}"}
                                    for d in orders[name]]})

    server = ThreadedServer(app)
    server.asked = asked
    yield server
    server.close()


def _pair(client, ranker_server, method, names, algorithm="uniform", **extra):
    return [make_experiment(client, ranker_server, names=names, method=method,
                            algorithm=algorithm, **extra)["id"] for _ in range(2)]


def _credit_equality(client, exp_paged, exp_once, q, click_ranks):
    """Serve ``exp_paged`` as pages 1-2 of k=5 and ``exp_once`` as one page of k=10,
    click ``click_ranks`` in both, end both; return (W paged, W once, the lists)."""
    first = client.search(exp_paged, q, k=5)
    second = _page(client, first, q, 5, 2)
    once = client.search(exp_once, q, k=10)
    paged_ids = [r["id"] for r in first["results"] + second["results"]]
    assert second["impression_id"] == first["impression_id"]
    assert [r["rank"] for r in second["results"]] == list(range(6, 11))
    assert paged_ids == [r["id"] for r in once["results"]]  # one interleaving of depth 10
    assert first["rankers"] == once["rankers"]
    by_rank = {r["rank"]: r for r in first["results"] + second["results"]}
    # a click on each page, reported against the impression page 1 issued
    client.click(first, [(by_rank[r]["id"], r) for r in click_ranks if r <= 5])
    client.click(second, [(by_rank[r]["id"], r) for r in click_ranks if r > 5])
    client.click(once, [(once["results"][r - 1]["id"], r) for r in click_ranks])
    client.end(first)
    client.end(once)
    states = [wait_for(lambda e=e: (s := client.experiment(e))["comparisons"] == 1 and s,
                       what=f"credit of {e}") for e in (exp_paged, exp_once)]
    return [np.array(s["W"]) for s in states], paged_ids, states


@pytest.mark.parametrize("method", ["team_draft", "balanced"])
def test_two_pages_credit_as_the_long_list(client, ranker_server, worker, method):
    """Toy rankers that return their top ``k``: the rank-based methods give the same list
    paged as at once, and the same credit."""
    exp_paged, exp_once = _pair(client, ranker_server, method, ("good", "bad"))
    # good ranks d00, d01, ... first and bad d29, d28, ...: clicks on good's documents on
    # both pages make a decisive comparison that paging must not change
    probe = client.search(make_experiment(client, ranker_server, names=("good", "bad"),
                                          method=method)["id"], "lake", k=10)
    goods = [r["rank"] for r in probe["results"] if int(r["id"][1:]) < 15]
    clicks = [min(r for r in goods if r <= 5), min(r for r in goods if r > 5)]
    (w_paged, w_once), _ids, states = _credit_equality(client, exp_paged, exp_once, "lake",
                                                      clicks)
    assert w_once.sum() == 1.0  # a decisive comparison, credited once
    np.testing.assert_array_equal(w_paged, w_once)
    good = {r["name"]: r["arm"] for r in states[0]["rankers"]}["good"]
    assert w_paged[good].sum() == 1.0
    assert states[0]["counters"]["impressions"] == 1  # page 2 is no new impression


@pytest.mark.parametrize("method,algorithm,names", [
    ("probabilistic", "uniform", ("up", "down")),
    ("sosm", "mdb", ("up", "down", "mix")),
])
def test_pages_of_fixed_lists_credit_as_the_long_list(client, fixed_rankers, worker, method,
                                                      algorithm, names):
    """Probabilistic interleave and a multileave (SOSM over three rankers): with lists
    that do not depend on ``k``, pages 1-2 are the one interleaving of depth 10 and the
    clicks (ranks 2 and 8) credit the same ``W``."""
    exp_paged, exp_once = [
        client.create_experiment(
            name="p", algorithm=algorithm, interleaving=method, seed=11,
            rankers=[{"name": n, "url": f"{fixed_rankers.url}/f/{n}", "timeout_ms": 2000}
                     for n in names])["id"] for _ in range(2)]
    (w_paged, w_once), _, _ = _credit_equality(client, exp_paged, exp_once, "river", [2, 8])
    assert w_once.sum() > 0
    np.testing.assert_allclose(w_paged, w_once, rtol=0, atol=1e-12)


def test_rankers_are_asked_for_the_depth_and_the_offset(client, fixed_rankers):
    exp = client.create_experiment(
        name="ask", algorithm="uniform", interleaving="team_draft", seed=3,
        rankers=[{"name": "up", "url": f"{fixed_rankers.url}/f/up", "timeout_ms": 2000,
                  "request": {"params": {"q": "{q}", "k": "{k}", "offset": "{offset}"}}},
                 {"name": "down", "url": f"{fixed_rankers.url}/f/down", "timeout_ms": 2000}])
    first = client.search(exp["id"], "sea", k=4)
    fixed_rankers.asked.clear()
    third_ranks = []
    second = _page(client, first, "sea", 4, 2)
    third = _page(client, first, "sea", 4, 3)
    third_ranks = [r["rank"] for r in third["results"]]
    assert [r["rank"] for r in second["results"]] == [5, 6, 7, 8]
    assert third_ranks == [9, 10, 11, 12]
    templated = [(k, off) for name, k, off in fixed_rankers.asked if name == "up"]
    plain = [k for name, k, _ in fixed_rankers.asked if name == "down"]
    assert templated == [("8", "4"), ("12", "8")]  # {k} = N*k, {offset} = (N-1)*k
    assert plain == ["8", "12"]
    # the same page again is served from the stored list: the same documents
    again = _page(client, first, "sea", 4, 2)
    assert [r["id"] for r in again["results"]] == [r["id"] for r in second["results"]]
    shown = [r["id"] for r in first["results"] + second["results"] + third["results"]]
    assert len(set(shown)) == 12
    # a click on page 3 is taken (the impression knows ranks 1..12 now)
    assert client.click(first, [(shown[10], 11)])["accepted"] == 1


def test_refusals(client, ranker_server, api):
    exp = make_experiment(client, ranker_server)["id"]
    other = make_experiment(client, ranker_server)["id"]
    first = client.search(exp, "pond", k=10)
    # beyond RANKDUEL_MAX_DEPTH (100): 400, saying why and what to ask for
    status, message = _status(lambda: _page(client, first, "pond", 10, 11))
    assert status == 400 and "RANKDUEL_MAX_DEPTH=100" in message and "at most 10" in message
    # a wrong token: 403; another experiment's impression: 403
    # (a token ending in "0" would be left unchanged by "+ '0'": a 1-in-16 flake)
    wrong = first["token"][:-1] + ("1" if first["token"].endswith("0") else "0")
    status, _ = _status(lambda: _page(client, first, "pond", 10, 2, token=wrong))
    assert status == 403
    status, message = _status(lambda: _page(client, first, "pond", 10, 2, experiment=other))
    assert status == 403 and "another experiment" in message
    # no impression: 400; another query: 422; skipping page 2: 422
    status, message = _status(lambda: client._ok(
        "GET", "/search?" + urlencode({"experiment": exp, "q": "pond", "page": 2}),
        headers=client._front()))
    assert status == 400 and "impression_id and token" in message
    status, _ = _status(lambda: _page(client, first, "other words", 10, 2))
    assert status == 422
    status, message = _status(lambda: _page(client, first, "pond", 10, 3))
    assert status == 422 and "ask for page 2 first" in message
    # a closed impression: 409
    client.end(first)
    status, message = _status(lambda: _page(client, first, "pond", 10, 2))
    assert status == 409 and "closed" in message


def test_concurrent_next_pages_serve_one_page(client, ranker_server):
    """Two requests for page 2 at once (a double click): one extends the impression, the
    other finds it extended (compare-and-set on the shown list) and serves the same page."""
    from concurrent.futures import ThreadPoolExecutor

    from demo.client import Client

    exp = make_experiment(client, ranker_server)["id"]
    first = client.search(exp, "dune", k=5)
    clients = [Client(client.base_url, None) for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        pages = list(pool.map(lambda c: _page(c, first, "dune", 5, 2), clients))
    ids = {tuple(r["id"] for r in p["results"]) for p in pages}
    assert len(ids) == 1 and len(next(iter(ids))) == 5
    assert not set(next(iter(ids))) & {r["id"] for r in first["results"]}


def test_the_store_extends_only_what_it_was_shown(client, ranker_server, api, rd):
    """The storage step alone: a stale read is refused (False), each extension counts as
    a report (so a credit read before it is read again), a closed impression is refused."""
    from service.store import ImpressionClosed, Store
    from service.store.keys import imp_key

    store = Store(rd)
    exp = make_experiment(client, ranker_server)["id"]
    first = client.search(exp, "fjord", k=3)
    imp = first["impression_id"]
    shown = [r["id"] for r in first["results"]]
    record = store.impressions.impression(imp).record
    assert record["page"]["q"] and len(record["page"]["rng"]) == 2
    longer = [*shown, "x1"]
    args = dict(record=record, urls=[None] * 4, inactivity_s=60)
    assert not store.impressions.extend_impression(imp, exp, expect=shown[:2], shown=longer, **args)
    assert store.impressions.impression(imp).shown == shown  # nothing written
    assert store.impressions.extend_impression(imp, exp, expect=shown, shown=longer, **args)
    assert store.impressions.impression(imp).shown == longer
    assert int(rd.hget(imp_key(exp, imp), "reports")) == 1
    client.end(first)
    with pytest.raises(ImpressionClosed):
        store.impressions.extend_impression(imp, exp, expect=longer, shown=[*longer, "x2"], **args)


def test_a_ranker_in_quarantine_now_adds_nothing_to_the_next_page(client, fixed_rankers,
                                                                   redis_url):
    """Page 2 of a duel whose opponent went into quarantine after page 1: the user gets
    the page at once from the ranker that answers (the quarantined one is not called, so
    nobody waits out its timeout), as if it had failed now: it adds no new document. With
    every participant in quarantine, 502 says to start a new search (which selection
    serves with healthy rankers)."""
    from service.store import Store
    from service.store.client import connect

    exp = client.create_experiment(
        name="q", algorithm="uniform", interleaving="team_draft", seed=3,
        rankers=[{"name": n, "url": f"{fixed_rankers.url}/f/{n}", "timeout_ms": 2000}
                 for n in ("up", "down")])["id"]
    arm = {r["name"]: r["arm"] for r in client.experiment(exp)["rankers"]}
    first = client.search(exp, "fjord", k=4)
    assert sorted(first["rankers"]) == ["down", "up"]
    store = Store(connect(redis_url))
    store.ranker_health.ranker_failed(exp, arm["down"], threshold=1, quarantine_s=60)
    fixed_rankers.asked.clear()
    second = _page(client, first, "fjord", 4, 2)
    assert [name for name, _, _ in fixed_rankers.asked] == ["up"]  # down not called
    shown = [r["id"] for r in first["results"]]
    new = [r["id"] for r in second["results"]]
    assert [r["rank"] for r in second["results"]] == [5, 6, 7, 8]
    up = [f"f{i:02d}" for i in range(20)]
    assert new == [d for d in up if d not in shown][:4]  # up's next documents only
    assert sorted(second["rankers"]) == ["down", "up"]  # the impression's participants
    store.ranker_health.ranker_failed(exp, arm["up"], threshold=1, quarantine_s=60)
    fixed_rankers.asked.clear()
    status, message = _status(lambda: _page(client, first, "fjord", 4, 3))
    assert status == 502 and "quarantine" in message and "new search" in message
    assert fixed_rankers.asked == []
