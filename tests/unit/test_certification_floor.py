"""bench/certification_floor.py: the information floor of a flat policy and the oracle
certifier that issue 15's regret analysis rests on (BENCHMARKS.md, "What certifying the
winner costs")."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from bandits.matrices import bradley_terry

_PATH = Path(__file__).resolve().parents[2] / "bench" / "certification_floor.py"


@pytest.fixture(scope="module")
def cf():
    spec = importlib.util.spec_from_file_location("certification_floor", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kl(p: float) -> float:
    return p * math.log(2 * p) + (1 - p) * math.log(2 * (1 - p))


def test_floor_constant_is_the_cheapest_opponent_per_ranker(cf):
    P = np.array([[0.5, 0.6, 0.7], [0.4, 0.5, 0.6], [0.3, 0.4, 0.5]])
    # ranker 1 (Δ = 0.1) can only be refuted by 0; ranker 2 (Δ = 0.2) by 0 (cheaper:
    # 0.2 / (2 kl(0.3)) = 1.22) or by 1 ((0.2 + 0.1) / (2 kl(0.4)) = 7.45)
    want = 0.1 / (2 * _kl(0.4)) + min(0.2 / (2 * _kl(0.3)), 0.3 / (2 * _kl(0.4)))
    const, winner = cf.floor_constant(P)
    assert winner == 0
    assert const == pytest.approx(want, rel=1e-12)


def test_floor_constant_refuses_an_instance_without_a_condorcet_winner(cf):
    P = np.array([[0.5, 0.6, 0.4], [0.4, 0.5, 0.6], [0.6, 0.4, 0.5]])
    with pytest.raises(SystemExit, match="no Condorcet winner"):
        cf.floor_constant(P)


def test_oracle_pays_about_the_floor_at_its_threshold_and_king_of_the_hill_finds_the_winner(cf):
    """60 runs each on a 10-ranker Bradley–Terry instance. The oracle certifier spends
    its evidence on the cheapest opponent (the winner), so its mean regret is the floor at
    its threshold up to the sequential test's overshoot/undershoot: on the issue's
    instances it was 0.95× (P136, 100 runs) and 0.97× (P700); the tolerance 0.75–1.25× is
    wider than that and than the standard error of a 60-run mean (measured ≈ 4 % here).
    King of the hill must also find the winner, so it pays more than the oracle, and
    at α = 0.236 neither loses the winner on this instance (none in 60 + 60 runs)."""
    P = bradley_terry(10, gap=0.05, seed=3)
    const, winner = cf.floor_constant(P)
    thr = 2 * 0.236 * math.log(1 + cf.C)
    oracle = [cf.oracle_run(P, winner, 0.236, s) for s in range(60)]
    king = [cf.oracle_run(P, winner, 0.236, s, find=True) for s in range(60)]
    assert not any(lost for _, _, lost in oracle + king)
    o = np.array([r for r, _, _ in oracle])
    k = np.array([r for r, _, _ in king])
    assert o.std(ddof=1) / math.sqrt(o.size) < 0.05 * o.mean()
    assert 0.75 * const * thr < o.mean() < 1.25 * const * thr
    assert k.mean() > o.mean()
