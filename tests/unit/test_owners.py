"""Whose copy of a shown document a page shows (:mod:`interleaving.owners`), with the
lists and records the interleaving methods really produce."""

from __future__ import annotations

import numpy as np
import pytest

import interleaving
from interleaving.owners import owners
from service.search.serve import shown_copies

A = [f"d{i}" for i in range(8)]
B = ["d3", "d0", "d9", "d1", "d2", "d8"]


@pytest.mark.parametrize("method", ["team_draft", "team_draft_multileave", "sosm"])
def test_a_slot_with_a_team_shows_its_team_s_copy(method):
    for seed in range(20):
        shown, record = interleaving.interleave(method, [A, B], 6, np.random.default_rng(seed))
        got = owners(record, shown, [A, B])
        for slot, team in enumerate(record["teams"]):
            if team >= 0:
                assert got[slot] == team


@pytest.mark.parametrize("method", ["probabilistic", "balanced", "probabilistic_multileave"])
def test_without_teams_the_highest_ranking_copy_first_participant_on_ties(method):
    for seed in range(20):
        shown, record = interleaving.interleave(method, [A, B], 6, np.random.default_rng(seed))
        got = owners(record, shown, [A, B])
        for doc, o in zip(shown, got, strict=True):
            ra = A.index(doc) if doc in A else 99
            rb = B.index(doc) if doc in B else 99
            assert o == (0 if ra <= rb else 1)


def test_identical_tops_go_to_the_first_participant_and_fields_follow():
    a = [{"id": "x", "price": 1}, {"id": "y", "price": 2}]
    b = [{"id": "x", "price": 10}, {"id": "z", "price": 30}]
    record = {"teams": [-1, 1, 0]}
    got = shown_copies(record, ["x", "z", "y"], [a, b])
    assert [g["price"] for g in got] == [1, 30, 2]
    # one list alone (no duel): its own copies; an unknown document: its id alone
    assert shown_copies(None, ["x", "q"], [b]) == [b[0], {"id": "q"}]
