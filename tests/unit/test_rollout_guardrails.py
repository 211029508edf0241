"""Guardrails (rollout.guardrails): each rule trips on clear harm with a reason, never on
a handful of searches, and rarely on noise (seeded simulations, tolerances stated)."""

from __future__ import annotations

import numpy as np
import pytest

from bandits.params import declared_default
from rollout.guardrails import (
    LATENCY_EDGES_MS,
    PARAMS,
    RULES,
    PageCounters,
    RankerCounters,
    check_params,
    evaluate,
    latency_bucket,
    p95_ms,
)

rng_seed = 11


def histogram(latencies_ms) -> tuple[int, ...]:
    counts = [0] * (len(LATENCY_EDGES_MS) + 1)
    for ms in latencies_ms:
        counts[latency_bucket(ms)] += 1
    return tuple(counts)


def ranker(rng, n, fail=0.0, empty=0.05, ms=20.0) -> RankerCounters:
    failures = int(rng.binomial(n, fail))
    answered = n - failures
    return RankerCounters(calls=n, failures=failures,
                          empty=int(rng.binomial(answered, empty)),
                          latency=histogram(rng.gamma(4.0, ms / 4.0, answered)))


def pages(rng, n, abandon=0.4) -> PageCounters:
    return PageCounters(settled=n, abandoned=int(rng.binomial(n, abandon)))


NO_PAGES = PageCounters()


def rules(trips) -> list[str]:
    return [t.rule for t in trips]


def test_every_threshold_is_declared_with_a_valid_default_and_a_description():
    assert check_params({k: p.default for k, p in PARAMS.items()})
    for key, p in PARAMS.items():
        assert p.desc and declared_default(p), key
    with pytest.raises(ValueError, match=r"unknown parameter 'max_error'.*valid: enabled"):
        check_params({"max_error": 0.1})
    with pytest.raises(ValueError, match="'max_failure_rate' of guardrails must be at most 1"):
        check_params({"max_failure_rate": 5})
    assert set(RULES) == {"failures", "empty", "latency", "abandonment"}


def test_latency_buckets_and_p95():
    assert latency_bucket(0) == 0 and latency_bucket(5) == 0 and latency_bucket(5.1) == 1
    assert latency_bucket(10**6) == len(LATENCY_EDGES_MS)
    assert p95_ms(()) is None
    # 100 calls: 90 in (0, 5], 10 in (5, 10]; the 95th is halfway through the second bucket
    assert p95_ms(histogram([1] * 90 + [7] * 10)) == pytest.approx(7.5)
    assert p95_ms(histogram([10**5] * 10)) == LATENCY_EDGES_MS[-1]


def test_a_handful_of_bad_searches_never_trips():
    rng = np.random.default_rng(rng_seed)
    control = ranker(rng, 5000)
    bad = RankerCounters(calls=30, failures=20, empty=10, latency=histogram([4000] * 10))
    assert evaluate(None, {"new": bad}, PageCounters(50, 50), control,
                    pages(rng, 5000)) == []


def test_a_ranker_that_always_fails_trips_at_min_calls_with_a_reason():
    rng = np.random.default_rng(rng_seed)
    control = ranker(rng, 5000)
    trips = evaluate(None, {"down": RankerCounters(calls=200, failures=200)}, NO_PAGES,
                     control, NO_PAGES)
    assert rules(trips) == ["failures"]
    assert trips[0].ranker == "down" and trips[0].observed == 1.0
    assert "failed 200 of its 200 calls" in trips[0].reason
    assert "max_failure_rate" in trips[0].reason
    assert evaluate(None, {"down": RankerCounters(calls=199, failures=199)}, NO_PAGES,
                    control, NO_PAGES) == []
    assert evaluate({"enabled": False}, {"down": RankerCounters(calls=999, failures=999)},
                    NO_PAGES, control, NO_PAGES) == []


