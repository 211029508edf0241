"""The speed-up of a confirmed pair (service/reports/speedup.py): the searches each design
needed to decide, their ratio only when the A/B test agrees, and the median."""

from __future__ import annotations

from service.reports.speedup import for_pair, interleaving_sample, median

PAIR = {"interleaving": "i1", "ab": "a1", "winner": "new", "control": "prod",
        "ab_error_rate": 0.05,
        "interleaving_sample": interleaving_sample(
            {"champion": "new", "comparisons": 1000, "searches": 1120, "error_rate": 0.05},
            comparisons=4000, selections=9000, error_rate=0.05)}


def test_an_agreeing_decision_gives_the_ratio_and_the_sentence():
    got = for_pair(PAIR, {"users": 9100, "searches": 38400, "direction": 1}, True)
    assert got["speedup"] == 34.3
    assert got["sample_sizes"]["interleaving"]["searches"] == 1120  # the certification's
    assert got["sample_sizes"]["ab"] == {"searches": 38400, "users": 9100,
                                         "error_rate": 0.05}
    assert got["sample_sizes"]["same_error_rate"] is True
    assert got["speedup_statement"] == ("interleaving decided in 1,120 searches; its A/B "
                                        "confirmation needed 38,400 (9,100 users): 34×")


def test_no_ratio_before_the_ab_decides_or_when_it_disagrees():
    waiting = for_pair(PAIR, None, None)
    assert waiting["speedup"] is None and waiting["sample_sizes"]["ab"] is None
    assert waiting["speedup_statement"].endswith("its A/B confirmation has not decided yet")
    against = for_pair(PAIR, {"users": 500, "searches": 800, "direction": -1}, False)
    assert against["speedup"] is None
    assert against["speedup_statement"].endswith("needed 800 (500 users), in the other "
                                                 "direction")


def test_a_verdict_confirmed_without_a_certification_record_is_a_lower_bound():
    pair = {**PAIR, "ab_error_rate": 0.01, "interleaving_sample": interleaving_sample(
        None, comparisons=900, selections=1200, error_rate=0.05)}
    got = for_pair(pair, {"users": 3000, "searches": 6000, "direction": 1}, True)
    assert got["speedup"] == 5.0 and got["sample_sizes"]["same_error_rate"] is False
    assert got["speedup_statement"].startswith("interleaving had decided by 1,200 searches "
                                               "(when confirmed)")
    old = for_pair({k: v for k, v in PAIR.items() if k != "interleaving_sample"}, None, None)
    assert old == {"sample_sizes": None, "speedup": None, "speedup_statement": None}


def test_the_median_counts_only_pairs_with_a_ratio():
    assert median([None, None]) == {"median": None, "pairs": 0}
    assert median([3.0, 80.0, None, 10.0, 40.0]) == {"median": 25.0, "pairs": 4}
