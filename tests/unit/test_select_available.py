"""Selection with unavailable (quarantined) arms, for every policy
(``select_available`` of :class:`bandits.base.DuelingBandit`): with none it is
``select_at`` bit for bit, so the live service's selection is the offline simulator's;
with some, the comparison is between available arms whenever two are active, and a duel
whenever the policy asked for one; one available arm is served alone. (The drain leases
and the retirement of fault recovery, on a real Redis: tests/service/test_fault_recovery.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import bandits
from bandits.base import ACTIVE

K = 6


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_select_available_without_unavailable_arms_is_select_at(name):
    """No quarantine: the live service's selection is the policy's own, bit for bit (the
    offline simulator, which never has unavailable arms, stays the same run)."""
    a = bandits.make_bandit(name, K, seed=4)
    b = bandits.make_bandit(name, K, seed=4)
    rng = np.random.default_rng(9)
    for t in range(1, 200):
        seed = int(rng.integers(2**32))
        x = a.select_at(t, np.random.default_rng(seed))
        y = b.select_available(t, np.random.default_rng(seed), ())
        assert tuple(x) == tuple(y), (name, t)
        i, j = (x[0], x[-1])
        outcome = float(rng.random() < (0.7 if i < j else 0.3)) if i != j else None
        if outcome is not None and not a.multi:
            for p in (a, b):
                p.sync_step(t)
                p.update(int(i), int(j), outcome)
    assert a.state_dict() == b.state_dict()


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_quarantined_arms_are_never_selected(name):
    """Arms 1 and 4 unavailable: every comparison is among the four others, and a duel
    whenever the policy asked for one."""
    p = bandits.make_bandit(name, K, seed=2)
    out = {1, 4}
    duels = 0
    for t in range(1, 300):
        rng = np.random.default_rng(t)
        pick = p.select_available(t, rng, out)
        assert out.isdisjoint(pick), (name, t, pick)
        assert all(p.status[a] == ACTIVE for a in pick)
        duels += len(set(pick)) > 1
        want = p.select_at(t, np.random.default_rng(t))
        assert (len(set(pick)) > 1) == (len(set(want)) > 1), (name, t, pick, want)
    assert duels > 0


def test_only_one_available_arm_is_served_alone():
    p = bandits.make_bandit("uniform", 3, seed=1)
    for t in range(1, 50):
        pick = p.select_available(t, np.random.default_rng(t), {0, 2})
        assert set(pick) == {1}
