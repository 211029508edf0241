"""The pure A/B statistics (rollout.ab) and the SRM test (rollout.srm): sums that merge,
the boundary's algebra, the decision and its level split, and the e-value's definition.
Their levels over many seeded runs are in tests/stats/test_ab_rates.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rollout import srm
from rollout.ab import (
    Moments,
    UserCounts,
    analyse,
    compare,
    increments,
    margin,
    rho_for,
    users_to_decide,
)


def test_moments_merge_revise_and_increments_agree():
    rng = np.random.default_rng(1)
    xs = rng.random(200)
    m = Moments.of(xs)
    assert math.isclose(m.mean, xs.mean()) and math.isclose(m.variance, xs.var(ddof=1))
    merged = Moments.of(xs[:50]) + Moments.of(xs[50:])
    assert merged.n == m.n and math.isclose(merged.total, m.total)
    # a user's value revised: the same as if it had been the new value from the start
    revised = m.revise(xs[3], 0.25)
    direct = Moments.of([*xs[:3], 0.25, *xs[4:]])
    assert revised.n == direct.n and math.isclose(revised.squares, direct.squares)
    # counters kept by increments (as the service keeps them) equal the moments
    n, s, q = 0, 0.0, 0.0
    old = None
    for v in (0.0, 0.5, 1 / 3, 0.25):  # one user's CTR after each of their searches
        dn, ds, dq = increments(old, v)
        n, s, q, old = n + dn, s + ds, q + dq, v
    assert n == 1 and math.isclose(s, 0.25) and math.isclose(q, 0.0625)
    assert Moments.from_json({"n": "3", "total": "1.5", "squares": "1.25"}) == Moments(3, 1.5, 1.25)


def test_user_values():
    v = UserCounts(searches=4, clicked=3, conversions=2).values()
    assert v == {"ctr": 0.75, "searches": 4.0, "abandonment": 0.25, "conversions": 2.0}
    with pytest.raises(ValueError):
        UserCounts(searches=0).values()


@pytest.mark.parametrize("delta", [0.05, 0.001])
def test_rho_for_minimises_the_width_at_the_target(delta):
    n = 25_000
    best = margin(n, delta, rho_for(n, delta))
    for f in (0.5, 0.8, 1.25, 2.0):
        assert margin(n, delta, rho_for(n, delta) * f) > best


def test_margin_shrinks_and_exceeds_the_fixed_n_interval():
    rho = rho_for(10_000, 0.05)
    n = np.unique(np.geomspace(1, 1e9, 500).astype(int))
    m = margin(n, 0.05, rho)
    assert np.all(np.diff(m) <= 0)
    assert np.all(m * np.sqrt(n) > 1.96)  # never narrower than the fixed-n CI
    assert math.isinf(margin(0, 0.05, rho))


def test_users_to_decide_solves_the_boundary():
    rho = rho_for(10_000, 0.05)
    n = users_to_decide(0.02, 0.7, 0.05, rho)
    assert 0.7 * margin(n, 0.05, rho) <= 0.02 < 0.7 * margin(n - 1, 0.05, rho)
    assert users_to_decide(0.0, 0.7, 0.05, rho) is None


def test_identical_arms_are_not_decided_and_need_no_finite_users():
    a = Moments.of([0.0, 1.0] * 5_000)
    c = compare(a, a, 0.05)
    assert not c.decided and c.direction == 0 and c.users_needed is None
    assert c.interval[0] < 0 < c.interval[1] and c.covers(0.0)


def test_a_clear_difference_is_decided_and_its_estimate_is_consistent():
    rng = np.random.default_rng(3)
    t = Moments.of(rng.random(4_000) < 0.6)
    ctl = Moments.of(rng.random(4_000) < 0.5)
    c = compare(t, ctl, 0.05)
    assert c.decided and c.direction == 1 and c.users_needed == 0
    assert c.lift_interval[0] < c.lift < c.lift_interval[1]
    # fewer users: not decided yet, and the estimate says roughly how many more
    few = compare(Moments.of(rng.random(150) < 0.6), Moments.of(rng.random(150) < 0.5), 0.05)
    assert not few.decided and few.users_needed and few.users_needed > 0


def test_no_decision_below_min_users():
    t, c = Moments.of([1.0] * 50 + [0.0]), Moments.of([0.0] * 50 + [1.0])
    assert not compare(t, c, 0.05).decided
    assert compare(t, c, 0.05, min_users=10).decided


def test_analyse_splits_delta_over_the_treatments():
    ctl = Moments.of([0.0, 1.0] * 300)
    arms = {"prod": ctl, "a": ctl, "b": ctl, "c": ctl}
    out = analyse(arms, "prod", 0.06)
    assert sorted(out) == ["a", "b", "c"]
    assert all(math.isclose(c.delta, 0.02) for c in out.values())
    with pytest.raises(ValueError, match="control"):
        analyse(arms, "nope", 0.05)


# ------------------------------------------------------------------ SRM
def _sequential_log_e(seq: list[int], theta: np.ndarray, c: float) -> float:
    """The e-value built one user at a time: posterior predictive over the null."""
    alpha = c * theta
    counts = np.zeros_like(theta)
    log_e = 0.0
    for i in seq:
        pred = (alpha[i] + counts[i]) / (alpha.sum() + counts.sum())
        log_e += math.log(pred / theta[i])
        counts[i] += 1
    return log_e


def test_e_value_is_the_product_of_predictive_ratios_in_any_order():
    rng = np.random.default_rng(5)
    theta = np.array([0.7, 0.2, 0.1])
    seq = rng.choice(3, size=300, p=[0.6, 0.3, 0.1]).tolist()
    counts = np.bincount(seq, minlength=3)
    want = _sequential_log_e(seq, theta, srm.CONCENTRATION)
    assert math.isclose(srm.log_e_value(counts, theta), want, rel_tol=1e-9)
    assert math.isclose(_sequential_log_e(seq[::-1], theta, srm.CONCENTRATION), want,
                        rel_tol=1e-9)


def test_periods_multiply_and_expected_counts_add():
    p1 = srm.Period({"c": 0.9, "t": 0.1}, {"c": 880, "t": 120})
    p2 = srm.Period({"c": 0.5, "t": 0.5}, {"c": 510, "t": 490})
    r = srm.check([p1, p2])
    assert math.isclose(r.log_e, srm.log_e_value([880, 120], [0.9, 0.1])
                        + srm.log_e_value([510, 490], [0.5, 0.5]))
    assert r.expected == {"c": 1400.0, "t": 600.0} and r.observed == {"c": 1390, "t": 610}


def test_a_paused_arm_with_users_is_a_mismatch():
    r = srm.check([srm.Period({"c": 1.0, "t": 0.0}, {"c": 1000, "t": 30})])
    assert math.isinf(r.log_e) and r.flagged and r.arm == "t"


def test_the_minimum_deviation_keeps_big_samples_quiet():
    # 0.5 % of the treatment's users lost out of 10 million: strong evidence, tiny effect
    split = srm.Period({"c": 0.5, "t": 0.5}, {"c": 5_012_500, "t": 4_987_500})
    r = srm.check([split])
    assert r.e_value > 1000 and not r.flagged
    assert "below the minimum deviation" in r.message
    assert srm.check([split], min_relative=0.001).flagged


def test_team_balance_and_its_tests():
    rng = np.random.default_rng(2)
    fair = [[-1, *(([0, 1] if rng.random() < 0.5 else [1, 0]) * 5)] for _ in range(4000)]
    first, per_pos = srm.team_balance(fair)
    assert sum(first) == 4000 and len(per_pos) == 10
    assert not srm.check_first_pick(first).flagged
    assert not any(r.flagged for r in srm.check_positions(per_pos))
    biased = [[0, 1] * 5 if rng.random() < 0.6 else [1, 0] * 5 for _ in range(4000)]
    first, per_pos = srm.team_balance(biased)
    assert srm.check_first_pick(first).flagged
    assert srm.check_positions(per_pos)[0].flagged
    assert "first picks" in srm.check_first_pick(first).message


def test_certified_best_needs_every_pair_and_knows_the_direction():
    from rollout.ab import certified_best

    lo, mid, hi = (Moments.of([0.0, 1.0] * 3000), Moments.of([0.0, 1.0, 1.0] * 2000),
                   Moments.of([0.0, 1.0, 1.0, 1.0] * 1500))
    assert certified_best({"a": lo, "b": mid, "c": hi}, 0.05) == "c"
    assert certified_best({"a": lo, "b": mid, "c": hi}, 0.05, higher_is_better=False) == "a"
    # the best tied with another: nobody is certified
    assert certified_best({"a": lo, "b": hi, "c": hi}, 0.05) is None


def test_an_empty_comparison_is_json_and_says_so():
    import json

    c = compare(Moments(), Moments(), 0.05)
    assert not c.decided and c.users_needed is None
    d = c.to_json()
    json.dumps(d, allow_nan=False)
    assert d["difference"] is None and d["interval"] == [None, None]
    assert "not decided" in c.sentence()


def test_agreement_of_a_confirmed_verdict():
    from rollout.ab import agreement_rate, agrees

    up = compare(Moments.of([1.0] * 600 + [0.0] * 400), Moments.of([1.0] * 400 + [0.0] * 600),
                 0.05)
    assert up.decided and agrees(0.55, up) and not agrees(0.45, up)
    assert agrees(0.55, up, higher_is_better=False) is False  # abandonment: up is worse
    assert agrees(0.55, compare(Moments.of([0.0, 1.0] * 50), Moments.of([0.0, 1.0] * 50),
                                0.05)) is None
    assert agreement_rate([True, None, False])["pairs"] == 2
    assert agreement_rate([])["rate"] is None
