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


# ---------------------------------------------------------------- --non-condorcet


def test_non_condorcet_floor_on_a_three_ranker_cycle_by_hand(cf):
    """0 beats 1 (0.6), 1 beats 2 (0.7), 2 beats 0 (0.8): each ranker has one beater, so
    the floor is log(100) · (1/kl(0.8, ½) + 1/kl(0.6, ½) + 1/kl(0.7, ½))
    = 4.60517 · (5.1882 + 49.6628 + 12.1532) = 308.56 comparisons."""
    P = np.array([[0.5, 0.6, 0.2], [0.4, 0.5, 0.7], [0.8, 0.3, 0.5]])
    total, cost, witness = cf.non_condorcet_floor(P, 0.01)
    assert witness.tolist() == [2, 0, 1]
    assert cost.tolist() == pytest.approx(
        [math.log(100) / _kl(p) for p in (0.8, 0.6, 0.7)], rel=1e-12)
    assert total == pytest.approx(308.56, abs=0.01)
    # kl(p, ½) values by hand: 0.6 → 0.020136, 0.7 → 0.082283, 0.8 → 0.192745
    assert [_kl(p) for p in (0.6, 0.7, 0.8)] == pytest.approx(
        [0.020136, 0.082283, 0.192745], abs=1e-6)
    # rhs replaces log(1/δ): the floor scales with it
    t2, _, _ = cf.non_condorcet_floor(P, 0.01, rhs=1.0)
    assert t2 == pytest.approx(total / math.log(100))


def test_non_condorcet_floor_takes_the_cheapest_beater_and_inf_for_an_unbeaten_ranker(cf):
    # a fourth ranker beaten by 0 (0.55) and by 1 (0.8), beating 2: its witness is 1
    P = np.array([
        [0.5, 0.6, 0.2, 0.55],
        [0.4, 0.5, 0.7, 0.8],
        [0.8, 0.3, 0.5, 0.4],
        [0.45, 0.2, 0.6, 0.5],
    ])
    total, cost, witness = cf.non_condorcet_floor(P, 0.01)
    assert witness[3] == 1
    assert cost[3] == pytest.approx(math.log(100) / _kl(0.8))
    # with a Condorcet winner (0 beats all) no test can flag: its cost is infinite
    Q = np.array([[0.5, 0.6, 0.7], [0.4, 0.5, 0.6], [0.3, 0.4, 0.5]])
    total, cost, witness = cf.non_condorcet_floor(Q, 0.01)
    assert math.isinf(total) and math.isinf(cost[0]) and witness[0] == -1
    assert witness[1:].tolist() == [0, 0]


def test_guard_comparisons_is_the_first_n_at_which_the_radius_is_below_the_gap(cf):
    from bandits.condorcet_check import edge_radius, radius

    for p, arms in ((0.6, 3), (0.51, 64), (0.5058, 64)):
        n = cf.guard_comparisons(p, arms, 0.01)
        r = edge_radius(np.array([n - 1.0, float(n)]), arms, 0.01)
        assert r[1] < p - 0.5 <= r[0]
        # the guard's anytime test needs more than the floor for that pair, and fewer
        # comparisons than the Hoeffding radius with a union bound over all pairs
        assert n > math.log(100) / _kl(p)
        assert radius(np.array([float(n)]), arms * (arms - 1) // 2, 0.01)[0] > p - 0.5
    with pytest.raises(ValueError):
        cf.guard_comparisons(0.5, 3, 0.01)


def test_non_condorcet_cli_prints_the_floor(cf, tmp_path, capsys):
    from cli.matrix_files import save_matrix

    P = np.array([[0.5, 0.6, 0.2], [0.4, 0.5, 0.7], [0.8, 0.3, 0.5]])
    path = save_matrix(tmp_path / "cycle.txt", P)
    assert cf.main([str(path), "--non-condorcet"]) == 0
    out = capsys.readouterr().out
    assert "non-Condorcet floor at δ = 0.01" in out and "309 comparisons" in out
