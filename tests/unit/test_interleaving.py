"""The interleaving interface: shown lists, records, credit, edge cases, seeding."""

from __future__ import annotations

import json

import numpy as np
import pytest

import interleaving as il
from interleaving.base import identical_prefix

PAIRWISE = ["team_draft", "probabilistic", "balanced"]
MULTI = ["team_draft_multileave", "probabilistic_multileave", "sosm"]


def test_methods_registry_matches_the_interface():
    assert set(il.METHODS) == set(PAIRWISE) | set(MULTI)
    assert set(il.PAIRWISE_METHODS) == set(PAIRWISE)
    assert set(il.MULTILEAVE_METHODS) == set(MULTI)
    with pytest.raises(ValueError, match="unknown interleaving method"):
        il.interleave("nope", [["a"], ["b"]], 3, np.random.default_rng(0))


@pytest.mark.parametrize("method", il.METHODS)
def test_shown_list_is_distinct_bounded_and_drawn_from_the_inputs(method):
    rng = np.random.default_rng(11)
    rankings = [["a", "b", "c", "d", "e"], ["c", "f", "a", "g", "h"]]
    if method in MULTI:
        rankings.append(["i", "a", "j", "b"])
    pool = {d for r in rankings for d in r}
    for k in (1, 3, 5, 20):
        for _ in range(30):
            shown, record = il.interleave(method, rankings, k, rng)
            assert len(shown) == len(set(shown)) == min(k, len(pool))
            assert set(shown) <= pool
            assert record["method"] == method and record["len"] == len(shown)
            assert record["n"] == len(rankings)


@pytest.mark.parametrize("method", il.METHODS)
def test_record_survives_json_and_credits_the_same(method):
    rng = np.random.default_rng(5)
    rankings = [["a", "b", "c", "d"], ["d", "c", "x", "a"], ["b", "y", "a"]]
    rankings = rankings[:2] if method in PAIRWISE else rankings
    for _ in range(20):
        shown, record = il.interleave(method, rankings, 4, rng)
        clicks = sorted(rng.choice(len(shown), size=rng.integers(1, len(shown) + 1),
                                   replace=False).tolist())
        stored = json.loads(json.dumps(record))
        assert il.credit(stored, clicks) == il.credit(record, clicks)


@pytest.mark.parametrize("method", il.METHODS)
def test_credit_shape_no_clicks_no_duel_and_range(method):
    rng = np.random.default_rng(2)
    m = 2 if method in PAIRWISE else 4
    rankings = [[f"d{(i * 3 + j) % 9}" for j in range(6)] for i in range(m)]
    shown, record = il.interleave(method, rankings, 6, rng)
    assert il.credit(record, []) == []
    outcomes = il.credit(record, [0, 2])
    assert [(a, b) for a, b, _ in outcomes] == [(a, b) for a in range(m) for b in range(a + 1, m)]
    assert all(0.0 <= s <= 1.0 for _, _, s in outcomes)
    if method in PAIRWISE:
        assert len(outcomes) == 1
    with pytest.raises(ValueError, match="outside the shown list"):
        il.credit(record, [len(shown)])
    with pytest.raises(ValueError, match="outside the shown list"):
        il.credit(record, [-1])


@pytest.mark.parametrize("method", PAIRWISE)
def test_pairwise_methods_need_exactly_two_rankings(method):
    with pytest.raises(ValueError, match="exactly 2"):
        il.interleave(method, [["a"], ["b"], ["c"]], 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="exactly 2"):
        il.interleave(method, [["a"]], 3, np.random.default_rng(0))


def test_wrong_record_for_method_is_refused():
    _shown, record = il.interleave("team_draft", [["a"], ["b"]], 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="record is for"):
        il.get_method("balanced").credit(record, [0])


# ---------------------------------------------------------------------- edge cases
@pytest.mark.parametrize("method", il.METHODS)
def test_duplicates_within_and_across_rankers(method):
    rng = np.random.default_rng(9)
    rankings = [["a", "a", "b", "c"], ["b", "a", "b", "d"]]
    if method in MULTI:
        rankings.append(["c", "c", "a"])
    for _ in range(30):
        shown, record = il.interleave(method, rankings, 10, rng)
        assert sorted(shown) == sorted({d for r in rankings for d in r})
        assert il.credit(record, list(range(len(shown))))  # every click position is valid


@pytest.mark.parametrize("method", il.METHODS)
def test_lists_shorter_than_the_page(method):
    rng = np.random.default_rng(4)
    rankings = [["a", "b"], ["c"]]
    if method in MULTI:
        rankings.append(["d", "a"])
    for _ in range(20):
        shown, _record = il.interleave(method, rankings, 10, rng)
        assert sorted(shown) == sorted({d for r in rankings for d in r})


