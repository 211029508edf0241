"""The A/B counters on a real Redis: the scripts' moments (``ab_moments.lua``) are those
:mod:`rollout.ab.moments` computes from the users' counts, over a seeded random sequence
of searches and clicks, with repeated click reports counted once."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from rollout.ab import Moments, UserCounts
from service.ab.store import AB_METRICS
from service.store import Store
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
            first = store.ab.ab_click(exp, imp)
            assert first in (0, 1)
            if first:
                counts[(arm, user)][1] += 1
            continue
        arm, user = int(rng.integers(2)), f"u{int(rng.integers(40))}"
        imp = new_impression_id(exp)
        assert store.ab.save_ab_search(imp, exp_id=exp, t=step, arm=arm, user=user, shown=["d"],
                                       urls=[None], token_expires=10**10, ttl_s=600,
                                       counters={"impressions": 1})
        counts.setdefault((arm, user), [0, 0])[0] += 1
        imps.append((imp, arm, user))
    assert store.ab.ab_click(exp, "nope") == -1
    got = store.ab.ab_moments(exp)
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
    store.splits.record_period(pipe, name, 2, {"e1": 0.1, "control": 0.9})
    store.splits.record_period(pipe, name, 4, {"e1": 0.5, "control": 0.5})
    pipe.execute()
    assert store.splits.count_split(name, {(2, "e1"): 3, (2, "control"): 5},
                                    {(2, "e1"): {"a", "b"}, (2, "control"): {"c"}}) == 3
    # b again (in version 3, no period recorded: version 2's shares), d new; c again
    assert store.splits.count_split(name, {(3, "e1"): 2, (4, "control"): 1},
                                    {(3, "e1"): {"b", "d"}, (4, "control"): {"c"}}) == 1
    got = store.splits.split_counts(name)
    assert [p["version"] for p in got] == [2, 3, 4]
    assert got[0] == {"version": 2, "shares": {"e1": 0.1, "control": 0.9},
                      "searches": {"e1": 3, "control": 5}, "users": {"e1": 2, "control": 1}}
    assert got[1]["shares"] == {"e1": 0.1, "control": 0.9} and got[1]["users"] == {"e1": 1}
    assert got[2]["users"] == {} and got[2]["searches"] == {"control": 1}
    for key in rd.scan_iter(match=f"rd:{{pl-{name}}}*"):
        rd.delete(key)


def test_conversions_move_each_users_value_once_and_zeros_count(store, rd):
    """The conversion moments (``ab_search.lua``'s zeros, ``ab_outcome.lua``'s moves)
    equal the per-user recomputation (:func:`rollout.ab.conversions.per_user_moments`)
    over a seeded sequence of searches and orders by user, retried orders counted once,
    orders of documents not shown and orders of no user's search unattributed."""
    from rollout.ab.conversions import after, per_user_moments
    from service.store.outcomes import OutcomeCall

    exp = secrets.token_hex(6)
    rd.hset(exp_key(exp), "meta", "{}")
    windows = (("orders", 3600, "count"), ("revenue", 3600, "sum"))
    rng = np.random.default_rng(11)
    users: dict[int, list[str]] = {0: [], 1: []}
    arm_of: dict[str, int] = {}
    values: dict[tuple[int, str], dict[str, float]] = {}  # (arm, user) -> metric -> value
    sent: dict[str, tuple[str, float]] = {}  # event_id -> (user, value)

    def order(user: str, event_id: str, value: float, doc: str = "d1") -> str:
        call = OutcomeCall(exp_id=exp, digest=event_id, doc=doc, windows=windows,
                           value=repr(value), action="purchase", ttl_s=600, user_hash=user)
        return store.outcomes.record_outcomes([store.ab.outcome_call(call)])[0][0]

    for step in range(500):
        if arm_of and rng.random() < 0.35:
            user = sorted(arm_of)[int(rng.integers(len(arm_of)))]
            if sent and rng.random() < 0.3:  # a retried order: counted before
                event_id = list(sent)[int(rng.integers(len(sent)))]
                assert order(sent[event_id][0], event_id, sent[event_id][1]) == "duplicate"
                continue
            event_id, value = f"o{step}", float(rng.integers(1, 100)) / 4
            assert order(user, event_id, value) == "ok"
            sent[event_id] = (user, value)
            v = values.setdefault((arm_of[user], user), {})
            v["orders"] = after(v.get("orders", 0.0), "count", None)
            v["revenue"] = after(v.get("revenue", 0.0), "sum", value)
            continue
        user = f"u{int(rng.integers(60))}"
        arm = arm_of.setdefault(user, int(rng.integers(2)))  # sticky
        users[arm].append(user)
        assert store.ab.save_ab_search(
            new_impression_id(exp), exp_id=exp, t=step, arm=arm, user=user,
            shown=["d0", "d1"], urls=[None, None], token_expires=10**10, ttl_s=600,
            counters={"impressions": 1}, conversions=["orders", "revenue"],
            attribution_ttl_s=3600)
    assert order("u0", "not-shown", 5.0, doc="d9") == "unattributed"
    assert order("nobody", "no-search", 5.0) == "unattributed"
    got = store.ab.ab_moments(exp)
    for arm in (0, 1):
        for m in ("orders", "revenue"):
            want = per_user_moments({u: v[m] for (a, u), v in values.items() if a == arm},
                                    users[arm])
            have = Moments.from_json(got[arm][m])
            assert have.n == want.n == len(set(users[arm])) == got[arm]["ctr"]["n"]
            assert have.total == pytest.approx(want.total, abs=1e-9)
            assert have.squares == pytest.approx(want.squares, abs=1e-9)
    assert int(rd.hget(f"rd:{{{exp}}}:counters", "ab_outcomes")) == len(sent)
    for key in rd.scan_iter(match=f"rd:{{{exp}}}*"):
        rd.delete(key)


def test_each_metrics_first_decision_is_kept_apart(store):
    """A decision stands once a look's interval excluded 0 (the confidence sequence's
    intervals hold together): kept per metric and treatment, the primary's under the
    treatment's name, a conversion metric's beside it, neither overwriting the other."""
    from service.ab.report import keep_decisions

    exp = secrets.token_hex(6)
    decided = {"decided": True, "direction": 1, "difference": 0.1, "interval": [0.02, 0.2],
               "lift": 0.2, "lift_interval": [0.05, 0.35]}
    undecided = {**decided, "decided": False, "direction": 0}
    users = {"prod": 900, "new": 910}
    assert keep_decisions(store, exp, {"new": undecided}, users, 1.0) == {}
    ctr = keep_decisions(store, exp, {"new": decided}, users, 2.0)
    assert ctr["new"]["users"] == 1810 and ctr["new"]["decided_at"] == 2.0
    assert keep_decisions(store, exp, {"new": undecided}, users, 3.0, metric="revenue") == {}
    later = {**decided, "direction": -1}  # a later look never replaces the first decision
    rev = keep_decisions(store, exp, {"new": later}, {"prod": 2000, "new": 2000}, 4.0,
                         metric="revenue")
    assert rev["new"]["direction"] == -1 and rev["new"]["users"] == 4000
    assert keep_decisions(store, exp, {"new": decided}, users, 5.0,
                          metric="revenue")["new"]["decided_at"] == 4.0
    assert keep_decisions(store, exp, {"new": undecided}, users, 6.0) == ctr
    assert set(store.ab.ab_decisions(exp)) == {"new", "revenue:new"}
