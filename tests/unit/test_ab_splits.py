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


def test_rankduel_report_prints_an_ab_test():
    from cli.commands.report import table
    from rollout.ab import Moments, ab_report

    arms = {"ctr": {"prod": Moments(400, 120.0, 120.0), "new": Moments(380, 171.0, 171.0)}}
    out = ab_report(arms, "prod", 0.05, [srm.Period({"prod": 0.5, "new": 0.5},
                                                    {"prod": 400, "new": 380})])
    rep = {"design": "ab", "verdict": out["verdict"]["statement"], "metrics": out["metrics"],
           "srm": out["srm"], "split": {"flagged": False},
           "arms": [{"name": "prod", "role": "control", "assigned_share": 0.5,
                     "observed_share": 400 / 780, "users": 400, "searches": 400,
                     "clicked_searches": 120, "ctr": 0.3},
                    {"name": "new", "role": "treatment", "assigned_share": 0.5,
                     "observed_share": 380 / 780, "users": 380, "searches": 380,
                     "clicked_searches": 171, "ctr": 0.45}]}
    text = table(rep)
    assert text.startswith("new: higher ctr than prod")
    assert "prod             control" in text and "0.4500" in text
    assert "split: 'new' got 48.7 % of users where 50 % were assigned" in text
