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
