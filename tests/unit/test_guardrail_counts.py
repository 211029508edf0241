"""The guardrail counts a placement search writes, and how they are read back for
:func:`rollout.guardrails.evaluate` (service/placements/guardrails.py; pure)."""

from __future__ import annotations

from types import SimpleNamespace

from rollout.call_counts import fields, ranker_counters, tally
from rollout.guardrails import latency_bucket


def test_a_fetch_counts_calls_failures_empty_answers_and_latency():
    calls: list = []
    a, b = SimpleNamespace(name="a"), SimpleNamespace(name="b")
    tally(calls, [(0, a, [{"id": 1}]), (1, b, [])], ["c"], waited_s=0.030)
    got = fields(calls, "g:")
    lat = f"lat:{latency_bucket(30.0)}"
    assert got == {"g:a:calls": 1, f"g:a:{lat}": 1, "g:b:calls": 1, "g:b:empty": 1,
                   f"g:b:{lat}": 1, "g:c:calls": 1, "g:c:failures": 1}


def test_counts_read_back_as_ranker_counters():
    calls: list = []
    r = SimpleNamespace(name="r")
    for _ in range(3):
        tally(calls, [(0, r, [{"id": 1}])], [], waited_s=0.010)
    tally(calls, [], ["r"], waited_s=1.0)
    c = ranker_counters(fields(calls, "g:"), "g:r:")
    assert (c.calls, c.failures, c.empty, sum(c.latency)) == (4, 1, 0, 3)
    assert c.latency[latency_bucket(10.0)] == 3
    control = ranker_counters(fields(calls))  # the control's own hash: no prefix
    assert control.calls == 4
