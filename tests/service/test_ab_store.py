"""The A/B counters on a real Redis: the scripts' moments (``ab_moments.lua``) are those
:mod:`rollout.ab.moments` computes from the users' counts, over a seeded random sequence
of searches and clicks, with repeated click reports counted once."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from rollout.ab import Moments, UserCounts
from service.store import Store
from service.store.ab import AB_METRICS
from service.store.keys import exp_key, new_impression_id


@pytest.fixture
def store(rd):
    return Store(rd)


def test_lua_moments_match_python_increments(store, rd):
    exp = secrets.token_hex(6)
    rd.hset(exp_key(exp), "meta", "{}")
    rng = np.random.default_rng(7)
    counts: dict[tuple[int, str], list[int]] = {}  # (arm, user) -> [searches, clicked]
    imps = []
    for step in range(600):
        if imps and rng.random() < 0.4:  # a click report on an earlier search, maybe again
            imp, arm, user = imps[int(rng.integers(len(imps)))]
            first = store.ab_click(exp, imp)
            assert first in (0, 1)
            if first:
                counts[(arm, user)][1] += 1
            continue
        arm, user = int(rng.integers(2)), f"u{int(rng.integers(40))}"
        imp = new_impression_id(exp)
        assert store.save_ab_search(imp, exp_id=exp, t=step, arm=arm, user=user, shown=["d"],
                                    urls=[None], token_expires=10**10, ttl_s=600,
                                    counters={"impressions": 1})
        counts.setdefault((arm, user), [0, 0])[0] += 1
        imps.append((imp, arm, user))
    assert store.ab_click(exp, "nope") == -1
    got = store.ab_moments(exp)
    for arm in (0, 1):
        users = [UserCounts(s, c).values() for (a, _), (s, c) in counts.items() if a == arm]
        for m in AB_METRICS:
            want = Moments.of(u[m] for u in users)
            have = Moments.from_json(got[arm][m])
            assert have.n == want.n
            assert have.total == pytest.approx(want.total, abs=1e-9)
            assert have.squares == pytest.approx(want.squares, abs=1e-9)
        assert got[arm]["clicked"]["n"] == sum(c for (a, _), (_, c) in counts.items()
                                               if a == arm)
    for key in rd.scan_iter(match=f"rd:{{{exp}}}*"):
        rd.delete(key)


def test_a_placement_counts_each_user_once_where_first_seen(store, rd):
    name = f"split-{secrets.token_hex(3)}"
    pipe = rd.pipeline()
    store.record_period(pipe, name, 2, {"e1": 0.1, "control": 0.9})
    store.record_period(pipe, name, 4, {"e1": 0.5, "control": 0.5})
    pipe.execute()
    assert store.count_split(name, {(2, "e1"): 3, (2, "control"): 5},
                             {(2, "e1"): {"a", "b"}, (2, "control"): {"c"}}) == 3
    # b again (in version 3, no period recorded: version 2's shares), d new; c again
    assert store.count_split(name, {(3, "e1"): 2, (4, "control"): 1},
                             {(3, "e1"): {"b", "d"}, (4, "control"): {"c"}}) == 1
    got = store.split_counts(name)
    assert [p["version"] for p in got] == [2, 3, 4]
    assert got[0] == {"version": 2, "shares": {"e1": 0.1, "control": 0.9},
                      "searches": {"e1": 3, "control": 5}, "users": {"e1": 2, "control": 1}}
    assert got[1]["shares"] == {"e1": 0.1, "control": 0.9} and got[1]["users"] == {"e1": 1}
    assert got[2]["users"] == {} and got[2]["searches"] == {"control": 1}
    for key in rd.scan_iter(match=f"rd:{{pl-{name}}}*"):
        rd.delete(key)
