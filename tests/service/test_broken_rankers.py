"""A broken ranker is never a loser, and its failures are said where an operator looks.

* At creation the probe refuses (422) a ranker whose answer holds no results (a results
  path with a typo), naming the path and what the answer held, unless it says
  ``"allow_empty": true``; a non-200 answer shows the engine's body, secrets redacted.
* Live, a ranker answering no results while its opponent answers is left out of the
  comparison (no forfeit, no outcome), marked ``degraded`` within 50 searches (state,
  audit, metrics), out of selection, and restored once a probe answers results.
* This process's allow-list refusing a ranker is not the ranker's failure: no strike,
  and the search's 502 and the log say which setting to fix.
* Ranker failures reach a real API process's log, rate-limited, with no secret.

The rankers are loopback HTTP servers answering in an engine's shape.
"""

from __future__ import annotations

import logging
import re
import threading

import numpy as np
import pytest
from flask import Flask, jsonify, request
from helpers.api import rankers_for
from helpers.wait import wait_for
from test_service_api import assert_error

from demo.client import Client
from demo.stack import free_port, wait_until
from demo.wsgi_server import ThreadedServer
from service.app import create_app

SECRET = "tok-9f8e7d6c5b4a-secret"
ENV = "RANKDUEL_TEST_BROKEN_AUTH"


def engine_app() -> Flask:
    """``/solr``: Solr's shape (``response.docs``); ``/es401``: Elasticsearch refusing the
    credentials, its body quoting them; ``/empty``: ``{"results": []}``; ``/toggle``:
    empty until ``app.config["FIXED"]`` is set, then results."""
    app = Flask("broken-engines")
    app.config["FIXED"] = False
    docs = [{"id": f"d{i:02d}", "title": f"doc {i}"} for i in range(10)]

    @app.get("/solr")
    def solr():
        return jsonify({"responseHeader": {"status": 0},
                        "response": {"numFound": 10, "docs": docs}})

    @app.get("/es401")
    def es401():
        auth = request.headers.get("Authorization", "")
        return jsonify({"error": {"type": "security_exception",
                                  "reason": f"unable to authenticate with [{auth}]"},
                        "status": 401, "api_key": "k-55aa66bb77cc"}), 401

    @app.get("/empty")
    def empty():
        return jsonify({"results": []})

    @app.get("/toggle")
    def toggle():
        return jsonify({"results": docs if app.config["FIXED"] else []})

    return app


@pytest.fixture(scope="module")
def engines():
    server = ThreadedServer(engine_app())
    yield server
    server.close()


@pytest.fixture
def app_with(api):
    """A second app on the session's Redis with some settings changed."""
    servers: list[ThreadedServer] = []

    def start(**changes) -> Client:
        from conftest import ADMIN

        server = ThreadedServer(create_app(api.config.replace(**changes)))
        servers.append(server)
        return Client(server.url, ADMIN)

    yield start
    for s in servers:
        s.close()


def typo(engines) -> dict:
    """A Solr ranker whose results path has a typo (``documents`` for ``docs``)."""
    return {"name": "typo", "url": f"{engines.url}/solr", "timeout_ms": 2000,
            "response": {"results": "response.documents", "id": "id"}}


def create(client: Client, rankers: list[dict], **body) -> tuple[int, dict]:
    return client.request("POST", "/experiments", {
        "name": "broken", "rankers": rankers, "algorithm": "uniform",
        "interleaving": "team_draft", **body}, admin=True)


# ---------------------------------------------------------------------- at creation
def test_a_results_path_typo_is_refused_at_creation_naming_what_the_answer_held(
        client, engines, ranker_server):
    status, body = create(client, [*rankers_for(ranker_server, "good"), typo(engines)])
    assert_error((status, body), 422, "typo (no_results",
                 'results path "response.documents" is absent',
                 '"response" is an object with keys "docs", "numFound"',
                 '"allow_empty": true')
    # the same path fixed is accepted
    fixed = {**typo(engines), "response": {"results": "response.docs", "id": "id"}}
    status, body = create(client, [*rankers_for(ranker_server, "good"), fixed])
    assert status == 201, body


def test_an_empty_answer_is_refused_unless_the_ranker_allows_it(client, engines,
                                                                ranker_server):
    empty = {"name": "empty", "url": f"{engines.url}/empty", "timeout_ms": 2000}
    status, body = create(client, [*rankers_for(ranker_server, "good"), empty])
    assert_error((status, body), 422, "empty (no_results", 'results path "results" is an '
                 "empty list", "RANKDUEL_PROBE_QUERY")
    status, body = create(client, [*rankers_for(ranker_server, "good"),
                                   {**empty, "allow_empty": True}])
    assert status == 201, body
    # the field is the ranker's, also when one is added mid-run; it is not stored
    exp = body["id"]
    status, body = client.request("POST", f"/experiments/{exp}/rankers",
                                  {**empty, "name": "empty2"}, admin=True)
    assert_error((status, body), 422, "empty2 (no_results")
    status, body = client.request("POST", f"/experiments/{exp}/rankers",
                                  {**empty, "name": "empty2", "allow_empty": True}, admin=True)
    assert status == 201, body
    assert all("allow_empty" not in r for r in client.experiment(exp)["rankers"])


