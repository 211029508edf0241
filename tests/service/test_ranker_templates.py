"""Rankers of any engine, by template: a ranker's ``request`` template and ``response``
mapping call a search engine in its own shape.

No search engine (OpenSearch, Elasticsearch, Solr, Vespa) is installable on this
machine, so the engines here are real HTTP servers on loopback that answer in each
engine's documented request and response format:

* OpenSearch/Elasticsearch ``POST /INDEX/_search`` with a JSON query DSL body, answering
  ``{"hits": {"hits": [{"_id", "_source": {...}}]}}`` (with ``Authorization`` required);
* Solr ``GET /solr/CORE/select?q=&rows=&wt=json``, answering
  ``{"response": {"docs": [{"id", ...}]}}``;
* Vespa ``GET /search/?yql=&query=&hits=``, answering
  ``{"root": {"children": [{"id", "fields": {...}}]}}``, with ``children`` omitted when
  nothing matches (as Vespa does).

Each engine serves one ranker of the demo's simulated world (:mod:`demo.world_rankers`),
so one experiment over the three finds the world's true best ranker.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from flask import Flask, jsonify, request
from helpers.wait import wait_for

from demo.run import Demo, DemoOptions
from demo.world_rankers import demo_world, ranker_name
from service.config import Config
from service.rankers.client import RankerClient, RankerFailure
from service.store.records import Ranker

SECRET = "s3cr3t-search-auth-7f1e2d9c"
ENV = "RANKDUEL_TEST_SEARCH_AUTH"
SEED = 3
N = 3  # one world ranker per engine


def engine_app(seed: int = SEED) -> Flask:
    """Engine-shaped endpoints over world rankers 0 (OpenSearch), 1 (Solr) and 2 (Vespa);
    every request is recorded in ``app.config["SEEN"]``."""
    world = demo_world(seed, N)
    app = Flask("engines")
    seen: list[dict] = []
    app.config["SEEN"] = seen
    lock = threading.Lock()

    def docs(n: int, text: str, k: int) -> list[str]:
        q = 0 if text == Config.probe_query else world.query_id(text)  # probed: query 0
        return [] if q is None or k < 1 else world.ranking(n, q, k)

    def record(**what):
        with lock:
            seen.append({"method": request.method, "path": request.path,
                         "args": request.args.to_dict(flat=False),
                         "headers": dict(request.headers), **what})

    @app.post("/os/products/_search")
    def opensearch():
        body = request.get_json()
        record(body=body)
        if request.headers.get("Authorization") != f"Bearer {SECRET}":
            return jsonify({"error": {"type": "security_exception"}, "status": 401}), 401
        hits = [{"_index": "products", "_id": d, "_score": round(1.0 / i, 4),
                 "_source": {"title": f"product {d}", "url": f"https://shop.example/p/{d}",
                             "price": 10 + i}}
                for i, d in enumerate(docs(0, body["query"]["match"]["title"], body["size"]),
                                      start=1)]
        return jsonify({"took": 1, "timed_out": False,
                        "hits": {"total": {"value": len(hits), "relation": "eq"},
                                 "max_score": hits[0]["_score"] if hits else None,
                                 "hits": hits}})

    @app.get("/solr/products/select")
    def solr():
        record()
        found = docs(1, request.args["q"], int(request.args.get("rows", 10)))
        return jsonify({"responseHeader": {"status": 0, "QTime": 1},
                        "response": {"numFound": len(found), "start": 0, "docs": [
                            {"id": d, "title": [f"product {d}"],
                             "url": f"https://shop.example/p/{d}"} for d in found]}})

    @app.get("/search/")
    def vespa():
        record()
        found = docs(2, request.args["query"], int(request.args.get("hits", 10)))
        root = {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": len(found)},
                "coverage": {"coverage": 100, "documents": 1000, "full": True}}
        if found:  # Vespa leaves "children" out when nothing matched
            root["children"] = [
                {"id": f"id:shop:product::{d}", "relevance": 1.0 / i, "source": "products",
                 "fields": {"sddocname": "product", "product_id": d,
                            "title": f"product {d}", "url": f"https://shop.example/p/{d}"}}
                for i, d in enumerate(found, start=1)]
        return jsonify({"root": root})

    return app


def called(entries: list[dict]) -> list[Ranker]:
    """The rankers of request bodies as the client takes them."""
    return [Ranker.from_json(e) for e in entries]


def templated_rankers(base: str) -> list[dict]:
    """The three rankers, each by its engine's template (as docs/integrating-rankers.md)."""
    return [
        {"name": ranker_name(0), "url": f"{base}/os/products/_search", "timeout_ms": 5000,
         "request": {"method": "POST", "params": {"preference": "{user}"},
                     "headers": {"Authorization": f"env:{ENV}"},
                     "body": {"size": "{k}", "query": {"match": {"title": "{q}"}}}},
         "response": {"results": "hits.hits", "id": "_id", "url": "_source.url",
                      "title": "_source.title", "fields": {"price": "_source.price"}}},
        {"name": ranker_name(1), "url": f"{base}/solr/products/select?wt=json",
         "timeout_ms": 5000,
         "request": {"params": {"q": "{q}", "rows": "{k}", "start": "{offset}"}},
         "response": {"results": "response.docs", "id": "id", "url": "url",
                      "title": "title.0"}},
        {"name": ranker_name(2), "url": f"{base}/search/", "timeout_ms": 5000,
         "request": {"params": {"yql": "select * from products where userQuery()",
                                "query": "{q}", "hits": "{k}", "offset": "{offset}"}},
         "response": {"results": "root.children", "id": "fields.product_id",
                      "url": "fields.url", "title": "fields.title"}},
    ]


