"""Click models: the configurations of issue 3 and their behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from interleaving.clicks import (
    CLICK_MODELS,
    CascadeModel,
    PositionBasedModel,
    get_click_model,
)

TABLE = {
    "perfect": ([0.0, 0.2, 0.4, 0.8, 1.0], [0.0] * 5),
    "navigational": ([0.05, 0.3, 0.5, 0.7, 0.95], [0.2, 0.3, 0.5, 0.7, 0.9]),
    "informational": ([0.4, 0.6, 0.7, 0.8, 0.9], [0.1, 0.2, 0.3, 0.4, 0.5]),
    "almost_random": ([0.4, 0.45, 0.5, 0.55, 0.6], [0.5] * 5),
}


@pytest.mark.parametrize("name", list(TABLE))
def test_cascade_configurations_are_the_issue_table(name):
    model = CLICK_MODELS[name]
    click, stop = TABLE[name]
    assert isinstance(model, CascadeModel)
    assert model.p_click[1:].tolist() == click and model.p_stop[1:].tolist() == stop


@pytest.mark.parametrize("name", list(TABLE))
def test_click_rate_of_the_first_result_is_p_click(name):
    rng = np.random.default_rng(0)
    click, _ = TABLE[name]
    grades = np.repeat(np.arange(5), 4000)[:, None] * np.ones((1, 3), dtype=int)
    clicks = CLICK_MODELS[name].clicks_batch(grades, rng)
    for g in range(5):
        rate = clicks[grades[:, 0] == g, 0].mean()
        # 4,000 users per grade: SE <= 0.008, so 0.035 is > 4 SE
        assert rate == pytest.approx(click[g], abs=0.035)


@pytest.mark.parametrize("name", ["navigational", "informational", "almost_random"])
def test_the_user_stops_after_a_click_with_p_stop(name):
    rng = np.random.default_rng(1)
    click, stop = TABLE[name]
    n = 20000
    for g in (1, 4):
        grades = np.full((n, 2), g)
        grades[:, 1] = 4
        clicks = CLICK_MODELS[name].clicks_batch(grades, rng)
        first = clicks[:, 0]
        # the second result is clicked with P(click|4) unless the user stopped after the first
        after_click = clicks[first, 1].mean()
        without = clicks[~first, 1].mean()
        # each rate rests on >= 1,000 users: SE <= 0.016, so 0.05 is > 3 SE
        assert after_click == pytest.approx((1 - stop[g]) * click[4], abs=0.05)
        assert without == pytest.approx(click[4], abs=0.05)


def test_perfect_user_reads_everything_and_never_clicks_grade_zero():
    rng = np.random.default_rng(2)
    grades = np.tile([4, 0, 4, 0, 4, 0, 4, 0, 4, 4], (500, 1))
    clicks = CLICK_MODELS["perfect"].clicks_batch(grades, rng)
    assert not clicks[:, grades[0] == 0].any()
    assert clicks[:, grades[0] == 4].all()


def test_empty_slots_are_never_clicked_and_do_not_stop_the_user():
    rng = np.random.default_rng(3)
    grades = np.tile([-1, -1, 4], (2000, 1))
    for name, model in CLICK_MODELS.items():
        clicks = model.clicks_batch(grades, rng)
        assert not clicks[:, :2].any(), name
    nav = CLICK_MODELS["navigational"].clicks_batch(grades, rng)
    assert nav[:, 2].mean() == pytest.approx(0.95, abs=0.02)  # SE 0.005


def test_navigational_users_click_fewer_results_than_informational_ones():
    rng = np.random.default_rng(4)
    grades = rng.integers(0, 5, size=(5000, 10))
    mean_clicks = {name: CLICK_MODELS[name].clicks_batch(grades, rng).sum(axis=1).mean()
                   for name in ("perfect", "navigational", "informational")}
    assert mean_clicks["navigational"] < mean_clicks["informational"]
    assert mean_clicks["navigational"] < mean_clicks["perfect"]


def test_position_based_model_examination_and_attractiveness():
    rng = np.random.default_rng(5)
    pbm = CLICK_MODELS["pbm"]
    assert isinstance(pbm, PositionBasedModel)
    grades = np.full((40000, 5), 4)
    rates = pbm.clicks_batch(grades, rng).mean(axis=0)
    expected = pbm.examination(5) * 0.95
    # 40,000 users: SE <= 0.0025 per rank, 0.012 is ~5 SE
    assert np.allclose(rates, expected, atol=0.012)
    # clicks at different ranks are independent in the PBM (no cascade)
    c = pbm.clicks_batch(grades, rng)
    assert c[c[:, 0], 1].mean() == pytest.approx(c[~c[:, 0], 1].mean(), abs=0.03)
    custom = PositionBasedModel("x", [0.0, 0.0, 0.0, 0.0, 1.0], examination=[1.0, 0.0])
    assert custom.examination(3).tolist() == [1.0, 0.0, pytest.approx(1 / 3)]
    assert custom.clicks([4, 4], rng).tolist() == [True, False]


def test_single_list_and_batch_forms_agree_in_shape_and_validate():
    rng = np.random.default_rng(6)
    model = get_click_model("informational")
    assert model.clicks([0, 1, 2, 3], rng).shape == (4,)
    assert model.clicks([0, 1, 2, 3], rng).dtype == bool
    assert model.clicks_batch(np.zeros((3, 7), dtype=int), rng).shape == (3, 7)
    with pytest.raises(ValueError):
        model.clicks([5], rng)
    with pytest.raises(ValueError):
        model.clicks_batch(np.zeros(3, dtype=int), rng)
    with pytest.raises(ValueError, match="unknown click model"):
        get_click_model("lazy")
    with pytest.raises(ValueError):
        CascadeModel("bad", [0.1, 0.2], [0.0] * 5)


def test_same_seed_same_clicks():
    grades = np.random.default_rng(0).integers(0, 5, size=(50, 10))
    for model in CLICK_MODELS.values():
        a = model.clicks_batch(grades, np.random.default_rng(42))
        b = model.clicks_batch(grades, np.random.default_rng(42))
        assert (a == b).all()
