"""Hardening at the door (issue 11): inputs that used to answer 500, or gunicorn's HTML,
now get a 4xx with a JSON message.

Against the app on a real port with a real Redis; the request-line test runs the real
``rankduel serve`` (gunicorn).
"""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import quote

import pytest
from helpers.api import rankers_for
from test_service_api import assert_error

from service.tokens import issue_token

SECRET = "test-secret-key-0123456789"


@pytest.fixture
def exp(client, ranker_server):
    return client.create_experiment(
        name="door", rankers=rankers_for(ranker_server, "good", "bad"), algorithm="uniform",
        interleaving="team_draft", seed=5)


def json_endpoints(exp_id: str) -> list[tuple[str, str, bool]]:
    """Every operation that reads a JSON body: (method, path, operator)."""
    return [
        ("POST", "/clicks", False),
        ("POST", "/impressions/" + "a" * 24 + "/end", False),
        ("POST", "/experiments", True),
        ("PATCH", f"/experiments/{exp_id}", True),
        ("POST", f"/experiments/{exp_id}/rankers", True),
    ]


@pytest.mark.parametrize("depth", [33, 1000, 100_000])
def test_deeply_nested_json_is_400_everywhere(client, exp, depth):
    raw = b'{"x": ' + b"[" * depth + b"]" * depth + b"}"
    for method, path, admin in json_endpoints(exp["id"]):
        st = client.request(method, path, raw=raw, admin=admin,
                            headers={"Content-Type": "application/json"})
        assert_error(st, 400, "nested deeper than 32 levels")


def test_nesting_within_the_limit_is_parsed(client, exp):
    # 31 levels inside the body object: parsed, then refused for its content only
    raw = b'{"impression_id": "x", "clicks": [{"id": "d", "rank": 1, "deep": ' + \
        b"[" * 29 + b"]" * 29 + b"}]}"
    assert_error(client.request("POST", "/clicks", raw=raw), 404, "no impression")


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_json_nan_and_infinity_are_refused_at_the_door(client, exp, ranker_server, constant):
    page = client.search(exp["id"], "q", k=3)
    bodies = {
        "/clicks": b'{"impression_id": "%s", "token": "%s", "clicks": [{"id": "d00", '
                   b'"rank": %s}]}' % (page["impression_id"].encode(), page["token"].encode(),
                                       constant),
        "/end": b'{"token": "%s", "extra": %s}' % (page["token"].encode(), constant),
        "/experiments": json.dumps({
            "name": "nan", "rankers": rankers_for(ranker_server, "good", "bad"),
            "algorithm": "self_sparring", "interleaving": "team_draft",
            "params": {"eta": 1.5}}).replace("1.5", constant.decode()).encode(),
        "PATCH": b'{"name": %s}' % constant,
        "rankers": b'{"name": "n", "url": "http://127.0.0.1:9/", "timeout_ms": %s}' % constant,
    }
    for (method, path, admin), raw in zip(json_endpoints(exp["id"]), bodies.values(),
                                          strict=True):
        if path.endswith("/end"):
            path = f"/impressions/{page['impression_id']}/end"
        st = client.request(method, path, raw=raw, admin=admin)
        assert_error(st, 400, f"{constant.decode()} is not a JSON number")
    # nothing was recorded or created
    assert client.request("POST", f"/impressions/{page['impression_id']}/end")[1][
        "already_closed"] is False


def test_body_that_is_not_utf8_is_400(client):
    st = client.request("POST", "/clicks", raw=b'{"impression_id": "\xff"}')
    assert_error(st, 400, "UTF-8")


def test_the_documented_body_limit_is_the_apps(api):
    from service.api.validation import MAX_BODY_BYTES
    from service.app import create_app

    assert create_app(api.config).config["MAX_CONTENT_LENGTH"] == MAX_BODY_BYTES


# ---------------------------------------------------------------------- click tokens
@pytest.mark.parametrize("expiry", ["²", "٣" * 3, "1" * 4301, "9" * 13, "+1", " 1", "1_0", ""])
def test_token_expiry_must_be_a_few_ascii_digits(client, exp, expiry):
    page = client.search(exp["id"], "q", k=3)
    imp = page["impression_id"]
    mac = page["token"].partition(".")[2]
    one = [{"id": page["results"][0]["id"], "rank": 1}]
    st = client.request("POST", "/clicks", {"impression_id": imp, "token": f"{expiry}.{mac}",
                                           "clicks": one})
    assert_error(st, 403, "malformed token")
    st = client.request("POST", f"/impressions/{imp}/end", {"token": f"{expiry}.{mac}"})
    assert_error(st, 403, "malformed token")


