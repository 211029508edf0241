"""MergeGuard and MergeMED (``recommended``) under live conditions: seeded runs with
delayed, batched feedback and selections from reloaded copies must still name the
Condorcet winner and never flag.

Long statistical runs of pure code, so in the stats tier (``scripts/test stats``); the
guard's mechanics are in tests/unit/test_merge_guard.py.
"""

from __future__ import annotations

import pytest

from bandits.matrices import bradley_terry
from bandits.simulator import simulate_run


@pytest.mark.parametrize("name", ["mergeguard", "mergemed"])
def test_delayed_batched_reloaded_feedback_finds_the_winner(name):
    # as live: outcomes 30 selections late in groups of 5, selections from a copy of
    # the stored state reloaded every 10; 3 seeded runs on 8 arms (gaps >= 0.05) must
    # all name the Condorcet winner and none may flag (δ = 0.01 per run)
    P = bradley_terry(8, gap=0.05, spread=3.0, seed=6)
    for s in range(3):
        r = simulate_run(P, name, 30_000, seed=s, delay=30, feedback_batch=5,
                         reload_every=10, params={"check_every": 200})
        assert r.correct and not r.flagged_non_condorcet
