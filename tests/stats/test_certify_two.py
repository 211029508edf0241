"""Two rankers: ``recommended`` certifies at the comparison where its edge test's boundary
is crossed, so the comparisons it needs track the information floor (issue 47's target:
median ≤ 12/kl(p, ½) + 40 at every preference 0.55–0.9, every run naming the right
ranker). The benchmark with more runs: bench/certify_two.py (BENCHMARKS.md).

Seeded: 100 runs per preference, the same every time. Tolerance: the median of 100 runs
is within about ±15 % of the true median here, and the measured medians are 0.37–0.29×
the target, so the assertion has more than 2× headroom; the check against the floor
(median ≥ 0.6 × floor) catches a test that certifies too early to be valid."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from certify_two import PREFERENCES, table

pytestmark = pytest.mark.stats


def test_two_rankers_certify_near_the_information_floor():
    rows = table(100, 1, 0.05, None, PREFERENCES)
    for r in rows:
        assert r["certified"] == r["runs"] and r["right"] == r["runs"], r
        assert r["median"] <= r["target"], r
        assert r["median"] >= 0.6 * r["floor"], r


def test_the_check_period_is_no_floor():
    # the policy's periodic check every 1,000 comparisons used to be the earliest a
    # certificate could come; it no longer matters
    fast = table(40, 1, 0.05, 1000, (0.8,))[0]
    assert fast["median"] <= 60 and fast["right"] == fast["runs"]
