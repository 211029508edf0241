"""The regret simulator and the ``rankduel simulate`` / ``rankduel matrix generate`` CLI."""

from __future__ import annotations

import json
import math
import sys
from typing import ClassVar

import numpy as np
import pytest
from simulator_toys import SUMMARY_FIELDS, FixedPair, FixedSet, Knockout, without_speed

from bandits import matrices as M
from bandits.base import DuelingBandit
from bandits.simulator import aggregate, log_checkpoints, simulate_run
from cli.commands.simulate import parse_params, parse_value
from cli.main import main as cli

# arm 0 is the Condorcet winner; Δ_0k = (0, 0.2, 0.3)
P3 = np.array([[0.5, 0.7, 0.8], [0.3, 0.5, 0.6], [0.2, 0.4, 0.5]])


# ---------------------------------------------------------------------- toy policies
# FixedPair, Knockout and FixedSet are in tests/simulator_toys.py (tests/service uses them too)


# ---------------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("steps", [1, 2, 7, 1000, 123_457, 10**6])
def test_checkpoints_are_log_spaced_and_end_at_steps(steps):
    cps = log_checkpoints(steps)
    assert cps[0] == 1 and cps[-1] == steps
    assert (np.diff(cps) > 0).all()
    if steps >= 1000:
        # about 20 per decade: from 1000 to 10 000 steps the spacing ratio is ~10^(1/20)
        ratios = cps[1:] / cps[:-1]
        assert ratios[cps[1:] > 100].max() < 10 ** (1 / 20) * 1.05


# ---------------------------------------------------------------------- regret
def test_winner_against_itself_has_zero_regret():
    res = simulate_run(P3, FixedPair, 5000, seed=1, shuffle=False)
    assert res.final_regret == 0.0 and (res.regret == 0).all()
    assert res.identified == 0 and res.correct


@pytest.mark.parametrize(("i", "j", "per_step"), [(0, 2, 0.15), (1, 2, 0.25), (1, 1, 0.2)])
def test_fixed_pair_regret_is_the_mean_delta(i, j, per_step):
    # r_t = (Δ_0i + Δ_0j)/2, Li et al. 2020, eq. 1: deterministic for a fixed pair
    res = simulate_run(P3, FixedPair, 3000, seed=2, params={"i": i, "j": j}, shuffle=False)
    np.testing.assert_allclose(res.regret, res.checkpoints * per_step)


def test_copeland_regret_without_a_condorcet_winner():
    P = np.array(
        [
            [0.5, 0.6, 0.4, 0.9],
            [0.4, 0.5, 0.6, 0.9],
            [0.6, 0.4, 0.5, 0.9],
            [0.1, 0.1, 0.1, 0.5],
        ]
    )
    # ζ = (2/3, 2/3, 2/3, 0): the pair (0, 3) costs 2/3 − (2/3 + 0)/2 = 1/3
    # (Li et al. 2020, eq. 10)
    res = simulate_run(P, FixedPair, 900, seed=0, params={"i": 0, "j": 3}, shuffle=False)
    assert res.final_regret == pytest.approx(300.0)
    assert res.correct  # arm 0 is a Copeland winner and beat arm 3 in W


def test_uniform_regret_matches_its_expectation():
    # Uniform picks each unordered pair with probability 1/3, so r_t ∈ {0.1, 0.15, 0.25}
    # with mean 1/6 and variance 0.0038889 per step, whatever the outcomes. Over 4 runs of
    # 5000 steps the mean regret per run has sd √(5000·0.0038889/4) ≈ 2.2; allow 4 sd.
    steps, runs = 5000, 4
    res = [simulate_run(P3, "uniform", steps, seed=s) for s in range(runs)]
    mean = aggregate(res).mean[-1]
    var_step = (0.1**2 + 0.15**2 + 0.25**2) / 3 - (1 / 6) ** 2
    sd = math.sqrt(steps * var_step / runs)
    assert abs(mean - steps / 6) < 4 * sd


def test_outcomes_are_bernoulli_draws_from_P():
    # 20 000 comparisons of arms 0 and 1: the win rate estimates p_01 = 0.7 with sd
    # √(0.21/20000) ≈ 0.0032; allow 4 sd
    res_bandit = {}

    def factory(K, seed, **params):
        res_bandit["b"] = FixedPair(K, seed=seed, i=0, j=1)
        return res_bandit["b"]

    simulate_run(P3, factory, 20_000, seed=3, shuffle=False)
    W = res_bandit["b"].W
    assert W[0, 1] + W[1, 0] == 20_000
    assert abs(W[0, 1] / 20_000 - 0.7) < 4 * math.sqrt(0.21 / 20_000)