@pytest.mark.parametrize("method", il.METHODS)
def test_one_empty_list_fills_the_page_from_the_other_and_loses(method):
    rng = np.random.default_rng(8)
    full = ["a", "b", "c", "d", "e"]
    for order in ([full, []], [[], full]):
        rankings = [*order, ["a", "z"]] if method in MULTI else order
        empty = rankings.index([])
        other = 1 - empty
        for _ in range(10):
            shown, record = il.interleave(method, rankings, 4, rng)
            assert len(shown) == 4 and set(shown) <= set(full) | {"z"}
            if method == "sosm":
                # SOSM scores the page, not teams: an empty list counts as a ranker of
                # unknown order (mean credit of all ranks), so it loses a click on the
                # document the full list ranks first among those shown
                click = min((p for p, d in enumerate(shown) if d in full),
                            key=lambda p: full.index(shown[p]))
            else:  # a document only the full list has
                click = next(p for p, d in enumerate(shown) if d not in ("a", "z"))
            outcomes = {(a, b): s for a, b, s in il.credit(record, [click])}
            a, b = min(empty, other), max(empty, other)
            s = outcomes[(a, b)]
            # the ranker with documents wins (exactly: only it could have shown them)
            assert s == (1.0 if a == other else 0.0)


@pytest.mark.parametrize("method", il.METHODS)
def test_all_lists_empty_gives_an_empty_page_and_no_duel(method):
    rankings = [[], []] if method in PAIRWISE else [[], [], []]
    shown, record = il.interleave(method, rankings, 5, np.random.default_rng(0))
    assert shown == [] and il.credit(record, []) == []


# ---------------------------------------------------------------------- team draft decisions
def test_team_draft_identical_prefix_goes_first_and_credits_no_team():
    rng = np.random.default_rng(0)
    assert identical_prefix([["a", "b", "c"], ["a", "b", "d"], ["a", "b"]], 10) == 2
    for _ in range(20):
        shown, record = il.interleave("team_draft", [["a", "b", "c", "e"], ["a", "b", "d"]], 4,
                                      rng)
        assert shown[:2] == ["a", "b"] and record["teams"][:2] == [-1, -1]
        assert il.credit(record, [0, 1]) == [(0, 1, 0.5)]  # clicks, but no credit: a tie
        assert sorted(record["teams"][2:]) == [0, 1]


def test_team_draft_keeps_drafting_from_the_longer_list():
    rng = np.random.default_rng(1)
    shown, record = il.interleave("team_draft", [["a"], ["b", "c", "d", "e"]], 5, rng)
    assert sorted(shown) == ["a", "b", "c", "d", "e"]
    assert record["teams"].count(0) == 1 and record["teams"].count(1) == 4
    assert shown[record["teams"].index(0)] == "a"


def test_team_draft_teams_stay_balanced():
    rng = np.random.default_rng(3)
    a = [f"a{i}" for i in range(10)]
    b = [f"b{i}" for i in range(10)]
    for _ in range(50):
        _, record = il.interleave("team_draft", [a, b], 9, rng)
        teams = record["teams"]
        for p in range(1, len(teams) + 1):
            assert abs(teams[:p].count(0) - teams[:p].count(1)) <= 1


def test_team_draft_multileave_gives_every_ranker_one_pick_per_round():
    rng = np.random.default_rng(6)
    rankings = [[f"r{j}d{i}" for i in range(5)] for j in range(4)]
    for _ in range(30):
        shown, record = il.interleave("team_draft_multileave", rankings, 8, rng)
        assert sorted(record["teams"][:4]) == [0, 1, 2, 3]
        assert sorted(record["teams"][4:]) == [0, 1, 2, 3]
        for p, t in enumerate(record["teams"]):
            assert shown[p].startswith(f"r{t}")


def test_multileave_with_a_single_ranking_shows_it_and_has_no_pairs():
    for method in MULTI:
        shown, record = il.interleave(method, [["a", "b", "c"]], 2, np.random.default_rng(0))
        assert shown == ["a", "b"] and il.credit(record, [0]) == []


# ---------------------------------------------------------------------- seeding
def test_seed_for_is_stable_and_repeats_the_same_list():
    assert il.seed_for("alice", "alpine lake") == il.seed_for("alice", "alpine lake")
    assert 0 <= il.seed_for("alice", "alpine lake", "exp1") < 2**64
    seeds = {il.seed_for(u, q, s) for u in ("a", "b") for q in ("x", "y") for s in ("", "1")}
    assert len(seeds) == 8
    assert il.seed_for("ab", "c") != il.seed_for("a", "bc")  # fields are separated
    rankings = [[f"a{i}" for i in range(10)], [f"b{i}" for i in range(10)]]
    for method in il.METHODS:
        lists = {tuple(il.interleave(method, rankings, 10,
                                     np.random.default_rng(il.seed_for("u", "q")))[0])
                 for _ in range(5)}
        assert len(lists) == 1


