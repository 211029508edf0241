"""Every bad input gets its status and a message; operator endpoints need the token.

These run against the app on a real port with a real Redis; no worker is needed except
where a test says so.
"""

from __future__ import annotations

import json
import time

import pytest
from helpers.api import rankers_for
from test_workers_credit import ikey

from service.tokens import issue_token

SECRET = "test-secret-key-0123456789"


@pytest.fixture
def exp(client, ranker_server):
    return client.create_experiment(name="api", rankers=rankers_for(ranker_server, "good", "bad"),
                                    algorithm="uniform", interleaving="team_draft", seed=3)


def assert_error(status_body, status, *fragments):
    got, body = status_body
    assert got == status, body
    assert isinstance(body, dict) and isinstance(body.get("error"), str), body
    for f in fragments:
        assert f in body["error"], body["error"]


# ---------------------------------------------------------------------- operator auth
OPERATOR_CALLS = [
    ("GET", "/experiments", None),
    ("POST", "/experiments", {"name": "x"}),
    ("GET", "/experiments/EXP", None),
    ("PATCH", "/experiments/EXP", {"name": "y"}),
    ("POST", "/experiments/EXP/rankers", {"name": "n", "url": "http://127.0.0.1:1/"}),
    ("DELETE", "/experiments/EXP/rankers/good", None),
    ("POST", "/experiments/EXP/pause", None),
    ("POST", "/experiments/EXP/resume", None),
    ("POST", "/experiments/EXP/stop", None),
    ("GET", "/experiments/EXP/audit", None),
]


@pytest.mark.parametrize("method,path,body", OPERATOR_CALLS)
def test_operator_endpoints_refuse_missing_or_wrong_token(client, exp, method, path, body):
    path = path.replace("EXP", exp["id"])
    st = client.request(method, path, body)
    assert_error(st, 401, "missing")
    for header in ("Bearer wrong-token", "Basic dXNlcjpwYXNz", "Bearer", "test-admin-token"):
        st = client.request(method, path, body, headers={"Authorization": header})
        assert_error(st, 401)
    # nothing changed: the experiment is still running with both rankers active
    state = client.experiment(exp["id"])
    assert state["lifecycle"] == "running"
    assert [r["status"] for r in state["rankers"]] == ["active", "active"]


