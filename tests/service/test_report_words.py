"""The report's words (issue 34.9): one name for the policy everywhere, the one the
experiment was created with, said once what it is; no ``confidence`` until a verdict.

The policy's state is written straight into Redis (the comparisons a worker would have
credited), then the report is read through the API."""

from __future__ import annotations

import pytest

from service.store import Store
from service.transaction import update_experiment


def _experiment(client, ranker_server, algorithm: str, k: int) -> str:
    rankers = [{"name": f"r{i}", "url": f"{ranker_server.url}/r/good", "timeout_ms": 2000}
               for i in range(k)]
    return client.create_experiment(name=f"words-{algorithm}", rankers=rankers,
                                    algorithm=algorithm, interleaving="team_draft",
                                    seed=5, probe=False)["id"]


def _credit(rd, exp_id: str, outcomes: list[tuple[int, int, float]]) -> None:
    """Apply ``outcomes`` with the policy's own update(), as a worker's hold would."""

    def write(snap, pipe):
        bandit = snap.bandit
        for i, j, s in outcomes:
            bandit.update(i, j, s)
        Store(rd).experiments.write_state(pipe, exp_id, bandit)

    update_experiment(Store(rd), exp_id, write)


@pytest.mark.parametrize("algorithm", ["recommended", "mergemed"])
def test_an_undecided_report_names_the_policy_once_and_states_no_confidence(
        client, ranker_server, rd, algorithm):
    exp_id = _experiment(client, ranker_server, algorithm, 3)
    _credit(rd, exp_id, [(0, 1, 1.0), (1, 2, 0.0), (0, 2, 0.5)] * 20)
    rep = client.report(exp_id)
    assert rep["certified"] is False and rep["comparisons"] == 60
    assert rep["confidence"] is None
    assert rep["algorithm"] == algorithm
    assert rep["algorithm_about"].startswith(f"{algorithm} is the ")
    if algorithm == "mergemed":  # recommended's basis speaks of its verdicts, not a test
        assert f"{algorithm}'s" in rep["estimate_basis"]
    others = {"sparring_certifier", "recommended", "mergemed"} - {algorithm}
    text = " ".join([rep["verdict"], rep["estimate_basis"]])
    assert not any(name in text for name in others), text


def test_a_certified_report_states_its_confidence_under_the_creation_name(
        client, ranker_server, rd):
    exp_id = _experiment(client, ranker_server, "recommended", 2)
    _credit(rd, exp_id, [(0, 1, 1.0 if n % 10 else 0.0) for n in range(4000)])
    rep = client.report(exp_id)
    assert rep["certified"] is True and rep["champion"] == "r0"
    assert rep["confidence"] == pytest.approx(0.95) and rep["error_rate"] == 0.05
    assert "recommended's test at error rate δ = 5%" in rep["verdict"]
    assert "wrong in at most 5% of experiments" in rep["verdict"]
    assert rep["confidence_meaning"] in rep["verdict"][0] + rep["verdict"][1:].lower()
    assert rep["shown_worse"] == {"r1": "r0"}
    assert [r["verdict"] for r in rep["rankers"]] == [None, "shown worse"]
    assert "sparring_certifier" not in rep["verdict"] + rep["estimate_basis"]
    assert "also registered as sparring_certifier" in rep["algorithm_about"]


def test_a_merge_policy_s_verdict_carries_no_family_wise_percentage(
        client, ranker_server, rd):
    exp_id = _experiment(client, ranker_server, "mergedts", 2)
    _credit(rd, exp_id, [(0, 1, 1.0 if n % 10 else 0.0) for n in range(4000)])
    rep = client.report(exp_id)
    assert rep["certified"] is True and rep["error_rate"] is None
    assert "no family-wise guarantee" in rep["verdict"]
    assert "%" not in rep["verdict"]  # no per-test percentage presented as the verdict's
    assert 0.9 < rep["confidence"] < 1.0  # the JSON field kept: one test's, documented
    assert "no family-wise guarantee" in rep["confidence_meaning"]