def test_a_probe_failure_shows_the_engines_answer_with_secrets_redacted(
        client, engines, ranker_server, monkeypatch):
    monkeypatch.setenv(ENV, f"Bearer {SECRET}")
    es = {"name": "es", "url": f"{engines.url}/es401", "timeout_ms": 2000,
          "request": {"headers": {"Authorization": f"env:{ENV}"}},
          "response": {"results": "hits.hits", "id": "_id"}}
    status, body = create(client, [*rankers_for(ranker_server, "good"), es])
    assert_error((status, body), 422, "es (http_401: HTTP 401; the engine answered: ",
                 "security_exception", "unable to authenticate")
    assert SECRET not in body["error"] and "k-55aa66bb77cc" not in body["error"], body
    assert "[redacted]" in body["error"], body


# ---------------------------------------------------------------------- live
def _search_and_click(client: Client, exp: str, n: int) -> list[dict]:
    """``n`` searches, each with a click on its first result, then ended."""
    pages = []
    for i in range(n):
        page = client.search(exp, f"q{i}", k=5)
        pages.append(page)
        if page["results"]:
            client.click(page, [(page["results"][0]["id"], 1)])
        client.end(page)
    return pages


def test_a_ranker_answering_nothing_is_degraded_and_never_a_loser(
        client, engines, ranker_server, worker, rd):
    """A results-path typo added with ``"probe": false``: degraded ("no results") within
    50 searches; the searches serve the good ranker alone (no forfeit, no outcome), so W
    holds no win of anyone over it and no ranker is eliminated by virtue of it, with a
    policy that eliminates fast (MergeDTS, as test_live_fidelity)."""
    worker.ensure()
    status, body = client.request("POST", "/experiments", {
        "name": "typo live", "algorithm": "mergedts", "interleaving": "team_draft",
        "seed": 3, "params": {"alpha": 0.6, "c": 1.0, "batch_size": 4}, "probe": False,
        "rankers": [*rankers_for(ranker_server, "good", timeout_ms=5000), typo(engines)]},
        admin=True)
    assert status == 201, body
    exp = body["id"]
    pages = _search_and_click(client, exp, 50)
    # never a duel with it: the good ranker served alone (or, were the pair (typo, typo)
    # chosen, its empty list alone, nothing to click)
    assert all(p["rankers"] == ["good"] or (p["rankers"] == ["typo"] and not p["results"])
               for p in pages), [p["rankers"] for p in pages]
    assert sum(p["rankers"] == ["good"] for p in pages) >= 20
    state = client.experiment(exp)
    broken = next(r for r in state["rankers"] if r["name"] == "typo")
    assert broken["health"]["degraded"] == "no results", broken
    assert broken["status"] == "active" and broken["eliminated"] is None, broken
    # degraded: no longer chosen (its probe is RANKDUEL_RANKER_QUARANTINE_S away)
    more = _search_and_click(client, exp, 10)
    assert all(p["rankers"] == ["good"] for p in more)
    state = wait_for(lambda: (s := client.experiment(exp))["counters"].get(
        "credited", 0) >= s["counters"]["impressions"] and s, timeout=90, what="credit")
    W = np.array(state["W"])
    arm = state["arms"].index("typo")
    assert W[:, arm].sum() == 0 and W[arm].sum() == 0, W  # no win over it, none of it
    assert state["counters"].get("forfeits", 0) == 0, state["counters"]
    assert all(r["eliminated"] is None for r in state["rankers"]), state["rankers"]
    degraded = [a for a in client.audit(exp) if a["action"] == "ranker_degraded"]
    assert len(degraded) == 1 and degraded[0]["ranker"] == "typo", degraded
    assert degraded[0]["reason"] == "no results" and degraded[0]["answers"] <= 50
    status, text = client.request("GET", "/metrics", admin=True)
    assert status == 200
    assert re.search(rf'rankduel_ranker_degraded{{experiment="{exp}",ranker="typo"}} 1\.0',
                     text), [ln for ln in text.splitlines() if "degraded" in ln]
    assert re.search(rf'rankduel_ranker_degraded{{experiment="{exp}",ranker="good"}} 0\.0',
                     text)
    status, report = client.request("GET", f"/experiments/{exp}/report", admin=True)
    assert status == 200 and report["degraded"] == [{"name": "typo", "reason": "no results"}]
    assert [r["degraded"] for r in report["rankers"]] == [None, "no results"], report
    assert "ranker_degraded" in [e["event"] for e in report["timeline"]]