@pytest.fixture(scope="module")
def engines():
    from demo.wsgi_server import ThreadedServer

    server = ThreadedServer(engine_app())
    yield server
    server.close()


@pytest.fixture
def secret_env(monkeypatch):
    """The header secret, in the environment of the API process (the app runs here)."""
    monkeypatch.setenv(ENV, f"Bearer {SECRET}")


def dump_redis(rd) -> bytes:
    """Every key and value of the state, as bytes."""
    out = []
    for key in rd.scan_iter(count=1000):
        kind = rd.type(key)
        out.append(key)
        if kind == b"string":
            out.append(rd.get(key) or b"")
        elif kind == b"hash":
            out.extend(b"%s=%s" % kv for kv in rd.hgetall(key).items())
        elif kind == b"list":
            out.extend(rd.lrange(key, 0, -1))
        elif kind == b"set":
            out.extend(rd.smembers(key))
        elif kind == b"zset":
            out.extend(m for m, _ in rd.zrange(key, 0, -1, withscores=True))
        elif kind == b"stream":
            out.extend(json.dumps(str(e)).encode() for e in rd.xrange(key))
    return b"\n".join(out)


# ---------------------------------------------------------------------- client level
def test_each_engine_shape_is_called_and_mapped(engines, secret_env):
    world = demo_world(SEED, N)
    text = world.query_text(0)
    client = RankerClient(max_workers=4)
    engines.server.app.config["SEEN"].clear()
    lists = client.fetch_all(called(templated_rankers(engines.url)), text, 4, observe=False,
                             user="u42")
    for n, res in enumerate(lists):
        assert not isinstance(res, RankerFailure), res
        assert [r["id"] for r in res] == world.ranking(n, 0, 4)
        assert res[0]["url"] == f"https://shop.example/p/{res[0]['id']}"
        assert res[0]["title"] == f"product {res[0]['id']}"
    assert lists[0][0]["price"] == 11  # a named field, passed through at the top level
    seen = {s["path"]: s for s in engines.server.app.config["SEEN"]}
    es = seen["/os/products/_search"]
    assert es["body"] == {"size": 4, "query": {"match": {"title": text}}}  # "{k}" -> 4
    assert es["args"] == {"preference": ["u42"]}
    assert es["headers"]["Content-Type"] == "application/json"
    solr = seen["/solr/products/select"]
    # the URL's own query string, then the template's params; no q/k appended
    assert solr["args"] == {"wt": ["json"], "q": [text], "rows": ["4"], "start": ["0"]}
    assert "k" not in seen["/search/"]["args"]


def test_user_text_is_inserted_verbatim_and_user_may_be_empty(engines, secret_env):
    client = RankerClient(max_workers=4)
    engines.server.app.config["SEEN"].clear()
    tricky = 'a {k} "b" {user} \\ {q}'
    [es, vespa] = client.fetch_all(called([templated_rankers(engines.url)[i] for i in (0, 2)]),
                                   tricky, 3, observe=False)
    assert es == [] and vespa == []  # an unknown query: no results (Vespa omits the list)
    seen = {s["path"]: s for s in engines.server.app.config["SEEN"]}
    assert seen["/os/products/_search"]["body"]["query"]["match"]["title"] == tricky
    assert seen["/os/products/_search"]["args"] == {"preference": [""]}
    assert seen["/search/"]["args"]["query"] == [tricky]


def test_an_answer_that_does_not_fit_is_a_bad_response_naming_the_path(engines, secret_env):
    client = RankerClient(max_workers=4)
    text = demo_world(SEED, N).query_text(1)
    es = templated_rankers(engines.url)[0]
    wrong_id = {**es, "response": {"results": "hits.hits", "id": "_source.sku"}}
    not_list = {**es, "response": {"results": "hits.total", "id": "_id"}}
    a, b = client.fetch_all(called([wrong_id, not_list]), text, 3, observe=False)
    assert isinstance(a, RankerFailure) and a.reason == "bad_response", a
    assert "'_source.sku'" in a.detail
    assert isinstance(b, RankerFailure) and b.reason == "bad_response", b
    assert "'hits.total'" in b.detail and "not a list" in b.detail


