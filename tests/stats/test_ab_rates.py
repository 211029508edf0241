"""The A/B statistics' levels, measured over seeded runs on the demo's world (the
figures over many more runs are in bench/results/ab/README.md, ``bench/ab_offline.py``).

Each test states its tolerance. A count of errors (an A/A decided, an interval that
missed, a clean split flagged) must stay at or below the 99.9 % quantile of
Binomial(runs, level), so a correct procedure fails it about once in a thousand; a
count of detections must show the test bites.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from interleaving import interleave
from interleaving.world import World
from rollout import srm
from rollout.ab import Moments, compare, rho_for
from rollout.ab.simulation import click_probabilities, simulate_ab


def quantile(runs: int, level: float) -> int:
    return int(binom.ppf(0.999, runs, level))


@pytest.fixture(scope="module")
def world():
    return World(1, 12, 200, clear_best=True)  # the demo's


@pytest.fixture(scope="module")
def probs(world):
    return click_probabilities(world, "navigational")


def test_the_boundary_holds_its_level_on_skewed_data():
    # 400 paths of 200,000 Bernoulli(0.05) users per arm, two arms of equal mean, looked
    # at 120 times (log-spaced from 200 users): an interval that ever excludes 0 is a
    # false decision; at most δ = 0.05 (measured 15 of 400, 3.8 %, with this seed)
    rng = np.random.default_rng(11)
    looks = np.unique(np.geomspace(200, 200_000, 120).astype(int))
    rho = rho_for(10_000, 0.05)
    false = 0
    for _ in range(400):
        a = np.cumsum(rng.random(200_000) < 0.05)[looks - 1]
        b = np.cumsum(rng.random(200_000) < 0.05)[looks - 1]
        for n, sa, sb in zip(looks, a, b, strict=True):
            c = compare(Moments(int(n), float(sa), float(sa)), Moments(int(n), float(sb),
                        float(sb)), 0.05, rho=rho, bounds=(0.0, 1.0))
            if c.decided:
                false += 1
                break
    assert false <= quantile(400, 0.05)


def test_aa_is_rarely_decided(world, probs):
    # the same ranker twice, 200 runs of 50,000 searches at δ = 0.05: decided (ever) in
    # at most the binomial quantile of runs (the bench measures ≤ 5 % over 1,000)
    runs = [simulate_ab(world, [2, 2], 50_000, s, probabilities=probs) for s in range(200)]
    decided = sum(r.treatments[0].decided for r in runs)
    assert decided <= quantile(200, 0.05)
    assert sum(r.srm_flagged for r in runs) <= quantile(200, 0.001)


def test_the_interval_holds_the_true_lift_at_every_look(world, probs):
    # ranker 6 (the clear best, CTR 0.995) against ranker 0 (0.988), 200 runs of 50,000
    # searches: runs whose interval of the difference ever missed the true difference
    # (from the first look with 100 users per arm) at most the quantile at δ; every run
    # decides, and in the right direction
    runs = [simulate_ab(world, [0, 6], 50_000, s, probabilities=probs)
            for s in range(1000, 1200)]
    ts = [r.treatments[0] for r in runs]
    assert sum(t.ever_missed for t in ts) <= quantile(200, 0.05)
    assert sum(not t.lift_covered for t in ts) <= quantile(200, 0.05)
    assert sum(t.correct for t in ts) >= 190


def test_srm_clean_splits_are_not_flagged_and_broken_ones_are(world, probs):
    # a clean 90/10 split checked at 60 looks up to 200,000 users, 1,000 runs: flagged in
    # at most the quantile at 0.001 (the test's level)
    rng = np.random.default_rng(5)
    looks = np.unique(np.geomspace(100, 200_000, 60).astype(int))
    flagged = 0
    for _ in range(1000):
        t = np.cumsum(rng.random(200_000) < 0.1)[looks - 1]
        for n, nt in zip(looks, t, strict=True):
            if srm.check([srm.Period({"c": 0.9, "t": 0.1},
                                     {"c": int(n - nt), "t": int(nt)})]).flagged:
                flagged += 1
                break
    assert flagged <= quantile(1000, 0.001)
    # a tenth of the treatment's users fall back to the control: flagged in 50 of 50 runs
    # of 50,000 searches, with the treatment named
    broken = [simulate_ab(world, [2, 6], 50_000, s, fallback=0.1, probabilities=probs)
              for s in range(50)]
    assert all(r.srm_flagged for r in broken)
    assert all(r.srm_message.startswith("the treatment got") for r in broken)


def test_team_draft_picks_are_balanced(world):
    # 6,000 team-draft impressions of the world's rankers 0 and 6: first picks and each
    # position's team pass the balance test (a biased coin fails it: tests/unit)
    rng = np.random.default_rng(8)
    teams = []
    for _ in range(6_000):
        q = int(rng.integers(world.n_queries))
        _, record = interleave("team_draft", [world.ranking(0, q), world.ranking(6, q)], 10,
                               rng)
        teams.append(record["teams"])
    first, per_pos = srm.team_balance(teams)
    assert not srm.check_first_pick(first).flagged
    assert not any(r.flagged for r in srm.check_positions(per_pos))


def _ramp_paths(runs: int, loss: float, rng: np.random.Generator) -> int:
    """Runs of a ramp 1 % → 10 % → 50 % (20,000 users per period, 20 looks per period)
    whose split is flagged at some look; ``loss`` of the treatment's users land in the
    control."""
    shares = [0.01, 0.1, 0.5]
    flagged = 0
    for _ in range(runs):
        done: list[srm.Period] = []
        hit = False
        for s in shares:
            t = np.cumsum(rng.random(20_000) < s * (1 - loss))
            for n in range(1_000, 20_001, 1_000):
                now = srm.Period({"c": 1 - s, "t": s}, {"c": int(n - t[n - 1]),
                                                        "t": int(t[n - 1])})
                if srm.check([*done, now]).flagged:
                    hit = True
                    break
            if hit:
                break
            done.append(now)
        flagged += hit
    return flagged


def test_srm_over_a_ramp():
    # the shares in force per period: a clean ramp is flagged in at most the quantile at
    # 0.001 of 1,000 runs; a ramp whose treatment loses a tenth of its users is flagged
    # in at least 190 of 200 (the evidence of the periods multiplies)
    rng = np.random.default_rng(21)
    assert _ramp_paths(1000, 0.0, rng) <= quantile(1000, 0.001)
    assert _ramp_paths(200, 0.1, rng) >= 190
