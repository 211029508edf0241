"""The guard's check in Python (:class:`service.credit.guard.Guard`) against the one table of
cases it shares with the credit script's Lua (``tests/cases/guard.json``; the Lua
side: tests/service/test_guard_lua.py)."""

from __future__ import annotations

import pytest

from service.credit.guard import Guard
from service.store.base import lua
from tests import case_tables

CASES = case_tables.load("guard")


def _id(case: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items())


@pytest.mark.parametrize("case", CASES["trips"], ids=_id)
def test_trips_as_the_table_says(case):
    guard = Guard(case["q"], {}, divergence=case["kl"])
    assert guard.trips(case["w_ij"], case["w_ji"], case["side"]) is case["trips"]


@pytest.mark.parametrize("case", CASES["periodic"], ids=_id)
def test_periodic_as_the_table_says(case):
    assert Guard(1.0, {}, period=case["period"]).periodic(case["n"]) is case["held"]


def test_the_table_can_tell_the_implementations_apart():
    # each test, side and answer occurs, so a check that ignored the side, the divergence
    # test or the period would contradict some case
    seen = {(c["kl"], c["side"], c["trips"]) for c in CASES["trips"]}
    assert seen == {(kl, side, trips) for kl in (False, True) for side in (1, 2, 3)
                    for trips in (False, True)}
    assert {c["held"] for c in CASES["periodic"]} == {False, True}
    # and a wrong check does contradict it: one that ignores the side
    wrong = [c for c in CASES["trips"]
             if Guard(c["q"], {}, divergence=c["kl"]).trips(c["w_ij"], c["w_ji"], 1)
             is not c["trips"]]
    assert wrong


def test_the_credit_script_runs_the_shared_guard():
    # the credit script is guard.lua followed by credit.lua, which calls its functions
    # and keeps no copy of the condition
    script = lua("credit")
    assert script.startswith(lua("guard"))
    body = script[len(lua("guard")):]
    assert "guard_trips(" in body and "guard_periodic(" in body
    assert "math.log" not in body and "d * d" not in body


@pytest.mark.parametrize("case", CASES["edge"], ids=_id)
def test_edge_trips_as_the_table_says(case):
    guard = Guard(case["q"], {}, divergence=case["kl"], edge_big=case["big"],
                  edge_floor=case["floor"])
    assert guard.trips(case["w_ij"], case["w_ji"], case["side"]) is case["trips"]


def test_the_edge_cases_tell_the_codes_apart():
    # every code 4-7 with both answers, and pairs one comparison apart across the boundary
    seen = {(c["side"], c["trips"]) for c in CASES["edge"]}
    assert seen == {(side, trips) for side in (4, 5, 6, 7) for trips in (False, True)}
    wrong = [c for c in CASES["edge"]  # a check that ignored the edge would fail some
             if Guard(c["q"], {}, divergence=c["kl"]).trips(c["w_ij"], c["w_ji"],
                                                            max(c["side"] - 4, 1))
             is not c["trips"]]
    assert wrong


def test_the_edge_guard_is_the_policys_test_with_a_margin():
    # the guard fires on the least count that draws the edge (the policy's own test,
    # bandits.confidence.crossed) and not one comparison before it
    import numpy as np

    from bandits import confidence
    for level in (0.025, 0.05 / 14, 0.05 / 270):
        big, floor = confidence.guard_bounds(level)
        guard = Guard(1e9, {}, edge_big=big, edge_floor=floor)
        for n in (12, 30, 77, 500, 3000):
            hit = [w for w in range(n + 1)
                   if confidence.crossed(np.array([float(w)]), np.array([float(n)]), level)[0]]
            for w in range(n // 2, n + 1):
                assert guard.trips(float(w), float(n - w), 4) is (w in hit), (level, n, w)