def test_a_secret_unset_at_request_time_fails_without_showing_values(engines, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    [res] = RankerClient(max_workers=1).fetch_all(called(templated_rankers(engines.url)[:1]),
                                                  "x", 3, observe=False)
    assert isinstance(res, RankerFailure) and res.reason == "missing_secret", res
    assert ENV in res.detail


# ---------------------------------------------------------------------- API level
def test_templates_are_validated_at_creation(client, engines, secret_env, monkeypatch):
    base = templated_rankers(engines.url)
    monkeypatch.delenv("RANKDUEL_TEST_UNSET", raising=False)
    cases = [
        ({**base[0], "request": {**base[0]["request"],
                                 "headers": {"Authorization": "env:RANKDUEL_TEST_UNSET"}}},
         "rankers[0].request.headers.Authorization", "RANKDUEL_TEST_UNSET is not set"),
        ({**base[1], "request": {"params": {"q": "{query}"}}},
         "rankers[0].request.params", "unknown placeholder {query}"),
        ({**base[1], "request": {"headers": {"X Bad": "1"}}},
         "rankers[0].request.headers.X Bad", "header name"),
        ({**base[1], "response": {"results": "response..docs", "id": "id"}},
         "rankers[0].response.results", "a dot path"),
        ({**base[1], "response": {"results": "response.docs"}},
         "rankers[0].response.id", "missing"),
        ({**base[1], "response": {"results": "a.", "id": "b"}},
         "rankers[0].response.results", "a dot path"),
    ]
    for ranker, field, words in cases:
        status, body = client.request("POST", "/experiments", {
            "name": "bad template", "rankers": [ranker, base[2]], "algorithm": "uniform",
            "interleaving": "team_draft", "probe": False}, admin=True)
        assert status == 422, (field, status, body)
        assert field in body["error"] and words in body["error"], (field, body)


def test_the_allow_list_applies_to_templated_urls(client, secret_env):
    ranker = {**templated_rankers("http://10.1.2.3:9200")[0]}
    status, body = client.request("POST", "/experiments", {
        "name": "private", "rankers": [ranker, {**ranker, "name": "other"}],
        "algorithm": "uniform", "interleaving": "team_draft", "probe": False}, admin=True)
    assert status == 422 and "rankers[0].url" in body["error"], body


def test_the_probe_uses_the_template(client, engines, secret_env):
    rankers = templated_rankers(engines.url)
    status, body = client.request("POST", "/experiments", {
        "name": "probe", "rankers": rankers[:2], "algorithm": "uniform",
        "interleaving": "team_draft"}, admin=True)
    # the OpenSearch ranker answering results proves the template (POST, secret) was used
    assert status == 201, body
    broken = {**rankers[1], "response": {"results": "response.docs", "id": "missing_id"}}
    status, body = client.request("POST", "/experiments", {
        "name": "probe", "rankers": [rankers[0], broken], "algorithm": "uniform",
        "interleaving": "team_draft"}, admin=True)
    assert status == 422 and "r01 (bad_response: result 0" in body["error"], body
    assert "missing_id" in body["error"] and "the engine answered: " in body["error"], body


def test_three_engines_in_one_experiment(client, engines, worker, rd, api, secret_env):
    """Templated rankers of the three engine shapes in one experiment: the true best
    ranker is found, W equals the decisive impressions, there are no 5xx, and the
    secret appears nowhere in the state or the audit log."""
    worker.ensure()
    opts = DemoOptions(rankers=N, seed=SEED, algorithm="mergedts", concurrency=4, quiet=True)
    demo = Demo(opts)
    world = demo.world
    exp = client.create_experiment(name="three engines", rankers=templated_rankers(engines.url),
                                   algorithm=opts.algorithm, interleaving=opts.interleaving,
                                   seed=SEED)
    demo.send(client, exp["id"], 0, 400, np.eye(N) * 0 + 0.5, world.true_best)
    assert demo.tally.errors == 0, demo.tally  # every search, click and end answered 2xx
    state = wait_for(lambda: (s := client.experiment(exp["id"]))["counters"].get(
        "credited", 0) >= s["counters"]["impressions"] and s, timeout=90, what="credit")
    c = state["counters"]
    # MergeDTS stops duelling once it has eliminated the two losers, so how many of the
    # 400 searches are duels depends on how soon credit reaches W (99-240 seen on one
    # machine): > 50 duels is enough for every engine's template to be compared
    assert c["impressions"] == 400 and c.get("duel", 0) > 50, c
    assert np.array(state["W"]).sum() == c["decisive"] == state["comparisons"] > 50
    assert state["champion"] == ranker_name(world.true_best), (state["champion"], state["W"])
    assert [r["request"]["headers"]["Authorization"] for r in state["rankers"][:1]] == [
        f"env:{ENV}"]
    # the secret is nowhere: not in the state, the audit log, the metrics or the Redis keys
    status, audit = client.request("GET", f"/experiments/{exp['id']}/audit", admin=True)
    assert status == 200
    status, metrics_text = client.request("GET", "/metrics")
    for text in (json.dumps(state), json.dumps(audit), str(metrics_text)):
        assert SECRET not in text
    assert SECRET.encode() not in dump_redis(rd)