def test_a_policy_without_a_test_has_no_confidence(client, ranker_server, rd):
    exp_id = _experiment(client, ranker_server, "dts", 3)
    _credit(rd, exp_id, [(0, 1, 1.0), (1, 2, 1.0)] * 10)
    rep = client.report(exp_id)
    assert rep["confidence"] is None and rep["certified"] is False
    assert "dts has no elimination test" in rep["estimate_basis"]


def test_recommended_keeps_no_longer_shown_apart_from_shown_worse(client, ranker_server, rd):
    """r2 loses 4 in 6 to r0: after 126 of those the policy stops showing it (its
    elimination test: weaker evidence, recoverable), which the report must not call a
    verdict; after 366 it is shown worse at 1 − δ. (Verdicts are checked after every
    comparison, so the state between the two exists only while the edge test at
    δ/(2(K − 1)) asks more than the elimination test: 12 rankers here, updates 194 to
    233 of this sequence.)"""
    exp_id = _experiment(client, ranker_server, "recommended", 12)
    duel = [(0, 2, 1.0), (0, 2, 1.0), (0, 1, 1.0), (0, 2, 1.0), (0, 1, 0.0),
            (0, 2, 0.0), (0, 1, 1.0), (0, 2, 0.0), (0, 1, 0.0), (0, 2, 1.0)]
    _credit(rd, exp_id, duel * 21)  # r2: 126 comparisons, 84 lost
    rep = client.report(exp_id)
    assert rep["certified"] is False and rep["confidence"] is None
    assert rep["error_rate"] == 0.05 and rep["shown_worse"] == {}
    assert rep["no_longer_shown"] == ["r2"]
    assert "r2 no longer shown to save traffic, not shown worse" in rep["verdict"]
    assert "a verdict is stated at error rate δ = 5%" in rep["verdict"]
    by_name = {r["name"]: r for r in rep["rankers"]}
    assert by_name["r2"]["verdict"] == "no longer shown"
    assert by_name["r2"]["shown_worse_by"] is None
    _credit(rd, exp_id, duel * 40)  # 366 in all
    rep = client.report(exp_id)
    assert rep["shown_worse"] == {"r2": "r0"} and rep["no_longer_shown"] == []
    assert {r["name"]: r["verdict"] for r in rep["rankers"]}["r2"] == "shown worse"


def test_the_primary_metric_states_the_headline_verdict(client, ranker_server, rd):
    # the primary's W is the headline's; its line in the metrics list states
    # the headline's verdict at the headline's δ (one metric, one verdict), the other
    # metrics theirs at δ/M
    rankers = [{"name": f"r{i}", "url": f"{ranker_server.url}/r/good", "timeout_ms": 2000}
               for i in range(2)]
    exp_id = client.create_experiment(
        name="one-verdict", rankers=rankers, algorithm="recommended",
        interleaving="team_draft", seed=5, probe=False,
        metrics=[{"name": "click"},
                 {"name": "revenue", "action": "purchase", "value": "sum"}])["id"]
    # 10 wins in 12: r0 leads, not certified (verdicts are checked after every comparison:
    # 16 in 18 certifies it)
    _credit(rd, exp_id, [(0, 1, 1.0 if n % 10 else 0.0) for n in range(12)])
    rep = client.report(exp_id)
    click = next(m for m in rep["metrics"] if m["name"] == "click")
    assert rep["certified"] is False and click["primary"]
    assert click["certified"] is False and click["error_rate"] == rep["error_rate"] == 0.05
    assert click["verdict"] == ("r0 leads click after 12 comparisons; not certified at "
                                "δ = 5%: the experiment's verdict.")
    _credit(rd, exp_id, [(0, 1, 1.0 if n % 10 else 0.0) for n in range(4000)])
    rep = client.report(exp_id)
    by = {m["name"]: m for m in rep["metrics"]}
    assert rep["certified"] is True and rep["champion"] == "r0"
    assert by["click"]["certified"] is True and by["click"]["champion"] == "r0"
    assert by["click"]["error_rate"] == 0.05 and by["click"]["shown_worse"] == {"r1": "r0"}
    assert by["click"]["verdict"].startswith(
        "r0 wins click: the experiment's verdict, every other ranker shown worse at δ = 5%")
    assert by["revenue"]["error_rate"] == pytest.approx(0.05 / 2)
    assert by["revenue"]["verdict"] == "No revenue comparisons yet."
