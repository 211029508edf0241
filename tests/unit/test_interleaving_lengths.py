"""Lists of different lengths (issue 32): the same ranker asked for 5 and for 10 results
must not win against itself. The rule (:func:`interleaving.base.nested_depth`): when
every list is a prefix of the longest, the documents past the shorter lists' end are
shown and credit nobody; lists that disagree keep the methods' usual rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import interleaving as il
from interleaving.base import nested_depth

LONG = [f"d{i}" for i in range(10)]
SHORT = LONG[:5]


@pytest.mark.parametrize("method", ["team_draft", "probabilistic"])
@pytest.mark.parametrize("order", [(SHORT, LONG), (LONG, SHORT)])
def test_nested_lists_tie_on_any_clicks(method, order):
    for seed in range(20):
        shown, record = il.interleave(method, list(order), 10, np.random.default_rng(seed))
        # the shared top 5 (in the method's order), then the rest of the longest list
        assert sorted(shown[:5]) == SHORT and shown[5:] == LONG[5:]
        for clicked in ([0], [7], [2, 8], list(range(10))):
            assert il.credit(record, clicked) == [(0, 1, 0.5)]


@pytest.mark.parametrize("method", ["team_draft_multileave", "probabilistic_multileave"])
def test_nested_lists_tie_when_multileaved(method):
    shown, record = il.interleave(method, [SHORT, LONG, LONG[:8]], 10,
                                  np.random.default_rng(1))
    assert sorted(shown[:5]) == SHORT and shown[5:] == LONG[5:]
    assert {s for _, _, s in il.credit(record, [6, 9])} == {0.5}


@pytest.mark.parametrize("method", ["team_draft", "probabilistic"])
def test_the_next_page_of_nested_lists_still_ties(method):
    rng = np.random.default_rng(3)
    shown, record = il.interleave(method, [SHORT, LONG], 5, rng)
    shown, record = il.extend(record, shown, [SHORT, [*LONG, "d10", "d11"]], 10, rng)
    assert len(shown) == 10 and il.credit(record, [1, 6, 9]) == [(0, 1, 0.5)]


@pytest.mark.parametrize("method", ["team_draft", "probabilistic"])
def test_lists_that_disagree_keep_the_usual_rules(method):
    # the short list is not a prefix of the long one: the long list's own documents
    # credit it, as before (team draft drafts them, probabilistic samples them)
    a, b = ["x0", "x1"], LONG
    wins = []
    for seed in range(30):
        shown, record = il.interleave(method, [a, b], 10, np.random.default_rng(seed))
        wins.append(il.credit(record, [shown.index("d1")])[0][2])
    assert max(wins) < 0.5  # a click on a document only b returned favours b


def test_an_empty_list_is_not_nested():
    assert nested_depth([[], LONG]) is None
    _shown, record = il.interleave("team_draft", [[], LONG], 10, np.random.default_rng(0))
    assert il.credit(record, [0]) == [(0, 1, 0.0)]  # a ranker that returned nothing loses


def test_nested_depth_examples():
    assert nested_depth([SHORT, LONG]) == 5 and nested_depth([LONG, LONG]) == 10
    for perm in itertools.permutations([SHORT, LONG, LONG[:7]]):
        assert nested_depth(list(perm)) == 5
    assert nested_depth([["d0", "d2"], LONG]) is None