# ---------------------------------------------------------------------- create
def test_create_rejects_bad_bodies(client, ranker_server):
    good = {"name": "e", "rankers": rankers_for(ranker_server, "good", "bad"),
            "algorithm": "uniform", "interleaving": "team_draft"}

    def post(body=None, raw=None):
        return client.request("POST", "/experiments", body, raw=raw, admin=True)

    assert_error(post(raw=b"{not json"), 400, "JSON object")
    assert_error(post(body=[1, 2]), 400, "JSON object")
    cases = [
        ({"name": None}, "missing field 'name'"),
        ({"name": 5}, "'name' must be a string"),
        ({"algorithm": "nope"}, "unknown algorithm 'nope'"),
        ({"interleaving": "zigzag"}, "unknown interleaving method 'zigzag'"),
        ({"params": {"bogus": 1}}, "invalid params for uniform"),
        ({"params": [1]}, "'params' must be an object"),
        ({"rankers": rankers_for(ranker_server, "good")}, "'rankers' must have at least 2 items"),
        ({"rankers": rankers_for(ranker_server, "good", "good")}, "unique"),
        ({"rankers": [{"name": "a", "url": "ftp://x/"}, {"name": "b", "url": "http://x/"}]},
         "rankers[0].url"),
        ({"rankers": [{"name": "a b", "url": "http://x/"}, {"name": "b", "url": "http://x/"}]},
         "rankers[0].name"),
        ({"rankers": [{"name": "a", "url": "http://x/", "timeout_ms": 0},
                      {"name": "b", "url": "http://x/"}]}, "timeout_ms"),
        ({"rankers": [{"name": "a", "url": "http://x/", "weight": 2},
                      {"name": "b", "url": "http://x/"}]}, "unknown field 'rankers[0].weight'"),
        ({"seed": -1}, "seed"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ]
    for change, message in cases:
        body = {**good, **change}
        body = {k: v for k, v in body.items() if v is not None}
        assert_error(post(body=body), 422, message)
    status, created = post(body=good)
    assert status == 201 and created["lifecycle"] == "running"


def test_definition_is_immutable(client, exp):
    for change in ({"algorithm": "rucb"}, {"params": {"alpha": 1}},
                   {"interleaving": "probabilistic"}, {"rankers": []}):
        st = client.request("PATCH", f"/experiments/{exp['id']}", change, admin=True)
        assert_error(st, 409, "cannot change")
    status, body = client.request("PATCH", f"/experiments/{exp['id']}", {"name": "renamed"},
                                  admin=True)
    assert status == 200 and body["name"] == "renamed"
    assert body["algorithm"] == "uniform" and body["interleaving"] == "team_draft"
    assert_error(client.request("PATCH", f"/experiments/{exp['id']}", {"name": ""},
                                admin=True), 422, "name")


def test_unknown_experiment_is_404_everywhere(client):
    for method, path, body in OPERATOR_CALLS[2:]:
        st = client.request(method, path.replace("EXP", "nope"), body, admin=True)
        assert_error(st, 404, "nope")
    assert_error(client.request("GET", "/search?experiment=nope&q=x"), 404, "no experiment")


# ---------------------------------------------------------------------- search
def test_search_rejects_bad_parameters(client, exp):
    e = exp["id"]
    assert_error(client.request("GET", "/search?q=x"), 400, "experiment")
    assert_error(client.request("GET", f"/search?experiment={e}"), 400, "'q'")
    for k in ("0", "abc", "101", "1.5", "-3"):
        assert_error(client.request("GET", f"/search?experiment={e}&q=x&k={k}"), 400, "k ")
    long_q = "x" * 1001
    assert_error(client.request("GET", f"/search?experiment={e}&q={long_q}"), 400, "longer")
    status, page = client.request("GET", f"/search?experiment={e}&q=lake&k=3&user=u1")
    assert status == 200 and len(page["results"]) == 3


def test_same_user_and_query_see_the_same_list(client, exp):
    a = client.search(exp["id"], "red kayak", k=8, user="u42")
    b = client.search(exp["id"], "red kayak", k=8, user="u42")
    if sorted(a["rankers"]) == sorted(b["rankers"]):
        assert [r["id"] for r in a["results"]] == [r["id"] for r in b["results"]]
    assert a["impression_id"] != b["impression_id"]


def test_one_ranker_failing_serves_the_other_without_duel(client, ranker_server, rd):
    for bad in ("broken", "garbage", "slow"):
        e = client.create_experiment(
            name=f"fail-{bad}", rankers=rankers_for(ranker_server, "good", bad, timeout_ms=300),
            algorithm="uniform", interleaving="team_draft", probe=False)
        t0 = time.monotonic()
        page = client.search(e["id"], "q", k=5)
        elapsed = time.monotonic() - t0
        # the user got the healthy ranker's list as is
        assert page["rankers"] == ["good"]
        assert [r["id"] for r in page["results"]] == ["d00", "d01", "d02", "d03", "d04"]
        if bad == "slow":  # answered at the 300 ms deadline, not after the 1.5 s sleep
            assert elapsed < 1.4
        counters = client.experiment(e["id"])["counters"]
        assert counters["fallback"] == 1 and counters["impressions"] == 1
        assert counters.get("duel", 0) == 0
        assert rd.hget(ikey(page["impression_id"]), "duel") == b"0"
        # ... and the failing ranker forfeited the duel: a loss, credited by the worker;
        # not one whose answer came but could not be read (a broken integration is no
        # loser: service.search.degraded)
        forfeits = [] if bad == "garbage" else [[0, 1]]
        assert json.loads(rd.hget(ikey(page["impression_id"]), "forfeits")) == forfeits


def test_every_ranker_failing_is_502(client, ranker_server):
    e = client.create_experiment(name="dead", rankers=rankers_for(ranker_server, "broken",
                                                                  "garbage"),
                                 algorithm="uniform", interleaving="team_draft", probe=False)
    status, body = client.request("GET", f"/search?experiment={e['id']}&q=x")
    assert_error((status, body), 502, "no ranker", "could answer")
    # the client learns nothing of the upstream errors (no port-probe oracle)
    assert "500" not in body["error"] and "broken" not in body["error"]


# ---------------------------------------------------------------------- clicks and end
def test_click_validation(client, exp, api):
    page = client.search(exp["id"], "q", k=4)
    imp = page["impression_id"]
    first = page["results"][0]["id"]

    def clicks(body=None, raw=None):
        return client.request("POST", "/clicks", body, raw=raw)

    base = {"impression_id": imp, "token": page["token"]}
    assert_error(clicks(raw=b"nope"), 400, "JSON object")
    assert_error(clicks(raw=b"[" + b"1," * 600_000 + b"1]"), 413)
    assert_error(clicks({"token": page["token"], "clicks": [{"id": first, "rank": 1}]}), 400,
                 "impression_id")
    assert_error(clicks({**base, "clicks": []}), 400, "'clicks' must have at least 1 item")
    assert_error(clicks({**base, "clicks": [{"rank": 1}]}), 400, "clicks[0]")
    assert_error(clicks({**base, "clicks": [{"id": first, "rank": "1"}]}), 422, "rank")
    assert_error(clicks({**base, "clicks": [{"id": first}]*101}), 400, "at most")
    one = [{"id": first, "rank": 1}]
    assert_error(clicks({"impression_id": imp, "clicks": one}), 403, "missing token")
    assert_error(clicks({"impression_id": imp, "token": "123.abc", "clicks": one}), 403)
    forged = issue_token(b"not-the-secret", imp, exp["id"], int(time.time()) + 600)
    assert_error(clicks({"impression_id": imp, "token": forged, "clicks": one}), 403, "invalid")
    expired = issue_token(SECRET.encode(), imp, exp["id"], int(time.time()) - 1)
    assert_error(clicks({"impression_id": imp, "token": expired, "clicks": one}), 403, "expired")
    other = client.search(exp["id"], "q", k=4)
    assert_error(clicks({"impression_id": imp, "token": other["token"], "clicks": one}), 403)
    assert_error(clicks({"impression_id": "0" * 24, "token": page["token"], "clicks": one}),
                 404, "no impression")
    assert_error(clicks({**base, "clicks": [{"id": "not-shown", "rank": 1}]}), 422,
                 "was not shown")
    assert_error(clicks({**base, "clicks": [{"id": first, "rank": 3}]}), 422, "rank 1, not 3")
    status, out = clicks({**base, "clicks": one + one})
    assert status == 202 and out["accepted"] == 1 and out["duplicates"] == 1


def test_end_validation_and_clicks_after_end(client, exp):
    page = client.search(exp["id"], "q", k=4)
    imp = page["impression_id"]
    assert_error(client.request("POST", "/impressions/" + "f" * 24 + "/end"), 404)
    forged = issue_token(b"nope", imp, exp["id"], int(time.time()) + 600)
    assert_error(client.request("POST", f"/impressions/{imp}/end", {"token": forged}), 403)
    status, out = client.request("POST", f"/impressions/{imp}/end", {"token": page["token"]})
    assert status == 202 and out["already_closed"] is False
    status, out = client.request("POST", f"/impressions/{imp}/end")
    assert status == 202 and out["already_closed"] is True
    st = client.request("POST", "/clicks", {"impression_id": imp, "token": page["token"],
                                           "clicks": [{"id": page["results"][0]["id"],
                                                       "rank": 1}]})
    assert_error(st, 409, "closed")


# ---------------------------------------------------------------------- lifecycle, rankers
def test_lifecycle_transitions_and_paused_traffic(client, exp):
    e = exp["id"]

    def act(action):
        return client.request("POST", f"/experiments/{e}/{action}", admin=True)

    assert_error(act("resume"), 409, "it is running")
    assert act("pause")[0] == 200
    assert_error(act("pause"), 409, "it is paused")
    champion = client.experiment(e)["champion"]
    for _ in range(5):  # paused: the champion alone, no duel
        page = client.search(e, "q", k=5)
        assert page["rankers"] == [champion]
    assert act("resume")[0] == 200
    assert act("stop")[0] == 200
    assert_error(act("resume"), 409, "it is stopped")
    assert client.search(e, "q", k=5)["rankers"] == [champion]
    assert_error(client.request("POST", f"/experiments/{e}/rankers",
                                {"name": "late", "url": "http://127.0.0.1:9/"}, admin=True),
                 409, "stopped")
    actions = [a["action"] for a in client.audit(e)]
    assert actions == ["created", "pause", "resume", "stop"]


def test_ranker_management_errors(client, exp, ranker_server):
    e = exp["id"]
    add = {"name": "good", "url": f"{ranker_server.url}/r/mid"}
    assert_error(client.request("POST", f"/experiments/{e}/rankers", add, admin=True), 409,
                 "already has")
    assert_error(client.request("POST", f"/experiments/{e}/rankers", {"name": "x"}, admin=True),
                 422, "url")
    assert_error(client.request("DELETE", f"/experiments/{e}/rankers/ghost", admin=True), 404,
                 "ghost")
    assert client.request("DELETE", f"/experiments/{e}/rankers/bad", admin=True)[0] == 200
    assert_error(client.request("DELETE", f"/experiments/{e}/rankers/bad", admin=True), 409,
                 "already retired")
    assert_error(client.request("DELETE", f"/experiments/{e}/rankers/good", admin=True), 409,
                 "last active")
    # one active ranker left: served alone, no duel
    assert client.search(e, "q")["rankers"] == ["good"]


# ---------------------------------------------------------------------- health and docs
def test_health_metrics_and_unknown_routes(client, api):
    assert client.request("GET", "/healthz") == (200, {"status": "ok"})
    assert client.request("GET", "/readyz") == (200, {"status": "ready"})
    assert_error(client.request("GET", "/nowhere"), 404, "no such endpoint")
    assert_error(client.request("DELETE", "/search"), 405, "not allowed")
    assert client.request("GET", "/metrics")[0] == 401  # never public
    status, text = client.request("GET", "/metrics", admin=True)
    assert status == 200 and "rankduel_http_requests_total" in text


def test_openapi_documents_every_route(client, api):
    from service.app import create_app

    status, doc = client.request("GET", "/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    app = create_app(api.config)
    documented = set()
    for path, ops in doc["paths"].items():
        for method in ops:
            documented.add((path, method.upper()))
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = rule.rule.replace("<", "{").replace(">", "}")
        path = path.replace("{any(pause, resume, stop):action}", "{action}")
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (path, method) in documented, (path, method)
