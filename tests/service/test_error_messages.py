"""Operator bodies report every problem at once, and an unknown field as unknown with the
closest valid name. (That the OpenAPI document lists what the door's limits answer is
checked on the document alone: tests/unit/test_schemas.py.)

Against the app on a real loopback port with the session's real Redis.
"""

from __future__ import annotations

from helpers.api import rankers_for


def _post(client, body):
    return client.request("POST", "/experiments", body, admin=True)


def test_a_misspelt_field_is_unknown_with_the_closest_name(client, ranker_server):
    status, body = _post(client, {"name": "e", "ranker": rankers_for(ranker_server, "good", "bad"),
                                  "algorithm": "uniform", "interleaving": "team_draft"})
    assert status == 422, body
    assert body["error"] == "unknown field 'ranker'; did you mean 'rankers'?"
    status, body = _post(client, {"name": "e", "rankers": rankers_for(ranker_server, "good", "bad"),
                                  "algoritm": "uniform", "interleaving": "team_draft"})
    assert status == 422 and "unknown field 'algoritm'; did you mean 'algorithm'?" in body[
        "error"], body


def test_every_problem_is_reported_at_once(client, ranker_server):
    good, bad = rankers_for(ranker_server, "good", "bad")
    status, body = _post(client, {
        "name": "", "rankers": [{**good, "timeot_ms": 5}, {**bad, "url": "ftp://x/"}],
        "algorithm": "uniform", "interleaving": "team_draft", "colour": "red"})
    assert status == 422, body
    errors = body["errors"]
    assert "unknown field 'rankers[0].timeot_ms'; did you mean 'rankers[0].timeout_ms'?" in errors
    assert "unknown field 'colour'" in errors
    assert any("'name'" in e for e in errors) and any("rankers[1].url" in e for e in errors)
    assert body["error"] == "; ".join(errors)  # the one-line message names them all too


def test_every_rankers_problem_is_reported_at_once(client):
    status, body = _post(client, {
        "name": "e", "algorithm": "uniform", "interleaving": "team_draft", "probe": False,
        "rankers": [{"name": "a", "url": "http://10.0.0.1/"},
                    {"name": "b", "url": "http://192.168.0.1/"}]})
    assert status == 422, body
    assert any("rankers[0].url" in e for e in body["errors"])
    assert any("rankers[1].url" in e for e in body["errors"])
