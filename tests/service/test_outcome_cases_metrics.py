"""How outcomes enter a metric's W in Redis, against the one table of cases shared with
the rule (``bandits/outcomes.py``): the metrics' credit script (``metric_credit.lua``)
and the credit script's click target (``credit.lua`` with target ``click``, the click
metric of an experiment whose policy learns from another metric) keep, per metric, ``W``
by pair with no zero entry, ties by pair, ``n`` and, per segment label, the same three.
Read back through the store (:meth:`Store.metric_counts`), on a real Redis."""

from __future__ import annotations

import json
import secrets

import pytest

from service.credit.outcome_events import metric_spec
from service.store import Entry, Store
from service.store.keys import outcome_event_key
from tests.service.test_outcome_cases_store import CASES, IDS, experiment, mark, pairs


def check(store: Store, exp_id: str, metric: str, case: dict) -> None:
    """The metric's counts are the case's: W, ties and n in total and per label."""
    got = store.outcomes.metric_counts(exp_id).get(metric)
    want_w = {p: x for p, x in pairs({f"{i}:{j}": x for i, row in enumerate(case["W"])
                                      for j, x in enumerate(row)}).items() if x != 0}
    if got is None:  # a metric that counted nothing
        assert case["n"] == 0 and not want_w
        return
    assert want_w == got.W  # no zero entry: an addition of 0 is no write
    assert got.ties == pairs(case["ties"])
    assert got.n == case["n"]
    assert set(got.segments) == {label for label, c in case["segments"].items() if c["W"]}
    for label, want in case["segments"].items():
        assert got.segments.get(label, {}) == pairs(want["W"]), label
        assert got.segment_ties.get(label, {}) == pairs(want["ties"]), label
        assert got.segment_n.get(label, 0) == want["n"], label


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_metrics_credit_script_adds_as_the_table_says(rd, case):
    store = Store(rd)
    exp_id, _ = experiment(store, case)
    batch = []
    for imp in case["impressions"]:
        digest = secrets.token_hex(8)
        rd.hset(outcome_event_key(exp_id, digest), "i", "x")
        m = {"status": "credited" if imp["outcomes"] else "no_duel",
             "outcomes": {"revenue": imp["outcomes"]} if imp["outcomes"] else {},
             "values": {}}
        batch.append(("~" + digest, digest, json.dumps(m), metric_spec(m, ",".join(imp["seg"]))))
    codes = store.outcomes.commit_metric_credit(exp_id, batch)
    assert set(codes.values()) == {"ok"}, codes
    check(store, exp_id, "revenue", case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_credit_scripts_click_target_adds_as_the_table_says(rd, case):
    store = Store(rd)
    exp_id, ids = experiment(store, case)
    entries = [Entry(imp_id, json.dumps(mark(imp)), 0, ("credited",),
                     tuple((i, j, s, 0) for i, j, s in imp["outcomes"]))
               for imp_id, imp in zip(ids, case["impressions"], strict=True)]
    done = store.credits.commit_credit(exp_id, sv=store.experiments.snapshot(exp_id).sv, guard="",
                               entries=entries, gone={}, target="click")
    assert done.status == "ok" and set(done.codes.values()) == {"ok"}, done
    check(store, exp_id, "click", case)
