"""The pure parts of the live A/B and split checks: team draft's balance counted at save
time and read back is :func:`rollout.srm.team_balance` of the same impressions, and the
arms of an A/B test split users evenly and stickily."""

from __future__ import annotations

from collections import Counter

import numpy as np

from rollout import srm
from rollout.ab.arms import arm_of, salt_of
from service.reports.splits import team_counts, team_fields


def test_team_counts_read_back_what_team_balance_counts():
    rng = np.random.default_rng(3)
    teams = []
    for _ in range(300):
        shared = [-1] * int(rng.integers(0, 3))
        drafted = [int(x) for x in rng.integers(0, 2, size=int(rng.integers(0, 8)))]
        teams.append(shared + drafted)
    total: Counter[str] = Counter()
    for row in teams:
        total.update(team_fields(row))
    assert team_counts(dict(total)) == srm.team_balance(teams)
    assert team_counts({}) == ([0, 0], [])


def test_arms_are_even_sticky_and_independent_of_the_placement_bucket():
    from rollout.hashing import bucket

    users = [f"user-{i}" for i in range(20_000)]
    arms = [arm_of(u, salt_of("3fa2"), 2) for u in users]
    assert abs(sum(arms) / len(users) - 0.5) < 0.01
    assert arms == [arm_of(u, salt_of("3fa2"), 2) for u in users]
    # the users of the placement's first tenth of buckets split evenly too
    tenth = [a for u, a in zip(users, arms, strict=True) if bucket(u, "web") < 1000]
    assert abs(sum(tenth) / len(tenth) - 0.5) < 0.04
