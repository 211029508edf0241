"""Preference matrices: validation messages and the properties each generator claims."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bandits import matrices as M


def offdiag(P: np.ndarray) -> np.ndarray:
    return P[~np.eye(P.shape[0], dtype=bool)]


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("P", "message"),
    [
        ([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], "square, got 2×3"),
        ([0.5, 0.5], "2-dimensional"),
        ([[0.5, 1.2], [-0.2, 0.5]], "p[0,1] = 1.2 is outside [0, 1]"),
        ([[0.5, 0.7], [0.4, 0.5]], "p[0,1] + p[1,0] = 0.7 + 0.4 = 1.1"),
        ([[0.6, 0.5], [0.5, 0.5]], "diagonal p[0,0] = 0.6"),
        ([[0.5, float("nan")], [0.5, 0.5]], "p[0,1] = nan is not a finite number"),
        ([["a", "b"], ["c", "d"]], "not numeric"),
    ],
)
def test_validation_says_what_and_where(P, message):
    with pytest.raises(ValueError) as err:
        M.validate_matrix(P)
    assert message in str(err.value)


def test_validation_tolerates_rounding_within_1e6():
    P = np.array([[0.5, 0.7 + 4e-7], [0.3, 0.5]])
    assert M.validate_matrix(P).shape == (2, 2)
    with pytest.raises(ValueError, match="within 1e-06"):
        M.validate_matrix(np.array([[0.5, 0.7 + 2e-6], [0.3, 0.5]]))


# ---------------------------------------------------------------------- winners
def test_winners_on_a_hand_made_matrix():
    # arms 0, 1, 2 form a cycle and all beat arm 3: no Condorcet winner, three Copeland
    # winners with score 2/3, arm 3 scores 0
    P = np.array(
        [
            [0.5, 0.6, 0.4, 0.9],
            [0.4, 0.5, 0.6, 0.9],
            [0.6, 0.4, 0.5, 0.9],
            [0.1, 0.1, 0.1, 0.5],
        ]
    )
    assert M.condorcet_winner(P) is None
    assert M.copeland_winners(P) == [0, 1, 2]
    r, winner, kind = M.arm_regret(P)
    assert (winner, kind) == (None, "copeland")
    np.testing.assert_allclose(r, [0, 0, 0, 2 / 3])
    # Li et al. 2020, eq. 10: r = ζ* − (ζ_i + ζ_j)/2 = 2/3 − (2/3 + 0)/2 for the pair (0, 3)
    assert M.pair_regret(P)[0, 3] == pytest.approx(1 / 3)


def test_condorcet_regret_is_delta_to_the_winner():
    P = np.array([[0.5, 0.3, 0.4], [0.7, 0.5, 0.8], [0.6, 0.2, 0.5]])
    r, winner, kind = M.arm_regret(P)
    assert (winner, kind) == (1, "condorcet")
    np.testing.assert_allclose(r, [0.2, 0.0, 0.3])
    assert M.pair_regret(P)[0, 2] == pytest.approx(0.25)  # (Δ_10 + Δ_12) / 2


# ---------------------------------------------------------------------- Cycle / Cycle2
@pytest.mark.parametrize(
    ("fn", "p_winner", "p_cycle", "borda_winner", "borda_other"),
    [(M.cycle, 0.51, 1.0, 10.19, 9.99), (M.cycle2, 0.6, 0.51, 11.90, 9.9)],
)
def test_cycle_sets_match_seed_000_section_5_2(fn, p_winner, p_cycle, borda_winner, borda_other):
    P = M.validate_matrix(fn())
    assert P.shape == (20, 20)
    assert M.condorcet_winner(P) == 0
    np.testing.assert_allclose(P[0, 1:], p_winner)
    sub = P[1:, 1:]
    # round table: every suboptimal arm beats 9 with p_cycle and loses to 9
    assert ((sub == p_cycle).sum(axis=1) == 9).all()
    assert ((sub == 1 - p_cycle).sum(axis=1) == 9).all()
    # each seat beats its left neighbour, and the chain round the table closes a cycle
    for a in range(19):
        assert P[1 + a, 1 + (a + 1) % 19] == p_cycle
    assert P[1, 2] > 0.5 and P[2, 11] > 0.5 and P[11, 1] > 0.5
    # the Borda scores the paper quotes (diagonal counted as ½)
    assert P[0].sum() == pytest.approx(borda_winner)
    np.testing.assert_allclose(P[1:].sum(axis=1), borda_other)


def test_cycle_rejects_an_uneven_table():
    with pytest.raises(ValueError, match="even k"):
        M.cycle(21)


# ---------------------------------------------------------------------- Brost et al. 2016, Table 1
def test_all_table_1_sets_exist_with_their_sizes():
    sizes = {
        "1good5poor": 6, "1good50poor": 51, "1good200poor": 201, "2good4poor": 6,
        "11good40poor": 51, "41good160poor": 201, "3good3poor": 6, "21good30poor": 51,
        "81good120poor": 201, "arith6": 6, "arith51": 51, "arith201": 201, "geom6": 6,
        "geom51": 51, "geom201": 201,
    }
    assert set(M.UTILITY_SETS) == set(sizes)
    for name, k in sizes.items():
        u = M.UTILITY_SETS[name]
        assert u.size == k and u[0] == 0.8 and (u[1:] < 0.8).all(), name


def test_utility_sets_follow_the_gaussian_score_model():
    u = M.UTILITY_SETS["arith51"]
    # 50 utilities from 0.7 down to 0.2, both ends included: 49 equal steps
    assert (u[1], u[-1]) == (0.7, 0.2)
    np.testing.assert_allclose(np.diff(u[1:]), -0.5 / 49)
    g = M.UTILITY_SETS["geom51"][1:]
    np.testing.assert_allclose(g[1:] / g[:-1], (0.2 / 0.7) ** (1 / 49))
    P = M.validate_matrix(M.utility_set("1good50poor"))
    assert M.condorcet_winner(P) == 0
    # scores ~ N(u, 1), higher wins: P(X0 > X1) = Φ(0.6/√2), via erf, independent of scipy
    expected = 0.5 * (1 + math.erf(0.6 / math.sqrt(2) / math.sqrt(2)))
    np.testing.assert_allclose(P[0, 1:], expected)
    np.testing.assert_allclose(offdiag(P[1:, 1:]), 0.5)  # the poor arms tie


def test_unknown_utility_set_lists_the_known_ones():
    with pytest.raises(ValueError, match="arith51"):
        M.utility_set("arith52")


# ---------------------------------------------------------------------- Bradley–Terry
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize(("k", "gap"), [(2, 0.1), (10, 0.02), (136, 0.005)])
def test_bradley_terry_has_a_winner_and_exactly_the_minimum_gap(k, gap, seed):
    P = M.validate_matrix(M.bradley_terry(k, gap=gap, seed=seed))
    c = M.condorcet_winner(P)
    assert c is not None
    assert np.abs(offdiag(P) - 0.5).min() == pytest.approx(gap, rel=1e-9)
    # total order: Copeland scores are 0..k-1, each once
    assert sorted((P > 0.5).sum(axis=1).tolist()) == list(range(k))


def test_bradley_terry_is_seeded():
    a = M.bradley_terry(30, seed=5)
    assert np.array_equal(a, M.bradley_terry(30, seed=5))
    assert not np.array_equal(a, M.bradley_terry(30, seed=6))


def test_bradley_terry_spread_sets_best_versus_worst():
    P = M.bradley_terry(40, gap=0.001, spread=3.0, seed=0)
    assert P.max() == pytest.approx(1 / (1 + math.exp(-3.0)))


@pytest.mark.parametrize(("k", "share"), [(136, 0.25), (20, 1 / 3), (9, 0.5)])
def test_uninformative_share(k, share):
    P = M.validate_matrix(
        M.bradley_terry(k, gap=0.01, uninformative_share=share, uninformative_gap=0.03, seed=2)
    )
    n_u = round(share * k)
    # an uninformative arm beats nobody and ties exactly ½ with the other uninformative ones
    beats_none = np.flatnonzero((P > 0.5).sum(axis=1) == 0)
    assert beats_none.size == n_u
    block = P[np.ix_(beats_none, beats_none)]
    assert (block == 0.5).all()
    informative = np.setdiff1d(np.arange(k), beats_none)
    assert (P[np.ix_(informative, beats_none)] >= 0.53 - 1e-12).all()
    assert M.condorcet_winner(P) is not None
    # among informative arms the minimum gap is still the chosen one
    sub = P[np.ix_(informative, informative)]
    assert np.abs(offdiag(sub) - 0.5).min() == pytest.approx(0.01, rel=1e-9)


def test_all_uninformative_is_refused():
    with pytest.raises(ValueError, match="no informative arm"):
        M.bradley_terry(4, uninformative_share=0.9)


# ---------------------------------------------------------------------- non-Condorcet
@pytest.mark.parametrize(("k", "w"), [(4, 2), (32, 2), (7, 3), (20, 5)])
def test_non_condorcet_has_several_copeland_winners(k, w):
    P = M.validate_matrix(M.non_condorcet(k, n_winners=w, seed=k))
    assert M.condorcet_winner(P) is None
    assert M.copeland_winners(P) == list(range(w))
    # each winner beats exactly k - w arms, as in MSLR-non-Condorcet (30 of 32 for w = 2)
    assert ((P[:w] > 0.5).sum(axis=1) == k - w).all()
    # MSLR-non-Condorcet's shape: winner 0 beats winner 1 but is beaten by a weaker arm
    assert P[0, 1] > 0.5 and (P[w:, 0] > 0.5).any()


def test_non_condorcet_needs_enough_arms():
    with pytest.raises(ValueError, match="need k >= 7"):
        M.non_condorcet(6, n_winners=3)


@pytest.mark.parametrize("seed", [0, 1])
def test_bradley_terry_winner_gap(seed):
    P = M.bradley_terry(40, gap=0.002, winner_gap=0.02, uninformative_share=0.25, seed=seed)
    c = M.condorcet_winner(P)
    assert np.delete(P[c] - 0.5, c).min() == pytest.approx(0.02, rel=1e-9)
    informative = np.flatnonzero((P > 0.5).sum(axis=1) > 0)
    sub = P[np.ix_(informative, informative)]
    assert np.abs(offdiag(sub) - 0.5).min() == pytest.approx(0.002, rel=1e-9)
    with pytest.raises(ValueError, match="winner gap"):
        M.bradley_terry(10, gap=0.05, winner_gap=0.01)
