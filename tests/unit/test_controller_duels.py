"""The controller serves the comparison the policy chose, as the simulator shows it: a
duel with an arm the policy eliminated (the Sparring Certifier's certification duels, the
Merge guard's verification) is a duel live too; only a retired arm never duels (its
outcome would be stale). Dropping the eliminated arm made ``recommended`` show its
champion alone where offline certifies it (tests/service/test_live_vs_offline.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bandits.base import ELIMINATED, RETIRED
from bandits.sparring_certifier import SparringCertifier
from service.experiments.controller import Controller
from service.store.records import Ranker


class _Store:
    """What the controller reads of Redis: the selection counter and the snapshot."""

    def __init__(self, bandit):
        self.experiments = self  # the part the controller names: store.experiments
        self.t = 0
        self.snap = SimpleNamespace(
            exp_id="e", meta={"seed": 3}, lifecycle="running", version=1,
            rankers=[Ranker(f"r{a}", f"http://r/{a}", 500, arm=a) for a in range(bandit.K)],
            bandit=bandit)

    def next_t(self, exp_id):
        self.t += 1
        return self.t, 1, {}

    def snapshot(self, exp_id):
        return self.snap


def _converged(K: int = 5) -> SparringCertifier:
    """Arm 0 the only one in play, the rest no longer shown (not shown worse): the
    champion meets each of them in turn."""
    b = SparringCertifier(K, seed=1)
    for a in range(1, K):
        b.W[0, a], b.W[a, 0] = 30.0, 10.0
        b.eliminate(a, 0)
    b._rebuild()
    return b


def test_a_duel_with_an_eliminated_arm_is_served_as_a_duel():
    b = _converged()
    c = Controller(_Store(b))
    shown = set()
    for _ in range(8):
        choice = c.choose("e")
        assert choice.duel and choice.arms[0] == 0, choice.arms
        shown.add(choice.arms[1])
    assert shown == {1, 2, 3, 4}  # each in turn, as select_at gives it
    assert all(b.status[a] == ELIMINATED for a in shown)


def test_a_retired_arm_never_duels():
    b = _converged()
    b.status[2] = RETIRED
    b._rebuild()
    b.select_available = lambda t, rng, out=(): (0, 2)  # a policy that picks it anyway
    choice = Controller(_Store(b)).choose("e")
    assert choice.arms == (0,) and not choice.duel
    assert np.count_nonzero(b.status == RETIRED) == 1
