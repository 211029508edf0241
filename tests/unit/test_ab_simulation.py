"""The offline A/B runner (rollout.ab.simulation) and ``rankduel simulate --design ab``:
exact click probabilities, seeded runs, the broken split, the command's files and
errors. Rates over many runs: tests/stats/test_ab_rates.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli.main import build_parser, main
from interleaving.clicks import get_click_model
from interleaving.world import World
from rollout.ab.simulation import arm_names, click_probabilities, simulate_ab


@pytest.fixture(scope="module")
def world():
    return World(1, 12, 200, clear_best=True)


@pytest.mark.parametrize("model", ["navigational", "informational", "pbm"])
def test_click_probabilities_are_the_click_models(world, model):
    p = click_probabilities(world, model)
    rng = np.random.default_rng(0)
    top = world.top_k(10).astype(np.intp)
    q = rng.integers(world.n_queries, size=40_000)
    g = np.where(top[2, q] >= 0, world.grade_table[q[:, None], np.maximum(top[2, q], 0)], -1)
    clicked = get_click_model(model).clicks_batch(g, rng).any(axis=1)
    assert abs(clicked.mean() - p[2, q].mean()) < 4 * np.sqrt(0.25 / q.size)


def test_runs_are_seeded_and_count_every_user_once(world):
    a = simulate_ab(world, [2, 6], 5_000, seed=4)
    b = simulate_ab(world, [2, 6], 5_000, seed=4)
    assert a.to_json() == b.to_json()
    assert a.searches == 5_000 and sum(a.users.values()) <= 5_000
    assert a.to_json()["treatments"][0]["arm"] == "treatment"


def test_several_treatments_share_delta_and_a_broken_split_is_named(world):
    run = simulate_ab(world, [2, 6, 6], 30_000, seed=1, fallback=0.1)
    assert [t.arm for t in run.treatments] == ["treatment 1", "treatment 2"]
    # both treatments lose a tenth to the control: the control is furthest from its share
    assert run.srm_flagged and run.srm_message.startswith("the control got")
    assert run.users["control"] > run.users["treatment 1"]
    assert arm_names(2) == ["control", "treatment"]


def test_stop_when_decided(world):
    run = simulate_ab(world, [2, 6], 200_000, seed=2, stop_when_decided=True)
    assert run.treatments[0].decided and run.searches == run.treatments[0].decided_at
    assert run.searches < 200_000


def test_the_command_writes_a_summary(tmp_path, capsys):
    out = tmp_path / "ab"
    assert main(["simulate", "--design", "ab", "--world", "1:12", "--rankers", "2,6",
                 "--searches", "3000", "--runs", "3", "--seed", "5", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["design"] == "ab" and len(summary["per_run"]) == 3
    assert summary["per_run"][0]["seed"] == 5
    assert set(summary["rates"]["treatment"]) >= {"decided", "covered", "lift_covered"}
    assert "SRM flagged in" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--rankers", "2"], "name the control and at least one treatment"),
    (["--rankers", "2,40"], "the world has rankers 0..11"),
    (["--rankers", "2,6", "--shares", "0.5"], "give 2 positive shares"),
    (["--rankers", "2,6", "--fallback", "1.5"], "--fallback"),
], ids=["one ranker", "no such ranker", "shares", "fallback"])
def test_the_command_refuses_bad_input(tmp_path, capsys, argv, message):
    code = main(["simulate", "--design", "ab", "--world", "1:12", "--out",
                 str(tmp_path / "x"), *argv])
    assert code == 2 and message in capsys.readouterr().err


def test_the_interleaving_design_still_needs_its_arguments(capsys):
    args = build_parser().parse_args(["simulate", "--out", "x"])
    assert args.design == "interleaving"
    assert main(["simulate", "--out", "x", "--matrix", "m.txt"]) == 2
    assert "required: --algorithm, --steps" in capsys.readouterr().err
