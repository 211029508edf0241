"""A ranker's definition never changes inside an experiment (issue 33): the routes that
would change it answer 409 saying how; a new version is a new arm ``NAME@vN``, audited,
and the state and the report name the version compared
(:mod:`service.experiments.ranker_versions`)."""

from __future__ import annotations


def _url(server, name: str) -> str:
    return f"{server.url}/r/{name}"


def _exp(client, server) -> str:
    rankers = [{"name": n, "url": _url(server, n), "timeout_ms": 2000} for n in ("good", "bad")]
    return client.create_experiment(name="versions", rankers=rankers, algorithm="uniform",
                                    interleaving="team_draft", seed=2)["id"]


def _version(client, exp_id, name, body):
    return client.request("POST", f"/experiments/{exp_id}/rankers/{name}/versions", body,
                          admin=True)


def test_every_route_that_could_change_a_ranker_answers_409_with_how(client, ranker_server):
    exp_id = _exp(client, ranker_server)
    status, body = client.request("POST", f"/experiments/{exp_id}/rankers",
                                  {"name": "good", "url": _url(ranker_server, "alt")},
                                  admin=True)
    assert status == 409 and f"/experiments/{exp_id}/rankers/good/versions" in body["error"]
    status, body = client.request("PATCH", f"/experiments/{exp_id}", {"rankers": []},
                                  admin=True)
    assert status == 409 and "/versions" in body["error"]
    # retired, the name is still taken: the same answer
    client.retire_ranker(exp_id, "bad")
    status, body = client.request("POST", f"/experiments/{exp_id}/rankers",
                                  {"name": "bad", "url": _url(ranker_server, "mid")},
                                  admin=True)
    assert status == 409 and "versions" in body["error"]
    assert [r["url"] for r in client.experiment(exp_id)["rankers"]] == [
        _url(ranker_server, "good"), _url(ranker_server, "bad")]


def test_a_new_version_is_a_new_arm_audited_and_named_in_the_report(client, ranker_server):
    exp_id = _exp(client, ranker_server)
    status, v2 = _version(client, exp_id, "good", {"url": _url(ranker_server, "alt")})
    assert status == 201, v2
    assert (v2["name"], v2["version"], v2["version_of"], v2["arm"]) == ("good@v2", 2, "good", 2)
    state = client.experiment(exp_id)
    by_name = {r["name"]: r for r in state["rankers"]}
    assert by_name["good"]["status"] == "retired" and by_name["good"]["version"] == 1
    assert by_name["good@v2"]["status"] == "active"
    assert by_name["good@v2"]["url"] == _url(ranker_server, "alt")
    assert by_name["good@v2"]["timeout_ms"] == 2000  # what the body left out is kept
    audit = client.audit(exp_id)
    added = [e for e in audit if e["action"] == "ranker_version_added"]
    assert added and added[-1]["previous"] == "good" and added[-1]["changed"] == ["url"]
    assert any(e["action"] == "ranker_retired" and e["ranker"] == "good"
               and e["reason"] == "replaced by good@v2" for e in audit)
    # the new version is the one searched: the toy ranker returns its own name as source
    page = client.search(exp_id, "q", k=5, user="u1")
    assert sorted(page["rankers"]) == ["bad", "good@v2"]
    rep = client.report(exp_id)
    versions = {r["name"]: (r["version"], r["version_of"]) for r in rep["rankers"]}
    assert versions == {"good": (1, "good"), "bad": (1, "bad"), "good@v2": (2, "good")}

    # keep both in play; the plain or the versioned name both reach the newest version
    status, v3 = _version(client, exp_id, "good", {"timeout_ms": 1500,
                                                   "retire_previous": False})
    assert status == 201 and v3["name"] == "good@v3"
    states = {r["name"]: r["status"] for r in client.experiment(exp_id)["rankers"]}
    assert states["good@v2"] == states["good@v3"] == "active"
    status, v4 = _version(client, exp_id, "good@v2", {"timeout_ms": 1000})
    assert status == 201 and v4["name"] == "good@v4"


def test_version_refusals(client, ranker_server):
    exp_id = _exp(client, ranker_server)
    status, body = _version(client, exp_id, "good", {"url": _url(ranker_server, "good")})
    assert status == 409 and "changes nothing" in body["error"]
    status, body = _version(client, exp_id, "nope", {"timeout_ms": 100})
    assert status == 404 and "nope" in body["error"]
    status, body = _version(client, exp_id, "good", {"url": _url(ranker_server, "broken")})
    assert status == 422 and "good@v2 (http_500" in body["error"]  # probed, as any new one
    status, body = _version(client, exp_id, "good", {"name": "x"})
    assert status == 422
    client.lifecycle(exp_id, "stop")
    status, body = _version(client, exp_id, "good", {"timeout_ms": 100})
    assert status == 409 and "stopped" in body["error"]
    assert [r["name"] for r in client.experiment(exp_id)["rankers"]] == ["good", "bad"]
