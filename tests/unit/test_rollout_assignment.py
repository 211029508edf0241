"""Sticky assignment of a placement's searches (rollout.hashing, rollout.allocation,
rollout.assignment): the shared cases file, the split over 5,000 users, stickiness when a
share changes, mutual exclusion."""

from __future__ import annotations

import numpy as np
import pytest

from rollout.allocation import allocate, check_ranges, share_buckets
from rollout.assignment import assign, experiment_of
from rollout.hashing import BUCKETS, bucket, fnv1a32
from tests import case_tables

CASES = case_tables.load("assignment")
USERS = [f"user-{i}" for i in range(5000)]


def test_fnv1a32_matches_the_reference_vectors():
    # the FNV reference's test vectors ("", "a", "foobar"): independent of our code
    for text, expected in CASES["fnv1a32"]:
        assert fnv1a32(text) == expected


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: f"{c['user']}|{c['salt']}")
def test_the_shared_cases(case):
    assert bucket(case["user"], case["salt"]) == case["bucket"]
    assert experiment_of(case["bucket"], case["ranges"]) == case["experiment"]
    assert assign(case["ranges"], case["salt"], case["user"]) == case["experiment"]


def split(assigned: list[str | None]) -> dict[str | None, float]:
    return {k: assigned.count(k) / len(assigned) for k in set(assigned)}


@pytest.mark.parametrize("salt", ["web", "mobile", "search-box-2"])
def test_two_experiments_at_10_and_30_percent_split_within_1_5_points(salt):
    ranges = allocate({}, {"a": 0.1, "b": 0.3})
    assigned = [assign(ranges, salt, u) for u in USERS]
    got = split(assigned)
    assert abs(got["a"] - 0.1) <= 0.015, got
    assert abs(got["b"] - 0.3) <= 0.015, got
    assert abs(got[None] - 0.6) <= 0.015, got
    # every user's assignment is the same on three searches; nobody is in two experiments
    for u, first in zip(USERS, assigned, strict=True):
        assert assign(ranges, salt, u) == first == assign(ranges, salt, u)
    assert set(assigned) == {"a", "b", None}


def test_without_a_user_each_search_is_drawn_and_the_split_holds():
    ranges = allocate({}, {"a": 0.1, "b": 0.3})
    rng = np.random.default_rng(7)
    got = split([assign(ranges, "web", None, rng) for _ in range(5000)])
    assert abs(got["a"] - 0.1) <= 0.015 and abs(got["b"] - 0.3) <= 0.015, got
    with pytest.raises(ValueError, match="random generator"):
        assign(ranges, "web", "")


def test_growing_from_10_to_20_percent_keeps_everyone_who_was_in():
    before = allocate({}, {"a": 0.1, "b": 0.3})
    after = allocate(before, {"a": 0.2, "b": 0.3})
    was = {u: assign(before, "web", u) for u in USERS}
    now = {u: assign(after, "web", u) for u in USERS}
    in_a = [u for u in USERS if was[u] == "a"]
    kept = sum(now[u] == "a" for u in in_a) / len(in_a)
    assert kept >= 0.85  # the target; the allocation keeps all of them
    assert kept == 1.0
    # b is untouched, and a's new users come from control only
    assert all(now[u] == "b" for u in USERS if was[u] == "b")
    assert all(was[u] is None for u in USERS if now[u] == "a" and was[u] != "a")
    assert abs(split(list(now.values()))["a"] - 0.2) <= 0.015


def test_shrinking_keeps_only_users_who_were_in():
    before = allocate({}, {"a": 0.1, "b": 0.3})
    after = allocate(before, {"a": 0.1, "b": 0.05})
    for u in USERS:
        if assign(after, "web", u) == "b":
            assert assign(before, "web", u) == "b"
    assert after["a"] == before["a"]


def test_many_share_changes_keep_the_invariants():
    # seeded random walk of shares over three experiments: the ranges stay disjoint and of
    # the right size, an unchanged share keeps its ranges, a growing one keeps its buckets,
    # a shrinking one keeps a subset of them
    rng = np.random.default_rng(3)
    shares = {"a": 0.1, "b": 0.2, "c": 0.0}
    ranges = allocate({}, shares)
    for _ in range(300):
        name = str(rng.choice(list(shares)))
        others = sum(v for k, v in shares.items() if k != name)
        shares[name] = round(float(rng.uniform(0, 1 - others)), 4)
        new = allocate(ranges, shares)
        check_ranges(new)
        for k, v in shares.items():
            held = {b for s, e in new.get(k, []) for b in range(s, e)}
            old = {b for s, e in ranges.get(k, []) for b in range(s, e)}
            assert len(held) == share_buckets(v)
            assert old <= held or held <= old
            if k != name:
                assert new.get(k, []) == ranges.get(k, [])
        ranges = new


def test_stopping_an_experiment_frees_its_buckets_and_bad_shares_are_refused():
    ranges = allocate({}, {"a": 0.1, "b": 0.3})
    assert allocate(ranges, {"b": 0.3}) == {"b": [[1000, 4000]]}
    assert allocate(allocate(ranges, {"b": 0.3}), {"b": 0.3, "c": 0.2}) == {
        "b": [[1000, 4000]], "c": [[0, 1000], [4000, 5000]]}
    with pytest.raises(ValueError, match=r"add up to 1\.1 .*at most 1"):
        allocate(ranges, {"a": 0.8, "b": 0.3})
    with pytest.raises(ValueError, match="from 0 to 1"):
        allocate({}, {"a": 1.5})
    with pytest.raises(ValueError, match="overlap"):
        check_ranges({"a": [[0, 10]], "b": [[5, 20]]})
    with pytest.raises(ValueError, match="start < end"):
        check_ranges({"a": [[10, 10]]})
    with pytest.raises(ValueError, match=r"\[start, end\]"):
        check_ranges({"a": [[0.5, 10]]})
    assert share_buckets(1) == BUCKETS and share_buckets(0.00004) == 0