def test_a_degraded_ranker_comes_back_when_its_probe_answers_results(
        app_with, engines, ranker_server):
    quick = app_with(ranker_quarantine_s=0.3)
    engines.server.app.config["FIXED"] = False
    toggle = {"name": "toggle", "url": f"{engines.url}/toggle", "timeout_ms": 5000}
    status, body = create(quick, [*rankers_for(ranker_server, "good", timeout_ms=5000), toggle],
                          probe=False)
    assert status == 201, body
    exp = body["id"]

    def health() -> dict:
        state = quick.experiment(exp)
        return next(r for r in state["rankers"] if r["name"] == "toggle")["health"]

    for i in range(50):
        quick.search(exp, f"q{i}", k=5)
        if health()["degraded"]:
            break
    assert health()["degraded"] == "no results"
    engines.server.app.config["FIXED"] = True
    try:
        def restored() -> bool:
            quick.search(exp, "again", k=5)
            return health()["degraded"] is None

        wait_until(restored, 20, "the degraded ranker restored by a probe")
        # back in comparisons: a duel with it is served again
        wait_until(lambda: quick.search(exp, "duel", k=5)["rankers"] == ["good", "toggle"],
                   20, "a duel with the restored ranker")
    finally:
        engines.server.app.config["FIXED"] = False
    actions = [a["action"] for a in quick.audit(exp)]
    assert actions.count("ranker_degraded") == 1 and "ranker_restored" in actions, actions


# ---------------------------------------------------------------------- allow-list
def test_an_allow_list_refusal_is_this_processs_configuration(app_with, ranker_server, rd,
                                                             caplog):
    """The experiment made by a process that allows loopback; searched through one that
    does not (two apps, one Redis): a 502 naming the setting, no failure counted against
    the rankers in the shared state, and one log line per ranker naming the address and
    the setting, however many searches."""
    maker = app_with(ranker_allow="127.0.0.1")
    exp = maker.create_experiment(name="allow", algorithm="uniform", interleaving="team_draft",
                                  rankers=rankers_for(ranker_server, "good", "bad"))["id"]
    strict = app_with(ranker_allow="")
    with caplog.at_level(logging.WARNING, logger="rankduel.rankers"):
        for _ in range(20):
            status, body = strict.request("GET", f"/search?experiment={exp}&q=x")
            assert_error((status, body), 502, "allow-list", "RANKDUEL_RANKER_ALLOW")
    assert not rd.hgetall(f"rd:{{{exp}}}:health")  # no strike, no quarantine
    lines = [r.getMessage() for r in caplog.records if r.name == "rankduel.rankers"]
    assert len(lines) == 2, lines  # one per ranker, not one per search
    for line in lines:
        assert f"experiment {exp}" in line and "allow-list refused" in line, line
        assert "RANKDUEL_RANKER_ALLOW" in line and "127.0.0.1" in line, line
    # the process that allows them still serves them
    assert maker.search(exp, "x", k=3)["results"]


# ---------------------------------------------------------------------- the API's log
@pytest.mark.starts_process  # rankduel serve, as an operator runs it
def test_ranker_failures_reach_the_api_log_rate_limited_and_redacted(
        stack, service_env, ranker_server, tmp_path):
    port = free_port()
    dead = free_port()  # nothing listens: connection refused
    # its own metrics folder: serve empties the one it is given (the worker's is shared)
    env = {**service_env, "RANKDUEL_RANKER_QUARANTINE_S": "60",
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom")}
    api = stack.start_api(env, bind=f"127.0.0.1:{port}", workers=1, name="api-ranker-log")
    from conftest import ADMIN

    c = Client(f"http://127.0.0.1:{port}", ADMIN)
    exp = c.create_experiment(
        name="log", algorithm="uniform", interleaving="team_draft", probe=False,
        rankers=[*rankers_for(ranker_server, "good"),
                 {"name": "dead", "url": f"http://127.0.0.1:{dead}/r?api_key=hunter2pass",
                  "timeout_ms": 300}])["id"]
    threads = [threading.Thread(target=lambda: [c.search(exp, f"q{i}", k=3)
                                                 for i in range(25)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    def lines() -> list[str]:
        return [ln for ln in api.log_path.read_text(errors="replace").splitlines()
                if "rankduel.rankers" in ln or f"experiment {exp} ranker dead" in ln]

    wait_until(lambda: any("quarantined" in ln for ln in lines()), 20, "the quarantine line")
    got = lines()
    assert any("WARNING" in ln and "failed: connection" in ln for ln in got), got
    assert any("quarantined for 60 s after 5 consecutive failures" in ln for ln in got), got
    # 100 searches, at most a few lines a ranker: the first failure, the state change (on
    # a starved machine the good ranker may time out too: its lines are limited alike)
    dead_lines = [ln for ln in got if f"experiment {exp} ranker dead" in ln]
    assert 2 <= len(dead_lines) <= 4, got
    assert len(got) - len(dead_lines) <= 4, got
    text = "\n".join(got)
    assert "hunter2pass" not in text and "api_key=[redacted]" in text, got
    api.stop()
