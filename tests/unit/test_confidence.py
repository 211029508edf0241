"""Verdicts at a stated error rate (:mod:`bandits.confidence`): the boundary is the
guard's normal mixture, the union's level, which rankers are shown worse, when a
champion is certified, and the sentence a report shows. The level over long runs is
measured in tests/stats/test_verdict_error_rates.py."""

from __future__ import annotations

import numpy as np
import pytest

from bandits import confidence
from bandits.condorcet_check import edge_radius


def test_the_boundary_is_the_betting_mixtures_at_the_given_level():
    n = np.array([1.0, 10.0, 1e3, 1e5, 1e7])
    for level in (0.5, 0.01, 1e-6):
        b = confidence.boundary(n, level)
        ok = np.isfinite(b)
        # the least w that draws the edge: w = n/2 + b crosses, a hair less does not
        w = n[ok] / 2 + b[ok]
        assert confidence.crossed(w + 1e-6, n[ok], level).all()
        assert not confidence.crossed(w - 1e-3, n[ok], level).any()
        assert np.allclose(confidence.log_wealth(w, n[ok]), np.log(1 / level), atol=1e-6)
    assert np.isinf(confidence.boundary(np.array([0.0]), 0.05)[0])
    # tighter level, higher boundary; grows like sqrt(n)
    b = confidence.boundary(n[1:], 0.05)
    assert np.all(np.diff(b) > 0) and np.all(confidence.boundary(n[1:], 0.001) > b)
    # against the normal mixture it replaced (Hoeffding's variance ¼): tighter at small n
    # (lopsided pairs) and at large n (its ½ log(1 + n/40) grows, this one's cost is
    # flat), within 5 % between (n ≈ 300–3,000 at K = 2)
    m = np.array([10.0, 20.0, 100.0, 1e4, 1e5, 1e6])
    assert np.all(confidence.boundary(m, 0.025) < edge_radius(m, 2, 0.025) * m)
    mid = np.array([300.0, 1e3, 3e3])
    assert np.all(confidence.boundary(mid, 0.025) < 1.05 * edge_radius(mid, 2, 0.025) * mid)


def test_the_evidence_floor_is_necessary_and_close():
    # every crossing has n·kl(w/n, ½) ≥ the floor, and some come within 0.3 nats of it
    for level in (0.025, 0.05 / 14, 0.05 / 270):
        floor = confidence.evidence_floor(level)
        n = np.unique(np.geomspace(1, 3e6, 400).round())
        w = n / 2 + confidence.boundary(n, level)
        ok = np.isfinite(w) & (w <= n)
        p = np.minimum(w[ok] / n[ok], 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ev = n[ok] * np.nan_to_num(p * np.log(2 * p) + (1 - p) * np.log(2 * (1 - p)))
        assert ev.min() >= floor and ev.min() <= floor + 0.3
        assert np.log(1 / level) < floor < np.log(1 / level) + 2.5


def test_one_pair_at_a_time_agrees_with_the_arrays():
    rng = np.random.default_rng(4)
    test = confidence.EdgeTest(0.025)
    n = rng.integers(1, 4000, 3000).astype(float)
    w = np.floor(rng.random(3000) * (n + 1)) + rng.choice([0.0, 0.5], 3000)
    w = np.minimum(w, n)
    want = confidence.crossed(w, n, 0.025)
    assert want.sum() > 100
    assert [test.crossed(float(a), float(b)) for a, b in zip(w, n, strict=True)] == want.tolist()


def test_the_per_edge_level_pays_for_the_union():
    assert confidence.per_edge_level(2, 0.05) == pytest.approx(0.025)
    assert confidence.per_edge_level(136, 0.05) == pytest.approx(0.05 / 270)


def test_the_level_holds_on_ties_at_any_stopping_time():
    # 4,000 paths of 2,000 fair outcomes: the boundary at level 0.05 is crossed, ever,
    # on at most 5 % of them (the mixture is conservative: 1.7 % here); a boundary
    # taken at a fixed n (Hoeffding at 0.05, read at every n) is crossed on 11.8 %
    rng = np.random.default_rng(11)
    n = np.arange(1, 2001, dtype=float)
    w = np.cumsum(rng.random((4000, 2000)) < 0.5, axis=1)
    ever = confidence.crossed(w, n, 0.05).any(axis=1).mean()
    assert ever <= 0.05
    fixed = (w - n / 2 >= np.sqrt(n * np.log(1 / 0.05) / 2)).any(axis=1).mean()
    assert fixed > 0.05


def test_shown_worse_names_a_witness_and_respects_candidates():
    W = np.array([[0, 700, 800, 500], [300, 0, 500, 0], [200, 500, 0, 0],
                  [500, 0, 0, 0]], dtype=float)
    assert confidence.shown_worse(W, [0, 1, 2, 3], 0.05) == {1: 0, 2: 0}
    assert confidence.shown_worse(W, [0, 1, 2, 3], 0.05, [2, 3]) == {2: 0}
    assert confidence.shown_worse(W, [1, 2, 3], 0.05) == {}  # 0's edges not in the field
    # 3 ties with 0 and was never compared with 1 or 2: nobody is certified
    assert confidence.certified_best(W, [0, 1, 2, 3], 0.05) is None
    assert confidence.certified_best(W, [0, 1, 2], 0.05) == 0
    assert confidence.certified_best(W, [0, 1, 2], 0.05, worse={1: 0, 2: 0}) == 0


def test_a_looser_error_rate_certifies_sooner():
    W = np.array([[0.0, 58.0], [42.0, 0.0]])  # 58 of 100
    assert confidence.certified_best(W * 10, [0, 1], 0.05) == 0
    assert confidence.certified_best(W * 3, [0, 1], 0.05) is None
    assert confidence.certified_best(W * 3, [0, 1], 0.5) == 0


def test_the_sentence_states_the_rate():
    s = confidence.meaning(0.05)
    assert "5%" in s and "1 in 20" in s and "however often" in s
    assert "1%" in confidence.meaning(0.01)