def test_a_valid_twelve_digit_expiry_still_works(client, exp):
    page = client.search(exp["id"], "q", k=3)
    far = issue_token(SECRET.encode(), page["impression_id"], exp["id"], 10**11)
    st = client.request("POST", "/clicks", {"impression_id": page["impression_id"],
                                           "token": far, "clicks": [
                                               {"id": page["results"][0]["id"], "rank": 1}]})
    assert st[0] == 202, st


# ---------------------------------------------------------------------- algorithm params
@pytest.mark.parametrize("algorithm,params,fragment", [
    ("mergedts", {"batch_size": 10**400}, "'batch_size' of mergedts is out of range"),
    ("mergedts", {"horizon": 10**400}, "'horizon' of mergedts is out of range"),
    ("mergedts", {"batch_size": 10**30}, "'params.batch_size' must be at most 1000"),
    ("mergedts", {"c": -1}, "'params.c' must be at least 0"),
    ("self_sparring", {"eta": 10**400}, "'eta' of self_sparring is out of range"),
    ("self_sparring", {"eta": 1e300}, "'params.eta' must be at most 1000"),
    ("self_sparring", {"eta": 0}, "'params.eta' must be greater than 0"),
    ("rmed1", {"f_scale": -1}, "'params.f_scale' must be at least 0"),
    ("rucb", {"alfa": 0.6}, "unknown parameter 'alfa' for rucb; valid: alpha"),
    ("mdb", {"beta": 0.5}, "'params.beta' must be at least 1"),
])
def test_out_of_range_params_are_422(client, ranker_server, algorithm, params, fragment):
    method = "team_draft_multileave" if algorithm == "mdb" else "team_draft"
    body = {"name": "p", "rankers": rankers_for(ranker_server, "good", "bad"),
            "algorithm": algorithm, "interleaving": method, "params": params}
    assert_error(client.request("POST", "/experiments", body, admin=True), 422, fragment)


def test_a_number_beyond_a_double_is_422_not_500(client, ranker_server):
    raw = json.dumps({"name": "p", "rankers": rankers_for(ranker_server, "good", "bad"),
                      "algorithm": "mergedts", "interleaving": "team_draft",
                      "params": {"alpha": 1.5}}).replace("1.5", "1e400").encode()
    st = client.request("POST", "/experiments", raw=raw, admin=True)
    assert_error(st, 422, "'alpha' of mergedts must be a finite number")


@pytest.mark.parametrize("params", [{"eta": 1000}, {"eta": 1e-300}])
def test_self_sparring_at_its_bounds_serves_searches(client, ranker_server, params):
    exp = client.create_experiment(name="eta", rankers=rankers_for(ranker_server, "good", "bad",
                                                                   "mid"),
                                   algorithm="self_sparring", interleaving="team_draft",
                                   params=params)
    for _ in range(5):
        assert client.request("GET", f"/search?experiment={exp['id']}&q=x")[0] == 200


def test_search_k_takes_ascii_digits_only(client, exp):
    for k in ("٣", "3.0", "+3", " 3", "3_0"):
        st = client.request("GET", f"/search?experiment={exp['id']}&q=x&k={quote(k)}")
        assert_error(st, 400, "k must be an integer")


# ---------------------------------------------------------------------- request line
def _get(port: int, target: str) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", target)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type", ""), resp.read().decode()
    finally:
        conn.close()


def test_gunicorn_takes_a_long_query_and_answers_longer_lines_in_json(stack, service_env):
    from demo.stack import free_port

    port = free_port()
    child = stack.start_api(dict(service_env), bind=f"127.0.0.1:{port}", workers=1, threads=2,
                            name="api-door")
    try:
        q = quote("é" * 1000)  # 6,000 bytes percent-encoded: within the documented limit
        status, ctype, body = _get(port, f"/search?experiment=nope&q={q}&k=10&user=u1")
        assert status == 404 and ctype == "application/json", body
        assert "no experiment" in json.loads(body)["error"]
        status, ctype, body = _get(port, f"/search?experiment=nope&q={quote('é' * 1001)}")
        assert status == 400 and "longer than 1000" in json.loads(body)["error"]
        status, ctype, body = _get(port, f"/search?experiment=nope&q={'x' * 9000}")
        assert status == 414 and ctype == "application/json", body
        assert "request line longer than 8190 bytes" in json.loads(body)["error"]
        # the worker still serves
        deadline = time.monotonic() + 10
        while _get(port, "/healthz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        child.stop()
