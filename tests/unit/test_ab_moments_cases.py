"""The A/B moments in Python (:mod:`rollout.ab.moments`: a user's move is the
:func:`~rollout.ab.moments.increments` of each per-user metric) against the one table of
cases they share with ``ab_moments.lua`` (``tests/cases/ab_moments.json``; the Lua side:
tests/service/test_ab_moments_lua.py)."""

from __future__ import annotations

import pytest

from rollout.ab import Moments, UserCounts, increments
from tests import case_tables

TABLE = case_tables.load("ab_moments")
METRICS = ("ctr", "searches", "abandonment")


def moved(moves: list[dict]) -> dict[str, Moments]:
    """Each metric's moments after ``moves``, by increments (as the scripts add them)."""
    got = {m: Moments() for m in METRICS}
    was: dict[str, tuple[int, int]] = {}
    for move in moves:
        s0, c0 = was.get(move["user"], (0, 0))
        s1, c1 = move["to"]
        old = UserCounts(s0, c0).values() if s0 else None
        new = UserCounts(s1, c1).values()
        for m in METRICS:
            dn, dt, dq = increments(None if old is None else old[m], new[m])
            got[m] = Moments(got[m].n + dn, got[m].total + dt, got[m].squares + dq)
        was[move["user"]] = (s1, c1)
    return got


@pytest.mark.parametrize("case", TABLE["cases"], ids=lambda c: c["name"])
def test_the_increments_add_up_as_the_table_says(case):
    got = moved(case["moves"])
    assert {m: got[m].to_json() for m in METRICS} == case["moments"]  # exactly: dyadic


def test_the_table_can_tell_a_wrong_increment_apart():
    # a revision that adds the new value instead of the difference contradicts a case
    def wrong(moves):
        got = {m: [0, 0.0, 0.0] for m in METRICS}
        for move in moves:
            for m, x in UserCounts(*move["to"]).values().items():
                if m in got:
                    got[m] = [got[m][0] + 1, got[m][1] + x, got[m][2] + x * x]
        return got

    assert any({m: dict(zip(("n", "total", "squares"), v, strict=True))
                for m, v in wrong(c["moves"]).items()} != c["moments"]
               for c in TABLE["cases"])