def test_noise_below_the_thresholds_does_not_trip_over_repeated_checks():
    # a ranker that fails 3 % of the time, has the control's empty rate and latency, and
    # pages abandoned as often as the control's: checked every 100 searches up to 5,000,
    # in 20 seeded runs, no rule trips (tolerance: 0 trips in 1,000 checks)
    trips = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        for n in range(100, 5001, 100):
            control = ranker(rng, n)
            trips += len(evaluate(None, {"new": ranker(rng, n, fail=0.03)}, pages(rng, n),
                                  control, pages(rng, n)))
    assert trips == 0


@pytest.mark.parametrize(("harm", "rule"), [
    ({"fail": 0.2}, "failures"),
    ({"empty": 0.3}, "empty"),
    ({"ms": 300.0}, "latency"),
])
def test_a_harmful_ranker_trips_its_rule(harm, rule):
    rng = np.random.default_rng(rng_seed)
    control = ranker(rng, 2000)
    trips = evaluate(None, {"new": ranker(rng, 1000, **harm)}, NO_PAGES, control, NO_PAGES)
    assert rules(trips) == [rule]
    assert "'new'" in trips[0].reason and trips[0].observed > trips[0].threshold


def test_latency_needs_the_ratio_and_the_margin():
    rng = np.random.default_rng(rng_seed)
    fast_control = ranker(rng, 2000, ms=4.0)
    # three times slower but 12 ms against 4 ms: under min_p95_excess_ms
    assert evaluate(None, {"new": ranker(rng, 1000, ms=12.0)}, NO_PAGES, fast_control,
                    NO_PAGES) == []
    trips = evaluate({"min_p95_excess_ms": 0}, {"new": ranker(rng, 1000, ms=12.0)},
                     NO_PAGES, fast_control, NO_PAGES)
    assert rules(trips) == ["latency"] and "at p95" in trips[0].reason
    # 1.5 times slower and 100 ms more: under max_p95_ratio
    assert evaluate(None, {"new": ranker(rng, 1000, ms=300.0)}, NO_PAGES,
                    ranker(rng, 2000, ms=200.0), NO_PAGES) == []


def test_abandonment_over_the_controls_trips_after_min_pages():
    rng = np.random.default_rng(rng_seed)
    control = ranker(rng, 2000)
    worse = pages(rng, 2000, abandon=0.55)
    trips = evaluate(None, {}, worse, control, pages(rng, 2000, abandon=0.4))
    assert rules(trips) == ["abandonment"] and trips[0].ranker is None
    assert "got no click" in trips[0].reason and "max_abandonment_excess" in trips[0].reason
    # the same rates on fewer pages than min_pages: nothing
    assert evaluate(None, {}, PageCounters(499, 300), control, PageCounters(5000, 2000)) == []
    # 3 points worse than the control: under the 5-point limit
    assert evaluate(None, {}, pages(rng, 5000, abandon=0.43), control,
                    pages(rng, 5000, abandon=0.4)) == []


def test_the_rollout_page_shows_every_threshold_and_rule():
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/operations/rollout.md").read_text()
    spec = importlib.util.spec_from_file_location("docs_hooks", root / "docs/hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    assert hooks.GUARDRAILS_MARKER in page  # replaced by the table at build time
    table = hooks.guardrails_reference()
    for name, p in PARAMS.items():
        assert f"| `{name}` | {p.type_name} | {declared_default(p)} |" in table, name
    for rule in RULES:
        assert f"| `{rule}` |" in page, rule


def test_inconsistent_counters_are_refused():
    with pytest.raises(ValueError, match="failures <= calls"):
        RankerCounters(calls=5, failures=6)
    with pytest.raises(ValueError, match="empty <= calls - failures"):
        RankerCounters(calls=5, failures=2, empty=4)
    with pytest.raises(ValueError, match="abandoned <= settled"):
        PageCounters(settled=3, abandoned=4)
