"""The search's WSGI path (:mod:`service.api.search_wsgi`) answers as Flask's route does:
the same status, body and headers, the same metrics, the same errors; and it hands every
request that is not the common search to Flask before doing anything."""

from __future__ import annotations

import functools
import json
import time

import pytest
from conftest import ADMIN
from flask import Flask
from werkzeug.test import Client

from service.api import search_wsgi
from service.app import create_app
from service.config import load_config
from service.placements.control_pages import verify
from service.runtime import EXTENSION

ADMIN_H = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="module")
def paths(service_env, ranker_server):
    """(fast, flask, calls): clients of the wrapped app and of Flask's own path, and the
    requests the wrapper handed to Flask."""
    app = create_app(load_config(env=service_env))
    flask_wsgi = functools.partial(Flask.wsgi_app, app)
    handed: list[str] = []

    def counting(environ, start_response):
        handed.append(f"{environ['PATH_INFO']}?{environ.get('QUERY_STRING', '')}")
        return flask_wsgi(environ, start_response)

    fast = Client(search_wsgi.wrap(app, counting))

    def stamped(environ, start_response):  # what the wrapper adds before Flask
        environ["rankduel.t0"] = time.perf_counter()
        return flask_wsgi(environ, start_response)

    slow = Client(stamped)
    rankers = [{"name": n, "url": f"{ranker_server.url}/r/{n}"} for n in ("a", "b", "c")]
    r = slow.post("/experiments", json={"name": "wsgi", "rankers": rankers,
                                        "algorithm": "mergedts",
                                        "interleaving": "team_draft"}, headers=ADMIN_H)
    assert r.status_code == 201, r.get_json()
    exp = r.get_json()["id"]
    r = slow.post("/placements", json={"name": "wsgi-box", "control": rankers[0]},
                  headers=ADMIN_H)
    assert r.status_code == 201, r.get_json()
    return fast, slow, handed, exp, app.extensions[EXTENSION]


def _headers(resp) -> dict[str, str]:
    return {k: v for k, v in resp.headers.items() if k not in ("Server-Timing",
                                                                "Content-Length")}


@pytest.mark.parametrize("q", ["cats", "caf%C3%A9+au+lait", "%E9t%E9"])  # last: not UTF-8
def test_a_control_search_is_the_same_answer(paths, q):
    fast, slow, handed, _, rt = paths
    handed.clear()
    a = fast.get(f"/search?placement=wsgi-box&q={q}&k=3")
    b = slow.get(f"/search?placement=wsgi-box&q={q}&k=3")
    assert handed == []  # served without Flask
    assert a.status_code == b.status_code == 200
    ja, jb = a.get_json(), b.get_json()
    # each control page has its own token; everything else is the same
    assert verify(rt.secret, ja.pop("page_token"))[0] == "wsgi-box"
    assert verify(rt.secret, jb.pop("page_token"))[0] == "wsgi-box"
    assert ja == jb and list(a.get_json()) == list(b.get_json())
    assert _headers(a) == _headers(b)
    assert a.headers["Vary"] == "Origin"
    assert a.headers["Server-Timing"].startswith("rankers;dur=")


def test_an_experiment_search_has_the_same_shape(paths):
    fast, slow, handed, exp, _ = paths
    handed.clear()
    a = fast.get(f"/search?experiment={exp}&q=dogs&k=4&user=u1")
    b = slow.get(f"/search?experiment={exp}&q=dogs&k=4&user=u1")
    assert handed == []
    assert a.status_code == b.status_code == 200
    assert _headers(a) == _headers(b)
    ja, jb = a.get_json(), b.get_json()
    assert list(ja) == list(jb) and ja["experiment"] == exp
    assert len(ja["results"]) == 4
    assert json.loads(a.get_data()) == ja  # one JSON document, newline-terminated
    assert a.get_data().endswith(b"\n")


@pytest.mark.parametrize("query, headers", [
    ("experiment=nope&q=x", {}),                            # 404 from the search
    ("placement=nope&q=x", {}),                             # 404 from the placement
    ("experiment={exp}&q=x", {"Authorization": "Bearer wrong"}),  # 401: a wrong key
    ("experiment={exp}&q=x", {"Authorization": "Basic abc"}),     # 401: not Bearer
])
def test_errors_raised_by_the_search_are_flasks(paths, query, headers):
    fast, slow, handed, exp, _ = paths
    handed.clear()
    q = "/search?" + query.format(exp=exp)
    a, b = fast.get(q, headers=headers), slow.get(q, headers=headers)
    assert handed == []  # the search ran on the fast path, then raised
    assert a.status_code == b.status_code and a.status_code in (401, 404)
    assert a.get_json() == b.get_json() and "error" in a.get_json()
    assert _headers(a) == _headers(b)
    assert "Server-Timing" in a.headers


@pytest.mark.parametrize("query, headers, method", [
    ("experiment={exp}&q=x&page=2&impression_id=i&token=t", {}, "GET"),  # a next page
    ("experiment={exp}&q=x", {"Origin": "https://elsewhere.example"}, "GET"),  # a browser
    ("experiment={exp}&q=x&k=0", {}, "GET"),                  # out of bounds: the schema
    ("experiment={exp}&q=x&bogus=1", {}, "GET"),              # unknown name: the schema
    ("experiment={exp}&placement=wsgi-box&q=x", {}, "GET"),   # both: the schema
    ("q=x", {}, "GET"),                                       # neither
    ("experiment={exp}&q=x", {}, "POST"),                     # not GET: 405
])
def test_anything_else_goes_to_flask_untouched(paths, query, headers, method):
    fast, slow, handed, exp, _ = paths
    handed.clear()
    q = "/search?" + query.format(exp=exp)
    a = fast.open(q, method=method, headers=headers)
    b = slow.open(q, method=method, headers=headers)
    assert handed == [q]
    assert a.status_code == b.status_code
    if a.status_code != 200:
        assert a.get_json() == b.get_json()


def test_other_routes_go_to_flask(paths):
    fast, _, handed, _, _ = paths
    handed.clear()
    assert fast.get("/healthz").status_code == 200
    assert handed == ["/healthz?"]


def test_the_fast_path_counts_its_metrics(paths):
    from service import metrics

    fast, _, handed, _, _ = paths

    def count(metric, **labels):
        return sum(s.value for m in metric.collect() for s in m.samples
                   if s.name.endswith(("_total", "_count"))
                   and all(s.labels.get(k) == v for k, v in labels.items()))

    ok = {"endpoint": "/search", "status": "200"}
    before = (count(metrics.HTTP_REQUESTS, method="GET", **ok),
              count(metrics.HTTP_LATENCY, **ok), count(metrics.SEARCH_OVERHEAD))
    handed.clear()
    assert fast.get("/search?placement=wsgi-box&q=m").status_code == 200
    assert handed == []
    assert (count(metrics.HTTP_REQUESTS, method="GET", **ok),
            count(metrics.HTTP_LATENCY, **ok),
            count(metrics.SEARCH_OVERHEAD)) == tuple(n + 1 for n in before)