def test_multi_dueling_uses_all_pairs_and_the_mean_regret():
    box = {}

    def factory(K, seed, **params):
        box["b"] = FixedSet(K, seed=seed)
        return box["b"]

    steps = 10_000
    res = simulate_run(P3, factory, steps, seed=4, shuffle=False)
    # regret of the set {0, 1, 2} is the mean of Δ: (0 + 0.2 + 0.3)/3
    np.testing.assert_allclose(res.regret, res.checkpoints / 6)
    b = box["b"]
    assert b.n_updates == steps  # one update_many per step
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        assert b.W[i, j] + b.W[j, i] == steps
        # each pair's win rate estimates p_ij; sd ≤ 0.005, allow 4 sd
        assert abs(b.W[i, j] / steps - P3[i, j]) < 4 * math.sqrt(0.25 / steps)


def test_shuffle_is_undone_for_identified():
    # Uniform's champion (empirical Copeland) is the winner after 3000 steps on 5 arms with
    # gaps ≥ 0.1 (≈300 comparisons a pair: a 0.1 gap is ≥ 3 sd); each run orders the arms
    # differently, and `identified` must still name the matrix's winner
    P = M.bradley_terry(5, gap=0.1, seed=11)
    winner = M.condorcet_winner(P)
    perms = set()
    for s in range(6):
        res = simulate_run(P, "uniform", 3000, seed=s)
        assert res.identified == winner and res.correct
        perms.add(tuple(np.random.default_rng(np.random.SeedSequence(s).spawn(3)[0])
                        .permutation(5)))
    assert len(perms) > 1  # the runs really did use different orders


def test_same_seed_same_run_and_different_seed_different_run():
    P = M.bradley_terry(8, gap=0.05, seed=0)
    a = simulate_run(P, "uniform", 4000, seed=9)
    b = simulate_run(P, "uniform", 4000, seed=9)
    c = simulate_run(P, "uniform", 4000, seed=10)
    assert np.array_equal(a.regret, b.regret) and a.identified == b.identified
    assert not np.array_equal(a.regret, c.regret)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_forward_equals_the_full_loop(seed):
    P = M.bradley_terry(6, gap=0.03, seed=seed)
    steps = 20_000
    fast = simulate_run(P, Knockout, steps, seed=seed, params={"rounds": 30})
    slow = simulate_run(P, Knockout, steps, seed=seed, params={"rounds": 30},
                        fast_forward=False)
    # five knock-outs of 30 comparisons, then the first self-comparison triggers it
    assert fast.fast_forward_at == 5 * 30 + 1 and fast.looped_steps == 151
    assert slow.fast_forward_at is None and slow.looped_steps == steps
    np.testing.assert_allclose(fast.regret, slow.regret, rtol=1e-12, atol=1e-9)
    assert fast.identified == slow.identified


def test_fast_forward_keeps_the_policy_counters():
    box = {}

    def factory(K, seed, **params):
        box["b"] = Knockout(K, seed=seed, rounds=10)
        return box["b"]

    simulate_run(P3, factory, 1000, seed=0)
    assert box["b"].t == 1000 and box["b"].n_updates == 1000


# ---------------------------------------------------------------------- CLI parsing
def test_param_values_and_scoping():
    assert [parse_value(v) for v in ("16", "0.262", "4e6", "x")] == [16, 0.262, 4e6, "x"]
    out = parse_params(["alpha=0.5", "mergedts.alpha=0.262", "batch_size=8"],
                       ["mergedts", "mergerucb"])
    assert out == {"mergedts": {"alpha": 0.262, "batch_size": 8},
                   "mergerucb": {"alpha": 0.5, "batch_size": 8}}
    with pytest.raises(ValueError, match="not one of --algorithm"):
        parse_params(["dts.alpha=1"], ["mergedts"])
    with pytest.raises(ValueError, match="key=value"):
        parse_params(["alpha"], ["mergedts"])


# ---------------------------------------------------------------------- CLI end to end
# ``--jobs`` (worker processes) is checked in tests/service/test_commands.py
RUN_FIELDS = {"seed", "final_regret", "identified", "correct", "steps_per_second"}


