"""The pure parts of the metrics beyond the click (docs/conversions.md): declarations,
the bounded value statistic and the level of the per-metric verdicts it feeds, an outcome
event's credit under every interleaving method, the actions' view and its refreshes."""

from __future__ import annotations

import json

import numpy as np
import pytest

import interleaving
from bandits.confidence import certified_best, shown_worse
from service.credit.outcome_events import outcomes, spec, winners
from service.outcomes import actions as actions_mod
from service.outcomes.actions import Actions
from service.outcomes.declared import (
    MAX_METRICS,
    Metric,
    attribution_ttl,
    bounded,
    declare,
    value_problem,
)
from service.reports.per_metric import disagreement, entry


def test_declarations_name_the_field():
    ok, found = declare([{"name": "click"}, {"name": "revenue", "action": "purchase",
                                             "value": "sum"}], None)
    assert not found and ok[1] == {"name": "revenue", "action": "purchase", "value": "sum",
                                   "window_s": 86400, "cap": 1000.0}
    assert declare([{"name": "click"}], "click")[1] == []
    assert "primary" in declare([{"name": "click"}], "cart")[1][0]
    assert declare([{"name": "click"}, {"name": "cart", "action": "add_to_cart"}],
                   "cart")[1] == []  # the policy may learn from any declared metric
    assert attribution_ttl([Metric("click"), Metric("a", "x", "count", 60),
                            Metric("b", "y", "sum", 7200, 5.0)]) == 7200
    assert attribution_ttl([Metric("click")]) == 0
    assert MAX_METRICS == 5


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.5, 2e9, True, "3"])
def test_bad_values_are_named(value):
    assert "field 'value'" in value_problem([Metric("r", "p", "sum", 60, 10.0)], value)


def test_the_bounded_statistic_stays_an_outcome():
    rng = np.random.default_rng(0)
    for _ in range(1000):
        s, v, cap = rng.choice([0.0, 0.5, 1.0, rng.random()]), rng.exponential(300), 250.0
        b = bounded(s, v, cap)
        assert 0.0 <= b <= 1.0 and b + bounded(1 - s, v, cap) == pytest.approx(1.0)
        assert (b - 0.5) * (s - 0.5) >= 0  # never turns a win into a loss
    assert bounded(1.0, 1e9, 100.0) == 1.0 and bounded(1.0, 0.0, 100.0) == 0.5


def test_per_metric_verdicts_hold_their_level_on_an_aa_run():
    # three metrics of an A/A experiment (nobody better on any of them): a verdict at
    # δ/3 each, checked every 50 events over 600 events, is wrong (any certificate or
    # "shown worse", on any metric, at any check) in at most δ of the runs
    rng = np.random.default_rng(7)
    delta, runs, wrong = 0.2, 150, 0
    for _ in range(runs):
        W = np.zeros((3, 2, 2))
        bad = False
        for t in range(600):
            s = float(rng.random() < 0.5)  # the team that placed the document: a coin
            value = rng.exponential(80)
            for m, x in enumerate((s, bounded(s, value, 100.0), bounded(s, value, 20.0))):
                W[m, 0, 1] += x
                W[m, 1, 0] += 1 - x
            if t % 50 == 49:
                for m in range(3):
                    if shown_worse(W[m], [0, 1], delta / 3) or certified_best(
                            W[m], [0, 1], delta / 3) is not None:
                        bad = True
            if bad:
                break
        wrong += bad
    assert wrong / runs <= delta


def test_a_metric_entry_and_the_disagreement():
    W = np.array([[0, 80.0], [20.0, 0]])
    e = entry("revenue", W, [0, 1], 0.05 / 3, {0: "r2", 1: "r5"}, 100)
    assert e["champion"] == "r2" and e["certified"] and e["shown_worse"] == {"r5": "r2"}
    assert "r2 wins revenue" in e["verdict"]
    quiet = entry("cart", np.zeros((2, 2)), [0, 1], 0.05, {0: "r2", 1: "r5"}, 0)
    assert quiet["champion"] is None and quiet["verdict"] == "No cart comparisons yet."
    assert disagreement([{"name": "click", "champion": "r5", "certified": True},
                         {**e, "name": "revenue"}, {**quiet}]) == (
        "r5 wins click, r2 wins revenue: the metrics disagree.")


