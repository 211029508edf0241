"""An experiment's ``error_rate`` δ (issue 32, :mod:`service.experiments.error_rates`): validated at
creation, passed to a policy that declares it, refused for one that does not, and shown
with what it means in the report."""

from __future__ import annotations


def _body(ranker_server, algorithm: str, **extra) -> dict:
    return {"name": f"delta-{algorithm}", "algorithm": algorithm, "interleaving": "team_draft",
            "probe": False, "seed": 1,
            "rankers": [{"name": n, "url": f"{ranker_server.url}/r/{n}"} for n in ("good", "bad")],
            **extra}


def test_error_rate_is_refused_where_the_policy_has_none(client, ranker_server):
    status, body = client.request("POST", "/experiments",
                                  _body(ranker_server, "mergedts", error_rate=0.01), admin=True)
    assert status == 422 and "error_rate" in body["error"]  # not a field of mergedts
    for bad in (0, -0.1, 0.6, "0.05"):
        status, body = client.request("POST", "/experiments",
                                      _body(ranker_server, "mergedts", error_rate=bad),
                                      admin=True)
        assert status == 422 and "error_rate" in body["error"], (bad, body)
    status, body = client.request("POST", "/experiments", _body(ranker_server, "mergedts"),
                                  admin=True)
    assert status == 201  # the default is no claim for a policy without δ


def test_recommended_takes_the_experiment_s_error_rate(client, ranker_server):
    status, exp = client.request("POST", "/experiments",
                                 _body(ranker_server, "recommended", error_rate=0.01),
                                 admin=True)
    assert status == 201, exp
    assert exp["params"]["error_rate"] == 0.01
    status, exp = client.request("POST", "/experiments", _body(ranker_server, "recommended"),
                                 admin=True)
    assert exp["params"]["error_rate"] == 0.05
    status, body = client.request(
        "POST", "/experiments", _body(ranker_server, "recommended", error_rate=0.01,
                                      params={"error_rate": 0.02}), admin=True)
    assert status == 422 and "given twice" in body["error"]