@pytest.fixture
def no_plots(monkeypatch):
    """The simulate command without its plots, for tests that check only the summaries
    (drawing costs more than the runs; the plots have their own tests above and below).
    Yields the plots it was asked for."""
    import cli.commands.simulate as simulate

    asked: list = []
    monkeypatch.setattr(simulate, "plot_regret", lambda curves, path, **kw: asked.append(path))
    return asked


def test_cli_generate_then_simulate(tmp_path, capsys):
    P_path = tmp_path / "P.txt"
    assert cli(["matrix", "generate", "--kind", "bradley-terry", "--k", "6", "--gap", "0.05",
                "--seed", "3", "--out", str(P_path)]) == 0
    P = M.validate_matrix(np.loadtxt(P_path))
    assert P.shape == (6, 6)
    assert P_path.read_text().startswith("# rankduel matrix generate --kind bradley-terry")

    out = tmp_path / "run"
    assert cli(["simulate", "--matrix", str(P_path), "--algorithm", "uniform",
                "--steps", "3000", "--runs", "3", "--seed", "1", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == SUMMARY_FIELDS
    assert summary["algorithm"] == "uniform" and summary["K"] == 6
    assert (summary["steps"], summary["runs"]) == (3000, 3)
    assert summary["winner"] == M.condorcet_winner(P) and summary["winner_kind"] == "condorcet"
    assert summary["checkpoints"][-1] == 3000
    n = len(summary["checkpoints"])
    assert len(summary["regret_mean"]) == len(summary["regret_stderr"]) == n
    assert [r["seed"] for r in summary["per_run"]] == [1, 2, 3]
    for r in summary["per_run"]:
        assert set(r) == RUN_FIELDS and r["steps_per_second"] > 0
    finals = [r["final_regret"] for r in summary["per_run"]]
    assert summary["regret_mean"][-1] == pytest.approx(np.mean(finals))
    assert summary["regret_stderr"][-1] == pytest.approx(np.std(finals, ddof=1) / math.sqrt(3))
    assert (out / "regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "uniform" in capsys.readouterr().out


def test_cli_without_matplotlib_writes_the_summaries_and_says_what_to_install(
        tmp_path, capsys, monkeypatch):
    # matplotlib is the demo extra's: without it the results are still written
    for name in ("matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)  # any import of it fails
    P_path = tmp_path / "P.txt"
    np.savetxt(P_path, M.cycle2())
    out = tmp_path / "run"
    assert cli(["simulate", "--matrix", str(P_path), "--algorithm", "uniform",
                "--steps", "100", "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 100
    assert not (out / "regret.png").exists()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'rankduel[demo]'" in err


def test_cli_same_seed_same_summary(tmp_path, no_plots):
    P_path = tmp_path / "P.csv"
    np.savetxt(P_path, M.cycle2(), delimiter=",")
    args = ["simulate", "--matrix", str(P_path), "--algorithm", "uniform", "--steps", "1e3",
            "--runs", "2", "--seed", "7"]
    assert cli([*args, "--out", str(tmp_path / "a")]) == 0
    assert cli([*args, "--out", str(tmp_path / "b")]) == 0
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert a["steps"] == 1000 and without_speed(a) == without_speed(b)
    assert no_plots  # the command asked for its plot


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("0.5 0.7\n0.4 0.5\n", [], "p[0,1] + p[1,0]"),
        ("0.5 0.7 0.2\n0.3 0.5 0.5\n", [], "square"),
        ("0.5 0.7\n0.3 0.5\n", ["--param", "alpha=1"], "uniform does not take parameter"),
        ("0.5 0.7\n0.3 0.5\n", ["--algorithm", "nosuch"], "unknown algorithm 'nosuch'"),
    ],
)
def test_cli_errors_exit_2_with_a_clear_message(tmp_path, capsys, content, extra, message):
    P_path = tmp_path / "bad.txt"
    P_path.write_text(content)
    argv = ["simulate", "--matrix", str(P_path), "--algorithm", "uniform", "--steps", "10",
            "--out", str(tmp_path / "o"), *extra]
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankduel simulate: error:") and message in err


def test_cli_missing_matrix_file(tmp_path, capsys):
    argv = ["simulate", "--matrix", str(tmp_path / "none.txt"), "--algorithm", "uniform",
            "--steps", "10", "--out", str(tmp_path / "o")]
    assert cli(argv) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["cycle", "cycle2", "arith51", "uninformative",
                                  "non-condorcet"])
def test_cli_generate_kinds_are_loadable(tmp_path, kind):
    path = tmp_path / f"{kind}.txt"
    assert cli(["matrix", "generate", "--kind", kind, "--out", str(path)]) == 0
    M.validate_matrix(np.loadtxt(path))


# ---------------------------------------------------------------------- delayed feedback
class Recorder(DuelingBandit):
    """Always (0, 1); logs what each selecting copy had received and when updates come."""

    name = "recorder"
    log: ClassVar[list] = []  # shared by the simulator's reloaded copies

    def _select(self):
        Recorder.log.append(("select", self.t, self.n_updates))
        return (0, 1)

    def _update(self, i, j, outcome):
        Recorder.log.append(("update", self.t, self.n_updates))


def test_delayed_feedback_schedule():
    # D = 3, B = 2: the outcome of step s is applied after selection s + 3, in pairs, so
    # steps 1-2 after selection 5, 3-4 after 7, ...; each group at the step it is applied
    # (sync_step), and what is left in flight is applied at the end.
    Recorder.log = []
    simulate_run(P3, Recorder, 10, seed=0, shuffle=False, delay=3, feedback_batch=2)
    updates = [(t, n) for kind, t, n in Recorder.log if kind == "update"]
    assert updates == [(5, 1), (5, 2), (7, 3), (7, 4), (9, 5), (9, 6), (10, 7), (10, 8),
                       (10, 9), (10, 10)]
    # with a copy reloaded every 4 selections, selection t sees the feedback stored when
    # the copy was loaded (before selections 1, 5 and 9)
    Recorder.log = []
    simulate_run(P3, Recorder, 10, seed=0, shuffle=False, delay=3, feedback_batch=2,
                 reload_every=4)
    seen = [(t, n) for kind, t, n in Recorder.log if kind == "select"]
    assert seen == [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0),
                    (9, 4), (10, 4)]
    assert [t for kind, t, _ in Recorder.log if kind == "update"][:4] == [5, 5, 7, 7]


def test_a_live_schedule_is_replayed_as_given():
    # applied_at: step 1 after selection 4, steps 2 and 3 together after 3 (one batch),
    # step 4 after 9 (the long tail), step 5 at 2 (raised to 5: never before it is made);
    # steps 6-10 are past the schedule and wait delay = 1; all in flight at 10 go then
    Recorder.log = []
    simulate_run(P3, Recorder, 10, seed=0, shuffle=False, delay=1,
                 applied_at=[4, 3, 3, 9, 2])
    updates = [(t, n) for kind, t, n in Recorder.log if kind == "update"]
    assert updates == [(3, 1), (3, 2), (4, 3), (5, 4), (7, 5), (8, 6), (9, 7), (9, 8),
                       (10, 9), (10, 10)]
    with pytest.raises(ValueError, match="applied_at"):
        simulate_run(P3, "uniform", 10, seed=0, applied_at=[1, 0])


def test_delayed_feedback_arguments_are_checked():
    for bad in ({"delay": -1}, {"feedback_batch": 0}, {"reload_every": -2}):
        with pytest.raises(ValueError, match="delay >= 0"):
            simulate_run(P3, "uniform", 10, seed=0, **bad)


def test_cli_delay_flags(tmp_path, no_plots):
    P_path = tmp_path / "P.csv"
    np.savetxt(P_path, M.bradley_terry(5, gap=0.1, seed=1), delimiter=",")
    args = ["simulate", "--matrix", str(P_path), "--algorithm", "rmed1,rucb", "--steps", "600",
            "--runs", "2", "--seed", "3"]
    live = ["--delay", "20", "--feedback-batch", "4", "--reload-every", "5"]
    assert cli([*args, "--out", str(tmp_path / "plain")]) == 0
    assert cli([*args, "--out", str(tmp_path / "zero"), "--delay", "0"]) == 0
    assert cli([*args, "--out", str(tmp_path / "live"), *live]) == 0
    for name in ("rmed1", "rucb"):
        plain, zero, live_ = (
            json.loads((tmp_path / d / name / "summary.json").read_text())
            for d in ("plain", "zero", "live")
        )
        assert without_speed(plain) == without_speed(zero)
        assert live_["regret_mean"] != plain["regret_mean"]
        assert set(live_) == SUMMARY_FIELDS
