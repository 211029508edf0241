"""The guard's check in Lua (``service/store/guard.lua``, run by the credit script) against
the one table of cases it shares with Python (``tests/cases/guard.json``; the
Python side: tests/unit/test_guard_cases.py), evaluated by a real Redis."""

from __future__ import annotations

import pytest

from service.store.base import lua
from tests import case_tables

CASES = case_tables.load("guard")

#: every case in one call: ARGV holds the cases, the reply one 1/0 per case
TRIPS = lua("guard") + """
local out = {}
for k = 1, #ARGV, 5 do
  local q, kl, side = tonumber(ARGV[k]), ARGV[k + 1] == '1', tonumber(ARGV[k + 2])
  out[#out + 1] = guard_trips(q, kl, side, tonumber(ARGV[k + 3]), tonumber(ARGV[k + 4]))
    and 1 or 0
end
return out
"""
EDGE = lua("guard") + """
local out = {}
for k = 1, #ARGV, 7 do
  local q, kl, side = tonumber(ARGV[k]), ARGV[k + 1] == '1', tonumber(ARGV[k + 2])
  out[#out + 1] = guard_trips(q, kl, side, tonumber(ARGV[k + 3]), tonumber(ARGV[k + 4]),
                              tonumber(ARGV[k + 5]), tonumber(ARGV[k + 6])) and 1 or 0
end
return out
"""
PERIODIC = lua("guard") + """
local out = {}
for k = 1, #ARGV, 2 do
  out[#out + 1] = guard_periodic(tonumber(ARGV[k]), tonumber(ARGV[k + 1])) and 1 or 0
end
return out
"""


def _args(rows: list[dict], fields: tuple[str, ...]) -> list[str]:
    out = []
    for row in rows:
        for f in fields:
            v = row[f]
            out.append(("1" if v else "0") if isinstance(v, bool) else repr(v))
    return out


def test_the_lua_guard_answers_every_case_as_the_table_says(rd):
    rows = CASES["trips"]
    got = rd.eval(TRIPS, 0, *_args(rows, ("q", "kl", "side", "w_ij", "w_ji")))
    wrong = [row for row, g in zip(rows, got, strict=True) if bool(g) is not row["trips"]]
    assert not wrong, wrong
    rows = CASES["edge"]
    got = rd.eval(EDGE, 0, *_args(rows, ("q", "kl", "side", "w_ij", "w_ji", "big", "floor")))
    wrong = [row for row, g in zip(rows, got, strict=True) if bool(g) is not row["trips"]]
    assert not wrong, wrong
    rows = CASES["periodic"]
    got = rd.eval(PERIODIC, 0, *_args(rows, ("period", "n")))
    wrong = [row for row, g in zip(rows, got, strict=True) if bool(g) is not row["held"]]
    assert not wrong, wrong


@pytest.mark.parametrize("side", [2, 3])
def test_a_wrong_side_would_be_caught(rd, side):
    # the table holds cases where only the side decides: the Lua check given side 1
    # instead disagrees with one of them
    rows = [dict(r, side=1) for r in CASES["trips"] if r["side"] == side]
    got = rd.eval(TRIPS, 0, *_args(rows, ("q", "kl", "side", "w_ij", "w_ji")))
    expected = [r["trips"] for r in CASES["trips"] if r["side"] == side]
    assert [bool(g) for g in got] != expected


def test_the_lua_edge_fires_where_python_does_on_every_count(rd):
    # the bets' constants are computed in Lua: on every split of n comparisons, around the
    # boundary too, both implementations answer alike (the cases table has a few)
    from bandits import confidence
    from service.credit.guard import Guard
    for level in (0.025, 0.05 / 270):
        big, floor = confidence.guard_bounds(level)
        guard = Guard(1e9, {}, edge_big=big, edge_floor=floor)
        rows = [{"q": 1e9, "kl": True, "side": 4, "w_ij": float(w), "w_ji": float(n - w),
                 "big": big, "floor": floor}
                for n in (9, 40, 41, 300, 2001) for w in range(n + 1)]
        got = rd.eval(EDGE, 0, *_args(rows, ("q", "kl", "side", "w_ij", "w_ji", "big", "floor")))
        want = [guard.trips(r["w_ij"], r["w_ji"], 4) for r in rows]
        assert sum(want) > 100 and [bool(g) for g in got] == want
