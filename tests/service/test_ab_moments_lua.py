"""The A/B moments in Lua (``ab_moments.lua``'s ``ab_move``, which ``ab_search.lua`` and
``ab_click.lua`` call) against the one table of cases they share with Python
(``tests/cases/ab_moments.json``; the Python side: tests/unit/test_ab_moments_cases.py),
evaluated by a real Redis."""

from __future__ import annotations

import secrets

import pytest

from rollout.ab import Moments
from service.store.base import lua
from tests import case_tables

TABLE = case_tables.load("ab_moments")
#: every move of a case in one call: ARGV holds (s0, c0, s1, c1) per move
MOVES = lua("ab_moments") + """
for k = 1, #ARGV, 4 do
  ab_move(KEYS[1], '0', tonumber(ARGV[k]), tonumber(ARGV[k + 1]), tonumber(ARGV[k + 2]),
          tonumber(ARGV[k + 3]))
end
return redis.call('HGETALL', KEYS[1])
"""


@pytest.mark.parametrize("case", TABLE["cases"], ids=lambda c: c["name"])
def test_the_lua_moments_add_up_as_the_table_says(rd, case):
    key = f"rd:{{test-{secrets.token_hex(4)}}}:ab:m"
    args, was = [], {}
    for move in case["moves"]:
        s0, c0 = was.get(move["user"], (0, 0))
        args += [s0, c0, *move["to"]]
        was[move["user"]] = tuple(move["to"])
    flat = rd.eval(MOVES, 1, key, *args)
    rd.delete(key)
    fields = {k.decode(): v.decode() for k, v in zip(flat[::2], flat[1::2], strict=True)}
    for metric, want in case["moments"].items():
        got = Moments.from_json({part: fields.get(f"0:{metric}:{part}", "0")
                                 for part in ("n", "total", "squares")})
        assert got.to_json() == want, metric  # exactly: dyadic
