"""The experiment-state collector through the API's /metrics (the session's real Redis,
the app on a real port): rankers added and retired mid-run, true regret restricted to
the rankers the true matrix covers, the ground truth validated at creation."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ADMIN
from metrics_run import samples, total

from demo.client import http_json

#: true preferences over good, bad, mid: good beats both
P = [[0.5, 0.8, 0.6],
     [0.2, 0.5, 0.3],
     [0.4, 0.7, 0.5]]


def rankers(server, *names):
    return [{"name": n, "url": f"{server.url}/r/{n}", "timeout_ms": 2000} for n in names]


def scrape(api) -> list:
    status, text = http_json("GET", api.url + "/metrics",
                             headers={"Authorization": f"Bearer {ADMIN}"})
    assert status == 200, (status, text)
    return samples(text)


def test_added_and_retired_rankers_and_true_regret(client, ranker_server, api):
    exp = client.create_experiment(name="state", rankers=rankers(ranker_server, "good", "bad",
                                                                 "mid"),
                                   algorithm="uniform", interleaving="team_draft", seed=5,
                                   true_preferences=P)
    e = exp["id"]
    for n in range(20):
        client.search(e, f"q{n}", k=5)
    client.add_ranker(e, "alt", f"{ranker_server.url}/r/alt")
    client.retire_ranker(e, "bad")
    for n in range(40):
        client.search(e, f"r{n}", k=5)
    found = scrape(api)

    status = {lab["ranker"]: lab["status"] for n, lab, v in found
              if n == "rankduel_ranker_status" and lab["experiment"] == e and v == 1}
    assert status == {"good": "active", "bad": "retired", "mid": "active", "alt": "active"}
    assert total(found, "rankduel_experiment_rankers", experiment=e, status="retired") == 1
    shown = {lab["ranker"]: v for n, lab, v in found
             if n == "rankduel_ranker_impressions_total" and lab["experiment"] == e}
    traffic = {lab["ranker"]: v for n, lab, v in found
               if n == "rankduel_ranker_traffic_total" and lab["experiment"] == e}
    assert shown["alt"] > 0  # the added ranker plays
    assert sum(traffic.values()) == pytest.approx(60)  # one unit per impression
    # true regret against the Condorcet winner "good" (row 0 of P), over the rankers P
    # covers; "alt", added later, is outside the matrix and does not count
    delta = np.asarray(P[0]) - 0.5
    expected = sum(traffic[name] * delta[a] for a, name in enumerate(["good", "bad", "mid"]))
    assert total(found, "rankduel_experiment_true_regret", experiment=e) == pytest.approx(
        expected)
    # the pairwise heatmap covers all four rankers, retired ones included
    pairs = [lab for n, lab, _ in found
             if n == "rankduel_pair_preference" and lab["experiment"] == e]
    assert len(pairs) == 4 * 3


def test_true_best_is_used_when_given(client, ranker_server, api):
    exp = client.create_experiment(name="best", rankers=rankers(ranker_server, "good", "bad",
                                                                "mid"),
                                   algorithm="uniform", interleaving="team_draft", seed=6,
                                   true_preferences=P, true_best="mid")
    e = exp["id"]
    for n in range(10):
        client.search(e, f"q{n}", k=5)
    found = scrape(api)
    traffic = {lab["ranker"]: v for n, lab, v in found
               if n == "rankduel_ranker_traffic_total" and lab["experiment"] == e}
    delta = np.asarray(P[2]) - 0.5  # against "mid": showing "good" has negative regret
    expected = sum(traffic[name] * delta[a] for a, name in enumerate(["good", "bad", "mid"]))
    assert total(found, "rankduel_experiment_true_regret", experiment=e) == pytest.approx(
        expected)


def test_no_truth_no_true_regret(client, ranker_server, api):
    exp = client.create_experiment(name="plain", rankers=rankers(ranker_server, "good", "bad"),
                                   algorithm="uniform", interleaving="team_draft", seed=7)
    found = scrape(api)
    assert total(found, "rankduel_experiment_info", experiment=exp["id"]) == 1
    assert not [1 for n, lab, _ in found if n == "rankduel_experiment_true_regret"
                and lab["experiment"] == exp["id"]]


@pytest.mark.parametrize(("extra", "message"), [
    ({"true_preferences": [[0.5, 0.7], [0.4, 0.5]]}, "must be 1"),
    ({"true_preferences": [[0.5]]}, "must be 2×2"),
    ({"true_best": "good"}, "needs 'true_preferences'"),
    ({"true_preferences": [[0.5, 0.7], [0.3, 0.5]], "true_best": "nobody"}, "no ranker"),
])
def test_bad_truth_is_refused(client, ranker_server, extra, message):
    status, body = client.request("POST", "/experiments", {
        "name": "bad", "rankers": rankers(ranker_server, "good", "bad"),
        "algorithm": "uniform", "interleaving": "team_draft", **extra}, admin=True)
    assert status == 422 and message in body["error"], body