@pytest.mark.parametrize("method, k", [("team_draft", 2), ("probabilistic", 2),
                                       ("balanced", 2), ("team_draft_multileave", 3),
                                       ("probabilistic_multileave", 3), ("sosm", 3)])
def test_an_event_is_credited_as_a_click_on_its_position(method, k):
    rng = np.random.default_rng(3)
    lists = [[f"d{(i * 7 + j) % 12}" for j in range(8)] for i in range(k)]
    shown, record = interleaving.interleave(method, lists, 6, rng)
    arms = [4, 9, 2][:k]
    entry_ = [10.0, arms, record, "device=mobile", shown]
    metrics = {"orders": Metric("orders", "purchase", "count", 60),
               "revenue": Metric("revenue", "purchase", "sum", 60, 40.0)}
    event = {"a": "purchase", "m": "orders,revenue", "i": "e.1", "p": "2", "v": "10.0",
             "at": "11"}
    mark = outcomes(event, entry_, metrics)
    raw = [(arms[a], arms[b], float(s)) for a, b, s in interleaving.credit(record, [2])]
    assert mark["status"] == "credited"
    assert mark["outcomes"]["orders"] == [[i, j, s] for i, j, s in raw]
    assert mark["outcomes"]["revenue"] == [[i, j, bounded(s, 10.0, 40.0)] for i, j, s in raw]
    assert mark["values"]["revenue"] == {str(a): 10.0 for a in winners(raw)}
    seg, outs, _vals, counted = spec(mark, "device=mobile").split("|")
    assert seg == "device=mobile" and counted == "outcome_events,outcome_credited"
    assert len(outs.split(";")) == 2 * len(raw)
    json.dumps(mark)  # the mark goes to the event log as JSON


def test_an_event_without_its_impression_or_duel():
    event = {"a": "purchase", "m": "orders", "i": "e.1", "p": "0", "v": "", "at": "1"}
    metrics = {"orders": Metric("orders", "purchase", "count", 60)}
    assert outcomes(None, None, metrics) == {"status": "missing"}
    assert outcomes({**event, "credited": "1"}, None, metrics) == {"status": "already"}
    assert outcomes(event, None, metrics)["status"] == "expired"
    assert outcomes(event, [1.0, [3], None, "", ["a"]], metrics)["status"] == "no_duel"


def test_the_actions_view_is_read_again_when_old_or_missed(monkeypatch):
    reads = []
    declared = {"e1": (json.dumps({"metrics": [{"name": "cart", "action": "add_to_cart",
                                                 "window_s": 60}]}), "running")}

    def read():
        reads.append(1)
        return dict(declared)

    now = [100.0]
    monkeypatch.setattr(actions_mod.time, "monotonic", lambda: now[0])
    view = Actions(read, refresh_s=2.0,
                   read_one=lambda e: {e: declared[e]} if e in declared else {})
    assert [c.exp_id for c in view.candidates("add_to_cart")] == ["e1"] and len(reads) == 1
    now[0] += 0.1
    assert view.candidates("purchase") == [] and len(reads) == 1  # a miss, too soon
    now[0] += 0.3
    assert view.candidates("purchase") == [] and len(reads) == 2  # a miss reads again
    declared["e2"] = (json.dumps({"metrics": [{"name": "rev", "action": "add_to_cart",
                                               "value": "sum"}]}), "running")
    now[0] += 0.1
    assert [c.exp_id for c in view.candidates("add_to_cart", "e2")] == ["e2"]  # read alone
    assert len(reads) == 2
    now[0] += 2.5
    assert {c.exp_id for c in view.candidates("add_to_cart")} == {"e1", "e2"}
