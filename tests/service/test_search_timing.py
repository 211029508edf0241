"""What a search costs, told to the caller and to the metrics: every ``/search`` answer
carries ``Server-Timing: rankers;dur=<ms>, rankduel;dur=<ms>`` (errors too), and the
rankduel part of each goes into ``rankduel_search_overhead_seconds``. Behaviour only:
the figures themselves are measured by bench/service_load.py."""

from __future__ import annotations

import http.client
import re
import time
from urllib.parse import urlencode, urlsplit

import pytest

TIMING = re.compile(r"^rankers;dur=(\d+\.\d\d), rankduel;dur=(\d+\.\d\d)$")


def rankers(server, *names, timeout_ms=1000):
    return [{"name": n, "url": f"{server.url}/r/{n}", "timeout_ms": timeout_ms}
            for n in names]


def get(api, path: str) -> tuple[int, dict[str, str]]:
    parts = urlsplit(api.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def timing(headers: dict[str, str]) -> tuple[float, float]:
    match = TIMING.match(headers.get("server-timing", ""))
    assert match, headers.get("server-timing")
    return float(match[1]), float(match[2])


def overhead_count(client) -> float:
    status, text = client.request("GET", "/metrics", admin=True)
    assert status == 200
    found = re.search(r"^rankduel_search_overhead_seconds_count (\S+)$", text, re.M)
    return float(found[1]) if found else 0.0


@pytest.fixture(scope="module")
def experiments(api, ranker_server):
    from conftest import ADMIN

    from demo.client import Client

    client = Client(api.url, ADMIN)

    def make(name, *names, timeout_ms=1000):
        return client.create_experiment(
            name=name, rankers=rankers(ranker_server, *names, timeout_ms=timeout_ms),
            algorithm="uniform", interleaving="team_draft", probe=False)["id"]

    return {"ok": make("timing-ok", "good", "mid"),
            "slow": make("timing-slow", "good", "slow", timeout_ms=300),
            "dead": make("timing-dead", "broken", "garbage")}


def search(experiment: str, **extra) -> str:
    return "/search?" + urlencode({"experiment": experiment, "q": "q", "k": 3, **extra})


def test_a_search_says_where_its_time_went(api, experiments):
    status, headers = get(api, search(experiments["ok"]))
    assert status == 200
    ranker_ms, ours_ms = timing(headers)
    assert ranker_ms > 0 and ours_ms > 0


def test_the_rankers_part_is_the_slowest_ranker_call(api, experiments):
    """One ranker sleeps 1.5 s and is given up at its 300 ms timeout: the rankers' part
    is that wait (and the wait is not counted as rankduel's: the two parts add up to at
    most the request's time)."""
    t0 = time.perf_counter()
    status, headers = get(api, search(experiments["slow"]))
    elapsed_ms = (time.perf_counter() - t0) * 1e3
    assert status == 200  # the good ranker's list, the slow one forfeits
    ranker_ms, ours_ms = timing(headers)
    assert 300 <= ranker_ms < 1500, ranker_ms  # given up at its timeout, not its answer
    assert ranker_ms + ours_ms <= elapsed_ms + 0.02


@pytest.mark.parametrize("case, expected", [
    ("bad_k", 400), ("missing", 404), ("dead", 502)])
def test_error_answers_carry_it_too(api, experiments, case, expected):
    path = {"bad_k": search(experiments["ok"], k="many"),
            "missing": search("no-such-experiment"),
            "dead": search(experiments["dead"])}[case]
    status, headers = get(api, path)
    assert status == expected
    ranker_ms, ours_ms = timing(headers)
    assert ours_ms >= 0
    if case != "dead":
        assert ranker_ms == 0  # no ranker was called


def test_other_endpoints_do_not(api):
    status, headers = get(api, "/healthz")
    assert status == 200 and "server-timing" not in headers


def test_each_search_is_one_overhead_observation(api, client, experiments):
    before = overhead_count(client)
    for _ in range(3):
        assert get(api, search(experiments["ok"]))[0] == 200
    assert get(api, search(experiments["ok"], k="0"))[0] == 400
    assert overhead_count(client) - before == 4


def test_search_parameters_are_still_checked_by_the_schema(api, client, experiments):
    """The fast path of the query parameters refuses what the schema refuses, with its
    messages (it hands anything unusual to the schema)."""
    exp = experiments["ok"]
    cases = [({"q": "q"}, "missing parameter 'experiment'"),
             ({"experiment": exp}, "missing parameter 'q'"),
             ({"experiment": exp, "q": ""}, "q must have at least 1 character"),
             ({"experiment": exp, "q": "q", "k": "0"}, "k must be at least 1"),
             ({"experiment": exp, "q": "q", "k": "+3"}, "k must be an integer"),
             ({"experiment": exp, "q": "q", "k": "٣"}, "k must be an integer"),
             ({"experiment": exp, "q": "x" * 1001}, "q is longer than 1000 characters"),
             ({"experiment": "e" * 65, "q": "q"}, "experiment is longer than 64")]
    for params, message in cases:
        status, body = client.request("GET", "/search?" + urlencode(params))
        assert status == 400 and message in body["error"], (params, body)
    status, page = client.request("GET", "/search?" + urlencode(
        {"experiment": exp, "q": "q", "k": "2", "other": "ignored"}))
    assert status == 200 and len(page["results"]) == 2


def test_next_page_parameters_go_through_the_schema(client, experiments):
    """``page``, ``impression_id`` and ``token`` are not on the fast path: they are read
    and refused exactly as the schema says."""
    exp = experiments["ok"]
    cases = [({"page": "0"}, "page must be at least 1"),
             ({"page": "two"}, "page must be an integer"),
             ({"page": "2"}, "impression_id and token"),
             ({"impression_id": ""}, "impression_id must have at least 1 character")]
    for extra, message in cases:
        status, body = client.request("GET", "/search?" + urlencode(
            {"experiment": exp, "q": "q", "k": "2", **extra}))
        assert status == 400 and message in body["error"], (extra, body)


def test_a_next_page_says_where_its_time_went(api, client, experiments):
    exp = experiments["ok"]
    status, first = client.request("GET", "/search?" + urlencode(
        {"experiment": exp, "q": "q", "k": "2"}))
    assert status == 200
    status, headers = get(api, "/search?" + urlencode(
        {"experiment": exp, "q": "q", "k": "2", "page": "2",
         "impression_id": first["impression_id"], "token": first["token"]}))
    assert status == 200
    ranker_ms, ours_ms = timing(headers)
    assert ranker_ms > 0 and ours_ms > 0
