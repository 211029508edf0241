"""The policy's update of a primary metric's events (service.credit.primary.learn): the
same state as the policy's own ``update()`` of the same outcomes in order, eliminations
and their audit included; a ranker retired since the event is left out."""

from __future__ import annotations

import numpy as np

from bandits import make_bandit
from bandits.base import ELIMINATED
from service.credit.primary import learn
from service.credit.step import update_policy

NAMES = {a: f"r{a}" for a in range(4)}


def _events(bandit, P, n, rng):
    """``n`` events of the metric ``revenue``: the pair the policy selects, an outcome
    drawn from ``P`` and scaled as a value metric's (in [0, 1], not only 0 and 1)."""
    for k in range(n):
        i, j = bandit.select()
        s = float(rng.random() < P[i, j]) * 0.75 + 0.125
        yield (f"~{k}", str(k), {"impression": f"e.{k}", "value": 10.0,
                                 "outcomes": {"revenue": [[i, j, s]], "orders": [[i, j, 1]]}},
               ())


def test_learn_is_the_policys_own_update_in_order():
    P = np.array([[0.5, 0.8, 0.8, 0.8], [0.2, 0.5, 0.6, 0.6],
                  [0.2, 0.4, 0.5, 0.6], [0.2, 0.4, 0.4, 0.5]])
    a = make_bandit("mergedts", 4, seed=3)
    b = make_bandit("mergedts", 4, seed=3)
    rng = np.random.default_rng(0)
    audit_a, audit_b = [], []
    for t, item in enumerate(_events(a, P, 3000, rng), start=1):
        b.select()  # the same draws on both sides
        done = learn(a, [item], "revenue", t=t, names=NAMES)
        audit_a += done.audit
        assert done.changed and done.marks[item[0]]["status"] == "credited"
        b.sync_step(t)
        audit_b += update_policy(b, [tuple(item[2]["outcomes"]["revenue"][0])], NAMES)
    assert np.array_equal(a.W, b.W) and np.array_equal(a.status, b.status)
    assert audit_a == audit_b
    assert any(e["action"] == "eliminated" for e in audit_a)  # eliminations on revenue
    assert (a.status == ELIMINATED).sum() >= 1 and a.n_updates == 3000
    # r0, the best on revenue, won more than it lost
    assert a.W[0].sum() > a.W[:, 0].sum()


def test_an_event_of_a_retired_ranker_is_stale_and_learns_nothing():
    b = make_bandit("uniform", 3, seed=0)
    b.retire_arm(2)
    done = learn(b, [("~x", "x", {"outcomes": {"revenue": [[2, 0, 1.0]]}}, ()),
                     ("~y", "y", {"outcomes": {"orders": [[1, 0, 1.0]]}}, ())],
                 "revenue", t=5, names=NAMES)
    assert {m: v["status"] for m, v in done.marks.items()} == {"~x": "stale", "~y": "stale"}
    assert not done.changed and not b.W.any()
